// SPDX-License-Identifier: MIT
#pragma once
/// @file preemption_plan.hpp
/// `PreemptionPlan`: the one result every solver returns.

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "topopreempt/model/placement.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt {

/// Outcome of a preemption decision.
enum class PlanStatus : std::uint8_t {
  optimal,               ///< victims found and proven minimum-cost (lower_bound == cost)
  feasible,              ///< victims found; a limit was hit or the solver makes no optimality claim
  infeasible,            ///< proven: no placement even after evicting every eligible victim
  no_preemption_needed,  ///< the preemptor fits as the cluster stands
  /// A limit (time or search nodes) stopped the search before it found a plan or proved that
  /// none exists: nothing is claimed either way (`statistics.limit_reached` is set).
  unknown,
};

/// "optimal", "feasible", ...
[[nodiscard]] constexpr std::string_view to_string(PlanStatus status) noexcept {
  switch (status) {
    case PlanStatus::optimal: return "optimal";
    case PlanStatus::feasible: return "feasible";
    case PlanStatus::infeasible: return "infeasible";
    case PlanStatus::no_preemption_needed: return "no_preemption_needed";
    case PlanStatus::unknown: return "unknown";
  }
  return "unknown";
}

/// What happens to one victim.
enum class VictimAction : std::uint8_t {
  evict,   ///< the whole gang is preempted
  shrink,  ///< an elastic workload loses `dropped_replicas` and keeps running
};

/// The dimension `FreedAmount::dimension` and `DomainVerdict::dimension` name for whole idle
/// devices (other values index `ResourceSchema`, or name `distinct_hosts_dimension`).
inline constexpr std::size_t whole_devices_dimension = std::numeric_limits<std::size_t>::max();
/// The dimension for hosts of a `distinct_hosts` preemptor (replicas on hosts of their own).
inline constexpr std::size_t distinct_hosts_dimension = std::numeric_limits<std::size_t>::max() - 1;

/// How much of one dimension a victim frees where the preemptor needs it.
struct FreedAmount {
  /// `whole_devices_dimension`, `distinct_hosts_dimension`, or an index into the topology's
  /// `ResourceSchema` (a device share or a pooled resource).
  std::size_t dimension = whole_devices_dimension;
  double amount = 0.0;  ///< how much (devices, hosts, or the resource's unit)
  /// Member-wise equality.
  friend bool operator==(const FreedAmount&, const FreedAmount&) = default;
};

/// One victim of a plan.
///
/// Fields after `reason` have default initializers, so `Victim{id, action, dropped, cost,
/// reason}` still compiles warning-free. Text contract: `reason` is text for people, built
/// from the structured fields (`action`,
/// `dropped_replicas`, `freed`, `freed_in`). The index solvers (greedy, knapsack,
/// branch-and-bound) fill it unless built `without_text()`; `topopreempt::explain` fills it
/// afterwards. Baselines, `PreemptorQueue` and loaning always fill it and may leave `freed`
/// empty.
struct Victim {
  /// The victim workload.
  WorkloadId id;
  /// Evicted whole, or shrunk by `dropped_replicas`.
  VictimAction action = VictimAction::evict;
  std::vector<std::int32_t> dropped_replicas;  ///< replica indices, for `shrink`
  double cost = 0.0;                           ///< its share of the plan's cost
  std::string reason;                          ///< e.g. "evicted whole; frees 2 whole GPUs in ..."
  /// The domain searched when it was chosen (where `freed` is measured): the plan's target,
  /// or a domain inside `target_domain` when pools widen the target.
  DomainId freed_in{};
  /// What it frees there, per dimension the preemptor needs (dimensions it frees nothing of
  /// are left out), in the order the solver measures them.
  std::vector<FreedAmount> freed{};
  /// Member-wise equality.
  friend bool operator==(const Victim&, const Victim&) = default;
};

/// Why a candidate domain lost, as data (`DomainVerdict::kind`).
enum class RejectionKind : std::uint8_t {
  /// Holds `have` of the `need` of `dimension` even empty (static capacity).
  too_small,
  /// Read: evicting all `victims` eligible victims frees `have` of the `need` missing.
  hopeless,
  /// Not read: the preemption index says eviction frees at most `have` of the `need` missing.
  hopeless_unread,
  /// Not searched: its hosts hold at most `have` of the `need` replicas (preemption index).
  too_few_hosts,
  /// Its lower bound `value` is at least the best cost `best`.
  bound,
  /// Not read: its index lower bound `value` is at least the best cost `best`.
  bound_unread,
  /// Searched: its best victim set costs `value` > `best` (`note`: why, if said).
  costlier,
  /// Searched: no victim set beats `best` (`note`, when set, says why instead).
  no_better,
  /// Written as text only (baselines, queue): `reason` is all there is.
  text_only,
};

