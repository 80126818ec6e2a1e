// SPDX-License-Identifier: MIT
// The simulator's periodic cluster controller (`SimulationOptions::controller`,
// `sim::ClusterControl`): call times, growing and shrinking elastic jobs, evicting, holding
// capacity in use or idle, errors, determinism; on hand-computed traces.
#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "support.hpp"
#include "topopreempt/capacity/loaning.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/sim/sim.hpp"
#include "topopreempt/solvers/greedy.hpp"

namespace {

using namespace topopreempt;

std::shared_ptr<const Topology> one_server() {
  return test::shared(shapes::single_machine(shapes::rtx4090_server()));
}

/// A training job of `replicas` one-GPU workers; elastic down to `min` when given.
Workload trainer(std::uint64_t id, std::int32_t replicas, std::optional<std::int32_t> min = {}) {
  Workload w;
  w.id = WorkloadId{id};
  w.replicas = replicas;
  w.min_replicas = min;
  w.demand.whole_devices = 1;
  w.demand.resources = ResourceSchema::standard().make({{"cpu_milli", 2000}, {"memory_mib", 4096}});
  return w;
}

/// Every GPU and core of the server, held by the controller.
Workload whole_server(std::uint64_t id) {
  Workload w;
  w.id = WorkloadId{id};
  w.name = "inference";
  w.preemptible = false;
  w.demand.whole_devices = 8;
  w.demand.resources = ResourceSchema::standard().make({{"cpu_milli", 8000}});
  return w;
}

sim::SimulationMetrics run(const sim::Trace& trace, double interval,
                           std::function<void(sim::ClusterControl&)> controller) {
  sim::SimulationOptions options;
  options.verify_plans = true;
  options.record_events = true;
  options.controller = std::move(controller);
  options.control_interval_s = interval;
  return sim::simulate(one_server(), trace, solvers::greedy, cost::victim_count{}, options);
}

}  // namespace

