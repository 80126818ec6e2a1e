// SPDX-License-Identifier: MIT
#pragma once
/// @file knapsack.hpp
/// Exact per-domain victim selection by dynamic programming over the binding resources
/// (multiple-choice min-cost covering), under stated preconditions that it checks and reports.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/solvers/detail/min_cost_covering.hpp"
#include "topopreempt/solvers/detail/preemption_context.hpp"
#include "topopreempt/plan/preemption_plan.hpp"
#include "topopreempt/solvers/greedy.hpp"

namespace topopreempt::solvers {

namespace detail {

/// Why the DP is not exact for a domain, or empty when every precondition holds:
/// (1) the target is a single unit (all replicas confined to it: one replica, or a gang scope
///     at or below the replica scope), so fitting is a sum per dimension;
/// (2) whole devices or no devices are asked (a share must fit on one device: not a sum);
/// (3) no occupied device in the target is shared by two workloads (a freed device is then
///     exactly one victim's gain);
/// (4) the pools the preemptor draws from lie inside the target;
/// (5) at most two dimensions are short (the DP table is (deficit+1) per dimension);
/// (6) every elastic victim's shrink choices are listed (at most 7 of its replicas in reach).
[[nodiscard]] inline std::string knapsack_precondition_failure(
    const Allocation& state, const topopreempt::detail::DomainProblem& problem) {
  const Topology& topology = state.topology();
  const ResolvedDemand& demand = problem.tier->demand;
  if (topology.level(problem.target) < demand.unit_level) {
    return "target holds several units (replicas may spread): not a single covering";
  }
  if (demand.has_share) return "a device share must fit on one device: not a single covering";
  for (DomainId device : topology.domains_at(topology.device_level(), problem.target)) {
    if (state.device_occupancy(device) > 1) {
      return topology.describe(device) + " is shared by several workloads";
    }
  }
  std::size_t binding = 0;
  for (std::size_t k = 0; k < problem.dims.size(); ++k) {
    if (problem.measured_in[k] != problem.target) {
      return "the preemptor's " + problem.dimension_names[k] + " come from outside the target";
    }
    if (problem.need[k] > 0.0) ++binding;
  }
  if (binding > 2) return std::to_string(binding) + " dimensions are short (the DP handles 2)";
  for (const auto& victim : problem.victims) {
    if (!victim.options_complete) {
      return victim.workload->label() + " has too many replicas in reach to list every shrink";
    }
  }
  return {};
}

/// The DP search inside one domain; falls back to greedy (and says so) where the
/// preconditions fail or the table would be too large.
struct KnapsackSearch {
  std::size_t max_cells = std::size_t{1} << 24;

