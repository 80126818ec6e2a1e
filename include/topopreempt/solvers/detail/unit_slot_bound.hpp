// SPDX-License-Identifier: MIT
#pragma once
/// @file unit_slot_bound.hpp
/// A lower bound for targets that hold several units (a gang of node-confined replicas that
/// must share one rack): the aggregate bound sees a rack with 20 idle GPUs as needing nothing
/// for two 8-GPU replicas, although no single node has 8. This bound counts per unit.
///
/// Let m_u replicas fit in unit u now and S = R - sum m_u more be needed. Placing s more in u
/// costs at least f_u(s), the fractional cost of covering u's per-dimension deficit for m_u+s
/// replicas with the still-undecided victims' gains *in u*, each victim priced at its cheapest
/// option divided by the number of units it touches (so a gang freeing two nodes is not paid
/// twice). f_u is convex in s (fractional covering is convex in the amount, the deficit affine
/// in s), so the cheapest way to add S replicas takes the S smallest marginal costs across
/// units. The result never exceeds the true cost of any completion: a valid bound.
///
/// With `distinct_hosts` a unit (never looser than a host) holds at most one replica, so each
/// unit offers one slot at most; units sharing a host still count separately (a relaxation,
/// the bound stays valid).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/capacity_view.hpp"
#include "topopreempt/solvers/detail/preemption_context.hpp"
#include "topopreempt/model/placement_search.hpp"

namespace topopreempt::detail {

/// Gangs of at most this many replicas in targets of at most this many units are decomposed by
/// the units they land on (see `UnitSlotBound::ranked_unit_sets`).
inline constexpr std::int32_t max_decomposed_replicas = 3;
inline constexpr std::size_t max_decomposed_units = 64;

/// A set of at most `max_decomposed_replicas` units (indices into the target's units) with a
/// lower bound on the cost of landing the whole gang on them.
struct UnitSet {
  double bound = 0.0;
  std::array<std::uint32_t, max_decomposed_replicas> members{};
  std::size_t size = 0;
};

class UnitSlotBound {
 public:
  /// Prepares the per-unit gains of `problem`'s victims; inactive (bound 0) for one unit.
  UnitSlotBound(const Allocation& state, const DomainProblem& problem)
      : topology_(&state.topology()), problem_(&problem) {
    const ResolvedDemand& demand = problem.tier->demand;
    const auto units = units_of(*topology_, demand, problem.target);
    if (units.size() < 2) return;
    units_.assign(units.begin(), units.end());
    // Dimensions the unit itself measures: whole devices, device shares, and pooled dimensions
    // whose pools lie inside the unit (pools above it are shared: dropping them keeps a bound).
    if (demand.whole_devices > 0) dims_.push_back({whole_device_dimension, static_cast<double>(demand.whole_devices)});
    for (Eigen::Index i = 0; i < demand.pooled.size(); ++i) {
      const double per_replica = static_cast<double>(demand.pooled(i) + demand.share(i));
      if (per_replica <= 0.0) continue;
      dims_.push_back({static_cast<std::size_t>(i), per_replica});
    }
    unit_items_.assign(units_.size(), {});
    unit_gains_.assign(units_.size(), {});
    const std::size_t count = dims_.size();
    std::vector<double> gains(units_.size() * count);
    for (std::size_t v = 0; v < problem.victims.size(); ++v) {
      const auto& victim = problem.victims[v];
      std::fill(gains.begin(), gains.end(), 0.0);
      const WorkloadView view = state.view(victim.id);
      for (std::size_t e = 0; e < view.domains.size(); ++e) {
        const DomainId domain = view.domains[e];
        const auto it = std::upper_bound(units_.begin(), units_.end(), domain);
        if (it == units_.begin()) continue;
        const auto u = static_cast<std::size_t>(it - units_.begin()) - 1;
        if (!topology_->contains(units_[u], domain)) continue;
        for (std::size_t k = 0; k < count; ++k) {
          const std::size_t dim = dims_[k].first;
          if (dim == whole_device_dimension) {
            if (topology_->is_device(domain)) gains[u * count + k] += 1.0;
          } else if (measured_in_unit(u, dim)) {
            gains[u * count + k] += static_cast<double>(view.amount(e, dim));
          }
        }
      }
      std::size_t touches = 0;
      for (std::size_t u = 0; u < units_.size(); ++u) {
        for (std::size_t k = 0; k < count; ++k) {
          if (gains[u * count + k] > 0.0) {
            ++touches;
            break;
          }
        }
      }
      if (touches == 0) continue;
      double cheapest = std::numeric_limits<double>::infinity();
      for (const auto& option : victim.options) cheapest = std::min(cheapest, option.cost);
      const double share = cheapest / static_cast<double>(touches);
      for (std::size_t u = 0; u < units_.size(); ++u) {
        const auto first = gains.begin() + static_cast<std::ptrdiff_t>(u * count);
        const auto last = first + static_cast<std::ptrdiff_t>(count);
        if (std::none_of(first, last, [](double g) { return g > 0.0; })) continue;
        // Flat per-unit storage: no allocation per (victim x unit), only amortised growth.
        unit_items_[u].push_back({v, share, unit_gains_[u].size()});
        unit_gains_[u].insert(unit_gains_[u].end(), first, last);
      }
    }
  }

