// SPDX-License-Identifier: MIT
// Branch-and-bound against `exhaustive_subsets` where the subset search really is exponential:
// openb-style GPU sharing. Every node (`shapes::openb_node("T4", 8, 96000, 393216)`: 2 sockets
// x 2 NUMA nodes x 2 GPUs) holds 12-20 pods of 0.25-1 GPU (`whole_devices = 0`, `gpu_milli`)
// with mixed priorities, and no GPU is idle. A preemptor wants whole GPUs, so it must empty
// every pod off each GPU it takes: per node, the paper's search enumerates the k-subsets of up
// to 20 eligible pods (2^20 ~ 10^6 subsets per node before its cost pruning).
//
// One benchmark per (preemptor kind, cluster size), run once: for each of the 4 variants
// (priority 2000 / 2000 heavy / 700 / 400) it times branch-and-bound (median of >= 5 runs) and
// exhaustive_subsets (`max_victims_per_domain(24)`, `time_limit(10 s)`; median of up to 3
// runs, 1 when a run takes over 1 s), CPU time of the calling thread. The benchmark stops with
// SkipWithError when both solvers claim optimality and their costs differ.
// Counters (per variant, then summarised):
//   bnb_ms, exh_ms       median decision time of each (mean over variants of the medians)
//   speedup_min/_median  exh_ms / bnb_ms over the variants where exhaustive finished (proved
//                        optimal within its limits)
//   exh_finished         fraction of variants where exhaustive finished
//   same_cost            fraction of those where both costs agree (1 or the benchmark errors)
//   eligible_max         most eligible victims in one node; exh_subsets / bnb_nodes: search nodes
//   root_bound_ratio     branch-and-bound's lower bound before branching (node limit 1) / optimum
//   device_bound_ratio   the per-GPU emptying bound (device_emptying_bound) / optimum
//   greedy_ratio         greedy's cost / optimum
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_timing.hpp"
#include "topopreempt/baselines/exhaustive_subsets.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/greedy.hpp"

namespace {

using namespace topopreempt;

using topopreempt_bench::thread_seconds;

using topopreempt_bench::median;

using BenchCost = cost::weighted_sum<cost::lost_work, cost::reload_time>;
const BenchCost cost_model{};

constexpr Amount t4_memory_mib = 16384;

/// A cluster of `nodes` openb T4 nodes, every GPU shared by 1-4 pods (12-20 per node).
struct ShareCluster {
  std::shared_ptr<const Topology> topology;
  Allocation state;
  std::size_t max_pods_per_node = 0;
};

ShareCluster build_cluster(std::size_t nodes, std::uint64_t seed) {
  auto topology = std::make_shared<const Topology>(
      shapes::cluster(shapes::openb_node("T4", 8, 96000, 393216), nodes, 32));
  ShareCluster result{topology, Allocation(topology), 0};
  std::mt19937_64 random(seed);
  const auto below = [&](std::uint64_t n) { return random() % n; };
  const ResourceSchema& schema = topology->schema();
  const LevelIndex numa_level = topology->level_index("numa");
  std::uint64_t next_id = 1;
  // Priority classes: spot, batch, research, production, serving (half of serving is
  // non-preemptible).
  constexpr std::array<std::int32_t, 5> classes{0, 100, 300, 600, 1000};
  for (DomainId host : topology->domains_at(topology->host_level())) {
    const auto gpus = topology->domains_at(topology->device_level(), host);
    // 12-20 pods over 8 GPUs, 1-4 per GPU.
    const std::size_t pods = 12 + below(9);
    result.max_pods_per_node = std::max(result.max_pods_per_node, pods);
    std::vector<int> per_gpu(gpus.size(), 1);
    for (std::size_t extra = pods - gpus.size(); extra > 0;) {
      const std::size_t g = below(gpus.size());
      if (per_gpu[g] < 4) {
        ++per_gpu[g];
        --extra;
      }
    }
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      // Split 750 or 1000 milli-GPU into per_gpu[g] shares, multiples of 250.
      const int quarters_total = per_gpu[g] == 4 ? 4 : 3 + static_cast<int>(below(2));
      std::vector<int> quarters(static_cast<std::size_t>(per_gpu[g]), 1);
      for (int left = quarters_total - per_gpu[g]; left > 0; --left)
        ++quarters[below(quarters.size())];
      const DomainId numa = topology->ancestor_at(gpus[g], numa_level);
      for (const int q : quarters) {
        Workload pod;
        pod.id = WorkloadId{next_id++};
        pod.name = "pod" + std::to_string(pod.id.value);
        const std::size_t c = below(100) < 10 ? 4 : below(4);
        pod.priority = classes[c];
        pod.preemptible = c < 4 || below(2) == 0;
        const Amount milli = 250 * q;
        const Amount gpu_memory = t4_memory_mib * milli / 1000;
        const Amount cpu = 1000 * static_cast<Amount>(1 + below(3));
        const Amount memory = 1024 * static_cast<Amount>(4 + below(7));
        pod.demand.whole_devices = 0;
        pod.demand.resources = schema.make({{"gpu_milli", milli},
                                            {"gpu_memory_mib", gpu_memory},
                                            {"cpu_milli", cpu},
                                            {"memory_mib", memory}});
        pod.cost.seconds_since_checkpoint = static_cast<double>(below(1800));
        pod.cost.model_id = "model" + std::to_string(below(6));
        pod.cost.model_size_gib = static_cast<double>(below(9));
        Placement placement;
        placement.replicas.resize(1);
        placement.replicas[0].entries.push_back(
            {gpus[g], schema.make({{"gpu_milli", milli}, {"gpu_memory_mib", gpu_memory}})});
        placement.replicas[0].entries.push_back(
            {numa, schema.make({{"cpu_milli", cpu}, {"memory_mib", memory}})});
        result.state.add(pod, placement);
      }
    }
  }
  return result;
}

