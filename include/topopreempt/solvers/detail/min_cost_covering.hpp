// SPDX-License-Identifier: MIT
//
// Exact multiple-choice min-cost covering in one or two integer dimensions, by dynamic
// programming over the (capped) amount still to be freed, and 0-1 knapsack solved through it.
//
// Victim selection inside one topology domain reduces to this problem: every candidate victim is
// a *group* of mutually exclusive *options* (evict whole, shrink by s replicas, ...), doing
// nothing is always allowed, and the freed amounts must cover the deficit in every binding
// dimension at minimum total cost.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace topopreempt::detail {

/// Cost types the covering DP supports: `std::int64_t` (exact; ties are decided exactly) and
/// `double` (deterministic, but "equal cost" means bit-equal computed sums).
template <class Cost>
concept CoveringCost = std::same_as<Cost, std::int64_t> || std::same_as<Cost, double>;

/// An amount in up to two resource dimensions. A 1-D problem leaves index 1 at zero.
using covering_amount = std::array<std::int64_t, 2>;

/// One option of a group: choosing it frees `gain` at price `cost`.
/// Preconditions (checked, `std::invalid_argument`): every gain component >= 0, cost >= 0 and
/// finite. Gains larger than the deficit are fine; they are capped at the deficit internally.
template <CoveringCost Cost>
struct covering_option {
  covering_amount gain{};
  Cost cost{};
};

/// Value of `covering_result::choice[g]` when group g contributes nothing.
inline constexpr std::int32_t no_option = -1;

/// Decisions are stored in at most 8 bits per cell (value 0 = none, i + 1 = option i).
inline constexpr std::size_t max_covering_options_per_group = 255;

/// The groups of one covering problem, stored flat so that a caller on a hot path can `clear()`
/// and refill it without allocating once its vectors have grown to the working size.
/// "Do nothing" is implicit in every group; do not add a zero option for it (harmless, though:
/// a zero-gain option never beats doing nothing).
template <CoveringCost Cost>
class covering_problem {
 public:
  /// Removes all groups, keeping the allocated capacity.
  void clear() noexcept {
    options_.clear();
    group_end_.clear();
  }

  void reserve(std::size_t groups, std::size_t options) {
    group_end_.reserve(groups);
    options_.reserve(options);
  }

  /// Starts a new, empty group; following `add_option` calls append to it.
  void begin_group() { group_end_.push_back(options_.size()); }

  /// Appends an option to the group started last. Throws `std::logic_error` if there is none.
  void add_option(const covering_option<Cost>& option) {
    if (group_end_.empty()) {
      throw std::logic_error("covering_problem::add_option: call begin_group() first");
    }
    options_.push_back(option);
    ++group_end_.back();
  }

  /// Appends a whole group at once.
  void add_group(std::span<const covering_option<Cost>> options) {
    begin_group();
    options_.insert(options_.end(), options.begin(), options.end());
    group_end_.back() = options_.size();
  }

  [[nodiscard]] std::size_t group_count() const noexcept { return group_end_.size(); }
  [[nodiscard]] std::size_t option_count() const noexcept { return options_.size(); }

  /// Options of group `g` (precondition: g < group_count()). Option indices in results refer to
  /// positions in this span.
  [[nodiscard]] std::span<const covering_option<Cost>> group(std::size_t g) const noexcept {
    const std::size_t begin = g == 0 ? 0 : group_end_[g - 1];
    return {options_.data() + begin, group_end_[g] - begin};
  }

 private:
  std::vector<covering_option<Cost>> options_;
  // End offsets rather than begins, so that add_option only bumps the last entry.
  std::vector<std::size_t> group_end_;
};

/// Outcome of a solve.
enum class covering_status : std::uint8_t {
  optimal,     ///< `cost` and `choice` describe a proven optimum.
  infeasible,  ///< No choice vector covers the deficit (not even the best option everywhere).
  too_large,   ///< The DP table would exceed `covering_limits::max_cells`; use another solver.
};

/// Which DP produced the result (statistics; also lets tests see the complement trick fire).
enum class covering_method : std::uint8_t {
  trivial,     ///< Zero deficit, or decided without a table (infeasible / too_large).
  direct,      ///< Table over the capped remaining deficit, (d0 + 1) x (d1 + 1) cells per stage.
  complement,  ///< 1-D pure 0-1: knapsack over what is kept, (total_gain - d + 1) cells/stage.
};

