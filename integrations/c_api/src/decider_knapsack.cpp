// SPDX-License-Identifier: MIT
// Deciders of the knapsack solver under every cost model (see decider_greedy.cpp).
#include "c_api_internal.hpp"

namespace topopreempt_c {

std::unique_ptr<Decider> make_knapsack_decider(const Question& question) {
  return decider_of(tp::solvers::knapsack_solver{}, question);
}

}  // namespace topopreempt_c
