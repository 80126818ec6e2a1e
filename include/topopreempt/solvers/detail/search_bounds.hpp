// SPDX-License-Identifier: MIT
#pragma once
/// @file search_bounds.hpp
/// Limits and bounds every search shares: wall-clock deadlines that never overflow, the
/// fractional covering lower bound, and the exact feasibility oracle (can the preemptor be placed
/// in a target once a given victim set is gone?).

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "topopreempt/solvers/detail/domain_problem.hpp"

namespace topopreempt::detail {

/// `limit` in nanoseconds, saturated instead of overflowing: a limit beyond ~292 years means
/// "no limit" (`nanoseconds::max()`); a negative or NaN limit means "already expired" (zero).
/// A plain `duration_cast` of such values is signed overflow.
template <class Rep, class Period>
[[nodiscard]] constexpr std::chrono::nanoseconds saturating_nanoseconds(
    std::chrono::duration<Rep, Period> limit) noexcept {
  const long double ns =
      std::chrono::duration_cast<std::chrono::duration<long double, std::nano>>(limit).count();
  if (!(ns > 0.0L)) return std::chrono::nanoseconds::zero();  // negative, zero or NaN
  constexpr auto max = std::chrono::nanoseconds::max().count();
  if (ns >= static_cast<long double>(max)) return std::chrono::nanoseconds::max();
  return std::chrono::nanoseconds(static_cast<std::chrono::nanoseconds::rep>(ns));
}

/// `start + limit`, saturated at the clock's last time point (a limit of years must not wrap).
[[nodiscard]] inline Clock::time_point deadline_after(Clock::time_point start,
                                                      std::chrono::nanoseconds limit) noexcept {
  if (limit <= std::chrono::nanoseconds::zero()) return start;
  const auto room = Clock::time_point::max() - start;
  return limit >= room ? Clock::time_point::max()
                       : start + std::chrono::duration_cast<Clock::duration>(limit);
}

/// Reads the clock every 64th call only (a read costs ~20 ns; a scanned domain ~100 ns), and
/// stays expired once the deadline has passed.
class DeadlineWatch {
 public:
  explicit DeadlineWatch(Clock::time_point deadline) noexcept : deadline_(deadline) {}
  /// Whether the deadline has passed (checked now, not amortised; no clock is read when there
  /// is no deadline, so a solve without a time limit pays nothing for the check).
  [[nodiscard]] bool expired_now() noexcept {
    if (!expired_ && deadline_ != Clock::time_point::max()) expired_ = Clock::now() >= deadline_;
    return expired_;
  }
  /// Whether the deadline has passed, checking the clock every 64th call.
  [[nodiscard]] bool expired() noexcept {
    if (expired_) return true;
    return (++calls_ & 63U) == 0 && expired_now();
  }
  /// Whether an earlier check found the deadline passed.
  [[nodiscard]] bool has_expired() const noexcept { return expired_; }

