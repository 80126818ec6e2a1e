// SPDX-License-Identifier: MIT
#pragma once
/// @file relaxed_cost.hpp
/// An exact relaxation of a target domain's optimum, computed without the preemption index, so
/// that tests of the index's bounds (per domain, per group, per block) compare against it.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "topopreempt/model/allocation.hpp"

namespace topopreempt::test {

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

}  // namespace topopreempt::test
