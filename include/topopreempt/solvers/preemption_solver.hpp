// SPDX-License-Identifier: MIT
#pragma once
/// @file preemption_solver.hpp
/// `PreemptionSolver`: the concept every victim-selection solver (and baseline) models, and
/// the traits looked up one by one so that a solver lacking one still works.

#include <chrono>
#include <concepts>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/plan/preemption_plan.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt {

/// A solver answers "which running workloads must go so that `preemptor` can start?":
/// `solver.solve(state, preemptor, cost_model)` returns a `PreemptionPlan` and never modifies
/// `state`. `Solver::name` names it. Checked against one cost model (default `victim_count`);
/// every built-in solver accepts any `CostModel`.
///
/// Contract: victims are running, preemptible, and of strictly lower priority than the
/// preemptor; the plan's placement is valid once the victims are gone; the same input gives
/// the same plan. Thread-safety: `solve` is const and may run concurrently on one shared state.
template <class Solver, class Model = cost::victim_count>
concept PreemptionSolver =
    CostModel<Model> &&
    requires(const Solver& solver, const Allocation& state, const Workload& preemptor,
             const Model& model) {
      { solver.solve(state, preemptor, model) } -> std::same_as<PreemptionPlan>;
      { Solver::name } -> std::convertible_to<std::string_view>;
    };

/// Trait: the solver proves optimality (status `optimal`) when its preconditions hold and no
/// limit is hit. Defaults to false; a solver opts in with `static constexpr bool is_exact`.
template <class Solver>
inline constexpr bool is_exact_v = [] {
  if constexpr (requires { Solver::is_exact; }) {
    return static_cast<bool>(Solver::is_exact);
  } else {
    return false;
  }
}();

/// Trait: the solver honours `time_limit(...)` / `node_limit(...)` options.
template <class Solver>
inline constexpr bool supports_limits_v = requires(Solver solver) {
  solver.time_limit(std::chrono::milliseconds(1));
  solver.node_limit(std::uint64_t{1});
};

/// Trait: the solver is a reference baseline kept for comparison, not for production use.
template <class Solver>
inline constexpr bool is_baseline_v = [] {
  if constexpr (requires { Solver::is_baseline; }) {
    return static_cast<bool>(Solver::is_baseline);
  } else {
    return false;
  }
}();

}  // namespace topopreempt