/// Whether the 1-D complement (knapsack over the kept side) may be used when it is smaller.
enum class complement_policy : std::uint8_t { automatic, never };

/// Resource limits of one solve.
struct covering_limits {
  /// Bound on the decision table, counted as (number of groups that can contribute) x (cells per
  /// stage). Memory is at most max_cells bytes of decisions (1 bit per cell for single-option
  /// groups, up to 8 for groups with many options) plus one row of cells of `Cost`.
  std::size_t max_cells = std::size_t{1} << 26;
  complement_policy complement = complement_policy::automatic;
};

/// Result of `solve_min_cost_covering`. `cost` and `choice` are meaningful only when
/// `status == optimal`; otherwise cost is 0 and every choice is `no_option`.
template <CoveringCost Cost>
struct covering_result {
  covering_status status = covering_status::optimal;
  Cost cost{};
  /// Per group: index of the chosen option within the group, or `no_option`.
  std::vector<std::int32_t> choice;
  /// DP cells evaluated (stages x cells per stage); 0 when no table was built.
  std::uint64_t cells = 0;
  covering_method method = covering_method::trivial;
};

template <CoveringCost Cost>
class covering_dp;

/// DP buffers reused across solves: after a warm-up solve of the largest size, further solves of
/// no larger size do not allocate (the buffers only ever grow). Not thread-safe; use one per
/// thread. Its content between solves is meaningless.
template <CoveringCost Cost>
class min_cost_covering_workspace {
 public:
  /// Bytes currently held by the buffers (lets callers and tests confirm there is no growth).
  [[nodiscard]] std::size_t reserved_bytes() const noexcept {
    return values_.capacity() * sizeof(Cost) + decisions_.capacity() * sizeof(std::uint64_t) +
           stages_.capacity() * sizeof(stage);
  }

 private:
  friend class covering_dp<Cost>;

  // One DP stage per group that can contribute; groups whose options all have zero capped gain
  // are never chosen (doing nothing costs 0 and wins ties), so they get no stage.
  struct stage {
    std::size_t group = 0;
    std::size_t word_begin = 0;  // into decisions_
    std::size_t words = 0;
    std::int64_t weight = 0;  // complement only: uncapped gain of the single useful option
    std::int32_t option = 0;  // complement only: index of that option
    std::uint32_t width = 0;  // decision bits per cell: 1, 2, 4 or 8 (divides 64)
  };

  std::vector<Cost> values_;              // one layer, updated in place
  std::vector<std::uint64_t> decisions_;  // packed per-stage decisions
  std::vector<stage> stages_;
};

/// The solver proper; use `solve_min_cost_covering` / `solve_knapsack_01` instead.
template <CoveringCost Cost>
class covering_dp {
 public:
  static void solve(const covering_problem<Cost>& problem, const covering_amount& deficit,
                    min_cost_covering_workspace<Cost>& ws, const covering_limits& limits,
                    covering_result<Cost>& result) {
    validate(problem, deficit);
    result.status = covering_status::optimal;
    result.cost = Cost{};
    result.choice.assign(problem.group_count(), no_option);
    result.cells = 0;
    result.method = covering_method::trivial;
    if (deficit[0] == 0 && deficit[1] == 0) {
      return;
    }

    const plan p = plan_stages(problem, deficit, ws);
    if (p.reach[0] < deficit[0] || p.reach[1] < deficit[1]) {
      result.status = covering_status::infeasible;
      return;
    }

    std::size_t cells = direct_cells(deficit);
    bool complement = false;
    std::int64_t keep_capacity = 0;
    // A saturated total_gain is not a real total; the complement is useless there anyway.
    if (p.binding_dim >= 0 && p.pure_01 && limits.complement == complement_policy::automatic &&
        p.total_gain < std::numeric_limits<std::int64_t>::max()) {
      // reach >= deficit was checked, so total_gain >= deficit.
      keep_capacity = p.total_gain - deficit[p.binding_dim];
      if (keep_capacity < deficit[p.binding_dim]) {
        complement = true;
        cells = static_cast<std::size_t>(keep_capacity) + 1;
      }
    }
    const std::size_t table = checked_mul(ws.stages_.size(), cells, "DP table cells");
    if (table > limits.max_cells) {
      result.status = covering_status::too_large;
      return;
    }

    layout_decisions(ws, cells, complement);
    if (ws.values_.size() < cells) {
      ws.values_.resize(cells);
    }
    result.cells = table;
    if (complement) {
      result.method = covering_method::complement;
      run_complement(problem, keep_capacity, ws, result);
    } else {
      result.method = covering_method::direct;
      run_direct(problem, deficit, ws, result);
    }
  }

