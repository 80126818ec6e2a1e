// SPDX-License-Identifier: MIT
#pragma once
/// @file placement_search.hpp
/// "Can this workload be placed inside domain D, and where, down to devices?" — the building
/// block every solver reuses.
///
/// Model. A replica is confined to one *unit*: a domain of its guaranteed replica-scope level,
/// or else of the host level. Inside its unit it takes whole idle devices (or a share of one
/// device) and draws each pooled dimension from the pools of its *pool root*: the unit itself
/// when the unit's subtree holds that dimension, else the nearest enclosing domain (not above
/// the host) that does. How many identical replicas fit in a domain is then exact: each unit
/// bounds its own count, and pool roots shared by several units add nested (laminar) budgets,
/// for which filling units greedily is optimal (a polymatroid).
///
/// Anti-affinity (`Workload::distinct_hosts`). Pool roots never lie above the host, so hosts
/// share no budget: a domain holds min(1, what fits in h) replicas per host h, summed, and
/// placing replica after replica on hosts not used yet is exact too.

#include <algorithm>
#include <array>
#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "topopreempt/model/capacity_view.hpp"
#include "topopreempt/model/placement.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt {

/// A workload's per-replica demand resolved against a topology (levels as indices, the demand
/// split into devices, device share and pooled amounts). Cheap to copy; build once per decision.
struct ResolvedDemand {
  /// Whole devices per replica.
  std::int64_t whole_devices = 0;
  ResourceVector share;   ///< device dimensions of a one-device share (zero if none)
  ResourceVector pooled;  ///< pooled dimensions
  /// Whether `share` is non-zero (a replica takes part of one device).
  bool has_share = false;
  /// Replicas of the workload.
  std::int32_t replicas = 1;
  /// Replicas are confined to domains of this level. With `replica_preferred` set it is the
  /// loosest level the best-effort replica scope may relax to (the host, or the guaranteed gang
  /// level when that is deeper).
  LevelIndex unit_level = 0;
  std::optional<LevelIndex> replica_preferred;  ///< best-effort replica level
  std::optional<LevelIndex> gang_required;      ///< guaranteed gang level
  std::optional<LevelIndex> gang_preferred;     ///< best-effort gang level
  /// At most one replica per host (`Workload::distinct_hosts` with more than one replica).
  bool distinct_hosts = false;

  /// Resolves `workload` (validated first; throws `std::invalid_argument` naming it).
  [[nodiscard]] static ResolvedDemand of(const Workload& workload, const Topology& topology) {
    validate(workload, topology);
    const ResourceSchema& schema = topology.schema();
    ResolvedDemand demand;
    demand.whole_devices = workload.demand.whole_devices;
    // The demand split by kind: device dimensions into `share`, pooled ones into `pooled`.
    demand.share =
        workload.demand.resources.size() == 0 ? schema.zeros() : workload.demand.resources;
    demand.pooled = demand.share;
    for (Eigen::Index i = 0; i < demand.share.size(); ++i) {
      (schema.is_device(static_cast<std::size_t>(i)) ? demand.pooled(i) : demand.share(i)) = 0;
    }
    demand.has_share = demand.whole_devices == 0 && demand.share.any();
    demand.replicas = workload.replicas;
    demand.distinct_hosts = workload.distinct_hosts && workload.replicas > 1;
    demand.unit_level = topology.host_level();
    const auto level_of = [&](const TopologyRequirement& scope) {
      return topology.level_index(scope.level);
    };
    if (workload.replica_scope.mode == RequirementMode::guaranteed) {
      demand.unit_level = level_of(workload.replica_scope);
    } else if (workload.replica_scope.mode == RequirementMode::best_effort) {
      demand.replica_preferred = level_of(workload.replica_scope);
    }
    if (workload.gang_scope.mode == RequirementMode::guaranteed) {
      demand.gang_required = level_of(workload.gang_scope);
    } else if (workload.gang_scope.mode == RequirementMode::best_effort) {
      demand.gang_preferred = level_of(workload.gang_scope);
    }
    // Every replica lies inside its gang's domain, so a guaranteed gang level is also a floor
    // for each replica: a best-effort replica scope may relax only down to it, never past it
    // (relaxing past it would loosen the guaranteed gang scope with it).
    if (demand.gang_required && *demand.gang_required > demand.unit_level) {
      demand.unit_level = *demand.gang_required;
      if (demand.replica_preferred && *demand.replica_preferred <= demand.unit_level) {
        demand.replica_preferred.reset();  // the floor is already at least as tight
      }
    }
    return demand;
  }
  /// Whether the replica asks for nothing at all.
  [[nodiscard]] bool empty() const { return whole_devices == 0 && !has_share && !pooled.any(); }
};

