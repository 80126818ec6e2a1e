// SPDX-License-Identifier: MIT
#pragma once
/// @file context_scan.hpp
/// Stage 1 of a decision: screening candidate targets from the preemption index and static
/// capacities, and the cheap scan of each (deficits, what eligible victims could free, a
/// fractional lower bound), with per-version caching for the incremental decider.

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "topopreempt/solvers/detail/context_core.hpp"

namespace topopreempt::detail {

template <CostModel Model>
template <class Emit>
void PreemptionContext<Model>::scan_batch(const Tier& tier, std::span<const DomainId> targets,
                                          ScanWorkspace& workspace, Emit&& emit) const {
  const std::size_t count = tier.dims.size();
  const std::size_t batch = targets.size();
  workspace.resize(batch, count);
  bool any_reach_above = false;
  bool any_measured_above = false;
  for (std::size_t t = 0; t < batch; ++t) {
    auto& slot = workspace.targets[t];
    slot.reach = reach(tier, targets[t]);
    slot.victims = 0;
    slot.dearest_sum = 0.0;
    any_reach_above = any_reach_above || slot.reach != targets[t];
    for (std::size_t k = 0; k < count; ++k) {
      const DomainId where = aggregate_domain(targets[t], tier.dims[k]);
      slot.measured_in[k] = where;
      slot.need[k] =
          std::max(0.0, total_demand(tier, tier.dims[k]) - free_in(state_, where, tier.dims[k]));
      slot.total[k] = 0.0;
      slot.least_action[k] = std::numeric_limits<double>::infinity();
      slot.items[k].clear();
      any_measured_above = any_measured_above || where != targets[t];
    }
  }
  workspace.seen.clear();
  const auto locate = [&](DomainId domain) -> std::size_t {
    // Targets of a batch are disjoint subtrees in ascending pre-order.
    const auto it = std::upper_bound(targets.begin(), targets.end(), domain);
    if (it == targets.begin()) return batch;
    const auto index = static_cast<std::size_t>(it - targets.begin()) - 1;
    return topology_.contains(targets[index], domain) ? index : batch;
  };
  // Device entries hold only device dimensions and pool entries only pooled ones, so each
  // entry touches just the relaxation dimensions of its kind.
  workspace.device_dims.clear();
  workspace.pooled_dims.clear();
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t dim = tier.dims[k];
    if (dim == whole_device_dim || topology_.schema().is_device(dim)) {
      workspace.device_dims.push_back(k);
    } else {
      workspace.pooled_dims.push_back(k);
    }
  }
  // A gang whose replicas each take a whole host's worth of devices (or one host each), in a
  // target spanning hosts: each replica needs its own host with d idle devices. The cheapest
  // R hosts' fractional covers bound the plan (`per_host_bound`).
  const LevelIndex host_level = topology_.host_level();
  const bool per_host = batch == 1 && per_host_bound_applies(tier, targets[0]);
  std::span<const DomainId> hosts;
  if (per_host) {
    hosts = topology_.domains_at(host_level, targets[0]);
    if (workspace.host_items.size() < hosts.size()) workspace.host_items.resize(hosts.size());
    for (std::size_t h = 0; h < hosts.size(); ++h) workspace.host_items[h].clear();
  }
  const auto visit_occupant = [&](const WorkloadView& view) {
    if (!eligible(view.workload)) return;
    for (std::size_t t = 0; t < batch; ++t) {
      auto& slot = workspace.targets[t];
      slot.in_reach = false;
      std::fill(slot.gain.begin(), slot.gain.end(), 0.0);
    }
    for (std::size_t e = 0; e < view.domains.size(); ++e) {
      const DomainId domain = view.domains[e];
      const bool device = topology_.is_device(domain);
      const auto& dims_here = device ? workspace.device_dims : workspace.pooled_dims;
      const auto gain_of = [&](std::size_t k) {
        return tier.dims[k] == whole_device_dim ? 1.0
                                                : static_cast<double>(view.amount(e, tier.dims[k]));
      };
      const std::size_t index =
          batch == 1 ? (topology_.contains(targets[0], domain) ? 0 : 1) : locate(domain);
      if (index < batch) {
        auto& slot = workspace.targets[index];
        slot.in_reach = true;
        for (std::size_t k : dims_here) {
          if (slot.measured_in[k] == targets[index]) slot.gain[k] += gain_of(k);
        }
      }
      if (any_reach_above || any_measured_above) {
        for (std::size_t t = 0; t < batch; ++t) {
          auto& slot = workspace.targets[t];
          if (slot.reach != targets[t] && topology_.contains(slot.reach, domain))
            slot.in_reach = true;
          for (std::size_t k : dims_here) {
            if (slot.measured_in[k] != targets[t] &&
                topology_.contains(slot.measured_in[k], domain)) {
              slot.gain[k] += gain_of(k);
            }
          }
        }
      }
    }
    // Priced (and checked) lazily: most occupants reach no target of a batch.
    std::optional<VictimPriceRange> prices;
    for (std::size_t t = 0; t < batch; ++t) {
      auto& slot = workspace.targets[t];
      if (!slot.in_reach) continue;
      if (!prices) prices = checked_prices(view.workload);
      const double cheapest = prices->cheapest;
      slot.dearest_sum += prices->dearest;
      ++slot.victims;
      for (std::size_t k = 0; k < count; ++k) {
        if (slot.gain[k] <= 0.0) continue;
        slot.total[k] += slot.gain[k];
        slot.least_action[k] = std::min(slot.least_action[k], cheapest);
        slot.items[k].emplace_back(cheapest / slot.gain[k], slot.gain[k]);
      }
    }
    if (per_host && prices) {
      // Its device entries per host of the target, and every host it touches: a victim on n
      // hosts is charged 1/n of its cheapest price on each, so that summing over the hosts a
      // plan uses never charges it more than once.
      workspace.victim_hosts.clear();
      workspace.victim_host_ids.clear();
      const std::uint32_t first = topology_.ordinal(hosts.front());
      for (const DomainId domain : view.domains) {
        const DomainId host = topology_.ancestor_at(domain, host_level);
        if (std::find(workspace.victim_host_ids.begin(), workspace.victim_host_ids.end(), host) ==
            workspace.victim_host_ids.end())
          workspace.victim_host_ids.push_back(host);
        if (!topology_.is_device(domain) || !host.valid() ||
            !topology_.contains(targets[0], host))
          continue;
        const std::size_t index = topology_.ordinal(host) - first;
        auto it = std::find_if(workspace.victim_hosts.begin(), workspace.victim_hosts.end(),
                               [&](const auto& entry) { return entry.first == index; });
        if (it == workspace.victim_hosts.end()) {
          workspace.victim_hosts.emplace_back(index, 0.0);
          it = workspace.victim_hosts.end() - 1;
        }
        it->second += 1.0;
      }
      const double share =
          prices->cheapest / static_cast<double>(workspace.victim_host_ids.size());
      for (const auto& [index, entries] : workspace.victim_hosts)
        workspace.host_items[index].emplace_back(share / entries, entries);
    }
  };
  if (batch == 1 && topology_.level(workspace.targets[0].reach) < host_level) {
    // One target spanning hosts: a gang may sit on several of them; count it once.
    for_each_host(workspace.targets[0].reach, [&](DomainId host) {
      state_.for_each_occupant_unordered(host, [&](const WorkloadView& view) {
        if (std::find(workspace.seen.begin(), workspace.seen.end(), view.workload.id) !=
            workspace.seen.end())
          return;
        workspace.seen.push_back(view.workload.id);
        visit_occupant(view);
      });
    });
  } else {
    // Order-free: the scan only sums integers and sorts its items.
    state_.for_each_occupant_unordered(topology_.ancestor_at(targets.front(), host_level),
                                       visit_occupant);
  }
  // Every sum a search of a target forms is at most its victims' dearest prices summed.
  for (std::size_t t = 0; t < batch; ++t) check_domain_price_sum(workspace.targets[t].dearest_sum);
  for (std::size_t t = 0; t < batch; ++t) {
    ScanResult result = finish_scan(tier, workspace.targets[t]);
    if (per_host && !result.shortfall)
      result.bound = std::max(result.bound, per_host_bound(tier, hosts, workspace));
    emit(targets[t], result);
  }
}