 private:
  using stage = typename min_cost_covering_workspace<Cost>::stage;

  // Sentinel for "cannot cover". For int64 it is half the range so that cost + sentinel never
  // overflows; validate() guarantees every real total stays below it.
  static constexpr Cost infinity() noexcept {
    if constexpr (std::same_as<Cost, double>) {
      return std::numeric_limits<double>::infinity();
    } else {
      return std::numeric_limits<std::int64_t>::max() / 2;
    }
  }

  struct plan {
    covering_amount reach{};      // saturating sum of per-group max capped gains, capped at deficit
    int binding_dim = -1;         // the only dimension with positive deficit, or -1 if both are
    bool pure_01 = true;          // every stage has exactly one option with positive binding gain
    std::int64_t total_gain = 0;  // saturating sum of those options' uncapped gains
  };

  static std::size_t checked_mul(std::size_t a, std::size_t b, const char* what) {
    if (a != 0 && b > std::numeric_limits<std::size_t>::max() / a) {
      throw std::invalid_argument(std::string("min-cost covering: ") + what + " overflows");
    }
    return a * b;
  }

  static std::size_t direct_cells(const covering_amount& deficit) {
    return checked_mul(static_cast<std::size_t>(deficit[0]) + 1,
                       static_cast<std::size_t>(deficit[1]) + 1, "cells per stage");
  }

  static std::int64_t saturating_add(std::int64_t a, std::int64_t b, std::int64_t cap) noexcept {
    return b > cap - a ? cap : a + b;
  }

  static std::string where(std::size_t g, std::size_t o) {
    return "min-cost covering: group " + std::to_string(g) + " option " + std::to_string(o);
  }

  static void validate(const covering_problem<Cost>& problem, const covering_amount& deficit) {
    for (std::size_t d = 0; d < 2; ++d) {
      if (deficit[d] < 0) {
        throw std::invalid_argument("min-cost covering: deficit[" + std::to_string(d) +
                                    "] is negative");
      }
      if (deficit[d] == std::numeric_limits<std::int64_t>::max()) {
        throw std::invalid_argument("min-cost covering: deficit[" + std::to_string(d) +
                                    "] + 1 overflows");
      }
    }
    (void)direct_cells(deficit);  // throws on overflow, whether or not a table gets built
    // Every DP value is a sum of at most one cost per group, so bounding the sum of per-group
    // maxima bounds them all; this keeps int64 sums exact and clear of the sentinel.
    Cost max_total{};
    for (std::size_t g = 0; g < problem.group_count(); ++g) {
      const auto options = problem.group(g);
      if (options.size() > max_covering_options_per_group) {
        throw std::invalid_argument("min-cost covering: group " + std::to_string(g) + " has " +
                                    std::to_string(options.size()) + " options (at most " +
                                    std::to_string(max_covering_options_per_group) + ")");
      }
      Cost group_max{};
      for (std::size_t o = 0; o < options.size(); ++o) {
        const covering_option<Cost>& option = options[o];
        if (option.gain[0] < 0 || option.gain[1] < 0) {
          throw std::invalid_argument(where(g, o) + ": negative gain");
        }
        if (!(option.cost >= 0) || !std::isfinite(static_cast<double>(option.cost))) {
          throw std::invalid_argument(where(g, o) + ": negative or non-finite cost");
        }
        group_max = std::max(group_max, option.cost);
      }
      const bool overflows = [&] {
        if constexpr (std::same_as<Cost, double>) {
          return !std::isfinite(max_total + group_max);
        } else {
          return group_max >= infinity() - max_total;
        }
      }();
      if (overflows) {
        throw std::invalid_argument("min-cost covering: group " + std::to_string(g) +
                                    ": sum of per-group maximum costs overflows");
      }
      max_total += group_max;
    }
  }

  static std::uint32_t decision_width(std::size_t option_count) noexcept {
    if (option_count <= 1) return 1;
    if (option_count <= 3) return 2;
    if (option_count <= 15) return 4;
    return 8;
  }

