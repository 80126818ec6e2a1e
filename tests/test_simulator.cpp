// SPDX-License-Identifier: MIT
// The discrete-event simulator: event order, checkpoint arithmetic, requeue, shrink, metrics
// on hand-computed traces, byte-for-byte determinism, the CSV trace loader.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "support.hpp"
#include "topopreempt/baselines/kube_default.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/sim/sim.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/greedy.hpp"

namespace {

using namespace topopreempt;
using sim::EventKind;

std::shared_ptr<const Topology> paper_server() {
  return test::shared(shapes::single_machine(shapes::rtx4090_server()));
}

sim::TraceJob job(Workload workload, double arrival, double duration, double checkpoint = 0.0,
                  double restart = 0.0) {
  return {std::move(workload), arrival, duration, checkpoint, restart};
}

/// The paper's NUMA-pinned serving pod: 1 GPU and 6 cores of one NUMA node.
Workload serving(std::uint64_t id, std::int32_t priority = 10) {
  Workload w;
  w.id = WorkloadId{id};
  w.priority = priority;
  w.preemptible = false;
  w.demand.whole_devices = 1;
  w.demand.resources =
      ResourceSchema::standard().make({{"cpu_milli", 6000}, {"memory_mib", 16384}});
  w.replica_scope = TopologyRequirement::guaranteed("numa");
  return w;
}

sim::SimulationOptions logged() {
  sim::SimulationOptions options;
  options.record_events = true;
  options.verify_plans = true;
  return options;
}

std::vector<sim::EventRecord> expect(std::initializer_list<sim::EventRecord> list) { return list; }

}  // namespace

