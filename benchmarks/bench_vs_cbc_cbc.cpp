// SPDX-License-Identifier: MIT
// Branch-and-bound (and the knapsack DP) against the COIN-OR CBC MIP solver on per-domain
// victim selection, where that problem is exactly a multi-dimensional 0/1 covering:
//
//   min  sum_v cost_v x_v
//   s.t. sum_v freed_v,t[d] x_v >= need_t[d] y_t   for each target t, binding dimension d
//        sum_t y_t = 1,   x, y binary
//
// d ranges over idle GPUs, CPU and memory of the target t (a node, or each socket of a node);
// y_t picks the target (fixed to 1 for a single node). The model is exact because every
// instance is a single node whose workloads hold whole, unshared GPUs (checked), the preemptor
// is one replica confined to the target, its CPU/memory pools lie inside the target, and no
// workload is elastic (no shrink options). Each instance is checked: B&B must prove optimality
// and agree with CBC within 1e-6 (relative), else the benchmark stops with an error; so must
// knapsack wherever it claims optimality. Greedy's cost is reported as a ratio to the optimum.
// CBC's time includes reading the state and building the model (B&B's includes the same work).
#include <Cbc_C_Interface.h>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench_timing.hpp"
#include "topopreempt/model/cluster_generator.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/greedy.hpp"
#include "topopreempt/solvers/knapsack.hpp"