  static plan plan_stages(const covering_problem<Cost>& problem, const covering_amount& deficit,
                          min_cost_covering_workspace<Cost>& ws) {
    plan p;
    if (deficit[0] == 0 || deficit[1] == 0) {
      p.binding_dim = deficit[0] > 0 ? 0 : 1;
    }
    ws.stages_.clear();
    for (std::size_t g = 0; g < problem.group_count(); ++g) {
      const auto options = problem.group(g);
      covering_amount best{};
      int positive = 0;
      stage s;
      s.group = g;
      s.width = decision_width(options.size());
      for (std::size_t o = 0; o < options.size(); ++o) {
        for (std::size_t d = 0; d < 2; ++d) {
          best[d] = std::max(best[d], std::min(options[o].gain[d], deficit[d]));
        }
        if (p.binding_dim >= 0 && options[o].gain[p.binding_dim] > 0) {
          ++positive;
          s.option = static_cast<std::int32_t>(o);
          s.weight = options[o].gain[p.binding_dim];
        }
      }
      if (best[0] == 0 && best[1] == 0) {
        continue;
      }
      for (std::size_t d = 0; d < 2; ++d) {
        p.reach[d] = saturating_add(p.reach[d], best[d], deficit[d]);
      }
      if (positive == 1) {
        p.total_gain =
            saturating_add(p.total_gain, s.weight, std::numeric_limits<std::int64_t>::max());
      } else {
        p.pure_01 = false;
      }
      ws.stages_.push_back(s);
    }
    return p;
  }

  static void layout_decisions(min_cost_covering_workspace<Cost>& ws, std::size_t cells,
                               bool complement) {
    std::size_t word = 0;
    for (stage& s : ws.stages_) {
      if (complement) {
        s.width = 1;
      }
      s.word_begin = word;
      s.words = (checked_mul(cells, s.width, "decision bits") + 63) / 64;
      word += s.words;
    }
    if (ws.decisions_.size() < word) {
      ws.decisions_.resize(word);
    }
  }

  static std::uint32_t read_decision(const std::uint64_t* words, std::uint32_t width,
                                     std::size_t cell) noexcept {
    const std::size_t bit = cell * width;
    return static_cast<std::uint32_t>((words[bit >> 6] >> (bit & 63)) &
                                      ((std::uint64_t{1} << width) - 1));
  }

  // Backward over groups: value[r] = min cost for groups k.. to free the (capped) remainder r.
  // Going backward makes reconstruction run forward, so ties can be broken in group order: each
  // group keeps the smallest decision (none < option 0 < option 1 ...) that attains the optimum of
  // the remainder, which yields the lexicographically first optimal choice vector.
  // In place: every transition reads a cell with a smaller linear index, and cells are visited in
  // decreasing order, so reads still see the previous stage.
  static void run_direct(const covering_problem<Cost>& problem, const covering_amount& deficit,
                         min_cost_covering_workspace<Cost>& ws, covering_result<Cost>& result) {
    const std::int64_t d0 = deficit[0];
    const std::int64_t d1 = deficit[1];
    const std::size_t row = static_cast<std::size_t>(d1) + 1;
    const std::size_t cells = (static_cast<std::size_t>(d0) + 1) * row;
    Cost* const value = ws.values_.data();
    std::fill(value, value + cells, infinity());
    value[0] = Cost{};

    for (auto s = ws.stages_.rbegin(); s != ws.stages_.rend(); ++s) {
      const auto group = problem.group(s->group);
      const covering_option<Cost>* const options = group.data();
      const std::size_t option_count = group.size();
      std::uint64_t* const words = ws.decisions_.data() + s->word_begin;
      std::fill(words, words + s->words, std::uint64_t{0});
      const std::uint32_t width = s->width;

      if (row == 1 && option_count == 1) {
        // The common 1-D single-option case, kept tight because it dominates run time.
        const Cost cost = options[0].cost;
        const std::int64_t gain = std::min(options[0].gain[0], d0);
        for (std::int64_t r = d0; r >= 0; --r) {
          const Cost candidate = cost + value[r > gain ? r - gain : 0];
          if (candidate < value[r]) {
            value[r] = candidate;
            words[static_cast<std::size_t>(r) >> 6] |= std::uint64_t{1} << (r & 63);
          }
        }
        continue;
      }

      for (std::int64_t a = d0; a >= 0; --a) {
        Cost* const value_row = value + static_cast<std::size_t>(a) * row;
        for (std::int64_t b = d1; b >= 0; --b) {
          Cost best = value_row[b];
          std::uint64_t decision = 0;
          for (std::size_t o = 0; o < option_count; ++o) {
            const std::int64_t a2 = a > options[o].gain[0] ? a - options[o].gain[0] : 0;
            const std::int64_t b2 = b > options[o].gain[1] ? b - options[o].gain[1] : 0;
            const Cost candidate =
                options[o].cost +
                value[static_cast<std::size_t>(a2) * row + static_cast<std::size_t>(b2)];
            if (candidate < best) {
              best = candidate;
              decision = o + 1;
            }
          }
          value_row[b] = best;
          if (decision != 0) {
            const std::size_t bit =
                (static_cast<std::size_t>(a) * row + static_cast<std::size_t>(b)) * width;
            words[bit >> 6] |= decision << (bit & 63);
          }
        }
      }
    }

    const Cost total = value[cells - 1];
    if (!(total < infinity())) {
      // Possible only in 2-D: each dimension is reachable on its own, but not both together.
      result.status = covering_status::infeasible;
      return;
    }
    std::int64_t a = d0;
    std::int64_t b = d1;
    for (const stage& s : ws.stages_) {
      const std::uint32_t decision =
          read_decision(ws.decisions_.data() + s.word_begin, s.width,
                        static_cast<std::size_t>(a) * row + static_cast<std::size_t>(b));
      if (decision == 0) {
        continue;
      }
      const covering_option<Cost>& option = problem.group(s.group)[decision - 1];
      result.choice[s.group] = static_cast<std::int32_t>(decision - 1);
      a = a > option.gain[0] ? a - option.gain[0] : 0;
      b = b > option.gain[1] ? b - option.gain[1] : 0;
    }
    result.cost = total;
  }

