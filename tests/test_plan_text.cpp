// SPDX-License-Identifier: MIT
// Plans without text on the hot path (issue 36, item 3): a solver built `without_text()` returns
// the structured facts only, and `explain` words them to the bytes the solver with text writes;
// the decider returns what its solver returns, text or not.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "topopreempt/baselines/kube_default.hpp"
#include "topopreempt/decisions/incremental_decider.hpp"
#include "topopreempt/model/cluster_generator.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/plan/verifier.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/explain.hpp"
#include "topopreempt/solvers/greedy.hpp"
#include "topopreempt/solvers/knapsack.hpp"

namespace topopreempt {
namespace {

/// Whether the plan carries no text at all.
bool plan_has_no_text(const PreemptionPlan& plan) {
  if (!plan.explanation.empty()) return false;
  for (const Victim& victim : plan.victims)
    if (!victim.reason.empty()) return false;
  for (const DomainVerdict& verdict : plan.rejected)
    if (!verdict.reason.empty()) return false;
  return true;
}

/// The same plan, its wall time aside: `operator==` with the seconds copied over (they are
/// ignored by it anyway) and the texts compared one by one, so that a failure names them.
void check_worded_alike(const PreemptionPlan& worded, const PreemptionPlan& expected) {
  CHECK(worded.explanation == expected.explanation);
  REQUIRE(worded.victims.size() == expected.victims.size());
  for (std::size_t v = 0; v < worded.victims.size(); ++v)
    CHECK(worded.victims[v].reason == expected.victims[v].reason);
  REQUIRE(worded.rejected.size() == expected.rejected.size());
  for (std::size_t r = 0; r < worded.rejected.size(); ++r)
    CHECK(worded.rejected[r].reason == expected.rejected[r].reason);
  CHECK(worded == expected);
}

/// Solves with and without text and checks that `explain` closes the gap.
template <class Solver, class Model>
void check_text_contract(const Solver& solver, const Allocation& state, const Workload& preemptor,
                  const Model& model) {
  INFO(Solver::name, " under ", Model::name);
  CHECK(solver.builds_text());
  const auto quiet = solver.without_text();
  CHECK_FALSE(quiet.builds_text());
  const PreemptionPlan with = solver.solve(state, preemptor, model);
  PreemptionPlan without = quiet.solve(state, preemptor, model);
  INFO(with.explanation);
  CHECK_FALSE(with.explanation.empty());
  CHECK(plan_has_no_text(without));
  // The facts are all there, and the verifier asks for nothing more.
  const PlanVerdict verdict = verify_plan(state, preemptor, without, model);
  CHECK_MESSAGE(verdict.ok, verdict.summary());
  CHECK(without.status == with.status);
  CHECK(without.tier == with.tier);
  for (const Victim& victim : without.victims) CHECK(victim.freed_in.valid());
  for (const DomainVerdict& rejected : without.rejected)
    CHECK(rejected.kind != RejectionKind::text_only);
  explain(without, state, preemptor, model);
  check_worded_alike(without, with);
  // Worded once, a plan is left alone.
  PreemptionPlan again = without;
  explain(again, state, preemptor, model);
  CHECK(again == without);
}

const std::array<PreemptorSpec, 5> text_kinds{{{PreemptorKind::numa, 1},
                                          {PreemptorKind::nvlink_island, 4},
                                          {PreemptorKind::socket, 4},
                                          {PreemptorKind::node, 8},
                                          {PreemptorKind::rack_gang, 16, 2}}};

TEST_SUITE("plan_text") {
  TEST_CASE("explain words a plan without text to the solver's own bytes") {
    const cost::weighted_sum<cost::lost_work, cost::reload_time> priced{};
    const cost::victim_count count{};
    for (const std::uint64_t seed : {1U, 2U}) {
      // Busy (every kind must preempt), half busy (some fit already), elastic victims
      // (shrinks, "nothing binding" gains).
      for (const double occupancy : {1.0, 0.85, 0.5}) {
        ClusterSpec spec;
        spec.nodes = 24;
        spec.nodes_per_rack = 8;
        spec.seed = seed;
        spec.elastic_fraction = 0.4;
        spec.target_occupancy = occupancy;
        const GeneratedCluster cluster = generate_cluster(spec);
        for (const PreemptorSpec& kind : text_kinds) {
          INFO("seed ", seed, " occupancy ", occupancy, " ", to_string(kind.kind));
          const Workload preemptor = make_preemptor(kind);
          check_text_contract(solvers::greedy, cluster.state, preemptor, priced);
          check_text_contract(solvers::knapsack, cluster.state, preemptor, priced);
          check_text_contract(solvers::branch_and_bound, cluster.state, preemptor, priced);
          check_text_contract(solvers::branch_and_bound, cluster.state, preemptor, count);
          check_text_contract(solvers::knapsack_solver{}.max_cells(16), cluster.state, preemptor,
                       count);
        }
      }
    }
  }

  TEST_CASE("an infeasible plan is worded from its verdicts alike") {
    ClusterSpec spec;
    spec.nodes = 8;
    spec.nodes_per_rack = 4;
    const GeneratedCluster cluster = generate_cluster(spec);
    // More GPUs in one rack than a rack holds: every rack is too small.
    Workload preemptor = make_preemptor({PreemptorKind::rack_gang, 16, 2});
    preemptor.replicas = 64;
    const cost::lost_work model{};
    const PreemptionPlan plan = solvers::greedy.solve(cluster.state, preemptor, model);
    REQUIRE(plan.status == PlanStatus::infeasible);
    REQUIRE_FALSE(plan.rejected.empty());
    check_text_contract(solvers::greedy, cluster.state, preemptor, model);
    check_text_contract(solvers::branch_and_bound, cluster.state, preemptor, model);
  }

  TEST_CASE("the decider returns its solver's plan, text or not, and words it alike") {
    const cost::weighted_sum<cost::lost_work, cost::reload_time> model{};
    for (const PreemptorSpec& kind : text_kinds) {
      ClusterSpec spec;
      spec.nodes = 24;
      spec.nodes_per_rack = 8;
      spec.seed = 11;
      spec.elastic_fraction = 0.3;
      GeneratedCluster cluster = generate_cluster(spec);
      const Workload preemptor = make_preemptor(kind);
      const auto quiet = solvers::branch_and_bound.without_text();
      IncrementalDecider decider(quiet, model, preemptor);
      std::vector<std::pair<Workload, Placement>> removed;
      std::mt19937_64 random(11);
      for (int round = 0; round < 6; ++round) {
        INFO(to_string(kind.kind), " round ", round);
        PreemptionPlan plan = decider.decide(cluster.state);
        CHECK(plan_has_no_text(plan));
        CHECK(plan == quiet.solve(cluster.state, preemptor, model));
        decider.explain(plan, cluster.state);
        check_worded_alike(plan,
                           solvers::branch_and_bound.solve(cluster.state, preemptor, model));
        for (int c = 0; c < 3; ++c) {
          const std::vector<WorkloadId> ids = cluster.state.workload_ids();
          if (!removed.empty() && random() % 2 == 0) {
            cluster.state.add(removed.back().first, removed.back().second);
            removed.pop_back();
          } else if (!ids.empty()) {
            const WorkloadId id = ids[random() % ids.size()];
            removed.emplace_back(cluster.state.workload(id), cluster.state.placement(id));
            cluster.state.remove(id);
          }
        }
      }
    }
  }

  TEST_CASE("explain keeps the text of plans that always carry it, and checks its inputs") {
    ClusterSpec spec;
    spec.nodes = 16;
    spec.nodes_per_rack = 8;
    const GeneratedCluster cluster = generate_cluster(spec);
    const Workload preemptor = make_preemptor({PreemptorKind::node, 8});
    const cost::lost_work model{};
    const PreemptionPlan baseline = baselines::kube_default.solve(cluster.state, preemptor, model);
    PreemptionPlan worded = baseline;
    explain(worded, cluster.state, preemptor, model);
    CHECK(worded == baseline);
    // A running workload is no preemptor: explain refuses it, as solve does.
    PreemptionPlan plan = solvers::greedy.without_text().solve(cluster.state, preemptor, model);
    const WorkloadId running = cluster.state.workload_ids().front();
    CHECK_THROWS_AS(explain(plan, cluster.state, cluster.state.workload(running), model),
                    std::invalid_argument);
    // A tier the preemptor does not have is refused, not read out of range.
    if (plan.has_victims_plan()) {
      plan.tier = 1000;
      CHECK_THROWS_AS(explain(plan, cluster.state, preemptor, model), std::invalid_argument);
    }
  }
}

}  // namespace
}  // namespace topopreempt