  /// Whether the bound can say more than the aggregate one.
  [[nodiscard]] bool active() const noexcept { return !units_.empty(); }

  /// Whether the gang is small enough to decompose by units.
  [[nodiscard]] bool decomposable() const noexcept {
    return active() && problem_->tier->demand.replicas <= max_decomposed_replicas &&
           units_.size() <= max_decomposed_units;
  }

  /// Every set of 1..R units, each with the least bound over splits of the R replicas giving
  /// every member at least one, ascending by bound (then members): where an optimal gang can
  /// land, cheapest first. Sets that cannot host the gang even with every victim gone are left
  /// out. Requires `decomposable()`.
  [[nodiscard]] std::vector<UnitSet> ranked_unit_sets(const Allocation& state) {
    const std::int32_t replicas = problem_->tier->demand.replicas;
    const auto width = static_cast<std::size_t>(replicas) + 1;
    const std::vector<double> costs = hosting_costs(state);
    std::vector<UnitSet> sets;
    const ResolvedDemand& demand = problem_->tier->demand;
    // Under anti-affinity every replica takes its own unit on its own host: only sets of R
    // units on R distinct hosts can hold the gang.
    const auto apart = [&](const UnitSet& candidate) {
      if (!demand.distinct_hosts) return true;
      if (candidate.size != static_cast<std::size_t>(replicas)) return false;
      const LevelIndex host = topology_->host_level();
      for (std::size_t i = 0; i < candidate.size; ++i) {
        for (std::size_t j = i + 1; j < candidate.size; ++j) {
          if (topology_->ancestor_at(units_[candidate.members[i]], host) ==
              topology_->ancestor_at(units_[candidate.members[j]], host)) {
            return false;
          }
        }
      }
      return true;
    };
    const auto consider = [&](const UnitSet& candidate) {
      if (!apart(candidate)) return;
      double best_split = std::numeric_limits<double>::infinity();
      const auto recurse = [&](const auto& self, std::size_t at, std::int32_t left, double sum) -> void {
        const std::size_t unit = candidate.members[at];
        if (at + 1 == candidate.size) {
          best_split = std::min(best_split, sum + costs[unit * width + static_cast<std::size_t>(left)]);
          return;
        }
        for (std::int32_t take = 1; take <= left - static_cast<std::int32_t>(candidate.size - at - 1); ++take) {
          self(self, at + 1, left - take, sum + costs[unit * width + static_cast<std::size_t>(take)]);
        }
      };
      recurse(recurse, 0, replicas, 0.0);
      if (std::isfinite(best_split))
        sets.push_back({conservative(best_split, 3.0), candidate.members, candidate.size});
    };
    const auto n = static_cast<std::uint32_t>(units_.size());
    UnitSet candidate;
    for (std::uint32_t a = 0; a < n; ++a) {
      candidate.members[0] = a;
      candidate.size = 1;
      consider(candidate);
      for (std::uint32_t b = a + 1; b < n && replicas >= 2; ++b) {
        candidate.members[1] = b;
        candidate.size = 2;
        consider(candidate);
        for (std::uint32_t c = b + 1; c < n && replicas >= 3; ++c) {
          candidate.members[2] = c;
          candidate.size = 3;
          consider(candidate);
        }
      }
    }
    std::sort(sets.begin(), sets.end(), [](const UnitSet& x, const UnitSet& y) {
      if (x.bound != y.bound) return x.bound < y.bound;
      return std::lexicographical_compare(x.members.begin(), x.members.begin() + static_cast<std::ptrdiff_t>(x.size),
                                          y.members.begin(), y.members.begin() + static_cast<std::ptrdiff_t>(y.size));
    });
    return sets;
  }