TEST_SUITE("simulator controller") {
  TEST_CASE("the controller is called every interval while a job is unfinished") {
    std::vector<double> calls;
    const auto m = run({{trainer(1, 1), 0.0, 100.0}}, 30.0,
                       [&](sim::ClusterControl& control) { calls.push_back(control.now()); });
    CHECK(calls == std::vector<double>{0.0, 30.0, 60.0, 90.0});  // none after the completion
    CHECK(m.control_calls == 4);
    CHECK(m.mean_jct_s == 100.0);
    CHECK(m.end_time_s == 100.0);
  }

  TEST_CASE("growing an elastic job speeds it up; growth stops where nothing fits") {
    const auto m = run({{trainer(1, 2, 1), 0.0, 100.0}}, 1000.0, [](sim::ClusterControl& control) {
      if (control.now() != 0.0) return;
      REQUIRE(control.running().size() == 1);
      CHECK(control.running()[0].remaining_work_s == 100.0);
      CHECK(control.grow(WorkloadId{1}, 2) == 2);
      CHECK(control.state().workload(WorkloadId{1}).replicas == 4);
    });
    CHECK(m.grows == 2);
    CHECK(m.mean_jct_s == doctest::Approx(50.0));  // 4 of 2 replicas: twice the work rate

    const auto full = run({{trainer(1, 2, 1), 0.0, 100.0}}, 1000.0, [](sim::ClusterControl& c) {
      if (c.now() == 0.0) CHECK(c.grow(WorkloadId{1}, 10) == 6);  // 8 GPUs in the server
    });
    CHECK(full.grows == 6);
    CHECK(full.mean_jct_s == doctest::Approx(25.0));
  }

  TEST_CASE("shrinking keeps the work and slows the job down") {
    const auto m = run({{trainer(1, 4, 2), 0.0, 100.0}}, 50.0, [](sim::ClusterControl& control) {
      if (control.now() != 50.0) return;
      CHECK(control.running()[0].remaining_work_s == 50.0);
      const std::vector<std::int32_t> drop{0, 3};
      control.shrink(WorkloadId{1}, drop);
    });
    CHECK(m.shrinks == 1);
    CHECK(m.victims == 0);  // not a preemption plan's victim
    CHECK(m.mean_jct_s == doctest::Approx(150.0));
  }

  TEST_CASE("evicting loses the work since the checkpoint and requeues after the delay") {
    const auto m =
        run({{trainer(1, 1), 0.0, 100.0, 20.0, 10.0}}, 50.0, [](sim::ClusterControl& control) {
          if (control.now() == 50.0) control.evict(WorkloadId{1});
        });
    CHECK(m.evictions == 1);
    CHECK(m.gpu_hours_lost == doctest::Approx(10.0 / 3600.0));
    CHECK(m.mean_jct_s == doctest::Approx(120.0));  // back at 60, 60 s of work left
    CHECK(m.mean_queue_s == doctest::Approx(0.0));
  }

  TEST_CASE("held capacity blocks jobs; idle holds do not count as allocated") {
    const auto hold = [](sim::HeldCapacity use) {
      return [use](sim::ClusterControl& control) {
        if (control.now() == 0.0) {
          const Workload server = whole_server(900);
          const PlacementSearchResult found = find_placement(control.state(), server);
          REQUIRE(found.found);
          control.reserve(server, found.placement, use);
        } else if (control.now() == 100.0) {
          control.release(WorkloadId{900});
        }
      };
    };
    // Held at 0, before the job arrives at 1; released at 100; the job runs 100..110.
    const sim::Trace trace{{trainer(1, 1), 1.0, 10.0}};
    const auto idle = run(trace, 100.0, hold(sim::HeldCapacity::idle));
    CHECK(idle.mean_queue_s == doctest::Approx(99.0));
    CHECK(idle.mean_jct_s == doctest::Approx(109.0));
    CHECK(idle.end_time_s == 110.0);
    CHECK(idle.mean_allocation_ratio == doctest::Approx((10.0 / 8.0) / 110.0));
    const auto busy = run(trace, 100.0, hold(sim::HeldCapacity::in_use));
    CHECK(busy.mean_jct_s == doctest::Approx(109.0));
    CHECK(busy.mean_allocation_ratio == doctest::Approx((100.0 + 10.0 / 8.0) / 110.0));
  }

  TEST_CASE("invalid actions throw naming the job and change nothing") {
    bool checked = false;
    const sim::Trace trace{{trainer(1, 2), 0.0, 100.0}, {trainer(2, 8), 0.0, 50.0}};
    const auto m = run(trace, 1000.0, [&](sim::ClusterControl& control) {
      if (control.now() != 0.0) return;
      CHECK_THROWS_WITH_AS(control.evict(WorkloadId{77}), doctest::Contains("77"),
                           std::invalid_argument);
      CHECK_THROWS_WITH_AS(control.evict(WorkloadId{2}), doctest::Contains("not running"),
                           std::invalid_argument);
      CHECK_THROWS_WITH_AS(control.grow(WorkloadId{1}, 1), doctest::Contains("not elastic"),
                           std::invalid_argument);
      const std::vector<std::int32_t> drop{0};
      CHECK_THROWS_AS(control.shrink(WorkloadId{1}, drop), std::invalid_argument);
      Workload preemptible = whole_server(900);
      preemptible.preemptible = true;
      CHECK_THROWS_WITH_AS(control.reserve(preemptible, Placement{}, sim::HeldCapacity::idle),
                           doctest::Contains("preemptible"), std::invalid_argument);
      CHECK_THROWS_WITH_AS(control.release(WorkloadId{1}), doctest::Contains("not a reservation"),
                           std::invalid_argument);
      CHECK(control.state().workload(WorkloadId{1}).replicas == 2);
      CHECK(control.waiting().size() == 1);
      checked = true;
    });
    CHECK(checked);
    CHECK(m.mean_jct_s == doctest::Approx((100.0 + 150.0) / 2.0));

    sim::SimulationOptions options;
    options.controller = [](sim::ClusterControl&) {};
    CHECK_THROWS_WITH_AS(
        (void)sim::simulate(one_server(), trace, solvers::greedy, cost::victim_count{}, options),
        doctest::Contains("control_interval_s"), std::invalid_argument);
  }

  TEST_CASE("Aryl's reclaim plan carried out through the controller frees the hosts") {
    // Two servers; an elastic job of 12 workers (min 4) spans both. Reclaiming one server
    // shrinks it, and the reclaimed server is then held for inference.
    const auto topology = test::shared(shapes::cluster(shapes::rtx4090_server(), 2, 2));
    sim::SimulationOptions options;
    options.verify_plans = true;
    options.control_interval_s = 10.0;
    std::size_t reclaimed = 0;
    options.controller = [&](sim::ClusterControl& control) {
      if (control.now() != 10.0) return;
      const Topology& topo = control.state().topology();
      const auto hosts = topo.domains_at(topo.host_level());
      const std::vector<DomainId> loaned(hosts.begin(), hosts.end());
      const capacity::ReclaimPlan plan = capacity::reclaim_servers(control.state(), loaned, 1);
      REQUIRE(plan.status == PlanStatus::feasible);
      for (const Victim& victim : plan.victims) {
        if (victim.action == VictimAction::shrink) {
          control.shrink(victim.id, victim.dropped_replicas);
        } else {
          control.evict(victim.id);
        }
      }
      const Workload server = whole_server(900);
      const PlacementSearchResult found = find_placement(control.state(), server, plan.hosts()[0]);
      REQUIRE(found.found);
      control.reserve(server, found.placement, sim::HeldCapacity::in_use);
      ++reclaimed;
    };
    const auto m = sim::simulate(topology, {{trainer(1, 12, 4), 0.0, 100.0}}, solvers::greedy,
                                 cost::victim_count{}, options);
    CHECK(reclaimed == 1);
    CHECK(m.shrinks == 1);
    CHECK(m.evictions == 0);
    CHECK(m.jobs_completed == 1);
  }

  TEST_CASE("a run with a controller is byte-for-byte deterministic") {
    const auto controller = [](sim::ClusterControl& control) {
      for (const sim::JobStatus& job : control.running()) {
        if (job.min_replicas && job.replicas < 2 * job.trace_replicas)
          (void)control.grow(job.id, 1);
      }
    };
    sim::Trace trace;
    for (std::uint64_t i = 1; i <= 6; ++i) {
      trace.push_back(
          {trainer(i, 2, 1), 7.0 * static_cast<double>(i), 60.0 + static_cast<double>(i)});
    }
    const auto a = run(trace, 5.0, controller);
    const auto b = run(trace, 5.0, controller);
    CHECK(a.grows > 0);
    CHECK(a.digest() == b.digest());
  }
}
