// SPDX-License-Identifier: MIT
// Embedding topopreempt in a scheduler loop (a Kubernetes PostFilter plugin or a Slurm-like
// controller), as docs/embedding.md describes it: an `Allocation` kept in sync as jobs start
// and finish; each cycle, the pending jobs that may preempt and do not fit are planned together
// with `plan_queue` (no two counting on the same freed room; nominations kept across cycles) and
// each plan is applied with `commit` (all or nothing, only if nothing it relies on moved). A job
// that waits alone is decided again each cycle by an `IncrementalDecider`, which re-reads only
// the domains that changed. Deterministic: a fixed-seed mt19937 drives the arrivals.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/decisions/incremental_decider.hpp"
#include "topopreempt/decisions/preemptor_queue.hpp"
#include "topopreempt/plan/transaction.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/model/cost_model.hpp"


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

namespace {

using Decider = IncrementalDecider<solvers::branch_and_bound_solver, cost::priority_weighted>;

/// The scheduler's own books: what runs until when, what waits, and what it counted.
struct Scheduler {
  explicit Scheduler(std::shared_ptr<const Topology> shared)
      : topology(std::move(shared)), state(topology) {}

  std::shared_ptr<const Topology> topology;
  Allocation state;                                      // mirrored; only this loop mutates it
  std::map<std::uint64_t, std::pair<int, Job>> running;  // id -> (end step, job)
  std::vector<Job> pending;
  Nominations nominations;                  // plan_queue's memory, kept from cycle to cycle
  std::map<std::uint64_t, Decider> deciders;  // one per job that waited alone
  cost::priority_weighted model;
  int started = 0, preemptions = 0, victims = 0, shrinks = 0, conflicts = 0;
  int queue_cycles = 0, decider_cycles = 0;

  /// Starts `job` (already added to `state`), to end `duration` steps after `now`.
  void run(Job job, int now) {
    const std::uint64_t id = job.workload.id.value;
    running[id] = {now + job.duration, std::move(job)};
    ++started;
  }

  /// Applies `plan` for `job` with `commit`; on success books the evictions (victims go back to
  /// the queue and restart from their last checkpoint) and starts the job. A conflict leaves
  /// the state unchanged and the job pending, to be planned again next cycle.
  bool apply(const PreemptionPlan& plan, Job& job, int now, std::vector<Job>& requeued) {
    const CommitResult result = commit(state, plan, job.workload);
    if (!result) {
      ++conflicts;
      return false;
    }
    for (const Victim& victim : plan.victims) {
      if (victim.action == VictimAction::shrink) {
        ++shrinks;  // still running, smaller
        continue;
      }
      requeued.push_back(std::move(running.at(victim.id.value).second));
      running.erase(victim.id.value);
    }
    ++preemptions;
    victims += static_cast<int>(plan.victims.size());
    std::cout << "t=" << now << " " << job.workload.label() << " (priority "
              << job.workload.priority << ", " << job.workload.replicas << "x"
              << job.workload.demand.whole_devices << " GPU): " << plan.victims.size()
              << " victim(s), " << to_string(plan.status) << ", target "
              << (plan.target_domain == Topology::root() ? "the whole cluster"
                                                         : topology->describe(plan.target_domain))
              << "\n";
    nominations.forget(job.workload.id);
    deciders.erase(job.workload.id.value);
    run(std::move(job), now);
    return true;
  }

  /// One scheduling cycle at step `now`.
  void cycle(int now) {
    std::stable_sort(pending.begin(), pending.end(), [](const Job& a, const Job& b) {
      return a.workload.priority != b.workload.priority ? a.workload.priority > b.workload.priority
                                                        : a.arrival < b.arrival;
    });
    // Whatever fits starts where find_placement puts it; the rest waits.
    std::vector<Job> waiting, preemptors;
    for (Job& job : pending) {
      if (const auto found = find_placement(state, job.workload); found.found) {
        state.add(job.workload, found.placement);
        run(std::move(job), now);
      } else {
        // PostFilter: only priority >= 50 may preempt.
        (job.workload.priority >= 50 ? preemptors : waiting).push_back(std::move(job));
      }
    }
    std::vector<Job> requeued;
    if (preemptors.size() == 1) {
      // One job waits: decide for it again, re-reading only the domains that changed.
      Job& job = preemptors.front();
      auto [it, inserted] = deciders.try_emplace(job.workload.id.value, solvers::branch_and_bound,
                                                 model, job.workload);
      const PreemptionPlan plan = it->second.decide(state);
      ++decider_cycles;
      if (!plan.has_victims_plan() || !apply(plan, job, now, requeued))
        waiting.push_back(std::move(job));
    } else if (!preemptors.empty()) {
      // Several wait: plan them together, highest priority first, without double counting.
      std::vector<Workload> workloads;
      for (const Job& job : preemptors) workloads.push_back(job.workload);
      const QueueResult queue =
          plan_queue(state, workloads, solvers::branch_and_bound, model, nominations);
      ++queue_cycles;
      std::map<std::uint64_t, Job*> by_id;
      for (Job& job : preemptors) by_id[job.workload.id.value] = &job;
      // Committed in result order, the plans all land while nothing else moves the state.
      for (const QueuedPlan& item : queue.plans) {
        Job& job = *by_id.at(item.preemptor.value);
        if (!item.plan.has_victims_plan() || !apply(item.plan, job, now, requeued))
          waiting.push_back(std::move(job));
      }
    }
    pending = std::move(waiting);
    pending.insert(pending.end(), requeued.begin(), requeued.end());
  }
};

}  // namespace

int main() {
  Scheduler scheduler(
      std::make_shared<const Topology>(shapes::cluster(shapes::dense_8gpu_server(), 8, 4)));
  std::mt19937 random(2411);
  std::vector<Job> arrivals;
  for (std::uint64_t id = 1; id <= 80; ++id) {
    arrivals.push_back(make_job(id, random, scheduler.topology->schema()));
    arrivals.back().arrival = static_cast<int>(id / 3);
  }
  for (int now = 0; now < 60; ++now) {
    // Finished jobs release their resources (O(depth x footprint) each).
    for (auto it = scheduler.running.begin(); it != scheduler.running.end();) {
      if (it->second.first > now) {
        ++it;
        continue;
      }
      scheduler.state.remove(it->second.second.workload.id);
      it = scheduler.running.erase(it);
    }
    for (const Job& job : arrivals) {
      if (job.arrival == now) scheduler.pending.push_back(job);
    }
    scheduler.cycle(now);
  }
  std::cout << "started " << scheduler.started << ", preemptions " << scheduler.preemptions
            << ", victims " << scheduler.victims << " (" << scheduler.shrinks << " shrunk), "
            << scheduler.conflicts << " commit conflicts; " << scheduler.queue_cycles
            << " cycles planned with plan_queue, " << scheduler.decider_cycles
            << " with an IncrementalDecider; running " << scheduler.state.size() << ", pending "
            << scheduler.pending.size() << "\n";
  // Single-threaded, nothing moves the state between planning and commit: every commit lands.
  // The books agree with the state, and both planning paths were taken.
  const bool ok = scheduler.conflicts == 0 && scheduler.preemptions > 0 &&
                  scheduler.running.size() == scheduler.state.size() &&
                  scheduler.queue_cycles > 0 && scheduler.decider_cycles > 0;
  return ok ? 0 : 1;
}