 private:
  Clock::time_point deadline_;
  std::uint64_t calls_ = 0;
  bool expired_ = false;
};

/// `bound`, a sum of `roundings` rounded non-negative operations, lowered by the most rounding
/// can have raised it (each operation at most one unit roundoff 2^-53, relative, on a sum of
/// non-negative terms; counted twice for margin): the result never exceeds the exact value.
/// Solvers compare costs exactly (docs/costs.md), so a bound must be conservative by
/// construction, not by a tolerance on the incumbent.
[[nodiscard]] inline double conservative(double bound, double roundings) noexcept {
  if (!(bound > 0.0) || !std::isfinite(bound)) return bound;
  return std::max(0.0, bound - bound * (roundings + 4.0) * 0x1p-52);
}

/// A conservative bound rounded up to the model's cost grid (a power of two; 0: none). Every
/// cost is a whole number of grid steps (checked by `check_price_sum`), so the least cost
/// at or above `bound` is `ceil(bound / grid) x grid`: this strengthens the bound exactly.
[[nodiscard]] inline double on_grid(double bound, double grid) noexcept {
  if (!(grid > 0.0) || !std::isfinite(bound)) return bound;
  return std::ceil(bound / grid) * grid;
}

/// `cost + bound` where `cost` is a sum of prices and `bound` a conservative bound on what
/// is still to pay: exact on a grid; otherwise lowered by one step so that rounding the
/// addition cannot lift it above the exact sum.
[[nodiscard]] inline double add_bound(double cost, double bound, double grid) noexcept {
  if (grid > 0.0) return cost + on_grid(bound, grid);
  const double sum = cost + bound;
  return sum > 0.0 && std::isfinite(sum) ? std::nextafter(sum, 0.0) : sum;
}

/// Cheapest fractional cover of `need` by items (cost per unit, units available): sorts `items`
/// by ratio and takes them in order. Infinity when all of them cannot cover `need`. The result
/// is conservative (`conservative`): never above the exact fractional optimum.
[[nodiscard]] inline double fractional_cover(std::vector<std::pair<double, double>>& items,
                                             double need) {
  std::sort(items.begin(), items.end());
  double cost = 0.0;
  double roundings = 0.0;
  for (const auto& [ratio, available] : items) {
    if (need <= 0.0) break;
    const double take = std::min(available, need);
    cost += take * ratio;
    need -= take;
    roundings += 4.0;  // the ratio's division (and a shared price's), the product, the sum
  }
  return need > 1e-9 ? std::numeric_limits<double>::infinity() : conservative(cost, roundings);
}

/// Fractional covering bound: for each relaxation dimension, cover `need` with the cheapest
/// gain per unit cost (each victim at its best option ratio, up to its eviction gain); the
/// bound is the largest of these. Valid because any feasible choice must cover every
/// dimension's aggregate deficit and pays at least that ratio for what it frees.
[[nodiscard]] inline double fractional_bound(
    const std::vector<double>& need, const std::vector<CandidateVictim>& victims,
    std::size_t first = 0, std::vector<std::pair<double, double>>* scratch = nullptr) {
  std::vector<std::pair<double, double>> local;
  auto& items = scratch ? *scratch : local;
  double bound = 0.0;
  for (std::size_t d = 0; d < need.size(); ++d) {
    if (need[d] <= 0.0) continue;
    items.clear();
    for (std::size_t v = first; v < victims.size(); ++v) {
      double ratio = std::numeric_limits<double>::infinity();
      for (const auto& option : victims[v].options) {
        if (option.gain[d] > 0.0) ratio = std::min(ratio, option.cost / option.gain[d]);
      }
      if (std::isfinite(ratio)) items.emplace_back(ratio, victims[v].options.front().gain[d]);
    }
    bound = std::max(bound, fractional_cover(items, need[d]));
  }
  return bound;
}

/// Exact feasibility of a victim choice inside one target: releases the chosen entries into
/// an overlay of the state and counts how many replicas then fit.
class FeasibilityOracle {
 public:
  FeasibilityOracle(const Allocation& state, const DomainProblem& problem)
      : state_(&state), problem_(&problem), overlay_(state) {}

  /// Applies (+1) or undoes (-1) option `option` of victim `v`.
  void apply(std::size_t v, std::size_t option, int sign) {
    const CandidateVictim& victim = problem_->victims[v];
    const WorkloadView view = state_->view(victim.id);
    const auto& dropped = victim.options[option].dropped;
    const auto release_replica = [&](std::size_t r) {
      const auto [first, last] = view.replica_entries(r);
      for (std::size_t e = first; e < last; ++e) {
        entry_.resize(1);
        entry_[0].domain = view.domains[e];
        entry_[0].amount = view.amounts.col(static_cast<Eigen::Index>(e));
        if (sign > 0) {
          overlay_.release(entry_);
        } else {
          overlay_.consume(entry_);
        }
      }
    };
    if (dropped.empty()) {
      for (std::size_t r = 0; r < view.replica_begin.size(); ++r) release_replica(r);
    } else {
      for (std::int32_t r : dropped) release_replica(static_cast<std::size_t>(r));
    }
  }
  /// Whether the preemptor fits in the target with the applied victims gone.
  [[nodiscard]] bool feasible() const {
    return replicas_that_fit(overlay_, problem_->tier->demand, problem_->target) >=
           problem_->tier->demand.replicas;
  }
  /// Deficit per relaxation dimension with the applied victims gone.
  void deficit(std::vector<double>& out) const {
    out.resize(problem_->dims.size());
    for (std::size_t k = 0; k < problem_->dims.size(); ++k) {
      const std::size_t dim = problem_->dims[k];
      const DomainId where = problem_->measured_in[k];
      const double free = dim == whole_device_dimension
                              ? static_cast<double>(overlay_.idle_devices(where))
                              : static_cast<double>(overlay_.free(where, dim));
      out[k] = std::max(0.0, problem_->demand_total[k] - free);
    }
  }
  /// The overlay (for the final placement).
  [[nodiscard]] const OverlayView<Allocation>& view() const noexcept { return overlay_; }

 private:
  const Allocation* state_;
  const DomainProblem* problem_;
  OverlayView<Allocation> overlay_;
  std::vector<PlacementEntry> entry_;
};

}  // namespace topopreempt::detail
