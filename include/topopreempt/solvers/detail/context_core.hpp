// SPDX-License-Identifier: MIT
#pragma once
/// @file context_core.hpp
/// `PreemptionContext`: what every solver shares about one decision (eligibility, topology tiers,
/// candidate target domains, where each dimension is measured). Its member functions are defined
/// by stage: `context_scan.hpp` (screening and scanning targets), `context_problem.hpp` (reading
/// one domain into a problem), `context_plan.hpp` (assembling the plan and its explanation).
/// Include `preemption_context.hpp`, which brings all of them.

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "topopreempt/solvers/detail/search_bounds.hpp"

namespace topopreempt::detail {

/// How many domains ahead a loop over domains far apart in memory (hosts, racks) prefetches
/// their index bands (`Allocation::prefetch_index_bands`). Measured: 4 is as good as 12.
inline constexpr std::size_t prefetch_distance = 4;

/// Calls `visit(i)` for each position i < `count` in order, the index bands of the domain
/// `domain_at(i + prefetch_distance)` fetched first, so that a loop over domains far apart in
/// memory issues their cache misses ahead, not one at a time. Domains below the host level
/// have no bands of their own: nothing is fetched for them.
template <class DomainAt, class Visit>
void for_each_prefetching_bands(const Allocation& state, std::size_t count, DomainAt&& domain_at,
                                Visit&& visit) {
  for (std::size_t i = 0; i < std::min(prefetch_distance, count); ++i)
    state.prefetch_index_bands(domain_at(i));
  for (std::size_t i = 0; i < count; ++i) {
    if (i + prefetch_distance < count) {
      state.prefetch_index_bands(domain_at(i + prefetch_distance));
    }
    visit(i);
  }
}

/// `for_each_prefetching_bands` over the positions of `domains`.
template <class Visit>
void for_each_prefetching_bands(const Allocation& state, std::span<const DomainId> domains,
                                Visit&& visit) {
  for_each_prefetching_bands(
      state, domains.size(), [&](std::size_t i) { return domains[i]; },
      std::forward<Visit>(visit));
}

/// How many capped (rate, entries) terms `PreemptionContext::index_cover` keeps; a band past
/// them counts as unlimited at its own rate. A cover sums at most this many terms and one more.
inline constexpr std::size_t index_cover_capped = 8;

/// What the preemption index allows for freeing device entries in one domain
/// (`PreemptionContext::index_cover`): the least per-victim part over its bands, the least
/// per-entry cost of the entries (infinite when its bands hold too few), and the terms summed;
/// and the least price of one action on a victim of its bands (`index_action_price_of`), which
/// any plan freeing something there pays at least.
struct IndexCover {
  double per_victim = std::numeric_limits<double>::infinity();
  double cost = std::numeric_limits<double>::infinity();
  std::size_t terms = 0;
  double least_action = std::numeric_limits<double>::infinity();
};

/// A group's level, ordinal in it and version (`Allocation::versions_at`), as a caller that
/// read a run of siblings side by side knows them.
struct GroupPlace {
  LevelIndex level;
  std::size_t ordinal;
  std::uint64_t version;
};

/// Everything a solver needs about one decision. Built once per `solve` call.
template <CostModel Model>
class PreemptionContext {
 public:
  /// Checks the model's declarations (O(1)); its prices are checked as domains are read
  /// (`checked_prices`), not here: most domains are never read, and a preemptor that fits
  /// already is answered without pricing anything. With a decider's `cache`, the preemptor's
  /// resolved demand and tiers are those it kept, when it kept them for the same preemptor
  /// fields and topology (`ScanCache::KeptTiers`), else built and kept there.
  PreemptionContext(const Allocation& state, const Workload& preemptor, const Model& model,
                    ScanCache* cache = nullptr)
      : state_(state),
        preemptor_(preemptor),
        model_(model),
        topology_(state.topology()),
        floor_(checked_price_declarations(model)),
        grid_(cost_grid_of(model)),
        uniform_sum_exact_(uniform_sum_exact(state, model, grid_)),
        fractional_items_(cache != nullptr ? &cache->fractional_items : &own_fractional_items_) {
    const bool kept = cache != nullptr && cache->kept_tiers.kept_for(preemptor, topology_);
    if (!kept) own_demand_ = ResolvedDemand::of(preemptor, topology_);  // validates it
    if (state.contains(preemptor.id)) {
      throw std::invalid_argument(preemptor.label() +
                                  " is already running; a preemptor must be pending");
    }
    if (kept) {
      demand_ = &cache->kept_tiers.resolved;
      tiers_ = &cache->kept_tiers.tiers;
      return;
    }
    build_tiers();
    if (cache != nullptr) {
      cache->kept_tiers.keep(preemptor, topology_, own_demand_, own_tiers_);
      // Problems read for other tiers are none of these tiers'.
      for (auto& buffers : cache->search_buffers) buffers.kept_problems = {};
    }
  }
  // Holds pointers into itself.
  PreemptionContext(const PreemptionContext&) = delete;
  PreemptionContext& operator=(const PreemptionContext&) = delete;

