// SPDX-License-Identifier: MIT
// The preemption index (issue 10): every solver's decision on the 9 preemptor kinds at 10,000 and
// 100,000 nodes, through the index (domains read lazily, by bound) and through the full scan
// that reads every candidate domain first (`SearchLimits::full_scan`, the path before the
// index), interleaved decision by decision in the same run, next to the footprint-scan floor;
// and what the index costs in memory. `decide/...` prices victims by lost work plus reload time
// (bench_kinds.hpp, as bench_solvers does); `count_decide/...` counts victims (`victim_count`).
//
// One benchmark iteration is one round over the kind's 4 variants (bench_kinds.hpp), each
// decided by both paths. Counters (per decision):
//   p50_ms        median CPU time of the index path (calling thread)
//   full_p50_ms   median CPU time of the full-scan path, same decisions
//   speedup       full_p50_ms / p50_ms
//   x_fscan       p50_ms / median footprint-scan time of the same cluster (the real floor)
//   same          fraction of decisions where both paths give the same status and cost
//   searched      mean domains searched in depth by the index path
// `memory/nodes:N` reports the state's self-reported bytes and the index's share of them.
// `after_changes/...` times an `IncrementalDecider` after 100 changes against a cold decision;
// `explain/...` times wording a plan of a solver built `without_text()` (`explain`) against the
// decision (text_share), i.e. what the eager text cost each decision before issue 36.
//
// Fleet scale (issue 36), opt-in: with TOPOPREEMPT_BENCH_FLEET=1 the program also registers
// `fleet/...` on 1,000,000 nodes (~6.1 M workloads; minutes, ~7 GiB of RAM; one cluster is kept
// at a time, the 100 %-busy twin of the 1-GPU kinds last):
//   TOPOPREEMPT_BENCH_FLEET=1 taskset -c 1 build/release/benchmarks/topopreempt_bench_index
//     --benchmark_filter='^fleet/'        (one command line)
// `fleet/generate/...` times `generate_cluster` (generate_s; topology_s: the topology alone,
// built once more) and reports memory: topology_MiB, state_MiB (the index included), index_MiB,
// rss_MiB (growth of the resident set while generating). `fleet/decide/...` makes 8 decisions
// per kind (2 rounds of the 4 variants) under lost work + reload, p50_ms and x_fscan as above;
// the first round's priority-2000 and priority-700 variants are also decided by the full scan:
// same_victims is the fraction of those sampled decisions with the same status, cost and
// victims (full_p50_ms their median time).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bench_kinds.hpp"
#include "bench_timing.hpp"
#include "scan_floors.hpp"
#include "topopreempt/model/cluster_generator.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/decisions/incremental_decider.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/detail/preemption_context.hpp"
#include "topopreempt/solvers/explain.hpp"
#include "topopreempt/solvers/greedy.hpp"
#include "topopreempt/solvers/knapsack.hpp"