/// Why no placement can honour a guaranteed scope of `workload` anywhere in `topology`, or an
/// empty string: a replica (or gang) that takes devices must lie inside one domain of each
/// guaranteed level, and no domain of that level holds a device (on the RTX 4090 server the
/// GPUs lie beside the core groups, never inside one). Best-effort scopes never make a
/// request infeasible, so they are not checked.
[[nodiscard]] inline std::string guarantee_without_devices(const Topology& topology,
                                                           const Workload& workload,
                                                           const ResolvedDemand& demand) {
  if (demand.whole_devices == 0 && !demand.has_share) return {};
  const auto holds_no_device = [&](const TopologyRequirement& scope) {
    if (scope.mode != RequirementMode::guaranteed) return false;
    const LevelIndex level = topology.level_index(scope.level);
    for (DomainId domain : topology.domains_at(level)) {
      if (!topology.domains_at(topology.device_level(), domain).empty()) return false;
    }
    return true;
  };
  const auto reason = [&](const char* what, const TopologyRequirement& scope) {
    return workload.label() + " takes " + topology.levels()[topology.device_level()] +
           "s, but its guaranteed " + what + " scope '" + scope.level + "' holds none: no " +
           scope.level + " contains a " + topology.levels()[topology.device_level()] +
           ", and a guaranteed scope holds only where the whole footprint lies inside one " +
           scope.level;
  };
  if (holds_no_device(workload.replica_scope)) return reason("replica", workload.replica_scope);
  if (holds_no_device(workload.gang_scope)) {
    return reason("gang", workload.gang_scope);
  }
  return {};
}

/// Result of a placement search.
struct PlacementSearchResult {
  /// Whether a placement was found.
  bool found = false;
  /// The placement, down to devices (empty when not found).
  Placement placement;
  DomainId gang_domain;          ///< lowest domain holding every entry (pools included)
  LevelIndex gang_level = 0;     ///< level of `Placement::enclosing_domain` (deeper is tighter)
  LevelIndex replica_level = 0;  ///< loosest level among the replicas' own domains
};

namespace detail {

inline constexpr std::int64_t unbounded_replicas = std::numeric_limits<std::int64_t>::max() / 4;

/// Nearest ancestor-or-self of `unit` (not above the host) whose subtree holds dimension `dim`.
[[nodiscard]] inline DomainId pool_root(const Topology& topology, DomainId unit, std::size_t dim) {
  for (DomainId at = unit; at.valid(); at = topology.parent(at)) {
    if (topology.capacity(at)(static_cast<Eigen::Index>(dim)) > 0) return at;
    if (topology.level(at) <= topology.host_level()) break;
  }
  return DomainId{};
}

/// Replicas the devices of `unit` alone could take.
template <CapacityView View>
[[nodiscard]] std::int64_t device_bound(const View& view, const ResolvedDemand& demand,
                                        DomainId unit) {
  const Topology& topology = view.topology();
  if (demand.whole_devices > 0) return view.idle_devices(unit) / demand.whole_devices;
  if (!demand.has_share) return unbounded_replicas;
  std::int64_t total = 0;
  const auto devices = topology.domains_at(topology.device_level(), unit);
  for (DomainId device : devices) {
    std::int64_t fit = unbounded_replicas;
    for (Eigen::Index i = 0; i < demand.share.size(); ++i) {
      if (demand.share(i) > 0) {
        fit = std::min(fit, view.free(device, static_cast<std::size_t>(i)) / demand.share(i));
      }
    }
    // Both are at most unbounded_replicas (max / 4): the sum cannot overflow, the cap keeps it so.
    total = std::min(total + fit, unbounded_replicas);
  }
  return total;
}

/// Units of `domain` at `unit_level`: its descendants of that level, or itself when below it
/// (none when its branch skips the level). `units_of` for a demand confined to `unit_level`.
[[nodiscard]] inline std::span<const DomainId> units_at(const Topology& topology,
                                                       LevelIndex unit_level,
                                                       const DomainId& domain) {
  if (topology.level(domain) >= unit_level) {
    if (!topology.lies_within_level(domain, unit_level)) return {};
    return {&domain, 1};
  }
  return topology.domains_at(unit_level, domain);
}

/// Units of `domain` for `demand`: its unit-level descendants, or itself when below that level
/// (none when its branch skips the level; see `unit_allowed` for the gang level).
[[nodiscard]] inline std::span<const DomainId> units_of(const Topology& topology,
                                                       const ResolvedDemand& demand,
                                                       const DomainId& domain) {
  return units_at(topology, demand.unit_level, domain);
}

/// Whether a replica may lie in `unit` under the guaranteed gang level: only inside one domain
/// of it. A unit on a branch that skips that level (an RTX 4090 GPU under a gang guaranteed at
/// `core_group`) lies in none, so a gang scope cannot hold there (docs/model.md).
[[nodiscard]] inline bool unit_allowed(const Topology& topology, const ResolvedDemand& demand,
                                       DomainId unit) {
  return !demand.gang_required || topology.lies_within_level(unit, *demand.gang_required);
}

}  // namespace detail

