// SPDX-License-Identifier: MIT
// The two baselines: Kubernetes' DefaultPreemption (kube_default) and the topology-aware
// preemption paper's k-subset search (exhaustive_subsets), on hand-computed scenarios.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/baselines/exhaustive_subsets.hpp"
#include "topopreempt/baselines/kube_default.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/solvers/preemption_solver.hpp"
#include "support.hpp"

using namespace topopreempt;
using topopreempt::test::shared;
using baselines::exhaustive_subsets;
using baselines::kube_default;
using baselines::SubsetRanking;

static_assert(PreemptionSolver<baselines::kube_default_solver>);
static_assert(PreemptionSolver<baselines::kube_default_solver, cost::priority_weighted>);
static_assert(PreemptionSolver<baselines::exhaustive_subsets_solver>);
static_assert(PreemptionSolver<baselines::exhaustive_subsets_solver, cost::lost_work>);
static_assert(is_baseline_v<baselines::kube_default_solver>);
static_assert(!is_exact_v<baselines::kube_default_solver>);
static_assert(!supports_limits_v<baselines::kube_default_solver>);
static_assert(is_baseline_v<baselines::exhaustive_subsets_solver>);
static_assert(is_exact_v<baselines::exhaustive_subsets_solver>);
static_assert(supports_limits_v<baselines::exhaustive_subsets_solver>);
static_assert(exhaustive_subsets.ranking(SubsetRanking::paper_score).max_victims_per_domain(5)
                  .max_victims_per_domain() == 5);