namespace {

using namespace topopreempt;
using topopreempt_bench::kinds;
using topopreempt_bench::median;
using topopreempt_bench::thread_seconds;

constexpr std::array<std::int64_t, 3> sizes{1000, 10000, 100000};

/// Busy GPUs of the clusters `decide` measures: 0 for each kind's own (92 %, or 100 % for the
/// 1-GPU kinds), else the given percentage (issue 22: half-empty and nearly full clusters).
constexpr std::array<int, 2> occupancies{50, 99};

/// The cluster of `nodes` nodes at `percent` busy GPUs (0: 92 %, or 100 % when `saturated`),
/// generated once per process and kept.
const GeneratedCluster& cluster(std::int64_t nodes, bool saturated, int percent = 0) {
  if (percent == 0) return topopreempt_bench::cluster(nodes, saturated);
  static std::map<std::pair<std::int64_t, int>, std::unique_ptr<GeneratedCluster>> cache;
  auto& slot = cache[{nodes, percent}];
  if (!slot) {
    ClusterSpec spec;
    spec.nodes = static_cast<std::size_t>(nodes);
    spec.target_occupancy = percent / 100.0;
    slot = std::make_unique<GeneratedCluster>(generate_cluster(spec));
  }
  return *slot;
}

/// Median time of `reps` footprint scans of `state` (seconds).
double median_footprint_scan(const Allocation& state, int reps) {
  std::vector<double> times;
  for (int rep = 0; rep < reps; ++rep) {
    const double start = thread_seconds();
    benchmark::DoNotOptimize(topopreempt_bench::footprint_scan(state));
    times.push_back(thread_seconds() - start);
  }
  return median(std::move(times));
}

/// Median footprint-scan time of one cluster (seconds), measured once.
double footprint_floor(std::int64_t nodes, bool saturated, int percent = 0) {
  static std::map<std::tuple<std::int64_t, bool, int>, double> cache;
  const auto it = cache.find({nodes, saturated, percent});
  if (it != cache.end()) return it->second;
  return cache[{nodes, saturated, percent}] =
             median_footprint_scan(cluster(nodes, saturated, percent).state, 21);
}

const topopreempt_bench::BenchCost cost_model{};

enum class Solver { greedy, knapsack, branch_and_bound };

template <CostModel Model>
PreemptionPlan solve(Solver solver, const Allocation& state, const Workload& preemptor,
                     bool full_scan, const Model& model) {
  detail::SearchLimits limits;
  limits.full_scan = full_scan;
  switch (solver) {
    case Solver::greedy:
      return detail::solve_with(solvers::greedy_solver::name, state, preemptor, model,
                                solvers::detail::GreedySearch{}, limits);
    case Solver::knapsack:
      return detail::solve_with(solvers::knapsack_solver::name, state, preemptor, model,
                                solvers::detail::KnapsackSearch{}, limits);
    case Solver::branch_and_bound:
      break;
  }
  const solvers::detail::BranchAndBoundSearch search(limits, detail::Clock::now());
  return detail::solve_with(solvers::branch_and_bound_solver::name, state, preemptor, model, search,
                            limits);
}

template <CostModel Model>
void decide(benchmark::State& state, Solver solver, std::int64_t nodes, std::size_t kind,
            const Model& model, int percent) {
  const topopreempt_bench::Kind& k = kinds()[kind];
  const Allocation& allocation = cluster(nodes, k.saturated, percent).state;
  const std::vector<Workload> preemptors = topopreempt_bench::variants(k);
  std::vector<double> index_times;
  std::vector<double> full_times;
  double same = 0.0;
  double decisions = 0.0;
  double searched = 0.0;
  for (auto _ : state) {
    for (const Workload& preemptor : preemptors) {
      double start = thread_seconds();
      const PreemptionPlan lazy = solve(solver, allocation, preemptor, false, model);
      index_times.push_back(thread_seconds() - start);
      start = thread_seconds();
      const PreemptionPlan full = solve(solver, allocation, preemptor, true, model);
      full_times.push_back(thread_seconds() - start);
      same += lazy.status == full.status &&
              std::abs(lazy.cost - full.cost) <= 1e-6 * std::max(1.0, full.cost);
      searched += static_cast<double>(lazy.statistics.domains_solved);
      ++decisions;
    }
  }
  const double p50 = median(index_times);
  const double full_p50 = median(full_times);
  state.counters["p50_ms"] = p50 * 1e3;
  state.counters["full_p50_ms"] = full_p50 * 1e3;
  state.counters["speedup"] = p50 > 0.0 ? full_p50 / p50 : 0.0;
  state.counters["x_fscan"] = p50 / footprint_floor(nodes, k.saturated, percent);
  state.counters["same"] = decisions > 0 ? same / decisions : 0.0;
  state.counters["searched"] = decisions > 0 ? searched / decisions : 0.0;
}

/// Evicts the CPU's caches (writes a buffer twice the size of this machine's 32 MiB L3), so
/// that a timed call finds none of its data there, as a scheduler's call a cycle later may.
void evict_cpu_caches() {
  static std::vector<unsigned char> buffer(64U << 20U);
  for (std::size_t i = 0; i < buffer.size(); i += 64) buffer[i] = static_cast<unsigned char>(i);
  benchmark::DoNotOptimize(buffer.data());
  benchmark::ClobberMemory();
}

/// A decision after 100 draws of random state changes (remove a running workload, or start a
/// removed one again where it ran; a draw of a workload already gone changes nothing), by an
/// `IncrementalDecider` that decided before the changes, against a cold decision (the solver's
/// `solve`) on the same state. Every round starts from the generated cluster and is played
/// twice on the same changes: once with the decider called first, once with the cold solve
/// first. Before each play the changes are undone, the decider decides on the restored
/// cluster (untimed), the changes are replayed and the CPU's caches are evicted; the first
/// call is timed. So both calls start alike: neither runs on data the other (or the untimed
/// decision) has just brought into the caches. `warm_over_cold` is the median over rounds of
/// decider first / cold first; `warm_second_over_cold` the same with the decider timed right
/// after the cold solve, as this benchmark paired them before (the second call then finds the
/// state's data in the caches). Both run the hot path's solver, built `without_text()` (the
/// plan's text is left to `explain`); `same` is the share of rounds in which both decider
/// plans are `==` to the cold plan on the same state (everything but the wall time).
/// After 100 changes the preemptor often fits already (a removal freed room: every round of
/// the 1-GPU kinds on their saturated cluster but a few, about half of the 4-GPU kinds'), and
/// both calls are then the same "fits already" check: `preempting` is the share of rounds
/// whose cold plan evicts or shrinks, `preempting_warm_over_cold` the median ratio over them.
template <class SolverType>
void after_changes(benchmark::State& state, const SolverType& solver, std::int64_t nodes,
                   std::size_t kind) {
  const topopreempt_bench::Kind& k = kinds()[kind];
  Allocation allocation = cluster(nodes, k.saturated).state;  // a copy: changed below
  const Workload preemptor = topopreempt_bench::variants(k)[0];
  IncrementalDecider decider(solver, cost_model, preemptor);
  (void)decider.decide(allocation);
  topopreempt_bench::ChangeRounds rounds(allocation);
  // Back to the generated cluster, where the decider decides (untimed).
  const auto undo_round = [&] {
    rounds.undo();
    (void)decider.decide(allocation);
  };
  // The same start for both plays: back to the generated cluster, the round's changes again,
  // and the CPU's caches evicted.
  const auto replay_round = [&] {
    undo_round();
    rounds.redo();
    evict_cpu_caches();
  };
  std::vector<double> warm_first;   // the decider, run first after the changes
  std::vector<double> cold_first;   // the cold solve, run first after the same changes
  std::vector<double> warm_second;  // the decider, run right after that cold solve
  std::vector<double> ratios;       // per round: warm first / cold first
  std::vector<double> second_ratios;
  std::vector<double> preempting_ratios;  // warm first / cold first, rounds that must preempt
  double same = 0.0;
  double decisions = 0.0;
  for (auto _ : state) {
    state.PauseTiming();
    rounds.draw();
    replay_round();  // drawn above; replayed, as for the second play
    state.ResumeTiming();
    double start = thread_seconds();
    const PreemptionPlan warm = decider.decide(allocation);
    warm_first.push_back(thread_seconds() - start);
    const PreemptionPlan cold_after = solver.solve(allocation, preemptor, cost_model);
    state.PauseTiming();
    replay_round();
    state.ResumeTiming();
    start = thread_seconds();
    const PreemptionPlan cold = solver.solve(allocation, preemptor, cost_model);
    cold_first.push_back(thread_seconds() - start);
    start = thread_seconds();
    const PreemptionPlan warm_after = decider.decide(allocation);
    warm_second.push_back(thread_seconds() - start);
    ratios.push_back(warm_first.back() / cold_first.back());
    second_ratios.push_back(warm_second.back() / cold_first.back());
    if (cold.has_victims_plan()) preempting_ratios.push_back(ratios.back());
    // Each decider's plan against the cold plan on the same state (a replayed round has
    // other domain versions, so `dependencies` differ from one play to the other).
    same += warm == cold_after && warm_after == cold;
    ++decisions;
    state.PauseTiming();
    undo_round();
    state.ResumeTiming();
  }
  state.counters["p50_ms"] = median(warm_first) * 1e3;
  state.counters["cold_p50_ms"] = median(cold_first) * 1e3;
  state.counters["warm_over_cold"] = median(ratios);
  state.counters["warm_second_over_cold"] = median(second_ratios);
  state.counters["preempting"] = decisions > 0 ? static_cast<double>(preempting_ratios.size()) / decisions : 0.0;
  state.counters["preempting_warm_over_cold"] =
      preempting_ratios.empty() ? 0.0 : median(preempting_ratios);
  state.counters["same"] = decisions > 0 ? same / decisions : 0.0;
}

/// What a plan's text costs: `explain` wording a plan of `solver.without_text()` (the
/// explanation, every victim's and listed domain's reason), against the decision itself, both
/// on the generated cluster. `p50_ms`: median `explain` (of a fresh copy of the text-less
/// plan); `decide_p50_ms`: median decision without text; `text_share`: their ratio, what
/// building the text eagerly added to each decision.
template <class SolverType>
void explain_cost(benchmark::State& state, const SolverType& solver, std::int64_t nodes,
                  std::size_t kind) {
  const topopreempt_bench::Kind& k = kinds()[kind];
  const Allocation& allocation = cluster(nodes, k.saturated).state;
  const Workload preemptor = topopreempt_bench::variants(k)[0];
  const auto quiet = solver.without_text();
  std::vector<double> decide_times;
  PreemptionPlan plan;
  for (int rep = 0; rep < 9; ++rep) {
    const double start = thread_seconds();
    plan = quiet.solve(allocation, preemptor, cost_model);
    decide_times.push_back(thread_seconds() - start);
  }
  std::vector<double> times;
  for (auto _ : state) {
    PreemptionPlan copy = plan;
    const double start = thread_seconds();
    explain(copy, allocation, preemptor, cost_model);
    times.push_back(thread_seconds() - start);
    benchmark::DoNotOptimize(copy.explanation.data());
  }
  const double decide = median(std::move(decide_times));
  const double worded = median(std::move(times));
  state.counters["p50_ms"] = worded * 1e3;
  state.counters["decide_p50_ms"] = decide * 1e3;
  state.counters["text_share"] = worded / decide;
}

void footprint_scan(benchmark::State& state, std::int64_t nodes) {
  const Allocation& allocation = cluster(nodes, false).state;
  for (auto _ : state) benchmark::DoNotOptimize(topopreempt_bench::footprint_scan(allocation));
  state.counters["p50_ms"] = footprint_floor(nodes, false) * 1e3;
}

void memory(benchmark::State& state, std::int64_t nodes) {
  const GeneratedCluster& generated = cluster(nodes, false);
  std::size_t bytes = 0;
  for (auto _ : state) benchmark::DoNotOptimize(bytes = generated.state.memory_bytes());
  constexpr double mib = 1024.0 * 1024.0;
  const auto index = static_cast<double>(generated.state.index_memory_bytes());
  state.counters["state_MiB"] = static_cast<double>(bytes) / mib;
  state.counters["topology_MiB"] = static_cast<double>(generated.topology->memory_bytes()) / mib;
  state.counters["index_MiB"] = index / mib;
  state.counters["index_share"] = index / static_cast<double>(bytes);
}

// --- Fleet scale: 1,000,000 nodes (opt-in, TOPOPREEMPT_BENCH_FLEET=1) ---

constexpr std::int64_t fleet_nodes = 1'000'000;

/// Resident set of this process in MiB (0 where /proc is missing).
double resident_mib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      double kib = 0.0;
      status >> kib;
      return kib / 1024.0;
    }
    status.ignore(1 << 16, '\n');
  }
  return 0.0;
}

