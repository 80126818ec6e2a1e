// SPDX-License-Identifier: MIT
#pragma once
/// @file statistics.hpp
/// Adding up and taking apart the work counters of `SolverStatistics`: a decision made of
/// several searches (the baselines' subsets, a decider's kept searches) reports their sum.

#include "topopreempt/plan/preemption_plan.hpp"

namespace topopreempt::detail {

/// Adds the work counters of `from` to `into`, and whether a limit was reached (time is
/// measured once, by the caller).
inline void accumulate(SolverStatistics& into, const SolverStatistics& from) noexcept {
  into.domains_considered += from.domains_considered;
  into.domains_pruned += from.domains_pruned;
  into.domains_solved += from.domains_solved;
  into.nodes_explored += from.nodes_explored;
  into.dp_cells += from.dp_cells;
  into.victims_considered += from.victims_considered;
  into.limit_reached = into.limit_reached || from.limit_reached;
}

/// The work counters `after` holds beyond `before` (one search's share of a decision's
/// statistics): what `accumulate` adds back. `limit_reached` is `after`'s where `before`'s
/// was not.
[[nodiscard]] inline SolverStatistics counted_since(const SolverStatistics& after,
                                                    const SolverStatistics& before) noexcept {
  SolverStatistics counts;
  counts.domains_considered = after.domains_considered - before.domains_considered;
  counts.domains_pruned = after.domains_pruned - before.domains_pruned;
  counts.domains_solved = after.domains_solved - before.domains_solved;
  counts.nodes_explored = after.nodes_explored - before.nodes_explored;
  counts.dp_cells = after.dp_cells - before.dp_cells;
  counts.victims_considered = after.victims_considered - before.victims_considered;
  counts.limit_reached = after.limit_reached && !before.limit_reached;
  return counts;
}

}  // namespace topopreempt::detail
