// SPDX-License-Identifier: MIT
// The phases of the solve driver (solvers/detail/solve_driver.hpp), each on its own: "fits
// already", the candidate order (what it reads, what it leaves unread or grouped), and the
// pruning that ends a tier once no candidate can beat the best cost. The whole driver is tested
// through the solvers (test_every_solver.cpp, test_exact_vs_brute_force.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "support.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/solvers/detail/preemption_context.hpp"
#include "topopreempt/solvers/greedy.hpp"

namespace topopreempt {
namespace {

/// 4 HGX nodes (2 per rack), full: 16 two-GPU jobs of priority 0.
Allocation full_driver_cluster() {
  Allocation state(test::shared(shapes::cluster(shapes::hgx_h100(), 4, 2)));
  for (std::uint64_t id = 1; id <= 16; ++id) test::start(state, test::gpu_job(id, 0, 2));
  return state;
}

/// 8 GPUs on one node, priority 5: it fits nowhere on the full cluster.
Workload node_preemptor() {
  return test::gpu_job(100, 5, 8, 1, TopologyRequirement::guaranteed("node"));
}

/// Everything one tier's search needs, for the tests of its phases. It owns its preemptor and
/// model: the context keeps references to both, and callers pass temporaries.
template <CostModel Model>
struct DriverHarness {
  using Search = solvers::detail::GreedySearch;

  DriverHarness(const Allocation& state, const Workload& preemptor, Model model,
                detail::SearchLimits limits = {})
      : preemptor(preemptor), model(model), context(state, this->preemptor, this->model) {
    run.emplace(detail::SolveRun<Model, Search>{.state = state,
                                                 .context = context,
                                                 .search = search,
                                                 .limits = limits,
                                                 .cache = nullptr,
                                                 .deadline = deadline,
                                                 .statistics = statistics,
                                                 .log = log,
                                                 .downgrades = downgrades,
                                                 .floor = context.price_floor(),
                                                 .grid = context.cost_grid()});
  }

  [[nodiscard]] detail::TierSearch<Model, Search> tier(std::size_t index = 0) const {
    return detail::TierSearch<Model, Search>(*run, index);
  }

