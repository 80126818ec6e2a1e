// SPDX-License-Identifier: MIT
#pragma once
/// @file greedy.hpp
/// Greedy victim selection: per candidate domain, add victims by cost per useful freed
/// resource until the preemptor fits, then drop the ones no longer needed; the cheapest domain
/// wins. Fast; no optimality claim (plans are `feasible`).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/solvers/detail/preemption_context.hpp"
#include "topopreempt/solvers/detail/unit_slot_bound.hpp"
#include "topopreempt/plan/preemption_plan.hpp"

namespace topopreempt::solvers {

namespace detail {

/// The greedy search inside one domain (also the incumbent of branch-and-bound).
struct GreedySearch {
  /// Unit sets a small gang's greedy tries besides the whole target (cheapest bound first).
  static constexpr std::size_t unit_sets_tried = 4;

  [[nodiscard]] topopreempt::detail::DomainOutcome search(
      const Allocation& state, const topopreempt::detail::DomainProblem& problem, double incumbent,
      const topopreempt::detail::SearchLimits& limits, SolverStatistics& statistics) const {
    using namespace topopreempt::detail;
    UnitSlotBound slots(state, problem);
    if (slots.decomposable() && std::isfinite(incumbent)) {
      // A rack that cannot beat the best plan found elsewhere, by its per-unit bound, is
      // skipped: with hundreds of racks this is where a gang's greedy spends its time.
      const OverlayView<Allocation> untouched(state);
      if (slots.bound(untouched, [](std::size_t) { return true; }) >= incumbent) {
        DomainOutcome skipped;
        skipped.lower_bound = incumbent;
        skipped.note = "per-unit bound reaches the best cost";
        return skipped;
      }
    }
    DomainOutcome best = search_once(state, problem, statistics);
    // Proven empty (see search_once): no subset of the victims can do better.
    if (!slots.decomposable() || (!best.found && best.exact)) return best;
    // A small gang over several units (two nodes of a rack): greedy over the whole rack takes
    // whatever frees room first, often across the wrong nodes. Also try it on the victims of
    // the most promising unit sets alone, and keep the cheapest plan.
    (void)limits;
    DomainProblem restricted;
    std::vector<std::size_t> kept;
    std::size_t tried = 0;
    for (const UnitSet& set : slots.ranked_unit_sets(state)) {
      if (tried++ == unit_sets_tried || (best.found && set.bound >= best.cost)) break;
      restrict_to_units(state, problem, slots.units(), set, restricted, kept);
      if (restricted.victims.empty()) continue;
      const DomainOutcome local = search_once(state, restricted, statistics);
      if (!local.found || (best.found && local.cost >= best.cost)) continue;
      best.found = true;
      best.cost = local.cost;
      best.note.clear();
      best.choice.assign(problem.victims.size(), -1);
      for (std::size_t r = 0; r < kept.size(); ++r) best.choice[kept[r]] = local.choice[r];
    }
    return best;
  }

