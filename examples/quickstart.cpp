// SPDX-License-Identifier: MIT
// Quick start: the paper's 8x RTX 4090 servers, full of low-priority jobs; an inference job
// that needs 2 GPUs inside one socket arrives. First a table: whom each solver and baseline
// would preempt, at what cost, and whether the preemptor's topology holds; then why the exact
// solvers chose their plan. `--explain all` adds every solver's own explanation.
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

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

// One row of the table, and what explaining it needs.
struct Row {
  PreemptionPlan plan;
  bool valid = false;
  bool exact = false;  // one of our exact solvers (not a baseline)
};

std::string victim_list(const PreemptionPlan& plan) {
  std::ostringstream out;
  for (std::size_t i = 0; i < plan.victims.size(); ++i) {
    out << (i == 0 ? "" : ",") << plan.victims[i].id.value;
  }
  return plan.victims.empty() ? "-" : out.str();
}

void print_table(const std::vector<Row>& rows) {
  std::cout << std::left << std::setw(20) << "solver" << std::setw(22) << "status" << std::setw(12)
            << "victims" << std::setw(8) << "cost" << std::setw(30) << "topology kept"
            << "time\n";
  for (const Row& row : rows) {
    const PreemptionPlan& plan = row.plan;
    std::ostringstream status;
    status << to_string(plan.status) << (row.valid ? "" : " INVALID");
    std::ostringstream time;
    time << std::fixed << std::setprecision(0) << plan.statistics.seconds * 1e6 << " us";
    std::cout << std::left << std::setw(20) << plan.solver << std::setw(22) << status.str()
              << std::setw(12) << victim_list(plan) << std::setw(8) << plan.cost << std::setw(30)
              << (plan.topology_satisfied ? "yes" : "NO (preemption wasted)") << time.str() << "\n";
  }
}

void explain(const PreemptionPlan& plan, const Topology& topology, std::string_view title) {
  std::cout << "\n=== " << title << "\n"
            << plan.explanation << "placement: " << plan.placement.describe(topology) << "\n";
}

bool same_decision(const PreemptionPlan& a, const PreemptionPlan& b) {
  return a.status == b.status && a.victims == b.victims && a.cost == b.cost &&
         a.target_domain == b.target_domain;
}

int usage(const char* program, std::ostream& out, int code) {
  out << "usage: " << program << " [--explain all]\n"
      << "Builds a cluster of the topology-aware preemption paper's 8x RTX 4090 servers full of\n"
         "low-priority jobs and shows, for every solver and baseline, whom it would preempt so\n"
         "that a 2-GPU inference job guaranteed inside one socket can start: first a table\n"
         "(solver, status, victims, cost, topology kept, time), then why the exact solvers chose\n"
         "their plan. --explain all: every solver's and baseline's explanation as well.\n";
  return code;
}
}  // namespace

int main(int argc, char** argv) {
  // Any argument other than `--explain all` gets the usage (stdout and exit 0 for --help, else
  // stderr and exit 2) instead of the demo, so that `--help` never runs it.
  bool explain_all = false;
  if (argc > 1) {
    const std::string_view arg = argv[1];
    if (arg == "--help" || arg == "-h") return usage(argv[0], std::cout, 0);
    if (arg == "--explain" && argc == 3 && std::string_view(argv[2]) == "all") {
      explain_all = true;
    } else {
      std::cerr << "unknown argument '" << arg << "'\n";
      return usage(argv[0], std::cerr, 2);
    }
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
  std::vector<Row> rows;
  const auto decide = [&](const auto& solver) {
    using Solver = std::remove_cvref_t<decltype(solver)>;
    PreemptionPlan plan = solver.solve(cluster, inference, cost_model);
    const bool valid = verify_plan(cluster, inference, plan, cost_model, {.require_topology = false}).ok;
    rows.push_back({std::move(plan), valid, is_exact_v<Solver> && !is_baseline_v<Solver>});
  };
  decide(solvers::greedy);
  decide(solvers::knapsack);
  decide(solvers::branch_and_bound);
  decide(baselines::kube_default);        // Kubernetes: node-level fit, blind to sockets
  decide(baselines::exhaustive_subsets);  // the paper's k-subset search

  std::cout << "Whom to preempt so that llm-serving (2 GPUs, guaranteed in one socket, priority 10)"
               " can start\non 4 servers of 8 RTX 4090 full of batch jobs; cost = priority + 1 per"
               " victim.\n\n";
  print_table(rows);

  // The exact solvers' plan, once per distinct decision (they agree: both prove the optimum),
  // in branch_and_bound's words: the last exact solver of the table.
  std::vector<const Row*> explained;
  for (auto row = rows.rbegin(); row != rows.rend(); ++row) {
    if (!row->exact) continue;
    bool seen = false;
    for (const Row* other : explained) seen = seen || same_decision(other->plan, row->plan);
    if (!seen) explained.push_back(&*row);
  }
  for (const Row* row : explained) {
    std::string names;
    for (const Row& other : rows) {
      if (other.exact && same_decision(other.plan, row->plan)) {
        names += (names.empty() ? "" : " and ") + std::string(other.plan.solver);
      }
    }
    explain(row->plan, *topology, "Why " + names + " chose this plan");
  }
  if (explain_all) {
    for (const Row& row : rows) explain(row.plan, *topology, std::string(row.plan.solver));
  } else {
    std::cout << "\n(" << argv[0] << " --explain all: every solver's explanation)\n";
  }
  return 0;
}