/// The one fleet cluster kept (92 % busy, or the 100 %-busy twin), with what generating it cost.
struct Fleet {
  std::unique_ptr<GeneratedCluster> cluster;
  bool saturated = false;
  double generate_s = 0.0;  // wall time of generate_cluster
  double rss_mib = 0.0;     // resident-set growth while generating
  double floor_s = 0.0;     // median footprint scan, 0 until measured
};

Fleet& fleet(bool saturated) {
  static Fleet kept;
  if (!kept.cluster || kept.saturated != saturated) {
    kept = Fleet{};  // frees the other one first: two would need ~14 GiB
    ClusterSpec spec;
    spec.nodes = static_cast<std::size_t>(fleet_nodes);
    if (saturated) spec.target_occupancy = 1.0;
    const double rss_before = resident_mib();
    const auto start = std::chrono::steady_clock::now();
    kept.cluster = std::make_unique<GeneratedCluster>(generate_cluster(spec));
    kept.generate_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    kept.rss_mib = resident_mib() - rss_before;
    kept.saturated = saturated;
  }
  return kept;
}

double fleet_floor(bool saturated) {
  Fleet& f = fleet(saturated);
  if (f.floor_s == 0.0) f.floor_s = median_footprint_scan(f.cluster->state, 7);
  return f.floor_s;
}

