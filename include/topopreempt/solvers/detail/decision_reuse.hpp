// SPDX-License-Identifier: MIT
#pragma once
/// @file decision_reuse.hpp
/// What an `IncrementalDecider` keeps between two decisions besides its domain scans: which
/// gang domains could not hold the preemptor without preemption, keyed by
/// `Allocation::domain_version`, so a decision after k changes redoes only the domains those
/// changes touched, and answers exactly as the cold path does.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt::detail {

/// Which domains of one level (a gang tier of `find_placement`, or the replica unit level)
/// could not hold the preemptor, keyed by the version of the subtree `replicas_that_fit`
/// reads (the domain, or its host when it lies below the host level: pools up to the host
/// serve its units); and the domains that fit, with the root version they are for, so that
/// the next call reads the change log (`Allocation::changed_since`) and re-examines only the
/// domains the changes touched.
struct FitTier {
  struct Entry {
    std::uint64_t key = 0;
    bool no_fit = false;
  };
  std::vector<Entry> entries;     ///< by ordinal in the level (0: the root itself)
  std::vector<DomainId> fitting;  ///< domains that fit, ascending
  std::uint64_t known_root = 0;   ///< root version `fitting` is for
  bool known = false;             ///< whether `fitting` was computed
};

/// The "fits already" check's memory across decisions: one `FitTier` per gang tier, and one
/// for the replica units (where a single replica goes inside the chosen gang domain).
struct FitCache {
  std::vector<FitTier> tiers;
  FitTier units;
  std::vector<DomainId> next_fitting;  ///< scratch: a `fitting` being rebuilt
  std::vector<DomainId> changed;       ///< scratch: the change log's domains
  std::vector<DomainId> touched;       ///< scratch: domains those changes touched
  const Topology* topology = nullptr;
};

/// The domains of `level` whose fit (`replicas_that_fit`, read as `FitCache` keys it) the
/// entries on `changed` may have changed, ascending and distinct, into `touched`: the one
/// enclosing each entry, or every one of the entry's host when the level lies below the host
/// level (pools up to the host serve them). An entry above both changes no key.
inline void gang_domains_touched(const Topology& topology, LevelIndex level,
                                 std::span<const DomainId> changed,
                                 std::vector<DomainId>& touched) {
  const LevelIndex host_level = topology.host_level();
  touched.clear();
  for (const DomainId domain : changed) {
    if (level > host_level) {
      if (topology.level(domain) < host_level) continue;
      const auto inside = topology.domains_at(level, topology.ancestor_at(domain, host_level));
      touched.insert(touched.end(), inside.begin(), inside.end());
    } else if (const DomainId enclosing = topology.ancestor_at(domain, level); enclosing.valid()) {
      touched.push_back(enclosing);  // none on a branch that skips the level
    }
  }
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
}

/// Brings `tier.fitting` up to date: the domains of `level` (or the root alone when it lies at
/// or below `level`) with at least `idle_needed` idle devices that hold every replica of
/// `demand`, ascending. From the change log when it reaches back to the last update (only
/// touched domains are examined: an untouched one kept its fit and its idle devices), else by
/// the walk `find_placement` does, skipping domains whose "no fit" is still current.
inline void update_fitting(const Allocation& state, const ResolvedDemand& demand, LevelIndex level,
                           std::int64_t idle_needed, FitTier& tier, FitCache& cache) {
  const Topology& topology = state.topology();
  const DomainId root = Topology::root();
  const LevelIndex host_level = topology.host_level();
  const bool whole = topology.level(root) >= level;
  const std::size_t count = whole ? 1 : topology.domains_at(level).size();
  if (tier.entries.size() != count)
    tier = FitTier{std::vector<FitTier::Entry>(count), {}, 0, false};
  const auto fits = [&](DomainId domain) {
    FitTier::Entry& entry = tier.entries[whole ? 0 : topology.ordinal(domain)];
    const DomainId read =
        topology.level(domain) >= host_level ? topology.ancestor_at(domain, host_level) : domain;
    const std::uint64_t key = state.domain_version(read);
    if (entry.no_fit && entry.key == key) return false;
    if (replicas_that_fit(state, demand, domain) < demand.replicas) {
      entry = {key, true};
      return false;
    }
    entry.no_fit = false;
    return true;
  };
  std::vector<DomainId>& next = cache.next_fitting;
  next.clear();
  cache.changed.clear();
  if (tier.known && state.changed_since(tier.known_root, cache.changed)) {
    if (whole) {
      if (cache.changed.empty() ? !tier.fitting.empty() : fits(root)) next.push_back(root);
    } else {
      gang_domains_touched(topology, level, cache.changed, cache.touched);
      for (const DomainId domain : tier.fitting) {
        if (!std::binary_search(cache.touched.begin(), cache.touched.end(), domain))
          next.push_back(domain);
      }
      const std::size_t kept = next.size();
      for (const DomainId domain : cache.touched) {
        // `for_each_gang_candidate`'s filter: a domain's ancestors hold at least its idle devices.
        if (idle_needed > 0 && state.idle_devices(domain) < idle_needed) continue;
        if (fits(domain)) next.push_back(domain);
      }
      std::inplace_merge(next.begin(), next.begin() + static_cast<std::ptrdiff_t>(kept),
                         next.end());
    }
  } else {
    for_each_gang_candidate(state, root, level, idle_needed, [&](DomainId domain) {
      if (fits(domain)) next.push_back(domain);
    });
  }
  tier.fitting.swap(next);
  tier.known = true;
  tier.known_root = state.domain_version(root);
}

