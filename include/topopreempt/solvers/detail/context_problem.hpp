// SPDX-License-Identifier: MIT
#pragma once
/// @file context_problem.hpp
/// Stage 2 of a decision: reading one target domain into a `DomainProblem` (its eligible victims,
/// their evict and shrink options, gains per relaxation dimension, deficits and lower bound).

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "topopreempt/solvers/detail/context_core.hpp"

namespace topopreempt::detail {

template <CostModel Model>
std::optional<Shortfall> PreemptionContext<Model>::build_problem(const Tier& tier, DomainId target,
                                                                 DomainProblem& problem) const {
  problem.target = target;
  problem.tier = &tier;
  // As a new problem's, until set below: `problem` may hold an earlier domain's (or call's).
  problem.lower_bound = 0.0;
  problem.grid = 0.0;
  problem.dims = tier.dims;
  const std::vector<std::size_t>& dims = problem.dims;
  problem.need.assign(dims.size(), 0.0);
  problem.dimension_names.clear();
  problem.measured_in.clear();
  problem.demand_total.clear();
  for (std::size_t k = 0; k < dims.size(); ++k) {
    problem.dimension_names.push_back(dimension_name(dims[k]));
    const DomainId where = aggregate_domain(target, dims[k]);
    problem.measured_in.push_back(where);
    problem.demand_total.push_back(total_demand(tier, dims[k]));
    problem.need[k] = std::max(0.0, total_demand(tier, dims[k]) - free_in(state_, where, dims[k]));
  }
  const DomainId scope = reach(tier, target);
  // Victims are built in recycled slots (their option and gain buffers kept): no allocation
  // per victim once the buffers have grown.
  for (auto& old : problem.victims) problem.spare.push_back(std::move(old));
  problem.victims.clear();
  for_each_host(scope, [&](DomainId host) {
    state_.for_each_occupant(host, [&](const WorkloadView& view) {
      if (!eligible(view.workload)) return;
      for (const auto& seen : problem.victims) {
        if (seen.id == view.workload.id) return;  // a gang met on an earlier host
      }
      if (problem.spare.empty()) problem.spare.emplace_back();
      CandidateVictim& victim = problem.spare.back();
      victim.id = view.workload.id;
      victim.workload = &view.workload;
      victim.options_complete = true;
      add_options(tier, target, dims, view, victim, problem);
      if (victim.options.empty()) return;  // the slot stays spare
      problem.victims.push_back(std::move(victim));
      problem.spare.pop_back();
    });
  });
  std::sort(problem.victims.begin(), problem.victims.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  for (std::size_t k = 0; k < dims.size(); ++k) {
    double total = 0.0;
    for (const auto& victim : problem.victims) total += victim.options.front().gain[k];
    if (total + 1e-9 < problem.need[k]) {
      return Shortfall{dims[k], total, problem.need[k], problem.victims.size()};
    }
  }
  problem.grid = cost_grid_of(model_);
  problem.lower_bound =
      on_grid(fractional_bound(problem.need, problem.victims, 0, fractional_items_), problem.grid);
  return std::nullopt;
}

template <CostModel Model>
void PreemptionContext<Model>::add_gain(const Tier& tier, DomainId target,
                                        const std::vector<std::size_t>& dims,
                                        const WorkloadView& view, std::size_t first,
                                        std::size_t last, std::vector<double>& gain) const {
  (void)tier;
  for (std::size_t e = first; e < last; ++e) {
    const DomainId domain = view.domains[e];
    for (std::size_t k = 0; k < dims.size(); ++k) {
      const DomainId where = aggregate_domain(target, dims[k]);
      if (!topology_.contains(where, domain)) continue;
      if (dims[k] == whole_device_dim) {
        if (topology_.is_device(domain)) gain[k] += 1.0;
      } else {
        gain[k] += static_cast<double>(view.amount(e, dims[k]));
      }
    }
  }
}

template <CostModel Model>
void PreemptionContext<Model>::add_options(const Tier& tier, DomainId target,
                                           const std::vector<std::size_t>& dims,
                                           const WorkloadView& view, CandidateVictim& victim,
                                           DomainProblem& problem) const {
  std::size_t used = 0;
  const auto next_option = [&]() -> VictimOption& {
    if (used == victim.options.size()) victim.options.emplace_back();
    VictimOption& option = victim.options[used++];
    option.gain.assign(dims.size(), 0.0);
    option.dropped.clear();
    option.cost = 0.0;
    return option;
  };
  const DomainId scope = reach(tier, target);
  std::vector<std::int32_t>& inside = problem.scratch_inside;  // replicas with an entry in reach
  inside.clear();
  for (std::size_t r = 0; r < view.replica_begin.size(); ++r) {
    const auto [first, last] = view.replica_entries(r);
    for (std::size_t e = first; e < last; ++e) {
      if (topology_.contains(scope, view.domains[e])) {
        inside.push_back(static_cast<std::int32_t>(r));
        break;
      }
    }
  }
  if (inside.empty()) {  // nothing of it in reach: evicting it cannot help
    victim.options.clear();
    return;
  }
  {
    VictimOption& evict = next_option();
    add_gain(tier, target, dims, view, 0, view.domains.size(), evict.gain);
    evict.cost = price(view.workload, 0);
  }
  const auto shrinkable = std::min<std::int64_t>(
      {view.workload.shrinkable_replicas(), static_cast<std::int64_t>(inside.size()),
       static_cast<std::int64_t>(view.workload.replicas) - 1});  // dropping all = evicting
  const auto add_shrink = [&](const std::vector<std::int32_t>& dropped) {
    VictimOption& shrink = next_option();
    for (std::int32_t r : dropped) {
      const auto [first, last] = view.replica_entries(static_cast<std::size_t>(r));
      add_gain(tier, target, dims, view, first, last, shrink.gain);
    }
    shrink.dropped.assign(dropped.begin(), dropped.end());
    shrink.cost = price(view.workload, dropped.size());
  };
  std::vector<std::int32_t>& dropped = problem.scratch_dropped;
  if (shrinkable <= 0) {
    // nothing to shrink
  } else if (inside.size() <= max_enumerated_replicas) {
    // Which replicas go matters (they sit in different units): every subset, smallest first.
    const std::uint32_t subsets = 1U << inside.size();
    for (std::int64_t size = 1; size <= shrinkable; ++size) {
      for (std::uint32_t mask = 1; mask < subsets; ++mask) {
        if (std::popcount(mask) != size) continue;
        dropped.clear();
        for (std::size_t i = 0; i < inside.size(); ++i) {
          if ((mask >> i) & 1U) dropped.push_back(inside[i]);
        }
        add_shrink(dropped);
      }
    }
  } else {
    // Too many replicas to enumerate: drop the first ones in reach; exactness is lost.
    victim.options_complete = false;
    dropped.clear();
    for (std::int64_t size = 1; size <= shrinkable; ++size) {
      dropped.push_back(inside[static_cast<std::size_t>(size - 1)]);
      add_shrink(dropped);
    }
  }
  // Options beyond `used` belong to an earlier victim of this slot.
  victim.options.erase(victim.options.begin() + static_cast<std::ptrdiff_t>(used),
                       victim.options.end());
}

}  // namespace topopreempt::detail
