// SPDX-License-Identifier: MIT
// Embedding topopreempt in a scheduler loop (a Kubernetes PostFilter plugin or a Slurm-like
// controller): a pending queue, an `Allocation` kept in sync as jobs start and finish, and, when
// a job that may preempt cannot be placed, a verified branch-and-bound plan that is applied.
// See docs/embedding.md. Deterministic: a fixed-seed mt19937 drives the simulated arrivals.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/solvers/cost_model.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/plan/verifier.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"

using namespace topopreempt;

namespace {

struct Job {
  Workload workload;
  int arrival = 0;
  int duration = 0;  // steps of work left when (re)started
};

/// A mixed workload: batch (priority 10), research (50, elastic), production (100,
/// topology-pinned).
Job make_job(std::uint64_t id, std::mt19937& random, const ResourceSchema& schema) {
  Job job;
  Workload& w = job.workload;
  w.id = WorkloadId{id};
  const auto kind = random() % 10;
  const std::int32_t gpus = std::int32_t{1} << (random() % 4);  // 1, 2, 4 or 8
  w.demand.whole_devices = gpus;
  w.demand.resources = schema.make({{"cpu_milli", 2000 * gpus}, {"memory_mib", 16384 * gpus}});
  if (kind < 5) {
    w.name = "batch-" + std::to_string(id);
    w.priority = 10;
  } else if (kind < 8) {
    w.name = "research-" + std::to_string(id);
    w.priority = 50;
    w.replicas = 3;
    w.min_replicas = 1;  // elastic: may be shrunk instead of evicted
    w.demand.whole_devices = std::min(gpus, 2);
    w.demand.resources = schema.make({{"cpu_milli", 4000}, {"memory_mib", 32768}});
  } else {
    w.name = "prod-" + std::to_string(id);
    w.priority = 100;
    // Tensor-parallel groups want one NVLink island (a PCIe switch here) up to 2 GPUs, else a node.
    w.replica_scope = TopologyRequirement::guaranteed(gpus <= 2 ? "pcie_switch" : "node");
  }
  job.duration = 4 + static_cast<int>(random() % 12);
  return job;
}

}  // namespace

int main() {
  const auto topology =
      std::make_shared<const Topology>(shapes::cluster(shapes::dense_8gpu_server(), 8, 4));
  Allocation state(topology);  // the scheduler's view; only this loop mutates it
  std::mt19937 random(2411);
  std::vector<Job> arrivals;
  for (std::uint64_t id = 1; id <= 80; ++id) {
    arrivals.push_back(make_job(id, random, topology->schema()));
    arrivals.back().arrival = static_cast<int>(id / 3);
  }
  std::vector<Job> pending;
  std::map<std::uint64_t, std::pair<int, Job>> running;  // id -> (end step, job)
  int preemptions = 0, victims = 0, shrinks = 0, topology_hits = 0, started = 0;

  for (int now = 0; now < 60; ++now) {
    // 1. Finished jobs release their resources (O(depth x footprint) each).
    for (auto it = running.begin(); it != running.end();) {
      if (it->second.first > now) {
        ++it;
        continue;
      }
      state.remove(it->second.second.workload.id);
      it = running.erase(it);
    }
    // 2. Arrivals join the queue; the queue is ordered like kube's: priority, then age.
    for (const Job& job : arrivals) {
      if (job.arrival == now) pending.push_back(job);
    }
    std::stable_sort(pending.begin(), pending.end(), [](const Job& a, const Job& b) {
      return a.workload.priority != b.workload.priority ? a.workload.priority > b.workload.priority
                                                        : a.arrival < b.arrival;
    });
    // 3. One scheduling pass; victims are re-queued and retried on the next pass.
    std::vector<Job> still_pending, requeued;
    for (Job& job : pending) {
      Placement placement;
      if (const auto found = find_placement(state, job.workload); found.found) {
        placement = found.placement;
      } else if (job.workload.priority >= 50) {  // PostFilter: only these may preempt
        const cost::priority_weighted model;
        const PreemptionPlan plan = solvers::branch_and_bound.solve(state, job.workload, model);
        const PlanVerdict verdict = verify_plan(state, job.workload, plan, model);
        if (!plan.has_victims_plan() || !verdict.ok) {
          still_pending.push_back(std::move(job));
          continue;
        }
        for (const Victim& victim : plan.victims) {
          if (victim.action == VictimAction::shrink) {
            state.shrink(victim.id, victim.dropped_replicas);  // elastic: keeps running, smaller
            ++shrinks;
          } else {
            state.remove(victim.id);
            Job evicted = running.at(victim.id.value).second;
            running.erase(victim.id.value);
            requeued.push_back(std::move(evicted));  // restarts from its last checkpoint
          }
        }
        ++preemptions;
        victims += static_cast<int>(plan.victims.size());
        topology_hits += verdict.topology_ok ? 1 : 0;
        std::cout << "t=" << now << " " << job.workload.label() << " (priority "
                  << job.workload.priority << ", " << job.workload.replicas << "x"
                  << job.workload.demand.whole_devices << " GPU): " << plan.victims.size()
                  << " victim(s), " << to_string(plan.status) << ", target "
                  << (plan.target_domain == Topology::root()
                          ? "the whole cluster"
                          : topology->describe(plan.target_domain))
                  << "\n";
        placement = plan.placement;
      } else {
        still_pending.push_back(std::move(job));
        continue;
      }
      state.add(job.workload, placement);
      running[job.workload.id.value] = {now + job.duration, job};
      ++started;
    }
    pending = std::move(still_pending);
    pending.insert(pending.end(), requeued.begin(), requeued.end());
  }
  std::cout << "started " << started << ", preemptions " << preemptions << ", victims " << victims
            << " (" << shrinks << " shrunk), topology hits " << topology_hits << "/" << preemptions
            << ", running " << state.size() << ", pending " << pending.size() << "\n";
  return topology_hits == preemptions ? 0 : 1;
}