  [[nodiscard]] const Allocation& state() const noexcept { return state_; }
  [[nodiscard]] const Workload& preemptor() const noexcept { return preemptor_; }
  [[nodiscard]] const Topology& topology() const noexcept { return topology_; }
  [[nodiscard]] const ResolvedDemand& demand() const noexcept { return *demand_; }
  [[nodiscard]] const std::vector<Tier>& tiers() const noexcept { return *tiers_; }
  /// The model's declared `least_price()` (0 when it declares none), checked at construction.
  [[nodiscard]] double price_floor() const noexcept { return floor_; }
  /// The model's declared `cost_grid()` (0 when it declares none), checked at construction.
  [[nodiscard]] double cost_grid() const noexcept { return grid_; }

  /// Only strictly lower-priority, preemptible workloads may be victims.
  [[nodiscard]] bool eligible(const Workload& workload) const noexcept {
    return workload.preemptible && workload.priority < preemptor_.priority;
  }

  /// Candidate target domains of a tier, ascending id.
  [[nodiscard]] std::span<const DomainId> targets(const Tier& tier) const {
    return topology_.domains_at(tier.target_level);
  }

  /// The domain whose subtree holds everything a target's replicas may draw from: the target,
  /// or the pool root above it when the target lies below the pools (e.g. a PCIe switch whose
  /// CPUs belong to its NUMA node).
  [[nodiscard]] DomainId reach(const Tier& tier, DomainId target) const {
    DomainId reach = target;
    for (Eigen::Index i = 0; i < tier.demand.pooled.size(); ++i) {
      if (tier.demand.pooled(i) == 0) continue;
      const DomainId root = pool_root(topology_, target, static_cast<std::size_t>(i));
      if (root.valid() && topology_.contains(root, reach)) reach = root;
    }
    return reach;
  }

  /// Relaxation dimensions of a tier: 0 = whole devices (if asked), then every device-share
  /// and pooled dimension with demand. `aggregate_domain` says where each is measured.
  [[nodiscard]] std::vector<std::size_t> relaxation_dims(const Tier& tier) const {
    std::vector<std::size_t> dims;
    if (tier.demand.whole_devices > 0) dims.push_back(whole_device_dim);
    for (Eigen::Index i = 0; i < tier.demand.pooled.size(); ++i) {
      if (tier.demand.pooled(i) > 0 || (tier.demand.has_share && tier.demand.share(i) > 0)) {
        dims.push_back(static_cast<std::size_t>(i));
      }
    }
    return dims;
  }
  /// The name of dimension `dim` for a plural amount ("whole GPUs", "cpu_milli").
  [[nodiscard]] std::string dimension_name(std::size_t dim) const {
    if (dim == distinct_host_dimension) return host_noun() + "s";
    return dim == whole_device_dim ? "whole " + device_noun() + "s" : topology_.schema()[dim].name;
  }
  /// `amount` of dimension `dim` as an explanation prints it: "1 whole GPU", "2 whole GPUs",
  /// "900 gpu_milli" (resource names are units, not nouns, so they take no plural).
  [[nodiscard]] std::string quantity(double amount, std::size_t dim) const {
    if (dim == distinct_host_dimension) {
      return format_amount(amount) + " " + host_noun() + (amount == 1.0 ? "" : "s") +
             " (distinct_hosts)";
    }
    if (dim != whole_device_dim) return format_amount(amount) + " " + topology_.schema()[dim].name;
    return format_amount(amount) + " whole " + device_noun() + (amount == 1.0 ? "" : "s");
  }
  /// The device level's name as a noun: an accelerator acronym in capitals ("gpu" -> "GPU"),
  /// any other level name as the user spelled it.
  [[nodiscard]] std::string device_noun() const {
    std::string name = topology_.levels()[topology_.device_level()];
    for (std::string_view acronym : {"gpu", "tpu", "npu", "ipu", "xpu", "dpu"}) {
      if (name == acronym) {
        for (char& c : name) c = static_cast<char>(c - 'a' + 'A');
        break;
      }
    }
    return name;
  }
  /// The host level's name ("node").
  [[nodiscard]] const std::string& host_noun() const {
    return topology_.levels()[topology_.host_level()];
  }
  /// Where dimension `dim` is measured for `target`.
  [[nodiscard]] DomainId aggregate_domain(DomainId target, std::size_t dim) const {
    if (dim == whole_device_dim || topology_.schema().is_device(dim)) return target;
    const DomainId root = pool_root(topology_, target, dim);
    return (root.valid() && topology_.contains(target, root)) ? target
                                                              : (root.valid() ? root : target);
  }
  /// Total demand of dimension `dim`.
  [[nodiscard]] double total_demand(const Tier& tier, std::size_t dim) const {
    const auto r = static_cast<double>(tier.demand.replicas);
    if (dim == whole_device_dim) return r * static_cast<double>(tier.demand.whole_devices);
    const auto i = static_cast<Eigen::Index>(dim);
    return r * static_cast<double>(tier.demand.pooled(i) + tier.demand.share(i));
  }
  /// Free amount of dimension `dim` in `domain` under `view`.
  template <CapacityView View>
  [[nodiscard]] double free_in(const View& view, DomainId domain, std::size_t dim) const {
    return dim == whole_device_dim ? static_cast<double>(view.idle_devices(domain))
                                   : static_cast<double>(view.free(domain, dim));
  }