  /// Greedy over all of `problem`'s victims: take actions by cost per useful freed resource
  /// until the preemptor fits, then undo or cheapen the ones no longer needed.
  [[nodiscard]] topopreempt::detail::DomainOutcome search_once(
      const Allocation& state, const topopreempt::detail::DomainProblem& problem,
      SolverStatistics& statistics) const {
    using namespace topopreempt::detail;
    FeasibilityOracle oracle(state, problem);
    DomainOutcome outcome;
    outcome.choice.assign(problem.victims.size(), -1);
    std::vector<double> deficit;
    std::vector<std::size_t> picked;  // in pick order
    // Cost per unit of still-missing resource freed by moving victim v from option `from`
    // (-1: spared) to option `to`, normalised per dimension so GPUs and MiB compare. Actions
    // freeing nothing binding may still complete a shared device or a pool: ranked last, by cost.
    const auto score = [&](std::size_t v, std::int32_t from, std::size_t to) {
      const auto& options = problem.victims[v].options;
      const VictimOption* current = from >= 0 ? &options[static_cast<std::size_t>(from)] : nullptr;
      double useful = 0.0;
      for (std::size_t k = 0; k < deficit.size(); ++k) {
        if (deficit[k] <= 0.0) continue;
        const double gain = options[to].gain[k] - (current ? current->gain[k] : 0.0);
        if (gain > 0.0) useful += std::min(gain, deficit[k]) / deficit[k];
      }
      const double cost = std::max(0.0, options[to].cost - (current ? current->cost : 0.0));
      return useful > 0.0 ? cost / useful : 1e300 + cost;
    };
    // Whether option `to` of victim v frees everything option `from` does (eviction frees all;
    // a shrink frees its dropped replicas): the moves phase 1 may make on a shrunk victim.
    const auto extends = [&](std::size_t v, std::size_t from, std::size_t to) {
      const auto& options = problem.victims[v].options;
      if (to == 0) return true;
      const auto& wider = options[to].dropped;
      return wider.size() > options[from].dropped.size() &&
             std::all_of(options[from].dropped.begin(), options[from].dropped.end(),
                         [&](std::int32_t r) {
                           return std::find(wider.begin(), wider.end(), r) != wider.end();
                         });
    };
    // Phase 1: every action competes from the first step — evicting a victim, shrinking it
    // (a cheap shrink of a big elastic gang often beats evicting a small job), or widening an
    // earlier shrink (more replicas, or an eviction) — until the preemptor fits. Evictions stay
    // available to the end, so this finds a plan whenever one exists.
    while (!oracle.feasible()) {
      ++statistics.nodes_explored;
      oracle.deficit(deficit);
      std::size_t best_victim = problem.victims.size();
      std::size_t best_option = 0;
      double best_score = std::numeric_limits<double>::infinity();
      for (std::size_t v = 0; v < problem.victims.size(); ++v) {
        const std::int32_t current = outcome.choice[v];
        if (current == 0) continue;  // evicted: nothing more to free
        for (std::size_t o = 0; o < problem.victims[v].options.size(); ++o) {
          if (current >= 0 && !extends(v, static_cast<std::size_t>(current), o)) continue;
          const double value = score(v, current, o);
          if (value < best_score) {
            best_score = value;
            best_victim = v;
            best_option = o;
          }
        }
      }
      if (best_victim == problem.victims.size()) {
        // Every victim is evicted and the preemptor still does not fit (the oracle's answer
        // is exact): a proof that this domain holds no plan at all.
        outcome.exact = true;
        outcome.lower_bound = std::numeric_limits<double>::infinity();
        outcome.note = "no placement here even after evicting every eligible victim";
        return outcome;
      }
      if (outcome.choice[best_victim] >= 0) {
        oracle.apply(best_victim, static_cast<std::size_t>(outcome.choice[best_victim]), -1);
      } else {
        picked.push_back(best_victim);
      }
      oracle.apply(best_victim, best_option, +1);
      outcome.choice[best_victim] = static_cast<std::int32_t>(best_option);
    }
    // Phase 2, most expensive first: spare each victim the preemptor no longer needs, or else
    // replace its action by the cheapest one (eviction or shrink) that still lets it fit.
    const auto chosen_cost = [&](std::size_t v) {
      return problem.victims[v].options[static_cast<std::size_t>(outcome.choice[v])].cost;
    };
    std::stable_sort(picked.begin(), picked.end(),
                     [&](std::size_t a, std::size_t b) { return chosen_cost(a) > chosen_cost(b); });
    for (std::size_t v : picked) {
      const auto& options = problem.victims[v].options;
      const auto current = static_cast<std::size_t>(outcome.choice[v]);
      oracle.apply(v, current, -1);
      ++statistics.nodes_explored;
      if (oracle.feasible()) {
        outcome.choice[v] = -1;
        continue;
      }
      std::size_t cheapest = current;
      for (std::size_t o = 0; o < options.size(); ++o) {
        if (o == current || options[o].cost >= options[cheapest].cost) continue;
        oracle.apply(v, o, +1);
        ++statistics.nodes_explored;
        if (oracle.feasible()) cheapest = o;
        oracle.apply(v, o, -1);
      }
      oracle.apply(v, cheapest, +1);
      outcome.choice[v] = static_cast<std::int32_t>(cheapest);
    }
    outcome.found = true;
    for (std::size_t v = 0; v < problem.victims.size(); ++v) {
      if (outcome.choice[v] >= 0) {
        outcome.cost += problem.victims[v].options[static_cast<std::size_t>(outcome.choice[v])].cost;
      }
    }
    outcome.lower_bound = problem.lower_bound;
    return outcome;
  }
};

}  // namespace detail

/// Greedy solver: per target domain, repeatedly evicts (or shrinks) the victim with the lowest
/// cost per useful freed resource until the preemptor fits, then spares the victims no longer
/// needed. Domains are visited in ascending lower bound and skipped once their bound reaches
/// the best cost found. Plans are topology-valid; cost is not proven minimal (`feasible`), and
/// the plan's `lower_bound` is the fractional bound of the winning domain.
///
/// Thread-safety: `solve` is const; concurrent calls on a shared, unmodified state are safe.
class greedy_solver {
 public:
  /// The name plans and reports carry.
  static constexpr std::string_view name = "greedy";
  /// Not exact: `optimal` only when a bound proves it.
  static constexpr bool is_exact = false;

  /// The same solver, returning plans without their text: `explanation` and every
  /// `Victim::reason` and `DomainVerdict::reason` stay empty, the structured facts are all
  /// there, and `topopreempt::explain(plan, state, preemptor, model)` words them later, to the
  /// same bytes. For hot paths (an `IncrementalDecider`, a scheduler loop) that print rarely.
  [[nodiscard]] greedy_solver without_text() const {
    greedy_solver copy = *this;
    copy.text_ = false;
    return copy;
  }
  /// Whether plans come with their text (see `without_text`).
  [[nodiscard]] bool builds_text() const noexcept { return text_; }

  /// Chooses victims for `preemptor` under `model`. Throws `std::invalid_argument` naming the
  /// preemptor when it is invalid or already running.
  template <CostModel Model>
  [[nodiscard]] PreemptionPlan solve(const Allocation& state, const Workload& preemptor,
                                     const Model& model) const {
    return topopreempt::detail::solve_with(name, state, preemptor, model, detail::GreedySearch{},
                                           limits());
  }

  /// `solve` reusing the scan results in `cache` whose domains kept their versions (see
  /// `IncrementalDecider`, which owns the cache): the same plan.
  template <CostModel Model>
  [[nodiscard]] PreemptionPlan solve(const Allocation& state, const Workload& preemptor, const Model& model,
                                     topopreempt::detail::ScanCache& cache) const {
    return topopreempt::detail::solve_with(name, state, preemptor, model, detail::GreedySearch{},
                                           limits(), &cache);
  }

 private:
  [[nodiscard]] topopreempt::detail::SearchLimits limits() const noexcept {
    topopreempt::detail::SearchLimits limits;
    limits.text = text_;
    return limits;
  }
  bool text_ = true;
};

/// Ready-to-use instance.
inline constexpr greedy_solver greedy{};

}  // namespace topopreempt::solvers