  Workload preemptor;
  Model model;
  detail::PreemptionContext<Model> context;
  Search search;
  detail::DeadlineWatch deadline{detail::Clock::time_point::max()};
  SolverStatistics statistics;
  detail::RejectionLog log;
  std::vector<Downgrade> downgrades;
  std::optional<detail::SolveRun<Model, Search>> run;
};

}  // namespace

TEST_SUITE("solve_driver") {
  TEST_CASE("fits already: a plan without victims only when the preemptor fits as is") {
    Allocation state(test::shared(shapes::cluster(shapes::hgx_h100(), 4, 2)));
    const Workload preemptor = node_preemptor();
    SolverStatistics statistics;
    const cost::victim_count model;
    {
      const detail::PreemptionContext<cost::victim_count> context(state, preemptor, model);
      const auto plan = detail::plan_if_fits_already("greedy", state, context, statistics);
      REQUIRE(plan.has_value());
      CHECK(plan->status == PlanStatus::no_preemption_needed);
      CHECK(plan->victims.empty());
      CHECK(plan->target_domain.valid());
    }
    const Allocation full = full_driver_cluster();
    const detail::PreemptionContext<cost::victim_count> context(full, preemptor, model);
    CHECK_FALSE(detail::plan_if_fits_already("greedy", full, context, statistics).has_value());
  }

  TEST_CASE("candidate order: unread targets in id order, nothing read") {
    const Allocation state = full_driver_cluster();
    DriverHarness<cost::victim_count> harness(state, node_preemptor(), {});
    auto tier = harness.tier();
    tier.order_candidates();
    const auto targets = harness.context.targets(tier.tier);
    CHECK(targets.size() == 4);
    CHECK(std::vector<DomainId>(targets.begin(), targets.end()) == tier.unread);
    CHECK(tier.candidates.empty());
    CHECK(harness.statistics.domains_considered == 4);
    CHECK(harness.statistics.victims_considered == 0);  // no domain read yet
  }

  TEST_CASE("candidate order: the full scan reads every target into a heap") {
    const Allocation state = full_driver_cluster();
    detail::SearchLimits limits;
    limits.full_scan = true;
    DriverHarness<cost::victim_count> harness(state, node_preemptor(), {}, limits);
    auto tier = harness.tier();
    tier.order_candidates();
    CHECK(tier.unread.empty());
    REQUIRE(tier.candidates.size() == 4);
    CHECK(std::is_heap(tier.candidates.begin(), tier.candidates.end(), tier.later));
    CHECK(std::all_of(tier.candidates.begin(), tier.candidates.end(),
                      [](const auto& candidate) { return candidate.read; }));
    // Each node holds 4 two-GPU jobs: every plan there evicts all 4.
    CHECK(tier.candidates.front().bound == 4.0);
    CHECK(harness.statistics.victims_considered == 16);
  }

  TEST_CASE("candidate order: a priced model starts from one group, the root, holding all") {
    const Allocation state = full_driver_cluster();
    DriverHarness<cost::priority_weighted> harness(state, node_preemptor(), {});
    auto tier = harness.tier();
    tier.order_candidates();
    REQUIRE(tier.candidates.size() == 1);
    CHECK(tier.candidates.front().target == Topology::root());
    CHECK(tier.candidates.front().members == 4);
    CHECK_FALSE(tier.candidates.front().read);
    CHECK(tier.groups == 1);
    CHECK(tier.grouped_targets == 4);
    CHECK(tier.unread.empty());
    CHECK(harness.statistics.domains_considered == 0);  // counted when the group opens
  }

  TEST_CASE("pruning: an incumbent at the price floor closes the tier without a search") {
    const Allocation state = full_driver_cluster();
    DriverHarness<cost::victim_count> harness(state, node_preemptor(), {});
    auto tier = harness.tier();
    tier.order_candidates();
    tier.best_cost = 1.0;  // an incumbent no domain (floor 1) can beat
    tier.search_domains();
    CHECK_FALSE(tier.found());
    CHECK(tier.proven_empty());
    CHECK(harness.statistics.domains_solved == 0);
    CHECK(harness.statistics.domains_pruned == 4);
    CHECK(harness.statistics.victims_considered == 0);
    CHECK(harness.log.total() == 4);
    // The log keeps why as data; the text is worded from it (`fill_text`) when asked for.
    PreemptionPlan plan;
    plan.rejected = harness.log.verdicts();
    plan.rejected_total = harness.log.total();
    REQUIRE(plan.rejected.size() == 4);
    CHECK(plan.rejected.front().kind == RejectionKind::bound_unread);
    CHECK(plan.rejected.front().value == 1.0);
    CHECK(plan.rejected.front().best == 1.0);
    CHECK(plan.rejected.front().reason.empty());
    harness.context.fill_text(plan);
    CHECK(plan.rejected.front().reason == "not read: index lower bound 1 >= best cost 1");
  }

  TEST_CASE("the phases in order give the solver's plan") {
    const Allocation state = full_driver_cluster();
    const Workload preemptor = node_preemptor();
    DriverHarness<cost::victim_count> harness(state, preemptor, {});
    auto tier = harness.tier();
    tier.order_candidates();
    tier.search_domains();
    REQUIRE(tier.found());
    PreemptionPlan phased = tier.make_plan("greedy", false);
    CHECK(phased.explanation.empty());  // plan assembly keeps facts; the driver words them
    harness.context.fill_text(phased);
    const PreemptionPlan solved = solvers::greedy.solve(state, preemptor, cost::victim_count{});
    CHECK(phased.status == solved.status);
    CHECK(phased.target_domain == solved.target_domain);
    CHECK(phased.cost == solved.cost);
    CHECK(phased.victims == solved.victims);
    CHECK(phased.explanation == solved.explanation);
  }
}

}  // namespace topopreempt