namespace detail {

/// `replicas_that_fit` without anti-affinity (replicas may share a host), with the replicas
/// confined to domains of `unit_level` instead of `demand.unit_level`.
template <CapacityView View>
[[nodiscard]] std::int64_t replicas_that_fit_stacked(const View& view, const ResolvedDemand& demand,
                                                     DomainId domain, LevelIndex unit_level) {
  const Topology& topology = view.topology();
  struct Budget {
    DomainId root;
    std::size_t dim;
    std::int64_t remaining;
  };
  std::vector<Budget> budgets;
  std::int64_t total = 0;
  const bool device_less = demand.whole_devices == 0 && !demand.has_share;
  for (DomainId unit : detail::units_at(topology, unit_level, domain)) {
    if (!detail::unit_allowed(topology, demand, unit)) continue;
    std::int64_t fit = detail::device_bound(view, demand, unit);
    // A replica without devices occupies the pools it draws from (`footprint_domain`): it can
    // lie in `unit` only if some pooled dimension it asks for is held inside `unit`. Pools
    // enclosing the unit merely serve such a replica; they cannot place it there by themselves.
    if (device_less && demand.pooled.any()) {
      bool held_inside = false;
      for (Eigen::Index i = 0; i < demand.pooled.size() && !held_inside; ++i) {
        held_inside = demand.pooled(i) > 0 &&
                      detail::pool_root(topology, unit, static_cast<std::size_t>(i)) == unit;
      }
      if (!held_inside) continue;
    }
    for (Eigen::Index i = 0; i < demand.pooled.size() && fit > 0; ++i) {
      if (demand.pooled(i) == 0) continue;
      const auto dim = static_cast<std::size_t>(i);
      const DomainId root = detail::pool_root(topology, unit, dim);
      if (!root.valid()) {
        fit = 0;
      } else if (root == unit) {
        fit = std::min(fit, view.free(unit, dim) / demand.pooled(i));
      } else {
        auto it = std::find_if(budgets.begin(), budgets.end(), [&](const Budget& budget) {
          return budget.root == root && budget.dim == dim;
        });
        if (it == budgets.end()) {
          budgets.push_back({root, dim, view.free(root, dim) / demand.pooled(i)});
          it = budgets.end() - 1;
        }
        fit = std::min(fit, it->remaining);
      }
    }
    if (fit <= 0) continue;
    // Charge the shared budgets (pointers are taken only now: push_back above may reallocate).
    for (Eigen::Index i = 0; i < demand.pooled.size(); ++i) {
      if (demand.pooled(i) == 0) continue;
      const auto dim = static_cast<std::size_t>(i);
      const DomainId root = detail::pool_root(topology, unit, dim);
      if (root == unit) continue;
      for (Budget& budget : budgets) {
        if (budget.root == root && budget.dim == dim) budget.remaining -= fit;
      }
    }
    total += fit;
    if (total >= detail::unbounded_replicas) return detail::unbounded_replicas;
  }
  return total;
}

/// `replicas_that_fit` without anti-affinity: replicas may share a host.
template <CapacityView View>
[[nodiscard]] std::int64_t replicas_that_fit_stacked(const View& view, const ResolvedDemand& demand,
                                                     DomainId domain) {
  return replicas_that_fit_stacked(view, demand, domain, demand.unit_level);
}

/// `replicas_that_fit` with the replicas confined to domains of `unit_level` instead of
/// `demand.unit_level` (what a copy of `demand` with that unit level would give, without the
/// copy).
template <CapacityView View>
[[nodiscard]] std::int64_t replicas_that_fit_at(const View& view, const ResolvedDemand& demand,
                                                DomainId domain, LevelIndex unit_level) {
  if (!demand.distinct_hosts) return replicas_that_fit_stacked(view, demand, domain, unit_level);
  const Topology& topology = view.topology();
  const LevelIndex host_level = topology.host_level();
  if (topology.level(domain) >= host_level) {
    return std::min<std::int64_t>(1, replicas_that_fit_stacked(view, demand, domain, unit_level));
  }
  std::int64_t total = 0;
  for (DomainId host : topology.domains_at(host_level, domain)) {
    total += std::min<std::int64_t>(1, replicas_that_fit_stacked(view, demand, host, unit_level));
  }
  return total;
}

}  // namespace detail