  /// The target's units, ascending.
  [[nodiscard]] const std::vector<DomainId>& units() const noexcept { return units_; }

  /// `costs[u * (R + 1) + s]`: a lower bound on what letting unit u hold s replicas costs, every
  /// victim available, on the untouched state (0 where u already holds s; infinity where even
  /// every victim cannot make room).
  [[nodiscard]] std::vector<double> hosting_costs(const Allocation& state) {
    const OverlayView<Allocation> untouched(state);
    const ResolvedDemand& demand = problem_->tier->demand;
    const auto width = static_cast<std::size_t>(demand.replicas) + 1;
    std::vector<double> costs(units_.size() * width, 0.0);
    const auto every = [](std::size_t) { return true; };
    for (std::size_t u = 0; u < units_.size(); ++u) {
      const std::int64_t fits = replicas_that_fit(untouched, demand, units_[u]);
      for (std::size_t count = 1; count < width; ++count) {
        if (demand.distinct_hosts && count > 1) {
          costs[u * width + count] = std::numeric_limits<double>::infinity();  // one per host
          continue;
        }
        costs[u * width + count] = static_cast<std::int64_t>(count) <= fits
                                       ? 0.0
                                       : unit_cost(untouched, u, static_cast<std::int64_t>(count), every);
      }
    }
    return costs;
  }

  /// The bound with `view` as the state and only victims with `available(v)` still undecided.
  template <class Available>
  [[nodiscard]] double bound(const OverlayView<Allocation>& view, Available&& available) {
    if (!active()) return 0.0;
    const ResolvedDemand& demand = problem_->tier->demand;
    std::int64_t missing = demand.replicas;
    fits_.resize(units_.size());
    for (std::size_t u = 0; u < units_.size(); ++u) {
      fits_[u] = replicas_that_fit(view, demand, units_[u]);
      missing -= fits_[u];
    }
    if (missing <= 0) return 0.0;
    marginals_.clear();
    for (std::size_t u = 0; u < units_.size(); ++u) {
      double previous = 0.0;
      // Each cover is conservative, but a difference of two is not: the one subtracted may sit
      // below its exact value by its own rounding allowance, which the marginal then carries.
      const double allowance = (4.0 * static_cast<double>(unit_items_[u].size()) + 8.0) * 0x1p-52;
      // Under anti-affinity a unit holds one replica at most: no slot past the first.
      const std::int64_t slots =
          demand.distinct_hosts ? std::max<std::int64_t>(0, 1 - fits_[u]) : missing;
      for (std::int64_t s = 1; s <= std::min(missing, slots); ++s) {
        const double cost = unit_cost(view, u, fits_[u] + s, available);
        if (!std::isfinite(cost)) break;  // u cannot host more, whatever goes
        marginals_.emplace_back(std::max(0.0, cost - previous), previous * allowance);
        previous = cost;
      }
    }
    if (static_cast<std::int64_t>(marginals_.size()) < missing) return std::numeric_limits<double>::infinity();
    std::nth_element(marginals_.begin(), marginals_.begin() + (missing - 1), marginals_.end());
    double total = 0.0;
    double excess = 0.0;
    for (std::int64_t i = 0; i < missing; ++i) {
      total += marginals_[static_cast<std::size_t>(i)].first;
      excess += marginals_[static_cast<std::size_t>(i)].second;
    }
    return conservative(std::max(0.0, total - excess), static_cast<double>(missing) * 2.0);
  }

