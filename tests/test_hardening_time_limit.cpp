// SPDX-License-Identifier: MIT
// Issue 11, item 13: a solver's time limit bounds the whole `solve` (the scan of every
// candidate domain too, not only the search), and huge limits saturate instead of wrapping.
// Issue 34: a limit of 0 still searches the most promising domain, so it answers with a plan.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "topopreempt/model/cluster_generator.hpp"
#include "topopreempt/solvers/detail/preemption_context.hpp"
#include "topopreempt/plan/verifier.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"

using namespace topopreempt;

TEST_SUITE("hardening_time_limit") {
  TEST_CASE("a zero time limit stops the scan at the first searchable domain, with a plan") {
    ClusterSpec spec;
    spec.nodes = 400;
    const GeneratedCluster cluster = generate_cluster(spec);
    Workload preemptor;
    preemptor.id = WorkloadId{1'000'000};
    preemptor.priority = 1'000;
    preemptor.demand.whole_devices = 8;
    preemptor.demand.resources = cluster.topology->schema().zeros();
    preemptor.replica_scope = TopologyRequirement::guaranteed("node");
    const cost::priority_weighted model;
    const auto unlimited = solvers::branch_and_bound.solve(cluster.state, preemptor, model);
    REQUIRE(unlimited.status == PlanStatus::optimal);
    REQUIRE(unlimited.statistics.domains_considered >= 400);

    const auto limited = solvers::branch_and_bound_solver{}
                             .time_limit(std::chrono::nanoseconds(0))
                             .solve(cluster.state, preemptor, model);
    // A plan, never "infeasible" (it used to be, with nothing proven), from one domain
    // searched, and no more read than the unlimited solve reads: the index's bounds lead both
    // to the same node, and past the deadline nothing else is read.
    REQUIRE(limited.has_victims_plan());
    CHECK(verify_plan(cluster.state, preemptor, limited, model).ok);
    CHECK(limited.statistics.domains_solved == 1);
    CHECK(limited.statistics.victims_considered <= unlimited.statistics.victims_considered);
    CHECK(limited.statistics.victims_considered * 10 < cluster.state.workload_ids().size());
    if (limited.status == PlanStatus::feasible) {
      CHECK(limited.statistics.limit_reached);
    } else {
      // Proven anyway: what was left unread could not beat it (its least bound reached it).
      CHECK(limited.cost == unlimited.cost);
    }
  }

  TEST_CASE("deadlines saturate instead of overflowing") {
    using detail::Clock;
    const Clock::time_point start = Clock::now();
    CHECK(detail::deadline_after(start, std::chrono::nanoseconds::max()) ==
          Clock::time_point::max());
    CHECK(detail::deadline_after(start, std::chrono::nanoseconds(-5)) == start);
    CHECK(detail::deadline_after(start, std::chrono::seconds(1)) ==
          start + std::chrono::seconds(1));
    // 2^40 ms, the largest limit a snapshot or the CLI accepts, is far from saturation.
    const std::chrono::milliseconds largest(std::int64_t{1} << 40);
    CHECK(detail::deadline_after(start, largest) == start + largest);
  }

  TEST_CASE("time_limit setters saturate: 9.3e12 ms (the audit's trigger) means no limit") {
    // duration_cast<nanoseconds>(milliseconds(9'300'000'000'000)) is signed overflow (UBSan).
    const auto huge = solvers::branch_and_bound_solver{}.time_limit(
        std::chrono::milliseconds(9'300'000'000'000));
    CHECK(huge.limits().time_limit == std::chrono::nanoseconds::max());
    const auto hours = solvers::branch_and_bound_solver{}.time_limit(std::chrono::hours(1));
    CHECK(hours.limits().time_limit == std::chrono::hours(1));
    const auto negative =
        solvers::branch_and_bound_solver{}.time_limit(std::chrono::seconds(-3));
    CHECK(negative.limits().time_limit == std::chrono::nanoseconds::zero());
    const auto fractional = solvers::branch_and_bound_solver{}.time_limit(
        std::chrono::duration<double, std::milli>(1.5));
    CHECK(fractional.limits().time_limit == std::chrono::microseconds(1500));
  }
}