/// The domain with the fewest idle devices among `fitting` (ascending) inside `within`, the
/// first on ties: `find_placement`'s and `place_in`'s best fit. Invalid when there is none.
[[nodiscard]] inline DomainId least_idle_within(const Allocation& state,
                                                std::span<const DomainId> fitting,
                                                DomainId within) {
  const Topology& topology = state.topology();
  const auto first = std::lower_bound(fitting.begin(), fitting.end(), within);
  const auto last = std::lower_bound(first, fitting.end(), topology.subtree_end(within));
  DomainId best;
  for (auto it = first; it != last; ++it) {
    if (!best.valid() || state.idle_devices(*it) < state.idle_devices(best)) best = *it;
  }
  return best;
}

/// `find_placement(state, demand)` that skips every gang domain `cache` knows cannot hold the
/// preemptor at its current version, and, when the change log reaches back to its last call,
/// examines only the gang domains (and, for one replica, the units) the changes touched:
/// O(changes + domains that fit). The result is the cold one: a domain that did not fit still
/// does not, and one that fit and was not touched still fits with the same idle devices, so
/// each choice is made among the same domains, in the same order.
[[nodiscard]] inline PlacementSearchResult find_placement_reusing(const Allocation& state,
                                                                  const ResolvedDemand& demand,
                                                                  FitCache& cache) {
  const Topology& topology = state.topology();
  const DomainId root = Topology::root();
  const std::vector<LevelIndex> levels = gang_levels(topology, demand, root);
  if (cache.topology != &topology || cache.tiers.size() != levels.size()) {
    cache.tiers.assign(levels.size(), {});
    cache.units = {};
    cache.topology = &topology;
  }
  const std::int64_t idle_needed = static_cast<std::int64_t>(demand.replicas) * demand.whole_devices;
  for (std::size_t t = 0; t < levels.size(); ++t) {
    update_fitting(state, demand, levels[t], idle_needed, cache.tiers[t], cache);
    const DomainId best = least_idle_within(state, cache.tiers[t].fitting, root);
    if (!best.valid()) continue;
    if (demand.replicas == 1 && topology.level(best) < demand.unit_level) {
      // `place_in(state, demand, best)` for one replica, without reading every unit: the
      // replica goes to the fitting unit of `best` with the fewest idle devices.
      update_fitting(state, demand, demand.unit_level, demand.whole_devices, cache.units, cache);
      const DomainId unit = least_idle_within(state, cache.units.fitting, best);
      if (!unit.valid()) continue;  // as place_in: no unit holds it
      Placement placement;
      placement.replicas.push_back(
          ReplicaPlacement{place_one(OverlayView<Allocation>(state), demand, unit)});
      return placement_search_result(topology, std::move(placement));
    }
    if (auto placement = place_in(state, demand, best))
      return placement_search_result(topology, std::move(*placement));
  }
  return {};
}

}  // namespace topopreempt::detail