template <CostModel Model>
bool PreemptionContext<Model>::per_host_bound_applies(const Tier& tier, DomainId target) const {
  const ResolvedDemand& demand = tier.demand;
  const LevelIndex host_level = topology_.host_level();
  if (demand.replicas < 2 || demand.whole_devices <= 0 || demand.unit_level < host_level ||
      topology_.level(target) >= host_level || topology_.domains_at(host_level, target).empty())
    return false;
  if (demand.distinct_hosts) return true;
  // Every host holds at most one replica: 2 d devices exceed each host's. The idle index keeps
  // the largest device count of any host: when 2 d exceeds it, no host need be read.
  const auto& idle_index = state_.idle_device_index();
  if (idle_index.covers(host_level) &&
      2 * demand.whole_devices > static_cast<std::int64_t>(idle_index.most_devices(host_level)))
    return true;
  for (const DomainId host : topology_.domains_at(host_level, target)) {
    if (2 * demand.whole_devices <= static_cast<std::int64_t>(topology_.device_count(host)))
      return false;
  }
  return true;
}

template <CostModel Model>
double PreemptionContext<Model>::per_host_bound(const Tier& tier, std::span<const DomainId> hosts,
                                                ScanWorkspace& workspace) const {
  // Each replica lies in one host (the unit level is the host or deeper) and no host holds
  // two, so a plan readies R distinct hosts, each with d idle devices: on host h it frees at
  // least d - idle(h) device entries of victims on h, at no less than the fractional cover of
  // that deficit by h's victims at their charged shares. The R cheapest hosts bound the plan.
  const double replicas = static_cast<double>(tier.demand.replicas);
  const double devices = static_cast<double>(tier.demand.whole_devices);
  auto& costs = workspace.host_costs;
  costs.clear();
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    const double need = devices - free_in(state_, hosts[h], whole_device_dim);
    const double cost = need <= 0.0 ? 0.0 : fractional_cover(workspace.host_items[h], need);
    if (std::isfinite(cost)) costs.push_back(cost);
  }
  const auto r = static_cast<std::size_t>(replicas);
  // Fewer ready hosts than replicas: no plan here; the search proves it, keep the bound.
  if (costs.size() < r) return 0.0;
  std::nth_element(costs.begin(), costs.begin() + static_cast<std::ptrdiff_t>(r - 1), costs.end());
  double sum = 0.0;
  for (std::size_t i = 0; i < r; ++i) sum += costs[i];
  // Each cover is conservative already; the sum adds r roundings (the shares' divisions are
  // counted inside each cover's).
  return conservative(sum, static_cast<double>(r) + 2.0);
}

template <CostModel Model>
const ScanCache::TierShape& PreemptionContext<Model>::tier_shape(ScanCache& cache,
                                                                 std::size_t tier_index,
                                                                 const Tier& tier) const {
  if (cache.shapes.size() <= tier_index) cache.shapes.resize(tier_index + 1);
  ScanCache::TierShape& shape = cache.shapes[tier_index];
  if (shape.ready) return shape;
  const auto all = targets(tier);
  const std::size_t dims = tier.dims.size();
  shape.stride = 1 + 2 * dims;
  shape.domains.assign(all.size() * shape.stride, DomainId{});
  shape.too_small.assign(all.size(), std::nullopt);
  const LevelIndex host_level = topology_.host_level();
  for (std::size_t t = 0; t < all.size(); ++t) {
    DomainId* row = shape.domains.data() + t * shape.stride;
    row[0] = reach(tier, all[t]);
    for (std::size_t k = 0; k < dims; ++k) {
      const DomainId where = aggregate_domain(all[t], tier.dims[k]);
      row[1 + k] = where;
      // The index answers below the host level for the enclosing host.
      row[1 + dims + k] =
          topology_.level(where) > host_level ? topology_.ancestor_at(where, host_level) : where;
    }
    shape.too_small[t] = too_small(tier, all[t]);
  }
  // Groups open into targets one level above them when the targets are hosts, else at the
  // host level (`TierSearch::open_group`); a target's index bound reads its row's domains, its
  // aggregate for whole devices (and, below the host level, its host's bands) and the hosts
  // below it: local when all lie inside the target's group.
  shape.opening_level =
      tier.target_level == host_level ? static_cast<LevelIndex>(host_level - 1) : host_level;
  shape.local = host_level >= 1 && tier.target_level >= host_level;
  shape.targets_local = shape.local && tier.target_level == host_level;
  for (std::size_t t = 0; shape.local && t < all.size(); ++t) {
    const DomainId group = topology_.ancestor_at(all[t], shape.opening_level);
    const DomainId* row = shape.domains.data() + t * shape.stride;
    const auto inside_of = [&](DomainId within) {
      return [&, within](DomainId d) { return d.valid() && topology_.contains(within, d); };
    };
    const DomainId whole_devices_in = aggregate_domain(all[t], whole_device_dim);
    const auto inside = inside_of(group);
    shape.local = group.valid() && std::all_of(row, row + shape.stride, inside) &&
                  inside(whole_devices_in);
    const auto in_target = inside_of(all[t]);
    shape.targets_local = shape.targets_local &&
                          std::all_of(row, row + shape.stride, in_target) &&
                          in_target(whole_devices_in);
  }
  shape.targets_local = shape.targets_local && shape.local;
  shape.ready = true;
  return shape;
}