TEST_SUITE("simulator") {
  TEST_CASE("a completion frees room for an arrival of the same instant") {
    const sim::Trace trace{job(test::gpu_job(1, 0, 8), 0.0, 10.0),
                           job(test::gpu_job(2, 0, 1), 10.0, 5.0)};
    const auto metrics =
        sim::simulate(paper_server(), trace, solvers::greedy, cost::victim_count{}, logged());
    CHECK(metrics.events == expect({{0.0, EventKind::arrival, WorkloadId{1}},
                                    {0.0, EventKind::start, WorkloadId{1}},
                                    {10.0, EventKind::completion, WorkloadId{1}},
                                    {10.0, EventKind::arrival, WorkloadId{2}},
                                    {10.0, EventKind::start, WorkloadId{2}},
                                    {15.0, EventKind::completion, WorkloadId{2}}}));
    CHECK(metrics.jobs_completed == 2);
    CHECK(metrics.decisions == 0);
    CHECK(metrics.mean_jct_s == doctest::Approx(7.5));
    CHECK(metrics.end_time_s == 15.0);
  }

  TEST_CASE("the queue runs by priority, then by waiting time") {
    // A full machine; three 8-GPU jobs queue behind it and start one after the other.
    const sim::Trace trace{
        job(test::gpu_job(1, 0, 8), 0.0, 10.0), job(test::gpu_job(2, 0, 8), 1.0, 10.0),
        job(test::gpu_job(3, 5, 8), 2.0, 10.0), job(test::gpu_job(4, 0, 8), 1.5, 10.0)};
    sim::SimulationOptions options = logged();
    options.preemption = false;
    const auto metrics =
        sim::simulate(paper_server(), trace, solvers::greedy, cost::victim_count{}, options);
    std::vector<std::uint64_t> starts;
    for (const auto& e : metrics.events) {
      if (e.kind == EventKind::start) starts.push_back(e.id.value);
    }
    CHECK(starts == std::vector<std::uint64_t>{1, 3, 2, 4});
    REQUIRE(metrics.waits_of(5));
    CHECK(metrics.waits_of(5)->p50_s == doctest::Approx(8.0));
    REQUIRE(metrics.waits_of(0));
    CHECK(metrics.waits_of(0)->starts == 3);
    CHECK(metrics.waits_of(0)->p99_s == doctest::Approx(28.5));  // job 4: arrived 1.5, starts 30
  }

  TEST_CASE("an eviction loses the work since the last checkpoint and requeues after the delay") {
    // Batch: 8 GPUs, 100 s of work, checkpoints every 30 s, 5 s restart. Serving arrives at 70.
    Workload batch = test::gpu_job(1, 0, 8);
    const sim::Trace trace{job(batch, 0.0, 100.0, 30.0, 5.0), job(serving(2), 70.0, 10.0)};
    sim::SimulationOptions options = logged();
    options.min_preemptor_priority = 10;  // the requeued batch job does not ask the solver
    const auto metrics = sim::simulate(paper_server(), trace, solvers::branch_and_bound,
                                       cost::priority_weighted{}, options);
    CHECK(metrics.events == expect({{0.0, EventKind::arrival, WorkloadId{1}},
                                    {0.0, EventKind::start, WorkloadId{1}},
                                    {70.0, EventKind::arrival, WorkloadId{2}},
                                    {70.0, EventKind::eviction, WorkloadId{1}},
                                    {70.0, EventKind::start, WorkloadId{2}},
                                    {75.0, EventKind::requeue, WorkloadId{1}},
                                    {80.0, EventKind::completion, WorkloadId{2}},
                                    {80.0, EventKind::start, WorkloadId{1}},
                                    {120.0, EventKind::completion, WorkloadId{1}}}));
    // 70 s done, 60 s checkpointed: 10 s x 8 GPUs lost; 40 s left after the restart.
    CHECK(metrics.gpu_hours_lost == doctest::Approx(10.0 * 8.0 / 3600.0));
    CHECK(metrics.preemptions == 1);
    CHECK(metrics.victims == 1);
    CHECK(metrics.evictions == 1);
    CHECK(metrics.wasted_preemptions == 0);
    CHECK(metrics.hit_rate() == 1.0);
    CHECK(metrics.plans_verified == 1);
    CHECK(metrics.plans_rejected == 0);
    CHECK(metrics.victim_cost == doctest::Approx(2147483648.0));
    CHECK(metrics.mean_jct_s == doctest::Approx((10.0 + 120.0) / 2));
    CHECK(metrics.mean_queue_s == doctest::Approx((0.0 + 5.0) / 2));  // batch waited 75..80
    // GPUs held: 8 until 70, 1 until 80, 8 until 120 -> (70 + 10/8 + 40) / 120.
    CHECK(metrics.mean_allocation_ratio == doctest::Approx((70.0 + 10.0 / 8.0 + 40.0) / 120.0));
    CHECK(metrics.decisions == 1);
    CHECK(metrics.decision_seconds.size() == 1);
  }

  TEST_CASE("without checkpoints an eviction loses everything") {
    const sim::Trace trace{job(test::gpu_job(1, 0, 8), 0.0, 100.0, 0.0, 0.0),
                           job(serving(2), 70.0, 10.0)};
    const auto metrics =
        sim::simulate(paper_server(), trace, solvers::greedy, cost::victim_count{}, logged());
    CHECK(metrics.gpu_hours_lost == doctest::Approx(70.0 * 8.0 / 3600.0));
    CHECK(metrics.end_time_s == doctest::Approx(180.0));  // restarts at 80 with 100 s to go
  }

  TEST_CASE("an elastic victim is shrunk, keeps its work and runs slower") {
    Workload elastic = test::gpu_job(1, 0, 1, 8);
    elastic.min_replicas = 4;
    const sim::Trace trace{job(elastic, 0.0, 80.0, 0.0, 0.0), job(serving(2), 40.0, 10.0)};
    const auto metrics = sim::simulate(paper_server(), trace, solvers::branch_and_bound,
                                       cost::priority_weighted{}, logged());
    CHECK(metrics.shrinks == 1);
    CHECK(metrics.evictions == 0);
    CHECK(metrics.gpu_hours_lost == 0.0);
    // 40 s done at full size; 40 s left at 7/8 speed.
    CHECK(metrics.end_time_s == doctest::Approx(40.0 + 40.0 * 8.0 / 7.0));
  }

  TEST_CASE("kube_default's topology-blind plan is a wasted preemption") {
    // CPU-only pods hold the cores of NUMA nodes 0..6 (all 14 core groups); a 1-GPU batch pod
    // runs on each GPU, drawing its 1 core from NUMA 7. Kubernetes evicts one GPU pod, whose
    // NUMA node has no free core: the serving pod cannot start there.
    const auto topology = paper_server();
    sim::Trace trace;
    std::uint64_t id = 1;
    for (int numa = 0; numa < 7; ++numa) {
      Workload cpu_only;
      cpu_only.id = WorkloadId{id++};
      cpu_only.priority = 5;
      cpu_only.demand.resources = ResourceSchema::standard().make({{"cpu_milli", 12000}});
      cpu_only.replica_scope = TopologyRequirement::guaranteed("numa");
      trace.push_back(job(cpu_only, 0.0, 1000.0));
    }
    for (int gpu = 0; gpu < 8; ++gpu) {
      Workload pod = test::gpu_job(id++, 0, 1);
      pod.demand.resources = ResourceSchema::standard().make({{"cpu_milli", 1000}});
      trace.push_back(job(pod, 1.0, 1000.0));
    }
    trace.push_back(job(serving(100), 2.0, 10.0));
    const auto kube = sim::simulate(topology, trace, baselines::kube_default,
                                    cost::priority_weighted{}, logged());
    CHECK(kube.preemptions >= 1);
    CHECK(kube.wasted_preemptions >= 1);
    CHECK(kube.hit_rate() < 1.0);
    CHECK(kube.plans_rejected == 0);
    REQUIRE(kube.waits_of(10));
    CHECK(kube.waits_of(10)->p50_s > 0.0);  // the serving pod waited for a proper NUMA node
    sim::SimulationOptions relaxed = logged();
    relaxed.wasted_preemptor = sim::WastedPreemptor::start_without_topology;
    const auto paper =
        sim::simulate(topology, trace, baselines::kube_default, cost::priority_weighted{}, relaxed);
    CHECK(paper.wasted_preemptions == 1);
    CHECK(paper.preemptions == 1);
    REQUIRE(paper.waits_of(10));
    CHECK(paper.waits_of(10)->p50_s == 0.0);  // it ran at once, without its affinity
    const auto ours = sim::simulate(topology, trace, solvers::branch_and_bound,
                                    cost::priority_weighted{}, logged());
    CHECK(ours.wasted_preemptions == 0);
    CHECK(ours.plans_rejected == 0);
  }

  TEST_CASE("a run is byte-for-byte deterministic for a seed") {
    const auto topology = test::shared(shapes::cluster(shapes::rtx4090_server(), 4, 2));
    const auto make_trace = [](std::uint64_t seed) {
      sim::Random random(seed);
      sim::Trace trace;
      double t = 0.0;
      for (std::uint64_t id = 1; id <= 150; ++id) {
        t += sim::exponential(random, 20.0);
        const bool high = sim::uniform_below(random, 4) == 0;
        Workload w =
            high ? serving(id, 10)
                 : test::gpu_job(id, static_cast<std::int32_t>(sim::uniform_below(random, 3)),
                                 std::int32_t{1} << sim::uniform_below(random, 4));
        trace.push_back(job(w, t, 50.0 + sim::exponential(random, 400.0), 60.0, 10.0));
      }
      return trace;
    };
    sim::SimulationOptions options = logged();
    options.seed = 7;
    const auto trace = make_trace(11);
    const auto a = sim::simulate(topology, trace, solvers::branch_and_bound,
                                 cost::priority_weighted{}, options);
    const auto b = sim::simulate(topology, trace, solvers::branch_and_bound,
                                 cost::priority_weighted{}, options);
    CHECK(a.preemptions > 0);
    CHECK(a.digest() == b.digest());
    const auto c = sim::simulate(topology, make_trace(12), solvers::branch_and_bound,
                                 cost::priority_weighted{}, options);
    CHECK(a.digest() != c.digest());
    // A randomised placement policy is deterministic for a seed too.
    const auto r1 = sim::simulate(topology, trace, solvers::greedy, cost::victim_count{}, options,
                                  sim::random_placement{});
    const auto r2 = sim::simulate(topology, trace, solvers::greedy, cost::victim_count{}, options,
                                  sim::random_placement{});
    CHECK(r1.digest() == r2.digest());
  }

  TEST_CASE("dropping unplaced jobs (FGD's protocol) and the arrived-load curve") {
    sim::SimulationOptions options = logged();
    options.preemption = false;
    options.keep_unplaced = false;
    options.horizon_s = 10.0;  // the jobs run "forever": only the arrivals matter
    const sim::Trace trace{job(test::gpu_job(1, 0, 6), 1.0, 1e9),
                           job(test::gpu_job(2, 0, 4), 2.0, 1e9),
                           job(test::gpu_job(3, 0, 2), 3.0, 1e9)};
    const auto metrics = sim::simulate(paper_server(), trace, solvers::greedy, cost::victim_count{},
                                       options, sim::best_fit_placement{});
    CHECK(metrics.jobs_dropped == 1);
    REQUIRE(metrics.allocation.size() == 3);
    CHECK(metrics.allocation[1].arrived_gpu_ratio == doctest::Approx(10.0 / 8.0));
    CHECK(metrics.allocation[1].allocated_gpu_ratio == doctest::Approx(6.0 / 8.0));
    CHECK(metrics.allocation[2].allocated_gpu_ratio == doctest::Approx(1.0));
  }

  TEST_CASE("low priorities are dropped when unplaced, higher ones wait") {
    sim::SimulationOptions options = logged();
    options.preemption = false;
    options.drop_unplaced_below_priority = 5;
    const sim::Trace trace{job(test::gpu_job(1, 0, 8), 0.0, 10.0),
                           job(test::gpu_job(2, 0, 1), 1.0, 10.0),
                           job(test::gpu_job(3, 5, 1), 2.0, 10.0)};
    const auto metrics =
        sim::simulate(paper_server(), trace, solvers::greedy, cost::victim_count{}, options);
    CHECK(metrics.jobs_dropped == 1);
    CHECK(metrics.jobs_completed == 2);
    REQUIRE(metrics.waits_of(5));
    CHECK(metrics.waits_of(5)->p50_s == doctest::Approx(8.0));
  }

  TEST_CASE("best fit picks the tightest node; ties are broken by the seed only") {
    const auto topology = test::shared(shapes::cluster(shapes::rtx4090_server(), 3, 3));
    Allocation state(topology);
    test::start(state, test::gpu_job(1, 0, 4));  // node0 has 4 GPUs left
    sim::Random random(1);
    const auto placement = sim::best_fit_placement{.fgd_integer_scores = false}.place(
        state, test::gpu_job(2, 0, 2), random);
    REQUIRE(placement);
    CHECK(topology->path(topology->ancestor_at(placement->devices(*topology).front(),
                                               topology->host_level())) == "rack0/node0");
  }

  TEST_CASE("the trace CSV loader reads every column and names a bad line") {
    const auto topology = paper_server();
    const auto path = std::filesystem::temp_directory_path() / "topopreempt_sim_trace_test.csv";
    {
      std::ofstream out(path);
      out << sim::trace_csv_header << "\n"
          << "1,llm,0,3600,10,0,1,,1,0,6000,16384,guaranteed:numa,none,0,0\n"
          << "2,batch,5.5,600,0,1,4,2,1,0,2000,8192,,best_effort:socket,300,30\n"
          << "3,share,6,60,0,1,1,,0,500,1000,1024,none,none,0,0\n";
    }
    const sim::Trace trace = sim::load_trace_csv(path.string(), *topology);
    REQUIRE(trace.size() == 3);
    CHECK(trace[0].workload.replica_scope == TopologyRequirement::guaranteed("numa"));
    CHECK_FALSE(trace[0].workload.preemptible);
    CHECK(trace[1].workload.min_replicas == 2);
    CHECK(trace[1].workload.gang_scope == TopologyRequirement::best_effort("socket"));
    CHECK(trace[1].checkpoint_interval_s == 300.0);
    CHECK(trace[1].arrival_s == 5.5);
    CHECK(trace[2].workload.demand.whole_devices == 0);
    CHECK(trace[2].workload.demand.resources(0) == 500);
    {
      std::ofstream out(path);
      out << sim::trace_csv_header << "\n"
          << "1,llm,0,3600,10,0,1,,1,0,6000,16384,guaranteed:numa,none,0,0\n"
          << "2,bad,0,60,0,1,1,,1,0,x,0,none,none,0,0\n";
    }
    CHECK_THROWS_WITH(static_cast<void>(sim::load_trace_csv(path.string(), *topology)),
                      doctest::Contains(":3: column cpu_milli"));
    {
      std::ofstream out(path);
      out << sim::trace_csv_header << "\n"
          << "1,a,0,60,0,1,1,,1,0,0,0,guaranteed:rack,none,0,0\n";
    }
    CHECK_THROWS_WITH(static_cast<void>(sim::load_trace_csv(path.string(), *topology)),
                      doctest::Contains("unknown topology level 'rack'"));
    std::filesystem::remove(path);
  }

  TEST_CASE("invalid traces are rejected naming the job") {
    const sim::Trace duplicate{job(test::gpu_job(1, 0, 1), 0.0, 1.0),
                               job(test::gpu_job(1, 0, 1), 1.0, 1.0)};
    CHECK_THROWS_WITH(static_cast<void>(sim::simulate(paper_server(), duplicate, solvers::greedy,
                                                      cost::victim_count{})),
                      doctest::Contains("appears twice"));
    const sim::Trace zero{job(test::gpu_job(3, 0, 1), 0.0, 0.0)};
    CHECK_THROWS_WITH(static_cast<void>(sim::simulate(paper_server(), zero, solvers::greedy,
                                                      cost::victim_count{})),
                      doctest::Contains("workload 3"));
  }

  TEST_CASE("portable random draws") {
    sim::Random random(42);
    for (int i = 0; i < 1000; ++i) {
      const double u = sim::uniform01(random);
      CHECK((u >= 0.0 && u < 1.0));
      CHECK(sim::uniform_below(random, 7) < 7);
    }
    sim::Random a(5), b(5);
    std::vector<int> x{1, 2, 3, 4, 5, 6}, y = x;
    sim::shuffle(x, a);
    sim::shuffle(y, b);
    CHECK(x == y);
    // std::mt19937_64's 10000th output is fixed by the standard.
    sim::Random reference;
    reference.discard(9999);
    CHECK(reference() == 9981545732273789042ULL);
  }
}
