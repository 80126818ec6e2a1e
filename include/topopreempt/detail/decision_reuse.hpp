// SPDX-License-Identifier: MIT
#pragma once
/// @file detail/decision_reuse.hpp
/// What an `IncrementalDecider` keeps between two decisions besides its domain scans: the
/// per-host part of `check_price_sum`, and which gang domains could not hold the preemptor
/// without preemption. Both are keyed by `Allocation::domain_version`, so a decision after k
/// changes redoes only the hosts and domains those changes touched, and answers exactly as the
/// cold path does.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "topopreempt/allocation.hpp"
#include "topopreempt/cost_model.hpp"
#include "topopreempt/placement_search.hpp"
#include "topopreempt/topology.hpp"
#include "topopreempt/workload.hpp"

namespace topopreempt::detail {

/// Per host: the dearest-price sum of the eligible victims it owns (a workload is owned by the
/// host of its first entry that lies in a host, so a gang counts once), and how many running
/// workloads it owns. Valid for one preemptor priority and one cost model.
struct PriceCheckCache {
  struct Host {
    std::uint64_t version = 0;
    bool valid = false;
    double dearest_sum = 0.0;
    std::size_t owned = 0;
  };
  std::vector<Host> hosts;
  const Topology* topology = nullptr;
  std::int32_t priority = 0;
};

/// Which domains of each gang tier of `find_placement` could not hold the preemptor, keyed by
/// the version of the subtree `replicas_that_fit` reads (the domain, or its host when it lies
/// below the host level: pools up to the host serve its units). Only "does not fit" is kept:
/// a domain that fit is always re-examined.
struct FitCache {
  struct Entry {
    std::uint64_t key = 0;
    bool no_fit = false;
  };
  std::vector<std::vector<Entry>> tiers;
  const Topology* topology = nullptr;
};

/// `check_price_sum(state, preemptor, model)` that re-reads only the hosts whose version changed
/// since `cache` last saw them. Throws exactly what `check_price_sum` throws (on any failure it
/// defers to it, so the message names the same victim). Falls back to the full pass when some
/// running workload lies in no host, or when the sum nears the largest double (where the
/// order of the additions could decide overflow).
template <CostModel Model>
void check_price_sum_reusing(const Allocation& state, const Workload& preemptor, const Model& model,
                             PriceCheckCache& cache) {
  if constexpr (UniformPriceModel<Model>) {
    check_price_sum(state, preemptor, model);  // O(1) already
  } else {
    const double floor = checked_price_declarations(model);
    const Topology& topology = state.topology();
    const LevelIndex host_level = topology.host_level();
    const auto hosts = topology.domains_at(host_level);
    if (cache.topology != &topology || cache.priority != preemptor.priority ||
        cache.hosts.size() != hosts.size()) {
      cache.hosts.assign(hosts.size(), {});
      cache.topology = &topology;
      cache.priority = preemptor.priority;
    }
    double total = 0.0;
    std::size_t owned = 0;
    for (std::size_t h = 0; h < hosts.size(); ++h) {
      const DomainId host = hosts[h];
      PriceCheckCache::Host& entry = cache.hosts[h];
      const std::uint64_t version = state.domain_version(host);
      if (!entry.valid || entry.version != version) {
        entry.valid = false;
        double sum = 0.0;
        std::size_t count = 0;
        try {
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
        } catch (const std::invalid_argument&) {
          check_price_sum(state, preemptor, model);  // throws the cold path's own message
          throw;
        }
        entry = {version, true, sum, count};
      }
      total += entry.dearest_sum;
      owned += entry.owned;
    }
    // Workloads held only above the hosts are not owned by any host: read them all.
    if (owned != state.size() || !(total < 1e300)) check_price_sum(state, preemptor, model);
  }
}

/// `find_placement(state, demand)` that skips every gang domain `cache` knows cannot hold the
/// preemptor at its current version. The result is the cold one: a domain that did not fit
/// still does not, so the best fitting domain of each tier is among those re-examined, met in
/// the same order.
[[nodiscard]] inline PlacementSearchResult find_placement_reusing(const Allocation& state,
                                                                  const ResolvedDemand& demand,
                                                                  FitCache& cache) {
  const Topology& topology = state.topology();
  const auto tiers = gang_tiers(topology, demand, Topology::root());
  if (cache.topology != &topology || cache.tiers.size() != tiers.size()) {
    cache.tiers.assign(tiers.size(), {});
    cache.topology = &topology;
  }
  const LevelIndex host_level = topology.host_level();
  for (std::size_t t = 0; t < tiers.size(); ++t) {
    const std::vector<DomainId>& domains = tiers[t].second;
    auto& entries = cache.tiers[t];
    if (entries.size() != domains.size()) entries.assign(domains.size(), {});
    DomainId best;
    for (std::size_t i = 0; i < domains.size(); ++i) {
      const DomainId domain = domains[i];
      const DomainId read =
          topology.level(domain) >= host_level ? topology.ancestor_at(domain, host_level) : domain;
      const std::uint64_t key = state.domain_version(read);
      if (entries[i].no_fit && entries[i].key == key) continue;
      if (replicas_that_fit(state, demand, domain) < demand.replicas) {
        entries[i] = {key, true};
        continue;
      }
      entries[i].no_fit = false;
      if (!best.valid() || state.idle_devices(domain) < state.idle_devices(best)) best = domain;
    }
    if (!best.valid()) continue;
    if (auto placement = place_in(state, demand, best))
      return placement_search_result(topology, std::move(*placement));
  }
  return {};
}

}  // namespace topopreempt::detail
