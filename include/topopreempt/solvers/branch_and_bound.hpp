// SPDX-License-Identifier: MIT
#pragma once
/// @file branch_and_bound.hpp
/// Exact victim selection over the whole problem (multi-dimensional demand, placement
/// feasibility down to devices and pools, gangs, elastic shrink) by depth-first
/// branch-and-bound, with fractional covering bounds, a greedy incumbent, and pruning of whole
/// domains by bound. Anytime: node and time limits return the best plan with its gap.

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/solvers/detail/preemption_context.hpp"
#include "topopreempt/solvers/detail/covering_root_bound.hpp"
#include "topopreempt/solvers/detail/device_emptying_bound.hpp"
#include "topopreempt/solvers/detail/unit_slot_bound.hpp"
#include "topopreempt/plan/preemption_plan.hpp"
#include "topopreempt/solvers/greedy.hpp"

namespace topopreempt::solvers {

namespace detail {

/// Depth-first search over victims in a fixed order: at each node, first try each option of
/// the next victim (evict, then shrinks), then spare it. A node whose victims already free
/// enough is a leaf (costs are non-negative, so adding victims never helps); a node whose
/// cost plus the fractional bound of what is still missing reaches the incumbent is pruned.
class BranchAndBoundSearch {
 public:
  BranchAndBoundSearch(const topopreempt::detail::SearchLimits& limits,
                       topopreempt::detail::Clock::time_point start)
      : limits_(limits), start_(start) {}

  [[nodiscard]] topopreempt::detail::DomainOutcome search(
      const Allocation& state, const topopreempt::detail::DomainProblem& problem, double incumbent,
      const topopreempt::detail::SearchLimits& limits, SolverStatistics& statistics) const {
    using namespace topopreempt::detail;
    // The per-unit slot bound at the root can close a multi-unit domain (a rack for a gang)
    // that the aggregate bound, computed by the scan, could not.
    UnitSlotBound slots(state, problem);
    double root_bound = problem.lower_bound;
    if (slots.active()) {
      const OverlayView<Allocation> untouched(state);
      root_bound = std::max(root_bound, on_grid(slots.bound(untouched, [](std::size_t) { return true; }), problem.grid));
      if (root_bound >= incumbent) {
        DomainOutcome closed;
        closed.exact = true;
        closed.lower_bound = root_bound;
        closed.note = "per-unit bound " + std::to_string(root_bound) + " >= best cost";
        return closed;
      }
    }
    // Greedy incumbent first: a good early cost makes the bound bite from the root.
    // (The plain pass: unit sets are searched exactly below when the gang decomposes.)
    DomainOutcome best = GreedySearch{}.search_once(state, problem, statistics);
    // Greedy evicts every victim before it gives up: when even that leaves no placement, the
    // domain is proven empty, whatever the budget, and there is nothing to search.
    if (!best.found && best.exact) return best;
    // Out of budget before this domain: keep greedy's plan and the domain's bound, so later
    // domains still contribute an incumbent instead of being skipped unread.
    if (statistics.nodes_explored >= limits_.max_nodes ||
        topopreempt::detail::Clock::now() - start_ > limits_.time_limit) {
      best.exact = false;
      best.limit_reached = true;
      best.lower_bound = std::min(root_bound, best.found ? best.cost : incumbent);
      best.downgrade = limit_hit();
      best.note =
          std::string(to_string(*best.downgrade)) + " reached before this domain: greedy plan only";
      return best;
    }
    if (!slots.active() && best.found && best.cost > root_bound) {
      // A gap at the root: the exact cover of the deficits may close it (pure knapsack domains).
      if (auto closed = close_by_covering(state, problem, incumbent, best, root_bound, statistics)) {
        return *std::move(closed);
      }
    }
    if (slots.decomposable()) {
      return search_by_units(state, problem, incumbent, statistics, slots, best, root_bound,
                             limits.domains_left);
    }
    Run run{*this, state, problem, statistics, slots};
    run.node_cap = domain_node_cap(statistics, limits.domains_left);
    run.best_cost = best.found ? std::min(best.cost, incumbent) : incumbent;
    run.found = false;
    run.order_victims();
    run.choice.assign(problem.victims.size(), -1);
    run.descend(0, 0.0);
    DomainOutcome outcome;
    if (run.found) {
      outcome.found = true;
      outcome.cost = run.best_cost;
      outcome.choice = run.best_choice;
    } else if (best.found && best.cost < incumbent) {
      outcome = best;  // the search proved greedy optimal (nothing cheaper exists)
    }
    // When stopped, the least bound among abandoned subtrees is a valid domain bound.
    outcome.lower_bound = run.stopped ? std::min(run.open_bound, outcome.found ? outcome.cost : incumbent)
                                      : (outcome.found ? outcome.cost : incumbent);
    outcome.limit_reached = run.stopped;
    const bool complete = std::all_of(problem.victims.begin(), problem.victims.end(),
                                      [](const auto& victim) { return victim.options_complete; });
    outcome.exact = !run.stopped && complete;
    if (!complete) {
      // The search was exact over the listed options only: fall back to the relaxation bound.
      outcome.note = "an elastic victim has too many replicas to enumerate every shrink";
      outcome.lower_bound = std::min(problem.lower_bound, outcome.found ? outcome.cost : incumbent);
      outcome.downgrade = DowngradeReason::incomplete_options;
    }
    if (run.stopped) {
      outcome.downgrade = limit_hit();
      outcome.note = std::string(to_string(*outcome.downgrade)) + " reached in this domain";
    }
    if (!outcome.found && !run.stopped) outcome.note = "proved: nothing here beats the best";
    return outcome;
  }