/// How many replicas of `demand` fit inside `domain` as `view` stands (exact under the model
/// of this header; capped at a large constant when the replica asks for nothing). With
/// `distinct_hosts`, each host counts for at most one replica.
/// Cost: O(units x dims) plus a device scan per unit for shares.
template <CapacityView View>
[[nodiscard]] std::int64_t replicas_that_fit(const View& view, const ResolvedDemand& demand,
                                             DomainId domain) {
  return detail::replicas_that_fit_at(view, demand, domain, demand.unit_level);
}

namespace detail {

/// Local free amount of one pool (its own capacity, not its children's).
template <CapacityView View>
[[nodiscard]] Amount local_free(const View& view, DomainId pool, std::size_t dim) {
  const Topology& topology = view.topology();
  Amount free = view.free(pool, dim);
  // Children in order, read off the pre-order ids (no list of them is built).
  const std::uint32_t end = topology.subtree_end(pool).value;
  for (std::uint32_t child = pool.value + 1; child < end;
       child = topology.subtree_end(DomainId{child}).value) {
    free -= view.free(DomainId{child}, dim);
  }
  return free;
}

/// The deepest domain inside `unit` (a non-device domain, or `unit`) that can hold one replica
/// by itself; ties go to the one with the fewest idle devices (best fit), then the lowest id.
template <CapacityView View>
[[nodiscard]] DomainId tightest_domain(const View& view, const ResolvedDemand& demand,
                                       DomainId unit) {
  const Topology& topology = view.topology();
  DomainId best = unit;
  for (std::uint32_t d = unit.value + 1; d < topology.subtree_end(unit).value; ++d) {
    const DomainId candidate{d};
    if (topology.is_device(candidate)) continue;
    if (topology.level(candidate) < topology.level(best)) continue;
    // One replica of the demand confined to the candidate's level (no copy of it is made).
    // Stacked: the candidate lies at or below the host level, where anti-affinity allows one
    // replica exactly when the stacked count does.
    if (replicas_that_fit_stacked(view, demand, candidate, topology.level(candidate)) < 1) continue;
    if (topology.level(candidate) > topology.level(best) ||
        view.idle_devices(candidate) < view.idle_devices(best)) {
      best = candidate;
    }
  }
  return best;
}

/// Chooses `count` idle devices in `domain`: by affinity when the host has a matrix (greedy:
/// each next device maximises its summed affinity to those chosen), else the first idle
/// devices of the deepest sub-domain holding enough of them.
template <CapacityView View>
[[nodiscard]] std::vector<DomainId> choose_devices(const View& view, DomainId domain,
                                                   std::int64_t count) {
  const Topology& topology = view.topology();
  std::vector<DomainId> idle;
  const DomainId host = topology.ancestor_at(domain, topology.host_level());
  if (topology.has_affinity(host)) {
    const auto devices = topology.domains_at(topology.device_level(), domain);
    idle.reserve(devices.size());
    for (DomainId device : devices) {
      if (view.device_occupancy(device) == 0) idle.push_back(device);
    }
    std::vector<DomainId> chosen;
    chosen.reserve(std::min(idle.size(), static_cast<std::size_t>(std::max<std::int64_t>(count, 0))));
    while (static_cast<std::int64_t>(chosen.size()) < count) {
      std::size_t best = idle.size();
      double best_score = -std::numeric_limits<double>::infinity();
      for (std::size_t i = 0; i < idle.size(); ++i) {
        if (std::find(chosen.begin(), chosen.end(), idle[i]) != chosen.end()) continue;
        double score = 0.0;
        for (DomainId other : chosen) score += *topology.device_affinity(idle[i], other);
        if (score > best_score) {
          best_score = score;
          best = i;
        }
      }
      chosen.push_back(idle[best]);
    }
    std::sort(chosen.begin(), chosen.end());
    return chosen;
  }
  DomainId within = domain;
  for (bool deeper = true; deeper;) {
    deeper = false;
    // Children in order, read off the pre-order ids (no list of them is built).
    const std::uint32_t end = topology.subtree_end(within).value;
    for (std::uint32_t c = within.value + 1; c < end; c = topology.subtree_end(DomainId{c}).value) {
      const DomainId child{c};
      if (!topology.is_device(child) && view.idle_devices(child) >= count) {
        within = child;
        deeper = true;
        break;
      }
    }
  }
  const auto devices = topology.domains_at(topology.device_level(), within);
  idle.reserve(std::min(devices.size(), static_cast<std::size_t>(std::max<std::int64_t>(count, 0))));
  for (DomainId device : devices) {
    if (static_cast<std::int64_t>(idle.size()) == count) break;
    if (view.device_occupancy(device) == 0) idle.push_back(device);
  }
  return idle;
}

/// Builds one replica inside `unit` (which must fit one); returns its entries.
template <CapacityView View>
[[nodiscard]] std::vector<PlacementEntry> place_one(const View& view, const ResolvedDemand& demand,
                                                    DomainId unit) {
  const Topology& topology = view.topology();
  const ResourceSchema& schema = topology.schema();
  const DomainId tight = tightest_domain(view, demand, unit);
  std::vector<PlacementEntry> entries;
  // Room for the devices and a pool or two per pooled dimension, so that the list rarely grows.
  entries.reserve(static_cast<std::size_t>(demand.whole_devices) + 1 +
                  2 * static_cast<std::size_t>(demand.pooled.size()));
  DomainId anchor = tight;
  if (demand.whole_devices > 0) {
    for (DomainId device : choose_devices(view, tight, demand.whole_devices)) {
      entries.push_back({device, topology.local_capacity(device)});
    }
    anchor = entries.front().domain;
  } else if (demand.has_share) {
    DomainId best;
    Amount best_slack = std::numeric_limits<Amount>::max();
    for (DomainId device : topology.domains_at(topology.device_level(), tight)) {
      Amount slack = 0;
      bool fits = true;
      for (Eigen::Index i = 0; i < demand.share.size(); ++i) {
        const Amount free = view.free(device, static_cast<std::size_t>(i));
        fits = fits && free >= demand.share(i);
        // Saturate: capacities near the int64 limit must not wrap the tie-break.
        const Amount spare = free - demand.share(i);
        slack = sum_overflows(slack, spare) ? std::numeric_limits<Amount>::max() : slack + spare;
      }
      if (fits && slack < best_slack) {
        best = device;
        best_slack = slack;
      }
    }
    entries.push_back({best, demand.share});
    anchor = best;
  }
  // Pooled amounts: closest pools to the devices first — the pools of each enclosing domain's
  // subtree, walking up from the anchor (so CPU cores of the GPU's own NUMA node come first).
  // The pools drawn from are entries [first_pool, end), one per pool, sorted by id at the end.
  const auto first_pool = static_cast<std::ptrdiff_t>(entries.size());
  std::vector<DomainId> order;  // one list for every dimension: it grows once, not per dimension
  for (Eigen::Index i = 0; i < demand.pooled.size(); ++i) {
    Amount need = demand.pooled(i);
    if (need == 0) continue;
    const auto dim = static_cast<std::size_t>(i);
    const DomainId root = pool_root(topology, tight, dim);
    order.clear();
    if (root.valid()) order.reserve(topology.subtree_end(root).value - root.value);
    DomainId covered;  // subtree already listed
    for (DomainId at = anchor; at.valid(); at = topology.parent(at)) {
      if (!topology.contains(root, at)) continue;
      for (std::uint32_t d = at.value; d < topology.subtree_end(at).value; ++d) {
        if (covered.valid() && topology.contains(covered, DomainId{d})) {
          d = topology.subtree_end(covered).value - 1;
          continue;
        }
        order.push_back(DomainId{d});
      }
      covered = at;
      if (at == root) break;
    }
    for (DomainId pool : order) {
      if (need == 0) break;
      if (topology.is_device(pool) || topology.local_capacity(pool, dim) == 0) continue;
      const Amount take = std::min(need, local_free(view, pool, dim));
      if (take <= 0) continue;
      auto it = std::find_if(entries.begin() + first_pool, entries.end(),
                             [&](const PlacementEntry& item) { return item.domain == pool; });
      if (it == entries.end()) {
        entries.push_back({pool, schema.zeros()});
        it = entries.end() - 1;
      }
      it->amount(i) += take;
      need -= take;
    }
  }
  // Pools are distinct, so the order by id is total (the sort need not be stable).
  std::sort(entries.begin() + first_pool, entries.end(),
            [](const PlacementEntry& a, const PlacementEntry& b) { return a.domain < b.domain; });
  return entries;
}

}  // namespace detail

