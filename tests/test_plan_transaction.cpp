// SPDX-License-Identifier: MIT
// Plans as transactions: every solver records its dependencies, `commit` applies a plan all or
// nothing, and concurrent planners on copies commit to one shared state safely.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <latch>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "state_fingerprint.hpp"
#include "support.hpp"
#include "topopreempt/model/allocation.hpp"
#include "topopreempt/baselines/exhaustive_subsets.hpp"
#include "topopreempt/baselines/kube_default.hpp"
#include "topopreempt/model/cluster_generator.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/plan/transaction.hpp"
#include "topopreempt/plan/verifier.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/greedy.hpp"
#include "topopreempt/solvers/knapsack.hpp"
#include "transaction_support.hpp"

namespace topopreempt {
using test::all_versions;
using test::four_nodes;
using test::host_of;

namespace {

Workload whole_node_preemptor(std::uint64_t id) { return test::whole_node(id, 10); }

}  // namespace

TEST_CASE_TEMPLATE("every solver records its preemptor and dependencies", Solver,
                   solvers::greedy_solver, solvers::knapsack_solver,
                   solvers::branch_and_bound_solver, baselines::kube_default_solver,
                   baselines::exhaustive_subsets_solver) {
  Allocation state = four_nodes();
  const Workload preemptor = whole_node_preemptor(100);
  const PreemptionPlan plan = Solver{}.solve(state, preemptor, cost::priority_weighted{});
  REQUIRE(plan.has_victims_plan());
  CHECK(plan.preemptor == preemptor.id);
  // The victim's host, which is also where the preemptor lands.
  REQUIRE(plan.victims.size() == 1);
  const DomainId host = host_of(state, plan.victims.front().id);
  CHECK(plan.dependencies == std::vector<DomainVersion>{{host, state.domain_version(host)}});
  CHECK(plan_is_current(state, plan));

  SUBCASE("an infeasible plan depends on nothing") {
    Workload huge = whole_node_preemptor(101);
    huge.replicas = 5;
    const PreemptionPlan none = Solver{}.solve(state, huge, cost::priority_weighted{});
    CHECK(none.status == PlanStatus::infeasible);
    CHECK(none.preemptor == huge.id);
    CHECK(none.dependencies.empty());
  }
  SUBCASE("a plan without victims depends on where the preemptor lands") {
    state.remove(WorkloadId{6});
    const PreemptionPlan fits = Solver{}.solve(state, preemptor, cost::priority_weighted{});
    REQUIRE(fits.status == PlanStatus::no_preemption_needed);
    const DomainId landing = state.topology().ancestor_at(
        fits.placement.replicas.front().entries.front().domain, state.topology().host_level());
    CHECK(fits.dependencies ==
          std::vector<DomainVersion>{{landing, state.domain_version(landing)}});
  }
}

TEST_CASE("commit applies a current plan: victims gone, preemptor running") {
  Allocation state = four_nodes();
  const Workload preemptor = whole_node_preemptor(100);
  const cost::priority_weighted model;
  const PreemptionPlan plan = solvers::greedy_solver{}.solve(state, preemptor, model);
  REQUIRE(plan.has_victims_plan());
  const Allocation before = state;

  SUBCASE("on the state it was made on") {
    const CommitResult result = commit(state, plan, preemptor);
    CHECK(result.committed);
    CHECK(result.moved.empty());
  }
  SUBCASE("after a change elsewhere in the cluster") {
    state.remove(WorkloadId{2});  // node1: no dependency of the plan
    const CommitResult result = commit(state, plan, preemptor);
    CHECK(result.committed);
  }
  CHECK(verify_plan(before, preemptor, plan, model).ok);
  CHECK(state.contains(preemptor.id));
  CHECK(state.placement(preemptor.id) == plan.placement);
  for (const Victim& victim : plan.victims) CHECK_FALSE(state.contains(victim.id));
}

TEST_CASE("commit shrinks elastic victims as the plan describes") {
  Allocation state(test::shared(shapes::cluster(shapes::dense_8gpu_server(), 1, 1)));
  Workload elastic = test::gpu_job(1, 1, 2, 4, TopologyRequirement::guaranteed("node"));
  elastic.min_replicas = 1;
  test::start(state, elastic);
  const Workload preemptor = test::gpu_job(100, 10, 2);
  const PreemptionPlan plan =
      solvers::branch_and_bound_solver{}.solve(state, preemptor, cost::priority_weighted{});
  REQUIRE(plan.victims.size() == 1);
  REQUIRE(plan.victims.front().action == VictimAction::shrink);
  REQUIRE(plan.victims.front().dropped_replicas.size() == 1);
  REQUIRE(commit(state, plan, preemptor).committed);
  CHECK(state.workload(WorkloadId{1}).replicas == 3);
  CHECK(state.contains(preemptor.id));
}

TEST_CASE("commit reports a conflict with the moved domains and changes nothing") {
  Allocation state = four_nodes();
  const Workload preemptor = whole_node_preemptor(100);
  const PreemptionPlan plan =
      solvers::knapsack_solver{}.solve(state, preemptor, cost::priority_weighted{});
  REQUIRE(plan.has_victims_plan());
  REQUIRE(plan.victims.front().id == WorkloadId{1});
  const DomainId node0 = host_of(state, WorkloadId{1});

  SUBCASE("the victim left on its own") { state.remove(WorkloadId{1}); }
  SUBCASE("a newcomer took room on the target node") {
    state.remove(WorkloadId{1});
    test::start(state, test::gpu_job(5, 1, 8, 1, TopologyRequirement::guaranteed("node")));
    REQUIRE(host_of(state, WorkloadId{5}) == node0);
  }
  const auto versions = all_versions(state);
  const auto ids = state.workload_ids();
  const CommitResult result = commit(state, plan, preemptor);
  CHECK_FALSE(result.committed);
  CHECK_FALSE(static_cast<bool>(result));
  CHECK(result.moved == std::vector<DomainId>{node0});
  CHECK(moved_dependencies(state, plan) == std::vector<DomainId>{node0});
  CHECK(all_versions(state) == versions);
  CHECK(state.workload_ids() == ids);
}

TEST_CASE("commit rejects what cannot be committed, state unchanged") {
  Allocation state = four_nodes();
  const Workload preemptor = whole_node_preemptor(100);
  const cost::priority_weighted model;
  PreemptionPlan plan = solvers::greedy_solver{}.solve(state, preemptor, model);
  REQUIRE(plan.has_victims_plan());
  const auto versions = all_versions(state);
  const auto rejected_with = [&](const PreemptionPlan& bad, const Workload& who,
                                 const char* message) {
    CHECK_THROWS_WITH_AS(static_cast<void>(commit(state, bad, who)), doctest::Contains(message),
                         std::invalid_argument);
    CHECK(all_versions(state) == versions);
  };

  SUBCASE("an infeasible plan") {
    Workload huge = whole_node_preemptor(101);
    huge.replicas = 5;
    const PreemptionPlan none = solvers::greedy_solver{}.solve(state, huge, model);
    REQUIRE(none.status == PlanStatus::infeasible);
    rejected_with(none, huge, "it is infeasible");
  }
  SUBCASE("another preemptor") {
    rejected_with(plan, whole_node_preemptor(101), "made for another preemptor");
  }
  SUBCASE("a preemptor already running") {
    state.remove(WorkloadId{6});
    test::start(state, preemptor);  // on node3, now free
    const auto running = all_versions(state);
    CHECK_THROWS_WITH_AS(static_cast<void>(commit(state, plan, preemptor)),
                         doctest::Contains("already running"), std::invalid_argument);
    CHECK(all_versions(state) == running);
  }
  SUBCASE("a plan without dependencies") {
    plan.dependencies.clear();
    rejected_with(plan, preemptor, "records no dependencies");
  }
  SUBCASE("a dependency outside the topology") {
    plan.dependencies.push_back({DomainId{1000000}, 0});
    rejected_with(plan, preemptor, "not in the state's topology");
  }
  SUBCASE("a victim the preemptor may not preempt") {
    Workload humble = preemptor;
    humble.priority = 1;
    rejected_with(plan, humble, "may not be preempted");
  }
  SUBCASE("a plan inconsistent with the state it claims to be current on") {
    plan.placement.replicas.front().entries.pop_back();  // no longer the preemptor's demand
    CHECK_THROWS_AS(static_cast<void>(commit(state, plan, preemptor)), std::invalid_argument);
    CHECK(all_versions(state) == versions);
    CHECK(state.contains(WorkloadId{1}));  // the victim evicted on the way came back
  }
}

TEST_CASE("a preemptor demanding nothing: its plan depends on no domain and commits") {
  // Found by the snapshot fuzzer: such a plan places no entry and evicts nobody, so a solver
  // records no dependencies for it, and commit used to refuse it as hand-made.
  Allocation state = four_nodes();
  Workload idle{
      .id = WorkloadId{200}, .priority = 5, .replicas = 2, .demand = {.whole_devices = 0}};
  const PreemptionPlan plan = solvers::greedy_solver{}.solve(state, idle, cost::victim_count{});
  REQUIRE(plan.status == PlanStatus::no_preemption_needed);
  CHECK(plan.victims.empty());
  CHECK(plan.dependencies.empty());
  REQUIRE(commit(state, plan, idle).committed);
  CHECK(state.contains(idle.id));
  // Running now: the same plan is refused as for any running preemptor.
  CHECK_THROWS_WITH_AS(static_cast<void>(commit(state, plan, idle)),
                       doctest::Contains("already running"), std::invalid_argument);
}

TEST_CASE("two planners on copies commit to one shared state: exactly the non-conflicting land") {
  Allocation shared = four_nodes();
  std::mutex shared_mutex;
  const cost::priority_weighted model;
  // Both whole-node preemptors want node0 (the cheapest victim); the third fits on node3.
  const std::vector<Workload> preemptors{whole_node_preemptor(100), whole_node_preemptor(101),
                                         test::gpu_job(102, 10, 4)};
  struct Outcome {
    PreemptionPlan plan;
    std::optional<Allocation> state_before;  // the shared state as the commit found it
    CommitResult result;
    std::vector<std::uint64_t> versions_before;
    std::vector<std::uint64_t> versions_after;
  };
  std::vector<Outcome> outcomes(preemptors.size());
  std::latch all_planned(static_cast<std::ptrdiff_t>(preemptors.size()));
  {
    std::vector<std::jthread> planners;
    for (std::size_t i = 0; i < preemptors.size(); ++i) {
      planners.emplace_back([&, i] {
        const Allocation copy = [&] {
          const std::lock_guard lock(shared_mutex);
          return shared;
        }();
        Outcome& outcome = outcomes[i];
        outcome.plan = solvers::branch_and_bound_solver{}.solve(copy, preemptors[i], model);
        all_planned.arrive_and_wait();  // every plan is made on the same, unchanged state
        const std::lock_guard lock(shared_mutex);
        outcome.state_before.emplace(shared);
        outcome.versions_before = all_versions(shared);
        outcome.result = commit(shared, outcome.plan, preemptors[i]);
        outcome.versions_after = all_versions(shared);
      });
    }
  }
  const Allocation initial = four_nodes();
  const DomainId node0 = host_of(initial, WorkloadId{1});
  REQUIRE(outcomes[0].plan.victims.size() == 1);
  REQUIRE(outcomes[1].plan.victims.size() == 1);
  CHECK(outcomes[0].plan.victims.front().id == WorkloadId{1});
  CHECK(outcomes[1].plan.victims.front().id == WorkloadId{1});
  CHECK(outcomes[2].plan.status == PlanStatus::no_preemption_needed);
  CHECK(outcomes[0].result.committed != outcomes[1].result.committed);
  CHECK(outcomes[2].result.committed);
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const Outcome& outcome = outcomes[i];
    CAPTURE(i);
    if (outcome.result.committed) {
      CHECK(verify_plan(*outcome.state_before, preemptors[i], outcome.plan, model).ok);
      CHECK(shared.contains(preemptors[i].id));
    } else {
      CHECK(outcome.result.moved == std::vector<DomainId>{node0});
      CHECK(outcome.versions_after == outcome.versions_before);
      CHECK_FALSE(shared.contains(preemptors[i].id));
    }
  }
  CHECK_FALSE(shared.contains(WorkloadId{1}));
  CHECK(shared.contains(WorkloadId{2}));
  CHECK(shared.contains(WorkloadId{3}));

