// SPDX-License-Identifier: MIT
#pragma once
/// @file preemptor_queue.hpp
/// A queue of pending preemptors: plans for all of them in one call, in priority order, on a
/// working state where the earlier plans are already applied (so no two count on the same
/// freed resources), and keeps each preemptor's last plan ("nomination", like Kubernetes'
/// nominatedNodeName or Kueue's) while it stays valid, so evictions already under way are not
/// wasted by a change of mind.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <new>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/plan/detail/dependencies.hpp"
#include "topopreempt/plan/transaction.hpp"
#include "topopreempt/plan/verifier.hpp"
#include "topopreempt/plan/preemption_plan.hpp"
#include "topopreempt/solvers/preemption_solver.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt {

/// What `plan_queue` did for one preemptor.
enum class NominationStatus : std::uint8_t {
  kept,        ///< its nomination was still current (no dependency moved): reused as is
  resumed,     ///< a dependency moved (e.g. some victims already gone), but the nomination
               ///< still applies at the same placement: kept, without the departed victims
  planned,     ///< it had no nomination: planned afresh
  replanned,   ///< its nomination no longer applied: planned afresh
  infeasible,  ///< no plan on the state left by the preemptors before it (proven)
  unknown,     ///< a limit stopped its search before a plan or a proof: nothing planned
  rejected,    ///< the preemptor itself is bad (listed twice, already running, an invalid
               ///< request or nomination, a solver error): `QueuedPlan::error` says why;
               ///< nothing was planned or applied for it, the others are planned as usual
};

/// "kept", "resumed", ...
[[nodiscard]] constexpr std::string_view to_string(NominationStatus status) noexcept {
  switch (status) {
    case NominationStatus::kept:
      return "kept";
    case NominationStatus::resumed:
      return "resumed";
    case NominationStatus::planned:
      return "planned";
    case NominationStatus::replanned:
      return "replanned";
    case NominationStatus::infeasible:
      return "infeasible";
    case NominationStatus::unknown:
      return "unknown";
    case NominationStatus::rejected:
      return "rejected";
  }
  return "unknown";
}

/// Caller-owned memory of the last plan of every pending preemptor, carried from one
/// `plan_queue` call to the next. Holds only plans with a placement (never infeasible ones).
///
/// Thread-safety: a plain value; concurrent reads are safe, mutation needs exclusive access.
class Nominations {
 public:
  /// The nomination of preemptor `id`, or nullptr.
  [[nodiscard]] const PreemptionPlan* find(WorkloadId id) const {
    const auto it = entries_.find(id.value);
    return it == entries_.end() ? nullptr : &it->second.plan;
  }
  /// Records `plan` as the nomination of `preemptor` (e.g. one persisted by the caller); the
  /// request is remembered too, so that a preemptor whose request changed is re-planned.
  /// Throws `std::invalid_argument` for a plan without a placement (infeasible or unknown: it
  /// nominates nothing) or a plan made for another workload.
  void remember(const Workload& preemptor, PreemptionPlan plan) {
    const bool placed =
        plan.status != PlanStatus::infeasible && plan.status != PlanStatus::unknown;
    if (!placed || plan.preemptor != preemptor.id) {
      throw std::invalid_argument(
          "the plan for workload " + std::to_string(plan.preemptor.value) + " cannot nominate " +
          preemptor.label() +
          (!placed ? " (it is " + std::string(to_string(plan.status)) + ")"
                   : std::string(" (another workload)")));
    }
    entries_.insert_or_assign(preemptor.id.value, Entry{preemptor, std::move(plan)});
  }
  /// Drops the nomination of `id` (committed, withdrawn); no-op when there is none.
  void forget(WorkloadId id) noexcept { entries_.erase(id.value); }
  /// Number of nominations.
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
  /// Whether there is none.
  [[nodiscard]] bool empty() const noexcept { return entries_.empty(); }
  /// Drops every nomination.
  void clear() noexcept { entries_.clear(); }
  /// Whether `preemptor` asks for what the nomination of its id was made for (the fields a
  /// placement's validity depends on); false when it has no nomination.
  [[nodiscard]] bool same_request(const Workload& preemptor) const {
    const auto it = entries_.find(preemptor.id.value);
    if (it == entries_.end()) return false;
    const Workload& then = it->second.preemptor;
    return then.priority == preemptor.priority && then.replicas == preemptor.replicas &&
           then.min_replicas == preemptor.min_replicas &&
           then.demand.whole_devices == preemptor.demand.whole_devices &&
           then.demand.resources.size() == preemptor.demand.resources.size() &&
           then.demand.resources == preemptor.demand.resources &&
           then.replica_scope == preemptor.replica_scope &&
           then.gang_scope == preemptor.gang_scope &&
           then.distinct_hosts == preemptor.distinct_hosts;
  }

 private:
  struct Entry {
    Workload preemptor;
    PreemptionPlan plan;
  };
  std::map<std::uint64_t, Entry> entries_;  // ordered: deterministic iteration
};