template <CostModel Model>
std::span<const ScanCache::ListedTarget> PreemptionContext<Model>::listed_targets_cached(
    std::size_t tier_index, const Tier& tier, DomainId group, std::span<const DomainId> members,
    double floor, double grid, ScanCache* cache,
    std::vector<ScanCache::ListedTarget>& scratch) const {
  const auto take = [&](std::vector<ScanCache::ListedTarget>& out) {
    out.clear();
    for (const DomainId target : members) {
      out.push_back(
          {index_price_bound_cached(tier_index, tier, target, floor, grid, true, cache), target});
    }
    std::sort(out.begin(), out.end(), by_bound_then_child);
  };
  if (cache == nullptr) {
    take(scratch);
    return scratch;
  }
  const ScanCache::TierShape& shape = tier_shape(*cache, tier_index, tier);
  if (!shape.local || topology_.level(group) != shape.opening_level) {
    take(scratch);
    return scratch;
  }
  ScanCache::ListedBounds& entry =
      opening_level_entry(cache->listed_bounds, tier_index, shape, group);
  const std::uint64_t version = state_.domain_version(group);
  if (entry.valid && entry.version == version && entry.targets.size() == members.size()) {
    ++cache->listed_hits;
    return entry.targets;
  }
  entry.valid = false;  // stays so if a bound throws
  ++cache->listed_misses;
  // The targets' versions side by side (hosts: the tier's targets are a level's domains, and
  // a group's members a run of them).
  const auto versions_now = [&] {
    const auto all = targets(tier);
    return state_.versions_at(tier.target_level)
        .subspan(static_cast<std::size_t>(members.data() - all.data()), members.size());
  };
  if (shape.targets_local && entry.shaped && entry.targets.size() == members.size()) {
    // The group changed, most of its targets not (a change touches one host): a target at
    // the version its bound was taken at keeps it. Each one's bound and version are updated
    // together, so a bound that throws leaves every kept one true to its version.
    const auto now = versions_now();
    bool moved = false;
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (now[i] == entry.versions[i]) continue;
      const auto listed = std::find_if(entry.targets.begin(), entry.targets.end(),
                                       [&](const auto& t) { return t.child == members[i]; });
      listed->bound =
          index_price_bound_cached(tier_index, tier, members[i], floor, grid, true, cache);
      entry.versions[i] = now[i];
      moved = true;
    }
    if (moved) std::sort(entry.targets.begin(), entry.targets.end(), by_bound_then_child);
  } else {
    entry.shaped = false;
    take(entry.targets);
    if (shape.targets_local) {
      const auto now = versions_now();
      entry.versions.assign(now.begin(), now.end());
      entry.shaped = true;
    }
  }
  entry.version = version;
  entry.valid = true;
  return entry.targets;
}

template <CostModel Model>
template <class Entry>
Entry& PreemptionContext<Model>::opening_level_entry(std::vector<std::vector<Entry>>& per_tier,
                                                     std::size_t tier_index,
                                                     const ScanCache::TierShape& shape,
                                                     DomainId group) const {
  if (per_tier.size() <= tier_index) per_tier.resize(tier_index + 1);
  auto& entries = per_tier[tier_index];
  const std::size_t count = topology_.domains_at(shape.opening_level).size();
  if (entries.size() != count) entries.assign(count, {});
  return entries[topology_.ordinal(group)];
}

template <CostModel Model>
ScanCache::Admission PreemptionContext<Model>::admission(std::size_t tier_index, const Tier& tier,
                                                         DomainId target, double floor,
                                                         double grid, ScanCache* cache) const {
  using Verdict = ScanCache::Admission::Verdict;
  ScanCache::Admission out;
  if (auto shortfall = too_small_cached(tier_index, tier, target, cache)) {
    out.verdict = Verdict::too_small;
    out.shortfall = *shortfall;
    return out;
  }
  if (auto shortfall = index_shortfall_cached(tier_index, tier, target, cache)) {
    out.verdict = Verdict::hopeless;
    out.shortfall = *shortfall;
    return out;
  }
  out.bound = index_price_bound_cached(tier_index, tier, target, floor, grid, false, cache);
  out.refine = per_host_bound_applies(tier, target);
  // A gang of whole hosts: until its per-host bound is taken, keyed at least by the same
  // bound from its own bands and its hosts' idle counts (no host's bands read).
  if (out.refine) out.bound = std::max(out.bound, target_gang_bound(tier, target, floor, grid));
  return out;
}

template <CostModel Model>
const std::vector<ScanCache::Admission>* PreemptionContext<Model>::admissions_cached(
    std::size_t tier_index, const Tier& tier, DomainId group, std::span<const DomainId> members,
    double floor, double grid, ScanCache* cache) const {
  if (cache == nullptr) return nullptr;
  const ScanCache::TierShape& shape = tier_shape(*cache, tier_index, tier);
  if (!shape.local || topology_.level(group) != shape.opening_level) return nullptr;
  ScanCache::GroupAdmissions& entry =
      opening_level_entry(cache->admissions, tier_index, shape, group);
  const std::uint64_t version = state_.domain_version(group);
  if (entry.valid && entry.version == version && entry.targets.size() == members.size()) {
    ++cache->admission_hits;
    return &entry.targets;
  }
  entry.valid = false;  // stays so if a bound throws
  entry.targets.resize(members.size());
  const auto admit = [&](std::size_t i) {
    entry.targets[i] = admission(tier_index, tier, members[i], floor, grid, cache);
  };
  if (topology_.level(group) >= topology_.host_level()) {
    for (std::size_t i = 0; i < members.size(); ++i) admit(i);
  } else {
    // Targets on many hosts, their bands far apart in memory: fetched ahead.
    for_each_prefetching_bands(state_, members, admit);
  }
  entry.version = version;
  entry.valid = true;
  ++cache->admission_misses;
  return &entry.targets;
}

template <CostModel Model>
std::uint64_t PreemptionContext<Model>::scan_key(const ScanCache::TierShape& shape,
                                                 std::size_t ordinal, std::size_t dims) const {
  const DomainId* row = shape.domains.data() + ordinal * shape.stride;
  std::uint64_t key = state_.domain_version(row[0]);
  for (std::size_t k = 0; k < dims; ++k)
    key = key * 0x9e3779b97f4a7c15ULL ^ state_.domain_version(row[1 + k]);
  return key;
}

template <CostModel Model>
std::uint64_t PreemptionContext<Model>::index_key(const ScanCache::TierShape& shape,
                                                  std::size_t ordinal, std::size_t dims) const {
  const DomainId* row = shape.domains.data() + ordinal * shape.stride;
  std::uint64_t key = 0x696e646578ULL;
  for (std::size_t k = 0; k < dims; ++k)
    key = key * 0x9e3779b97f4a7c15ULL ^ state_.domain_version(row[1 + dims + k]);
  return key;
}

template <CostModel Model>
std::optional<Shortfall> PreemptionContext<Model>::index_shortfall_cached(std::size_t tier_index,
                                                                          const Tier& tier,
                                                                          DomainId target,
                                                                          ScanCache* cache) const {
  if (cache == nullptr) return index_shortfall(tier, target);
  prepare_cache(*cache, tier_index, tier);
  const ScanCache::TierShape& shape = tier_shape(*cache, tier_index, tier);
  auto& entries = cache->tiers[tier_index];
  const std::size_t ordinal = topology_.ordinal(target);
  ScanCache::Entry& entry = entries[ordinal];
  const std::uint64_t key = index_key(shape, ordinal, tier.dims.size());
  if (!entry.index_valid || entry.index_key != key) {
    entry.index_verdict = index_shortfall(tier, target);
    entry.index_key = key;
    entry.index_valid = true;
  }
  return entry.index_verdict;
}

template <CostModel Model>
void PreemptionContext<Model>::prepare_cache(ScanCache& cache, std::size_t tier_index,
                                             const Tier& tier) const {
  if (cache.tiers.size() <= tier_index) cache.tiers.resize(tier_index + 1);
  auto& entries = cache.tiers[tier_index];
  if (entries.size() != targets(tier).size()) entries.assign(targets(tier).size(), {});
}

