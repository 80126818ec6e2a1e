// SPDX-License-Identifier: MIT
#pragma once
/// @file elastic_scaling.hpp
/// Elastic scaling by multiple-choice knapsack (after Aryl / Lyra, Li et al., arXiv 2202.07896,
/// EuroSys'23): hand spare GPUs to elastic jobs so that the total JCT reduction is maximal.
///
/// - `scale_elastic_jobs`: exact multiple-choice knapsack (one group per elastic job, item = w
///   extra workers) solved through `detail::solve_min_cost_covering`.
/// - `jct_reductions`: an option list from a throughput curve.
///
/// Thread-safety: every function is pure (reads its arguments only); call them concurrently.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "topopreempt/model/workload.hpp"
#include "topopreempt/solvers/detail/min_cost_covering.hpp"

namespace topopreempt::capacity {

namespace impl {
/// Shortest round-trip text of `value`, for messages.
[[nodiscard]] inline std::string scaling_number(double value) {
  char buffer[32];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return error == std::errc() ? std::string(buffer, end) : std::string("?");
}
}  // namespace impl

/// The scaling options of one elastic job: giving it `w` extra workers (w = 1..size of
/// `jct_reduction`) uses `w x gpus_per_worker` GPUs and shortens its JCT by
/// `jct_reduction[w - 1]` (seconds, or any unit shared by all jobs). Values need not grow with
/// w (a throughput curve may saturate or fall); dominated options are simply never chosen.
struct ElasticJobOption {
  /// The elastic job.
  WorkloadId job{};
  std::string name{};  ///< for messages only; may be empty
  /// GPUs one extra worker takes.
  std::int64_t gpus_per_worker = 1;
  /// `jct_reduction[w - 1]`: the value of `w` extra workers (w = 1, 2, ...).
  std::vector<double> jct_reduction{};

  /// "elastic job 7 'bert'" for messages.
  [[nodiscard]] std::string label() const {
    return "elastic job " + std::to_string(job.value) + (name.empty() ? "" : " '" + name + "'");
  }
};

/// How many extra workers one job gets.
struct ScalingDecision {
  /// The elastic job.
  WorkloadId job{};
  /// Extra workers it gets (0: none).
  std::int32_t extra_workers = 0;
  std::int64_t gpus = 0;       ///< extra_workers x gpus_per_worker
  double jct_reduction = 0.0;  ///< the option's value (0 for no extra workers)
  /// Member-wise equality.
  friend bool operator==(const ScalingDecision&, const ScalingDecision&) = default;
};

/// Outcome of `scale_elastic_jobs`.
enum class ScalingStatus : std::uint8_t {
  optimal,    ///< the decisions maximise the total JCT reduction within the free GPUs
  too_large,  ///< the DP table would exceed the cell limit; decisions are all zero
};

/// Result of `scale_elastic_jobs`.
struct ScalingPlan {
  /// `too_large` when the DP would exceed its cell limit.
  ScalingStatus status = ScalingStatus::optimal;
  std::vector<ScalingDecision> decisions;  ///< one per input job, input order
  double total_jct_reduction = 0.0;        ///< sum of the decisions' values, in input order
  /// GPUs the decisions take together.
  std::int64_t gpus_used = 0;
  /// GPUs that were free to share out.
  std::int64_t free_gpus = 0;
  std::uint64_t dp_cells = 0;  ///< DP cells evaluated
  /// Member-wise equality.
  friend bool operator==(const ScalingPlan&, const ScalingPlan&) = default;
};

/// JCT reductions from a throughput curve: `throughput[0]` is the job's current throughput,
/// `throughput[w]` its throughput with w extra workers; the reduction of w workers is
/// `remaining_work / throughput[0] - remaining_work / throughput[w]`, clamped at 0 (more workers
/// that slow a job down are worth nothing, never a negative value). Throws
/// `std::invalid_argument` naming the index for a throughput that is not finite and positive,
/// or for a negative `remaining_work`.
[[nodiscard]] inline std::vector<double> jct_reductions(double remaining_work,
                                                        std::span<const double> throughput) {
  if (!(remaining_work >= 0.0) || !std::isfinite(remaining_work)) {
    throw std::invalid_argument("capacity: remaining_work must be finite and >= 0, got " +
                                impl::scaling_number(remaining_work));
  }
  for (std::size_t i = 0; i < throughput.size(); ++i) {
    if (!(throughput[i] > 0.0) || !std::isfinite(throughput[i])) {
      throw std::invalid_argument("capacity: throughput[" + std::to_string(i) +
                                  "] must be finite and > 0, got " +
                                  impl::scaling_number(throughput[i]));
    }
  }
  std::vector<double> result;
  if (throughput.empty()) return result;
  const double now = remaining_work / throughput[0];
  for (std::size_t w = 1; w < throughput.size(); ++w) {
    result.push_back(std::max(0.0, now - remaining_work / throughput[w]));
  }
  return result;
}

/// Aryl's elastic scaling: gives each elastic job w >= 0 extra workers so that the total JCT
/// reduction is maximal and the GPUs used stay within `free_gpus` (a multiple-choice knapsack:
/// one group per job, item = w workers, weight = w x gpus_per_worker, value = JCT reduction).
///
/// Exact. Per job, options heavier than `free_gpus` and options no better than a lighter one
/// are dropped (that never loses value); the rest have increasing weight *and* value, so the
/// knapsack becomes a covering problem: start from every job's heaviest option and choose, per
/// job, how much to give back (gain = GPUs returned, cost = value lost) so that at least
/// (total - free_gpus) GPUs are returned at minimum lost value. That is solved exactly by
/// `detail::solve_min_cost_covering`. Ties are deterministic (see the covering solver: earlier
/// jobs keep more workers). With non-integer values, "optimal" is up to floating-point rounding
/// of the value differences.
///
/// Throws `std::invalid_argument` naming the job for a negative `free_gpus`, a
/// `gpus_per_worker` < 1, a reduction that is negative or not finite, more than 255 worker
/// options, a job listed twice, or GPU counts overflowing int64.
/// Complexity: O(total options x (total heaviest weight - free_gpus + 1)); the table is bounded
/// by `max_dp_cells` (status `too_large` beyond it).
[[nodiscard]] inline ScalingPlan scale_elastic_jobs(std::span<const ElasticJobOption> jobs,
                                                    std::int64_t free_gpus,
                                                    std::size_t max_dp_cells = std::size_t{1}
                                                                               << 26) {
  if (free_gpus < 0) {
    throw std::invalid_argument("capacity: free_gpus is negative (" + std::to_string(free_gpus) +
                                ")");
  }
  struct Kept {
    std::int32_t workers;
    std::int64_t gpus;
    double value;
  };
  std::vector<std::vector<Kept>> kept(jobs.size());
  std::map<std::uint64_t, std::size_t> seen;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const ElasticJobOption& job = jobs[j];
    if (auto [it, inserted] = seen.try_emplace(job.job.value, j); !inserted) {
      throw std::invalid_argument("capacity: " + job.label() + " is listed twice (entries " +
                                  std::to_string(it->second) + " and " + std::to_string(j) + ")");
    }
    if (job.gpus_per_worker < 1) {
      throw std::invalid_argument("capacity: " + job.label() +
                                  ": gpus_per_worker must be >= 1, got " +
                                  std::to_string(job.gpus_per_worker));
    }
    if (job.jct_reduction.size() > detail::max_covering_options_per_group - 1) {
      throw std::invalid_argument("capacity: " + job.label() + " offers " +
                                  std::to_string(job.jct_reduction.size()) +
                                  " worker options (at most " +
                                  std::to_string(detail::max_covering_options_per_group - 1) + ")");
    }
    double best = 0.0;  // "no extra workers" is worth 0
    for (std::size_t i = 0; i < job.jct_reduction.size(); ++i) {
      const double value = job.jct_reduction[i];
      const auto workers = static_cast<std::int32_t>(i + 1);
      if (!(value >= 0.0) || !std::isfinite(value)) {
        throw std::invalid_argument("capacity: " + job.label() + ": jct_reduction for " +
                                    std::to_string(workers) + " extra workers is " +
                                    impl::scaling_number(value) + "; it must be finite and >= 0");
      }
      if (job.gpus_per_worker > std::numeric_limits<std::int64_t>::max() / workers) {
        throw std::invalid_argument("capacity: " + job.label() + ": GPU count of " +
                                    std::to_string(workers) + " workers overflows");
      }
      const std::int64_t gpus = job.gpus_per_worker * workers;
      // Weights grow with w, so keeping only strict value improvements leaves the undominated
      // options (ties go to fewer workers).
      if (gpus <= free_gpus && value > best) {
        kept[j].push_back({workers, gpus, value});
        best = value;
      }
    }
  }