 private:
  /// A target of several units (a rack for a gang of node-confined replicas) decomposed by
  /// where the replicas go. An optimal victim set places the gang on some set S of at most R
  /// units and, being minimal, only holds victims touching S (or the pools S draws from); so
  /// the optimum is the least over S of the search restricted to those victims. Subsets are
  /// taken in ascending per-unit bound and the rest pruned once it reaches the best cost:
  /// instead of branching over the hundreds of victims of a rack, each search sees a handful.
  [[nodiscard]] topopreempt::detail::DomainOutcome search_by_units(
      const Allocation& state, const topopreempt::detail::DomainProblem& problem, double incumbent,
      SolverStatistics& statistics, topopreempt::detail::UnitSlotBound& slots,
      topopreempt::detail::DomainOutcome greedy, double root_bound,
      std::size_t domains_left) const {
    using namespace topopreempt::detail;
    const std::vector<UnitSet> subsets = slots.ranked_unit_sets(state);
    DomainOutcome outcome;
    double best_cost = incumbent;
    if (greedy.found && greedy.cost < best_cost) {
      outcome = greedy;
      best_cost = greedy.cost;
    }
    bool stopped = false;
    double open_bound = std::numeric_limits<double>::infinity();
    DomainProblem restricted;
    std::vector<std::size_t> kept;  // restricted index -> problem index
    for (const UnitSet& subset : subsets) {
      if (subset.bound >= best_cost) break;  // sorted: every later subset too
      if (statistics.nodes_explored >= limits_.max_nodes || Clock::now() - start_ > limits_.time_limit) {
        stopped = true;
        open_bound = std::min(open_bound, subset.bound);
        break;
      }
      restrict_to_units(state, problem, slots.units(), subset, restricted, kept);
      if (restricted.victims.empty()) continue;
      UnitSlotBound restricted_slots(state, restricted);
      Run run{*this, state, restricted, statistics, restricted_slots};
      run.node_cap = domain_node_cap(statistics, domains_left);
      run.best_cost = best_cost;
      run.order_victims();
      run.choice.assign(restricted.victims.size(), -1);
      run.descend(0, 0.0);
      if (run.stopped) {
        stopped = true;
        open_bound = std::min(open_bound, run.open_bound);
      }
      if (run.found && run.best_cost < best_cost) {
        best_cost = run.best_cost;
        outcome.found = true;
        outcome.cost = run.best_cost;
        outcome.choice.assign(problem.victims.size(), -1);
        for (std::size_t r = 0; r < kept.size(); ++r) outcome.choice[kept[r]] = run.best_choice[r];
      }
    }
    outcome.limit_reached = stopped;
    const bool complete = std::all_of(problem.victims.begin(), problem.victims.end(),
                                      [](const auto& victim) { return victim.options_complete; });
    outcome.exact = !stopped && complete;
    const double reached = outcome.found ? outcome.cost : incumbent;
    outcome.lower_bound = outcome.exact ? reached : std::min({reached, std::max(root_bound, std::min(open_bound, reached))});
    if (!complete) outcome.lower_bound = std::min(root_bound, reached);
    if (!outcome.found && outcome.exact) outcome.note = "proved by unit subsets: nothing here beats the best";
    if (!complete) {
      outcome.downgrade = DowngradeReason::incomplete_options;
      outcome.note = "an elastic victim has too many replicas to enumerate every shrink";
    }
    if (stopped) {
      outcome.downgrade = limit_hit();
      outcome.note = std::string(to_string(*outcome.downgrade)) + " reached in this domain";
    }
    return outcome;
  }

