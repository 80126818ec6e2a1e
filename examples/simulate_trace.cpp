// SPDX-License-Identifier: MIT
// Replays a trace of your own (CSV, columns in docs/simulator.md) on four of the paper's
// 8x RTX 4090 servers, once with branch-and-bound and once with Kubernetes' DefaultPreemption,
// and prints what each preemption policy cost. Usage: topopreempt_simulate_trace [trace.csv]
// (default: examples/traces/sample.csv, run from the repository root).
#include <iostream>
#include <memory>
#include <string>

#include "topopreempt/baselines/kube_default.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/sim/sim.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"

using namespace topopreempt;

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "examples/traces/sample.csv";
  auto topology = std::make_shared<const Topology>(shapes::cluster(shapes::rtx4090_server(), 4, 4));
  const sim::Trace trace = sim::load_trace_csv(path, *topology);

  sim::SimulationOptions options;
  options.verify_plans = true;           // check every plan with verify_plan
  options.min_preemptor_priority = 100;  // only serving pods may preempt
  options.seed = 42;
  options.progress = [](const sim::SimulationProgress& p) {  // headers print nothing: you do
    if (p.jobs_finished == p.jobs) std::cerr << "simulated " << p.now_s << " s\n";
  };

  const auto report = [](const sim::SimulationMetrics& m) {
    std::cout << m.solver << ": " << m.preemptions << " preemptions, hit rate " << 100.0 * m.hit_rate()
              << "%, " << m.victims << " victims (cost " << m.victim_cost << "), " << m.gpu_hours_lost
              << " GPU-hours lost, mean JCT " << m.mean_jct_s << " s, mean allocation "
              << 100.0 * m.mean_allocation_ratio << "%, plans rejected by the verifier " << m.plans_rejected
              << "\n";
    if (const auto serving = m.waits_of(100)) {
      std::cout << "  serving wait p50 " << serving->p50_s << " s, p99 " << serving->p99_s << " s\n";
    }
  };
  const cost::priority_weighted model{.offset = 1.0};
  const sim::SimulationMetrics exact = sim::simulate(topology, trace, solvers::branch_and_bound, model, options);
  const sim::SimulationMetrics kube = sim::simulate(topology, trace, baselines::kube_default, model, options);
  report(exact);
  report(kube);
  return exact.plans_rejected == 0 && exact.hit_rate() == 1.0 ? 0 : 1;
}