template <CostModel Model>
std::optional<Shortfall> PreemptionContext<Model>::too_small_cached(std::size_t tier_index,
                                                                    const Tier& tier,
                                                                    DomainId target,
                                                                    ScanCache* cache) const {
  if (cache == nullptr) return too_small(tier, target);
  return tier_shape(*cache, tier_index, tier).too_small[topology_.ordinal(target)];
}

template <CostModel Model>
template <class Emit>
void PreemptionContext<Model>::scan_batch_cached(std::size_t tier_index, const Tier& tier,
                                                 std::span<const DomainId> targets,
                                                 ScanWorkspace& workspace, ScanCache* cache,
                                                 Emit&& emit) const {
  if (cache == nullptr) {
    scan_batch(tier, targets, workspace, emit);
    return;
  }
  prepare_cache(*cache, tier_index, tier);
  auto& entries = cache->tiers[tier_index];
  const ScanCache::TierShape& shape = tier_shape(*cache, tier_index, tier);
  const auto key_of = [&](DomainId target) {
    return scan_key(shape, topology_.ordinal(target), tier.dims.size());
  };
  auto& stale = cache->stale_targets;
  auto& stale_keys = cache->stale_keys;
  stale.clear();
  stale_keys.clear();
  for (const DomainId target : targets) {
    const auto& entry = entries[topology_.ordinal(target)];
    const std::uint64_t key = key_of(target);
    if (!entry.valid || entry.key != key) {
      stale.push_back(target);
      stale_keys.push_back(key);
    }
  }
  if (!stale.empty()) {
    // scan_batch emits in target order, so the i-th result belongs to stale[i].
    std::size_t next = 0;
    scan_batch(tier, std::span<const DomainId>(stale), workspace,
               [&](DomainId target, const ScanResult& result) {
                 auto& entry = entries[topology_.ordinal(target)];
                 entry.key = stale_keys[next++];
                 entry.result = result;
                 entry.valid = true;
               });
  }
  cache->misses += stale.size();
  cache->hits += targets.size() - stale.size();
  for (const DomainId target : targets) emit(target, entries[topology_.ordinal(target)].result);
}

template <CostModel Model>
template <class Keep, class Visit>
void PreemptionContext<Model>::for_each_batch(const Tier& tier, std::vector<DomainId>& buffer,
                                              Keep&& keep, Visit&& visit) const {
  const LevelIndex host_level = topology_.host_level();
  if (tier.target_level <= host_level) {
    for (DomainId target : targets(tier)) {
      if (!keep(target)) continue;
      buffer.assign(1, target);
      visit(std::span<const DomainId>(buffer));
    }
    return;
  }
  for (DomainId host : topology_.domains_at(host_level)) {
    buffer.clear();
    for (DomainId target : topology_.domains_at(tier.target_level, host)) {
      if (keep(target)) buffer.push_back(target);
    }
    if (!buffer.empty()) visit(std::span<const DomainId>(buffer));
  }
}

template <CostModel Model>
ScanResult PreemptionContext<Model>::finish_scan(const Tier& tier, ScanWorkspace::Target& slot) {
  ScanResult result;
  result.victims = slot.victims;
  const std::size_t count = tier.dims.size();
  for (std::size_t k = 0; k < count; ++k) {
    if (slot.total[k] + 1e-9 < slot.need[k]) {
      result.shortfall = Shortfall{tier.dims[k], slot.total[k], slot.need[k], slot.victims};
      return result;
    }
  }
  for (std::size_t k = 0; k < count; ++k) {
    if (slot.need[k] <= 0.0) continue;
    // An exact price, no rounding: at least one victim that frees some of dim k is acted on.
    result.bound = std::max({result.bound, fractional_cover(slot.items[k], slot.need[k]),
                             slot.least_action[k]});
  }
  return result;
}

template <CostModel Model>
std::optional<Shortfall> PreemptionContext<Model>::index_shortfall(const Tier& tier,
                                                                   DomainId target) const {
  for (const std::size_t dim : tier.dims) {
    const DomainId where = aggregate_domain(target, dim);
    const double need = std::max(0.0, total_demand(tier, dim) - free_in(state_, where, dim));
    if (need <= 0.0) continue;
    const double have =
        dim == whole_device_dim
            ? static_cast<double>(
                  state_.preemptible_device_entries_below(where, preemptor_.priority))
            : static_cast<double>(state_.preemptible_below(where, preemptor_.priority, dim));
    if (have + 1e-9 < need) return Shortfall{dim, have, need, 0};
  }
  return std::nullopt;
}

template <CostModel Model>
std::optional<Shortfall> PreemptionContext<Model>::host_count_shortfall(const Tier& tier,
                                                                        DomainId target) const {
  const ResolvedDemand& demand = tier.demand;
  const LevelIndex host_level = topology_.host_level();
  if (demand.replicas < 2 || topology_.level(target) >= host_level) return std::nullopt;
  const std::int32_t priority = preemptor_.priority;
  // Replicas one host could hold after evicting every eligible victim there, by one resource.
  const auto replicas_by = [](std::int64_t have, std::int64_t per_replica) {
    return per_replica > 0 ? std::max<std::int64_t>(0, have) / per_replica
                           : detail::unbounded_replicas;
  };
  const std::int64_t most_per_host = demand.distinct_hosts ? 1 : detail::unbounded_replicas;
  std::int64_t counted = 0;
  for (const DomainId host : topology_.domains_at(host_level, target)) {
    std::int64_t fit = most_per_host;
    if (demand.whole_devices > 0) {
      const std::int64_t devices =
          std::min<std::int64_t>(topology_.device_count(host),
                                 state_.idle_devices(host) +
                                     state_.preemptible_device_entries_below(host, priority));
      fit = std::min(fit, replicas_by(devices, demand.whole_devices));
    }
    for (Eigen::Index i = 0; fit > 0 && i < demand.pooled.size(); ++i) {
      const Amount per_replica = demand.pooled(i) + (demand.has_share ? demand.share(i) : 0);
      if (per_replica <= 0) continue;
      const auto dim = static_cast<std::size_t>(i);
      // A replica draws its pooled amounts inside its own host (`pool_root` stops there): a
      // host without any of the dimension holds none.
      if (topology_.capacity(host)(i) <= 0) {
        fit = 0;
        break;
      }
      fit = std::min(fit, replicas_by(state_.free(host, dim) +
                                          state_.preemptible_below(host, priority, dim),
                                      per_replica));
    }
    counted += fit;
    if (counted >= demand.replicas) return std::nullopt;
  }
  return Shortfall{distinct_host_dimension, static_cast<double>(counted),
                   static_cast<double>(demand.replicas), 0};
}

template <CostModel Model>
double PreemptionContext<Model>::index_price_bound(const Tier& tier, DomainId target, double floor,
                                                   double grid, bool per_host) const {
  if constexpr (!IndexPricedModel<Model>) {
    return floor;
  } else {
    if (!takes_whole_devices(tier)) return floor;
    const DomainId where = aggregate_domain(target, whole_device_dim);
    const double need =
        total_demand(tier, whole_device_dim) - free_in(state_, where, whole_device_dim);
    const double bound = banded_price_bound(where, need, floor, grid);
    if (!per_host || !per_host_bound_applies(tier, target)) return bound;
    return std::max(bound, per_host_index_bound(tier, target, floor, grid));
  }
}