  /// Static check on capacities alone (and, for `distinct_hosts`, on the number of hosts): can
  /// the target ever hold the preemptor? Returns the failing dimension with capacity and demand.
  [[nodiscard]] std::optional<Shortfall> too_small(const Tier& tier, DomainId target) const {
    if (tier.demand.distinct_hosts) {
      // One replica per host: a target with fewer hosts than replicas never holds the gang.
      const LevelIndex host = topology_.host_level();
      const std::size_t hosts =
          topology_.level(target) >= host ? 1 : topology_.domains_at(host, target).size();
      if (hosts < static_cast<std::size_t>(tier.demand.replicas)) {
        return Shortfall{distinct_host_dimension, static_cast<double>(hosts),
                         static_cast<double>(tier.demand.replicas), 0};
      }
    }
    for (std::size_t dim : tier.dims) {
      const DomainId where = aggregate_domain(target, dim);
      const double capacity =
          dim == whole_device_dim
              ? static_cast<double>(topology_.device_count(where))
              : static_cast<double>(topology_.capacity(where)(static_cast<Eigen::Index>(dim)));
      if (capacity < total_demand(tier, dim))
        return Shortfall{dim, capacity, total_demand(tier, dim), 0};
    }
    return std::nullopt;
  }

  /// The cheap first look at a batch of targets: deficits, what all eligible victims could
  /// free, and the fractional lower bound of each. A batch is either one target above the
  /// host level, or every target of one host (then each occupant of the host is read once
  /// for the whole batch, not once per NUMA node or PCIe switch). Allocates nothing once warm.
  /// Elastic victims enter the bound at their cheapest price (a shrink) for their full gain,
  /// which keeps the bound valid without enumerating shrink options here.
  template <class Emit>
  void scan_batch(const Tier& tier, std::span<const DomainId> targets, ScanWorkspace& workspace,
                  Emit&& emit) const;

  /// The static facts of every target of `tier`, kept in `cache` (built on first use).
  const ScanCache::TierShape& tier_shape(ScanCache& cache, std::size_t tier_index,
                                         const Tier& tier) const;

  /// Digest of the versions of the domains a scan of target `ordinal` reads.
  [[nodiscard]] std::uint64_t scan_key(const ScanCache::TierShape& shape, std::size_t ordinal,
                                       std::size_t dims) const;
  /// Digest of the versions of the domains `index_shortfall` of target `ordinal` reads.
  [[nodiscard]] std::uint64_t index_key(const ScanCache::TierShape& shape, std::size_t ordinal,
                                        std::size_t dims) const;

  /// `index_shortfall` through `cache` (may be null): answered from it while the versions of
  /// the domains it reads are unchanged.
  [[nodiscard]] std::optional<Shortfall> index_shortfall_cached(std::size_t tier_index,
                                                                const Tier& tier, DomainId target,
                                                                ScanCache* cache) const;

  /// The preemption index's lower bound on any plan in `target` (never read): at least
  /// `floor` (the declared price floor), and for an `IndexPricedModel` whose tier needs whole
  /// devices, `least per_victim + index_cover(deficit)` over the eligible bands of the target
  /// (each newly idle device needs one freed entry), lowered by its rounding and rounded up to
  /// the model's grid `grid`. O(bands held in the target). With `per_host`, also at least
  /// `per_host_index_bound` where it applies (O(hosts x bands)); the driver defers that
  /// part until the target comes up.
  [[nodiscard]] double index_price_bound(const Tier& tier, DomainId target, double floor,
                                         double grid, bool per_host = true) const;
  /// `index_price_bound` and `per_host_index_bound`, answered from `cache` (when not null)
  /// while the versions of the domains they read are unchanged (and the floor and grid are
  /// those of `ScanCache::keep_bounds_for`): the same bounds, bit for bit, so a decider's call
  /// takes the same path as a cold one.
  [[nodiscard]] double index_price_bound_cached(std::size_t tier_index, const Tier& tier,
                                                DomainId target, double floor, double grid,
                                                bool per_host, ScanCache* cache) const;
  [[nodiscard]] double per_host_index_bound_cached(std::size_t tier_index, const Tier& tier,
                                                   DomainId target, double floor, double grid,
                                                   ScanCache* cache) const;

