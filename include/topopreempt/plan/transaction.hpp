// SPDX-License-Identifier: MIT
#pragma once
/// @file transaction.hpp
/// Plans as transactions: apply a `PreemptionPlan` to a state only if nothing it relies on has
/// moved since it was computed, all or nothing.
///
/// Every solver records in its plan the versions of the domains the plan depends on
/// (`PreemptionPlan::dependencies`, see `Allocation::domain_version`). A scheduler may then
/// plan on a copy or a stale snapshot of the state, without holding a lock, and `commit` the
/// plan to the live state later: the commit lands only when every dependency still has the
/// version it had, otherwise it reports which domains moved and changes nothing (optimistic
/// concurrency, as in Omega- or Gödel-style shared-state schedulers).

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/plan/preemption_plan.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt {

/// Outcome of `commit`.
struct CommitResult {
  /// True when the plan was applied; false on a conflict (the state is then unchanged).
  bool committed = false;
  /// On a conflict, the plan's dependency domains whose version differs from the state's,
  /// ascending; empty when committed.
  std::vector<DomainId> moved;

  /// Whether the plan was applied.
  [[nodiscard]] explicit operator bool() const noexcept { return committed; }
  friend bool operator==(const CommitResult&, const CommitResult&) = default;
};

/// The dependency domains of `plan` whose version in `state` differs from the one recorded in
/// the plan, ascending (empty: the plan is still current). Throws `std::invalid_argument`
/// naming the domain when a dependency is not a domain of `state`'s topology (a plan made for
/// another cluster). Thread-safety: reads `state` only; safe concurrently with other readers.
[[nodiscard]] inline std::vector<DomainId> moved_dependencies(const Allocation& state,
                                                              const PreemptionPlan& plan) {
  const Topology& topology = state.topology();
  std::vector<DomainId> moved;
  for (const DomainVersion& dependency : plan.dependencies) {
    if (!topology.valid_domain(dependency.domain)) {
      throw std::invalid_argument("the plan depends on domain id " +
                                  std::to_string(dependency.domain.value) +
                                  ", which is not in the state's topology");
    }
    if (state.domain_version(dependency.domain) != dependency.version) {
      moved.push_back(dependency.domain);
    }
  }
  std::sort(moved.begin(), moved.end());
  moved.erase(std::unique(moved.begin(), moved.end()), moved.end());
  return moved;
}

/// Whether no dependency of `plan` moved in `state` (see `moved_dependencies`).
[[nodiscard]] inline bool plan_is_current(const Allocation& state, const PreemptionPlan& plan) {
  return moved_dependencies(state, plan).empty();
}

namespace detail::transaction {

/// The misuse checks of `commit`, before any version is compared.
inline void check_committable(const Allocation& state, const PreemptionPlan& plan,
                              const Workload& preemptor) {
  const std::string what = "cannot commit the " + plan.solver + " plan for workload " +
                           std::to_string(plan.preemptor.value) + ": ";
  if (plan.status == PlanStatus::infeasible) {
    throw std::invalid_argument(what + "it is infeasible (there is nothing to apply)");
  }
  if (plan.status == PlanStatus::unknown) {
    throw std::invalid_argument(what +
                                "its status is unknown (a limit stopped the search; there is "
                                "nothing to apply)");
  }
  if (plan.preemptor != preemptor.id) {
    throw std::invalid_argument(what + "it was made for another preemptor than " +
                                preemptor.label());
  }
  if (state.contains(preemptor.id)) {
    throw std::invalid_argument(what + preemptor.label() + " is already running");
  }
  // A plan that evicts nothing and places nothing (a preemptor demanding nothing) depends on no
  // domain: it is valid on every state, so an empty list is what a solver records for it.
  const auto holds_something = [&plan] {
    return !plan.victims.empty() ||
           std::any_of(plan.placement.replicas.begin(), plan.placement.replicas.end(),
                       [](const ReplicaPlacement& replica) { return !replica.entries.empty(); });
  };
  if (plan.dependencies.empty() && holds_something()) {
    throw std::invalid_argument(what +
                                "it records no dependencies, so its validity cannot be "
                                "checked (was it made by a solver?)");
  }
  for (const Victim& victim : plan.victims) {
    if (!state.contains(victim.id)) continue;  // a moved dependency reports it as a conflict
    const Workload& running = state.workload(victim.id);
    if (!running.preemptible || running.priority >= preemptor.priority) {
      throw std::invalid_argument(
          what + "victim " + running.label() + " may not be preempted by " + preemptor.label() +
          " (priority " + std::to_string(running.priority) + " vs " +
          std::to_string(preemptor.priority) + (running.preemptible ? ")" : ", not preemptible)"));
    }
  }
}

/// Applies the plan's changes to `state` in place, in the order `commit` documents. No
/// guarantee on failure: for scratch states only (and for `commit`'s own copy).
inline void apply(Allocation& state, const PreemptionPlan& plan, const Workload& preemptor) {
  for (const Victim& victim : plan.victims) {
    if (victim.action == VictimAction::evict) {
      state.remove(victim.id);
    } else {
      state.shrink(victim.id, victim.dropped_replicas);
    }
  }
  state.add(preemptor, plan.placement);
}

/// Applies the plan's changes to `state` all or nothing (strong guarantee, `std::bad_alloc`
/// included), without `commit`'s misuse and version checks: through
/// `Allocation::preempt_and_start`, or replayed on a copy when a victim is named twice.
inline void apply_atomically(Allocation& state, const PreemptionPlan& plan,
                             const Workload& preemptor) {
  std::vector<Allocation::VictimChange> changes;
  changes.reserve(plan.victims.size());
  for (const Victim& victim : plan.victims) {
    changes.push_back({victim.id, victim.action == VictimAction::evict, victim.dropped_replicas});
  }
  std::vector<WorkloadId> ids;
  ids.reserve(plan.victims.size());
  for (const Victim& victim : plan.victims) ids.push_back(victim.id);
  std::sort(ids.begin(), ids.end());
  if (std::adjacent_find(ids.begin(), ids.end()) == ids.end()) {
    // O(what changes): every check and allocation before the first mutation.
    state.preempt_and_start(changes, preemptor, plan.placement);
    return;
  }
  // A victim named twice (only a hand-made plan does that): replay the calls on a copy, so the
  // outcome is exactly theirs.
  Allocation next = state;  // copies share the immutable topology
  detail::transaction::apply(next, plan, preemptor);
  static_assert(std::is_nothrow_move_assignable_v<Allocation>,
                "commit's strong guarantee needs a no-throw move of the state");
  state = std::move(next);
}

}  // namespace detail::transaction

/// Applies `plan`, computed for `preemptor` on some earlier version of `state` (a copy, a
/// snapshot), to `state` if and only if every domain the plan depends on still has the version
/// recorded in the plan: evicts the victims marked `evict`, drops the `dropped_replicas` of
/// those marked `shrink` (indices into the victim's replicas as they stand), then starts
/// `preemptor` at `plan.placement`. A `no_preemption_needed` plan only starts the preemptor.
///
/// Returns `{committed = true}` when applied, or `{committed = false, moved}` on a conflict,
/// naming every dependency domain that moved; the state is then unchanged.
///
/// Throws `std::invalid_argument`, state unchanged, when the plan cannot be committed at all:
/// it is infeasible; it was made for another workload than `preemptor` (`plan.preemptor`);
/// `preemptor` is already running; the plan records no dependencies although it has victims or
/// places something (a solver records them for every such plan); a dependency is not a
/// domain of the topology; a victim may not be preempted by `preemptor` (priority, not
/// preemptible); or the plan is inconsistent with the state it claims to be current on
/// (`Allocation`'s own error for the failing remove, shrink or add).
///
/// Strong guarantee on every failure, `std::bad_alloc` included: the changes go through
/// `Allocation::preempt_and_start`, which does every check and allocation before its first
/// mutation, so a commit costs O(what it changes) plus the version checks, not a copy of the
/// state. (A hand-made plan that names one victim twice is replayed on a copy instead.)
///
/// Thread-safety: mutates `state`, so the caller must hold exclusive access to it (e.g. a
/// mutex around the shared state); `plan` and `preemptor` are only read.
[[nodiscard]] inline CommitResult commit(Allocation& state, const PreemptionPlan& plan,
                                         const Workload& preemptor) {
  detail::transaction::check_committable(state, plan, preemptor);
  std::vector<DomainId> moved = moved_dependencies(state, plan);
  if (!moved.empty()) return CommitResult{false, std::move(moved)};
  detail::transaction::apply_atomically(state, plan, preemptor);
  return CommitResult{true, {}};
}

}  // namespace topopreempt