  [[nodiscard]] topopreempt::detail::DomainOutcome search(
      const Allocation& state, const topopreempt::detail::DomainProblem& problem, double incumbent,
      const topopreempt::detail::SearchLimits& limits, SolverStatistics& statistics) const {
    using namespace topopreempt::detail;
    std::string failure = knapsack_precondition_failure(state, problem);
    DowngradeReason reason = DowngradeReason::precondition;
    if (failure.empty()) {
      std::vector<std::size_t> binding;
      for (std::size_t k = 0; k < problem.need.size(); ++k) {
        if (problem.need[k] > 0.0) binding.push_back(k);
      }
      covering_problem<double> covering;
      covering.reserve(problem.victims.size(), problem.victims.size() * 2);
      for (const auto& victim : problem.victims) {
        covering.begin_group();
        for (const auto& option : victim.options) {
          covering_option<double> item;
          for (std::size_t b = 0; b < binding.size(); ++b) {
            item.gain[b] = static_cast<std::int64_t>(option.gain[binding[b]]);
          }
          item.cost = option.cost;
          covering.add_option(item);
        }
      }
      covering_amount deficit{0, 0};
      for (std::size_t b = 0; b < binding.size(); ++b) {
        deficit[b] = static_cast<std::int64_t>(problem.need[binding[b]]);
      }
      min_cost_covering_workspace<double> workspace;
      const auto result = solve_min_cost_covering(covering, deficit, workspace, covering_limits{max_cells});
      statistics.dp_cells += result.cells;
      if (result.status == covering_status::optimal) {
        DomainOutcome outcome;
        outcome.found = true;
        outcome.exact = true;
        outcome.choice = result.choice;
        outcome.cost = result.cost;
        outcome.lower_bound = result.cost;
        // The covering is exact under the preconditions; confirm with the placement model so a
        // precondition bug can never yield an invalid plan.
        FeasibilityOracle oracle(state, problem);
        for (std::size_t v = 0; v < outcome.choice.size(); ++v) {
          if (outcome.choice[v] >= 0) oracle.apply(v, static_cast<std::size_t>(outcome.choice[v]), +1);
        }
        if (oracle.feasible()) return outcome;
        failure = "internal: covering optimum did not fit (reported as a bug)";
      } else if (result.status == covering_status::infeasible) {
        DomainOutcome outcome;
        outcome.exact = true;
        outcome.lower_bound = std::numeric_limits<double>::infinity();
        outcome.note = "no victim set covers the deficit";
        return outcome;
      } else {
        failure = "DP table over " + std::to_string(max_cells) + " cells";
        reason = DowngradeReason::cell_limit;
      }
    }
    DomainOutcome outcome = GreedySearch{}.search(state, problem, incumbent, limits, statistics);
    // Greedy's one proof (nothing fits even with every victim evicted) stands; a plan of
    // greedy's is not proven.
    if (outcome.found || !outcome.exact) {
      outcome.exact = false;
      outcome.lower_bound = problem.lower_bound;
    }
    outcome.note = "greedy fallback: " + failure;
    outcome.downgrade = reason;
    return outcome;
  }
};

}  // namespace detail

/// Knapsack solver: in each candidate domain, solves victim selection exactly as a
/// multiple-choice min-cost covering over the (at most two) short dimensions by dynamic
/// programming — when the preconditions of `knapsack_precondition_failure` hold. A plan is
/// `optimal` only if every domain it searched met them; otherwise the failing domains were
/// solved greedily, the plan is `feasible`, and each such domain's verdict says why.
/// Cost: O(victims x options x table) per domain, table <= `max_cells` (default 2^24).
///
/// Thread-safety: `solve` is const; concurrent calls on a shared, unmodified state are safe.
class knapsack_solver {
 public:
  /// The name plans and reports carry.
  static constexpr std::string_view name = "knapsack";
  static constexpr bool is_exact = true;  ///< exact under its documented preconditions

  /// The same solver, returning plans without their text: `explanation` and every
  /// `Victim::reason` and `DomainVerdict::reason` stay empty, the structured facts are all
  /// there, and `topopreempt::explain(plan, state, preemptor, model)` words them later, to the
  /// same bytes. For hot paths (an `IncrementalDecider`, a scheduler loop) that print rarely.
  [[nodiscard]] knapsack_solver without_text() const {
    knapsack_solver copy = *this;
    copy.text_ = false;
    return copy;
  }
  /// Whether plans come with their text (see `without_text`).
  [[nodiscard]] bool builds_text() const noexcept { return text_; }

  /// Largest DP table per domain before falling back to greedy.
  knapsack_solver& max_cells(std::size_t cells) & noexcept {
    search_.max_cells = cells;
    return *this;
  }
  /// The same on a temporary, e.g. `knapsack_solver{}.max_cells(1 << 20)`.
  knapsack_solver max_cells(std::size_t cells) && noexcept {
    search_.max_cells = cells;
    return *this;
  }

  /// Chooses victims for `preemptor` under `model`. Throws `std::invalid_argument` naming the
  /// preemptor when it is invalid or already running.
  template <CostModel Model>
  [[nodiscard]] PreemptionPlan solve(const Allocation& state, const Workload& preemptor,
                                     const Model& model) const {
    return topopreempt::detail::solve_with(name, state, preemptor, model, search_,
                                           limits());
  }

  /// `solve` reusing the scan results in `cache` whose domains kept their versions (see
  /// `IncrementalDecider`, which owns the cache): the same plan.
  template <CostModel Model>
  [[nodiscard]] PreemptionPlan solve(const Allocation& state, const Workload& preemptor, const Model& model,
                                     topopreempt::detail::ScanCache& cache) const {
    return topopreempt::detail::solve_with(name, state, preemptor, model, search_,
                                           limits(), &cache);
  }

 private:
  [[nodiscard]] topopreempt::detail::SearchLimits limits() const noexcept {
    topopreempt::detail::SearchLimits limits;
    limits.text = text_;
    return limits;
  }
  detail::KnapsackSearch search_;
  bool text_ = true;
};

/// Ready-to-use instance.
inline constexpr knapsack_solver knapsack{};

}  // namespace topopreempt::solvers