  /// The targets `members` of `group` with their index bounds (`index_price_bound_cached`
  /// with the per-host part), in ascending (bound, id): what `prune_rest` lists a pruned
  /// group's targets by. With `cache`, when the group is at the tier's opening level and the
  /// tier's shape is `local`, answered from it while the group's version is the one they were
  /// taken at (the same bounds, bit for bit: the group's version covers every domain they
  /// read); else taken into `scratch`. The span lives until the next call.
  [[nodiscard]] std::span<const ScanCache::ListedTarget> listed_targets_cached(
      std::size_t tier_index, const Tier& tier, DomainId group,
      std::span<const DomainId> members, double floor, double grid, ScanCache* cache,
      std::vector<ScanCache::ListedTarget>& scratch) const;

  /// The entry `per_tier` keeps for `group`, a group at `shape`'s opening level, in tier
  /// `tier_index` (one per group of that level, made on first use).
  template <class Entry>
  Entry& opening_level_entry(std::vector<std::vector<Entry>>& per_tier, std::size_t tier_index,
                             const ScanCache::TierShape& shape, DomainId group) const;

  /// What admitting the unread `target` decides (`TierSearch::admit`): its static check, the
  /// index's verdict, and its index bound (the per-host part aside; for a gang of whole hosts,
  /// raised by `target_gang_bound` until its per-host bound is taken), each through `cache`
  /// (may be null).
  [[nodiscard]] ScanCache::Admission admission(std::size_t tier_index, const Tier& tier,
                                               DomainId target, double floor, double grid,
                                               ScanCache* cache) const;
  /// The admissions (`admission`) of `members`, the targets of `group`, in their order, kept
  /// in `cache` by the group's version when the group is at the tier's opening level and the
  /// tier's shape is `local` (the version then covers every domain they read): the same
  /// admissions as taken afresh. Null (nothing taken) when the cache does not keep them: the
  /// caller admits the targets one by one.
  [[nodiscard]] const std::vector<ScanCache::Admission>* admissions_cached(
      std::size_t tier_index, const Tier& tier, DomainId group, std::span<const DomainId> members,
      double floor, double grid, ScanCache* cache) const;

  /// Whether the targets of `tier` are taken by group (`group_price_bound`): for an
  /// `IndexPricedModel` whose tier needs whole devices, with targets at or below the host level
  /// and at least one level between them and the root.
  [[nodiscard]] bool grouped(const Tier& tier) const;
  /// A lower bound on any plan in any target of `tier` inside `group` (a domain at or above the
  /// host level, above the target level), never reading a target: the price floor, or `least
  /// per_victim + least deficit x least per_device_entry` over the group's eligible bands,
  /// where the least deficit is the demand less the most idle devices of one host of the
  /// group (no target in it has more). The group's bands hold every victim any of its targets
  /// may evict, so the model's declared rate bounds them all. O(hosts in the group + bands).
  [[nodiscard]] double group_price_bound(const Tier& tier, DomainId group, double floor,
                                         double grid) const;
  /// The least deficit of whole devices `group_price_bound` covers in `group`: the tier's
  /// demand less the most idle devices of one host of the group.
  [[nodiscard]] double group_need(const Tier& tier, DomainId group) const;
  /// `group_need`, the run of the group's hosts kept in `cache` (`ScanCache::group_hosts`);
  /// `level` and `ordinal` are the group's.
  [[nodiscard]] double group_need_cached(const Tier& tier, DomainId group, LevelIndex level,
                                         std::size_t ordinal, ScanCache& cache) const;
  /// The domains of level `lower` under `group` (a domain of `level`, `ordinal` in it),
  /// ascending: `Topology::domains_at(lower, group)`, their run of ordinals kept in `runs` on
  /// first use (the topology's alone; an irregular tree finds it by binary search over the
  /// whole level).
  [[nodiscard]] std::span<const DomainId> domains_below_cached(ScanCache::OrdinalRuns& runs,
                                                               DomainId group, LevelIndex level,
                                                               std::size_t ordinal,
                                                               LevelIndex lower) const;
  /// `group_price_bound`, answered from `cache` (when not null) while the group's version is
  /// the one it was taken at (and the floor and grid are those of
  /// `ScanCache::keep_bounds_for`): a decider's later call takes anew only the bounds of groups
  /// that changed, and gets the very bounds a cold call would (so the same search). A changed
  /// group above the hosts whose bands and need are, bit for bit, those its last bound was
  /// taken from keeps that bound (`ScanCache::group_covers`). `where`: the group's level,
  /// ordinal in it and version, when the caller read them already (side by side, for a run
  /// of siblings), else looked up here.
  [[nodiscard]] double group_price_bound_cached(std::size_t tier_index, const Tier& tier,
                                                DomainId group, double floor, double grid,
                                                ScanCache* cache,
                                                const GroupPlace* where = nullptr) const;

