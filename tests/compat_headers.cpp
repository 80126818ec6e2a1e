// SPDX-License-Identifier: MIT
// The 0.4 include paths and paper-named namespaces still compile in the 0.5 series, and the 0.5
// paths of the headers that moved since (decisions/, model/cost_model.hpp) in the 0.6 series
// (deprecated forwarding headers under compat/include/). Its own executable: it includes the
// forwarding headers, which nothing else in the repository may use.
#define TOPOPREEMPT_NO_DEPRECATED_HEADER_MESSAGES
#include "topopreempt/allocation.hpp"
#include "topopreempt/aryl.hpp"
#include "topopreempt/capacity_view.hpp"
#include "topopreempt/cluster_generator.hpp"
#include "topopreempt/compass.hpp"
#include "topopreempt/cost_model.hpp"
#include "topopreempt/incremental_decider.hpp"
#include "topopreempt/machine_shapes.hpp"
#include "topopreempt/placement.hpp"
#include "topopreempt/placement_search.hpp"
#include "topopreempt/plan_transaction.hpp"
#include "topopreempt/plan_verifier.hpp"
#include "topopreempt/preemption_plan.hpp"
#include "topopreempt/preemption_solver.hpp"
#include "topopreempt/preemptor_queue.hpp"
#include "topopreempt/resources.hpp"
#include "topopreempt/sim.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"  // a 0.4 path that did not move
#include "topopreempt/topology.hpp"
#include "topopreempt/workload.hpp"
// The 0.5 paths of headers that moved in 0.6.
#include "topopreempt/plan/incremental_decider.hpp"
#include "topopreempt/plan/preemptor_queue.hpp"
#include "topopreempt/solvers/cost_model.hpp"

#include <cstdio>
#include <memory>
#include <type_traits>

int main() {
  using namespace topopreempt;
  // The old namespaces name the new ones.
  static_assert(std::is_same_v<aryl::ReclaimPlan, capacity::ReclaimPlan>);
  static_assert(std::is_same_v<compass::ModelCacheState, model_cache::ModelCacheState>);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  static_assert(std::is_same_v<aryl::aryl_shrink_first, capacity::shrink_elastic_first>);
#pragma GCC diagnostic pop

  // A 0.4 program: a cluster, a preemptor, a plan, verified.
  auto topology = std::make_shared<const Topology>(shapes::cluster(shapes::hgx_h100(), 2, 2));
  Allocation state(topology);
  for (std::uint64_t id = 1; id <= 8; ++id) {
    Workload job{.id = WorkloadId{id}, .priority = 0, .demand = {.whole_devices = 2}};
    state.add(job, find_placement(state, job).placement);
  }
  Workload serving{.id = WorkloadId{100}, .priority = 5, .demand = {.whole_devices = 8},
                   .replica_scope = TopologyRequirement::guaranteed("node")};
  const PreemptionPlan plan = solvers::branch_and_bound.solve(state, serving, cost::victim_count{});
  const auto report = verify_plan(state, serving, plan, cost::victim_count{});
  if (plan.status != PlanStatus::optimal || !report.ok || plan.victims.size() != 4) {
    std::puts("compat headers: unexpected plan");
    return 1;
  }
  std::puts("compat headers: the 0.4 include paths compile and plan");
  return 0;
}