void fleet_generate(benchmark::State& state, bool saturated) {
  const Fleet& f = fleet(saturated);
  double topology_s = 0.0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const Topology topology = shapes::cluster(shapes::dense_8gpu_server(),
                                              static_cast<std::size_t>(fleet_nodes), 32);
    topology_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    benchmark::DoNotOptimize(topology.size());
  }
  constexpr double mib = 1024.0 * 1024.0;
  const Allocation& allocation = f.cluster->state;
  const double topology_mib = static_cast<double>(f.cluster->topology->memory_bytes()) / mib;
  const double state_mib = static_cast<double>(allocation.memory_bytes()) / mib;
  state.counters["generate_s"] = f.generate_s;
  state.counters["topology_s"] = topology_s;
  state.counters["workloads"] = static_cast<double>(allocation.size());
  state.counters["topology_MiB"] = topology_mib;
  state.counters["state_MiB"] = state_mib;
  state.counters["index_MiB"] = static_cast<double>(allocation.index_memory_bytes()) / mib;
  state.counters["total_MiB"] = topology_mib + state_mib;
  state.counters["rss_MiB"] = f.rss_mib;
}

void fleet_footprint_scan(benchmark::State& state, bool saturated) {
  const Allocation& allocation = fleet(saturated).cluster->state;
  for (auto _ : state) benchmark::DoNotOptimize(topopreempt_bench::footprint_scan(allocation));
  state.counters["p50_ms"] = fleet_floor(saturated) * 1e3;
}

