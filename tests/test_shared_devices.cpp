// SPDX-License-Identifier: MIT
// Whole-GPU preemptors on GPUs shared by several workloads (openb-style shares): a GPU is free
// only once every workload on it is gone. Branch-and-bound (with its device-emptying bound)
// must agree with the exhaustive subset search, and every plan must pass the verifier.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>

#include "support.hpp"
#include "topopreempt/baselines/exhaustive_subsets.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/plan/verifier.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"

using namespace topopreempt;

TEST_SUITE("shared_devices") {
  TEST_CASE("branch-and-bound equals exhaustive search when GPUs are shared") {
    int compared = 0;
    for (std::uint64_t seed = 0; seed < 300; ++seed) {
      std::mt19937_64 random(seed);
      auto [state, preemptor] = test::random_shared_gpu_instance(random, 4, 4, 10);
      const cost::priority_weighted model{.offset = 1.0 + static_cast<double>(random() % 3)};
      const PreemptionPlan exact = solvers::branch_and_bound.solve(state, preemptor, model);
      const PreemptionPlan reference = baselines::exhaustive_subsets.solve(state, preemptor, model);
      const PlanVerdict verdict = verify_plan(state, preemptor, exact, model);
      REQUIRE_MESSAGE(verdict.ok, "seed " << seed << ": " << verdict.summary());
      if (exact.status == PlanStatus::optimal && reference.status == PlanStatus::optimal) {
        ++compared;
        CHECK_MESSAGE(std::abs(exact.cost - reference.cost) <= 1e-6,
                      "seed " << seed << ": branch_and_bound " << exact.cost << ", exhaustive "
                              << reference.cost);
      }
    }
    MESSAGE(compared << " optimal costs compared");
    CHECK(compared > 200);
  }
}
