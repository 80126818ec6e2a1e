// SPDX-License-Identifier: MIT
// Concurrent `solve` calls on one shared const Allocation, for ThreadSanitizer.
//
// Every solver and baseline is run from several threads at once on the same state (a
// generated 16-node cluster of dense 8-GPU servers at high occupancy) and a mix of preemptors. The
// promise under test: `solve` is const and may run concurrently on one shared, unmodified state.
// Built with -fsanitize=thread by .ci/stages/tsan.sh, which fails on any report. Each thread also
// checks that its plans equal the plans computed serially first (determinism under sharing).
// Then one thread per preemptor plans on a copy of a shared state and commits to it under a
// mutex (plan_transaction.hpp).
// Exit status 0 when every plan matched, 1 otherwise.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/baselines/exhaustive_subsets.hpp"
#include "topopreempt/baselines/kube_default.hpp"
#include "topopreempt/model/cluster_generator.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/plan/transaction.hpp"
#include "topopreempt/plan/verifier.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/greedy.hpp"
#include "topopreempt/solvers/knapsack.hpp"

using namespace topopreempt;

namespace {

/// Preemptors of 1, 2, 4 and 8 GPUs with assorted scopes; ids above any running workload.
std::vector<Workload> preemptors() {
  std::vector<Workload> result;
  const auto add = [&](std::int32_t gpus, std::int32_t replicas, TopologyRequirement replica_scope,
                       TopologyRequirement gang_scope) {
    Workload workload;
    workload.id = WorkloadId{1'000'000 + result.size()};
    workload.priority = 1000;
    workload.replicas = replicas;
    workload.demand.whole_devices = gpus;
    workload.demand.resources = ResourceSchema::standard().make({{"cpu_milli", 1000 * gpus}});
    workload.replica_scope = std::move(replica_scope);
    workload.gang_scope = std::move(gang_scope);
    result.push_back(std::move(workload));
  };
  add(1, 1, TopologyRequirement::guaranteed("numa"), {});
  add(2, 1, TopologyRequirement::best_effort("numa"), {});
  add(4, 1, TopologyRequirement::guaranteed("socket"), {});
  add(8, 1, {}, {});
  add(2, 2, TopologyRequirement::guaranteed("node"), TopologyRequirement::guaranteed("rack"));
  return result;
}

/// Runs `solver` on every preemptor; returns the plans.
template <class Solver, class Model>
std::vector<PreemptionPlan> solve_all(const Solver& solver, const Allocation& state,
                                      const std::vector<Workload>& pending, const Model& model) {
  std::vector<PreemptionPlan> plans;
  for (const Workload& preemptor : pending) plans.push_back(solver.solve(state, preemptor, model));
  return plans;
}

/// `threads` threads each solve every preemptor `rounds` times with `solver`; all must match
/// the serial plans. Returns the number of mismatches.
template <class Solver>
int hammer(const Solver& solver, const Allocation& state, const std::vector<Workload>& pending,
           int threads, int rounds) {
  const cost::priority_weighted model;
  const std::vector<PreemptionPlan> expected = solve_all(solver, state, pending, model);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int round = 0; round < rounds; ++round) {
        if (solve_all(solver, state, pending, model) != expected) ++mismatches;
      }
    });
  }
  for (std::thread& thread : pool) thread.join();
  std::printf("%-20s %d threads x %d rounds x %zu preemptors: %d mismatches\n",
              std::string(Solver::name).c_str(), threads, rounds, pending.size(),
              mismatches.load());
  return mismatches.load();
}

/// One thread per preemptor plans on its own copy of a shared state and commits to it under a
/// mutex, re-planning after a conflict (optimistic concurrency, docs/transactions.md). Every
/// landed plan must verify against the state it was committed to, and its preemptor must run
/// at the end. Returns the number of failures.
int commit_race(const Allocation& initial, const std::vector<Workload>& pending) {
  const cost::priority_weighted model;
  Allocation shared = initial;
  std::mutex shared_mutex;
  std::atomic<int> failures{0};
  std::atomic<int> landed{0};
  std::atomic<int> conflicts{0};
  std::vector<WorkloadId> landed_ids;  // guarded by shared_mutex
  std::vector<std::thread> pool;
  for (const Workload& preemptor : pending) {
    pool.emplace_back([&, preemptor] {
      for (int attempt = 0; attempt < 20; ++attempt) {
        const Allocation copy = [&] {
          const std::lock_guard lock(shared_mutex);
          return shared;
        }();
        const PreemptionPlan plan = solvers::greedy.solve(copy, preemptor, model);
        if (plan.status == PlanStatus::infeasible) return;
        const std::lock_guard lock(shared_mutex);
        // commit promises a valid plan, not the cheapest one: room freed elsewhere meanwhile
        // may make "fits without preemption" true, which is no violation of the transaction.
        bool valid = true;
        for (const std::string& violation :
             verify_plan(shared, preemptor, plan, model).violations) {
          valid = valid && violation.find("fits without preemption") != std::string::npos;
        }
        const CommitResult result = commit(shared, plan, preemptor);
        if (result.committed) {
          ++landed;
          landed_ids.push_back(preemptor.id);
          if (!valid) ++failures;  // a commit landed a plan that no longer held
          return;
        }
        ++conflicts;
        if (result.moved.empty()) ++failures;
      }
      ++failures;  // never landed
    });
  }
  for (std::thread& thread : pool) thread.join();
  // Landed preemptors stay: a later commit may not evict them (equal priorities).
  for (const WorkloadId id : landed_ids) {
    if (!shared.contains(id)) ++failures;
  }
  std::printf("commit race: %zu threads, %d landed, %d conflicts: %d failures\n", pending.size(),
              landed.load(), conflicts.load(), failures.load());
  return failures.load();
}

}  // namespace

int main() {
  ClusterSpec spec;
  spec.nodes = 16;
  spec.nodes_per_rack = 4;
  spec.target_occupancy = 0.9;
  spec.seed = 11;
  const GeneratedCluster generated = generate_cluster(spec);
  const Allocation& state = generated.state;  // shared, never modified below
  const std::vector<Workload> pending = preemptors();
  constexpr int threads = 4;
  constexpr int rounds = 20;
  int mismatches = 0;
  mismatches += hammer(solvers::greedy, state, pending, threads, rounds);
  mismatches += hammer(solvers::knapsack, state, pending, threads, rounds);
  mismatches += hammer(solvers::branch_and_bound_solver{}.node_limit(20'000), state, pending,
                       threads, rounds);
  mismatches += hammer(baselines::kube_default, state, pending, threads, rounds);
  mismatches += hammer(baselines::exhaustive_subsets_solver{}, state, pending, threads, 4);
  mismatches += commit_race(state, pending);
  return mismatches == 0 ? 0 : 1;
}