  /// Tries the exact covering bound (`covering_root_bound`): raises `root_bound`, and returns
  /// the domain's outcome when it settles the domain (its cover places the preemptor, or the
  /// bound reaches the greedy plan or the incumbent); nullopt to search on.
  [[nodiscard]] static std::optional<topopreempt::detail::DomainOutcome> close_by_covering(
      const Allocation& state, const topopreempt::detail::DomainProblem& problem, double incumbent,
      const topopreempt::detail::DomainOutcome& greedy, double& root_bound, SolverStatistics& statistics) {
    using namespace topopreempt::detail;
    const std::optional<CoveringRoot> root = covering_root_bound(state, problem);
    if (!root) return std::nullopt;
    statistics.dp_cells += root->cells;
    root_bound = std::max(root_bound, root->bound);
    DomainOutcome outcome;
    outcome.exact = true;
    if (root->placeable && root->cost <= root_bound && root->cost < incumbent) {
      // The cheapest cover of the deficits places the preemptor: nothing can cost less.
      outcome.found = true;
      outcome.cost = root->cost;
      outcome.choice = root->choice;
      outcome.lower_bound = root->cost;
      outcome.note = "closed by the exact covering bound";
      return outcome;
    }
    if (greedy.cost <= root_bound && greedy.cost < incumbent) {
      outcome = greedy;
      outcome.exact = true;
      outcome.lower_bound = greedy.cost;
      outcome.note = "greedy plan proven by the exact covering bound";
      return outcome;
    }
    if (root_bound >= incumbent) {
      outcome.lower_bound = root_bound;
      outcome.note = "exact covering bound " + std::to_string(root_bound) + " >= best cost";
      return outcome;
    }
    return std::nullopt;
  }