const ShareCluster& cluster(std::size_t nodes) {
  static std::map<std::size_t, std::unique_ptr<ShareCluster>> cache;
  auto& slot = cache[nodes];
  if (!slot) slot = std::make_unique<ShareCluster>(build_cluster(nodes, 7 + nodes));
  return *slot;
}

/// A preemptor kind: whole GPUs in one replica, guaranteed at `level`.
struct Kind {
  const char* name;
  std::int32_t gpus;
  const char* level;
};
constexpr std::array<Kind, 3> kinds{
    {{"numa2", 2, "numa"}, {"socket4", 4, "socket"}, {"node4", 4, "node"}}};

std::vector<Workload> variants(const Kind& kind) {
  struct Variant {
    std::int32_t priority;
    Amount cpu_milli_per_gpu;
    Amount memory_mib_per_gpu;
  };
  constexpr std::array<Variant, 4> table{
      {{2000, 3000, 16384}, {2000, 6000, 24576}, {700, 3000, 16384}, {400, 2000, 8192}}};
  std::vector<Workload> result;
  std::uint64_t id = 1'000'000'000;
  for (const Variant& v : table) {
    Workload w;
    w.id = WorkloadId{id++};
    w.name = std::string(kind.name) + "-p" + std::to_string(v.priority) +
             (v.cpu_milli_per_gpu == 6000 ? "h" : "");
    w.priority = v.priority;
    w.demand.whole_devices = kind.gpus;
    w.demand.resources =
        ResourceSchema::standard().make({{"cpu_milli", v.cpu_milli_per_gpu * kind.gpus},
                                         {"memory_mib", v.memory_mib_per_gpu * kind.gpus}});
    w.replica_scope = TopologyRequirement::guaranteed(kind.level);
    result.push_back(std::move(w));
  }
  return result;
}

