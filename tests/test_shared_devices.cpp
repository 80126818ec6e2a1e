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
#include "topopreempt/machine_shapes.hpp"
#include "topopreempt/plan_verifier.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"

using namespace topopreempt;

TEST_SUITE("shared_devices") {
  TEST_CASE("branch-and-bound equals exhaustive search when GPUs are shared") {
    int compared = 0;
    for (std::uint64_t seed = 0; seed < 300; ++seed) {
      std::mt19937_64 random(seed);
      const auto topology = test::shared(shapes::cluster(shapes::openb_node("T4", 4, 64000, 262144),
                                                         1 + random() % 2, 2));
      Allocation state(topology);
      for (std::uint64_t id = 1; id <= 14; ++id) {
        Workload workload;
        workload.id = WorkloadId{id};
        workload.priority = static_cast<std::int32_t>(random() % 4);
        workload.preemptible = random() % 8 != 0;
        if (random() % 4 == 0) {
          workload.demand.whole_devices = 1;
          workload.demand.resources = topology->schema().make({{"cpu_milli", 2000}});
        } else {
          workload.demand.resources = topology->schema().make(
              {{"gpu_milli", static_cast<Amount>(250 * (1 + random() % 3))}, {"cpu_milli", 1000}});
        }
        const auto found = find_placement(state, workload);
        if (found.found) state.add(workload, found.placement);
      }
      Workload preemptor;
      preemptor.id = WorkloadId{999};
      preemptor.priority = 10;
      preemptor.demand.whole_devices = 1 + static_cast<std::int32_t>(random() % 2);
      preemptor.replica_scope = TopologyRequirement::guaranteed(random() % 2 ? "numa" : "node");
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
