// SPDX-License-Identifier: MIT
// Per-decision cost of every solver on the DESIGN.md §6 clusters (100 / 1,000 / 10,000 dense
// 8-GPU nodes at 92 % GPU occupancy), next to two floors (scan_floors.hpp): a priority-only scan
// of the workload records, and a scan of every placement entry (what a decision depends on).
//
// Each benchmark is one (solver, preemptor kind, size). One benchmark iteration is one *round*:
// the same kind with 4 variants (priority 2000 / 700 / 400, light or heavy CPU and memory), so
// no single lucky instance decides the median. Counters (per decision, averaged over variants):
//   p50_ms / mean_ms   median and mean CPU time (of the calling thread) of one decision;
//   p50_wall_ms        median wall time (inflated whenever the machine is shared)
//   x_scan             p50_ms / median priority-scan time of the same cluster (lower floor)
//   x_fscan            p50_ms / median footprint-scan time of the same cluster (real floor)
//   victims, cost      plan size and total cost (lost_work + reload_time)
//   gap                plan.gap(); nodes, pruned: statistics.nodes_explored / domains_pruned
//   optimal, no_preempt, infeasible   fraction of decisions with that status
//   topo_hit           fraction of decisions (with a plan) whose placement honours the scopes
//   cost_ratio         mean cost / branch-and-bound optimum, over decisions where B&B proved
//                      optimality with a positive cost (ref_proven = fraction of those)
//   same_cost          fraction of those where the cost equals the optimum within 1e-6
// 1-GPU kinds run on a saturated twin cluster (100 % busy GPUs): at 92 % a 1-GPU preemptor
// always finds an idle GPU, which measures nothing but the no-preemption fast path.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "bench_kinds.hpp"
#include "bench_timing.hpp"
#include "scan_floors.hpp"
#include "topopreempt/baselines/exhaustive_subsets.hpp"
#include "topopreempt/baselines/kube_default.hpp"
#include "topopreempt/model/cluster_generator.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/greedy.hpp"
#include "topopreempt/solvers/knapsack.hpp"