/// Most eligible victims (preemptible, priority below `priority`) on one node.
std::size_t max_eligible(const Allocation& state, std::int32_t priority) {
  const Topology& topology = state.topology();
  std::size_t most = 0;
  for (DomainId host : topology.domains_at(topology.host_level())) {
    std::size_t here = 0;
    state.for_each_occupant_unordered(host, [&](const WorkloadView& view) {
      here += view.workload.preemptible && view.workload.priority < priority;
    });
    most = std::max(most, here);
  }
  return most;
}

/// A lower bound specific to this cluster, for comparison with branch-and-bound's relaxation: a
/// whole GPU is free only once every pod on it is gone, and every pod sits on one GPU, so the
/// cheapest way to free `kind.gpus` GPUs in one domain of `kind.level` costs at least the sum of
/// the `kind.gpus` cheapest per-GPU "empty it" costs there (CPU and memory ignored).
double device_emptying_bound(const Allocation& state, const Workload& preemptor, const Kind& kind) {
  const Topology& topology = state.topology();
  std::map<std::uint32_t, double> emptying;  // device -> cost of evicting all its pods
  for (DomainId host : topology.domains_at(topology.host_level())) {
    state.for_each_occupant_unordered(host, [&](const WorkloadView& view) {
      const bool eligible =
          view.workload.preemptible && view.workload.priority < preemptor.priority;
      for (DomainId d : view.domains) {
        if (!topology.is_device(d)) continue;
        emptying[d.value] +=
            eligible ? cost_model.evict(view.workload) : std::numeric_limits<double>::infinity();
      }
    });
  }
  double best = std::numeric_limits<double>::infinity();
  for (DomainId domain : topology.domains_at(topology.level_index(kind.level))) {
    std::vector<double> costs;
    for (DomainId gpu : topology.domains_at(topology.device_level(), domain))
      costs.push_back(emptying[gpu.value]);
    if (costs.size() < static_cast<std::size_t>(kind.gpus)) continue;
    std::sort(costs.begin(), costs.end());
    double sum = 0.0;
    for (std::int32_t i = 0; i < kind.gpus; ++i) sum += costs[static_cast<std::size_t>(i)];
    best = std::min(best, sum);
  }
  return best;
}

template <class Solver>
std::pair<double, PreemptionPlan> timed(const Solver& solver, const Allocation& state,
                                        const Workload& preemptor, int min_runs, double budget_s) {
  std::vector<double> times;
  PreemptionPlan plan;
  double spent = 0.0;
  for (int run = 0; run < min_runs || (spent < budget_s && run < 50); ++run) {
    const double start = thread_seconds();
    plan = solver.solve(state, preemptor, cost_model);
    const double t = thread_seconds() - start;
    times.push_back(t);
    spent += t;
    if (t > budget_s) break;  // one slow run is enough
  }
  return {median(std::move(times)), std::move(plan)};
}