/// Places `demand.replicas` replicas inside `domain` if they fit, choosing for each the unit
/// with the fewest idle devices that still fits (best fit: keeps big holes for big jobs).
template <CapacityView View>
[[nodiscard]] std::optional<Placement> place_in(const View& view, const ResolvedDemand& demand,
                                                DomainId domain) {
  if (replicas_that_fit(view, demand, domain) < demand.replicas) return std::nullopt;
  const Topology& topology = view.topology();
  OverlayView<View> scratch(view);
  Placement placement;
  placement.replicas.reserve(static_cast<std::size_t>(std::max(demand.replicas, 0)));
  // One replica at a time, each in one unit (at or below the host level): the stacked count
  // and `place_one` read neither `replicas` nor `distinct_hosts`, and `used_hosts` keeps the
  // replicas apart, so `demand` serves as it is (no single-replica copy of it is made).
  std::vector<DomainId> used_hosts;  // with distinct_hosts: hosts already holding a replica
  for (std::int32_t r = 0; r < demand.replicas; ++r) {
    DomainId best;
    for (DomainId unit : detail::units_of(topology, demand, domain)) {
      if (!detail::unit_allowed(topology, demand, unit)) continue;
      if (demand.distinct_hosts &&
          std::find(used_hosts.begin(), used_hosts.end(),
                    topology.ancestor_at(unit, topology.host_level())) != used_hosts.end()) {
        continue;
      }
      if (detail::replicas_that_fit_stacked(scratch, demand, unit) < 1) continue;
      if (!best.valid() || scratch.idle_devices(unit) < scratch.idle_devices(best)) best = unit;
    }
    if (!best.valid()) return std::nullopt;  // unreachable when the count above is exact
    ReplicaPlacement replica{detail::place_one(scratch, demand, best)};
    // The overlay is read only by the replicas after this one: the last one (the only one of
    // most workloads) leaves it as it is, which saves its copy of every entry.
    if (r + 1 < demand.replicas) scratch.consume(replica.entries);
    placement.replicas.push_back(std::move(replica));
    if (demand.distinct_hosts)
      used_hosts.push_back(topology.ancestor_at(best, topology.host_level()));
  }
  return placement;
}

