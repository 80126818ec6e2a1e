// SPDX-License-Identifier: MIT
// Quick start: the paper's 8x RTX 4090 servers, full of low-priority jobs; an inference job
// that needs 2 GPUs inside one socket arrives. Every solver explains whom it would preempt.
#include <iostream>
#include <memory>
#include <string_view>

#include "topopreempt/topopreempt.hpp"

using namespace topopreempt;

namespace {
Workload job(std::uint64_t id, std::int32_t priority, std::int32_t gpus) {
  Workload workload;
  workload.id = WorkloadId{id};
  workload.name = "batch-" + std::to_string(id);
  workload.priority = priority;
  workload.demand.whole_devices = gpus;
  workload.demand.resources =
      ResourceSchema::standard().make({{"cpu_milli", 4000 * gpus}, {"memory_mib", 16384 * gpus}});
  return workload;
}
}  // namespace

int main(int argc, char** argv) {
  // No options: any argument gets the usage (on stdout for --help, exit 0; else stderr, exit 2)
  // instead of the demo, so that `--help` never runs it.
  if (argc > 1) {
    const std::string_view arg = argv[1];
    const bool help = arg == "--help" || arg == "-h";
    (help ? std::cout : std::cerr)
        << (help ? "" : "unknown argument '" + std::string(arg) + "'\n")
        << "usage: " << argv[0] << "\n"
        << "Builds a cluster of the topology-aware preemption paper's 8x RTX 4090 servers full of\n"
           "low-priority jobs and shows, for every solver and baseline, whom it would preempt so\n"
           "that a 2-GPU inference job guaranteed inside one socket can start, and why. Takes no\n"
           "options.\n";
    return help ? 0 : 2;
  }
  // Two racks of two servers: 32 GPUs, 2 sockets and 8 NUMA nodes per server.
  const auto topology = std::make_shared<const Topology>(shapes::cluster(shapes::rtx4090_server(), 4, 2));
  Allocation cluster(topology);
  // Fill every GPU with single-GPU training jobs of mixed priorities (0..3).
  for (std::uint64_t id = 1; id <= 32; ++id) {
    const Workload workload = job(id, static_cast<std::int32_t>(id * 7 % 4), 1);
    cluster.add(workload, find_placement(cluster, workload).placement);
  }
  // The preemptor: 2 GPUs guaranteed inside one socket (its tensor-parallel pair), priority 10.
  Workload inference = job(100, 10, 2);
  inference.name = "llm-serving";
  inference.replica_scope = TopologyRequirement::guaranteed("socket");

  const cost::priority_weighted cost_model{.offset = 1.0};  // cost = priority + 1 per victim
  const auto report = [&](const auto& solver) {
    const PreemptionPlan plan = solver.solve(cluster, inference, cost_model);
    const bool valid = verify_plan(cluster, inference, plan, cost_model, {.require_topology = false}).ok;
    std::cout << "=== " << plan.solver << ": " << to_string(plan.status) << ", cost " << plan.cost
              << ", " << plan.victims.size() << " victim(s), topology "
              << (plan.topology_satisfied ? "kept" : "BROKEN (preemption wasted)")
              << (valid ? "" : ", plan INVALID") << ", " << plan.statistics.seconds * 1e6 << " us\n"
              << plan.explanation << "placement: " << plan.placement.describe(*topology) << "\n\n";
  };
  report(solvers::greedy);
  report(solvers::knapsack);
  report(solvers::branch_and_bound);
  report(baselines::kube_default);        // Kubernetes: node-level fit, blind to sockets
  report(baselines::exhaustive_subsets);  // the paper's k-subset search
  return 0;
}
