// SPDX-License-Identifier: MIT
// Experiment B2: the openb trace WITH preemption. QoS becomes priority (LS and Guaranteed: 100,
// not preemptible, GPU pods of up to 2 GPUs guaranteed inside one socket of the synthesised node
// topology; Burstable: 50, not preemptible; BE: 0, preemptible, no checkpoints). Pods arrive
// shuffled, one every 10 s, until 130% of the GPUs were requested, and do not finish before the
// end (FGD's protocol). LS pods that do not fit preempt BE pods; BE and Burstable pods
// that cannot start are dropped (FGD's protocol), LS pods wait. See EXPERIMENTS.md.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "common.hpp"
#include "openb.hpp"
#include "topopreempt/baselines/exhaustive_subsets.hpp"
#include "topopreempt/baselines/kube_default.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/sim/sim.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/greedy.hpp"
#include "topopreempt/solvers/knapsack.hpp"

using namespace topopreempt;

namespace {

constexpr std::int32_t ls_priority = 100;
constexpr double arrival_gap_s = 10.0;

sim::TraceJob as_job(const experiments::OpenbPod& pod, std::uint64_t id, double arrival) {
  sim::TraceJob job;
  job.workload = pod.workload(id);
  Workload& w = job.workload;
  if (pod.qos == "LS" || pod.qos == "Guaranteed") {
    w.priority = ls_priority;
    w.preemptible = false;
    if (pod.num_gpu >= 1 && pod.num_gpu <= 2)
      w.replica_scope = TopologyRequirement::guaranteed("socket");
  } else if (pod.qos == "Burstable") {
    w.priority = 50;
    w.preemptible = false;
  } else {
    w.priority = 0;
  }
  job.arrival_s = arrival;
  // As in FGD's protocol nothing finishes while pods arrive (the trace's own lifetimes are so
  // heavy-tailed that, replayed 10 s apart, the cluster would never fill).
  job.duration_s = 1e12;
  job.checkpoint_interval_s = 0.0;  // BE pods keep nothing
  job.restart_delay_s = 60.0;
  return job;
}

sim::Trace make_trace(const std::vector<experiments::OpenbPod>& pods, double capacity_gpus,
                      std::uint64_t seed, double load) {
  sim::Random random(seed);
  std::vector<std::size_t> order(pods.size());
  sim::Trace trace;
  double requested = 0.0;
  std::size_t next = order.size();
  for (std::uint64_t id = 1; requested < capacity_gpus * load; ++id) {
    if (next == order.size()) {
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      sim::shuffle(order, random);
      next = 0;
    }
    const experiments::OpenbPod& pod = pods[order[next++]];
    requested += pod.gpus();
    trace.push_back(as_job(pod, id, arrival_gap_s * static_cast<double>(id)));
  }
  return trace;
}

template <class Solver>
void run(const Solver& solver, const std::string& name, int run_index, int run_count,
         const std::shared_ptr<const Topology>& topology, const sim::Trace& trace,
         const experiments::Flags& flags, experiments::Table& table, bool& ok) {
  // Its fraction is of simulated time, and a decision costs more as the cluster fills towards
  // 130% load, so no ETA is extrapolated from it; the label says which run of how many this is.
  experiments::Progress bar("B2 run " + std::to_string(run_index) + "/" +
                                std::to_string(run_count) + " " + name,
                            flags.quiet, experiments::Eta::unknown);
  sim::SimulationOptions options;
  options.verify_plans = flags.verify;
  options.min_preemptor_priority = ls_priority;
  options.drop_unplaced_below_priority = ls_priority;
  // As in Experiment A (and the paper): a pod whose preemption broke its topology still runs.
  // With keep_waiting, kube_default re-preempts for the same pod at every pass (a storm of
  // evictions that says more about the retry loop than about the policy).
  options.wasted_preemptor = sim::WastedPreemptor::start_without_topology;
  options.seed = flags.seed;
  options.horizon_s = trace.back().arrival_s;
  options.progress_every = 200;
  options.progress = [&](const sim::SimulationProgress& p) {
    bar.update(p.now_s / options.horizon_s);
  };
  const auto m =
      sim::simulate(topology, trace, solver, cost::priority_weighted{.offset = 1.0}, options);
  bar.done();
  std::uint64_t ls_total = 0;
  for (const auto& job : trace) ls_total += job.workload.priority == ls_priority ? 1 : 0;
  const auto ls = m.waits_of(ls_priority).value_or(sim::PriorityWaits{});
  table.add({name, std::to_string(ls_total), std::to_string(ls.starts),
             std::to_string(ls_total - ls.starts), experiments::fixed(ls.p99_s, 0),
             std::to_string(m.preemptions), std::to_string(m.evictions),
             experiments::percent_or_na(m.hit_rate(), m.preemptions), experiments::fixed(m.gpu_hours_lost, 1),
             experiments::fixed(100.0 * m.mean_allocation_ratio, 2),
             experiments::fixed(
                 m.allocation.empty() ? 0.0 : 100.0 * m.allocation.back().allocated_gpu_ratio, 2),
             std::to_string(m.plans_rejected)});
  if (flags.check) {
    const bool ours = name != "kube_default" && name != "exhaustive_subsets";
    if (m.plans_rejected != 0 || (ours && m.hit_rate() != 1.0)) {
      std::cerr << "CHECK FAILED: " << name << ": hit rate " << m.hit_rate() << ", "
                << m.plans_rejected << " plans rejected\n";
      ok = false;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const experiments::FlagSpec spec{
      .accepted = {{experiments::ValueFlag::seed, "trace and simulation seed (default 1)"},
                   {experiments::ValueFlag::csv, "also write the table as CSV"}}};
  const experiments::Flags flags = experiments::parse_flags(argc, argv, spec);
  experiments::require_writable(argc, argv, spec, "--csv", flags.csv);
  const auto data = experiments::openb_data_dir_or_skip("Experiment B2", "openb/");
  if (!data) return flags.check ? 77 : 0;  // 77: ctest's SKIP_RETURN_CODE
  const auto topology = experiments::openb_cluster(*data);
  const auto pods = experiments::load_openb_pods(*data / "openb" / "openb_pod_list_default.csv");
  const double capacity = static_cast<double>(topology->capacity(Topology::root())(0)) / 1000.0;
  const sim::Trace trace = make_trace(pods, capacity, flags.seed, flags.short_run ? 1.1 : 1.3);
  experiments::Table table({"solver", "LS pods", "LS placed", "LS waiting", "LS wait p99 s",
                            "preemptions", "BE evictions", "hit rate %", "GPU-h lost",
                            "mean alloc %", "final alloc %", "plans rejected"});
  bool ok = true;
  const int runs = flags.short_run ? 4 : 5;
  run(solvers::greedy, "greedy", 1, runs, topology, trace, flags, table, ok);
  run(solvers::knapsack, "knapsack", 2, runs, topology, trace, flags, table, ok);
  run(solvers::branch_and_bound, "branch_and_bound", 3, runs, topology, trace, flags, table, ok);
  run(baselines::kube_default, "kube_default", 4, runs, topology, trace, flags, table, ok);
  if (!flags.short_run)
    run(baselines::exhaustive_subsets, "exhaustive_subsets", 5, runs, topology, trace, flags,
        table, ok);
  std::cout << "Experiment B2: openb default trace with preemption, " << trace.size()
            << " arrivals (seed " << flags.seed
            << "), 1,213 nodes with synthesised NUMA/socket topology\n\n";
  table.print_markdown(std::cout);
  table.write_csv(flags.csv);
  if (flags.check) std::cout << (ok ? "\nchecks passed\n" : "\nCHECKS FAILED\n");
  return ok ? 0 : 1;
}