void fleet_decide(benchmark::State& state, Solver solver, std::size_t kind) {
  const topopreempt_bench::Kind& k = kinds()[kind];
  const Allocation& allocation = fleet(k.saturated).cluster->state;
  const double floor_s = fleet_floor(k.saturated);
  const std::vector<Workload> preemptors = topopreempt_bench::variants(k);
  std::vector<double> times;
  std::vector<double> full_times;
  double same = 0.0;
  double searched = 0.0;
  bool first_round = true;
  for (auto _ : state) {
    for (std::size_t v = 0; v < preemptors.size(); ++v) {
      const double start = thread_seconds();
      const PreemptionPlan plan = solve(solver, allocation, preemptors[v], false, cost_model);
      times.push_back(thread_seconds() - start);
      searched += static_cast<double>(plan.statistics.domains_solved);
      if (first_round && (v == 0 || v == 2)) {  // the sampled check against the full scan
        const double full_start = thread_seconds();
        const PreemptionPlan full = solve(solver, allocation, preemptors[v], true, cost_model);
        full_times.push_back(thread_seconds() - full_start);
        same += plan.status == full.status && plan.victims == full.victims &&
                std::abs(plan.cost - full.cost) <= 1e-6 * std::max(1.0, full.cost);
      }
    }
    first_round = false;
  }
  const double p50 = median(times);
  state.counters["p50_ms"] = p50 * 1e3;
  state.counters["x_fscan"] = p50 / floor_s;
  state.counters["full_p50_ms"] = median(full_times) * 1e3;
  state.counters["same_victims"] =
      full_times.empty() ? 0.0 : same / static_cast<double>(full_times.size());
  state.counters["searched"] = times.empty() ? 0.0 : searched / static_cast<double>(times.size());
}

void register_fleet_benchmarks() {
  const std::array<std::pair<const char*, Solver>, 2> solver_list{
      {{"greedy", Solver::greedy}, {"branch_and_bound", Solver::branch_and_bound}}};
  const std::string suffix = "/nodes:" + std::to_string(fleet_nodes);
  // The 92 %-busy cluster's kinds first, then the 100 %-busy twin's (one cluster at a time).
  for (const bool saturated : {false, true}) {
    const std::string busy = saturated ? "/busy:100" : "/busy:92";
    benchmark::RegisterBenchmark(("fleet/generate" + busy + suffix).c_str(), fleet_generate,
                                 saturated)
        ->Unit(benchmark::kSecond)
        ->Iterations(1);
    benchmark::RegisterBenchmark(("fleet/footprint_scan" + busy + suffix).c_str(),
                                 fleet_footprint_scan, saturated)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(3);
    for (std::size_t kind = 0; kind < kinds().size(); ++kind) {
      if (kinds()[kind].saturated != saturated) continue;
      for (const auto& [name, solver] : solver_list) {
        benchmark::RegisterBenchmark(
            (std::string("fleet/decide/") + name + "/" + kinds()[kind].name + suffix).c_str(),
            fleet_decide, solver, kind)
            ->Unit(benchmark::kMillisecond)
            ->Iterations(2);
      }
    }
  }
}