  /// Node budget of one domain. `max_nodes` bounds the whole solve: the last domain left to
  /// search may spend everything still unspent, any other half of what is left (at least
  /// 10,000, never past the total). So the first hard domain may use half the budget, not a
  /// fixed quarter, and one hard domain still cannot starve the others.
  [[nodiscard]] std::uint64_t domain_node_cap(const SolverStatistics& statistics,
                                              std::size_t domains_left) const noexcept {
    if (domains_left <= 1) return limits_.max_nodes;
    const std::uint64_t spent = std::min(statistics.nodes_explored, limits_.max_nodes);
    const std::uint64_t left = limits_.max_nodes - spent;
    return spent + std::max(left / 2, std::min<std::uint64_t>(left, 10'000));
  }

  /// Which limit stopped the search: the clock if it ran out, else the node budget.
  [[nodiscard]] DowngradeReason limit_hit() const {
    return topopreempt::detail::Clock::now() - start_ > limits_.time_limit
               ? DowngradeReason::time_limit
               : DowngradeReason::node_limit;
  }

  struct Run {
    const BranchAndBoundSearch& owner;
    const Allocation& state;
    const topopreempt::detail::DomainProblem& problem;
    SolverStatistics& statistics;
    topopreempt::detail::FeasibilityOracle oracle{state, problem};
    topopreempt::detail::UnitSlotBound& slots;
    topopreempt::detail::DeviceEmptyingBound emptying{state, problem};
    std::vector<std::size_t> order;        // position -> victim index
    std::vector<std::size_t> position_of;  // victim index -> position
    std::vector<std::int32_t> choice;
    std::vector<std::int32_t> best_choice;
    std::vector<topopreempt::detail::CandidateVictim> remaining_view;
    std::vector<double> deficit;
    std::vector<std::pair<double, double>> scratch;
    std::vector<std::vector<topopreempt::detail::CandidateVictim>> suffixes;
    double best_cost = std::numeric_limits<double>::infinity();
    double open_bound = std::numeric_limits<double>::infinity();
    std::uint64_t node_cap = 0;
    bool found = false;
    bool stopped = false;

    Run(const BranchAndBoundSearch& o, const Allocation& s, const topopreempt::detail::DomainProblem& p,
        SolverStatistics& st, topopreempt::detail::UnitSlotBound& unit_slots)
        : owner(o), state(s), problem(p), statistics(st), slots(unit_slots) {}

    /// Most useful per cost first: the covering fills fast and the incumbent arrives early.
    void order_victims() {
      const auto& victims = problem.victims;
      order.resize(victims.size());
      std::vector<double> score(victims.size(), 0.0);
      for (std::size_t v = 0; v < victims.size(); ++v) {
        order[v] = v;
        double useful = 0.0;
        for (std::size_t k = 0; k < problem.need.size(); ++k) {
          if (problem.need[k] > 0.0) useful += std::min(victims[v].options.front().gain[k], problem.need[k]) / problem.need[k];
        }
        score[v] = useful / std::max(victims[v].options.front().cost, 1e-12);
      }
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return score[a] > score[b]; });
      position_of.assign(victims.size(), 0);
      for (std::size_t p = 0; p < order.size(); ++p) position_of[order[p]] = p;
      // Suffix copies in search order so the bound of a node reads a contiguous tail.
      suffixes.clear();
      std::vector<topopreempt::detail::CandidateVictim> ordered;
      ordered.reserve(victims.size());
      for (std::size_t v : order) ordered.push_back(victims[v]);
      remaining_view = std::move(ordered);
    }

    [[nodiscard]] bool out_of_budget() {
      if (statistics.nodes_explored > node_cap) return true;
      // Reading the clock costs ~20 ns: check it every 256 nodes only.
      if ((statistics.nodes_explored & 255U) == 0 &&
          topopreempt::detail::Clock::now() - owner.start_ > owner.limits_.time_limit) {
        return true;
      }
      return false;
    }

    void descend(std::size_t position, double cost) {
      ++statistics.nodes_explored;
      // Exact comparisons: bounds are conservative by construction (docs/costs.md), so a
      // subtree is cut only when nothing in it can cost less than the incumbent.
      if (cost >= best_cost) return;
      if (oracle.feasible()) {
        best_cost = cost;
        best_choice = choice;
        found = true;
        return;
      }
      if (position == order.size()) return;
      oracle.deficit(deficit);
      using topopreempt::detail::add_bound;
      double bound = add_bound(cost, topopreempt::detail::fractional_bound(deficit, remaining_view, position, &scratch), problem.grid);
      if (bound >= best_cost) return;
      if (emptying.active()) {
        // Devices shared by several workloads free only when all of them go.
        bound = std::max(bound, add_bound(cost, emptying.bound(oracle.view(), [&](std::size_t v) {
                                  return position_of[v] >= position;
                                }), problem.grid));
        if (bound >= best_cost) return;
      }
      if (slots.active()) {
        // Several units (a gang in a rack): the aggregate deficit may be zero although no
        // unit can take a replica; the per-unit slot bound sees it.
        bound = std::max(bound, add_bound(cost, slots.bound(oracle.view(), [&](std::size_t v) {
                                  return position_of[v] >= position;
                                }), problem.grid));
        if (bound >= best_cost) return;
      }
      if (stopped || out_of_budget()) {
        stopped = true;
        open_bound = std::min(open_bound, bound);
        return;
      }
      const std::size_t v = order[position];
      const auto& options = problem.victims[v].options;
      for (std::size_t o = 0; o < options.size(); ++o) {
        oracle.apply(v, o, +1);
        choice[v] = static_cast<std::int32_t>(o);
        descend(position + 1, cost + options[o].cost);
        choice[v] = -1;
        oracle.apply(v, o, -1);
      }
      descend(position + 1, cost);
    }
  };

