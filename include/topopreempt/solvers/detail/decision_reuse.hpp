// SPDX-License-Identifier: MIT
#pragma once
/// @file decision_reuse.hpp
/// What an `IncrementalDecider` keeps between two decisions besides its domain scans: the
/// per-host part of `check_price_sum`, and which gang domains could not hold the preemptor
/// without preemption. Both are keyed by `Allocation::domain_version`, so a decision after k
/// changes redoes only the hosts and domains those changes touched, and answers exactly as the
/// cold path does.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/solvers/cost_model.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt::detail {

/// Per domain at or above the host level: the dearest-price sum of the eligible victims its
/// hosts own (a workload is owned by the host of its first entry that lies in a host, so a
/// gang counts once), and how many running workloads they own, with the domain's version when
/// computed. Valid for one preemptor priority and one cost model.
struct PriceCheckCache {
  struct Node {
    std::uint64_t version = 0;
    bool valid = false;
    double dearest_sum = 0.0;
    std::size_t owned = 0;
  };
  std::vector<Node> nodes;                 ///< slot = level_offset[level] + ordinal
  std::vector<std::size_t> level_offset;  ///< first slot of each level up to the host level
  const Topology* topology = nullptr;
  std::int32_t priority = 0;
};

/// Which domains of each gang tier of `find_placement` could not hold the preemptor, keyed by
/// the version of the subtree `replicas_that_fit` reads (the domain, or its host when it lies
/// below the host level: pools up to the host serve its units). Only "does not fit" is kept:
/// a domain that fit is always re-examined by the full walk. Per tier it also keeps the domains
/// that fit and the root version they are for, so that the next call reads the change log
/// (`Allocation::changed_since`) and re-examines only the domains the changes touched.
struct FitCache {
  struct Entry {
    std::uint64_t key = 0;
    bool no_fit = false;
  };
  std::vector<std::vector<Entry>> tiers;
  std::vector<std::vector<DomainId>> fitting;  ///< per tier: domains that fit, ascending
  std::vector<std::uint64_t> known_root;       ///< per tier: root version `fitting` is for
  std::vector<bool> known;                     ///< per tier: whether `fitting` was computed
  std::vector<DomainId> next_fitting;          ///< scratch: `fitting` being rebuilt
  std::vector<DomainId> changed;               ///< scratch: the change log's domains
  std::vector<DomainId> touched;               ///< scratch: gang domains those changes touched
  const Topology* topology = nullptr;
};

/// The domains of `level` whose fit (`replicas_that_fit`, read as `FitCache` keys it) the
/// entries on `changed` may have changed, ascending and distinct, into `touched`: the one
/// enclosing each entry, or every one of the entry's host when the level lies below the host
/// level (pools up to the host serve them). An entry above both changes no key.
inline void gang_domains_touched(const Topology& topology, LevelIndex level,
                                 std::span<const DomainId> changed, std::vector<DomainId>& touched) {
  const LevelIndex host_level = topology.host_level();
  touched.clear();
  for (const DomainId domain : changed) {
    if (level > host_level) {
      if (topology.level(domain) < host_level) continue;
      const auto inside = topology.domains_at(level, topology.ancestor_at(domain, host_level));
      touched.insert(touched.end(), inside.begin(), inside.end());
    } else if (topology.level(domain) >= level) {
      touched.push_back(topology.ancestor_at(domain, level));
    }
  }
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
}

/// `check_price_sum(state, preemptor, model)` that re-reads only what changed since `cache`
/// last saw the state: it walks down from the root into the domains whose version changed
/// (reusing every unchanged subtree's sum) and re-prices the occupants of changed hosts only,
/// so k changes cost O(k x depth x fan-out). Throws exactly what `check_price_sum` throws (on
/// any failure it defers to it, so the message names the same victim). Falls back to the full
/// pass when some running workload lies in no host, or when the sum nears the largest double
/// (where the order of the additions could decide overflow).
template <CostModel Model>
void check_price_sum_reusing(const Allocation& state, const Workload& preemptor, const Model& model,
                             PriceCheckCache& cache) {
  if constexpr (UniformPriceModel<Model>) {
    check_price_sum(state, preemptor, model);  // O(1) already
  } else {
    const double floor = checked_price_declarations(model);
    const Topology& topology = state.topology();
    const LevelIndex host_level = topology.host_level();
    if (cache.topology != &topology || cache.priority != preemptor.priority) {
      cache.level_offset.assign(static_cast<std::size_t>(host_level) + 2, 0);
      for (LevelIndex level = 0; level <= host_level; ++level) {
        cache.level_offset[level + 1U] = cache.level_offset[level] + topology.domains_at(level).size();
      }
      cache.nodes.assign(cache.level_offset.back(), {});
      cache.topology = &topology;
      cache.priority = preemptor.priority;
    }
    const auto price_host = [&](DomainId host, PriceCheckCache::Node& node) {
      double sum = 0.0;
      std::size_t count = 0;
      state.for_each_occupant_unordered(host, [&](const WorkloadView& view) {
        DomainId owner;
        for (const DomainId domain : view.domains) {
          owner = topology.ancestor_at(domain, host_level);
          if (owner.valid()) break;
        }
        if (owner != host) return;  // counted by an earlier host of its gang
        ++count;
        const Workload& victim = view.workload;
        if (!victim.preemptible || victim.priority >= preemptor.priority) return;
        sum += checked_dearest_price(model, victim, floor);
      });
      node.dearest_sum = sum;
      node.owned = count;
    };
    const auto visit = [&](const auto& self, DomainId domain) -> const PriceCheckCache::Node& {
      const LevelIndex level = topology.level(domain);
      PriceCheckCache::Node& node = cache.nodes[cache.level_offset[level] + topology.ordinal(domain)];
      const std::uint64_t version = state.domain_version(domain);
      if (node.valid && node.version == version) return node;
      node.valid = false;  // stays so if pricing throws below
      if (level == host_level) {
        price_host(domain, node);
      } else {
        double sum = 0.0;
        std::size_t owned = 0;
        const std::uint32_t end = topology.subtree_end(domain).value;  // children: pre-order ids
        for (std::uint32_t child = domain.value + 1; child < end; child = topology.subtree_end(DomainId{child}).value) {
          const PriceCheckCache::Node& part = self(self, DomainId{child});
          sum += part.dearest_sum;
          owned += part.owned;
        }
        node.dearest_sum = sum;
        node.owned = owned;
      }
      node.version = version;
      node.valid = true;
      return node;
    };
    const PriceCheckCache::Node* total = nullptr;
    try {
      total = &visit(visit, Topology::root());
    } catch (const std::invalid_argument&) {
      check_price_sum(state, preemptor, model);  // throws the cold path's own message
      throw;
    }
    // Workloads held only above the hosts are not owned by any host: read them all.
    if (total->owned != state.size() || !(total->dearest_sum < 1e300) ||
        past_exact_range(total->dearest_sum, cost_grid_of(model))) {
      check_price_sum(state, preemptor, model);
    }
  }
}

