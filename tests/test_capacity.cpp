// SPDX-License-Identifier: MIT
// Aryl / Lyra: server preemption cost, greedy and exact reclaim, elastic scaling by MCKP.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/capacity/elastic_scaling.hpp"
#include "topopreempt/capacity/loaning.hpp"
#include "topopreempt/model/cost_model.hpp"

using namespace topopreempt;

namespace {

/// cluster > node > gpu: `nodes` hosts of `gpus` whole GPUs each, named node0/gpu0, ...
std::shared_ptr<const Topology> flat_cluster(int nodes, int gpus) {
  const ResourceSchema schema = ResourceSchema::standard();
  TopologyBuilder builder({"cluster", "node", "gpu"}, schema, "gpu", "node", "cluster");
  for (int n = 0; n < nodes; ++n) {
    const auto node = builder.add(TopologyBuilder::root(), "node", "node" + std::to_string(n));
    for (int g = 0; g < gpus; ++g) {
      builder.add(node, "gpu", "gpu" + std::to_string(g),
                  schema.make({{"gpu_milli", 1000}, {"gpu_memory_mib", 81920}}));
    }
  }
  return std::make_shared<const Topology>(builder.build());
}

DomainId node(const Topology& topology, int n) {
  return *topology.find("node" + std::to_string(n));
}

/// Starts a job of one GPU per replica; replica r on GPU `gpus[r]` = {node, gpu}.
void start_on_hosts(Allocation& state, std::uint64_t id, const std::vector<std::pair<int, int>>& gpus,
           std::optional<std::int32_t> min_replicas = std::nullopt, bool preemptible = true) {
  const Topology& topology = state.topology();
  Workload workload;
  workload.id = WorkloadId{id};
  workload.name = "job" + std::to_string(id);
  workload.replicas = static_cast<std::int32_t>(gpus.size());
  workload.min_replicas = min_replicas;
  workload.preemptible = preemptible;
  workload.demand.whole_devices = 1;
  Placement placement;
  for (const auto& [n, g] : gpus) {
    const DomainId gpu = *topology.find("node" + std::to_string(n) + "/gpu" + std::to_string(g));
    placement.replicas.push_back({{{gpu, topology.local_capacity(gpu)}}});
  }
  state.add(workload, placement);
}

std::vector<DomainId> nodes(const Topology& topology, std::initializer_list<int> indices) {
  std::vector<DomainId> result;
  for (int n : indices) result.push_back(node(topology, n));
  return result;
}

/// Net disruption cost of reclaiming `hosts` together, counted independently of capacity/loaning.hpp from
/// the public placements: the reference for the exact search.
template <class Model>
double set_cost(const Allocation& state, const std::vector<DomainId>& hosts, const Model& model) {
  const Topology& topology = state.topology();
  double total = 0.0;
  for (WorkloadId id : state.workload_ids()) {
    const Workload& w = state.workload(id);
    std::int32_t lost = 0;
    for (const auto& replica : state.placement(id).replicas) {
      const DomainId host = topology.ancestor_at(replica.entries.front().domain, topology.host_level());
      lost += std::count(hosts.begin(), hosts.end(), host) > 0 ? 1 : 0;
    }
    if (lost == 0) continue;
    total += (w.min_replicas && w.replicas - lost >= *w.min_replicas) ? model.shrink(w, lost)
                                                                       : model.evict(w);
  }
  return total;
}

/// A random cluster state: whole-GPU jobs of 1-4 replicas spread over random free GPUs.
Allocation random_state(std::mt19937_64& rng, int node_count, int gpus) {
  Allocation state(flat_cluster(node_count, gpus));
  std::vector<std::pair<int, int>> free;
  for (int n = 0; n < node_count; ++n) {
    for (int g = 0; g < gpus; ++g) free.emplace_back(n, g);
  }
  std::shuffle(free.begin(), free.end(), rng);
  std::uint64_t id = 1;
  while (!free.empty() && std::uniform_int_distribution<int>(0, 9)(rng) > 0) {
    const auto replicas = std::min<std::size_t>(free.size(), std::uniform_int_distribution<std::size_t>(1, 4)(rng));
    std::vector<std::pair<int, int>> where(free.end() - static_cast<std::ptrdiff_t>(replicas), free.end());
    free.resize(free.size() - replicas);
    std::optional<std::int32_t> min;
    if (std::uniform_int_distribution<int>(0, 1)(rng) == 1) {
      // At least 1: a running workload keeps a replica (min_replicas 0 is invalid).
      min =
          std::uniform_int_distribution<std::int32_t>(1, static_cast<std::int32_t>(replicas))(rng);
    }
    start_on_hosts(state, id++, where, min);
  }
  return state;
}

}  // namespace