  topopreempt::detail::SearchLimits limits_;
  topopreempt::detail::Clock::time_point start_;
};

}  // namespace detail

/// Exact branch-and-bound solver. `optimal` unless a limit stops it, in which case the plan
/// is `feasible` with `lower_bound` and `gap()` telling how far from proven it is.
///
/// Guarantees: victims are topology-valid by construction (feasibility is checked with the
/// same placement model the plan's placement comes from); minimum total cost over every
/// victim set (and shrink choice) inside every candidate target domain of the tightest
/// feasible tier. Limits: exponential in the worst case (victims per target domain); the
/// default node budget (2,000,000) makes it anytime and deterministic; `time_limit` adds a clock.
///
/// Thread-safety: `solve` is const and touches only its arguments; concurrent calls on one
/// shared state are safe while nobody mutates the state.
class branch_and_bound_solver {
 public:
  /// The name plans and reports carry.
  static constexpr std::string_view name = "branch_and_bound";
  /// Exact: `optimal` means a proven minimum cost.
  static constexpr bool is_exact = true;

  /// The same solver, returning plans without their text: `explanation` and every
  /// `Victim::reason` and `DomainVerdict::reason` stay empty, the structured facts are all
  /// there, and `topopreempt::explain(plan, state, preemptor, model)` words them later, to the
  /// same bytes. For hot paths (an `IncrementalDecider`, a scheduler loop) that print rarely.
  [[nodiscard]] branch_and_bound_solver without_text() const {
    branch_and_bound_solver copy = *this;
    copy.limits_.text = false;
    return copy;
  }
  /// Whether plans come with their text (see `without_text`).
  [[nodiscard]] bool builds_text() const noexcept { return limits_.text; }

  /// Stop after `nodes` search nodes (then `feasible` with a gap). Past the limit each domain
  /// still gets greedy's plan or greedy's proof that it holds none, so a limit never makes a
  /// plan `unknown` by itself; see `PlanStatus::unknown`.
  branch_and_bound_solver& node_limit(std::uint64_t nodes) & noexcept {
    limits_.max_nodes = nodes;
    return *this;
  }
  /// On a temporary (`branch_and_bound_solver{}.node_limit(1000)`): returns the changed copy.
  branch_and_bound_solver node_limit(std::uint64_t nodes) && noexcept {
    limits_.max_nodes = nodes;
    return *this;
  }
  /// Stop after `limit` wall time for the whole solve (then `feasible` with a gap, as for
  /// `node_limit`; even a limit of 0 searches the most promising domains until one yields a
  /// plan). Any value is safe: beyond ~292 years it means no limit, a negative one means
  /// already expired.
  template <class Rep, class Period>
  branch_and_bound_solver& time_limit(std::chrono::duration<Rep, Period> limit) & noexcept {
    limits_.time_limit = topopreempt::detail::saturating_nanoseconds(limit);
    return *this;
  }
  /// On a temporary: returns the changed copy.
  template <class Rep, class Period>
  branch_and_bound_solver time_limit(std::chrono::duration<Rep, Period> limit) && noexcept {
    limits_.time_limit = topopreempt::detail::saturating_nanoseconds(limit);
    return *this;
  }
  /// The limits in force.
  [[nodiscard]] const topopreempt::detail::SearchLimits& limits() const noexcept { return limits_; }

  /// Chooses minimum-cost victims for `preemptor` under `model`. Throws
  /// `std::invalid_argument` naming the preemptor when it is invalid or already running.
  template <CostModel Model>
  [[nodiscard]] PreemptionPlan solve(const Allocation& state, const Workload& preemptor,
                                     const Model& model) const {
    const detail::BranchAndBoundSearch search(limits_, topopreempt::detail::Clock::now());
    return topopreempt::detail::solve_with(name, state, preemptor, model, search, limits_);
  }

  /// `solve` reusing the scan results in `cache` whose domains kept their versions (see
  /// `IncrementalDecider`, which owns the cache): the same plan.
  template <CostModel Model>
  [[nodiscard]] PreemptionPlan solve(const Allocation& state, const Workload& preemptor, const Model& model,
                                     topopreempt::detail::ScanCache& cache) const {
    const detail::BranchAndBoundSearch search(limits_, topopreempt::detail::Clock::now());
    return topopreempt::detail::solve_with(name, state, preemptor, model, search, limits_, &cache);
  }

 private:
  topopreempt::detail::SearchLimits limits_;
};

/// Ready-to-use instance.
inline constexpr branch_and_bound_solver branch_and_bound{};

}  // namespace topopreempt::solvers