/// "too_small", "hopeless", ...
[[nodiscard]] constexpr std::string_view to_string(RejectionKind kind) noexcept {
  switch (kind) {
    case RejectionKind::too_small: return "too_small";
    case RejectionKind::hopeless: return "hopeless";
    case RejectionKind::hopeless_unread: return "hopeless_unread";
    case RejectionKind::too_few_hosts: return "too_few_hosts";
    case RejectionKind::bound: return "bound";
    case RejectionKind::bound_unread: return "bound_unread";
    case RejectionKind::costlier: return "costlier";
    case RejectionKind::no_better: return "no_better";
    case RejectionKind::text_only: return "text_only";
  }
  return "unknown";
}

/// Why a candidate domain did not win.
///
/// Text contract: `reason` is text for people, built from the other fields. The index solvers
/// fill it unless built `without_text()`; `topopreempt::explain` fills it afterwards.
/// Baselines write `reason` only (`kind` stays `text_only`); fields after `reason` have default
/// initializers, so `DomainVerdict{domain, reason}` still compiles warning-free.
struct DomainVerdict {
  /// The candidate target domain.
  DomainId domain;
  /// Why it lost, e.g. "lower bound 7 >= best cost 5" (see the text contract above).
  std::string reason;
  /// Why it lost, as data: which of the numbers below apply.
  RejectionKind kind = RejectionKind::text_only;
  /// The dimension short (`too_small`, `hopeless`, `hopeless_unread`; `FreedAmount::dimension`).
  std::size_t dimension = whole_devices_dimension;
  double have = 0.0;          ///< what the domain holds or can free of `dimension`
  double need = 0.0;          ///< what the preemptor needs (or is missing) of it
  std::size_t victims = 0;    ///< eligible victims read (`hopeless`)
  double value = 0.0;         ///< the domain's bound or cost (`bound*`, `costlier`)
  double best = 0.0;          ///< the best cost it was compared with
  std::string note{};         ///< the search's own word, if any (`costlier`, `no_better`)
  /// Member-wise equality.
  friend bool operator==(const DomainVerdict&, const DomainVerdict&) = default;
};

/// Why a searched domain was not solved by the solver's exact method (or not to the end).
enum class DowngradeReason : std::uint8_t {
  precondition,        ///< a documented precondition of the exact method failed (knapsack)
  cell_limit,          ///< the DP table would exceed the solver's cell limit (knapsack)
  node_limit,          ///< the search-node budget ran out (branch_and_bound)
  time_limit,          ///< the time limit ran out (branch_and_bound)
  incomplete_options,  ///< an elastic victim had too many replicas to list every shrink
};

/// "precondition", "cell_limit", ...
[[nodiscard]] constexpr std::string_view to_string(DowngradeReason reason) noexcept {
  switch (reason) {
    case DowngradeReason::precondition:
      return "precondition";
    case DowngradeReason::cell_limit:
      return "cell_limit";
    case DowngradeReason::node_limit:
      return "node_limit";
    case DowngradeReason::time_limit:
      return "time_limit";
    case DowngradeReason::incomplete_options:
      return "incomplete_options";
  }
  return "unknown";
}

/// One searched domain where the solver fell back to a weaker method or stopped early, so the
/// plan cannot claim optimality there. Structured, so callers need not parse the explanation.
struct Downgrade {
  DomainId domain;         ///< the candidate target domain concerned
  DowngradeReason reason;  ///< which kind of precondition or limit
  std::string detail;      ///< which one exactly, e.g. "DP table over 16777216 cells"
  /// Member-wise equality.
  friend bool operator==(const Downgrade&, const Downgrade&) = default;
};

/// Work done by a solver.
struct SolverStatistics {
  std::uint64_t domains_considered = 0;  ///< candidate target domains looked at
  std::uint64_t domains_pruned = 0;      ///< skipped by capacity or by bound, unread in depth
  std::uint64_t domains_solved = 0;      ///< searched in depth
  std::uint64_t nodes_explored = 0;      ///< search nodes (branch-and-bound, subsets)
  std::uint64_t dp_cells = 0;            ///< dynamic-programming cells evaluated
  std::uint64_t victims_considered = 0;  ///< candidate victims read
  double seconds = 0.0;                  ///< wall time of the decision
  bool limit_reached = false;            ///< a node or time limit stopped the search
  /// Member-wise equality.
  friend bool operator==(const SolverStatistics&, const SolverStatistics&) = default;
};

