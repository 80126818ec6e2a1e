// SPDX-License-Identifier: MIT
// Which types model which concept, proven at compile time (after mp-units'
// test/static/concepts_test.cpp). A failure here is a compile error, not a test failure.
#include <doctest/doctest.h>

#include <cstdint>
#include <string_view>
#include <type_traits>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/baselines/exhaustive_subsets.hpp"
#include "topopreempt/baselines/kube_default.hpp"
#include "topopreempt/model/capacity_view.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/solvers/preemption_solver.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/greedy.hpp"
#include "topopreempt/solvers/knapsack.hpp"

namespace {

using namespace topopreempt;
using baselines::exhaustive_subsets_solver;
using baselines::kube_default_solver;
using solvers::branch_and_bound_solver;
using solvers::greedy_solver;
using solvers::knapsack_solver;

/// Every built-in solver must accept every built-in cost model, not just the default one.
template <class Solver>
constexpr bool solves_under_every_cost_model = PreemptionSolver<Solver>&& PreemptionSolver<
    Solver, cost::victim_count>&& PreemptionSolver<Solver, cost::priority_weighted>&&
    PreemptionSolver<Solver, cost::lost_work>&& PreemptionSolver<Solver, cost::reload_time>&&
        PreemptionSolver<Solver, cost::kubernetes_order>&&
            PreemptionSolver<Solver, cost::weighted_sum<cost::lost_work, cost::reload_time>>;

static_assert(solves_under_every_cost_model<greedy_solver>);
static_assert(solves_under_every_cost_model<knapsack_solver>);
static_assert(solves_under_every_cost_model<branch_and_bound_solver>);
static_assert(solves_under_every_cost_model<kube_default_solver>);
static_assert(solves_under_every_cost_model<exhaustive_subsets_solver>);

// The ready instances are of the solver types, usable in constant expressions.
static_assert(std::is_same_v<std::remove_cvref_t<decltype(solvers::greedy)>, greedy_solver>);
static_assert(std::is_same_v<std::remove_cvref_t<decltype(solvers::knapsack)>, knapsack_solver>);
static_assert(std::is_same_v<std::remove_cvref_t<decltype(solvers::branch_and_bound)>,
                             branch_and_bound_solver>);
static_assert(
    std::is_same_v<std::remove_cvref_t<decltype(baselines::kube_default)>, kube_default_solver>);
static_assert(std::is_same_v<std::remove_cvref_t<decltype(baselines::exhaustive_subsets)>,
                             exhaustive_subsets_solver>);

// Names are distinct and non-empty (plans carry them; benchmarks print them).
static_assert(greedy_solver::name == "greedy");
static_assert(knapsack_solver::name == "knapsack");
static_assert(branch_and_bound_solver::name == "branch_and_bound");
static_assert(kube_default_solver::name == "kube_default");
static_assert(exhaustive_subsets_solver::name == "exhaustive_subsets");

// Traits, looked up one by one.
static_assert(!is_exact_v<greedy_solver>);
static_assert(is_exact_v<knapsack_solver>);  // under its preconditions; plans say when they fail
static_assert(is_exact_v<branch_and_bound_solver>);
static_assert(!is_exact_v<kube_default_solver>);
static_assert(is_exact_v<exhaustive_subsets_solver>);
static_assert(!is_baseline_v<greedy_solver>);
static_assert(!is_baseline_v<knapsack_solver>);
static_assert(!is_baseline_v<branch_and_bound_solver>);
static_assert(is_baseline_v<kube_default_solver>);
static_assert(is_baseline_v<exhaustive_subsets_solver>);
static_assert(supports_limits_v<branch_and_bound_solver>);

// Cost models.
static_assert(CostModel<cost::victim_count>);
static_assert(CostModel<cost::priority_weighted>);
static_assert(CostModel<cost::kubernetes_order>);
static_assert(CostModel<cost::lost_work>);
static_assert(CostModel<cost::reload_time>);
static_assert(CostModel<cost::weighted_sum<cost::victim_count, cost::lost_work>>);

// Capacity views.
static_assert(CapacityView<Allocation>);
static_assert(CapacityView<OverlayView<Allocation>>);
static_assert(CapacityView<OverlayView<OverlayView<Allocation>>>);

// --- Types that must not model the concepts --------------------------------------------------

/// Has `evict` but no `shrink` (and no name).
struct evict_only {
  [[nodiscard]] double evict(const Workload&) const { return 1.0; }
};
/// Prices and name, but `name` is not a compile-time member.
struct nameless_model {
  [[nodiscard]] double evict(const Workload&) const { return 1.0; }
  [[nodiscard]] double shrink(const Workload&, std::int32_t) const { return 1.0; }
};
/// Returns something that is not a plan.
struct bool_solver {
  [[maybe_unused]] static constexpr std::string_view name = "bool";
  [[nodiscard]] bool solve(const Allocation&, const Workload&, const cost::victim_count&) const {
    return false;
  }
};
/// Mutates the state (non-const member), which the concept forbids by calling on a const solver.
struct mutating_solver {
  [[maybe_unused]] static constexpr std::string_view name = "mutating";
  PreemptionPlan solve(const Allocation&, const Workload&, const cost::victim_count&) { return {}; }
};
/// A plan-returning solver without a name.
struct anonymous_solver {
  [[nodiscard]] PreemptionPlan solve(const Allocation&, const Workload&,
                                     const cost::victim_count&) const {
    return {};
  }
};
/// Solves only under one cost model.
struct count_only_solver {
  static constexpr std::string_view name = "count_only";
  [[nodiscard]] PreemptionPlan solve(const Allocation&, const Workload&,
                                     const cost::victim_count&) const {
    return {};
  }
};
/// An opt-in trait with the value false.
struct modest_solver : count_only_solver {
  static constexpr bool is_exact = false;
  static constexpr bool is_baseline = true;
};

static_assert(!CostModel<int>);
static_assert(!CostModel<evict_only>);
static_assert(!CostModel<nameless_model>);
static_assert(!CostModel<Allocation>);
static_assert(!PreemptionSolver<int>);
static_assert(!PreemptionSolver<Allocation>);
static_assert(!PreemptionSolver<cost::victim_count>);
static_assert(!PreemptionSolver<bool_solver>);
static_assert(!PreemptionSolver<mutating_solver>);
static_assert(!PreemptionSolver<anonymous_solver>);
static_assert(PreemptionSolver<count_only_solver>);
static_assert(!PreemptionSolver<count_only_solver, cost::lost_work>);
static_assert(!PreemptionSolver<greedy_solver, evict_only>);  // not a cost model at all
static_assert(!is_exact_v<count_only_solver> && !is_baseline_v<count_only_solver>);
static_assert(!supports_limits_v<count_only_solver>);
static_assert(!is_exact_v<modest_solver> && is_baseline_v<modest_solver>);
static_assert(!CapacityView<Workload>);
static_assert(!CapacityView<Topology>);
static_assert(!CapacityView<int>);

}  // namespace

TEST_SUITE("concepts") {
  TEST_CASE("concept checks compiled") {
    // Everything above is a static_assert; this case only makes the file visible in test lists.
    const std::vector<std::string_view> names{
        greedy_solver::name, knapsack_solver::name, branch_and_bound_solver::name,
        kube_default_solver::name, exhaustive_subsets_solver::name};
    CHECK(names.size() == 5);
  }
}
