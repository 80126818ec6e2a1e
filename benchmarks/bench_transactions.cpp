// SPDX-License-Identifier: MIT
// Cost of plans as transactions and of the preemptor queue (docs/transactions.md) on the
// DESIGN.md §6 clusters (dense 8-GPU nodes at 92 % GPU occupancy):
//   BM_plan_is_current/N   checking a plan's dependency versions against the state;
//   BM_commit/N            commit of a greedy plan for an 8-GPU node preemptor, in place
//                          (`Allocation::preempt_and_start`);
//   BM_commit_by_copy/N    the same commit as 0.3.0 made it: replayed on a copy of the state
//                          that then replaces it (the baseline of BM_commit, same run);
//   BM_queue_cold/N        plan_queue for 8 pending preemptors, no nominations (8 solves);
//   BM_queue_warm/N        the same call again with the nominations of the previous call, on an
//                          unchanged state (every nomination kept, no solve).
// Counters: ms per call (CPU time of the calling thread; the machine may be shared).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "topopreempt/model/cluster_generator.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/plan/transaction.hpp"
#include "topopreempt/decisions/preemptor_queue.hpp"
#include "topopreempt/solvers/greedy.hpp"

namespace {

using namespace topopreempt;

const GeneratedCluster& cluster(std::int64_t nodes) {
  static std::map<std::int64_t, std::unique_ptr<GeneratedCluster>> cache;
  auto& slot = cache[nodes];
  if (!slot) {
    ClusterSpec spec;
    spec.nodes = static_cast<std::size_t>(nodes);
    slot = std::make_unique<GeneratedCluster>(generate_cluster(spec));
  }
  return *slot;
}

/// Eight pending preemptors of mixed kinds and priorities, distinct ids.
std::vector<Workload> pending_preemptors() {
  const std::vector<PreemptorSpec> specs{
      {PreemptorKind::node, 8}, {PreemptorKind::socket, 4},        {PreemptorKind::numa, 4},
      {PreemptorKind::node, 8}, {PreemptorKind::nvlink_island, 4}, {PreemptorKind::socket, 4},
      {PreemptorKind::numa, 2}, {PreemptorKind::nvlink_island, 8}};
  std::vector<Workload> pending;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    PreemptorSpec spec = specs[i];
    spec.id = WorkloadId{(std::uint64_t{1} << 62) + i};
    spec.priority = generated_priority::preemptor + static_cast<std::int32_t>(i % 3);
    pending.push_back(make_preemptor(spec));
  }
  return pending;
}

void BM_plan_is_current(benchmark::State& bench) {
  const Allocation& state = cluster(bench.range(0)).state;
  const Workload preemptor = make_preemptor({PreemptorKind::node, 8});
  const PreemptionPlan plan = solvers::greedy.solve(state, preemptor, cost::lost_work{});
  for (auto _ : bench) benchmark::DoNotOptimize(plan_is_current(state, plan));
}

/// Commits of a greedy plan for an 8-GPU node preemptor, each on a fresh copy of the cluster
/// (made, and destroyed, outside the timed region). `by_copy` times the 0.3.0 commit instead:
/// the same checks, then the changes replayed on a copy that replaces the state.
void commit_benchmark(benchmark::State& bench, bool by_copy) {
  const Allocation& base = cluster(bench.range(0)).state;
  const Workload preemptor = make_preemptor({PreemptorKind::node, 8});
  const PreemptionPlan plan = solvers::greedy.solve(base, preemptor, cost::lost_work{});
  if (!plan.has_victims_plan()) throw std::logic_error("the node preemptor needs victims");
  std::optional<Allocation> state;
  for (auto _ : bench) {
    bench.PauseTiming();
    state.reset();
    state.emplace(base);
    bench.ResumeTiming();
    if (by_copy) {
      detail::transaction::check_committable(*state, plan, preemptor);
      if (!moved_dependencies(*state, plan).empty()) throw std::logic_error("the commit conflicted");
      Allocation next = *state;
      detail::transaction::apply(next, plan, preemptor);
      *state = std::move(next);
    } else if (!commit(*state, plan, preemptor)) {
      throw std::logic_error("the commit conflicted");
    }
  }
  bench.counters["victims"] = static_cast<double>(plan.victims.size());
}
void BM_commit(benchmark::State& bench) { commit_benchmark(bench, false); }
void BM_commit_by_copy(benchmark::State& bench) { commit_benchmark(bench, true); }

void BM_queue_cold(benchmark::State& bench) {
  const Allocation& state = cluster(bench.range(0)).state;
  const std::vector<Workload> pending = pending_preemptors();
  for (auto _ : bench) {
    Nominations nominations;
    benchmark::DoNotOptimize(
        plan_queue(state, pending, solvers::greedy, cost::lost_work{}, nominations));
  }
}

void BM_queue_warm(benchmark::State& bench) {
  const Allocation& state = cluster(bench.range(0)).state;
  const std::vector<Workload> pending = pending_preemptors();
  Nominations nominations;
  static_cast<void>(plan_queue(state, pending, solvers::greedy, cost::lost_work{}, nominations));
  for (auto _ : bench) {
    const QueueResult result =
        plan_queue(state, pending, solvers::greedy, cost::lost_work{}, nominations);
    bench.counters["kept"] = static_cast<double>(result.count(NominationStatus::kept));
  }
}

BENCHMARK(BM_plan_is_current)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);
// Fixed iterations: every one copies the cluster untimed (50 ms at 10,000 nodes).
BENCHMARK(BM_commit)->Arg(1000)->Arg(10000)->Iterations(40)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_commit_by_copy)->Arg(1000)->Arg(10000)->Iterations(40)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_queue_cold)->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_queue_warm)->Arg(1000)->Unit(benchmark::kMillisecond);

}  // namespace