namespace {

using namespace topopreempt;

/// Lost GPU-seconds plus model reload seconds: what evicting a training or serving job costs.
using BenchCost = cost::weighted_sum<cost::lost_work, cost::reload_time>;
const BenchCost cost_model{};

using topopreempt_bench::thread_seconds;

using topopreempt_bench::median;

/// One victim-selection problem: a single-node cluster and a pending preemptor.
struct Instance {
  std::shared_ptr<const GeneratedCluster> cluster;
  Workload preemptor;
  std::string label;
};

/// The optimum by CBC, built straight from the state; nullopt when the MIP is infeasible.
std::optional<double> solve_with_cbc(const Allocation& state, const Workload& preemptor) {
  const Topology& topology = state.topology();
  const ResourceSchema& schema = topology.schema();
  const auto cpu = static_cast<Eigen::Index>(schema.index_of("cpu_milli"));
  const auto memory = static_cast<Eigen::Index>(schema.index_of("memory_mib"));
  const LevelIndex level = topology.level_index(preemptor.replica_scope.level);
  const auto targets = topology.domains_at(level);

  std::vector<WorkloadId> victims;
  std::vector<double> costs;
  state.for_each_workload([&](const Workload& w) {
    if (w.preemptible && w.priority < preemptor.priority) {
      victims.push_back(w.id);
      costs.push_back(cost_model.evict(w));
    }
  });

  Cbc_Model* model = Cbc_newModel();
  Cbc_setLogLevel(model, 0);
  for (std::size_t v = 0; v < victims.size(); ++v) {
    Cbc_addCol(model, "", 0.0, 1.0, costs[v], 1, 0, nullptr, nullptr);
  }
  const int first_target_column = static_cast<int>(victims.size());
  const bool choose_target = targets.size() > 1;
  if (choose_target) {
    for (std::size_t t = 0; t < targets.size(); ++t) {
      Cbc_addCol(model, "", 0.0, 1.0, 0.0, 1, 0, nullptr, nullptr);
    }
  }
  const std::array<double, 3> demand{static_cast<double>(preemptor.demand.whole_devices),
                                     static_cast<double>(preemptor.demand.resources(cpu)),
                                     static_cast<double>(preemptor.demand.resources(memory))};
  std::vector<int> columns;
  std::vector<double> coefficients;
  for (std::size_t t = 0; t < targets.size(); ++t) {
    const DomainId target = targets[t];
    const std::array<double, 3> need{
        demand[0] - static_cast<double>(state.idle_devices(target)),
        demand[1] - static_cast<double>(state.free(target, static_cast<std::size_t>(cpu))),
        demand[2] - static_cast<double>(state.free(target, static_cast<std::size_t>(memory)))};
    // What each victim frees inside this target, per dimension.
    std::vector<std::array<double, 3>> freed(victims.size(), {0.0, 0.0, 0.0});
    for (std::size_t v = 0; v < victims.size(); ++v) {
      const WorkloadView view = state.view(victims[v]);
      for (std::size_t e = 0; e < view.domains.size(); ++e) {
        if (!topology.contains(target, view.domains[e])) continue;
        if (topology.is_device(view.domains[e])) freed[v][0] += 1.0;
        freed[v][1] += static_cast<double>(view.amount(e, static_cast<std::size_t>(cpu)));
        freed[v][2] += static_cast<double>(view.amount(e, static_cast<std::size_t>(memory)));
      }
    }
    for (std::size_t d = 0; d < 3; ++d) {
      if (need[d] <= 0.0) continue;
      columns.clear();
      coefficients.clear();
      for (std::size_t v = 0; v < victims.size(); ++v) {
        if (freed[v][d] > 0.0) {
          columns.push_back(static_cast<int>(v));
          coefficients.push_back(freed[v][d]);
        }
      }
      double rhs = need[d];
      if (choose_target) {
        columns.push_back(first_target_column + static_cast<int>(t));
        coefficients.push_back(-need[d]);
        rhs = 0.0;
      }
      Cbc_addRow(model, "", static_cast<int>(columns.size()), columns.data(), coefficients.data(),
                 'G', rhs);
    }
  }
  if (choose_target) {
    columns.clear();
    coefficients.clear();
    for (std::size_t t = 0; t < targets.size(); ++t) {
      columns.push_back(first_target_column + static_cast<int>(t));
      coefficients.push_back(1.0);
    }
    Cbc_addRow(model, "", static_cast<int>(columns.size()), columns.data(), coefficients.data(),
               'E', 1.0);
  }
  Cbc_solve(model);
  std::optional<double> optimum;
  if (Cbc_isProvenOptimal(model) != 0) optimum = Cbc_getObjValue(model);
  Cbc_deleteModel(model);
  return optimum;
}

/// Whether the linear model above is exact for this instance (see the file comment).
bool linear_model_exact(const Allocation& state, const Workload& preemptor) {
  const Topology& topology = state.topology();
  if (topology.domains_at(topology.host_level()).size() != 1 || preemptor.replicas != 1)
    return false;
  if (preemptor.replica_scope.mode != RequirementMode::guaranteed) return false;
  for (DomainId device : topology.domains_at(topology.device_level())) {
    if (state.device_occupancy(device) > 1) return false;
  }
  bool elastic = false;
  state.for_each_workload(
      [&](const Workload& w) { elastic = elastic || w.min_replicas.has_value(); });
  return !elastic;
}

/// Instances of one family: single nodes (seeds 1..seeds) x preemptors needing victims.
/// Workload mixes of the single-node instances.
enum class Family { mixed, fine_grained, dense };

std::vector<Instance> make_instances(Family family, int seeds) {
  std::vector<Instance> instances;
  for (int seed = 1; seed <= seeds; ++seed) {
    ClusterSpec spec;
    spec.nodes = 1;
    spec.nodes_per_rack = 1;
    spec.seed = static_cast<std::uint64_t>(seed);
    spec.gang_fraction = 0.0;
    spec.elastic_fraction = 0.0;
    if (family == Family::fine_grained) {
      // More, smaller workloads per node: 1- and 2-GPU jobs and more CPU-only jobs.
      spec.size_weights = {0.7, 0.3, 0.0, 0.0};
      spec.cpu_only_per_node = 6.0;
    } else if (family == Family::dense) {
      // As many victims as a node can hold: 1-GPU jobs and a crowd of CPU-only jobs.
      spec.size_weights = {1.0, 0.0, 0.0, 0.0};
      spec.cpu_only_per_node = 16.0;
    }
    auto cluster = std::make_shared<const GeneratedCluster>(generate_cluster(spec));
    struct Ask {
      PreemptorKind kind;
      std::int32_t gpus;
      std::int32_t priority;
    };
    constexpr std::array<Ask, 8> asks{{{PreemptorKind::node, 4, 2000},
                                       {PreemptorKind::node, 6, 2000},
                                       {PreemptorKind::node, 3, 700},
                                       {PreemptorKind::socket, 2, 2000},
                                       {PreemptorKind::socket, 3, 2000},
                                       {PreemptorKind::socket, 4, 2000},
                                       {PreemptorKind::socket, 2, 700},
                                       {PreemptorKind::node, 8, 2000}}};
    for (const Ask& ask : asks) {
      PreemptorSpec preemptor_spec;
      preemptor_spec.kind = ask.kind;
      preemptor_spec.gpus = ask.gpus;
      preemptor_spec.priority = ask.priority;
      const Workload preemptor = make_preemptor(preemptor_spec);
      if (!linear_model_exact(cluster->state, preemptor)) continue;
      if (find_placement(cluster->state, preemptor).found) continue;  // needs no victims
      instances.push_back({cluster, preemptor,
                           "seed " + std::to_string(seed) + " " + preemptor.name + " prio " +
                               std::to_string(ask.priority)});
    }
  }
  return instances;
}

void versus_cbc(benchmark::State& state, Family family) {
  const std::vector<Instance> instances = make_instances(family, 40);
  // Correctness first, untimed: every instance, every method.
  std::size_t infeasible = 0;
  std::size_t knapsack_exact = 0;
  double knapsack_ratio = 0.0;
  std::size_t knapsack_ratio_count = 0;
  double eligible = 0.0;
  double max_eligible = 0.0;
  double greedy_ratio = 0.0;
  double greedy_worst = 0.0;
  double greedy_within_5 = 0.0;
  std::size_t greedy_count = 0;
  for (const Instance& instance : instances) {
    const Allocation& allocation = instance.cluster->state;
    const std::optional<double> cbc = solve_with_cbc(allocation, instance.preemptor);
    const PreemptionPlan bnb =
        solvers::branch_and_bound.solve(allocation, instance.preemptor, cost_model);
    const PreemptionPlan dp = solvers::knapsack.solve(allocation, instance.preemptor, cost_model);
    double here = 0.0;
    allocation.for_each_workload([&](const Workload& w) {
      here += w.preemptible && w.priority < instance.preemptor.priority;
    });
    eligible += here;
    max_eligible = std::max(max_eligible, here);
    const auto agrees = [&](const PreemptionPlan& plan) {
      if (!cbc) return plan.status == PlanStatus::infeasible;
      return plan.has_victims_plan() &&
             std::abs(plan.cost - *cbc) <= 1e-6 * std::max(1.0, std::abs(*cbc));
    };
    if (!cbc) ++infeasible;
    if (bnb.status != PlanStatus::optimal && bnb.status != PlanStatus::infeasible) {
      state.SkipWithError(("branch_and_bound did not prove optimality on " + instance.label +
                           " (status " + std::string(to_string(bnb.status)) + ")")
                              .c_str());
      return;
    }
    if (!agrees(bnb)) {
      state.SkipWithError(("branch_and_bound " + std::to_string(bnb.cost) + " != CBC " +
                           (cbc ? std::to_string(*cbc) : std::string("infeasible")) + " on " +
                           instance.label)
                              .c_str());
      return;
    }
    if (dp.status == PlanStatus::optimal || (dp.status == PlanStatus::infeasible && !cbc)) {
      ++knapsack_exact;
      if (!agrees(dp)) {
        state.SkipWithError(
            ("knapsack claims optimal " + std::to_string(dp.cost) + " but CBC says " +
             (cbc ? std::to_string(*cbc) : std::string("infeasible")) + " on " + instance.label)
                .c_str());
        return;
      }
    }
    const PreemptionPlan quick = solvers::greedy.solve(allocation, instance.preemptor, cost_model);
    if (cbc && *cbc > 0.0 && quick.has_victims_plan()) {
      const double ratio = quick.cost / *cbc;
      greedy_ratio += ratio;
      greedy_worst = std::max(greedy_worst, ratio);
      greedy_within_5 += ratio <= 1.05 + 1e-9;
      ++greedy_count;
    }
    if (cbc && *cbc > 0.0 && dp.has_victims_plan()) {
      knapsack_ratio += dp.cost / *cbc;
      ++knapsack_ratio_count;
    }
  }

  std::vector<double> bnb_times(instances.size(), 0.0);
  std::vector<double> dp_times(instances.size(), 0.0);
  std::vector<double> cbc_times(instances.size(), 0.0);
  for (auto _ : state) {
    for (std::size_t i = 0; i < instances.size(); ++i) {
      const Allocation& allocation = instances[i].cluster->state;
      const Workload& preemptor = instances[i].preemptor;
      double start = thread_seconds();
      benchmark::DoNotOptimize(solvers::branch_and_bound.solve(allocation, preemptor, cost_model));
      double stop = thread_seconds();
      bnb_times[i] += stop - start;
      start = stop;
      benchmark::DoNotOptimize(solvers::knapsack.solve(allocation, preemptor, cost_model));
      stop = thread_seconds();
      dp_times[i] += stop - start;
      start = stop;
      benchmark::DoNotOptimize(solve_with_cbc(allocation, preemptor));
      cbc_times[i] += thread_seconds() - start;
    }
  }
  const auto rounds = static_cast<double>(state.iterations());
  const auto n = static_cast<double>(instances.size());
  double bnb_total = 0.0, dp_total = 0.0, cbc_total = 0.0;
  std::vector<double> ratio_bnb, ratio_dp;
  for (std::size_t i = 0; i < instances.size(); ++i) {
    bnb_total += bnb_times[i];
    dp_total += dp_times[i];
    cbc_total += cbc_times[i];
    ratio_bnb.push_back(cbc_times[i] / std::max(bnb_times[i], 1e-12));
    ratio_dp.push_back(cbc_times[i] / std::max(dp_times[i], 1e-12));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(instances.size()));
  state.counters["instances"] = n;
  state.counters["infeasible"] = static_cast<double>(infeasible);
  state.counters["eligible_victims"] = eligible / n;
  state.counters["max_eligible"] = max_eligible;
  state.counters["bnb_us"] = bnb_total / rounds / n * 1e6;
  state.counters["knapsack_us"] = dp_total / rounds / n * 1e6;
  state.counters["cbc_us"] = cbc_total / rounds / n * 1e6;
  state.counters["cbc_over_bnb"] = cbc_total / bnb_total;
  state.counters["cbc_over_knapsack"] = cbc_total / dp_total;
  state.counters["median_cbc_over_bnb"] = median(ratio_bnb);
  state.counters["median_cbc_over_knapsack"] = median(ratio_dp);
  state.counters["knapsack_exact"] = static_cast<double>(knapsack_exact) / n;
  state.counters["greedy_cost_ratio"] =
      greedy_count > 0 ? greedy_ratio / static_cast<double>(greedy_count) : 0.0;
  state.counters["greedy_worst_ratio"] = greedy_worst;
  state.counters["greedy_within_5pct"] =
      greedy_count > 0 ? greedy_within_5 / static_cast<double>(greedy_count) : 0.0;
  state.counters["knapsack_cost_ratio"] =
      knapsack_ratio_count > 0 ? knapsack_ratio / static_cast<double>(knapsack_ratio_count) : 0.0;
}

BENCHMARK_CAPTURE(versus_cbc, mixed, Family::mixed)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(versus_cbc, fine_grained, Family::fine_grained)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(versus_cbc, dense, Family::dense)->Unit(benchmark::kMillisecond);

}  // namespace
