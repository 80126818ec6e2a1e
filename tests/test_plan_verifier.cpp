// SPDX-License-Identifier: MIT
// The plan verifier: hand-built good plans pass, and every kind of bad plan is caught with a
// message naming the workload or domain at fault.
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/plan/verifier.hpp"
#include "support.hpp"

using namespace topopreempt;
using namespace topopreempt::test;

namespace {




/// A victim as a plan lists it, priced later by `hand_plan`.
struct Choice {
  std::uint64_t id;
  std::vector<std::int32_t> dropped;  // empty = evict
};

/// Builds the plan a correct solver would return for exactly these victims: prices them with
/// `model`, removes them from a copy and lets the placement search place the preemptor. No
/// eligibility is checked here, so bad victim sets make bad plans for the verifier to catch.
template <CostModel Model>
PreemptionPlan hand_plan(const Allocation& state, const Workload& preemptor,
                         const std::vector<Choice>& choices, const Model& model) {
  PreemptionPlan plan;
  plan.solver = "hand";
  plan.status = choices.empty() ? PlanStatus::no_preemption_needed : PlanStatus::optimal;
  Allocation after = state;
  for (const Choice& choice : choices) {
    Victim victim;
    victim.id = WorkloadId{choice.id};
    const Workload& running = state.workload(victim.id);
    if (choice.dropped.empty()) {
      victim.cost = model.evict(running);
      after.remove(victim.id);
    } else {
      victim.action = VictimAction::shrink;
      victim.dropped_replicas = choice.dropped;
      victim.cost = model.shrink(running, static_cast<std::int32_t>(choice.dropped.size()));
      after.shrink(victim.id, choice.dropped);
    }
    plan.cost += victim.cost;
    plan.victims.push_back(std::move(victim));
  }
  plan.lower_bound = plan.cost;
  const auto found = find_placement(after, preemptor);
  REQUIRE_MESSAGE(found.found, "hand plan does not place " << preemptor.label());
  plan.placement = found.placement;
  plan.target_domain = found.gang_domain;
  plan.gang_level = found.gang_level;
  plan.replica_level = found.replica_level;
  plan.explanation = "hand-built";
  return plan;
}

/// One replica holding the given GPUs (by ordinal in the topology) and its pooled CPU/memory
/// from `pool`.
ReplicaPlacement replica_on(const Topology& topology, const std::vector<std::size_t>& gpus,
                            DomainId pool, Amount cpu_milli, Amount memory_mib) {
  ReplicaPlacement replica;
  const auto devices = topology.domains_at(topology.device_level());
  for (std::size_t g : gpus)
    replica.entries.push_back({devices[g], topology.local_capacity(devices[g])});
  replica.entries.push_back(
      {pool, topology.schema().make({{"cpu_milli", cpu_milli}, {"memory_mib", memory_mib}})});
  return replica;
}

bool mentions(const PlanVerdict& verdict, const std::string& text) {
  for (const auto& violation : verdict.violations) {
    if (violation.find(text) != std::string::npos) return true;
  }
  return false;
}

/// One HGX H100 node, full: job1 (prio 1, 4 GPUs, socket0), job2 (prio 2, 2 GPUs), job3
/// (prio 50, 1 GPU), job4 (prio 3, not preemptible, 1 GPU); the last three share socket1.
Allocation full_hgx() {
  Allocation state(shared(shapes::single_machine(shapes::hgx_h100())));
  start(state, gpu_job(1, 1, 4, 1, TopologyRequirement::guaranteed("socket")));
  start(state, gpu_job(2, 2, 2));
  start(state, gpu_job(3, 50, 1));
  Workload locked = gpu_job(4, 3, 1);
  locked.preemptible = false;
  start(state, locked);
  REQUIRE(state.idle_devices(Topology::root()) == 0);
  return state;
}

/// The preemptor of most cases: priority 10, 4 GPUs in one socket.
Workload socket_preemptor() {
  return gpu_job(100, 10, 4, 1, TopologyRequirement::guaranteed("socket"));
}

}  // namespace

