// SPDX-License-Identifier: MIT
#pragma once
/// @file covering_root_bound.hpp
/// The exact covering bound of a domain at the root of branch-and-bound: the minimum-cost
/// integer cover of the aggregate deficits (one or two resources) by the victims' options,
/// solved by the covering DP (`min_cost_covering.hpp`) within a memory budget. Every feasible
/// victim set covers those deficits, so the cover's cost bounds the domain; when its choice also
/// places the preemptor, it is the domain's optimum. On a pure 0-1 knapsack domain (one
/// resource, evictions only) this closes instances the fractional bound never closes: on
/// strongly correlated ones the LP gap does not move with millions of nodes.

#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "topopreempt/solvers/detail/min_cost_covering.hpp"
#include "topopreempt/solvers/detail/search_bounds.hpp"

namespace topopreempt::detail {

/// Fewer victims than this are searched fast by branch-and-bound itself: no DP is built.
inline constexpr std::size_t covering_root_min_victims = 24;

/// DP cells allowed at the root: 2^27 when every victim has one option (decisions take one bit
/// per cell: 16 MiB), else 2^25 (up to 8 bits per cell: 32 MiB).
inline constexpr std::size_t covering_root_cells_single = std::size_t{1} << 27;
inline constexpr std::size_t covering_root_cells_multiple = std::size_t{1} << 25;

/// What the covering DP proved about one domain.
struct CoveringRoot {
  double bound = 0.0;                 ///< a lower bound on every victim set of the domain
  bool placeable = false;             ///< the cover's choice also places the preemptor
  double cost = 0.0;                  ///< its cost (sum in victim order) when placeable
  std::vector<std::int32_t> choice;   ///< per victim: -1 = spared, else option index
  std::uint64_t cells = 0;            ///< DP cells evaluated
};

/// The exact cover of `problem`'s deficits, or nullopt when it does not apply: fewer than
/// `covering_root_min_victims` victims, more than two relaxation dimensions, a gain or need
/// that is not a whole number, more than 255 options for a victim, or a table beyond the budget.
[[nodiscard]] inline std::optional<CoveringRoot> covering_root_bound(const Allocation& state,
                                                                     const DomainProblem& problem) {
  const std::size_t dims = problem.need.size();
  if (problem.victims.size() < covering_root_min_victims || dims == 0 || dims > 2) return std::nullopt;
  const auto whole = [](double value) {
    return value >= 0.0 && value == std::floor(value) && value < 9.0e15;
  };
  covering_amount deficit{};
  for (std::size_t k = 0; k < dims; ++k) {
    if (!whole(problem.need[k])) return std::nullopt;
    deficit[k] = static_cast<std::int64_t>(problem.need[k]);
  }
  covering_problem<double> covering;
  bool single = true;
  for (const CandidateVictim& victim : problem.victims) {
    if (victim.options.size() > max_covering_options_per_group) return std::nullopt;
    single = single && victim.options.size() == 1;
    covering.begin_group();
    for (const VictimOption& option : victim.options) {
      covering_amount gain{};
      for (std::size_t k = 0; k < dims; ++k) {
        if (!whole(option.gain[k])) return std::nullopt;
        gain[k] = static_cast<std::int64_t>(option.gain[k]);
      }
      covering.add_option({gain, option.cost});
    }
  }
  covering_limits limits;
  limits.max_cells = single ? covering_root_cells_single : covering_root_cells_multiple;
  min_cost_covering_workspace<double> workspace;
  const covering_result<double> result = solve_min_cost_covering(covering, deficit, workspace, limits);
  if (result.status != covering_status::optimal) return std::nullopt;
  CoveringRoot root;
  root.cells = result.cells;
  // On a cost grid every sum is exact; otherwise the DP's sums may round up: lowered by that.
  root.bound = problem.grid > 0.0
                   ? result.cost
                   : conservative(result.cost, 2.0 * static_cast<double>(problem.victims.size()));
  FeasibilityOracle oracle(state, problem);
  for (std::size_t v = 0; v < problem.victims.size(); ++v) {
    if (result.choice[v] == no_option) continue;
    const auto option = static_cast<std::size_t>(result.choice[v]);
    oracle.apply(v, option, +1);
    root.cost += problem.victims[v].options[option].cost;
  }
  root.placeable = oracle.feasible();
  if (root.placeable) root.choice = result.choice;
  return root;
}

}  // namespace topopreempt::detail