  /// Sizes `cache`'s entries for `tier` (one per target).
  void prepare_cache(ScanCache& cache, std::size_t tier_index, const Tier& tier) const;

  /// `too_small` through `cache` (may be null): computed once per target.
  [[nodiscard]] std::optional<Shortfall> too_small_cached(std::size_t tier_index, const Tier& tier,
                                                          DomainId target, ScanCache* cache) const;

  /// `scan_batch` through `cache` (may be null): targets whose read domains kept their
  /// versions are answered from it, the others scanned (as one batch) and stored. Results are
  /// emitted in target order either way, so a cached decision logs exactly what a cold one does.
  template <class Emit>
  void scan_batch_cached(std::size_t tier_index, const Tier& tier,
                         std::span<const DomainId> targets, ScanWorkspace& workspace,
                         ScanCache* cache, Emit&& emit) const;

  /// Calls `visit(batch)` for the targets of `tier` in batches for `scan_batch`: one per host
  /// when targets lie at or below the host level (only those passing `keep`), else one each.
  template <class Keep, class Visit>
  void for_each_batch(const Tier& tier, std::vector<DomainId>& buffer, Keep&& keep,
                      Visit&& visit) const;

  /// Whether a scan of `target` also takes the per-host bound: a gang of whole devices whose
  /// replicas each lie in one host and never two in one (`distinct_hosts`, or 2 x devices per
  /// replica above every host's), in a target spanning hosts.
  [[nodiscard]] bool per_host_bound_applies(const Tier& tier, DomainId target) const;
  /// The per-host bound of a scanned gang target: the sum of the R least fractional covers,
  /// each of one host's device deficit for one replica by the victims on that host (a victim
  /// on n hosts charged 1/n of its cheapest price on each), lowered by its rounding.
  [[nodiscard]] double per_host_bound(const Tier& tier, std::span<const DomainId> hosts,
                                      ScanWorkspace& workspace) const;

  /// The per-host bound from the index alone (no occupant read): `least per_victim` plus the
  /// R least covers of a host's deficit by its bands' entries, cheapest first (per band, the
  /// entries of its least-lost-work workload at the band's rate, the rest at the rate of its
  /// second least lost work), over the target's hosts (`index_price_bound` takes it when
  /// `per_host_bound_applies`). O(hosts x bands). With `kept` (the tier's
  /// `ScanCache::host_terms`), a host at the version its terms were kept at adds those.
  [[nodiscard]] double per_host_index_bound(
      const Tier& tier, DomainId target, double floor, double grid,
      std::vector<ScanCache::HostTerms>* kept = nullptr) const;
  /// What `host` adds to a per-host bound for `devices` whole devices.
  [[nodiscard]] ScanCache::HostTerms host_terms(DomainId host, double devices) const;

  /// Shortfall check and fractional bound of one scanned target.
  [[nodiscard]] static ScanResult finish_scan(const Tier& tier, ScanWorkspace::Target& slot);

  /// The preemption index's verdict on one target, read from aggregates alone (no occupant):
  /// the first relaxation dimension whose deficit exceeds what every eligible victim holds
  /// where it is measured (for a domain below the host level, what they hold in its host).
  /// Never wrong: the index counts every eligible victim there, a superset of what the scan
  /// counts, so a domain it rejects the scan rejects too.
  [[nodiscard]] std::optional<Shortfall> index_shortfall(const Tier& tier, DomainId target) const;

  /// A proof of impossibility by counting hosts, from the preemption index alone: every
  /// replica lies in one host, so a gang of R replicas needs hosts that, with every eligible
  /// victim evicted, hold R replicas between them. Each host of `target` is credited with the
  /// replicas that its idle and evictable devices and its evictable pooled amounts could hold
  /// (at most one under `distinct_hosts`); a target whose hosts hold fewer than R is rejected
  /// (`have`: how many they hold, `need`: R, `dim`: `distinct_host_dimension`). An upper
  /// bound, never wrong. Only for gangs in targets above the host level; O(hosts x dims x
  /// priorities held), stopping once R replicas are counted.
  [[nodiscard]] std::optional<Shortfall> host_count_shortfall(const Tier& tier,
                                                              DomainId target) const;