/// One preemptor's outcome in a `QueueResult`.
struct QueuedPlan {
  /// The preemptor.
  WorkloadId preemptor;
  /// Whether it got a plan this call, kept its nomination, or must wait.
  NominationStatus status = NominationStatus::planned;
  /// Its plan, computed on (and valid for) the state left by the preemptors before it in the
  /// result; an infeasible (unknown) plan when `status` is `infeasible` (`unknown`).
  PreemptionPlan plan;
  /// For `resumed` and `replanned`: the dependency domains of the old nomination that moved
  /// (empty for `replanned` when the preemptor's request changed instead).
  std::vector<DomainId> moved;
  /// For `rejected`: the error that rejected the preemptor (empty otherwise).
  std::string error;
};

/// The answer of `plan_queue`.
struct QueueResult {
  /// One entry per pending preemptor, in planning order: priority descending, then id.
  std::vector<QueuedPlan> plans;

  /// How many preemptors ended with `status`.
  [[nodiscard]] std::size_t count(NominationStatus status) const noexcept {
    return static_cast<std::size_t>(std::count_if(
        plans.begin(), plans.end(), [status](const QueuedPlan& p) { return p.status == status; }));
  }
};

namespace detail::queue {

/// The order `plan_queue` plans in: priority descending, ties by ascending id, then by
/// position in `pending` (so a preemptor listed twice is planned first where it ranks first).
[[nodiscard]] inline std::vector<std::size_t> planning_order(std::span<const Workload> pending) {
  std::vector<std::size_t> order(pending.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (pending[a].priority != pending[b].priority)
      return pending[a].priority > pending[b].priority;
    return pending[a].id < pending[b].id;
  });
  return order;
}

/// The placeholder plan of a rejected preemptor: infeasible, explaining the rejection.
[[nodiscard]] inline PreemptionPlan rejected_plan(const Workload& preemptor,
                                                  const std::string& error) {
  PreemptionPlan plan;
  plan.preemptor = preemptor.id;
  plan.status = PlanStatus::infeasible;
  plan.explanation = "preemptor " + preemptor.label() + " rejected: " + error;
  return plan;
}

/// The rest of `nomination` once the victims that already left are struck out, when it still
/// applies to `working` at the nominated placement: every remaining victim is a still-eligible
/// eviction (a shrink cannot be told apart from one already done), the preemptor does not fit
/// without them, and the placement is accepted once they are gone. Remaining victims are
/// re-priced under `model`; the plan claims no optimality (lower bound 0).
template <CostModel Model>
[[nodiscard]] std::optional<PreemptionPlan> resume(const Allocation& working,
                                                   const PreemptionPlan& nomination,
                                                   const Workload& preemptor, const Model& model) {
  PreemptionPlan rest = nomination;
  rest.victims.clear();
  for (const Victim& victim : nomination.victims) {
    if (!working.contains(victim.id)) continue;  // already evicted
    const Workload& running = working.workload(victim.id);
    if (victim.action != VictimAction::evict || !running.preemptible ||
        running.priority >= preemptor.priority) {
      return std::nullopt;
    }
    Victim kept = victim;
    kept.cost = model.evict(running);
    rest.victims.push_back(std::move(kept));
  }
  if (!rest.victims.empty() && fits_without_preemption(working, preemptor)) return std::nullopt;
  std::vector<Allocation::VictimChange> changes;
  changes.reserve(rest.victims.size());
  for (const Victim& victim : rest.victims) changes.push_back({victim.id, true, {}});
  try {
    working.check_preempt_and_start(changes, preemptor, nomination.placement);  // a dry run
  } catch (const std::invalid_argument&) {
    return std::nullopt;  // the nominated room is taken
  }
  const std::size_t gone = nomination.victims.size() - rest.victims.size();
  rest.status = rest.victims.empty() ? PlanStatus::no_preemption_needed : PlanStatus::feasible;
  rest.cost = 0.0;
  for (const Victim& victim : rest.victims) rest.cost += victim.cost;
  rest.lower_bound = 0.0;
  rest.rejected.clear();
  rest.rejected_total = 0;
  rest.downgrades.clear();
  rest.statistics = {};
  rest.explanation = "nomination resumed: " + std::to_string(gone) + " of " +
                     std::to_string(nomination.victims.size()) +
                     " victim(s) already gone, the placement of the nomination is kept (" +
                     std::to_string(rest.victims.size()) + " victim(s) left)";
  record_dependencies(working, preemptor, rest);
  return rest;
}