/// `find_placement(state, demand)` that skips every gang domain `cache` knows cannot hold the
/// preemptor at its current version, and, when the change log reaches back to its last call,
/// examines only the gang domains the changes touched (O(changes + domains that fit)). The
/// result is the cold one: a domain that did not fit still does not, and one that fit and was
/// not touched still fits with the same idle devices, so each tier's best fitting domain is
/// chosen among the same domains, in the same order.
[[nodiscard]] inline PlacementSearchResult find_placement_reusing(const Allocation& state,
                                                                  const ResolvedDemand& demand,
                                                                  FitCache& cache) {
  const Topology& topology = state.topology();
  const DomainId root = Topology::root();
  const std::vector<LevelIndex> levels = gang_levels(topology, demand, root);
  if (cache.topology != &topology || cache.tiers.size() != levels.size()) {
    cache.tiers.assign(levels.size(), {});
    cache.known_root.assign(levels.size(), 0);
    cache.known.assign(levels.size(), false);
    cache.fitting.assign(levels.size(), {});
    cache.topology = &topology;
  }
  const LevelIndex host_level = topology.host_level();
  const std::int64_t idle_needed = static_cast<std::int64_t>(demand.replicas) * demand.whole_devices;
  for (std::size_t t = 0; t < levels.size(); ++t) {
    // Entry i belongs to the i-th domain of `gang_tiers`' tier t (its ordinal in the level, or
    // 0 for the root itself).
    const bool whole = topology.level(root) >= levels[t];
    auto& entries = cache.tiers[t];
    const std::size_t count = whole ? 1 : topology.domains_at(levels[t]).size();
    if (entries.size() != count) entries.assign(count, {});
    // Whether `domain` can hold every replica (pools up to its host included), remembering
    // "no" by version.
    const auto fits = [&](DomainId domain) {
      FitCache::Entry& entry = entries[whole ? 0 : topology.ordinal(domain)];
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
    std::vector<DomainId>& fitting = cache.fitting[t];
    std::vector<DomainId>& next = cache.next_fitting;
    next.clear();
    cache.changed.clear();
    if (cache.known[t] && state.changed_since(cache.known_root[t], cache.changed)) {
      // The fitting domains at a state the change log still reaches are known: a domain the
      // changes did not touch kept its fit and its idle devices, so only touched ones are
      // examined again.
      if (whole) {
        if (cache.changed.empty() ? !fitting.empty() : fits(root)) next.push_back(root);
      } else {
        gang_domains_touched(topology, levels[t], cache.changed, cache.touched);
        for (const DomainId domain : fitting) {
          if (!std::binary_search(cache.touched.begin(), cache.touched.end(), domain)) next.push_back(domain);
        }
        const std::size_t kept = next.size();
        for (const DomainId domain : cache.touched) {
          // `for_each_gang_candidate`'s filter: a domain's ancestors hold at least its idle devices.
          if (idle_needed > 0 && state.idle_devices(domain) < idle_needed) continue;
          if (fits(domain)) next.push_back(domain);
        }
        std::inplace_merge(next.begin(), next.begin() + static_cast<std::ptrdiff_t>(kept), next.end());
      }
    } else {
      // Subtrees without enough idle devices hold no candidate (as in `find_placement`).
      for_each_gang_candidate(state, root, levels[t], idle_needed, [&](DomainId domain) {
        if (fits(domain)) next.push_back(domain);
      });
    }
    fitting.swap(next);
    cache.known[t] = true;
    cache.known_root[t] = state.domain_version(root);
    // Ascending id, the order the walk meets them: the least idle one, first on ties, is the
    // cold path's choice.
    DomainId best;
    for (const DomainId domain : fitting) {
      if (!best.valid() || state.idle_devices(domain) < state.idle_devices(best)) best = domain;
    }
    if (!best.valid()) continue;
    if (auto placement = place_in(state, demand, best))
      return placement_search_result(topology, std::move(*placement));
  }
  return {};
}

}  // namespace topopreempt::detail