  /// The least price the index allows for freeing `need` device entries in `where`: the
  /// least `per_victim` over its eligible bands, and the cheapest-first cover of `need`
  /// entries (per band, the entries of its least-lost-work workload at the band's rate, any
  /// more at the rate of its second least lost work; infinite when the bands hold too few).
  /// With `least_action`, also the least action price over those bands (else left infinite:
  /// at a host and below, where bands keep no per-replica leasts, it seldom beats the cover).
  [[nodiscard]] IndexCover index_cover(DomainId where, double need, bool least_action) const;
  /// `floor`, or `least per_victim + index_cover(where, need)` when declared and `need` > 0,
  /// lowered by its rounding, at least the least action price there above the host level,
  /// and put on `grid`.
  [[nodiscard]] double banded_price_bound(DomainId where, double need, double floor,
                                          double grid) const;
  /// `index_cover` over the bands `for_each_band(visit)` visits.
  template <class ForEachBand>
  [[nodiscard]] IndexCover index_cover_from(ForEachBand&& for_each_band, double need,
                                            bool least_action) const;
  /// `banded_price_bound`'s bound from a cover already taken (`need` > 0).
  [[nodiscard]] double price_bound_of(const IndexCover& cover, double floor, double grid) const;
  /// `price_bound_of(index_cover_from(for_each_band, need, least_action), floor, grid)`,
  /// answered from `kept` when the bands' digest `band_digest` (the index's, of the domain or
  /// block `for_each_band` visits), `need`, the preemptor's priority and `least_action` are,
  /// bit for bit, those it was taken from (else taken and kept there): the same bound, read
  /// from no band. O(1) when kept, O(bands) else.
  template <class ForEachBand>
  [[nodiscard]] double kept_cover_bound(ScanCache::KeptCover& kept, ScanCache& cache,
                                        std::uint64_t band_digest, ForEachBand&& for_each_band,
                                        double need, bool least_action, double floor,
                                        double grid) const;
  /// A bound for every target of `tier` under the members of the preemption index's block
  /// `block` (`Allocation::index_block_of`): `group_price_bound` over them at once, from the
  /// block's bands and the most idle devices of any host under them, so that a block whose
  /// bound cannot win is dismissed without reading its members' bands.
  /// `cache` (optional) keeps the block's host run (`ScanCache::block_hosts`).
  [[nodiscard]] double block_price_bound(const Tier& tier, std::uint32_t block, double floor,
                                         double grid, ScanCache* cache = nullptr) const;
  /// Whether the targets of `tier` are taken by the preemption index's blocks under the
  /// per-host gang bound (`block_gang_bound`): for an `IndexPricedModel`, a gang of whole
  /// devices whose replicas each lie in one host and never two in one (`distinct_hosts`, or 2 x
  /// devices per replica above every host's), targets the domains right above the hosts and
  /// right below the root, gathered into blocks (a large cluster's racks: `rack16`).
  [[nodiscard]] bool gang_blocks(const Tier& tier) const;
  /// A bound for every gang target of `tier` (`gang_blocks`) among the members of block
  /// `block`: a plan readies R distinct hosts of one target, each with d idle devices, so it
  /// frees at least d - idle(h) device entries on each. The R largest idle counts among the
  /// block's hosts give the R least deficits, each covered by the block's bands
  /// (`index_cover`, no larger than by any host's), plus one least per-victim part: never more
  /// than any member's `per_host_index_bound` (its rounding is counted twice over, so that
  /// where the two agree the block's is the lower), and a lower bound on every plan in it.
  /// O(hosts' idle buckets + R x block bands): no member's or host's bands are read.
  /// `cache` (optional) keeps the block's host run (`ScanCache::block_hosts`).
  [[nodiscard]] double block_gang_bound(const Tier& tier, std::uint32_t block, double floor,
                                        double grid, ScanCache* cache = nullptr) const;
  /// As `block_gang_bound` over one gang target (`per_host_bound_applies`) alone, from its own
  /// bands and its hosts' idle counts: no host's bands are read, and never more than its
  /// `per_host_index_bound` (O(idle buckets + R x its bands)). The driver keys a target by it
  /// until the per-host bound is taken.
  [[nodiscard]] double target_gang_bound(const Tier& tier, DomainId target, double floor,
                                         double grid) const;

  /// Calls `visit(host)` for each host-level domain that `scope` covers or lies in.
  template <class Visit>
  void for_each_host(DomainId scope, Visit&& visit) const;

  /// Reads the eligible victims of `target` into `problem` with their options and gains, the
  /// aggregate deficits and the fractional lower bound. Returns a reason when the target is
  /// hopeless even if every eligible victim went.
  std::optional<Shortfall> build_problem(const Tier& tier, DomainId target,
                                         DomainProblem& problem) const;

  /// Prices every action on an eligible victim that a scan reads, and checks the prices
  /// against what solvers assume of the domains they leave unread: each valid, on the declared
  /// grid, none below the declared `least_price()`, none below the declared `index_price_rate`
  /// of the band the victim forms. Throws `std::invalid_argument` naming the model and the
  /// victim otherwise. A `UniformPriceModel` whose price summed over every running workload
  /// stays exact has its prices declared, not read: only the scan's cheapest is priced.
  [[nodiscard]] VictimPriceRange checked_prices(const Workload& victim) const {
    if (uniform_sum_exact_) {
      VictimPriceRange range;
      range.cheapest = price(victim, 0);
      const auto shrinkable = std::min(victim.shrinkable_replicas(), victim.replicas - 1);
      for (std::int32_t drop = 1; drop <= shrinkable; ++drop)
        range.cheapest = std::min(range.cheapest, price(victim, static_cast<std::size_t>(drop)));
      if constexpr (UniformPriceModel<Model>)
        range.dearest = static_cast<double>(model_.uniform_price());
      return range;
    }
    const VictimPriceRange range = checked_price_range(model_, victim, floor_);
    if constexpr (IndexPricedModel<Model>)
      check_index_price_rate(model_, victim, state_.index_band_of(victim));
    return range;
  }

