// SPDX-License-Identifier: MIT
// Deciders of the branch-and-bound solver under every cost model (see decider_greedy.cpp).
#include <chrono>

#include "c_api_internal.hpp"

namespace topopreempt_c {

std::unique_ptr<Decider> make_branch_and_bound_decider(const Question& question) {
  tp::solvers::branch_and_bound_solver solver;
  if (question.node_limit > 0) solver.node_limit(question.node_limit);
  if (question.time_limit_s > 0.0) {
    solver.time_limit(std::chrono::duration<double>(question.time_limit_s));
  }
  return decider_of(solver, question);
}

}  // namespace topopreempt_c
