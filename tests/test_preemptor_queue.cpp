// SPDX-License-Identifier: MIT
// The preemptor queue: priority order, no two preemptors counting on the same freed room,
// nominations kept while valid and re-planned when not, determinism.
#include <doctest/doctest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "support.hpp"
#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/plan/transaction.hpp"
#include "topopreempt/plan/verifier.hpp"
#include "topopreempt/decisions/preemptor_queue.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/greedy.hpp"
#include "topopreempt/solvers/knapsack.hpp"
#include "state_fingerprint.hpp"
#include "transaction_support.hpp"

namespace topopreempt {

using test::four_nodes;
using test::host_of;
using test::whole_node;

namespace {

std::vector<WorkloadId> victims_of(const PreemptionPlan& plan) {
  std::vector<WorkloadId> ids;
  for (const Victim& victim : plan.victims) ids.push_back(victim.id);
  return ids;
}

/// Commits every placed plan of `result` in order; all must land and verify.
template <CostModel Model>
void commit_all(Allocation& state, const std::vector<Workload>& pending, const QueueResult& result,
                const Model& model) {
  for (const QueuedPlan& item : result.plans) {
    if (item.status == NominationStatus::infeasible || item.status == NominationStatus::rejected)
      continue;
    const Workload& preemptor = *std::find_if(
        pending.begin(), pending.end(), [&](const Workload& w) { return w.id == item.preemptor; });
    const Allocation before = state;
    CAPTURE(preemptor.label());
    CHECK(verify_plan(before, preemptor, item.plan, model).ok);
    CHECK(commit(state, item.plan, preemptor).committed);
  }
}

}  // namespace

TEST_CASE_TEMPLATE("the queue plans in priority order without double counting freed room", Solver,
                   solvers::greedy_solver, solvers::knapsack_solver,
                   solvers::branch_and_bound_solver) {
  const cost::priority_weighted model;
  Nominations nominations;
  // Listed low priority first: the queue reorders.
  const std::vector<Workload> pending{whole_node(100, 10), whole_node(101, 20)};

  SUBCASE("two victims: the higher priority gets the cheaper one, the other the next") {
    Allocation state = four_nodes();
    const QueueResult result = plan_queue(state, pending, Solver{}, model, nominations);
    REQUIRE(result.plans.size() == 2);
    CHECK(result.plans[0].preemptor == WorkloadId{101});
    CHECK(result.plans[1].preemptor == WorkloadId{100});
    CHECK(victims_of(result.plans[0].plan) == std::vector<WorkloadId>{WorkloadId{1}});
    CHECK(victims_of(result.plans[1].plan) == std::vector<WorkloadId>{WorkloadId{2}});
    CHECK(result.count(NominationStatus::planned) == 2);
    CHECK(nominations.size() == 2);
    commit_all(state, pending, result, model);
    CHECK(state.contains(WorkloadId{100}));
    CHECK(state.contains(WorkloadId{101}));
  }
  SUBCASE("one victim-freed island: exactly one gets it, the other is infeasible") {
    Allocation state = four_nodes({.node1_preemptible = false});
    const QueueResult result = plan_queue(state, pending, Solver{}, model, nominations);
    REQUIRE(result.plans.size() == 2);
    CHECK(result.plans[0].preemptor == WorkloadId{101});
    CHECK(result.plans[0].plan.has_victims_plan());
    CHECK(result.plans[1].status == NominationStatus::infeasible);
    CHECK(result.plans[1].plan.status == PlanStatus::infeasible);
    CHECK(nominations.size() == 1);
    CHECK(nominations.find(WorkloadId{100}) == nullptr);
    commit_all(state, pending, result, model);
  }
}

TEST_CASE("the queue breaks priority ties by id and never preempts an earlier preemptor") {
  const cost::priority_weighted model;
  Nominations nominations;
  Allocation state = four_nodes();
  // Equal priorities: 100 goes first; 101 may not evict 100's placement (equal priority).
  const std::vector<Workload> pending{whole_node(101, 10), whole_node(100, 10),
                                      whole_node(102, 10)};
  const QueueResult result =
      plan_queue(state, pending, solvers::branch_and_bound_solver{}, model, nominations);
  REQUIRE(result.plans.size() == 3);
  CHECK(result.plans[0].preemptor == WorkloadId{100});
  CHECK(result.plans[1].preemptor == WorkloadId{101});
  CHECK(result.plans[2].preemptor == WorkloadId{102});
  CHECK(victims_of(result.plans[0].plan) == std::vector<WorkloadId>{WorkloadId{1}});
  CHECK(victims_of(result.plans[1].plan) == std::vector<WorkloadId>{WorkloadId{2}});
  CHECK(result.plans[2].status == NominationStatus::infeasible);
}

TEST_CASE("nominations: kept across unrelated changes, re-planned when a dependency moved") {
  const cost::priority_weighted model;
  const solvers::branch_and_bound_solver solver;
  Nominations nominations;
  Allocation state = four_nodes();
  const std::vector<Workload> pending{whole_node(100, 10), whole_node(101, 20)};
  const QueueResult first = plan_queue(state, pending, solver, model, nominations);
  REQUIRE(first.count(NominationStatus::planned) == 2);
  const DomainId node0 = host_of(state, WorkloadId{1});
  const DomainId node1 = host_of(state, WorkloadId{2});

  SUBCASE("unrelated change: both kept, the same plans") {
    test::start(state, test::gpu_job(7, 50, 2));  // lands on node3, no dependency
    const QueueResult again = plan_queue(state, pending, solver, model, nominations);
    CHECK(again.count(NominationStatus::kept) == 2);
    CHECK(again.plans[0].plan == first.plans[0].plan);
    CHECK(again.plans[1].plan == first.plans[1].plan);
    commit_all(state, pending, again, model);
  }
  SUBCASE("a dependency moved: only that preemptor is re-planned, naming the domain") {
    state.remove(WorkloadId{2});
    test::start(state, test::gpu_job(8, 1, 8, 1, TopologyRequirement::guaranteed("node")));
    REQUIRE(host_of(state, WorkloadId{8}) == node1);
    const QueueResult again = plan_queue(state, pending, solver, model, nominations);
    CHECK(again.plans[0].status == NominationStatus::kept);
    CHECK(again.plans[1].status == NominationStatus::replanned);
    CHECK(again.plans[1].moved == std::vector<DomainId>{node1});
    CHECK(victims_of(again.plans[1].plan) == std::vector<WorkloadId>{WorkloadId{8}});
    commit_all(state, pending, again, model);
  }
  SUBCASE("evictions under way: the nomination resumes at the same placement") {
    state.remove(WorkloadId{1});  // 101's victim is already gone
    const QueueResult again = plan_queue(state, pending, solver, model, nominations);
    CHECK(again.plans[0].status == NominationStatus::resumed);
    CHECK(again.plans[0].moved == std::vector<DomainId>{node0});
    CHECK(again.plans[0].plan.status == PlanStatus::no_preemption_needed);
    CHECK(again.plans[0].plan.victims.empty());
    CHECK(again.plans[0].plan.placement == first.plans[0].plan.placement);
    CHECK(again.plans[1].status == NominationStatus::kept);
    commit_all(state, pending, again, model);
  }
  SUBCASE("a higher-priority newcomer takes a nominated room") {
    std::vector<Workload> more = pending;
    more.push_back(whole_node(102, 30));
    const QueueResult again = plan_queue(state, more, solver, model, nominations);
    REQUIRE(again.plans.size() == 3);
    CHECK(again.plans[0].preemptor == WorkloadId{102});
    CHECK(again.plans[0].status == NominationStatus::planned);
    CHECK(again.plans[1].status == NominationStatus::replanned);  // 101 lost node0
    CHECK(again.plans[1].moved == std::vector<DomainId>{node0});
    CHECK(again.plans[2].status == NominationStatus::infeasible);  // 100: no room left
    CHECK(nominations.find(WorkloadId{100}) == nullptr);
  }
  SUBCASE("a changed request is re-planned") {
    std::vector<Workload> changed = pending;
    changed[0].demand.whole_devices = 4;
    changed[0].demand.resources = changed[1].demand.resources / 2;
    const QueueResult again = plan_queue(state, changed, solver, model, nominations);
    CHECK(again.plans[0].status == NominationStatus::kept);
    CHECK(again.plans[1].status == NominationStatus::replanned);
    CHECK(again.plans[1].plan.status == PlanStatus::no_preemption_needed);  // fits on node3
  }
  SUBCASE("a preemptor no longer pending loses its nomination") {
    const std::vector<Workload> only{pending[1]};
    const QueueResult again = plan_queue(state, only, solver, model, nominations);
    CHECK(again.plans[0].status == NominationStatus::kept);
    CHECK(nominations.size() == 1);
    CHECK(nominations.find(WorkloadId{100}) == nullptr);
  }
}

TEST_CASE("nominations: evictions partly done, the rest of the plan resumes") {
  const cost::priority_weighted model;
  Allocation state(test::shared(shapes::cluster(shapes::dense_8gpu_server(), 2, 2)));
  test::start(state, test::gpu_job(11, 1, 4, 1, TopologyRequirement::guaranteed("node")));
  test::start(state, test::gpu_job(12, 3, 4, 1, TopologyRequirement::guaranteed("node")));
  Workload fixed = test::gpu_job(13, 1, 8, 1, TopologyRequirement::guaranteed("node"));
  fixed.preemptible = false;
  test::start(state, fixed);
  const std::vector<Workload> pending{whole_node(100, 10)};
  Nominations nominations;
  const QueueResult first =
      plan_queue(state, pending, solvers::greedy_solver{}, model, nominations);
  REQUIRE(victims_of(first.plans[0].plan) ==
          std::vector<WorkloadId>{WorkloadId{11}, WorkloadId{12}});

  state.remove(WorkloadId{11});  // the first eviction is done, the second under way
  const QueueResult again =
      plan_queue(state, pending, solvers::greedy_solver{}, model, nominations);
  CHECK(again.plans[0].status == NominationStatus::resumed);
  CHECK(again.plans[0].plan.status == PlanStatus::feasible);
  CHECK(victims_of(again.plans[0].plan) == std::vector<WorkloadId>{WorkloadId{12}});
  CHECK(again.plans[0].plan.cost == model.evict(state.workload(WorkloadId{12})));
  CHECK(again.plans[0].plan.placement == first.plans[0].plan.placement);
  CHECK(*nominations.find(WorkloadId{100}) == again.plans[0].plan);
  commit_all(state, pending, again, model);
}

TEST_CASE("the queue is deterministic") {
  const cost::priority_weighted model;
  const solvers::knapsack_solver solver;
  const Allocation state = four_nodes();
  const std::vector<Workload> pending{whole_node(100, 10), whole_node(101, 20),
                                      test::gpu_job(102, 5, 2)};
  Nominations a;
  Nominations b;
  const QueueResult first = plan_queue(state, pending, solver, model, a);
  const QueueResult second = plan_queue(state, pending, solver, model, b);
  REQUIRE(first.plans.size() == second.plans.size());
  for (std::size_t i = 0; i < first.plans.size(); ++i) {
    CHECK(first.plans[i].preemptor == second.plans[i].preemptor);
    CHECK(first.plans[i].status == second.plans[i].status);
    CHECK(first.plans[i].plan == second.plans[i].plan);
  }
  CHECK_THROWS_AS(a.remember(pending[0], first.plans[0].plan), std::invalid_argument);
}

namespace {

/// The plans of `result` for every preemptor but `bad`, which must be `rejected` naming
/// `reason`, with an infeasible placeholder plan and no nomination.
std::vector<QueuedPlan> others_after_rejecting(const QueueResult& result, WorkloadId bad,
                                               std::string_view reason,
                                               const Nominations& nominations) {
  std::vector<QueuedPlan> others;
  std::size_t rejected = 0;
  for (const QueuedPlan& item : result.plans) {
    if (item.status != NominationStatus::rejected) {
      CHECK(item.error.empty());
      others.push_back(item);
      continue;
    }
    ++rejected;
    CHECK(item.preemptor == bad);
    CHECK(item.error.find(reason) != std::string::npos);
    CHECK(item.plan.status == PlanStatus::infeasible);
    CHECK(item.plan.explanation.find(reason) != std::string::npos);
  }
  CHECK(rejected == 1);
  CHECK(result.count(NominationStatus::rejected) == 1);
  if (bad != WorkloadId{100}) CHECK(nominations.find(bad) == nullptr);
  return others;
}

void check_same_plans(const std::vector<QueuedPlan>& got, const QueueResult& expected) {
  REQUIRE(got.size() == expected.plans.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].preemptor == expected.plans[i].preemptor);
    CHECK(got[i].status == expected.plans[i].status);
    CHECK(got[i].plan == expected.plans[i].plan);
  }
}

}  // namespace

