// SPDX-License-Identifier: MIT
// Plans as transactions and a queue of preemptors (docs/transactions.md): two planners work on
// copies of one cluster and commit to it; the second commit conflicts and names the moved
// domain. Then a queue plans for three pending preemptors at once and keeps its nominations
// across a cycle in which nothing they depend on changed.
#include <cstdlib>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <vector>

#include "topopreempt/topopreempt.hpp"

using namespace topopreempt;

namespace {
Workload job(std::uint64_t id, std::int32_t priority, std::int32_t gpus) {
  Workload workload;
  workload.id = WorkloadId{id};
  workload.name = "job-" + std::to_string(id);
  workload.priority = priority;
  workload.demand.whole_devices = gpus;
  workload.demand.resources =
      ResourceSchema::standard().make({{"cpu_milli", 4000 * gpus}, {"memory_mib", 16384 * gpus}});
  workload.replica_scope = TopologyRequirement::guaranteed("node");
  return workload;
}
}  // namespace

int main() {
  // Four 8-GPU servers, each running one 8-GPU training job of priority 1..4.
  const auto topology =
      std::make_shared<const Topology>(shapes::cluster(shapes::dense_8gpu_server(), 4, 4));
  Allocation cluster(topology);
  for (std::uint64_t id = 1; id <= 4; ++id) {
    const Workload training = job(id, static_cast<std::int32_t>(id), 8);
    cluster.add(training, find_placement(cluster, training).placement);
  }
  const cost::priority_weighted cost_model{.offset = 1.0};

  // --- Transactions: plan on copies, commit to the shared state. -------------------------
  const Workload first = job(100, 10, 8);
  const Workload second = job(101, 10, 8);
  const Allocation copy_a = cluster;  // e.g. two scheduler shards' snapshots
  const Allocation copy_b = cluster;
  const PreemptionPlan plan_a = solvers::branch_and_bound.solve(copy_a, first, cost_model);
  const PreemptionPlan plan_b = solvers::branch_and_bound.solve(copy_b, second, cost_model);
  const CommitResult landed = commit(cluster, plan_a, first);
  const CommitResult conflict = commit(cluster, plan_b, second);
  std::cout << first.label() << ": " << (landed ? "committed" : "conflict") << "\n"
            << second.label() << ": " << (conflict ? "committed" : "conflict");
  for (DomainId moved : conflict.moved) std::cout << ", " << topology->describe(moved) << " moved";
  std::cout << "\n";
  // The loser plans again on the state as it now stands.
  const PreemptionPlan retry = solvers::branch_and_bound.solve(cluster, second, cost_model);
  std::cout << second.label()
            << " after re-planning: " << (commit(cluster, retry, second) ? "committed" : "conflict")
            << "\n";

  // --- A queue of preemptors with nominations. -------------------------------------------
  const std::vector<Workload> pending{job(200, 20, 8), job(201, 30, 8), job(202, 5, 8)};
  Nominations nominations;  // kept by the caller from one scheduling cycle to the next
  for (int cycle = 1; cycle <= 2; ++cycle) {
    const QueueResult queue =
        plan_queue(cluster, pending, solvers::branch_and_bound, cost_model, nominations);
    std::cout << "cycle " << cycle << ":\n";
    for (const QueuedPlan& item : queue.plans) {
      std::cout << "  workload " << item.preemptor.value << ": " << to_string(item.status);
      if (item.plan.has_victims_plan()) {
        std::cout << ", evicts";
        for (const Victim& victim : item.plan.victims) std::cout << ' ' << victim.id.value;
        std::cout << " in " << topology->describe(item.plan.target_domain);
      }
      std::cout << "\n";
    }
    if (cycle == 2 && queue.count(NominationStatus::kept) != 2) return EXIT_FAILURE;
  }

  // --- A batch of your own: evict these and start that, all or nothing. ----------------------
  // `commit` is built on it; call it directly for a plan made elsewhere. A batch that cannot
  // land throws and changes nothing.
  const Workload urgent = job(300, 40, 8);
  const PreemptionPlan urgent_plan = solvers::greedy.solve(cluster, urgent, cost_model);
  bool batch_ok = !urgent_plan.has_victims_plan();
  if (urgent_plan.has_victims_plan()) {
    std::vector<Allocation::VictimChange> batch;
    for (const Victim& victim : urgent_plan.victims) {
      batch.push_back({victim.id, victim.action == VictimAction::evict, victim.dropped_replicas});
    }
    try {
      cluster.preempt_and_start({}, urgent, urgent_plan.placement);  // without its victims
    } catch (const std::invalid_argument& error) {
      std::cout << urgent.label() << " without evicting: refused (" << error.what() << ")\n";
    }
    cluster.preempt_and_start(batch, urgent, urgent_plan.placement);
    batch_ok = cluster.contains(urgent.id);
    std::cout << urgent.label() << " started after evicting " << batch.size() << " workload(s)\n";
  }
  return landed && !conflict && conflict.moved.size() == 1 && batch_ok ? EXIT_SUCCESS
                                                                       : EXIT_FAILURE;
}
