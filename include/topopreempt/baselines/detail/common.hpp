// SPDX-License-Identifier: MIT
#pragma once
/// @file common.hpp
/// Plan-filling helpers shared by the baseline solvers. Not part of the public API.

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/plan/preemption_plan.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt::baselines::detail {

/// Verdicts kept in `PreemptionPlan::rejected`; the rest are only counted.
inline constexpr std::size_t max_rejected_verdicts = 32;

/// Fills `gang_level` and `replica_level` from the plan's finished placement.
inline void set_levels(PreemptionPlan& plan, const Topology& topology) {
  const DomainId enclosing = plan.placement.enclosing_domain(topology);
  plan.gang_level = topology.level(enclosing);
  plan.replica_level = static_cast<LevelIndex>(topology.levels().size() - 1);
  for (std::size_t r = 0; r < plan.placement.replicas.size(); ++r) {
    plan.replica_level =
        std::min(plan.replica_level, topology.level(plan.placement.replica_domain(topology, r)));
  }
}

/// If the preemptor fits as the cluster stands, makes `plan` a `no_preemption_needed` plan at
/// the tightest placement (target: the domain holding all of it) and returns true.
[[nodiscard]] inline bool fits_already(const Allocation& state, const ResolvedDemand& demand,
                                       PreemptionPlan& plan) {
  const PlacementSearchResult direct = find_placement(state, demand);
  if (!direct.found) return false;
  const Topology& topology = state.topology();
  plan.status = PlanStatus::no_preemption_needed;
  plan.placement = direct.placement;
  plan.target_domain = plan.placement.span_domain(topology);
  set_levels(plan, topology);
  return true;
}

/// Resolves the preemptor's demand. Throws `std::invalid_argument` naming the preemptor when it
/// is invalid against the topology or already running (a preemptor is pending by definition).
[[nodiscard]] inline ResolvedDemand resolve_preemptor(const Allocation& state,
                                                      const Workload& preemptor,
                                                      std::string_view solver) {
  ResolvedDemand demand = ResolvedDemand::of(preemptor, state.topology());
  if (state.contains(preemptor.id)) {
    throw std::invalid_argument(std::string(solver) + ": preemptor " + preemptor.label() +
                                " is already running");
  }
  return demand;
}

/// Appends " N other <noun>s lost: path reason; ...; ..." for a plan's first three losers.
inline void append_losers(std::string& text, const PreemptionPlan& plan, const Topology& topology,
                          std::string_view noun) {
  if (plan.rejected_total == 0) return;
  text += " " + std::to_string(plan.rejected_total) + " other " + std::string(noun) +
          (plan.rejected_total == 1 ? "" : "s") + " lost";
  const std::size_t shown = std::min<std::size_t>(plan.rejected.size(), 3);
  for (std::size_t i = 0; i < shown; ++i) {
    text += (i == 0 ? ": " : "; ") + topology.path(plan.rejected[i].domain) + " " +
            plan.rejected[i].reason;
  }
  if (plan.rejected_total > shown) text += "; ...";
  text += ".";
}

/// "1 victim" / "3 victims".
[[nodiscard]] inline std::string count_of(std::size_t count, std::string_view noun) {
  return std::to_string(count) + " " + std::string(noun) + (count == 1 ? "" : "s");
}

}  // namespace topopreempt::baselines::detail