  /// Rejects a read domain whose eligible victims' dearest prices sum to `total` past the
  /// largest double or, on a cost grid, past 2^53 grid steps: no plan or bound in that domain
  /// could then be computed exactly (see `check_price_sum`, which checks the whole cluster).
  void check_domain_price_sum(double total) const {
    if (uniform_sum_exact_) return;  // n x the declared price bounds it already
    if (!std::isfinite(total)) throw_price_sum_overflow<Model>(preemptor_);
    if (past_exact_range(total, grid_)) throw_inexact_price_sum<Model>(preemptor_, total, grid_);
  }

  /// Prices option `option` of `victim`.
  [[nodiscard]] double price(const Workload& victim, std::size_t dropped) const {
    return dropped == 0 ? checked_cost(model_.evict(victim), Model::name, victim)
                        : checked_cost(model_.shrink(victim, static_cast<std::int32_t>(dropped)),
                                       Model::name, victim);
  }

  /// Assembles the final plan from a domain's outcome. `cache` (may be null): the placement
  /// is taken from it when it kept the same one (`ScanCache::KeptPlacement`), else found and
  /// kept.
  PreemptionPlan make_plan(std::string_view solver, const DomainProblem& problem,
                           const DomainOutcome& outcome, PlanStatus status, double lower_bound,
                           SolverStatistics statistics, std::vector<DomainVerdict> rejected,
                           std::uint64_t rejected_total, ScanCache* cache = nullptr) const;

  /// The preemptor's placement in `problem.target` with `outcome`'s victims gone: `cache`'s
  /// kept one (`ScanCache::KeptPlacement`) when the tier, target, reach version and victims'
  /// options are those it was kept with, else searched into `searched` (and kept).
  const PlacementSearchResult& plan_placement(const DomainProblem& problem,
                                              const DomainOutcome& outcome, std::uint32_t tier,
                                              ScanCache* cache,
                                              PlacementSearchResult& searched) const;

  /// A plan with zero victims (the preemptor fits) or none at all (infeasible).
  PreemptionPlan make_plan_without_victims(std::string_view solver, PlanStatus status,
                                           const PlacementSearchResult* placement,
                                           SolverStatistics statistics,
                                           std::vector<DomainVerdict> rejected,
                                           std::uint64_t rejected_total) const;

  /// Words a plan of this decision: fills its explanation, each victim's reason and each
  /// rejected domain's reason, where empty, from the plan's structured facts (the text
  /// contract of `PreemptionPlan::explanation`). Text already there is kept.
  void fill_text(PreemptionPlan& plan) const;

  static constexpr std::size_t whole_device_dim = whole_device_dimension;

  [[nodiscard]] static std::string format_amount(double value) {
    if (std::abs(value - std::round(value)) < 1e-9)
      return std::to_string(static_cast<long long>(std::llround(value)));
    std::string text = std::to_string(value);
    return text;
  }

 private:
  /// Whether `tier` is measured in whole idle devices (the dimension the index prices).
  [[nodiscard]] static bool takes_whole_devices(const Tier& tier) {
    return std::find(tier.dims.begin(), tier.dims.end(), whole_device_dim) != tier.dims.end();
  }
  /// The host-level ordinals [first, last) of the hosts under block b's members (one run),
  /// kept in `cache` when given (a fact of the topology, searched for once).
  [[nodiscard]] std::pair<std::size_t, std::size_t> block_host_ordinals(std::uint32_t block,
                                                                        ScanCache* cache) const;
  /// The gang bound over the hosts of ordinals [host_first, host_last) and the bands
  /// `for_each_band` visits (`block_gang_bound`, `target_gang_bound`).
  template <class ForEachBand>
  [[nodiscard]] double gang_bound_over(const Tier& tier, std::size_t host_first,
                                       std::size_t host_last, ForEachBand&& for_each_band,
                                       double floor, double grid) const;
  /// The cache entry of `target`, its bounds dropped when what they read changed.
  [[nodiscard]] ScanCache::Entry& bound_entry(std::size_t tier_index, const Tier& tier,
                                              DomainId target, ScanCache& cache) const;
  /// `entry`'s per-host bound of `target`, taken when not kept (from the hosts' terms kept in
  /// `cache` for tier `tier_index`).
  [[nodiscard]] double kept_per_host_bound(ScanCache::Entry& entry, std::size_t tier_index,
                                           const Tier& tier, DomainId target, double floor,
                                           double grid, ScanCache& cache) const;