bool register_benchmarks() {
  const char* fleet_flag = std::getenv("TOPOPREEMPT_BENCH_FLEET");
  if (fleet_flag != nullptr && std::string(fleet_flag) == "1") register_fleet_benchmarks();
  const std::array<std::pair<const char*, Solver>, 3> solver_list{
      {{"greedy", Solver::greedy},
       {"knapsack", Solver::knapsack},
       {"branch_and_bound", Solver::branch_and_bound}}};
  for (std::size_t kind = 0; kind < kinds().size(); ++kind) {
    const std::string label = std::string("/") + kinds()[kind].name + "/nodes:10000";
    // 60 rounds: the 4-GPU kinds must preempt in about 40 % of them, so that
    // `preempting_warm_over_cold` is a median over about 25 rounds (a call of 40-50 µs moves
    // by several per cent from one round to the next).
    benchmark::RegisterBenchmark(("after_changes/greedy" + label).c_str(),
                                 after_changes<solvers::greedy_solver>, solvers::greedy.without_text(),
                                 10000,
                                 kind)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(60);
    benchmark::RegisterBenchmark(("after_changes/branch_and_bound" + label).c_str(),
                                 after_changes<solvers::branch_and_bound_solver>,
                                 solvers::branch_and_bound.without_text(), 10000, kind)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(60);
    benchmark::RegisterBenchmark(("explain/branch_and_bound" + label).c_str(),
                                 explain_cost<solvers::branch_and_bound_solver>,
                                 solvers::branch_and_bound, 10000, kind)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(200);
  }
  for (const std::int64_t nodes : sizes) {
    const std::string suffix = "/nodes:" + std::to_string(nodes);
    benchmark::RegisterBenchmark(("memory" + suffix).c_str(), memory, nodes)->Iterations(1);
    benchmark::RegisterBenchmark(("footprint_scan" + suffix).c_str(), footprint_scan, nodes)
        ->Unit(benchmark::kMillisecond);
    for (std::size_t kind = 0; kind < kinds().size(); ++kind) {
      for (const auto& [name, solver] : solver_list) {
        const std::string label = std::string("decide/") + name + "/" + kinds()[kind].name + suffix;
        benchmark::RegisterBenchmark(label.c_str(), decide<topopreempt_bench::BenchCost>, solver,
                                     nodes, kind, cost_model, 0)
            ->Unit(benchmark::kMillisecond)
            ->MinTime(0.2);
        // Counting victims: the optimum is often one victim, the declared floor, so the index
        // bound closes every other domain unread.
        benchmark::RegisterBenchmark(("count_" + label).c_str(), decide<cost::victim_count>, solver,
                                     nodes, kind, cost::victim_count{}, 0)
            ->Unit(benchmark::kMillisecond)
            ->MinTime(0.2);
      }
    }
  }
  // Priced decisions on half-empty and nearly full clusters (issue 22), every kind on the same
  // cluster, next to that cluster's own footprint floor.
  for (const int percent : occupancies) {
    const std::string suffix = "/nodes:10000";
    const std::string busy = "/busy:" + std::to_string(percent);
    benchmark::RegisterBenchmark(
        ("footprint_scan" + busy + suffix).c_str(),
        [percent](benchmark::State& state) {
          const Allocation& allocation = cluster(10000, false, percent).state;
          for (auto _ : state) {
            benchmark::DoNotOptimize(topopreempt_bench::footprint_scan(allocation));
          }
          state.counters["p50_ms"] = footprint_floor(10000, false, percent) * 1e3;
        })
        ->Unit(benchmark::kMillisecond);
    for (std::size_t kind = 0; kind < kinds().size(); ++kind) {
      for (const auto& [name, solver] : solver_list) {
        const std::string label =
            std::string("decide") + busy + "/" + name + "/" + kinds()[kind].name + suffix;
        benchmark::RegisterBenchmark(label.c_str(), decide<topopreempt_bench::BenchCost>, solver,
                                     10000, kind, cost_model, percent)
            ->Unit(benchmark::kMillisecond)
            ->MinTime(0.2);
      }
    }
  }
  return true;
}

[[maybe_unused]] const bool registered = register_benchmarks();

}  // namespace