namespace {


/// `gpus` whole GPUs per replica and, optionally, CPU cores (pooled).
Workload job(std::uint64_t id, std::int32_t priority, std::int32_t gpus, std::int32_t replicas = 1,
             std::int64_t cpu_milli = 0) {
  Workload workload;
  workload.id = WorkloadId{id};
  workload.name = "job" + std::to_string(id);
  workload.priority = priority;
  workload.replicas = replicas;
  workload.demand.whole_devices = gpus;
  if (cpu_milli > 0) {
    workload.demand.resources = ResourceSchema::standard().make({{"cpu_milli", cpu_milli}});
  }
  return workload;
}

DomainId at(const Topology& topology, const std::string& path) {
  const auto found = topology.find(path);
  REQUIRE_MESSAGE(found.has_value(), path);
  return *found;
}

/// Starts `workload` wherever the placement search puts it inside `within`.
void start_in(Allocation& state, const Workload& workload, DomainId within) {
  const auto found = find_placement(state, workload, within);
  REQUIRE_MESSAGE(found.found, workload.label());
  state.add(workload, found.placement);
}

/// Starts a pure-GPU workload on exactly the given devices, `per_replica` devices per replica.
void start_on(Allocation& state, const Workload& workload, std::initializer_list<std::string> gpus) {
  const Topology& topology = state.topology();
  Placement placement;
  const auto per_replica = static_cast<std::size_t>(workload.demand.whole_devices);
  for (const auto& path : gpus) {
    if (placement.replicas.empty() || placement.replicas.back().entries.size() == per_replica) {
      placement.replicas.emplace_back();
    }
    const DomainId gpu = at(topology, path);
    placement.replicas.back().entries.push_back({gpu, topology.local_capacity(gpu)});
  }
  state.add(workload, placement);
}

std::vector<std::uint64_t> victim_ids(const PreemptionPlan& plan) {
  std::vector<std::uint64_t> ids;
  for (const Victim& victim : plan.victims) ids.push_back(victim.id.value);
  return ids;
}

/// Re-applies a plan to a copy of the state: victims removed, then the preemptor added at the
/// plan's placement (which `Allocation::add` checks against its guaranteed scopes).
void apply(Allocation state, const Workload& preemptor, const PreemptionPlan& plan) {
  for (const Victim& victim : plan.victims) state.remove(victim.id);
  state.add(preemptor, plan.placement);
}

/// The paper's server with every GPU but numa0's held by a priority-10 job that also takes 2
/// cores; numa0 holds job 20 (1 GPU + 2 cores, priority 1) and job 21 (10 cores, priority 5).
/// numa0's 12 cores are then all taken.
Allocation paper_server_state() {
  auto topology = shared(shapes::single_machine(shapes::rtx4090_server()));
  Allocation state(topology);
  for (int n = 1; n < 8; ++n) {
    Workload holder = job(static_cast<std::uint64_t>(n), 10, 1, 1, 2000);
    holder.replica_scope = TopologyRequirement::guaranteed("numa");
    start_in(state, holder, at(*topology, "node0/socket" + std::to_string(n / 4) + "/numa" +
                                              std::to_string(n)));
  }
  const DomainId numa0 = at(*topology, "node0/socket0/numa0");
  start_in(state, job(20, 1, 1, 1, 2000), numa0);
  start_in(state, job(21, 5, 0, 1, 10000), numa0);
  return state;
}

/// A guaranteed-NUMA preemptor asking for 1 GPU and 8 cores.
Workload numa_preemptor() {
  Workload preemptor = job(99, 8, 1, 1, 8000);
  preemptor.replica_scope = TopologyRequirement::guaranteed("numa");
  return preemptor;
}

/// Two HGX nodes: node0 full with job 1 (8 GPUs, priority 3); node1 with four 2-GPU jobs:
/// 11 (priority 1, start 100), 12 (priority 1, start 50), 13 (priority 2, start 0),
/// 14 (priority 2, start 10).
Allocation two_hgx_state() {
  auto topology = shared(shapes::cluster(shapes::hgx_h100(), 2, 2));
  Allocation state(topology);
  start_in(state, job(1, 3, 8), at(*topology, "rack0/node0"));
  const DomainId node1 = at(*topology, "rack0/node1");
  const std::int32_t priorities[] = {1, 1, 2, 2};
  const double starts[] = {100.0, 50.0, 0.0, 10.0};
  for (std::uint64_t i = 0; i < 4; ++i) {
    Workload w = job(11 + i, priorities[i], 2);
    w.cost.start_time_s = starts[i];
    start_in(state, w, node1);
  }
  return state;
}

/// All subsets of the eligible workloads, tried on copies of the state: the minimum cost after
/// which the preemptor has a placement anywhere (honouring its guaranteed scopes), or -1.
template <CostModel M>
double brute_force_min_cost(const Allocation& state, const Workload& preemptor, const M& model) {
  std::vector<WorkloadId> eligible;
  for (WorkloadId id : state.workload_ids()) {
    const Workload& w = state.workload(id);
    if (w.preemptible && w.priority < preemptor.priority) eligible.push_back(id);
  }
  REQUIRE(eligible.size() < 20);
  double best = -1.0;
  for (std::uint32_t mask = 0; mask < (1U << eligible.size()); ++mask) {
    double cost = 0.0;
    Allocation copy = state;
    for (std::size_t i = 0; i < eligible.size(); ++i) {
      if ((mask >> i & 1U) == 0) continue;
      cost += model.evict(copy.workload(eligible[i]));
      copy.remove(eligible[i]);
    }
    if (best >= 0.0 && cost >= best) continue;
    if (find_placement(copy, preemptor).found) best = cost;
  }
  return best;
}

/// A cost model that breaks the contract (negative prices).
struct negative_cost {
  static constexpr std::string_view name = "negative";
  [[nodiscard]] double evict(const Workload&) const { return -1.0; }
  [[nodiscard]] double shrink(const Workload&, std::int32_t) const { return -1.0; }
};

}  // namespace