TEST_CASE("one bad preemptor is rejected on its own; the rest of the queue is planned") {
  // Issue 19: one bad preemptor used to make plan_queue throw for the whole queue.
  const cost::priority_weighted model;
  const solvers::branch_and_bound_solver solver;
  Allocation state = four_nodes();
  const std::vector<Workload> pending{whole_node(100, 10), whole_node(101, 20),
                                      test::gpu_job(102, 5, 2)};
  Nominations clean;
  const QueueResult expected = plan_queue(state, pending, solver, model, clean);
  REQUIRE(expected.count(NominationStatus::rejected) == 0);
  const auto before = test::state_fingerprint(state, {0, 5, 10, 20, 50});

  const auto run_with = [&](const Workload& bad, std::string_view reason) {
    CAPTURE(bad.label());
    std::vector<Workload> queue = pending;
    queue.insert(queue.begin() + 1, bad);
    Nominations nominations;
    const QueueResult result = plan_queue(state, queue, solver, model, nominations);
    CHECK(result.plans.size() == queue.size());
    check_same_plans(others_after_rejecting(result, bad.id, reason, nominations), expected);
    CHECK(nominations.size() == clean.size());
    CHECK(test::state_fingerprint(state, {0, 5, 10, 20, 50}) == before);
    // The others' plans still land, in result order.
    Allocation copy = state;
    commit_all(copy, queue, result, model);
  };
  SUBCASE("already running") { run_with(whole_node(1, 50), "already running"); }
  SUBCASE("listed twice: the later listing is rejected") {
    Workload again = whole_node(100, 10);
    run_with(again, "more than once");
  }
  SUBCASE("a level the topology lacks") {
    run_with(test::gpu_job(103, 30, 1, 1, TopologyRequirement::guaranteed("galaxy")), "galaxy");
  }
  SUBCASE("a nomination naming domains outside the topology") {
    Nominations nominations = clean;
    PreemptionPlan broken = *clean.find(WorkloadId{101});
    broken.dependencies.push_back({DomainId{1000000}, 0});
    nominations.remember(pending[1], broken);
    const QueueResult result = plan_queue(state, pending, solver, model, nominations);
    REQUIRE(result.plans.size() == 3);
    CHECK(result.plans[0].preemptor == WorkloadId{101});
    CHECK(result.plans[0].status == NominationStatus::rejected);
    CHECK_FALSE(result.plans[0].error.empty());
    CHECK(nominations.find(WorkloadId{101}) == nullptr);
    CHECK(result.count(NominationStatus::rejected) == 1);
    CHECK(test::state_fingerprint(state, {0, 5, 10, 20, 50}) == before);
  }
}

}  // namespace topopreempt
