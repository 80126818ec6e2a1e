// SPDX-License-Identifier: MIT
// Deciders and queue planners of the branch-and-bound solver under every cost model (see
// decider_greedy.cpp).
#include <chrono>

#include "c_api_internal.hpp"

namespace topopreempt_c {

namespace {

/// The solver with the settings' limits (0: the library's defaults).
tp::solvers::branch_and_bound_solver limited(const PlanSettings& settings) {
  tp::solvers::branch_and_bound_solver solver;
  if (settings.node_limit > 0) solver.node_limit(settings.node_limit);
  if (settings.time_limit_s > 0.0) {
    solver.time_limit(std::chrono::duration<double>(settings.time_limit_s));
  }
  return solver;
}

}  // namespace

std::unique_ptr<Decider> make_branch_and_bound_decider(const Question& question) {
  return decider_of(limited(question), question);
}

std::unique_ptr<QueuePlanner> make_branch_and_bound_queue_planner(const PlanSettings& settings) {
  return queue_planner_of(limited(settings), settings);
}

}  // namespace topopreempt_c