TEST_SUITE("baselines") {
  TEST_CASE("kube_default picks the node with the lowest highest-victim priority, reprieving in priority order") {
    const Allocation state = two_hgx_state();
    const Topology& topology = state.topology();
    const PreemptionPlan plan = kube_default.solve(state, job(99, 9, 2), cost::victim_count{});
    CHECK(plan.status == PlanStatus::feasible);
    CHECK(plan.solver == "kube_default");
    // node1: all four removed, then 13, 14 (priority 2, earlier start first) and 12 (priority 1,
    // start 50) are reprieved; 11 (priority 1, start 100) is the one victim. node0 would need
    // job 1 of priority 3.
    CHECK(victim_ids(plan) == std::vector<std::uint64_t>{11});
    CHECK(plan.target_domain == at(topology, "rack0/node1"));
    CHECK(plan.cost == 1.0);
    CHECK(plan.lower_bound == 0.0);
    CHECK(plan.topology_satisfied);
    REQUIRE(plan.rejected.size() == 1);
    CHECK(plan.rejected[0].domain == at(topology, "rack0/node0"));
    CHECK(plan.rejected[0].reason.find("highest victim priority") != std::string::npos);
    CHECK(plan.statistics.domains_considered == 2);
    CHECK(plan.explanation.find("3 reprieved") != std::string::npos);
    apply(state, job(99, 9, 2), plan);
  }

  TEST_CASE("kube_default breaks remaining ties by the latest start of the highest-priority victims") {
    auto topology = shared(shapes::cluster(shapes::hgx_h100(), 2, 2));
    Allocation state(topology);
    Workload early = job(1, 2, 8);
    early.cost.start_time_s = 100.0;
    Workload late = job(2, 2, 8);
    late.cost.start_time_s = 200.0;
    start_in(state, early, at(*topology, "rack0/node0"));
    start_in(state, late, at(*topology, "rack0/node1"));
    const PreemptionPlan plan = kube_default.solve(state, job(99, 9, 1), cost::victim_count{});
    CHECK(victim_ids(plan) == std::vector<std::uint64_t>{2});
    CHECK(plan.target_domain == at(*topology, "rack0/node1"));
    REQUIRE(plan.rejected.size() == 1);
    CHECK(plan.rejected[0].reason.find("start time") != std::string::npos);
  }

  TEST_CASE("kube_default evicts whole gangs and schedules a multi-replica preemptor pod by pod") {
    auto topology = shared(shapes::cluster(shapes::hgx_h100(), 2, 2));
    Allocation state(topology);
    const std::string n0 = "rack0/node0/socket0/numa0/";
    const std::string n1 = "rack0/node1/socket0/numa0/";
    start_on(state, job(5, 1, 4, 2),
             {n0 + "pcie0/gpu0", n0 + "pcie0/gpu1", n0 + "pcie1/gpu2", n0 + "pcie1/gpu3",
              n1 + "pcie0/gpu0", n1 + "pcie0/gpu1", n1 + "pcie1/gpu2", n1 + "pcie1/gpu3"});
    start_in(state, job(6, 3, 4), at(*topology, "rack0/node0"));
    start_in(state, job(7, 4, 4), at(*topology, "rack0/node1"));

    // One 4-GPU pod: each node offers one pod of gang 5 (priority 1); all ties, node0 wins by id.
    const PreemptionPlan single = kube_default.solve(state, job(99, 9, 4), cost::victim_count{});
    CHECK(victim_ids(single) == std::vector<std::uint64_t>{5});
    CHECK(single.target_domain == at(*topology, "rack0/node0"));
    REQUIRE(single.victims.size() == 1);
    CHECK(single.victims[0].reason.find("whole gang of 2") != std::string::npos);
    CHECK(single.rejected.at(0).reason.find("domain id") != std::string::npos);

    // Two 4-GPU pods: the first preempts gang 5 (freeing node1 too), the second then fits.
    const Workload pair = job(99, 9, 4, 2);
    const PreemptionPlan plan = kube_default.solve(state, pair, cost::victim_count{});
    CHECK(plan.status == PlanStatus::feasible);
    CHECK(victim_ids(plan) == std::vector<std::uint64_t>{5});
    CHECK(plan.target_domain == at(*topology, "rack0"));
    CHECK(plan.explanation.find("replica 1: scheduled without preemption") != std::string::npos);
    apply(state, pair, plan);
  }

  TEST_CASE("kube_default on the paper's server: aggregate fit, no NUMA fit, wasted preemption") {
    const Allocation state = paper_server_state();
    const Topology& topology = state.topology();
    const Workload preemptor = numa_preemptor();
    // Node aggregate without job 20: 1 idle GPU and 72 free cores, so job 21 (priority 5) is
    // reprieved first and job 20 alone is evicted. But numa0, the only NUMA node with that GPU,
    // keeps 2 free cores for a preemptor that needs 8 in one NUMA node.
    const PreemptionPlan plan = kube_default.solve(state, preemptor, cost::victim_count{});
    CHECK(plan.status == PlanStatus::feasible);
    CHECK(victim_ids(plan) == std::vector<std::uint64_t>{20});
    CHECK_FALSE(plan.topology_satisfied);
    CHECK(plan.target_domain == at(topology, "node0"));
    CHECK(plan.explanation.find("wasted preemption") != std::string::npos);
    CHECK(topology.levels()[plan.replica_level] != "numa");
    // The placement is only valid with the scope relaxed: the guarantee is broken.
    CHECK_THROWS_WITH_AS(apply(state, preemptor, plan), doctest::Contains("numa"),
                         std::invalid_argument);
    Workload relaxed = preemptor;
    relaxed.replica_scope = {};
    apply(state, relaxed, plan);

    // The paper's search is topology-aware: it evicts both and keeps the guarantee.
    const PreemptionPlan exact = exhaustive_subsets.solve(state, preemptor, cost::victim_count{});
    CHECK(exact.status == PlanStatus::optimal);
    CHECK(victim_ids(exact) == std::vector<std::uint64_t>{20, 21});
    CHECK(exact.topology_satisfied);
    CHECK(exact.cost == 2.0);
    CHECK(exact.lower_bound == 2.0);
    // Its GPU and the cores beside it, drawn from the NUMA node's core groups: the replica
    // occupies the GPU, inside the guaranteed NUMA node (docs/model.md).
    CHECK(topology.levels()[exact.replica_level] == "gpu");
    apply(state, preemptor, exact);
  }

  TEST_CASE("exhaustive_subsets finds the minimum-cost set") {
    const Allocation state = two_hgx_state();
    const Topology& topology = state.topology();
    // Lost work: job 1 (8 GPUs, 1000 s) costs 8001; on node1 the 2-GPU jobs cost 1 + 2*s.
    // Choose s so that the cheapest 4-GPU set is {12, 14}: 1+2*10 + 1+2*5 = 32.
    Allocation tuned = state;
    const double seconds[] = {40.0, 10.0, 30.0, 5.0};
    for (int i = 0; i < 4; ++i) {
      const WorkloadId id{static_cast<std::uint64_t>(11 + i)};
      Workload w = tuned.workload(id);
      const Placement where = tuned.placement(id);
      w.cost.seconds_since_checkpoint = seconds[i];
      tuned.remove(id);
      tuned.add(w, where);
    }
    Workload first = tuned.workload(WorkloadId{1});
    const Placement where = tuned.placement(WorkloadId{1});
    first.cost.seconds_since_checkpoint = 1000.0;
    tuned.remove(WorkloadId{1});
    tuned.add(first, where);

    const Workload preemptor = job(99, 9, 4);
    const PreemptionPlan plan = exhaustive_subsets.solve(tuned, preemptor, cost::lost_work{});
    CHECK(plan.status == PlanStatus::optimal);
    CHECK(victim_ids(plan) == std::vector<std::uint64_t>{12, 14});
    CHECK(plan.cost == doctest::Approx(32.0));
    CHECK(plan.lower_bound == plan.cost);
    CHECK(plan.gap() == 0.0);
    CHECK(plan.target_domain == at(topology, "rack0/node1"));
    CHECK(plan.cost == doctest::Approx(brute_force_min_cost(tuned, preemptor, cost::lost_work{})));
    CHECK(plan.statistics.domains_considered == 2);
    CHECK(plan.statistics.nodes_explored > 0);
    apply(tuned, preemptor, plan);

    // kube_default ignores the cost model: it takes lowest priorities (11, 12).
    const PreemptionPlan kube = kube_default.solve(tuned, preemptor, cost::lost_work{});
    CHECK(victim_ids(kube) == std::vector<std::uint64_t>{11, 12});
    CHECK(kube.cost == doctest::Approx(1 + 80 + 1 + 20));
  }

  TEST_CASE("exhaustive_subsets paper_score prefers victims inside one NUMA node") {
    auto topology = shared(shapes::single_machine(shapes::rtx4090_server()));
    Allocation state(topology);
    // Job 1 (priority 1) holds gpu0 and gpu4, one per socket; job 2 (priority 2) holds gpu1
    // alone; the other GPUs belong to priority-10 jobs.
    start_on(state, job(1, 1, 2),
             {"node0/socket0/numa0/gpu0", "node0/socket1/numa4/gpu4"});
    start_on(state, job(2, 2, 1), {"node0/socket0/numa1/gpu1"});
    std::uint64_t id = 3;
    for (int g : {2, 3, 5, 6, 7}) {
      start_on(state, job(id++, 10, 1),
               {"node0/socket" + std::to_string(g / 4) + "/numa" + std::to_string(g) + "/gpu" +
                std::to_string(g)});
    }
    const Workload preemptor = job(99, 5, 1);

    // Priority-weighted cost prefers job 1 (2^31 + 1 < 2^31 + 2) although it spans sockets.
    const PreemptionPlan cheap = exhaustive_subsets.solve(state, preemptor, cost::priority_weighted{});
    CHECK(cheap.status == PlanStatus::optimal);
    CHECK(victim_ids(cheap) == std::vector<std::uint64_t>{1});
    CHECK(cheap.explanation.find("T 7") != std::string::npos);

    // The paper's score (alpha = 0): T = 15 for job 2 (one NUMA node) beats T = 7.
    const auto paper = exhaustive_subsets.ranking(SubsetRanking::paper_score);
    const PreemptionPlan scored = paper.solve(state, preemptor, cost::priority_weighted{});
    CHECK(scored.status == PlanStatus::feasible);  // S, not cost, was optimised
    CHECK(victim_ids(scored) == std::vector<std::uint64_t>{2});
    CHECK(scored.explanation.find("T 15") != std::string::npos);
    CHECK(scored.lower_bound == 0.0);

    // With equal costs (victim count) cost_first breaks the tie by S as well.
    const PreemptionPlan counted = exhaustive_subsets.solve(state, preemptor, cost::victim_count{});
    CHECK(victim_ids(counted) == std::vector<std::uint64_t>{2});

    // alpha = 1 ranks by 1 / sum(priority + 2^31) alone: the lower priority wins.
    const PreemptionPlan by_priority = paper.alpha(1.0).solve(state, preemptor, cost::victim_count{});
    CHECK(victim_ids(by_priority) == std::vector<std::uint64_t>{1});
    CHECK_THROWS_AS((void)paper.alpha(1.5), std::invalid_argument);
  }

  TEST_CASE("exhaustive_subsets agrees with brute force on random small instances") {
    auto topology = shared(shapes::cluster(shapes::hgx_h100(), 4, 2));
    std::mt19937_64 random(7);
    const char* scopes[] = {"", "numa", "pcie_switch"};
    int optimal = 0;
    int infeasible = 0;
    int fits = 0;
    for (int instance = 0; instance < 40; ++instance) {
      Allocation state(topology);
      const DomainId nodes[] = {at(*topology, "rack0/node0"), at(*topology, "rack0/node1"),
                                at(*topology, "rack1/node2"), at(*topology, "rack1/node3")};
      for (std::uint64_t id = 1; id <= 14; ++id) {
        Workload w = job(id, static_cast<std::int32_t>(random() % 8),
                         static_cast<std::int32_t>(1 + random() % 4), 1,
                         static_cast<std::int64_t>(random() % 4) * 4000);
        w.cost.seconds_since_checkpoint = static_cast<double>(random() % 100);
        w.preemptible = random() % 6 != 0;
        auto found = find_placement(state, w, nodes[random() % 4]);
        if (!found.found) found = find_placement(state, w);
        if (found.found) state.add(w, found.placement);
      }
      Workload preemptor = job(99, 6, static_cast<std::int32_t>(2 + random() % 4),
                               static_cast<std::int32_t>(1 + random() % 2),
                               static_cast<std::int64_t>(random() % 3) * 8000);
      if (const std::string scope = scopes[random() % 3]; !scope.empty()) {
        preemptor.replica_scope = TopologyRequirement::guaranteed(scope);
      }
      if (preemptor.replicas > 1 && random() % 2 == 0) {
        preemptor.gang_scope = TopologyRequirement::guaranteed("rack");
      }
      CAPTURE(instance);
      const double expected = brute_force_min_cost(state, preemptor, cost::lost_work{});
      const PreemptionPlan plan = exhaustive_subsets.solve(state, preemptor, cost::lost_work{});
      if (expected < 0.0) {
        ++infeasible;
        CHECK(plan.status == PlanStatus::infeasible);
      } else if (expected == 0.0) {
        ++fits;
        CHECK(plan.status == PlanStatus::no_preemption_needed);
      } else {
        REQUIRE(plan.status == PlanStatus::optimal);
        ++optimal;
        CHECK(plan.cost == doctest::Approx(expected));
        apply(state, preemptor, plan);
      }
      // kube_default, whatever it picks, never evicts a non-eligible workload.
      const PreemptionPlan kube = kube_default.solve(state, preemptor, cost::lost_work{});
      for (const Victim& victim : kube.victims) {
        const Workload& w = state.workload(victim.id);
        CHECK(w.preemptible);
        CHECK(w.priority < preemptor.priority);
      }
    }
    CAPTURE(infeasible);
    CAPTURE(fits);
    CHECK(optimal > 15);
  }

  TEST_CASE("exhaustive_subsets limits: victim cap and node limit give feasible plans") {
    const Allocation state = two_hgx_state();
    const Workload preemptor = job(99, 9, 4);
    // node1 has 4 eligible victims: over a cap of 3 it is skipped (only its evict-all set, cost
    // 4, is a candidate), so node0's job 1 (cost 1) wins, unproven.
    const PreemptionPlan capped =
        exhaustive_subsets.max_victims_per_domain(3).solve(state, preemptor, cost::victim_count{});
    CHECK(capped.status == PlanStatus::feasible);
    CHECK(victim_ids(capped) == std::vector<std::uint64_t>{1});
    CHECK(capped.lower_bound == 0.0);
    REQUIRE(capped.rejected.size() == 1);
    CHECK(capped.rejected[0].reason.find("max_victims_per_domain") != std::string::npos);

    const PreemptionPlan limited =
        exhaustive_subsets.node_limit(1).solve(state, preemptor, cost::victim_count{});
    CHECK(limited.status == PlanStatus::feasible);
    CHECK(limited.statistics.limit_reached);
    CHECK(limited.statistics.nodes_explored == 1);
    apply(state, preemptor, limited);

    const PreemptionPlan timed = exhaustive_subsets.time_limit(std::chrono::seconds(30))
                                     .solve(state, preemptor, cost::victim_count{});
    CHECK(timed.status == PlanStatus::optimal);
    CHECK(timed.cost == 1.0);
    CHECK_THROWS_AS((void)exhaustive_subsets.time_limit(std::chrono::seconds(-1)),
                    std::invalid_argument);
  }

  TEST_CASE("exhaustive_subsets enumerates per gang-scope domain for a gang preemptor") {
    auto topology = shared(shapes::cluster(shapes::hgx_h100(), 4, 2));
    Allocation state(topology);
    // rack0: two nodes, each full with one 8-GPU job of priority 1; rack1: two nodes, each with
    // a 4-GPU job of priority 2 and a 4-GPU job of priority 9.
    start_in(state, job(1, 1, 8), at(*topology, "rack0/node0"));
    start_in(state, job(2, 1, 8), at(*topology, "rack0/node1"));
    start_in(state, job(3, 2, 4), at(*topology, "rack1/node2"));
    start_in(state, job(4, 2, 4), at(*topology, "rack1/node3"));
    start_in(state, job(5, 9, 4), at(*topology, "rack1/node2"));
    start_in(state, job(6, 9, 4), at(*topology, "rack1/node3"));
    Workload gang = job(99, 5, 8, 2);
    gang.gang_scope = TopologyRequirement::guaranteed("rack");
    // rack1 cannot host two 8-GPU replicas (its jobs 5 and 6 are not eligible); rack0 can once
    // jobs 1 and 2 are gone.
    const PreemptionPlan plan = exhaustive_subsets.solve(state, gang, cost::victim_count{});
    CHECK(plan.status == PlanStatus::optimal);
    CHECK(victim_ids(plan) == std::vector<std::uint64_t>{1, 2});
    CHECK(plan.target_domain == at(*topology, "rack0"));
    CHECK(topology->levels()[plan.gang_level] == "rack");
    REQUIRE(plan.rejected.size() == 1);
    CHECK(plan.rejected[0].domain == at(*topology, "rack1"));
    apply(state, gang, plan);
  }

  TEST_CASE("baselines report no preemption and infeasibility") {
    auto topology = shared(shapes::single_machine(shapes::hgx_h100()));
    Allocation state(topology);
    start_in(state, job(1, 1, 4), Topology::root());
    const PreemptionPlan fits = kube_default.solve(state, job(99, 9, 4), cost::victim_count{});
    CHECK(fits.status == PlanStatus::no_preemption_needed);
    CHECK(fits.victims.empty());
    const PreemptionPlan fits2 = exhaustive_subsets.solve(state, job(99, 9, 4), cost::victim_count{});
    CHECK(fits2.status == PlanStatus::no_preemption_needed);
    CHECK(fits2.placement == fits.placement);

    for (const PreemptionPlan& plan :
         {kube_default.solve(state, job(99, 9, 9), cost::victim_count{}),
          exhaustive_subsets.solve(state, job(99, 9, 9), cost::victim_count{}),
          kube_default.solve(state, job(99, 1, 8), cost::victim_count{}),
          exhaustive_subsets.solve(state, job(99, 1, 8), cost::victim_count{})}) {
      CHECK(plan.status == PlanStatus::infeasible);
      CHECK(plan.victims.empty());
      CHECK(plan.rejected_total == 1);
      CHECK(plan.explanation.find("infeasible") != std::string::npos);
    }
  }

  TEST_CASE("baselines are deterministic") {
    const Allocation state = paper_server_state();
    const Workload preemptor = numa_preemptor();
    CHECK(kube_default.solve(state, preemptor, cost::lost_work{}) ==
          kube_default.solve(state, preemptor, cost::lost_work{}));
    CHECK(exhaustive_subsets.solve(state, preemptor, cost::lost_work{}) ==
          exhaustive_subsets.solve(state, preemptor, cost::lost_work{}));
    const Allocation two = two_hgx_state();
    const auto paper = exhaustive_subsets.ranking(SubsetRanking::paper_score);
    CHECK(paper.solve(two, job(99, 9, 4), cost::victim_count{}) ==
          paper.solve(two, job(99, 9, 4), cost::victim_count{}));
    CHECK(kube_default.solve(two, job(99, 9, 4, 2), cost::victim_count{}) ==
          kube_default.solve(two, job(99, 9, 4, 2), cost::victim_count{}));
  }

  TEST_CASE("baselines reject an invalid preemptor, naming it, and leave the state unchanged") {
    const Allocation state = two_hgx_state();
    const auto used = state.used(Topology::root());
    Workload invalid = job(99, 9, 2);
    invalid.replicas = 0;
    CHECK_THROWS_WITH_AS((void)kube_default.solve(state, invalid, cost::victim_count{}),
                         doctest::Contains("workload 99 'job99'"), std::invalid_argument);
    CHECK_THROWS_WITH_AS((void)exhaustive_subsets.solve(state, invalid, cost::victim_count{}),
                         doctest::Contains("workload 99 'job99'"), std::invalid_argument);
    Workload unknown_level = job(99, 9, 2);
    unknown_level.replica_scope = TopologyRequirement::guaranteed("nvl");
    CHECK_THROWS_WITH_AS((void)exhaustive_subsets.solve(state, unknown_level, cost::victim_count{}),
                         doctest::Contains("'nvl'"), std::invalid_argument);
    Workload running = job(11, 9, 2);
    CHECK_THROWS_WITH_AS((void)kube_default.solve(state, running, cost::victim_count{}),
                         doctest::Contains("already running"), std::invalid_argument);
    CHECK_THROWS_WITH_AS((void)exhaustive_subsets.solve(state, running, cost::victim_count{}),
                         doctest::Contains("already running"), std::invalid_argument);
    // A cost model that prices badly is reported, not silently used.
    CHECK_THROWS_WITH_AS((void)exhaustive_subsets.solve(state, job(99, 9, 2), negative_cost{}),
                         doctest::Contains("negative"), std::invalid_argument);
    CHECK_THROWS_WITH_AS((void)kube_default.solve(state, job(99, 9, 2), negative_cost{}),
                         doctest::Contains("negative"), std::invalid_argument);
    CHECK(state.used(Topology::root()) == used);
    CHECK(state.size() == 5);
  }
}