 private:
  struct Item {
    std::size_t victim;
    double price;       // the victim's cheapest price, shared among the units it touches
    std::size_t gains;  // offset of its per-dimension gains inside this unit in unit_gains_[u]
  };

  [[nodiscard]] bool measured_in_unit(std::size_t u, std::size_t dim) const {
    return topology_->schema().is_device(dim) ||
           topology_->capacity(units_[u])(static_cast<Eigen::Index>(dim)) > 0;
  }

  /// Fractional cost of fitting `replicas` in unit u (max over dimensions).
  template <class Available>
  double unit_cost(const OverlayView<Allocation>& view, std::size_t u, std::int64_t replicas,
                   Available& available) {
    double cost = 0.0;
    for (std::size_t k = 0; k < dims_.size(); ++k) {
      const std::size_t dim = dims_[k].first;
      if (dim != whole_device_dimension && !measured_in_unit(u, dim)) continue;
      const double free = dim == whole_device_dimension ? static_cast<double>(view.idle_devices(units_[u]))
                                                        : static_cast<double>(view.free(units_[u], dim));
      const double need = static_cast<double>(replicas) * dims_[k].second - free;
      if (need <= 0.0) continue;
      ratios_.clear();
      const std::vector<double>& gains = unit_gains_[u];
      for (const Item& item : unit_items_[u]) {
        const double gain = gains[item.gains + k];
        if (gain > 0.0 && available(item.victim)) ratios_.emplace_back(item.price / gain, gain);
      }
      cost = std::max(cost, fractional_cover(ratios_, need));
    }
    return cost;
  }

  const Topology* topology_;
  const DomainProblem* problem_;
  std::vector<DomainId> units_;
  std::vector<std::pair<std::size_t, double>> dims_;  // (dimension, per-replica demand)
  std::vector<std::vector<Item>> unit_items_;
  std::vector<std::vector<double>> unit_gains_;  // per unit: dims_.size() gains per item
  std::vector<std::int64_t> fits_;
  std::vector<std::pair<double, double>> marginals_;  // (marginal, its rounding excess)
  std::vector<std::pair<double, double>> ratios_;
};

/// `problem` restricted to the victims touching the units of `set` (or the pools above them):
/// a minimal victim set landing the gang on those units holds no other victim. `kept` maps
/// restricted victim indices back to `problem`'s.
inline void restrict_to_units(const Allocation& state, const DomainProblem& problem,
                              const std::vector<DomainId>& units, const UnitSet& set,
                              DomainProblem& restricted, std::vector<std::size_t>& kept) {
  const Topology& topology = state.topology();
  restricted.target = problem.target;
  restricted.tier = problem.tier;
  restricted.dims = problem.dims;
  restricted.measured_in = problem.measured_in;
  restricted.demand_total = problem.demand_total;
  restricted.need = problem.need;
  restricted.dimension_names = problem.dimension_names;
  restricted.grid = problem.grid;
  restricted.lower_bound = set.bound;
  restricted.victims.clear();
  kept.clear();
  for (std::size_t v = 0; v < problem.victims.size(); ++v) {
    const WorkloadView view = state.view(problem.victims[v].id);
    const bool touches = std::any_of(view.domains.begin(), view.domains.end(), [&](DomainId domain) {
      for (std::size_t m = 0; m < set.size; ++m) {
        const DomainId unit = units[set.members[m]];
        if (topology.contains(unit, domain)) return true;
        if (topology.contains(domain, unit) && topology.level(domain) >= topology.host_level()) return true;
      }
      return false;
    });
    if (!touches) continue;
    restricted.victims.push_back(problem.victims[v]);
    kept.push_back(v);
  }
}

}  // namespace topopreempt::detail