void compare(benchmark::State& state, std::size_t nodes, std::size_t kind) {
  const Allocation& allocation = cluster(nodes).state;
  const std::vector<Workload> preemptors = variants(kinds[kind]);
  const auto exhaustive =
      baselines::exhaustive_subsets.max_victims_per_domain(24).time_limit(std::chrono::seconds(10));
  double bnb_ms = 0, exh_ms = 0, finished = 0, same = 0, bnb_optimal = 0, eligible = 0;
  double bnb_nodes = 0, exh_nodes = 0, victims = 0, cost = 0, exh_cost_ratio = 0;
  double root_bound = 0, device_bound = 0, greedy_ratio = 0;
  std::vector<double> speedups;
  std::ostringstream detail;
  for (auto _ : state) {
    for (std::size_t v = 0; v < preemptors.size(); ++v) {
      const Workload& preemptor = preemptors[v];
      const auto [bnb_t, bnb] = timed(solvers::branch_and_bound, allocation, preemptor, 5, 0.2);
      const auto [exh_t, exh] = timed(exhaustive, allocation, preemptor, 1, 1.0);
      bnb_ms += bnb_t * 1e3;
      exh_ms += exh_t * 1e3;
      bnb_nodes += static_cast<double>(bnb.statistics.nodes_explored);
      exh_nodes += static_cast<double>(exh.statistics.nodes_explored);
      bnb_optimal += bnb.status == PlanStatus::optimal;
      victims += static_cast<double>(bnb.victims.size());
      cost += bnb.cost;
      eligible += static_cast<double>(max_eligible(allocation, preemptor.priority));
      exh_cost_ratio += bnb.cost > 0 ? exh.cost / bnb.cost : 1.0;
      // Bounds, relative to the optimum: branch-and-bound's relaxation before any branching
      // (node limit 1), greedy's cost, and the per-GPU emptying bound.
      const PreemptionPlan root =
          solvers::branch_and_bound_solver{}.node_limit(1).solve(allocation, preemptor, cost_model);
      root_bound += bnb.cost > 0 ? root.lower_bound / bnb.cost : 1.0;
      const PreemptionPlan quick = solvers::greedy.solve(allocation, preemptor, cost_model);
      greedy_ratio += bnb.cost > 0 ? quick.cost / bnb.cost : 1.0;
      device_bound +=
          bnb.cost > 0 ? device_emptying_bound(allocation, preemptor, kinds[kind]) / bnb.cost : 1.0;
      const bool exh_done = exh.status == PlanStatus::optimal && !exh.statistics.limit_reached;
      if (exh_done) {
        ++finished;
        speedups.push_back(exh_t / bnb_t);
        if (bnb.status == PlanStatus::optimal) {
          if (std::abs(bnb.cost - exh.cost) > 1e-6 * std::max(1.0, bnb.cost)) {
            state.SkipWithError(("costs differ on " + preemptor.label() + ": branch_and_bound " +
                                 std::to_string(bnb.cost) + ", exhaustive_subsets " +
                                 std::to_string(exh.cost))
                                    .c_str());
            return;
          }
          ++same;
        }
      }
      detail << preemptor.name << ": bnb " << to_string(bnb.status) << " " << bnb.cost << " in "
             << bnb_t * 1e3 << " ms; exh " << to_string(exh.status) << " " << exh.cost << " in "
             << exh_t * 1e3 << " ms (" << exh.statistics.nodes_explored << " subsets); ";
    }
  }
  const auto n = static_cast<double>(preemptors.size());
  state.counters["bnb_ms"] = bnb_ms / n;
  state.counters["exh_ms"] = exh_ms / n;
  state.counters["bnb_optimal"] = bnb_optimal / n;
  state.counters["exh_finished"] = finished / n;
  state.counters["same_cost"] = finished > 0 ? same / finished : 0.0;
  state.counters["exh_cost_ratio"] = exh_cost_ratio / n;
  state.counters["speedup_min"] =
      speedups.empty() ? 0.0 : *std::min_element(speedups.begin(), speedups.end());
  state.counters["speedup_median"] = median(speedups);
  state.counters["eligible_max"] = eligible / n;
  state.counters["bnb_nodes"] = bnb_nodes / n;
  state.counters["exh_subsets"] = exh_nodes / n;
  state.counters["root_bound_ratio"] = root_bound / n;
  state.counters["device_bound_ratio"] = device_bound / n;
  state.counters["greedy_ratio"] = greedy_ratio / n;
  state.counters["victims"] = victims / n;
  state.counters["cost"] = cost / n;
  state.counters["workloads"] = static_cast<double>(allocation.size());
  state.SetLabel(detail.str());
}

bool register_benchmarks() {
  for (const std::size_t nodes : {10, 30, 100}) {
    for (std::size_t kind = 0; kind < kinds.size(); ++kind) {
      const std::string name =
          std::string("bnb_vs_exhaustive/") + kinds[kind].name + "/nodes:" + std::to_string(nodes);
      benchmark::RegisterBenchmark(name.c_str(),
                                   [=](benchmark::State& s) { compare(s, nodes, kind); })
          ->Iterations(1)
          ->Unit(benchmark::kMillisecond);
    }
  }
  return true;
}

[[maybe_unused]] const bool registered = register_benchmarks();

}  // namespace
