// SPDX-License-Identifier: MIT
#pragma once
/// @file relaxed_cost.hpp
/// An exact relaxation of a target domain's optimum, computed without the preemption index, so
/// that tests of the index's bounds (per domain, per group, per block) compare against it; and
/// a recount of the index's bands, for the same tests.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/index_band.hpp"

namespace topopreempt::test {

/// Recount, sharing nothing with the index, of the bands below `priority` over the eligible
/// workloads with an entry whose domain satisfies `holds` and a device somewhere: per priority,
/// their extremes (what `for_each_index_band` of a domain, or of a block, should visit).
template <class Holds>
[[nodiscard]] std::vector<IndexBand> recount_bands_where(const Allocation& state,
                                                         std::int32_t priority, const Holds& holds) {
  std::vector<IndexBand> bands;
  std::vector<WorkloadId> owners;  // per band: the workload that sets its least lost work
  for (const WorkloadId id : state.workload_ids()) {
    const Workload& workload = state.workload(id);
    if (!workload.preemptible || workload.priority >= priority) continue;
    const IndexBand own = state.index_band_of(workload);
    if (own.most_entries_per_victim == 0) continue;
    bool inside = false;
    for (const auto& replica : state.placement(id).replicas) {
      for (const auto& entry : replica.entries)
        inside = inside || holds(entry.domain);
    }
    if (!inside) continue;
    const auto it = std::find_if(bands.begin(), bands.end(), [&](const IndexBand& band) {
      return band.priority == own.priority;
    });
    if (it == bands.end()) {
      bands.push_back(own);
      owners.push_back(id);
      continue;
    }
    // The second least lost work over workloads other than the owner of the least (a tie goes
    // to the smaller id), and the owner's entries.
    WorkloadId& owner = owners[static_cast<std::size_t>(it - bands.begin())];
    if (own.least_lost_work_per_entry < it->least_lost_work_per_entry ||
        (own.least_lost_work_per_entry == it->least_lost_work_per_entry && id < owner)) {
      it->second_least_lost_work_per_entry = it->least_lost_work_per_entry;
      it->entries_of_least_lost_work = own.entries_of_least_lost_work;
      owner = id;
    } else {
      it->second_least_lost_work_per_entry =
          std::min(it->second_least_lost_work_per_entry, own.least_lost_work_per_entry);
    }
    it->least_lost_work_per_entry =
        std::min(it->least_lost_work_per_entry, own.least_lost_work_per_entry);
    it->least_model_gib_per_entry =
        std::min(it->least_model_gib_per_entry, own.least_model_gib_per_entry);
    it->most_entries_per_victim =
        std::max(it->most_entries_per_victim, own.most_entries_per_victim);
    it->least_lost_work_per_replica =
        std::min(it->least_lost_work_per_replica, own.least_lost_work_per_replica);
    it->least_model_gib_per_replica =
        std::min(it->least_model_gib_per_replica, own.least_model_gib_per_replica);
  }
  std::sort(bands.begin(), bands.end(),
            [](const IndexBand& a, const IndexBand& b) { return a.priority < b.priority; });
  return bands;
}

/// The least cost of any victim set (each eligible victim kept, evicted, or shrunk with its
/// best-placed replicas dropped) that frees at least `need` device entries inside `target`.
/// Freeing `need` entries there is necessary for `need` more idle devices, so no plan in
/// `target` is cheaper: a relaxation of the domain's optimum, computed exactly (a
/// multiple-choice knapsack over freed entries, sharing nothing with the index).
template <class Model>
[[nodiscard]] double least_relaxed_cost(const Allocation& state, DomainId target, std::int32_t priority,
                          std::int64_t need, const Model& model) {
  const Topology& topology = state.topology();
  const auto size = static_cast<std::size_t>(need) + 1;
  std::vector<double> best(size, std::numeric_limits<double>::infinity());
  best[0] = 0.0;
  for (const WorkloadId id : state.workload_ids()) {
    const Workload& victim = state.workload(id);
    if (!victim.preemptible || victim.priority >= priority) continue;
    std::vector<std::int64_t> per_replica;
    for (const auto& replica : state.placement(id).replicas) {
      std::int64_t inside = 0;
      for (const auto& entry : replica.entries) {
        inside +=
            topology.is_device(entry.domain) && topology.contains(target, entry.domain) ? 1 : 0;
      }
      per_replica.push_back(inside);
    }
    std::sort(per_replica.rbegin(), per_replica.rend());
    std::vector<std::pair<std::int64_t, double>> options;  // (entries freed, price)
    std::int64_t total = 0;
    for (const std::int64_t inside : per_replica) total += inside;
    if (total == 0) continue;
    options.emplace_back(total, static_cast<double>(model.evict(victim)));
    std::int64_t dropped_entries = 0;
    for (std::int32_t dropped = 1; dropped <= victim.shrinkable_replicas(); ++dropped) {
      dropped_entries += per_replica[static_cast<std::size_t>(dropped) - 1];
      options.emplace_back(dropped_entries, static_cast<double>(model.shrink(victim, dropped)));
    }
    std::vector<double> next = best;
    for (std::size_t freed = 0; freed < size; ++freed) {
      if (!std::isfinite(best[freed])) continue;
      for (const auto& [entries, price] : options) {
        const std::size_t reached = std::min(size - 1, freed + static_cast<std::size_t>(entries));
        next[reached] = std::min(next[reached], best[freed] + price);
      }
    }
    best = std::move(next);
  }
  return best[size - 1];
}

/// The least cost of any victim set (each eligible victim kept, evicted, or shrunk by any of
/// its replicas) that frees at least `needs[j]` device entries on `hosts[j]` for every j at
/// once. A gang readying each of `hosts` for one replica of d devices must free d - idle there,
/// so no such plan is cheaper: a relaxation of the gang's optimum on those hosts, computed
/// exactly (a multiple-choice knapsack over the entries freed per host, each capped at its
/// need), sharing nothing with the index. A victim with more than 16 replicas on the hosts is
/// taken as freeing what it frees by eviction at its cheapest price (weaker, still a bound).
template <class Model>
[[nodiscard]] double least_relaxed_gang_cost(const Allocation& state,
                                             const std::vector<DomainId>& hosts,
                                             const std::vector<std::int64_t>& needs,
                                             std::int32_t priority, const Model& model) {
  const Topology& topology = state.topology();
  const std::size_t k = hosts.size();
  // States: entries freed per host, capped at its need, in mixed radix.
  std::vector<std::size_t> radix(k);
  std::size_t size = 1;
  for (std::size_t j = 0; j < k; ++j) {
    radix[j] = size;
    size *= static_cast<std::size_t>(std::max<std::int64_t>(needs[j], 0)) + 1;
  }
  const auto advance = [&](std::size_t state_index, const std::vector<std::int64_t>& freed) {
    std::size_t next = 0;
    for (std::size_t j = 0; j < k; ++j) {
      const auto cap = static_cast<std::int64_t>(std::max<std::int64_t>(needs[j], 0));
      const auto have = static_cast<std::int64_t>(state_index / radix[j] % (static_cast<std::size_t>(cap) + 1));
      next += static_cast<std::size_t>(std::min(cap, have + freed[j])) * radix[j];
    }
    return next;
  };
  std::vector<double> best(size, std::numeric_limits<double>::infinity());
  best[0] = 0.0;
  for (const WorkloadId id : state.workload_ids()) {
    const Workload& victim = state.workload(id);
    if (!victim.preemptible || victim.priority >= priority) continue;
    std::vector<std::vector<std::int64_t>> relevant;  // per replica on the hosts: its entries
    std::size_t elsewhere = 0;                         // replicas with no entry on them
    for (const auto& replica : state.placement(id).replicas) {
      std::vector<std::int64_t> on(k, 0);
      bool any = false;
      for (const auto& entry : replica.entries) {
        if (!topology.is_device(entry.domain)) continue;
        for (std::size_t j = 0; j < k; ++j) {
          if (topology.contains(hosts[j], entry.domain)) {
            ++on[j];
            any = true;
          }
        }
      }
      if (any) {
        relevant.push_back(std::move(on));
      } else {
        ++elsewhere;
      }
    }
    if (relevant.empty()) continue;
    std::vector<std::pair<std::vector<std::int64_t>, double>> options;  // (freed, price)
    std::vector<std::int64_t> all(k, 0);
    for (const auto& on : relevant)
      for (std::size_t j = 0; j < k; ++j) all[j] += on[j];
    const double evict = static_cast<double>(model.evict(victim));
    const std::int32_t shrinkable = victim.shrinkable_replicas();
    if (relevant.size() > 16) {
      double cheapest = evict;
      for (std::int32_t dropped = 1; dropped <= shrinkable; ++dropped)
        cheapest = std::min(cheapest, static_cast<double>(model.shrink(victim, dropped)));
      options.emplace_back(all, cheapest);
    } else {
      options.emplace_back(all, evict);
      // Any subset S of the replicas on the hosts, dropped with up to `elsewhere` others: the
      // cheapest shrink of |S| to |S| + elsewhere replicas.
      for (std::size_t mask = 1; mask < (std::size_t{1} << relevant.size()); ++mask) {
        const auto chosen = static_cast<std::int32_t>(std::popcount(mask));
        if (chosen > shrinkable) continue;
        double price = std::numeric_limits<double>::infinity();
        for (std::int32_t dropped = chosen;
             dropped <= shrinkable && dropped <= chosen + static_cast<std::int32_t>(elsewhere);
             ++dropped)
          price = std::min(price, static_cast<double>(model.shrink(victim, dropped)));
        std::vector<std::int64_t> freed(k, 0);
        for (std::size_t r = 0; r < relevant.size(); ++r) {
          if ((mask >> r & 1U) == 0) continue;
          for (std::size_t j = 0; j < k; ++j) freed[j] += relevant[r][j];
        }
        options.emplace_back(std::move(freed), price);
      }
    }
    std::vector<double> next = best;
    for (std::size_t s = 0; s < size; ++s) {
      if (!std::isfinite(best[s])) continue;
      for (const auto& [freed, price] : options) {
        const std::size_t reached = advance(s, freed);
        next[reached] = std::min(next[reached], best[s] + price);
      }
    }
    best = std::move(next);
  }
  return best[size - 1];
}

}  // namespace topopreempt::test
