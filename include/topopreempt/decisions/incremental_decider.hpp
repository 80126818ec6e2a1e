// SPDX-License-Identifier: MIT
#pragma once
/// @file incremental_decider.hpp
/// `IncrementalDecider`: decides for one pending preemptor again and again as the state
/// changes, re-reading only the candidate domains whose version changed since the last call.

#include <cstdint>
#include <memory>
#include <utility>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/solvers/detail/preemption_context.hpp"
#include "topopreempt/solvers/explain.hpp"
#include "topopreempt/plan/preemption_plan.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt {

/// Decides for one pending preemptor under one solver and cost model, call after call, on a
/// state that changes in between (a scheduler's cycle). It keeps the scan result of every
/// candidate domain it read (victims, fractional bound, or why it is hopeless), keyed by the
/// versions (`Allocation::domain_version`) of the domains the scan depended on, and reads a
/// domain again only when one of those versions changed. Under a priced model whose targets
/// are taken by group (racks, then their targets), it also keeps each group's index bound by
/// the group's version, so a later call takes anew only the bounds of racks that changed, and
/// the bounds of the targets of each group it opens only to list pruned domains (the closest
/// competitors a plan names), kept by that group's version where the group's subtree holds
/// every domain those bounds read. Under the same condition it keeps what opening such a group
/// admitted (each target's static verdict, index verdict and index bound: 48 bytes a target,
/// 40 a group), and for every group and index block what opening it into the groups a level
/// down pushed (each child's bound, target count and version, in the order they come up: 24
/// bytes a child, 40 an opening), by the group's version or a digest of the block's domains'
/// versions: an unchanged group admits its targets, or opens (as one run of children that
/// gives them up one at a time), without a look at each; a changed one opens into the
/// children it kept and takes again only the bounds of those whose version moved. The bound
/// of an index block, or of a rack, that changed is kept with the bands and need it was taken
/// from (64 bytes a band): when they are the same, bit for bit (a change seldom moves a band's
/// extremes or the most idle host), the kept bound is the bound. All of it is bounded by the
/// topology (one entry per target, group and block per tier), never by the number of calls.
/// The searches themselves are kept too, the last 64, each with what it was a function of
/// (its domain's scan versions, the incumbent, the nodes explored before it and the domains
/// left): a domain searched again with all of them the same takes the kept outcome and its
/// counters (only without a time limit: a clock cannot be compared). So is the plan's
/// placement: a plan with the same target, victims and options on a reach whose version did
/// not change lands the preemptor where the last one did, without searching the state less
/// its victims again.
///
/// `decide(state)` returns exactly the plan `solver.solve(state, preemptor, model)` returns
/// (same victims, placement, cost, status, verdicts and statistics; only
/// `statistics.seconds` differs). Prices are checked as scans read them, so reused scans need
/// no check, and "fits already" is the cold, index-backed answer. A call still opens the
/// groups the cold call opens, comparing one version per group (and per child of a changed
/// one, per target of a changed group it admits), and redoes the searches, so a call after k
/// changes costs those steps plus the bounds and reads of the changed domains and the
/// searches. Results are reused across states of one
/// topology: a state on another topology resets the cache. Versions are digests of each
/// subtree's change history, so decisions on copies of a state reuse each other's results
/// correctly (copies that applied the same changes share versions).
///
/// On a hot path, give it a solver built `without_text()` (`solvers::greedy.without_text()`):
/// then `decide` returns, as that solver's `solve` does, the plan's structured facts without
/// its text (explanation, victims' and verdicts' reasons), and `explain(plan, state)` words a
/// plan to be printed, to the bytes the solver with text would have returned.
///
/// `Solver` is `solvers::greedy_solver`, `solvers::knapsack_solver` or
/// `solvers::branch_and_bound_solver` (anything with a `solve(state, preemptor, model,
/// detail::ScanCache&)` overload).
///
/// Thread-safety: a decider is single-threaded (`decide` mutates its cache); the state must
/// not change during a `decide` call. Different deciders may decide concurrently on one state.
template <class Solver, CostModel Model>
class IncrementalDecider {
 public:
  /// A decider for `preemptor` (pending) under `solver` and `model`.
  IncrementalDecider(Solver solver, Model model, Workload preemptor)
      : solver_(std::move(solver)), model_(std::move(model)), preemptor_(std::move(preemptor)) {}

  /// The plan for the preemptor on `state`, reusing every domain read whose versions did not
  /// change. Throws as the solver does (the cache then keeps only results it had verified).
  [[nodiscard]] PreemptionPlan decide(const Allocation& state) {
    if (topology_ != state.topology_ptr()) {
      cache_ = detail::ScanCache{};
      topology_ = state.topology_ptr();
    }
    return solver_.solve(state, preemptor_, model_, cache_);
  }