  ScalingPlan plan;
  plan.free_gpus = free_gpus;
  detail::covering_problem<double> problem;
  std::int64_t heaviest_total = 0;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    problem.begin_group();
    if (kept[j].empty()) continue;
    const Kept& top = kept[j].back();
    if (top.gpus > std::numeric_limits<std::int64_t>::max() - heaviest_total) {
      throw std::invalid_argument("capacity: total GPUs overflow at " + jobs[j].label());
    }
    heaviest_total += top.gpus;
    // Option i < size-1: fall back to kept[i]; the last option: no extra workers at all.
    for (std::size_t i = 0; i + 1 < kept[j].size(); ++i) {
      problem.add_option({{top.gpus - kept[j][i].gpus, 0}, top.value - kept[j][i].value});
    }
    problem.add_option({{top.gpus, 0}, top.value});
  }
  const std::int64_t deficit = std::max<std::int64_t>(heaviest_total - free_gpus, 0);
  detail::min_cost_covering_workspace<double> workspace;
  detail::covering_limits limits;
  limits.max_cells = max_dp_cells;
  const detail::covering_result<double> result =
      detail::solve_min_cost_covering(problem, {deficit, 0}, workspace, limits);
  plan.dp_cells = result.cells;
  plan.decisions.reserve(jobs.size());
  if (result.status != detail::covering_status::optimal) {
    // Infeasible cannot happen (giving everything back always covers); too_large can.
    plan.status = ScalingStatus::too_large;
    for (const ElasticJobOption& job : jobs) plan.decisions.push_back({job.job, 0, 0, 0.0});
    return plan;
  }
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    ScalingDecision decision{jobs[j].job, 0, 0, 0.0};
    if (!kept[j].empty()) {
      const auto choice = result.choice[j];
      const std::size_t last = kept[j].size() - 1;
      if (choice == detail::no_option || static_cast<std::size_t>(choice) < last) {
        const Kept& option =
            kept[j][choice == detail::no_option ? last : static_cast<std::size_t>(choice)];
        decision = {jobs[j].job, option.workers, option.gpus, option.value};
      }
    }
    plan.total_jct_reduction += decision.jct_reduction;
    plan.gpus_used += decision.gpus;
    plan.decisions.push_back(decision);
  }
  return plan;
}

}  // namespace topopreempt::capacity