template <CostModel Model>
ScanCache::Entry& PreemptionContext<Model>::bound_entry(std::size_t tier_index, const Tier& tier,
                                                        DomainId target, ScanCache& cache) const {
  prepare_cache(cache, tier_index, tier);
  const ScanCache::TierShape& shape = tier_shape(cache, tier_index, tier);
  const std::size_t ordinal = topology_.ordinal(target);
  ScanCache::Entry& entry = cache.tiers[tier_index][ordinal];
  // The index answers below the host level from the enclosing host's bands: its version
  // (the index key's) is read too.
  const std::uint64_t key = scan_key(shape, ordinal, tier.dims.size()) * 0x9e3779b97f4a7c15ULL ^
                            index_key(shape, ordinal, tier.dims.size());
  if (entry.bound_key != key) {
    entry.bound_key = key;
    entry.banded_valid = false;
    entry.per_host_valid = false;
  }
  return entry;
}

template <CostModel Model>
double PreemptionContext<Model>::index_price_bound_cached(std::size_t tier_index,
                                                          const Tier& tier, DomainId target,
                                                          double floor, double grid,
                                                          bool per_host, ScanCache* cache) const {
  if constexpr (!IndexPricedModel<Model>) {
    return floor;
  } else {
    // Without whole devices the bound is the floor: nothing worth keeping.
    if (cache == nullptr || !takes_whole_devices(tier)) {
      return index_price_bound(tier, target, floor, grid, per_host);
    }
    ScanCache::Entry& entry = bound_entry(tier_index, tier, target, *cache);
    if (!entry.banded_valid) {
      entry.banded_bound = index_price_bound(tier, target, floor, grid, false);
      entry.banded_valid = true;
    }
    if (!per_host || !per_host_bound_applies(tier, target)) return entry.banded_bound;
    return std::max(entry.banded_bound,
                    kept_per_host_bound(entry, tier_index, tier, target, floor, grid, *cache));
  }
}

template <CostModel Model>
double PreemptionContext<Model>::per_host_index_bound_cached(std::size_t tier_index,
                                                             const Tier& tier, DomainId target,
                                                             double floor, double grid,
                                                             ScanCache* cache) const {
  if (cache == nullptr) return per_host_index_bound(tier, target, floor, grid);
  return kept_per_host_bound(bound_entry(tier_index, tier, target, *cache), tier_index, tier,
                             target, floor, grid, *cache);
}

template <CostModel Model>
double PreemptionContext<Model>::kept_per_host_bound(ScanCache::Entry& entry,
                                                     std::size_t tier_index, const Tier& tier,
                                                     DomainId target, double floor, double grid,
                                                     ScanCache& cache) const {
  if (!entry.per_host_valid) {
    if (cache.host_terms.size() <= tier_index) cache.host_terms.resize(tier_index + 1);
    auto& kept = cache.host_terms[tier_index];
    const std::size_t hosts = topology_.domains_at(topology_.host_level()).size();
    if (kept.size() != hosts) kept.assign(hosts, {});
    entry.per_host_bound = per_host_index_bound(tier, target, floor, grid, &kept);
    entry.per_host_valid = true;
  }
  return entry.per_host_bound;
}

template <CostModel Model>
#if defined(__GNUC__) || defined(__clang__)
// Everything it calls inlined, the model's `index_price_rate` too: GCC otherwise keeps the rate
// a call of its own, made twice per band per host, and this bound is much of a `rack16`
// decision on a large cluster (0.82-0.87x as long with it at 1,000,000 nodes, docs/speed.md).
[[gnu::flatten]]
#endif
double PreemptionContext<Model>::per_host_index_bound(
    const Tier& tier, DomainId target, double floor, double grid,
    std::vector<ScanCache::HostTerms>* kept) const {
  // The per-host bound from the index alone: each of R distinct hosts frees its deficit d -
  // idle(h) in device entries (`index_cover`), plus one least per-victim part for the plan
  // (the per-entry parts of one action's rate add up across hosts: they count the entries it
  // frees). A host whose bands hold fewer entries than d cannot take a replica.
  const LevelIndex host_level = topology_.host_level();
  const double devices = static_cast<double>(tier.demand.whole_devices);
  const auto replicas = static_cast<std::size_t>(tier.demand.replicas);
  // The R least host costs. Most gangs take one or two hosts: kept in two registers then (no
  // vector, no selection); more, gathered and selected.
  constexpr std::size_t registered = 2;
  const bool few = replicas <= registered;
  double least = std::numeric_limits<double>::infinity();
  double second = std::numeric_limits<double>::infinity();
  std::size_t finite = 0;  // hosts that can take a replica
  std::vector<double> costs;
  const auto keep = [&](double cost) {
    ++finite;
    if (!few) {
      costs.push_back(cost);
    } else if (cost < least) {
      second = least;
      least = cost;
    } else if (cost < second) {
      second = cost;
    }
  };
  double per_victim = std::numeric_limits<double>::infinity();
  std::size_t most_terms = 0;  // additions in one host's cover, for the rounding count
  const auto add = [&](const ScanCache::HostTerms& host) {
    if (host.ready) {
      keep(0.0);
      return;
    }
    per_victim = std::min(per_victim, host.per_victim);
    most_terms = std::max(most_terms, std::size_t{host.terms});
    if (std::isfinite(host.cost)) keep(host.cost);
  };
  const auto hosts = topology_.domains_at(host_level, target);
  if (kept != nullptr) {
    // The hosts are consecutive in their level: their versions and kept terms side by side,
    // and only the hosts that changed read their bands.
    const auto first =
        static_cast<std::size_t>(hosts.data() - topology_.domains_at(host_level).data());
    const auto versions = state_.versions_at(host_level).subspan(first, hosts.size());
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      ScanCache::HostTerms& host = (*kept)[first + i];
      if (!host.valid || host.version != versions[i]) {
        host = host_terms(hosts[i], devices);
        host.version = versions[i];
        host.valid = true;
      }
      add(host);
    }
  } else {
    // The hosts' bands are far apart in memory, and reading them is most of this bound's time
    // on a cold cache: fetched a few hosts ahead.
    for_each_prefetching_bands(state_, hosts,
                               [&](std::size_t i) { add(host_terms(hosts[i], devices)); });
  }
  if (finite < replicas) return floor;  // the scan or the search finds no plan
  double sum = 0.0;
  if (few) {
    // The same sum as the selection's: 0 + least (+ second), the multiset of the R least.
    if (replicas >= 1) sum += least;
    if (replicas == 2) sum += second;
  } else {
    std::nth_element(costs.begin(), costs.begin() + static_cast<std::ptrdiff_t>(replicas - 1),
                     costs.end());
    for (std::size_t i = 0; i < replicas; ++i) sum += costs[i];
  }
  if (!(sum > 0.0)) return floor;  // every host ready already: no victim is implied
  if (!std::isfinite(per_victim)) return floor;
  const double bound =
      conservative(per_victim + sum, 16.0 + 2.0 * static_cast<double>(most_terms + replicas));
  if (!std::isfinite(bound)) return floor;
  return std::max(floor, on_grid(bound, grid));
}