namespace detail {

/// At most one gang tier per level, and a topology has at most 64 levels.
using GangLevels = std::array<LevelIndex, 64>;

/// `gang_levels` into `levels` (no allocation); returns how many there are.
[[nodiscard]] inline std::size_t gang_levels_into(const Topology& topology,
                                                  const ResolvedDemand& demand, DomainId within,
                                                  GangLevels& levels) {
  std::size_t count = 0;
  const auto tier_at = [&](LevelIndex level) {
    // Replicas on distinct hosts never share a domain at or below the host level.
    if (demand.distinct_hosts && std::max(level, topology.level(within)) >= topology.host_level()) {
      return;
    }
    if (topology.level(within) >= level) {
      if (topology.lies_within_level(within, level)) levels[count++] = topology.level(within);
    } else if (!topology.domains_at(level, within).empty()) {
      levels[count++] = level;
    }
  };
  if (demand.gang_required) {
    tier_at(*demand.gang_required);
  } else if (demand.gang_preferred) {
    const int loosest = topology.level(within);
    for (int level = std::max<int>(*demand.gang_preferred, loosest); level >= loosest; --level) {
      tier_at(static_cast<LevelIndex>(level));
    }
  } else {
    tier_at(topology.level(within));
  }
  return count;
}

}  // namespace detail