  /// Words `plan`, returned by `decide(state)` with a solver built `without_text()`, on the
  /// same `state` (before it is committed): `topopreempt::explain` with this decider's
  /// preemptor and model. A plan with its text already is left as it is.
  void explain(PreemptionPlan& plan, const Allocation& state) const {
    topopreempt::explain(plan, state, preemptor_, model_);
  }

  /// Domain reads answered from the cache, and reads done, over the decider's life.
  [[nodiscard]] std::uint64_t reused_reads() const noexcept { return cache_.hits; }
  /// Domain reads done afresh, over the decider's life.
  [[nodiscard]] std::uint64_t fresh_reads() const noexcept { return cache_.misses; }
  /// Group bounds (the root's, a rack's, or a host's when targets lie below it: index bounds
  /// under priced models) answered from the cache, and taken, over the decider's life.
  [[nodiscard]] std::uint64_t reused_group_bounds() const noexcept { return cache_.group_hits; }
  /// Group bounds taken afresh, over the decider's life.
  [[nodiscard]] std::uint64_t fresh_group_bounds() const noexcept { return cache_.group_misses; }
  /// Pruned groups whose targets' bounds were listed from the cache (the group unchanged), and
  /// listed afresh, over the decider's life.
  [[nodiscard]] std::uint64_t reused_listings() const noexcept { return cache_.listed_hits; }
  /// Pruned groups whose targets' bounds were taken afresh to be listed.
  [[nodiscard]] std::uint64_t fresh_listings() const noexcept { return cache_.listed_misses; }
  /// Groups opened into their targets that admitted them from the cache (the group unchanged:
  /// each target's static check, index verdict and index bound as kept), over the decider's
  /// life.
  [[nodiscard]] std::uint64_t reused_admissions() const noexcept { return cache_.admission_hits; }
  /// Groups opened into their targets that admitted them afresh (and kept what they decided).
  [[nodiscard]] std::uint64_t fresh_admissions() const noexcept {
    return cache_.admission_misses;
  }
  /// Groups (and index blocks) opened into the groups one level down from the cache (the
  /// group unchanged: each child's bound and target count as kept), over the decider's life.
  [[nodiscard]] std::uint64_t reused_openings() const noexcept { return cache_.opening_hits; }
  /// Groups (and index blocks) opened into the groups one level down afresh (and kept).
  [[nodiscard]] std::uint64_t fresh_openings() const noexcept { return cache_.opening_misses; }

  /// Bounds of index blocks that changed, answered from the cover they were last taken from
  /// (the same bands and need, bit for bit), over the decider's life.
  [[nodiscard]] std::uint64_t reused_covers() const noexcept { return cache_.cover_hits; }
  /// Bounds of changed index blocks taken afresh from their bands (and kept).
  [[nodiscard]] std::uint64_t fresh_covers() const noexcept { return cache_.cover_misses; }

  /// Domain searches answered from the cache (the same domain, scan versions, incumbent,
  /// nodes explored before it and domains left), over the decider's life.
  [[nodiscard]] std::uint64_t reused_searches() const noexcept { return cache_.search_hits; }
  /// Domain searches run afresh and kept.
  [[nodiscard]] std::uint64_t fresh_searches() const noexcept { return cache_.search_misses; }

  /// Searched domains whose problem (victims, options, deficits, bound) was the one a slot
  /// kept from an earlier read at the same scan versions, not read again, over the decider's
  /// life.
  [[nodiscard]] std::uint64_t reused_problems() const noexcept { return cache_.problem_hits; }

  /// Plans whose placement was the one kept from the last plan (the same target, victims and
  /// options on an unchanged reach), over the decider's life.
  [[nodiscard]] std::uint64_t reused_placements() const noexcept {
    return cache_.placement_hits;
  }
  /// Plans whose placement was searched for afresh (and kept).
  [[nodiscard]] std::uint64_t fresh_placements() const noexcept {
    return cache_.placement_misses;
  }

  /// The preemptor decided for.
  [[nodiscard]] const Workload& preemptor() const noexcept { return preemptor_; }

 private:
  Solver solver_;
  Model model_;
  Workload preemptor_;
  detail::ScanCache cache_;
  /// Held, not only compared: a topology freed while the decider kept its results could
  /// otherwise be replaced by another at the same address, and the cache wrongly reused.
  std::shared_ptr<const Topology> topology_;
};

}  // namespace topopreempt