  // The loser plans again on the state as it now stands and lands on node1.
  const std::size_t loser = outcomes[0].result.committed ? 1 : 0;
  const PreemptionPlan again =
      solvers::branch_and_bound_solver{}.solve(shared, preemptors[loser], model);
  REQUIRE(again.has_victims_plan());
  CHECK(again.victims.front().id == WorkloadId{2});
  const Allocation before_retry = shared;
  CHECK(commit(shared, again, preemptors[loser]).committed);
  CHECK(verify_plan(before_retry, preemptors[loser], again, model).ok);
}

}  // namespace topopreempt

namespace topopreempt {
namespace {

/// The transaction tests' fingerprint: the index at a spread of priorities.
std::vector<std::string> observable(const Allocation& state) {
  return test::state_fingerprint(state, {1, 100, 500, 1000});
}

TEST_CASE("commit in place ends exactly where replaying remove / shrink / add on a copy ends") {
  std::uint64_t compared = 0;
  std::uint64_t with_shrinks = 0;
  for (const std::uint64_t seed : {1U, 2U, 3U, 4U}) {
    ClusterSpec spec;
    spec.nodes = 12;
    spec.nodes_per_rack = 4;
    spec.seed = seed;
    spec.elastic_fraction = 0.5;
    GeneratedCluster cluster = generate_cluster(spec);
    Allocation replayed = cluster.state;  // the twin every plan is replayed on
    std::uint64_t next_id = 1'000'000;
    for (const PreemptorSpec& kind : std::vector<PreemptorSpec>{{PreemptorKind::node, 8},
                                                                {PreemptorKind::socket, 4},
                                                                {PreemptorKind::nvlink_island, 4},
                                                                {PreemptorKind::rack_gang, 16, 2},
                                                                {PreemptorKind::numa, 1}}) {
      Workload preemptor = make_preemptor(kind);
      preemptor.id = WorkloadId{next_id++};
      const PreemptionPlan plan =
          solvers::greedy.solve(cluster.state, preemptor, cost::priority_weighted{});
      if (plan.status == PlanStatus::infeasible) continue;
      INFO("seed ", seed, " ", preemptor.label(), " ", plan.victims.size(), " victims");
      detail::transaction::apply(replayed, plan, preemptor);
      REQUIRE(commit(cluster.state, plan, preemptor).committed);
      CHECK(observable(cluster.state) == observable(replayed));
      // Later adds reuse the freed slots: they must land alike too.
      const std::vector<WorkloadId> ids = replayed.workload_ids();
      for (std::size_t i = 0; i < 3 && i < ids.size(); ++i) {
        const Workload moved = replayed.workload(ids[i]);
        const Placement where = replayed.placement(ids[i]);
        for (Allocation* state : {&replayed, &cluster.state}) state->remove(ids[i]);
        for (Allocation* state : {&replayed, &cluster.state}) state->add(moved, where);
      }
      CHECK(observable(cluster.state) == observable(replayed));
      ++compared;
      with_shrinks += std::any_of(plan.victims.begin(), plan.victims.end(),
                                  [](const Victim& v) { return v.action == VictimAction::shrink; });
    }
  }
  CHECK(compared >= 12);
  CHECK(with_shrinks >= 1);
}

TEST_CASE("preempt_and_start refuses a bad batch before changing anything") {
  Allocation state = test::four_nodes();
  const std::vector<std::string> before = observable(state);
  const Workload preemptor = test::whole_node(50, 10);
  const PreemptionPlan plan =
      solvers::branch_and_bound.solve(state, preemptor, cost::victim_count{});
  REQUIRE(plan.victims.size() == 1);
  const std::array<Allocation::VictimChange, 1> victim{{{plan.victims[0].id, true, {}}}};
  SUBCASE("a victim that is not running") {
    const std::array<Allocation::VictimChange, 1> unknown{{{WorkloadId{999}, true, {}}}};
    CHECK_THROWS_AS(state.preempt_and_start(unknown, preemptor, plan.placement), std::out_of_range);
  }
  SUBCASE("a victim named twice") {
    const std::array<Allocation::VictimChange, 2> twice{{victim[0], victim[0]}};
    CHECK_THROWS_WITH_AS(state.preempt_and_start(twice, preemptor, plan.placement),
                         doctest::Contains("named twice"), std::out_of_range);
  }
  SUBCASE("a shrink of a workload that is not elastic") {
    const std::array<std::int32_t, 1> first{0};
    const std::array<Allocation::VictimChange, 1> shrink{{{plan.victims[0].id, false, first}}};
    CHECK_THROWS_WITH_AS(state.preempt_and_start(shrink, preemptor, plan.placement),
                         doctest::Contains("not elastic"), std::invalid_argument);
  }
  SUBCASE("a start that over-commits even after the victims left") {
    // The placement is where the victim ran; without evicting it, the node is full.
    CHECK_THROWS_WITH_AS(state.preempt_and_start({}, preemptor, plan.placement),
                         doctest::Contains("over-commits"), std::invalid_argument);
  }
  SUBCASE("the preemptor is already running") {
    Workload running = state.workload(WorkloadId{3});
    CHECK_THROWS_WITH_AS(state.preempt_and_start(victim, running, plan.placement),
                         doctest::Contains("already running"), std::invalid_argument);
  }
  CHECK(observable(state) == before);
  SUBCASE("a good batch lands") {
    state.preempt_and_start(victim, preemptor, plan.placement);
    CHECK(state.contains(preemptor.id));
    CHECK(!state.contains(plan.victims[0].id));
  }
}

}  // namespace
}  // namespace topopreempt