template <CostModel Model>
ScanCache::HostTerms PreemptionContext<Model>::host_terms(DomainId host, double devices) const {
  ScanCache::HostTerms terms;
  const double need = devices - free_in(state_, host, whole_device_dim);
  if (need <= 0.0) {
    terms.ready = true;
    return terms;
  }
  const IndexCover cover = index_cover(host, need, false);
  terms.per_victim = cover.per_victim;
  terms.terms = static_cast<std::uint32_t>(cover.terms);
  terms.cost = cover.cost;
  return terms;
}

template <CostModel Model>
bool PreemptionContext<Model>::grouped(const Tier& tier) const {
  if constexpr (!IndexPricedModel<Model>) {
    return false;
  } else {
    return topology_.host_level() >= 1 && tier.target_level >= topology_.host_level() &&
           takes_whole_devices(tier);
  }
}

template <CostModel Model>
double PreemptionContext<Model>::group_price_bound(const Tier& tier, DomainId group, double floor,
                                                   double grid) const {
  if constexpr (!IndexPricedModel<Model>) {
    return floor;
  } else {
    return banded_price_bound(group, group_need(tier, group), floor, grid);
  }
}

template <CostModel Model>
double PreemptionContext<Model>::group_need(const Tier& tier, DomainId group) const {
  // A target's devices lie in one host (targets are at or below the host level): it has at
  // most its host's idle devices.
  const LevelIndex host_level = topology_.host_level();
  double most_idle = 0.0;
  const auto& idle_index = state_.idle_device_index();
  if (topology_.level(group) >= host_level) {
    most_idle = free_in(state_, group, whole_device_dim);
  } else if (idle_index.covers(host_level)) {
    // The hosts' idle counts are bucketed: a few words instead of one read per host.
    most_idle = static_cast<double>(
        std::max<std::int64_t>(idle_index.most_idle(topology_, host_level, group), 0));
  } else {
    for (const DomainId host : topology_.domains_at(host_level, group))
      most_idle = std::max(most_idle, free_in(state_, host, whole_device_dim));
  }
  return total_demand(tier, whole_device_dim) - most_idle;
}

template <CostModel Model>
double PreemptionContext<Model>::group_need_cached(const Tier& tier, DomainId group,
                                                   LevelIndex level, std::size_t ordinal,
                                                   ScanCache& cache) const {
  const LevelIndex host_level = topology_.host_level();
  const auto& idle_index = state_.idle_device_index();
  if (level >= host_level || !idle_index.covers(host_level)) return group_need(tier, group);
  // As `group_need`: the idle index over the group's hosts, their run of ordinals kept.
  const auto hosts = domains_below_cached(cache.group_hosts, group, level, ordinal, host_level);
  const auto first =
      static_cast<std::size_t>(hosts.data() - topology_.domains_at(host_level).data());
  const double most_idle = static_cast<double>(std::max<std::int64_t>(
      idle_index.most_idle_in(host_level, first, first + hosts.size()), 0));
  return total_demand(tier, whole_device_dim) - most_idle;
}

template <CostModel Model>
std::span<const DomainId> PreemptionContext<Model>::domains_below_cached(
    ScanCache::OrdinalRuns& runs, DomainId group, LevelIndex level, std::size_t ordinal,
    LevelIndex lower) const {
  if (runs.size() <= level) runs.resize(std::size_t{level} + 1);
  auto& of_level = runs[level];
  const std::size_t count = topology_.domains_at(level).size();
  if (of_level.size() != count) of_level.assign(count, {});
  auto& run = of_level[ordinal];
  const auto all = topology_.domains_at(lower);
  if (run.first == run.second) {  // not found yet (or none: found again, at no cost)
    const auto inside = topology_.domains_at(lower, group);
    const auto first = static_cast<std::uint32_t>(inside.data() - all.data());
    run = {first, first + static_cast<std::uint32_t>(inside.size())};
  }
  return all.subspan(run.first, run.second - run.first);
}

template <CostModel Model>
double PreemptionContext<Model>::group_price_bound_cached(std::size_t tier_index,
                                                          const Tier& tier, DomainId group,
                                                          double floor, double grid,
                                                          ScanCache* cache,
                                                          const GroupPlace* where) const {
  if (cache == nullptr) return group_price_bound(tier, group, floor, grid);
  if (cache->group_bounds.size() <= tier_index) cache->group_bounds.resize(tier_index + 1);
  auto& levels = cache->group_bounds[tier_index];
  const LevelIndex level = where != nullptr ? where->level : topology_.level(group);
  const std::size_t ordinal = where != nullptr ? where->ordinal : topology_.ordinal(group);
  if (levels.size() <= level) levels.resize(level + 1);
  auto& entries = levels[level];
  const std::size_t count = topology_.domains_at(level).size();
  if (entries.size() != count) entries.assign(count, {});
  ScanCache::GroupBound& entry = entries[ordinal];
  const std::uint64_t version = where != nullptr ? where->version : state_.domain_version(group);
  if (entry.valid && entry.version == version) {
    ++cache->group_hits;
    return entry.bound;
  }
  // A changed group above the hosts (a rack after a hundred changes) seldom has other bands
  // or another most idle host: its bound is then the one kept with its cover. Apart from
  // `group_price_bound`, which the cold path takes for every group it opens.
  ScanCache::KeptCover* kept = nullptr;
  if constexpr (IndexPricedModel<Model>) {
    if (level < topology_.host_level()) {
      if (cache->group_covers.size() <= level) cache->group_covers.resize(level + 1);
      auto& covers = cache->group_covers[level];
      if (covers.size() != count) covers.assign(count, {});
      kept = &covers[ordinal];
    }
  }
  double bound = floor;
  if (kept == nullptr) {
    bound = group_price_bound(tier, group, floor, grid);
  } else if (const double need = group_need_cached(tier, group, level, ordinal, *cache);
             need > 0.0) {
    bound = kept_cover_bound(
        *kept, *cache, state_.index_band_digests_at(level)[ordinal],
        [&](const auto& visit) { state_.for_each_index_band(group, preemptor_.priority, visit); },
        need, true, floor, grid);
  }
  entry = {version, bound, true};
  ++cache->group_misses;
  return bound;
}

template <CostModel Model>
IndexCover PreemptionContext<Model>::index_cover(DomainId where, double need,
                                                 bool least_action) const {
  return index_cover_from(
      [&](const auto& visit) { state_.for_each_index_band(where, preemptor_.priority, visit); },
      need, least_action);
}