namespace {

using namespace topopreempt;
using Clock = std::chrono::steady_clock;

/// CPU time of the calling thread in seconds: on a shared 2-core machine, wall time mostly
/// measures the neighbours; the thread's CPU time is what the decision itself costs.
using topopreempt_bench::thread_seconds;

constexpr std::array<std::int64_t, 3> sizes{100, 1000, 10000};

using topopreempt_bench::Kind;
using topopreempt_bench::kinds;
using topopreempt_bench::variants;

using topopreempt_bench::cluster;

/// Which floor (scan_floors.hpp).
enum class Floor { priority, footprint };

std::int64_t scan(const Allocation& state, Floor floor) {
  return floor == Floor::priority ? topopreempt_bench::priority_scan(state)
                                  : topopreempt_bench::footprint_scan(state);
}

using topopreempt_bench::median;

/// Median time of one scan of one cluster (seconds), measured once per cluster and floor.
double scan_floor(std::int64_t nodes, bool saturated, Floor floor) {
  static std::map<std::tuple<std::int64_t, bool, Floor>, double> cache;
  const auto it = cache.find({nodes, saturated, floor});
  if (it != cache.end()) return it->second;
  const Allocation& state = cluster(nodes, saturated).state;
  std::vector<double> times;
  for (int rep = 0; rep < 51; ++rep) {
    const double start = thread_seconds();
    benchmark::DoNotOptimize(scan(state, floor));
    times.push_back(thread_seconds() - start);
  }
  return cache[{nodes, saturated, floor}] = median(std::move(times));
}

using topopreempt_bench::BenchCost;
const BenchCost cost_model{};

/// What a decision is judged against: branch-and-bound's plan for the same instance.
struct Reference {
  PlanStatus status = PlanStatus::infeasible;
  double cost = 0.0;
};
using ReferenceKey = std::tuple<std::int64_t, std::size_t, std::size_t>;  // nodes, kind, variant

std::map<ReferenceKey, Reference>& references() {
  static std::map<ReferenceKey, Reference> cache;
  return cache;
}

const Reference& reference(std::int64_t nodes, std::size_t kind, std::size_t variant) {
  auto& cache = references();
  const ReferenceKey key{nodes, kind, variant};
  auto it = cache.find(key);
  if (it == cache.end()) {
    const Kind& k = kinds()[kind];
    const PreemptionPlan plan = solvers::branch_and_bound.solve(cluster(nodes, k.saturated).state,
                                                                variants(k)[variant], cost_model);
    it = cache.emplace(key, Reference{plan.status, plan.cost}).first;
  }
  return it->second;
}

/// One solver on one (kind, size): rounds over the variants.
template <class Solver>
void decide(benchmark::State& state, const Solver& solver, std::int64_t nodes, std::size_t kind) {
  const Kind& k = kinds()[kind];
  const Allocation& allocation = cluster(nodes, k.saturated).state;
  const std::vector<Workload> preemptors = variants(k);
  std::vector<double> times;
  std::vector<double> wall_times;
  std::vector<PreemptionPlan> last(preemptors.size());
  for (auto _ : state) {
    for (std::size_t v = 0; v < preemptors.size(); ++v) {
      const auto wall_start = Clock::now();
      const double start = thread_seconds();
      PreemptionPlan plan = solver.solve(allocation, preemptors[v], cost_model);
      times.push_back(thread_seconds() - start);
      wall_times.push_back(std::chrono::duration<double>(Clock::now() - wall_start).count());
      last[v] = std::move(plan);
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(preemptors.size()));

  // Plans are deterministic (same input, same plan), so the last round describes every round.
  const bool is_reference = Solver::name == solvers::branch_and_bound_solver::name;
  double victims = 0, cost = 0, gap = 0, nodes_explored = 0, pruned = 0;
  double optimal = 0, no_preempt = 0, infeasible = 0, with_plan = 0, topo_hit = 0;
  double proven = 0, ratio_sum = 0, same = 0;
  for (std::size_t v = 0; v < last.size(); ++v) {
    const PreemptionPlan& plan = last[v];
    if (is_reference)
      references().emplace(ReferenceKey{nodes, kind, v}, Reference{plan.status, plan.cost});
    victims += static_cast<double>(plan.victims.size());
    cost += plan.cost;
    gap += plan.gap();
    nodes_explored += static_cast<double>(plan.statistics.nodes_explored);
    pruned += static_cast<double>(plan.statistics.domains_pruned);
    optimal += plan.status == PlanStatus::optimal;
    no_preempt += plan.status == PlanStatus::no_preemption_needed;
    infeasible += plan.status == PlanStatus::infeasible;
    if (plan.has_victims_plan() || plan.status == PlanStatus::no_preemption_needed) {
      ++with_plan;
      topo_hit += plan.topology_satisfied;
    }
    const Reference& ref = reference(nodes, kind, v);
    if (ref.status == PlanStatus::optimal && ref.cost > 0.0 && plan.has_victims_plan()) {
      ++proven;
      ratio_sum += plan.cost / ref.cost;
      same += std::abs(plan.cost - ref.cost) <= 1e-6 * std::max(1.0, ref.cost);
    }
  }
  const auto n = static_cast<double>(last.size());
  const double p50 = median(times);
  double mean = 0.0;
  for (double t : times) mean += t;
  mean /= static_cast<double>(std::max<std::size_t>(times.size(), 1));
  state.counters["p50_ms"] = p50 * 1e3;
  state.counters["mean_ms"] = mean * 1e3;
  state.counters["p50_wall_ms"] = median(wall_times) * 1e3;
  state.counters["x_scan"] = p50 / scan_floor(nodes, k.saturated, Floor::priority);
  state.counters["x_fscan"] = p50 / scan_floor(nodes, k.saturated, Floor::footprint);
  state.counters["victims"] = victims / n;
  state.counters["cost"] = cost / n;
  state.counters["gap"] = gap / n;
  state.counters["nodes"] = nodes_explored / n;
  state.counters["pruned"] = pruned / n;
  state.counters["optimal"] = optimal / n;
  state.counters["no_preempt"] = no_preempt / n;
  state.counters["infeasible"] = infeasible / n;
  state.counters["topo_hit"] = with_plan > 0 ? topo_hit / with_plan : 0.0;
  state.counters["ref_proven"] = proven / n;
  state.counters["cost_ratio"] = proven > 0 ? ratio_sum / proven : 0.0;
  state.counters["same_cost"] = proven > 0 ? same / proven : 0.0;
}

void scan_benchmark(benchmark::State& state, std::int64_t nodes, Floor floor) {
  const Allocation& allocation = cluster(nodes, false).state;
  for (auto _ : state) benchmark::DoNotOptimize(scan(allocation, floor));
  state.counters["workloads"] = static_cast<double>(allocation.size());
}

/// exhaustive_subsets enumerates every subset of every node: past this size one decision
/// takes longer than the 10 s the comparison allows, so it is not run there.
constexpr std::int64_t exhaustive_max_nodes = 10000;

bool register_benchmarks() {
  const auto exhaustive = baselines::exhaustive_subsets.time_limit(std::chrono::seconds(10));
  for (std::int64_t nodes : sizes) {
    const std::string suffix = "/nodes:" + std::to_string(nodes);
    benchmark::RegisterBenchmark(("priority_scan" + suffix).c_str(), scan_benchmark, nodes,
                                 Floor::priority)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("footprint_scan" + suffix).c_str(), scan_benchmark, nodes,
                                 Floor::footprint)
        ->Unit(benchmark::kMicrosecond);
    for (std::size_t kind = 0; kind < kinds().size(); ++kind) {
      const std::string name = std::string("/") + kinds()[kind].name + suffix;
      // Branch-and-bound first: its plans become the references of the others.
      benchmark::RegisterBenchmark(("branch_and_bound" + name).c_str(), [=](benchmark::State& s) {
        decide(s, solvers::branch_and_bound, nodes, kind);
      })->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(("greedy" + name).c_str(), [=](benchmark::State& s) {
        decide(s, solvers::greedy, nodes, kind);
      })->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(("knapsack" + name).c_str(), [=](benchmark::State& s) {
        decide(s, solvers::knapsack, nodes, kind);
      })->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(("kube_default" + name).c_str(), [=](benchmark::State& s) {
        decide(s, baselines::kube_default, nodes, kind);
      })->Unit(benchmark::kMillisecond);
      if (nodes <= exhaustive_max_nodes) {
        benchmark::RegisterBenchmark(
            ("exhaustive_subsets" + name).c_str(),
            [=](benchmark::State& s) { decide(s, exhaustive, nodes, kind); })
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
  return true;
}

[[maybe_unused]] const bool registered = register_benchmarks();

}  // namespace