  // 1-D pure 0-1 covering is the complement of a knapsack: keeping group k consumes its weight
  // from `capacity` = total_gain - deficit. value[r] = min cost evicted among groups k.. when r
  // capacity is left for keeping. Keeping (= none) wins ties, the same rule as run_direct, so
  // both paths return the same choice vector for exact costs.
  static void run_complement(const covering_problem<Cost>& problem, std::int64_t capacity,
                             min_cost_covering_workspace<Cost>& ws, covering_result<Cost>& result) {
    Cost* const value = ws.values_.data();
    std::fill(value, value + capacity + 1, Cost{});

    for (auto s = ws.stages_.rbegin(); s != ws.stages_.rend(); ++s) {
      const Cost cost = problem.group(s->group)[static_cast<std::size_t>(s->option)].cost;
      const std::int64_t weight = s->weight;
      std::uint64_t* const words = ws.decisions_.data() + s->word_begin;
      std::fill(words, words + s->words, std::uint64_t{0});
      std::int64_t r = capacity;
      for (; r >= weight; --r) {
        const Cost evict = cost + value[r];
        const Cost keep = value[r - weight];
        if (evict < keep) {
          value[r] = evict;
          words[static_cast<std::size_t>(r) >> 6] |= std::uint64_t{1} << (r & 63);
        } else {
          value[r] = keep;
        }
      }
      for (; r >= 0; --r) {  // too heavy to keep with r left: forced eviction
        value[r] += cost;
        words[static_cast<std::size_t>(r) >> 6] |= std::uint64_t{1} << (r & 63);
      }
    }

    std::int64_t r = capacity;
    for (const stage& s : ws.stages_) {
      if (read_decision(ws.decisions_.data() + s.word_begin, 1, static_cast<std::size_t>(r))) {
        result.choice[s.group] = s.option;
      } else {
        r -= s.weight;
      }
    }
    result.cost = value[capacity];
  }
};

/// Solves the multiple-choice min-cost covering problem exactly: choose at most one option per
/// group so that the freed gain covers `deficit` in both dimensions, minimising total cost.
///
/// Ties: among optimal choice vectors, returns the lexicographically first in group order with
/// `no_option` < 0 < 1 < ... (earlier groups prefer doing nothing, then lower option indices).
/// Exact for int64; for double, "optimal" and "tie" refer to the computed floating sums, and the
/// result is still a deterministic function of the input. Buffers in `workspace` do not affect
/// the result.
///
/// Throws `std::invalid_argument` (message names the group/option) for a negative gain, a
/// negative or non-finite cost, more than 255 options in a group, a negative deficit, a deficit
/// of INT64_MAX, a cell count overflowing `std::size_t`, or costs whose per-group maxima sum past
/// INT64_MAX / 2 (int64) or to infinity (double).
///
/// Complexity: O(total options x cells per stage) time, where cells per stage is
/// (d0 + 1)(d1 + 1), or total_gain - d + 1 via the complement when the problem is 1-D, every
/// contributing group has exactly one option with positive gain, and that is smaller than d + 1.
/// Memory: one row of cells of `Cost` plus the packed decisions (see `covering_limits`).
///
/// This overload reuses `result.choice`'s capacity: with a warmed-up workspace it does not
/// allocate.
template <CoveringCost Cost>
void solve_min_cost_covering_into(const covering_problem<Cost>& problem,
                                  const covering_amount& deficit,
                                  min_cost_covering_workspace<Cost>& workspace,
                                  const covering_limits& limits, covering_result<Cost>& result) {
  covering_dp<Cost>::solve(problem, deficit, workspace, limits, result);
}