template <CostModel Model>
template <class ForEachBand>
IndexCover PreemptionContext<Model>::index_cover_from(ForEachBand&& for_each_band, double need,
                                                      bool least_action) const {
  IndexCover out;
  if constexpr (IndexPricedModel<Model>) {
    // Per band, at most the entries of its least-lost-work workload cost the band's rate; every
    // other entry costs at least the rate of its second least lost work, in any number. The
    // cheapest entries first give the least cost of `need` of them. Kept: a few capped
    // entry counts (a band past them counts as unlimited at its own rate, a weaker claim).
    constexpr std::size_t kept = index_cover_capped;
    std::array<std::pair<double, double>, kept> capped{};  // (rate, entries at most)
    std::size_t count = 0;
    double open_rate = std::numeric_limits<double>::infinity();  // entries in any number
    const auto cap = [&](double rate, double entries) {
      if (count == kept) {
        open_rate = std::min(open_rate, rate);
        return;
      }
      // Kept in ascending rate: an insertion into a few.
      std::size_t at = count++;
      for (; at > 0 && rate < capped[at - 1].first; --at) capped[at] = capped[at - 1];
      capped[at] = {rate, entries};
    };
    for_each_band([&](const IndexBand& band) {
      const PriceRate least = model_.index_price_rate(band);
      out.per_victim = std::min(out.per_victim, least.per_victim);
      // Only a declared price can beat the cover: the fallback, one entry at the band's rate
      // lowered, never exceeds the cover of one entry or more.
      if constexpr (IndexActionPricedModel<Model>) {
        if (least_action)
          out.least_action = std::min(out.least_action, index_action_price_of(model_, band));
      }
      const auto owner_entries = static_cast<double>(band.entries_of_least_lost_work);
      if (!std::isfinite(band.second_least_lost_work_per_entry)) {
        cap(least.per_device_entry, owner_entries);  // one workload: its entries alone
        return;
      }
      IndexBand others = band;
      others.least_lost_work_per_entry = band.second_least_lost_work_per_entry;
      const PriceRate rest = model_.index_price_rate(others);
      out.per_victim = std::min(out.per_victim, rest.per_victim);
      // A rate that falls as the lost work rises breaks the declaration: the band's least rate
      // then stands for all its entries.
      if (!(rest.per_device_entry >= least.per_device_entry)) {
        open_rate = std::min(open_rate, least.per_device_entry);
        return;
      }
      cap(least.per_device_entry, owner_entries);
      open_rate = std::min(open_rate, rest.per_device_entry);
    });
    double left = need;
    double cost = 0.0;
    for (std::size_t i = 0; i < count && left > 0.0 && capped[i].first < open_rate; ++i) {
      const double taken = std::min(left, capped[i].second);
      cost += taken * capped[i].first;
      left -= taken;
      ++out.terms;
    }
    if (left > 0.0) {
      cost += left * open_rate;  // infinity when the bands hold too few entries
      ++out.terms;
    }
    out.cost = cost;
  }
  return out;
}

template <CostModel Model>
template <class ForEachBand>
double PreemptionContext<Model>::kept_cover_bound(ScanCache::KeptCover& kept, ScanCache& cache,
                                                  std::uint64_t band_digest,
                                                  ForEachBand&& for_each_band, double need,
                                                  bool least_action, double floor,
                                                  double grid) const {
  const auto need_bits = std::bit_cast<std::uint64_t>(need);
  if (kept.valid && kept.band_digest == band_digest && kept.need == need_bits &&
      kept.priority == preemptor_.priority && kept.least_action == least_action) {
    ++cache.cover_hits;
    return kept.bound;
  }
  kept.valid = false;  // stays so if the bound throws
  const double bound =
      price_bound_of(index_cover_from(for_each_band, need, least_action), floor, grid);
  kept = {true, least_action, preemptor_.priority, need_bits, band_digest, bound};
  ++cache.cover_misses;
  return bound;
}

template <CostModel Model>
double PreemptionContext<Model>::banded_price_bound(DomainId where, double need, double floor,
                                                    double grid) const {
  if constexpr (!IndexPricedModel<Model>) {
    return floor;
  } else {
    if (!(need > 0.0)) return floor;
    return price_bound_of(index_cover(where, need, topology_.level(where) < topology_.host_level()),
                          floor, grid);
  }
}

template <CostModel Model>
double PreemptionContext<Model>::block_price_bound(const Tier& tier, std::uint32_t block,
                                                   double floor, double grid,
                                                   ScanCache* cache) const {
  if constexpr (!IndexPricedModel<Model>) {
    return floor;
  } else {
    // As `group_price_bound` over the block's members at once: the most idle devices of any
    // host under them (their hosts are one run of ordinals), and the block's bands, folded
    // from the members' as a parent's are (each extreme over a superset of any member's).
    const LevelIndex host_level = topology_.host_level();
    double most_idle = 0.0;
    const auto& idle_index = state_.idle_device_index();
    const auto all_hosts = topology_.domains_at(host_level);
    const auto [host_first, host_last] = block_host_ordinals(block, cache);
    if (idle_index.covers(host_level)) {
      most_idle = static_cast<double>(
          std::max<std::int64_t>(idle_index.most_idle_in(host_level, host_first, host_last), 0));
    } else {
      for (std::size_t h = host_first; h < host_last; ++h)
        most_idle = std::max(most_idle, free_in(state_, all_hosts[h], whole_device_dim));
    }
    const double need = total_demand(tier, whole_device_dim) - most_idle;
    if (!(need > 0.0)) return floor;
    if (cache != nullptr) {
      if (cache->block_covers.size() <= block) cache->block_covers.resize(std::size_t{block} + 1);
      return kept_cover_bound(
          cache->block_covers[block], *cache, state_.index_block_band_digest(block),
          [&](const auto& visit) {
            state_.for_each_index_block_band(block, preemptor_.priority, visit);
          },
          need, true, floor, grid);
    }
    return price_bound_of(
        index_cover_from(
            [&](const auto& visit) {
              state_.for_each_index_block_band(block, preemptor_.priority, visit);
            },
            need, true),
        floor, grid);
  }
}

template <CostModel Model>
std::pair<std::size_t, std::size_t> PreemptionContext<Model>::block_host_ordinals(
    std::uint32_t block, ScanCache* cache) const {
  if (cache != nullptr) {
    if (cache->block_hosts.size() <= block) cache->block_hosts.resize(std::size_t{block} + 1);
    auto& kept = cache->block_hosts[block];
    if (kept.first == kept.second) {
      const auto [first, last] = block_host_ordinals(block, nullptr);
      kept = {static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(last)};
    }
    return {kept.first, kept.second};
  }
  const LevelIndex host_level = topology_.host_level();
  const auto [first, last] = state_.index_block_ordinals(block);
  const auto members =
      topology_.domains_at(static_cast<LevelIndex>(host_level - 1)).subspan(first, last - first);
  const auto all_hosts = topology_.domains_at(host_level);
  const auto first_hosts = topology_.domains_at(host_level, members.front());
  const auto last_hosts = topology_.domains_at(host_level, members.back());
  return {static_cast<std::size_t>(first_hosts.data() - all_hosts.data()),
          static_cast<std::size_t>(last_hosts.data() - all_hosts.data()) + last_hosts.size()};
}