  /// Gains of the entries [first, last) of `view` inside the target, per relaxation dim.
  void add_gain(const Tier& tier, DomainId target, const std::vector<std::size_t>& dims,
                const WorkloadView& view, std::size_t first, std::size_t last,
                std::vector<double>& gain) const;

  /// Fills `victim.options` (reusing its buffers; emptied when nothing of the victim is in
  /// reach of the target): eviction first, then the shrinks.
  void add_options(const Tier& tier, DomainId target, const std::vector<std::size_t>& dims,
                   const WorkloadView& view, CandidateVictim& victim, DomainProblem& problem) const;

  /// A victim's reason, from its structured facts.
  [[nodiscard]] std::string describe_gain(const Victim& victim) const;
  /// A rejected domain's reason, from its structured facts (empty for `text_only`).
  [[nodiscard]] std::string describe_verdict(const DomainVerdict& verdict) const;

  void build_tiers() {
    const ResolvedDemand& demand = own_demand_;
    const LevelIndex host = topology_.host_level();
    std::vector<std::pair<LevelIndex, int>> replica_levels;
    if (demand.replica_preferred) {
      // unit_level is the loosest level allowed (the host, or a deeper guaranteed gang level).
      for (int level = *demand.replica_preferred; level >= std::max(host, demand.unit_level);
           --level) {
        replica_levels.emplace_back(static_cast<LevelIndex>(level),
                                    *demand.replica_preferred - level);
      }
    } else {
      replica_levels.emplace_back(demand.unit_level, 0);
    }
    std::vector<std::pair<std::optional<LevelIndex>, int>> gang_levels;
    if (demand.replicas == 1) {
      gang_levels.emplace_back(std::nullopt, 0);  // a single replica is its own gang
    } else if (demand.gang_required) {
      gang_levels.emplace_back(*demand.gang_required, 0);
    } else if (demand.gang_preferred) {
      for (int level = *demand.gang_preferred; level >= 0; --level) {
        gang_levels.emplace_back(static_cast<LevelIndex>(level), *demand.gang_preferred - level);
      }
    } else {
      gang_levels.emplace_back(LevelIndex{0}, 0);
    }
    for (const auto& [gang_level, gang_penalty] : gang_levels) {
      for (const auto& [replica_level, replica_penalty] : replica_levels) {
        Tier tier;
        tier.demand = demand;
        tier.demand.unit_level = replica_level;
        tier.demand.replica_preferred.reset();
        tier.demand.gang_preferred.reset();
        // A single replica is its own gang, but a guaranteed gang level still confines it: on
        // a branch that skips that level (an RTX 4090 GPU under `core_group`) no unit holds.
        tier.demand.gang_required =
            gang_level ? gang_level
                       : (demand.replicas == 1 ? demand.gang_required : std::nullopt);
        tier.target_level = gang_level ? std::min(*gang_level, replica_level) : replica_level;
        if (gang_level && *gang_level > replica_level) tier.target_level = *gang_level;
        if (topology_.domains_at(tier.target_level).empty()) continue;
        tier.penalty = gang_penalty * 1000 + replica_penalty;
        tier.dims = relaxation_dims(tier);
        tier.label =
            "replicas in one " + topology_.levels()[replica_level] +
            (gang_level ? ", gang in one " + topology_.levels()[*gang_level] : std::string());
        own_tiers_.push_back(std::move(tier));
      }
    }
  }

  [[nodiscard]] std::string describe_preemptor() const;

  [[nodiscard]] std::string explain(const PreemptionPlan& plan, const Tier* tier) const;

  /// Whether a `UniformPriceModel`'s declared price times the number of running workloads is
  /// finite and (on a grid) exact: then no sum of its prices can overflow or round.
  [[nodiscard]] static bool uniform_sum_exact(const Allocation& state, const Model& model,
                                              double grid) {
    if constexpr (UniformPriceModel<Model>) {
      const double most =
          static_cast<double>(model.uniform_price()) * static_cast<double>(state.size());
      return std::isfinite(most) && !past_exact_range(most, grid);
    } else {
      (void)state, (void)model, (void)grid;
      return false;
    }
  }

  const Allocation& state_;
  const Workload& preemptor_;
  const Model& model_;
  const Topology& topology_;
  double floor_;                   // the declared least_price(), checked
  double grid_;                    // the declared cost_grid(), checked
  bool uniform_sum_exact_;         // see `uniform_sum_exact`
  // The demand and tiers: built here (`own_`), or those a decider's cache kept.
  ResolvedDemand own_demand_;
  std::vector<Tier> own_tiers_;
  const ResolvedDemand* demand_ = &own_demand_;
  const std::vector<Tier>* tiers_ = &own_tiers_;
  // `fractional_bound`'s scratch: a decider's cache's, else this call's own.
  mutable std::vector<std::pair<double, double>> own_fractional_items_;
  std::vector<std::pair<double, double>>* fractional_items_;
};

}  // namespace topopreempt::detail
