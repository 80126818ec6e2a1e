// SPDX-License-Identifier: MIT
// Deciders and queue planners of the knapsack solver under every cost model (see
// decider_greedy.cpp).
#include "c_api_internal.hpp"

namespace topopreempt_c {

std::unique_ptr<Decider> make_knapsack_decider(const Question& question) {
  return decider_of(tp::solvers::knapsack_solver{}, question);
}

std::unique_ptr<QueuePlanner> make_knapsack_queue_planner(const PlanSettings& settings) {
  return queue_planner_of(tp::solvers::knapsack_solver{}, settings);
}

}  // namespace topopreempt_c