template <CostModel Model>
bool PreemptionContext<Model>::gang_blocks(const Tier& tier) const {
  if constexpr (!IndexPricedModel<Model>) {
    return false;
  } else {
    const ResolvedDemand& demand = tier.demand;
    const LevelIndex host_level = topology_.host_level();
    if (host_level != 2 || tier.target_level != 1 || !takes_whole_devices(tier) ||
        demand.replicas < 2 || demand.whole_devices <= 0 || demand.unit_level < host_level)
      return false;
    const auto racks = topology_.domains_at(1);
    if (racks.empty() || state_.index_block_of(racks.front()) == Allocation::index_no_block)
      return false;
    if (demand.distinct_hosts) return true;
    // No host holds two replicas: 2 d devices exceed every host's (the idle index keeps the
    // level's largest device count; without it, the racks are taken one by one as before).
    const auto& idle_index = state_.idle_device_index();
    return idle_index.covers(host_level) &&
           2 * demand.whole_devices > static_cast<std::int64_t>(idle_index.most_devices(host_level));
  }
}

template <CostModel Model>
double PreemptionContext<Model>::block_gang_bound(const Tier& tier, std::uint32_t block,
                                                  double floor, double grid,
                                                  ScanCache* cache) const {
  const auto [host_first, host_last] = block_host_ordinals(block, cache);
  return gang_bound_over(
      tier, host_first, host_last,
      [&](const auto& visit) {
        state_.for_each_index_block_band(block, preemptor_.priority, visit);
      },
      floor, grid);
}

template <CostModel Model>
double PreemptionContext<Model>::target_gang_bound(const Tier& tier, DomainId target,
                                                   double floor, double grid) const {
  const LevelIndex host_level = topology_.host_level();
  const auto all_hosts = topology_.domains_at(host_level);
  const auto hosts = topology_.domains_at(host_level, target);
  const auto host_first = static_cast<std::size_t>(hosts.data() - all_hosts.data());
  return gang_bound_over(
      tier, host_first, host_first + hosts.size(),
      [&](const auto& visit) { state_.for_each_index_band(target, preemptor_.priority, visit); },
      floor, grid);
}

template <CostModel Model>
template <class ForEachBand>
double PreemptionContext<Model>::gang_bound_over(const Tier& tier, std::size_t host_first,
                                                 std::size_t host_last,
                                                 ForEachBand&& for_each_band, double floor,
                                                 double grid) const {
  if constexpr (!IndexPricedModel<Model>) {
    return floor;
  } else {
    if (!takes_whole_devices(tier)) return floor;
    const LevelIndex host_level = topology_.host_level();
    const auto replicas = static_cast<std::size_t>(tier.demand.replicas);
    const auto devices = tier.demand.whole_devices;
    // The R largest idle counts among the hosts: any R distinct hosts among them have no
    // more, one by one. A few (the usual gang) go on the stack: this runs once per rack.
    constexpr std::size_t on_stack = 8;
    std::array<std::int64_t, on_stack> few_idle{};
    std::vector<std::int64_t> many_idle;
    std::span<const std::int64_t> idle;
    const auto& idle_index = state_.idle_device_index();
    if (idle_index.covers(host_level) && replicas <= on_stack) {
      idle = std::span<const std::int64_t>(few_idle).first(idle_index.most_idle_counts_in(
          host_level, host_first, host_last, std::span<std::int64_t>(few_idle).first(replicas)));
    } else if (idle_index.covers(host_level)) {
      idle_index.most_idle_counts_in(host_level, host_first, host_last, replicas, many_idle);
      idle = many_idle;
    } else {
      std::vector<std::int64_t>& idle_counts = many_idle;
      const auto all_hosts = topology_.domains_at(host_level);
      for (std::size_t h = host_first; h < host_last; ++h)
        idle_counts.push_back(
            static_cast<std::int64_t>(free_in(state_, all_hosts[h], whole_device_dim)));
      const auto kept = static_cast<std::ptrdiff_t>(std::min(replicas, idle_counts.size()));
      std::partial_sort(idle_counts.begin(), idle_counts.begin() + kept, idle_counts.end(),
                        std::greater<>());
      idle_counts.resize(static_cast<std::size_t>(kept));
      idle = idle_counts;
    }
    if (idle.size() < replicas) return floor;  // too few hosts: the checks reject the targets
    // The bands hold every victim on any of the hosts, and a cover from them is no larger
    // than one from a host's own (each extreme over a superset), and rises with the need: the
    // R least deficits, each covered by these bands, bound the R hosts any plan readies (the
    // per-entry parts of one action's rate add up across hosts, since they count the entries
    // it frees).
    double sum = 0.0;
    double per_victim = std::numeric_limits<double>::infinity();
    for (const std::int64_t most : idle) {
      const double need = static_cast<double>(devices - most);
      if (need <= 0.0) continue;
      const IndexCover cover = index_cover_from(for_each_band, need, false);
      // Too few entries for this host's deficit: no target here has R hosts it can ready,
      // which their own checks find; keep the floor.
      if (!std::isfinite(cover.cost)) return floor;
      per_victim = std::min(per_victim, cover.per_victim);
      sum += cover.cost;
    }
    if (!(sum > 0.0) || !std::isfinite(per_victim)) return floor;
    // Lowered by twice the most roundings a target's `per_host_index_bound` counts (its covers
    // have at most `index_cover_capped` + 1 terms), and more: where the two agree in exact
    // arithmetic, this one is the lower, so a target's per-host bound is at least it and the
    // targets come up in the order they would without it.
    const double target_roundings =
        16.0 + 2.0 * static_cast<double>(index_cover_capped + 1 + replicas);
    const double bound = conservative(per_victim + sum, 2.0 * target_roundings + 16.0);
    if (!std::isfinite(bound)) return floor;
    return std::max(floor, on_grid(bound, grid));
  }
}

template <CostModel Model>
double PreemptionContext<Model>::price_bound_of(const IndexCover& cover, double floor,
                                                double grid) const {
  if constexpr (!IndexPricedModel<Model>) {
    return floor;
  } else {
    // No band holds a device, or too few entries: the index shortfall rejects the domain;
    // keep the floor.
    if (!std::isfinite(cover.per_victim) || !std::isfinite(cover.cost)) return floor;
    // Each rate is itself a rounded quotient: a few roundings, counted by conservative, with
    // one product and one sum per term of the cover.
    const double covered = conservative(cover.per_victim + cover.cost,
                                        16.0 + 2.0 * static_cast<double>(cover.terms));
    // Any plan that frees something here takes one action at least: the least action's price
    // bounds it too (it reads the per-replica leasts, which a large cheap victim's per-entry
    // rate hides from the cover when few entries are needed). Exact as declared (every price
    // is checked against it exactly): a domain bounded at the best plan's cost is not read.
    const double bound = std::isfinite(cover.least_action)
                             ? std::max(covered, cover.least_action)
                             : covered;
    // A bound past the largest double would prune the domain unread as if it held no plan: read
    // it instead, and let its scan reject the model's prices (they sum past it too).
    if (!std::isfinite(bound)) return floor;
    return std::max(floor, on_grid(bound, grid));
  }
}

template <CostModel Model>
template <class Visit>
void PreemptionContext<Model>::for_each_host(DomainId scope, Visit&& visit) const {
  const LevelIndex host_level = topology_.host_level();
  if (topology_.level(scope) >= host_level) {
    visit(topology_.ancestor_at(scope, host_level));
    return;
  }
  for (DomainId host : topology_.domains_at(host_level, scope)) visit(host);
}

}  // namespace topopreempt::detail
