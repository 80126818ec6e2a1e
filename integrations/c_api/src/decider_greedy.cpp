// SPDX-License-Identifier: MIT
// Deciders of the greedy solver under every cost model. One translation unit per solver: each
// instantiates the solver six times (once per model), so they build in parallel.
#include "c_api_internal.hpp"

namespace topopreempt_c {

std::unique_ptr<Decider> make_greedy_decider(const Question& question) {
  return decider_of(tp::solvers::greedy_solver{}, question);
}

}  // namespace topopreempt_c