/// The version of one domain a plan was computed against (`Allocation::domain_version`).
struct DomainVersion {
  /// The domain.
  DomainId domain;
  /// Its version when the plan was computed.
  std::uint64_t version = 0;
  /// Member-wise equality.
  friend bool operator==(const DomainVersion&, const DomainVersion&) = default;
};

/// The answer to "what must be preempted so that this workload can start?".
struct PreemptionPlan {
  /// What was found and what is proven (see `PlanStatus`).
  PlanStatus status = PlanStatus::infeasible;
  std::string solver;                ///< which solver produced it
  std::vector<Victim> victims;       ///< sorted by workload id
  DomainId target_domain;            ///< the domain the preemptor lands in
  Placement placement;               ///< the preemptor's placement, down to devices
  double cost = 0.0;                 ///< total victim cost under the cost model used
  double lower_bound = 0.0;          ///< best proven lower bound on the optimal cost
  LevelIndex gang_level = 0;         ///< level of the lowest domain holding all replicas
  LevelIndex replica_level = 0;      ///< loosest level among the replicas' own domains
  bool topology_satisfied = true;    ///< false only for topology-blind baselines
  std::vector<DomainVerdict> rejected;  ///< why other domains lost (capped in length)
  std::uint64_t rejected_total = 0;     ///< how many domains lost in all
  /// Searched domains where the exact method did not apply or stopped early, in search order:
  /// why a `feasible` plan is not proven. An `optimal` plan may list domains whose bound was
  /// beaten anyway. Always empty for greedy (it claims nothing) and the baselines.
  std::vector<Downgrade> downgrades;
  /// Readable summary of all of the above. Text contract: built from the structured fields
  /// (and the state, preemptor and cost model the plan was decided for). The index solvers
  /// (greedy, knapsack, branch-and-bound) fill it, with every `Victim::reason` and
  /// `DomainVerdict::reason`, unless built `without_text()` (the hot path: an
  /// `IncrementalDecider`, a scheduler loop): then all three stay empty until
  /// `topopreempt::explain(plan, state, preemptor, model)` fills them, to the same bytes.
  /// Baselines, `PreemptorQueue` and loaning always fill it.
  std::string explanation;
  /// The topology tier the plan was found in, as the solver orders them (0 = the preferred
  /// levels; `explain` prints its label). 0 for a plan without victims.
  std::uint32_t tier = 0;
  /// How the decision went: domains looked at, search nodes, time, limits.
  SolverStatistics statistics;
  /// The workload this plan is for (`commit` refuses any other).
  WorkloadId preemptor;
  /// What the plan relies on to stay valid, sorted by domain id: the version, as the state
  /// stood when it was computed, of the host-level domain of every placement entry and of
  /// every victim's entries (the entry's own domain when it lies above the host level). While
  /// none of them moved, the victims are still there as described and the placement still
  /// fits once they are gone. Empty for an infeasible or unknown plan. See transaction.hpp.
  std::vector<DomainVersion> dependencies;

  /// True for `optimal` and `feasible`.
  [[nodiscard]] bool has_victims_plan() const noexcept {
    return status == PlanStatus::optimal || status == PlanStatus::feasible;
  }
  /// Relative optimality gap (cost - bound) / max(cost, tiny); 0 when proven optimal.
  [[nodiscard]] double gap() const noexcept {
    if (!has_victims_plan()) return 0.0;
    const double denominator = std::max(std::abs(cost), 1e-12);
    return std::max(0.0, (cost - lower_bound) / denominator);
  }
  /// The same decision: every field alike, the decision's wall time (`statistics.seconds`) aside.
  friend bool operator==(const PreemptionPlan& a, const PreemptionPlan& b) {
    // Timing is the one thing that may differ between identical decisions.
    SolverStatistics sa = a.statistics;
    SolverStatistics sb = b.statistics;
    sa.seconds = sb.seconds = 0.0;
    return a.status == b.status && a.solver == b.solver && a.victims == b.victims &&
           a.target_domain == b.target_domain && a.placement == b.placement && a.cost == b.cost &&
           a.lower_bound == b.lower_bound && a.gang_level == b.gang_level &&
           a.replica_level == b.replica_level && a.topology_satisfied == b.topology_satisfied &&
           a.rejected == b.rejected && a.rejected_total == b.rejected_total &&
           a.downgrades == b.downgrades && a.explanation == b.explanation && a.tier == b.tier &&
           sa == sb &&
           a.preemptor == b.preemptor && a.dependencies == b.dependencies;
  }
};

}  // namespace topopreempt