/// Plans `preemptor` on `working` (see `plan_queue`) into `item`, applies its plan to `working`
/// and records it in `next`. Strong guarantee: on a throw `working` and `next` are unchanged.
template <class Solver, CostModel Model>
void plan_one(Allocation& working, const Workload& preemptor, const Solver& solver,
              const Model& model, const Nominations& nominations, Nominations& next,
              QueuedPlan& item) {
  std::optional<PreemptionPlan> plan;
  const PreemptionPlan* nomination = nominations.find(preemptor.id);
  if (nomination != nullptr && !nominations.same_request(preemptor)) {
    item.status = NominationStatus::replanned;  // the request changed: the plan is moot
  } else if (nomination != nullptr) {
    item.moved = moved_dependencies(working, *nomination);
    if (item.moved.empty() &&
        (nomination->victims.empty() || !fits_without_preemption(working, preemptor))) {
      plan = *nomination;
      item.status = NominationStatus::kept;
    } else if ((plan = resume(working, *nomination, preemptor, model))) {
      item.status = NominationStatus::resumed;
    } else {
      item.status = NominationStatus::replanned;
    }
  }
  if (!plan) plan = solver.solve(working, preemptor, model);
  if (plan->status == PlanStatus::infeasible) {
    item.status = NominationStatus::infeasible;
  } else if (plan->status == PlanStatus::unknown) {
    item.status = NominationStatus::unknown;
  } else {
    // Remembered first (a no-op to undo): the apply is then the last step that can throw.
    next.remember(preemptor, *plan);
    try {
      detail::transaction::apply_atomically(working, *plan, preemptor);
    } catch (...) {
      next.forget(preemptor.id);
      throw;
    }
  }
  item.plan = std::move(*plan);
}

}  // namespace detail::queue

/// Plans for every preemptor in `pending` in one call, in priority order (highest first, ties
/// by ascending id), each on a working copy of `state` where the plans of the preemptors
/// before it are already applied: a later preemptor never counts on room an earlier one takes
/// (it may use what an earlier one's victims free and the earlier one leaves free), and never
/// picks an earlier preemptor as a victim (earlier ones have at least its priority, and a
/// victim's priority must be strictly lower).
///
/// Nominations: a preemptor whose nomination (its plan from the last call, in `nominations`)
/// is still current on the working state is not re-solved (`kept`), unless the nomination
/// evicts and the preemptor now fits without preempting anyone; if its dependencies moved but
/// the nomination, without the victims that already left, still applies at the same placement,
/// that rest is kept (`resumed`, e.g. evictions under way); otherwise it is planned
/// again (`replanned`), as it is when its request (priority, replicas, demand, scopes) changed.
/// A higher-priority preemptor planned before it may take its nominated room (then it is
/// re-planned), as in Kubernetes. On return `nominations` holds exactly the new plans with a
/// placement; nominations of preemptors no longer pending are dropped.
///
/// Every plan records its dependencies as of the working state it was made on, so committing
/// the plans in result order with `commit` lands them all while the state does not move; a
/// plan committed without the ones before it lands only where it does not depend on them.
///
/// A bad preemptor is reported for itself and does not spoil the queue: one listed again after
/// its first place in planning order, one already running, one whose request or nomination is
/// invalid (e.g. a level the topology lacks, domains outside it), or one whose solve throws
/// (other than `std::bad_alloc`) ends `rejected`, with the error in `QueuedPlan::error`; the
/// working state is left as it was before it (every plan lands all or nothing), so the
/// preemptors after it are planned as if it were not there, and its nomination is dropped.
///
/// Throws only `std::bad_alloc` (and what a custom solver throws that does not derive from
/// `std::exception`); `nominations` is replaced only on success (strong guarantee).
///
/// Cost: one copy of `state`, one solve per preemptor not kept, one placement search per kept
/// nomination with victims, a dry run (`Allocation::check_preempt_and_start`, O(its victims))
/// per nomination whose dependencies moved, and applying each plan to the working state.
///
/// Thread-safety: reads `state` (may run concurrently with other readers of it); needs
/// exclusive access to `nominations`.
template <class Solver, CostModel Model>
requires PreemptionSolver<Solver, Model>
[[nodiscard]] QueueResult plan_queue(const Allocation& state, std::span<const Workload> pending,
                                     const Solver& solver, const Model& model,
                                     Nominations& nominations) {
  const std::vector<std::size_t> order = detail::queue::planning_order(pending);
  Allocation working = state;
  Nominations next;
  QueueResult result;
  result.plans.reserve(pending.size());
  std::vector<WorkloadId> seen;
  seen.reserve(pending.size());
  for (const std::size_t index : order) {
    const Workload& preemptor = pending[index];
    QueuedPlan item;
    item.preemptor = preemptor.id;
    try {
      if (std::find(seen.begin(), seen.end(), preemptor.id) != seen.end()) {
        throw std::invalid_argument("preemptor " + preemptor.label() +
                                    " is listed more than once in the queue");
      }
      seen.push_back(preemptor.id);
      if (state.contains(preemptor.id)) {
        throw std::invalid_argument("preemptor " + preemptor.label() + " is already running");
      }
      detail::queue::plan_one(working, preemptor, solver, model, nominations, next, item);
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const std::exception& error) {
      // `plan_one` changes `working` and `next` only once nothing can fail any more.
      item.status = NominationStatus::rejected;
      item.moved.clear();
      item.error = error.what();
      item.plan = detail::queue::rejected_plan(preemptor, item.error);
    }
    result.plans.push_back(std::move(item));
  }
  nominations = std::move(next);
  return result;
}

}  // namespace topopreempt
