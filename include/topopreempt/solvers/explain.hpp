// SPDX-License-Identifier: MIT
#pragma once
/// @file explain.hpp
/// `explain`: words a plan that an index solver (greedy, knapsack, branch-and-bound) returned
/// without its text, to the bytes the solver would have written.

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/model/workload.hpp"
#include "topopreempt/plan/preemption_plan.hpp"
#include "topopreempt/solvers/detail/preemption_context.hpp"

namespace topopreempt {

/// Fills, where empty, `plan.explanation`, every `Victim::reason` and every
/// `DomainVerdict::reason` from the plan's structured facts (victims and what they free, the
/// target and tier, the rejected domains' kinds and numbers, the statistics), exactly as the
/// solver writes them when it builds the text itself: for a plan of `solver.without_text()`,
/// `explain(plan, state, preemptor, model)` makes it `==` to the plan of `solver`.
///
/// Pass what the plan was decided for: the same `state` (before the plan is committed: the
/// victims are still running and the preemptor is not), `preemptor` and cost `model`. Text
/// already there is kept, so calling it twice, or on a plan of a baseline, `PreemptorQueue` or
/// loaning (which always carry their text), changes nothing. Costs O(what it prints), plus
/// building the decision's tiers once. Throws `std::invalid_argument` as `solve` does when the
/// preemptor is invalid or already running.
template <CostModel Model>
void explain(PreemptionPlan& plan, const Allocation& state, const Workload& preemptor,
             const Model& model) {
  const detail::PreemptionContext<Model> context(state, preemptor, model);
  context.fill_text(plan);
}

}  // namespace topopreempt
