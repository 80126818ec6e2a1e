// SPDX-License-Identifier: MIT
// Deciders and queue planners of the greedy solver under every cost model. One translation unit
// per solver: each instantiates the solver twelve times (a decider and a queue planner per
// model), so they build in parallel.
#include "c_api_internal.hpp"

namespace topopreempt_c {

std::unique_ptr<Decider> make_greedy_decider(const Question& question) {
  return decider_of(tp::solvers::greedy_solver{}, question);
}

std::unique_ptr<QueuePlanner> make_greedy_queue_planner(const PlanSettings& settings) {
  return queue_planner_of(tp::solvers::greedy_solver{}, settings);
}

}  // namespace topopreempt_c