TEST_SUITE("capacity") {
  TEST_CASE("server preemption cost: elastic jobs drop workers, others are preempted") {
    Allocation state(flat_cluster(3, 4));
    const Topology& topology = state.topology();
    start_on_hosts(state, 1, {{0, 0}});                                   // A: not elastic
    start_on_hosts(state, 2, {{1, 0}, {1, 1}, {2, 0}, {2, 1}}, 2);        // B: elastic 4, min 2
    start_on_hosts(state, 3, {{2, 2}});                                   // C: not elastic
    const capacity::shrink_elastic_first model;
    CHECK(capacity::server_preemption_cost(state, node(topology, 0), model) == 10.0);
    CHECK(capacity::server_preemption_cost(state, node(topology, 1), model) == 2.0);
    CHECK(capacity::server_preemption_cost(state, node(topology, 2), model) == 12.0);

    const capacity::ServerCost breakdown = capacity::server_preemption_breakdown(state, node(topology, 2), model);
    REQUIRE(breakdown.victims.size() == 2);
    CHECK(breakdown.victims[0].id == WorkloadId{2});
    CHECK(breakdown.victims[0].action == VictimAction::shrink);
    CHECK(breakdown.victims[0].dropped_replicas == std::vector<std::int32_t>{2, 3});
    CHECK(breakdown.victims[0].cost == 2.0);
    CHECK(breakdown.victims[1].id == WorkloadId{3});
    CHECK(breakdown.victims[1].action == VictimAction::evict);
    CHECK(breakdown.reclaimable);

    // Once B has shrunk to its minimum, the same host preempts it whole.
    const std::vector<std::int32_t> drop{0, 1};
    state.shrink(WorkloadId{2}, drop);
    CHECK(capacity::server_preemption_cost(state, node(topology, 2), model) == 2 * 10.0 + 10.0);
    // Other cost models plug in unchanged.
    CHECK(capacity::server_preemption_cost(state, node(topology, 2), cost::victim_count{}) == 2.0);
  }

  TEST_CASE("greedy reclaim picks the cheapest host and recomputes after a shrink") {
    Allocation state(flat_cluster(3, 4));
    const Topology& topology = state.topology();
    start_on_hosts(state, 1, {{0, 0}});
    start_on_hosts(state, 2, {{1, 0}, {1, 1}, {2, 0}, {2, 1}}, 2);
    start_on_hosts(state, 3, {{2, 2}});
    const auto loaned = nodes(topology, {0, 1, 2});

    const capacity::ReclaimPlan one = capacity::reclaim_servers(state, loaned, 1);
    CHECK(one.status == PlanStatus::feasible);
    CHECK(one.hosts() == nodes(topology, {1}));
    CHECK(one.cost == 2.0);

    // After node1, B sits at its minimum: node2 would now preempt B (20) + C (10) = 30, so the
    // second pick is node0 (10), although node2 (12) was cheaper before the first pick.
    const capacity::ReclaimPlan two = capacity::reclaim_servers(state, loaned, 2);
    REQUIRE(two.steps.size() == 2);
    CHECK(two.hosts() == nodes(topology, {1, 0}));
    CHECK(two.steps[0].cost == 2.0);
    CHECK(two.steps[1].cost == 10.0);
    REQUIRE(two.victims.size() == 2);
    CHECK(two.victims[0].id == WorkloadId{1});
    CHECK(two.victims[0].action == VictimAction::evict);
    CHECK(two.victims[1].id == WorkloadId{2});
    CHECK(two.victims[1].action == VictimAction::shrink);
    CHECK(two.victims[1].dropped_replicas == std::vector<std::int32_t>{0, 1});
    CHECK(two.cost == 12.0);
    CHECK(two.step_cost_sum == 12.0);

    // All three: B loses everything beyond its minimum and is preempted at the last pick; the
    // net effect reports it once, as a preemption.
    const capacity::ReclaimPlan three = capacity::reclaim_servers(state, loaned, 3);
    CHECK(three.hosts() == nodes(topology, {1, 0, 2}));
    CHECK(three.steps[2].cost == 30.0);
    CHECK(three.step_cost_sum == 42.0);
    CHECK(three.cost == 10.0 + 40.0 + 10.0);  // A, B (4 replicas), C evicted
    CHECK(three.victims[1].action == VictimAction::evict);
    CHECK(three.victims[1].reason.find("would leave 0 < min 2") != std::string::npos);

    Allocation applied = state;
    capacity::apply_reclaim(applied, three);
    CHECK(applied.size() == 0);
  }

  TEST_CASE("a preempted gang frees its other hosts: recomputation changes the second choice") {
    Allocation state(flat_cluster(3, 4));
    const Topology& topology = state.topology();
    start_on_hosts(state, 1, {{0, 0}, {2, 0}});        // G: gang over node0 and node2 (20)
    start_on_hosts(state, 2, {{1, 0}, {1, 1}, {1, 2}});  // H: 3 replicas on node1 (30)
    start_on_hosts(state, 3, {{2, 1}});                // J: node2 (10)
    const auto loaned = nodes(topology, {0, 1, 2});
    CHECK(capacity::server_preemption_cost(state, node(topology, 2)) == 30.0);
    const capacity::ReclaimPlan plan = capacity::reclaim_servers(state, loaned, 2);
    // Without recomputation node1 (30, lowest id among the 30s) would be second.
    CHECK(plan.hosts() == nodes(topology, {0, 2}));
    CHECK(plan.steps[1].cost == 10.0);
    CHECK(plan.steps[1].victims.size() == 1);
    CHECK(plan.cost == 30.0);
    const capacity::ReclaimPlan exact = capacity::reclaim_servers_exact(state, loaned, 2);
    CHECK(exact.status == PlanStatus::optimal);
    CHECK(exact.cost == 30.0);
  }

  TEST_CASE("the exact search measures the greedy's optimality gap") {
    Allocation state(flat_cluster(3, 2));
    const Topology& topology = state.topology();
    start_on_hosts(state, 1, {{0, 0}});          // K: 10 alone on node0
    start_on_hosts(state, 2, {{1, 0}, {2, 0}});  // G: gang of 2 over node1 and node2 (20)
    const auto loaned = nodes(topology, {0, 1, 2});
    const capacity::ReclaimPlan greedy = capacity::reclaim_servers(state, loaned, 2);
    const capacity::ReclaimPlan exact = capacity::reclaim_servers_exact(state, loaned, 2);
    CHECK(greedy.hosts() == nodes(topology, {0, 1}));
    CHECK(greedy.cost == 30.0);
    CHECK(exact.hosts() == nodes(topology, {1, 2}));
    CHECK(exact.cost == 20.0);
    CHECK(exact.subsets_explored == 3);
    CHECK((greedy.cost - exact.cost) / exact.cost == doctest::Approx(0.5));
  }

  TEST_CASE("infeasible when too few loaned hosts are reclaimable") {
    Allocation state(flat_cluster(3, 2));
    const Topology& topology = state.topology();
    start_on_hosts(state, 1, {{1, 0}}, std::nullopt, false);  // not preemptible
    const auto two = nodes(topology, {0, 1});
    const capacity::ReclaimPlan few = capacity::reclaim_servers(state, two, 3);
    CHECK(few.status == PlanStatus::infeasible);
    CHECK(few.steps.empty());
    CHECK(few.explanation.find("3 servers needed") != std::string::npos);
    const capacity::ReclaimPlan blocked = capacity::reclaim_servers(state, two, 2);
    CHECK(blocked.status == PlanStatus::infeasible);
    CHECK(blocked.explanation.find("workload 1 'job1'") != std::string::npos);
    CHECK(capacity::reclaim_servers_exact(state, two, 2).status == PlanStatus::infeasible);
    CHECK(std::isinf(capacity::server_preemption_cost(state, node(topology, 1))));
    CHECK_FALSE(capacity::server_preemption_breakdown(state, node(topology, 1)).reclaimable);
    // The blocked host is skipped; the free one is taken at no cost.
    const capacity::ReclaimPlan one = capacity::reclaim_servers(state, two, 1);
    CHECK(one.hosts() == nodes(topology, {0}));
    CHECK(one.cost == 0.0);
    CHECK(capacity::reclaim_servers(state, two, 0).status == PlanStatus::no_preemption_needed);
  }

  TEST_CASE("errors name the offending host, option or victim") {
    Allocation state(flat_cluster(2, 2));
    const Topology& topology = state.topology();
    start_on_hosts(state, 1, {{0, 0}});
    const DomainId gpu = *topology.find("node0/gpu1");
    CHECK_THROWS_WITH_AS((void)capacity::server_preemption_cost(state, DomainId{9999}),
                         doctest::Contains("9999"), std::invalid_argument);
    CHECK_THROWS_WITH_AS((void)capacity::server_preemption_cost(state, gpu),
                         doctest::Contains("node0/gpu1"), std::invalid_argument);
    const std::vector<DomainId> bad{node(topology, 0), DomainId{4242}};
    CHECK_THROWS_WITH_AS((void)capacity::reclaim_servers(state, bad, 1),
                         doctest::Contains("loaned host #1 (domain id 4242)"), std::invalid_argument);
    const std::vector<DomainId> twice{node(topology, 1), node(topology, 1)};
    CHECK_THROWS_WITH_AS((void)capacity::reclaim_servers(state, twice, 1),
                         doctest::Contains("listed twice"), std::invalid_argument);
    const cost::lost_work negative{.floor = -1.0};
    CHECK_THROWS_WITH_AS((void)capacity::server_preemption_cost(state, node(topology, 0), negative),
                         doctest::Contains("workload 1 'job1'"), std::invalid_argument);
    std::vector<DomainId> many(capacity::max_exact_loaned_hosts + 1, node(topology, 0));
    CHECK_THROWS_AS((void)capacity::reclaim_servers_exact(state, many, 1), std::length_error);

    // A plan made for another state is refused and leaves the state unchanged.
    capacity::ReclaimPlan stale;
    stale.victims.push_back({WorkloadId{77}, VictimAction::evict, {}, 1.0, ""});
    CHECK_THROWS_WITH_AS(capacity::apply_reclaim(state, stale), doctest::Contains("workload 77"),
                         std::invalid_argument);
    CHECK(state.size() == 1);

    std::vector<capacity::ElasticJobOption> jobs{{WorkloadId{1}, "a", 1, {1.0}}};
    CHECK_THROWS_WITH_AS((void)capacity::scale_elastic_jobs(jobs, -1), doctest::Contains("-1"),
                         std::invalid_argument);
    jobs.push_back({WorkloadId{2}, "b", 0, {1.0}});
    CHECK_THROWS_WITH_AS((void)capacity::scale_elastic_jobs(jobs, 4),
                         doctest::Contains("elastic job 2 'b': gpus_per_worker"), std::invalid_argument);
    jobs[1] = {WorkloadId{2}, "b", 1, {1.0, -2.0}};
    CHECK_THROWS_WITH_AS((void)capacity::scale_elastic_jobs(jobs, 4),
                         doctest::Contains("elastic job 2 'b': jct_reduction for 2"), std::invalid_argument);
    jobs[1] = {WorkloadId{2}, "b", 1, {std::nan("")}};
    CHECK_THROWS_AS((void)capacity::scale_elastic_jobs(jobs, 4), std::invalid_argument);
    jobs[1] = {WorkloadId{1}, "dup", 1, {1.0}};
    CHECK_THROWS_WITH_AS((void)capacity::scale_elastic_jobs(jobs, 4), doctest::Contains("listed twice"),
                         std::invalid_argument);
    const std::vector<double> zero{1.0, 0.0};
    CHECK_THROWS_WITH_AS((void)capacity::jct_reductions(100.0, zero), doctest::Contains("throughput[1]"),
                         std::invalid_argument);
  }

  TEST_CASE("greedy step costs equal the cost on the really reclaimed state; exact <= greedy") {
    std::mt19937_64 rng(20240517);
    const capacity::shrink_elastic_first model;
    for (int round = 0; round < 60; ++round) {
      const Allocation state = random_state(rng, 7, 4);
      const Topology& topology = state.topology();
      std::vector<DomainId> loaned;
      for (int n = 0; n < 7; ++n) {
        if (std::uniform_int_distribution<int>(0, 3)(rng) > 0) loaned.push_back(node(topology, n));
      }
      std::shuffle(loaned.begin(), loaned.end(), rng);
      const std::size_t needed = std::uniform_int_distribution<std::size_t>(1, 5)(rng);
      const capacity::ReclaimPlan greedy = capacity::reclaim_servers(state, loaned, needed, model);
      const capacity::ReclaimPlan exact = capacity::reclaim_servers_exact(state, loaned, needed, model);
      CAPTURE(round);
      if (loaned.size() < needed) {
        CHECK(greedy.status == PlanStatus::infeasible);
        CHECK(exact.status == PlanStatus::infeasible);
        continue;
      }
      REQUIRE(greedy.steps.size() == needed);
      REQUIRE(exact.status == PlanStatus::optimal);
      // Aryl recomputes after each pick: the i-th step costs what the host costs once the
      // first i picks have really been carried out (greedy prefixes are plans themselves).
      for (std::size_t i = 0; i < needed; ++i) {
        Allocation scratch = state;
        if (i > 0) capacity::apply_reclaim(scratch, capacity::reclaim_servers(state, loaned, i, model));
        CHECK(capacity::server_preemption_cost(scratch, greedy.steps[i].host, model) ==
              doctest::Approx(greedy.steps[i].cost));
      }
      // Both plans empty their hosts when carried out.
      for (const capacity::ReclaimPlan* plan : {&greedy, &exact}) {
        Allocation after = state;
        capacity::apply_reclaim(after, *plan);
        for (DomainId host : plan->hosts()) CHECK(after.occupants(host).empty());
        CHECK(plan->cost == doctest::Approx(set_cost(state, plan->hosts(), model)));
      }
      CHECK(exact.cost <= greedy.cost + 1e-9);
      // The exact search really is minimal over every subset (independent count).
      const auto n = loaned.size();
      for (std::uint32_t subset = 0; subset < (1U << n); ++subset) {
        if (static_cast<std::size_t>(std::popcount(subset)) != needed) continue;
        std::vector<DomainId> hosts;
        for (std::size_t i = 0; i < n; ++i) {
          if (subset >> i & 1U) hosts.push_back(loaned[i]);
        }
        CHECK(exact.cost <= set_cost(state, hosts, model) + 1e-9);
      }
    }
  }

  TEST_CASE("reclaim is deterministic and independent of the order of the loaned hosts") {
    std::mt19937_64 rng(7);
    const Allocation state = random_state(rng, 8, 4);
    std::vector<DomainId> loaned;
    for (int n = 0; n < 8; ++n) loaned.push_back(node(state.topology(), n));
    const capacity::ReclaimPlan first = capacity::reclaim_servers(state, loaned, 4);
    const capacity::ReclaimPlan exact = capacity::reclaim_servers_exact(state, loaned, 4);
    std::reverse(loaned.begin(), loaned.end());
    CHECK(capacity::reclaim_servers(state, loaned, 4) == first);
    CHECK(capacity::reclaim_servers(state, loaned, 4) == capacity::reclaim_servers(state, loaned, 4));
    CHECK(capacity::reclaim_servers_exact(state, loaned, 4) == exact);
  }

  TEST_CASE("shrink_elastic_first models CostModel and prefers dropping workers") {
    static_assert(CostModel<capacity::shrink_elastic_first>);
    Workload w;
    w.replicas = 4;
    w.min_replicas = 2;
    const capacity::shrink_elastic_first model{.shrink_weight = 2.0, .evict_weight = 5.0};
    CHECK(model.shrink(w, 2) == 4.0);
    CHECK(model.evict(w) == 20.0);
    CHECK(capacity::shrink_elastic_first::name == "shrink_elastic_first");
  }

  TEST_CASE("elastic scaling: hand-computed multiple-choice knapsack") {
    // A: 2 GPUs per worker, 1 worker -> 5, 2 -> 6. B: 1 GPU per worker, 3, 5, 6, 7.
    const std::vector<capacity::ElasticJobOption> jobs{
        {WorkloadId{10}, "a", 2, {5.0, 6.0}},
        {WorkloadId{11}, "b", 1, {3.0, 5.0, 6.0, 7.0}},
    };
    const capacity::ScalingPlan plan = capacity::scale_elastic_jobs(jobs, 4);
    CHECK(plan.status == capacity::ScalingStatus::optimal);
    CHECK(plan.total_jct_reduction == 10.0);  // A 1 worker (2 GPUs) + B 2 workers (2 GPUs)
    CHECK(plan.gpus_used == 4);
    REQUIRE(plan.decisions.size() == 2);
    CHECK(plan.decisions[0] == capacity::ScalingDecision{WorkloadId{10}, 1, 2, 5.0});
    CHECK(plan.decisions[1] == capacity::ScalingDecision{WorkloadId{11}, 2, 2, 5.0});

    CHECK(capacity::scale_elastic_jobs(jobs, 0).total_jct_reduction == 0.0);
    CHECK(capacity::scale_elastic_jobs(jobs, 100).total_jct_reduction == 13.0);
    CHECK(capacity::scale_elastic_jobs({}, 8).decisions.empty());

    // A saturating throughput curve: the third worker adds nothing, so it is never bought.
    const std::vector<double> throughput{1.0, 2.0, 4.0, 4.0};
    const std::vector<double> reductions = capacity::jct_reductions(100.0, throughput);
    CHECK(reductions == std::vector<double>{50.0, 75.0, 75.0});
    const std::vector<capacity::ElasticJobOption> curve{{WorkloadId{1}, "c", 1, reductions}};
    CHECK(capacity::scale_elastic_jobs(curve, 8).decisions[0].extra_workers == 2);
  }

  TEST_CASE("elastic scaling equals brute force on 600 random small instances") {
    std::mt19937_64 rng(99);
    for (int round = 0; round < 600; ++round) {
      const bool integral = round % 2 == 0;  // integral values compare exactly
      const int job_count = std::uniform_int_distribution<int>(0, 4)(rng);
      std::vector<capacity::ElasticJobOption> jobs;
      for (int j = 0; j < job_count; ++j) {
        capacity::ElasticJobOption job;
        job.job = WorkloadId{static_cast<std::uint64_t>(j * 3 + 1)};
        job.gpus_per_worker = std::uniform_int_distribution<std::int64_t>(1, 4)(rng);
        const int options = std::uniform_int_distribution<int>(0, 4)(rng);
        for (int w = 0; w < options; ++w) {
          job.jct_reduction.push_back(integral ? std::uniform_int_distribution<int>(0, 20)(rng)
                                               : std::uniform_real_distribution<double>(0, 20)(rng));
        }
        jobs.push_back(job);
      }
      const std::int64_t free_gpus = std::uniform_int_distribution<std::int64_t>(0, 20)(rng);
      const capacity::ScalingPlan plan = capacity::scale_elastic_jobs(jobs, free_gpus);
      CAPTURE(round);
      REQUIRE(plan.status == capacity::ScalingStatus::optimal);

      // Brute force over every combination of worker counts.
      double best = 0.0;
      std::vector<int> counts(jobs.size(), 0);
      while (true) {
        std::int64_t gpus = 0;
        double value = 0.0;
        for (std::size_t j = 0; j < jobs.size(); ++j) {
          if (counts[j] > 0) {
            gpus += counts[j] * jobs[j].gpus_per_worker;
            value += jobs[j].jct_reduction[static_cast<std::size_t>(counts[j] - 1)];
          }
        }
        if (gpus <= free_gpus) best = std::max(best, value);
        std::size_t j = 0;
        while (j < jobs.size() && counts[j] == static_cast<int>(jobs[j].jct_reduction.size())) {
          counts[j++] = 0;
        }
        if (j == jobs.size()) break;
        ++counts[j];
      }
      if (integral) {
        CHECK(plan.total_jct_reduction == best);
      } else {
        CHECK(plan.total_jct_reduction == doctest::Approx(best).epsilon(1e-12));
      }
      // The decisions are consistent with the options and the budget.
      CHECK(plan.gpus_used <= free_gpus);
      double sum = 0.0;
      for (std::size_t j = 0; j < jobs.size(); ++j) {
        const capacity::ScalingDecision& d = plan.decisions[j];
        CHECK(d.job == jobs[j].job);
        CHECK(d.gpus == d.extra_workers * jobs[j].gpus_per_worker);
        CHECK(d.jct_reduction ==
              (d.extra_workers == 0 ? 0.0 : jobs[j].jct_reduction[static_cast<std::size_t>(d.extra_workers - 1)]));
        sum += d.jct_reduction;
      }
      CHECK(sum == plan.total_jct_reduction);
      CHECK(capacity::scale_elastic_jobs(jobs, free_gpus) == plan);
    }
  }

  TEST_CASE("elastic scaling reports too_large instead of building a huge table") {
    std::vector<capacity::ElasticJobOption> jobs;
    for (std::uint64_t j = 0; j < 4; ++j) jobs.push_back({WorkloadId{j}, "", 1000, {1.0, 2.0}});
    const capacity::ScalingPlan plan = capacity::scale_elastic_jobs(jobs, 2000, 10);
    CHECK(plan.status == capacity::ScalingStatus::too_large);
    CHECK(plan.gpus_used == 0);
    const capacity::ScalingPlan solved = capacity::scale_elastic_jobs(jobs, 2000);
    CHECK(solved.status == capacity::ScalingStatus::optimal);
    CHECK(solved.total_jct_reduction == 2.0);  // two workers: on one job or one each
    CHECK(solved.gpus_used == 2000);
  }
}
