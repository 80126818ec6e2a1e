// SPDX-License-Identifier: MIT
// IncrementalDecider (issue 10, item 2): after any sequence of adds, removes and shrinks, the
// decider's plan is the cold solve's plan, for every solver, and it re-reads only the domains
// whose versions changed.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "topopreempt/cluster_generator.hpp"
#include "topopreempt/cost_model.hpp"
#include "topopreempt/incremental_decider.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/greedy.hpp"
#include "topopreempt/solvers/knapsack.hpp"

namespace topopreempt {
namespace {

/// Everything a plan says except its wall time.
void check_same_plan(const PreemptionPlan& warm, const PreemptionPlan& cold) {
  CHECK(warm.status == cold.status);
  CHECK(warm.cost == cold.cost);
  CHECK(warm.lower_bound == cold.lower_bound);
  CHECK(warm.target_domain == cold.target_domain);
  CHECK(warm.explanation == cold.explanation);
  CHECK(warm.rejected_total == cold.rejected_total);
  REQUIRE(warm.victims.size() == cold.victims.size());
  for (std::size_t v = 0; v < warm.victims.size(); ++v)
    CHECK(warm.victims[v].id == cold.victims[v].id);
  SolverStatistics a = warm.statistics;
  SolverStatistics b = cold.statistics;
  a.seconds = b.seconds = 0.0;
  CHECK(a == b);
}

/// One random change: remove a workload (kept aside), shrink an elastic one, or start a removed
/// one again where it ran.
void change(Allocation& state, std::vector<std::pair<Workload, Placement>>& removed,
            std::mt19937_64& random) {
  const std::uint64_t dice = random() % 3;
  if (dice == 0 && !removed.empty()) {
    const std::size_t pick = random() % removed.size();
    state.add(removed[pick].first, removed[pick].second);
    removed.erase(removed.begin() + static_cast<std::ptrdiff_t>(pick));
    return;
  }
  const std::vector<WorkloadId> ids = state.workload_ids();
  if (ids.empty()) return;
  const WorkloadId id = ids[random() % ids.size()];
  if (dice == 1 && state.workload(id).shrinkable_replicas() > 0) {
    const std::array<std::int32_t, 1> drop{0};
    state.shrink(id, drop);
    return;
  }
  removed.emplace_back(state.workload(id), state.placement(id));
  state.remove(id);
}

template <class Solver>
void run_sequence(const Solver& solver, PreemptorSpec spec, std::uint64_t seed) {
  ClusterSpec cluster_spec;
  cluster_spec.nodes = 16;
  cluster_spec.nodes_per_rack = 8;
  cluster_spec.seed = seed;
  cluster_spec.elastic_fraction = 0.4;
  if (spec.gpus == 1) cluster_spec.target_occupancy = 1.0;
  GeneratedCluster cluster = generate_cluster(cluster_spec);
  const Workload preemptor = make_preemptor(spec);
  const cost::weighted_sum<cost::lost_work, cost::reload_time> model{};
  IncrementalDecider decider(solver, model, preemptor);
  std::vector<std::pair<Workload, Placement>> removed;
  std::mt19937_64 random(seed);
  for (int round = 0; round < 8; ++round) {
    INFO("seed ", seed, " round ", round, " ", Solver::name, " ", to_string(spec.kind));
    check_same_plan(decider.decide(cluster.state), solver.solve(cluster.state, preemptor, model));
    const int changes = 1 + static_cast<int>(random() % 4);
    for (int c = 0; c < changes; ++c) change(cluster.state, removed, random);
  }
  // Decided again on an unchanged state, nothing is read again.
  check_same_plan(decider.decide(cluster.state), solver.solve(cluster.state, preemptor, model));
  const std::uint64_t fresh = decider.fresh_reads();
  check_same_plan(decider.decide(cluster.state), solver.solve(cluster.state, preemptor, model));
  CHECK(decider.fresh_reads() == fresh);
}

TEST_SUITE("incremental_decider") {
  TEST_CASE("after random changes the decider's plan is the cold plan, for every solver") {
    const std::array<PreemptorSpec, 5> specs{{{PreemptorKind::numa, 1},
                                              {PreemptorKind::nvlink_island, 4},
                                              {PreemptorKind::socket, 4},
                                              {PreemptorKind::node, 8},
                                              {PreemptorKind::rack_gang, 16, 2}}};
    for (const std::uint64_t seed : {1U, 2U}) {
      for (const PreemptorSpec& spec : specs) {
        run_sequence(solvers::greedy, spec, seed);
        run_sequence(solvers::knapsack, spec, seed);
        run_sequence(solvers::branch_and_bound, spec, seed);
      }
    }
  }

  TEST_CASE("a state on another topology resets the cache") {
    ClusterSpec spec;
    spec.nodes = 4;
    const GeneratedCluster first = generate_cluster(spec);
    spec.nodes = 6;
    const GeneratedCluster second = generate_cluster(spec);
    const Workload preemptor = make_preemptor({PreemptorKind::node, 8});
    IncrementalDecider decider(solvers::branch_and_bound, cost::victim_count{}, preemptor);
    check_same_plan(decider.decide(first.state),
                    solvers::branch_and_bound.solve(first.state, preemptor, cost::victim_count{}));
    check_same_plan(decider.decide(second.state),
                    solvers::branch_and_bound.solve(second.state, preemptor, cost::victim_count{}));
    check_same_plan(decider.decide(first.state),
                    solvers::branch_and_bound.solve(first.state, preemptor, cost::victim_count{}));
  }
}

}  // namespace
}  // namespace topopreempt
