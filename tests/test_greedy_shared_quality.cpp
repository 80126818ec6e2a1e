// SPDX-License-Identifier: MIT
// Issue 11, item 6: on GPUs shared by several workloads, greedy must not evict a dear whole GPU
// when a cheap one frees the same room. Measured against branch-and-bound's proven optimum.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>

#include "support.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/plan/verifier.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/greedy.hpp"

using namespace topopreempt;

TEST_SUITE("greedy_quality") {
  TEST_CASE(
      "greedy frees a GPU from its cheapest holder, not a dear one that frees the same room") {
    // One 4-GPU node: gpu0 held by a priority-50 job, gpu1 by a priority-1 job, gpu2 and gpu3
    // each shared by two priority-0 halves. Any one of them frees a whole GPU; the dear one
    // costs 51 where 2 suffice (the audit saw greedy pick it: 34.7x the optimum).
    const auto topology =
        test::shared(shapes::cluster(shapes::openb_node("T4", 4, 64000, 262144), 1, 1));
    Allocation state(topology);
    auto whole_gpu = [&](std::uint64_t id, std::int32_t priority) {
      Workload workload;
      workload.id = WorkloadId{id};
      workload.priority = priority;
      workload.demand.whole_devices = 1;
      workload.demand.resources = topology->schema().make({{"cpu_milli", 1000}});
      state.add(workload, find_placement(state, workload).placement);
    };
    whole_gpu(1, 50);
    whole_gpu(2, 1);
    for (std::uint64_t id = 3; id <= 6; ++id) {
      Workload half;
      half.id = WorkloadId{id};
      half.priority = 0;
      half.demand.resources = topology->schema().make({{"gpu_milli", 500}, {"cpu_milli", 1000}});
      state.add(half, find_placement(state, half).placement);
    }
    Workload preemptor;
    preemptor.id = WorkloadId{999};
    preemptor.priority = 100;
    preemptor.demand.whole_devices = 1;
    const cost::priority_weighted model{.offset = 1.0};
    const PreemptionPlan plan = solvers::greedy.solve(state, preemptor, model);
    REQUIRE(verify_plan(state, preemptor, plan, model).ok);
    CHECK(plan.cost == doctest::Approx(2.0));
    for (const Victim& victim : plan.victims) CHECK(victim.id != WorkloadId{1});
  }

  TEST_CASE("greedy stays within 3x of the optimum on random shared-GPU clusters") {
    double worst = 1.0;
    std::uint64_t worst_seed = 0;
    for (std::uint64_t seed = 0; seed < 1000; ++seed) {
      std::mt19937_64 random(seed);
      auto [state, preemptor] = test::random_shared_gpu_instance(random, 60, 3, 100);
      const cost::priority_weighted model{.offset = 1.0};
      const PreemptionPlan exact = solvers::branch_and_bound.solve(state, preemptor, model);
      const PreemptionPlan fast = solvers::greedy.solve(state, preemptor, model);
      if (exact.status != PlanStatus::optimal || exact.cost <= 0) continue;
      REQUIRE(verify_plan(state, preemptor, fast, model).ok);
      const double ratio = fast.cost / exact.cost;
      if (ratio > worst) {
        worst = ratio;
        worst_seed = seed;
      }
    }
    MESSAGE("worst greedy/optimal " << worst << " at seed " << worst_seed);
    // 2.38 when written; preferring a dear whole GPU to cheap ones would be ~25x here.
    CHECK_MESSAGE(worst <= 3.0, "seed " << worst_seed);
  }
}