/// The levels of `gang_tiers(topology, demand, within)`, tightest first, without listing
/// their domains.
[[nodiscard]] inline std::vector<LevelIndex> gang_levels(const Topology& topology, const ResolvedDemand& demand,
                                                         DomainId within) {
  detail::GangLevels levels{};
  const std::size_t count = detail::gang_levels_into(topology, demand, within, levels);
  return {levels.begin(), levels.begin() + static_cast<std::ptrdiff_t>(count)};
}

/// Candidate gang domains for `demand` inside `within`, tightest tier first. Each inner vector
/// is one tier (all domains of one level); a guaranteed gang scope yields one tier.
[[nodiscard]] inline std::vector<std::pair<LevelIndex, std::vector<DomainId>>> gang_tiers(
    const Topology& topology, const ResolvedDemand& demand, DomainId within) {
  std::vector<std::pair<LevelIndex, std::vector<DomainId>>> tiers;
  for (const LevelIndex level : gang_levels(topology, demand, within)) {
    if (level == topology.level(within)) {
      tiers.push_back({level, {within}});
    } else {
      const auto domains = topology.domains_at(level, within);
      tiers.push_back({level, {domains.begin(), domains.end()}});
    }
  }
  return tiers;
}

namespace detail {

/// A found placement with its gang domain and levels filled in.
[[nodiscard]] inline PlacementSearchResult placement_search_result(const Topology& topology, Placement placement) {
  PlacementSearchResult result;
  result.found = true;
  result.placement = std::move(placement);
  result.gang_domain = result.placement.span_domain(topology);
  result.gang_level = topology.level(result.placement.enclosing_domain(topology));
  result.replica_level = static_cast<LevelIndex>(topology.levels().size() - 1);
  for (std::size_t r = 0; r < result.placement.replicas.size(); ++r) {
    result.replica_level =
        std::min(result.replica_level, topology.level(result.placement.replica_domain(topology, r)));
  }
  return result;
}

}  // namespace detail