/// As `solve_min_cost_covering_into`, returning a fresh result.
template <CoveringCost Cost>
[[nodiscard]] covering_result<Cost> solve_min_cost_covering(
    const covering_problem<Cost>& problem, const covering_amount& deficit,
    min_cost_covering_workspace<Cost>& workspace, const covering_limits& limits = {}) {
  covering_result<Cost> result;
  covering_dp<Cost>::solve(problem, deficit, workspace, limits, result);
  return result;
}

/// Result of `solve_knapsack_01`. `status` is `optimal` or `too_large` (never infeasible:
/// taking nothing always fits); `profit` and `take` are meaningful only when optimal.
template <CoveringCost Profit>
struct knapsack_result {
  covering_status status = covering_status::optimal;
  Profit profit{};
  std::vector<std::uint8_t> take;  // 1 = item kept in the knapsack
  std::uint64_t cells = 0;
  covering_method method = covering_method::trivial;
};

/// 0-1 knapsack (maximise kept profit with kept weight <= capacity), solved as the covering
/// problem the library actually needs: evict items of total weight >= total - capacity at
/// minimum lost profit. With a small capacity relative to the total weight, the covering solver
/// switches to the complement, so the table has about n x (capacity + 1) cells.
///
/// Ties follow the covering rule: earlier items prefer being taken. `profit` is the sum of the
/// taken profits in item order. Throws `std::invalid_argument` for mismatched sizes, a negative
/// capacity, a negative weight or a negative/non-finite profit (naming the item), or a total
/// weight overflowing int64. Builds a temporary covering problem, so it allocates; it is not
/// meant for the hot path.
template <CoveringCost Profit>
[[nodiscard]] knapsack_result<Profit> solve_knapsack_01(
    std::type_identity_t<std::span<const Profit>> profits, std::span<const std::int64_t> weights,
    std::int64_t capacity, min_cost_covering_workspace<Profit>& workspace,
    const covering_limits& limits = {}) {
  if (profits.size() != weights.size()) {
    throw std::invalid_argument("knapsack: profits and weights differ in size");
  }
  if (capacity < 0) {
    throw std::invalid_argument("knapsack: negative capacity");
  }
  covering_problem<Profit> problem;
  problem.reserve(profits.size(), profits.size());
  std::int64_t total_weight = 0;
  for (std::size_t i = 0; i < profits.size(); ++i) {
    if (weights[i] < 0) {
      throw std::invalid_argument("knapsack: item " + std::to_string(i) + ": negative weight");
    }
    if (!(profits[i] >= 0) || !std::isfinite(static_cast<double>(profits[i]))) {
      throw std::invalid_argument("knapsack: item " + std::to_string(i) +
                                  ": negative or non-finite profit");
    }
    if (weights[i] > std::numeric_limits<std::int64_t>::max() - total_weight) {
      throw std::invalid_argument("knapsack: total weight overflows at item " + std::to_string(i));
    }
    total_weight += weights[i];
    problem.begin_group();
    problem.add_option({{weights[i], 0}, profits[i]});
  }
  const std::int64_t deficit = std::max<std::int64_t>(total_weight - capacity, 0);
  const covering_result<Profit> covering =
      solve_min_cost_covering(problem, {deficit, 0}, workspace, limits);

  knapsack_result<Profit> result;
  result.status = covering.status;
  result.cells = covering.cells;
  result.method = covering.method;
  result.take.assign(profits.size(), 0);
  if (covering.status != covering_status::optimal) {
    return result;
  }
  for (std::size_t i = 0; i < profits.size(); ++i) {
    if (covering.choice[i] == no_option) {
      result.take[i] = 1;
      result.profit += profits[i];
    }
  }
  return result;
}

}  // namespace topopreempt::detail