TEST_SUITE("plan_verifier") {
  TEST_CASE("good hand-built plans pass") {
    const Allocation state = full_hgx();
    const Workload preemptor = socket_preemptor();
    const cost::victim_count count;

    SUBCASE("one eviction") {
      const PreemptionPlan plan = hand_plan(state, preemptor, {{1, {}}}, count);
      const PlanVerdict verdict = verify_plan(state, preemptor, plan, count);
      CHECK_MESSAGE(verdict.ok, verdict.summary());
      CHECK(verdict.topology_ok);
      CHECK(verdict.summary() == "plan ok");
    }
    SUBCASE("feasible with a weaker bound, priority-weighted") {
      const cost::priority_weighted weighted;
      PreemptionPlan plan = hand_plan(state, preemptor, {{1, {}}}, weighted);
      plan.status = PlanStatus::feasible;
      plan.lower_bound = 0.5 * plan.cost;
      const PlanVerdict verdict = verify_plan(state, preemptor, plan, weighted);
      CHECK_MESSAGE(verdict.ok, verdict.summary());
    }
    SUBCASE("no preemption needed") {
      Allocation room = state;
      room.remove(WorkloadId{2});
      const Workload small = gpu_job(101, 10, 2, 1, TopologyRequirement::guaranteed("socket"));
      const PreemptionPlan plan = hand_plan(room, small, {}, count);
      const PlanVerdict verdict = verify_plan(room, small, plan, count);
      CHECK_MESSAGE(verdict.ok, verdict.summary());
    }
    SUBCASE("a PCIe-switch replica drawing CPUs from the NUMA node above") {
      Allocation room = state;
      room.remove(WorkloadId{2});
      const Workload island =
          gpu_job(101, 10, 2, 1, TopologyRequirement::guaranteed("pcie_switch"));
      const PreemptionPlan plan = hand_plan(room, island, {}, count);
      const PlanVerdict verdict = verify_plan(room, island, plan, count);
      CHECK_MESSAGE(verdict.ok, verdict.summary());
      CHECK(room.topology().levels()[plan.replica_level] == "pcie_switch");
    }
    SUBCASE("infeasible with an explanation") {
      // 8 GPUs in one node would need job3 (higher priority) and job4 (not preemptible) gone.
      const Workload whole_node = gpu_job(102, 10, 8, 1, TopologyRequirement::guaranteed("node"));
      PreemptionPlan plan;
      plan.status = PlanStatus::infeasible;
      plan.explanation = "node node0: job3 has priority 50, job4 is not preemptible";
      const PlanVerdict verdict = verify_plan(state, whole_node, plan, count);
      CHECK_MESSAGE(verdict.ok, verdict.summary());
    }
    SUBCASE("a gang victim is evicted whole, freeing its replicas on every node") {
      Allocation racks(shared(shapes::cluster(shapes::hgx_h100(), 2, 2)));
      start(racks, gpu_job(1, 1, 8, 2, TopologyRequirement::guaranteed("node")));
      const Workload big = gpu_job(100, 10, 8, 2, TopologyRequirement::guaranteed("node"),
                                   TopologyRequirement::guaranteed("rack"));
      const PreemptionPlan plan = hand_plan(racks, big, {{1, {}}}, count);
      const PlanVerdict verdict = verify_plan(racks, big, plan, count);
      CHECK_MESSAGE(verdict.ok, verdict.summary());
    }
  }

  TEST_CASE("victims must be eligible, running, listed once and sorted") {
    const Allocation state = full_hgx();
    const Workload preemptor = socket_preemptor();
    const cost::victim_count count;

    SUBCASE("higher priority and non-preemptible victims") {
      const PreemptionPlan plan = hand_plan(state, preemptor, {{2, {}}, {3, {}}, {4, {}}}, count);
      const PlanVerdict verdict = verify_plan(state, preemptor, plan, count);
      CHECK_FALSE(verdict.ok);
      CHECK_MESSAGE(mentions(verdict, "workload 3 'job3' has priority 50"), verdict.summary());
      CHECK_MESSAGE(mentions(verdict, "workload 4 'job4' is not preemptible"), verdict.summary());
      CHECK_FALSE(mentions(verdict, "workload 2 "));
    }
    SUBCASE("equal priority is not lower") {
      Workload equal = preemptor;
      equal.priority = 1;
      const PreemptionPlan plan = hand_plan(state, equal, {{1, {}}}, count);
      const PlanVerdict verdict = verify_plan(state, equal, plan, count);
      CHECK_MESSAGE(mentions(verdict, "workload 1 'job1' has priority 1"), verdict.summary());
    }
    SUBCASE("victim not running") {
      PreemptionPlan plan = hand_plan(state, preemptor, {{1, {}}}, count);
      plan.victims.push_back(Victim{WorkloadId{99}, VictimAction::evict, {}, 0.0, ""});
      const PlanVerdict verdict = verify_plan(state, preemptor, plan, count);
      CHECK_MESSAGE(mentions(verdict, "victim workload 99 is not running"), verdict.summary());
    }
    SUBCASE("duplicate victim") {
      PreemptionPlan plan = hand_plan(state, preemptor, {{1, {}}}, count);
      plan.victims.push_back(plan.victims.front());
      plan.cost = plan.lower_bound = 2.0;
      const PlanVerdict verdict = verify_plan(state, preemptor, plan, count);
      CHECK_MESSAGE(mentions(verdict, "victim workload 1 is listed more than once"),
                    verdict.summary());
    }
    SUBCASE("victims out of order") {
      PreemptionPlan plan = hand_plan(state, preemptor, {{1, {}}, {2, {}}}, count);
      std::swap(plan.victims[0], plan.victims[1]);
      const PlanVerdict verdict = verify_plan(state, preemptor, plan, count);
      CHECK_MESSAGE(mentions(verdict, "victim workload 1 is out of order"), verdict.summary());
    }
    SUBCASE("an eviction lists dropped replicas; a shrink of a non-elastic workload") {
      PreemptionPlan plan = hand_plan(state, preemptor, {{1, {}}}, count);
      plan.victims[0].dropped_replicas = {0};
      PlanVerdict verdict = verify_plan(state, preemptor, plan, count);
      CHECK_MESSAGE(mentions(verdict, "'job1' is evicted but lists 1 dropped replica"),
                    verdict.summary());
      plan.victims[0].action = VictimAction::shrink;
      verdict = verify_plan(state, preemptor, plan, count);
      CHECK_MESSAGE(mentions(verdict, "'job1' is shrunk but is not elastic"), verdict.summary());
    }
  }

  TEST_CASE("elastic victims: good shrink passes, shrink below the minimum is caught") {
    Allocation state(shared(shapes::single_machine(shapes::hgx_h100())));
    Workload elastic = gpu_job(1, 1, 2, 3);
    elastic.min_replicas = 2;
    start(state, elastic);
    start(state, gpu_job(2, 1, 2));
    const Workload preemptor = gpu_job(100, 10, 2, 1, TopologyRequirement::guaranteed("socket"));
    const cost::lost_work lost;

    const PreemptionPlan good = hand_plan(state, preemptor, {{1, {1}}}, lost);
    const PlanVerdict ok = verify_plan(state, preemptor, good, lost);
    CHECK_MESSAGE(ok.ok, ok.summary());

    PreemptionPlan too_far = good;
    too_far.victims[0].dropped_replicas = {0, 2};
    too_far.victims[0].cost = too_far.cost = too_far.lower_bound = lost.shrink(elastic, 2);
    const PlanVerdict below = verify_plan(state, preemptor, too_far, lost);
    CHECK_MESSAGE(mentions(below, "minimum 2"), below.summary());

    PreemptionPlan repeated = good;
    repeated.victims[0].dropped_replicas = {1, 1};
    repeated.victims[0].cost = repeated.cost = repeated.lower_bound = lost.shrink(elastic, 2);
    CHECK(mentions(verify_plan(state, preemptor, repeated, lost), "out of range or repeated"));

    PreemptionPlan out_of_range = good;
    out_of_range.victims[0].dropped_replicas = {3};
    CHECK(mentions(verify_plan(state, preemptor, out_of_range, lost), "replica index 3"));

    PreemptionPlan nothing = good;
    nothing.victims[0].dropped_replicas.clear();
    CHECK(mentions(verify_plan(state, preemptor, nothing, lost), "shrunk by zero replicas"));
  }

  TEST_CASE("costs must match the cost model") {
    const Allocation state = full_hgx();
    const Workload preemptor = socket_preemptor();
    const cost::victim_count count;

    SUBCASE("a victim priced wrong") {
      PreemptionPlan plan = hand_plan(state, preemptor, {{1, {}}}, count);
      plan.victims[0].cost = plan.cost = plan.lower_bound = 2.0;
      const PlanVerdict verdict = verify_plan(state, preemptor, plan, count);
      CHECK_MESSAGE(
          mentions(verdict, "'job1' costs 2 in the plan but 1 under cost model victim_count"),
          verdict.summary());
    }
    SUBCASE("a total that is not the sum") {
      PreemptionPlan plan = hand_plan(state, preemptor, {{1, {}}}, count);
      plan.cost = plan.lower_bound = 0.0;
      const PlanVerdict verdict = verify_plan(state, preemptor, plan, count);
      CHECK_MESSAGE(mentions(verdict, "is not the sum of its victims' costs"), verdict.summary());
    }
    SUBCASE("a plan priced under another model") {
      const PreemptionPlan plan = hand_plan(state, preemptor, {{1, {}}}, cost::priority_weighted{});
      CHECK_FALSE(verify_plan(state, preemptor, plan, count).ok);
    }
    SUBCASE("costs compare exactly; a tolerance is opt-in") {
      // One priority step under the default offset 2^31 is 5e-10 of a cost: a relative
      // tolerance of 1e-9 would accept a plan priced one priority too low (issue 19).
      const cost::priority_weighted weighted;
      PreemptionPlan plan = hand_plan(state, preemptor, {{1, {}}}, weighted);
      plan.cost -= 1.0;
      plan.lower_bound = plan.cost;
      CHECK_FALSE(verify_plan(state, preemptor, plan, weighted).ok);
      plan = hand_plan(state, preemptor, {{1, {}}}, weighted);
      plan.cost *= 1.0 + 1e-13;
      plan.lower_bound = plan.cost;
      CHECK_FALSE(verify_plan(state, preemptor, plan, weighted).ok);
      VerifyOptions lenient;
      lenient.tolerance = 1e-9;
      const PlanVerdict verdict = verify_plan(state, preemptor, plan, weighted, lenient);
      CHECK_MESSAGE(verdict.ok, verdict.summary());
    }
    SUBCASE("a cost model that refuses the victim") {
      const cost::kubernetes_order unregistered({7});
      const PreemptionPlan plan = hand_plan(state, preemptor, {{1, {}}}, count);
      const PlanVerdict verdict = verify_plan(state, preemptor, plan, unregistered);
      CHECK_MESSAGE(mentions(verdict, "priority 1 of workload 1 'job1' was not registered"),
                    verdict.summary());
    }
  }

  TEST_CASE("status rules") {
    const Allocation state = full_hgx();
    const Workload preemptor = socket_preemptor();
    const cost::victim_count count;
    const PreemptionPlan good = hand_plan(state, preemptor, {{1, {}}}, count);

    SUBCASE("optimal with a gap") {
      PreemptionPlan plan = good;
      plan.lower_bound = 0.0;
      CHECK(
          mentions(verify_plan(state, preemptor, plan, count), "status optimal but lower bound 0"));
    }
    SUBCASE("a bound above the cost") {
      PreemptionPlan plan = good;
      plan.status = PlanStatus::feasible;
      plan.lower_bound = 3.0;
      CHECK(mentions(verify_plan(state, preemptor, plan, count), "exceeds cost"));
    }
    SUBCASE("no_preemption_needed with victims") {
      PreemptionPlan plan = good;
      plan.status = PlanStatus::no_preemption_needed;
      CHECK(mentions(verify_plan(state, preemptor, plan, count),
                     "no_preemption_needed but the plan has 1"));
    }
    SUBCASE("no_preemption_needed whose placement does not fit the untouched state") {
      PreemptionPlan plan = good;
      plan.status = PlanStatus::no_preemption_needed;
      plan.victims.clear();
      plan.cost = plan.lower_bound = 0.0;
      const PlanVerdict verdict = verify_plan(state, preemptor, plan, count);
      CHECK_MESSAGE(mentions(verdict, "over-commits"), verdict.summary());
    }
    SUBCASE("infeasible with victims, a placement, and more verdicts than it counts") {
      PreemptionPlan plan = good;
      plan.status = PlanStatus::infeasible;
      plan.explanation.clear();
      plan.rejected = {DomainVerdict{.domain = DomainId{0}, .reason = {}}};
      plan.rejected_total = 0;
      const PlanVerdict verdict = verify_plan(state, preemptor, plan, count);
      CHECK(mentions(verdict, "status infeasible but the plan has 1 victim"));
      CHECK(mentions(verdict, "status infeasible but the plan has a placement"));
      CHECK(mentions(verdict, "lists 1 rejected domain(s) but counts 0"));
      CHECK(mentions(verdict, "neither a kind nor a reason"));
    }
    SUBCASE("a victim freeing nothing, or outside the target") {
      PreemptionPlan plan = good;
      REQUIRE_FALSE(plan.victims.empty());
      plan.victims.front().freed = {{.dimension = whole_devices_dimension, .amount = 0.0}};
      CHECK(mentions(verify_plan(state, preemptor, plan, count), "not a positive amount"));
      plan = good;
      const Topology& topology = state.topology();
      for (DomainId id{0}; id.value < topology.size(); ++id.value) {
        if (!topology.contains(plan.target_domain, id)) {
          plan.victims.front().freed_in = id;
          break;
        }
      }
      REQUIRE(plan.victims.front().freed_in.valid());
      CHECK(mentions(verify_plan(state, preemptor, plan, count), "outside target"));
    }
    SUBCASE("infeasible although evicting the eligible victims makes room") {
      PreemptionPlan plan;
      plan.status = PlanStatus::infeasible;
      plan.explanation = "wrongly gave up";
      const PlanVerdict verdict = verify_plan(state, preemptor, plan, count);
      CHECK_MESSAGE(mentions(verdict, "evicting every eligible victim admits workload 100"),
                    verdict.summary());
    }
    SUBCASE("feasible without victims, or without a placement") {
      PreemptionPlan plan = good;
      plan.victims.clear();
      plan.cost = plan.lower_bound = 0.0;
      CHECK(mentions(verify_plan(state, preemptor, plan, count), "without victims"));
      plan = good;
      plan.placement = {};
      CHECK(mentions(verify_plan(state, preemptor, plan, count), "without a placement"));
    }
    SUBCASE("preempting although the preemptor already fits") {
      Allocation room = state;
      room.remove(WorkloadId{2});
      const Workload small = gpu_job(101, 10, 2, 1, TopologyRequirement::guaranteed("socket"));
      const PreemptionPlan plan = hand_plan(room, small, {{1, {}}}, count);
      CHECK(mentions(verify_plan(room, small, plan, count), "fits without preemption, yet"));
    }
  }

  TEST_CASE("placement rules") {
    const Allocation state = full_hgx();
    const Topology& topology = state.topology();
    const Workload preemptor = socket_preemptor();
    const cost::victim_count count;
    const PreemptionPlan good = hand_plan(state, preemptor, {{1, {}}}, count);

    SUBCASE("over-capacity: the victim's room is not where the placement is") {
      PreemptionPlan plan = good;
      // Socket 1 (GPUs 4..7) is still held by job2, job3 and job4.
      plan.placement.replicas = {
          replica_on(topology, {4, 5, 6, 7}, *topology.find("node0/socket1/numa1"), 8000, 32768)};
      plan.target_domain = *topology.find("node0/socket1");
      const PlanVerdict verdict = verify_plan(state, preemptor, plan, count);
      CHECK_MESSAGE(mentions(verdict, "over-commits gpu node0/socket1/numa1/pcie2/gpu4"),
                    verdict.summary());
    }
    SUBCASE("broken guaranteed replica scope") {
      const PreemptionPlan two = hand_plan(state, preemptor, {{1, {}}, {2, {}}}, count);
      PreemptionPlan plan = two;
      // GPUs 2, 3 (socket 0) and 4, 5 (socket 1, job2's): one replica across sockets.
      plan.placement.replicas = {
          replica_on(topology, {2, 3, 4, 5}, *topology.find("node0/socket0/numa0"), 8000, 32768)};
      plan.target_domain = *topology.find("node0");
      plan.gang_level = plan.replica_level = topology.level_index("node");
      const PlanVerdict verdict = verify_plan(state, preemptor, plan, count);
      CHECK_MESSAGE(mentions(verdict, "breaks its guaranteed replica scope 'socket'"),
                    verdict.summary());
      CHECK_FALSE(verdict.topology_ok);

      SUBCASE("a topology-blind baseline is judged with relaxed scopes") {
        plan.topology_satisfied = false;
        const PlanVerdict blind =
            verify_plan(state, preemptor, plan, count, {.require_topology = false});
        CHECK_MESSAGE(blind.ok, blind.summary());
        CHECK_FALSE(blind.topology_ok);
        const PlanVerdict strict = verify_plan(state, preemptor, plan, count);
        CHECK(mentions(strict, "topology_satisfied = false but the topology is required"));
      }
      SUBCASE("claiming topology_satisfied while breaking the scope is caught in relaxed mode") {
        const PlanVerdict blind =
            verify_plan(state, preemptor, plan, count, {.require_topology = false});
        CHECK(mentions(blind, "says topology_satisfied = true but workload 100"));
      }
    }
    SUBCASE("broken guaranteed gang scope") {
      Allocation racks(shared(shapes::cluster(shapes::hgx_h100(), 4, 2)));
      const Workload gang = gpu_job(100, 10, 8, 2, TopologyRequirement::guaranteed("node"),
                                    TopologyRequirement::guaranteed("rack"));
      const Topology& t = racks.topology();
      PreemptionPlan plan;
      plan.status = PlanStatus::no_preemption_needed;
      // node1 (rack0) and node2 (rack1).
      plan.placement.replicas = {replica_on(t, {8, 9, 10, 11, 12, 13, 14, 15},
                                            *t.find("rack0/node1/socket0/numa0"), 16000, 65536),
                                 replica_on(t, {16, 17, 18, 19, 20, 21, 22, 23},
                                            *t.find("rack1/node2/socket0/numa0"), 16000, 65536)};
      plan.target_domain = Topology::root();
      plan.gang_level = 0;
      plan.replica_level = t.level_index("node");
      const PlanVerdict verdict = verify_plan(racks, gang, plan, count);
      CHECK_MESSAGE(mentions(verdict, "breaks its guaranteed gang scope 'rack'"),
                    verdict.summary());
      CHECK_FALSE(verdict.topology_ok);
    }
    SUBCASE("two replicas of a distinct_hosts gang on one node") {
      Allocation nodes(shared(shapes::cluster(shapes::hgx_h100(), 2, 2)));
      const Topology& t = nodes.topology();
      Workload gang = gpu_job(100, 10, 4, 2, TopologyRequirement::guaranteed("socket"));
      gang.distinct_hosts = true;
      PreemptionPlan plan;
      plan.status = PlanStatus::no_preemption_needed;
      // Both replicas on node0, one per socket: fine for capacity and scopes, not for hosts.
      plan.placement.replicas = {
          replica_on(t, {0, 1, 2, 3}, *t.find("rack0/node0/socket0/numa0"), 8000, 32768),
          replica_on(t, {4, 5, 6, 7}, *t.find("rack0/node0/socket1/numa1"), 8000, 32768)};
      plan.target_domain = *t.find("rack0/node0");
      plan.gang_level = t.level_index("node");
      plan.replica_level = t.level_index("numa");  // one NUMA node per socket on HGX
      const PlanVerdict verdict = verify_plan(nodes, gang, plan, count);
      CHECK_MESSAGE(mentions(verdict,
                             "replicas 0 and 1 both sit on node rack0/node0, but it asks "
                             "for distinct hosts"),
                    verdict.summary());
      // Allocation::add refuses it too, naming the workload (the rule is checked twice).
      CHECK_MESSAGE(mentions(verdict, "share node rack0/node0, but distinct_hosts"),
                    verdict.summary());
      // Relaxed scopes do not relax anti-affinity.
      CHECK_FALSE(verify_plan(nodes, gang, plan, count, {.require_topology = false}).ok);
      // The same plan for a gang free to share the node passes.
      gang.distinct_hosts = false;
      const PlanVerdict sharing = verify_plan(nodes, gang, plan, count);
      CHECK_MESSAGE(sharing.ok, sharing.summary());
    }
    SUBCASE("pooled amounts that do not add up") {
      PreemptionPlan plan = good;
      plan.placement.replicas[0].entries.back().amount(2) += 1000;
      CHECK(mentions(verify_plan(state, preemptor, plan, count), "holds pooled"));
    }
    SUBCASE("placement outside the target domain") {
      PreemptionPlan plan = good;
      plan.target_domain = *topology.find("node0/socket1");
      CHECK(mentions(verify_plan(state, preemptor, plan, count),
                     "outside target socket node0/socket1"));
    }
    SUBCASE("levels that do not describe the placement") {
      PreemptionPlan plan = good;
      plan.gang_level = topology.level_index("node");
      plan.replica_level = topology.level_index("gpu");
      const PlanVerdict verdict = verify_plan(state, preemptor, plan, count);
      CHECK(mentions(verdict, "plan gang_level"));
      CHECK(mentions(verdict, "plan replica_level"));
    }
    SUBCASE("an unknown domain") {
      PreemptionPlan plan = good;
      plan.placement.replicas[0].entries[0].domain = DomainId{100000};
      CHECK(mentions(verify_plan(state, preemptor, plan, count), "outside the topology"));
    }
  }

  TEST_CASE("the verifier leaves the state untouched and helpers behave") {
    const Allocation state = full_hgx();
    const auto used = state.used(Topology::root());
    const Workload preemptor = socket_preemptor();
    const PreemptionPlan plan =
        hand_plan(state, preemptor, {{1, {}}, {2, {}}}, cost::victim_count{});
    (void)verify_plan(state, preemptor, plan, cost::victim_count{});
    CHECK(state.size() == 4);
    CHECK(state.used(Topology::root()) == used);
    CHECK_FALSE(fits_without_preemption(state, preemptor));
    Allocation room = state;
    room.remove(WorkloadId{1});
    CHECK(fits_without_preemption(room, preemptor));
    PlanVerdict verdict;
    verdict.violations = {"a", "b"};
    CHECK(verdict.summary() == "2 violation(s): a; b");
  }
}