namespace detail {

/// Calls `visit(domain)` for every domain of `level` inside `within` (or `within` itself when
/// it lies at or below `level`), in ascending id order, skipping whole subtrees with fewer
/// than `idle_needed` idle devices: a domain there cannot hold a gang that needs that many
/// whole devices, so a saturated cluster is dismissed at its root.
template <CapacityView View, class Visit>
void for_each_gang_candidate(const View& view, DomainId within, LevelIndex level, std::int64_t idle_needed,
                             Visit&& visit) {
  const Topology& topology = view.topology();
  if (topology.level(within) >= level) {
    if (topology.lies_within_level(within, level)) visit(within);
    return;
  }
  const auto descend = [&](const auto& self, DomainId domain) -> void {
    if (idle_needed > 0 && view.idle_devices(domain) < idle_needed) return;
    if (topology.level(domain) >= level) {
      if (topology.level(domain) == level) visit(domain);
      return;
    }
    const std::uint32_t end = topology.subtree_end(domain).value;  // children: pre-order ids
    for (std::uint32_t child = domain.value + 1; child < end; child = topology.subtree_end(DomainId{child}).value) {
      self(self, DomainId{child});
    }
  };
  descend(descend, within);
}

/// The best fit among the gang candidates of `level` inside `within` (as
/// `for_each_gang_candidate` lists them) that hold every replica of `demand`: the one with the
/// fewest idle devices, the lowest id on ties. Invalid when none holds them.
///
/// On an `Allocation` whose idle-device index covers `level` (and `within` lies above it), the
/// candidates are met in ascending (idle devices, id) order and the first that holds the
/// replicas is that very domain: O(domains rejected before it) instead of every candidate. The
/// index reads the allocation itself, so any other view (an `OverlayView`'s scratch changes
/// are not in it) takes the walk.
template <CapacityView View>
[[nodiscard]] DomainId best_fit_gang_domain(const View& view, const ResolvedDemand& demand,
                                            DomainId within, LevelIndex level,
                                            std::int64_t idle_needed) {
  const Topology& topology = view.topology();
  const auto holds = [&](DomainId domain) {
    return replicas_that_fit(view, demand, domain) >= demand.replicas;
  };
  if constexpr (std::same_as<View, Allocation>) {
    // `for_each_gang_candidate` lists exactly the domains of `level` inside `within` with at
    // least `idle_needed` idle devices (an ancestor holds at least its descendants' idle
    // devices, so its pruning drops no other), ascending id.
    const auto& index = view.idle_device_index();
    if (topology.level(within) < level && index.covers(level)) {
      // Each replica's whole devices lie in one unit: a candidate whose units' idle devices
      // cannot take every replica is rejected from the index's buckets (a few words), before
      // `holds` reads its hosts. Only a necessary condition: the answer is the same.
      const bool by_units = demand.whole_devices > 0 && demand.unit_level > level &&
                            index.covers(demand.unit_level);
      return index.first_accepted(topology, level, within, idle_needed, [&](DomainId domain) {
        if (by_units && index.replicas_by_idle(topology, demand.unit_level, domain,
                                               demand.whole_devices,
                                               demand.replicas) < demand.replicas) {
          return false;
        }
        return holds(domain);
      });
    }
  }
  DomainId best;
  for_each_gang_candidate(view, within, level, idle_needed, [&](DomainId domain) {
    if (!holds(domain)) return;
    if (!best.valid() || view.idle_devices(domain) < view.idle_devices(best)) best = domain;
  });
  return best;
}

/// `find_placement`'s answer for one replica whose gang tier is `within` itself (no gang scope
/// tighter than it) and whose units lie below it, read from an `Allocation`'s idle-device index
/// when it covers the unit level; nullopt when it does not (the caller then walks).
///
/// `place_in(state, demand, within)` puts the replica in the unit with the fewest idle devices,
/// lowest id on ties, that holds it alone; `replicas_that_fit(state, demand, within) >= 1`
/// exactly when some unit does (the first unit that holds a replica meets budgets no earlier
/// unit charged). So the units met in ascending (idle devices, id) order give the same unit as
/// the first that holds it, without reading every unit of the cluster.
template <CapacityView View>
[[nodiscard]] std::optional<PlacementSearchResult> single_replica_by_index(
    const View& view, const ResolvedDemand& demand, DomainId within) {
  if constexpr (std::same_as<View, Allocation>) {
    const Topology& topology = view.topology();
    if (demand.replicas != 1 || topology.level(within) >= demand.unit_level ||
        !view.idle_device_index().covers(demand.unit_level)) {
      return std::nullopt;
    }
    const DomainId unit = view.idle_device_index().first_accepted(
        topology, demand.unit_level, within, demand.whole_devices, [&](DomainId candidate) {
          return unit_allowed(topology, demand, candidate) &&
                 replicas_that_fit(view, demand, candidate) >= 1;
        });
    if (!unit.valid()) return PlacementSearchResult{};
    Placement placement;
    const OverlayView<View> scratch(view);  // `place_in`'s, before its first replica
    placement.replicas.push_back(ReplicaPlacement{place_one(scratch, demand, unit)});
    return placement_search_result(topology, std::move(placement));
  } else {
    (void)view;
    (void)demand;
    (void)within;
    return std::nullopt;
  }
}

}  // namespace detail

/// Finds a placement of the whole workload inside `within` (default: the whole cluster) that
/// honours every guaranteed scope and gets best-effort scopes as tight as it can (gang tier
/// first, then per replica). Best fit among domains of the tightest feasible tier.
template <CapacityView View>
[[nodiscard]] PlacementSearchResult find_placement(const View& view, const ResolvedDemand& demand,
                                                   DomainId within = Topology::root()) {
  const Topology& topology = view.topology();
  const std::int64_t idle_needed = static_cast<std::int64_t>(demand.replicas) * demand.whole_devices;
  detail::GangLevels levels;  // filled below (no list is allocated)
  const std::size_t count = detail::gang_levels_into(topology, demand, within, levels);
  for (const LevelIndex level : std::span(levels.data(), count)) {
    if (level == topology.level(within)) {  // the tier is `within` alone
      if (auto found = detail::single_replica_by_index(view, demand, within)) {
        if (found->found) return std::move(*found);
        continue;  // as below: no unit holds it, so neither does `within`
      }
    }
    const DomainId best = detail::best_fit_gang_domain(view, demand, within, level, idle_needed);
    if (!best.valid()) continue;
    if (auto placement = place_in(view, demand, best)) return detail::placement_search_result(topology, std::move(*placement));
  }
  return {};
}

/// Convenience overload taking the workload itself.
template <CapacityView View>
[[nodiscard]] PlacementSearchResult find_placement(const View& view, const Workload& workload,
                                                   DomainId within = Topology::root()) {
  return find_placement(view, ResolvedDemand::of(workload, view.topology()), within);
}

}  // namespace topopreempt
