// SPDX-License-Identifier: MIT
#pragma once
/// @file cost_model.hpp
/// `CostModel`: what evicting or shrinking one victim costs. Costs are additive over victims,
/// non-negative and finite; solvers minimise their sum.

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt {

/// A cost model prices two actions on a running workload `victim`:
/// - `evict(victim)`: preempt the whole gang;
/// - `shrink(victim, dropped)`: drop `dropped` (>= 1) replicas of an elastic workload.
/// Both must be finite, >= 0, and `shrink(v, k)` <= `evict(v)` is expected (not required).
/// Models are small value types; they must be safe to call concurrently (const, no state).
template <class Model>
concept CostModel = requires(const Model& model, const Workload& victim, std::int32_t dropped) {
  { model.evict(victim) } -> std::convertible_to<double>;
  { model.shrink(victim, dropped) } -> std::convertible_to<double>;
  { Model::name } -> std::convertible_to<std::string_view>;
};

/// Optional declaration that lets solvers bound a domain's cost without reading its occupants:
/// `least_price()` is a price no action (eviction or shrink) on any victim undercuts. Every
/// plan with k victims then costs at least k x least_price(), and since a decision is only
/// searched when the preemptor does not fit anywhere as things stand, every candidate domain
/// costs at least least_price(). Solvers check the declaration against every eligible victim's
/// prices (`check_price_sum`) and reject a model that breaks it. A model that declares nothing
/// gets the bound 0 (every feasible domain is then read, as before).
template <class Model>
concept PriceFloorModel = CostModel<Model> && requires(const Model& model) {
  { model.least_price() } -> std::convertible_to<double>;
};

/// Optional declaration that every action (eviction or any shrink) on every victim costs
/// exactly `uniform_price()` (`cost::victim_count`). `check_price_sum` then needs no pass over
/// the running workloads: the sum of n prices is n x uniform_price(). Solvers still price each
/// victim they read through `evict`/`shrink` and check each answer; a model that declares a
/// uniform price must return it from both.
template <class Model>
concept UniformPriceModel = PriceFloorModel<Model> && requires(const Model& model) {
  { model.uniform_price() } -> std::convertible_to<double>;
};

/// A lower bound on the price of any action (an eviction, or a shrink) on a victim of one
/// `IndexBand`: at least `per_victim + per_device_entry x` the device entries the action frees.
struct PriceRate {
  /// Least price of one victim.
  double per_victim = 0.0;
  /// Least price per device entry a victim frees.
  double per_device_entry = 0.0;
};

/// Optional declaration that lets solvers bound a domain's cost by its device deficit without
/// reading its occupants: `index_price_rate(band)` is a `PriceRate` no action on any victim of
/// `band` undercuts (both parts >= 0). A plan that frees N device entries in a domain then costs
/// at least `least per_victim + N x least per_device_entry` over the domain's bands (one victim
/// at least, N entries at least), whatever the victims; solvers take domains in that bound's
/// order and leave those whose bound cannot win unread (see docs/costs.md). `check_price_sum`
/// checks the declaration against every eligible victim's prices and rejects a model that
/// breaks it. A victim "of `band`" is any workload of its priority whose own band
/// (`Allocation::index_band_of`) has extremes no smaller (`least_*`) and no larger
/// (`most_entries_per_victim`) than `band`'s: solvers also ask for the rate of a band whose
/// least lost work is its `second_least_lost_work_per_entry`, a bound for every victim but the
/// cheapest (built-in rates rise with the `least_*` fields and fall with the most entries).
/// Declared by `lost_work`, `reload_time`, `priority_weighted`, `kubernetes_order`
/// and `weighted_sum` (when a part declares it); a model that declares nothing keeps the
/// declared price floor alone.
template <class Model>
concept IndexPricedModel = CostModel<Model> && requires(const Model& model, const IndexBand& band) {
  { model.index_price_rate(band) } -> std::same_as<PriceRate>;
};

/// The declared `index_price_rate` of `model` for `band`, or {0, 0} when it declares none.
template <CostModel Model>
[[nodiscard]] PriceRate index_price_rate_of(const Model& model, const IndexBand& band) {
  if constexpr (IndexPricedModel<Model>) {
    return model.index_price_rate(band);
  } else {
    return {};
  }
}

/// Optional, with `IndexPricedModel`: `index_action_price(band)` is a price no single action (an
/// eviction, or a shrink by any number of replicas) on a victim of `band` undercuts (>= 0). It
/// may read the band's per-replica leasts (`IndexBand::least_lost_work_per_replica`,
/// `least_model_gib_per_replica`): every action drops at least one replica. Solvers bound a
/// domain's cost by it too, since a plan that frees anything there takes at least one action
/// on a victim of one of its bands (see docs/costs.md). `check_price_sum` and the solvers check
/// it against every eligible victim they price, exactly (no allowance for rounding, unlike the
/// rate): solvers use it unlowered. Declared by `lost_work`, `reload_time`, `kubernetes_order`,
/// and `weighted_sum` when a part declares a rate.
template <class Model>
concept IndexActionPricedModel =
    IndexPricedModel<Model> && requires(const Model& model, const IndexBand& band) {
  { model.index_action_price(band) } -> std::convertible_to<double>;
};

/// The least price of one action on a victim of `band` that `model` declares: its
/// `index_action_price` (exact: `check_price_sum` holds every price to it, with no allowance
/// for rounding, so a domain whose bound it is and equals the best plan's cost is pruned), else
/// its rate for one device entry (an action frees at least one), lowered by the allowance
/// within which the rate is checked, or 0 when it declares no rate.
template <CostModel Model>
[[nodiscard]] double index_action_price_of(const Model& model, const IndexBand& band) {
  if constexpr (IndexActionPricedModel<Model>) {
    return static_cast<double>(model.index_action_price(band));
  } else if constexpr (IndexPricedModel<Model>) {
    const PriceRate rate = model.index_price_rate(band);
    const double one_entry = rate.per_victim + rate.per_device_entry;
    return one_entry > 0.0 ? one_entry - one_entry * 0x1p-46 : 0.0;
  } else {
    return 0.0;
  }
}

/// The declared price floor of `model`, or 0 when it declares none.
template <CostModel Model>
[[nodiscard]] double least_price_of(const Model& model) {
  if constexpr (PriceFloorModel<Model>) {
    return static_cast<double>(model.least_price());
  } else {
    return 0.0;
  }
}

/// Optional declaration that every price the model returns is a whole multiple of
/// `cost_grid()` (a power of two; 1 for integer-valued models), or that it declares none (0). With
/// a grid, solvers compute every cost exactly: `check_price_sum` verifies each eligible victim's
/// prices against the grid and that they sum to at most 2^53 grid steps, so every sum of prices any
/// solver forms (in any order) is exact in double, comparisons are exact, and a fractional lower
/// bound may be rounded up to the next grid step (see docs/costs.md).
template <class Model>
concept GridPriceModel = CostModel<Model> && requires(const Model& model) {
  { model.cost_grid() } -> std::convertible_to<double>;
};

/// The declared cost grid of `model`, or 0 when it declares none.
template <CostModel Model>
[[nodiscard]] double cost_grid_of(const Model& model) {
  if constexpr (GridPriceModel<Model>) {
    return static_cast<double>(model.cost_grid());
  } else {
    return 0.0;
  }
}

/// A plan's actions as a cost model reads them: each victim with its dropped-replica count
/// (0: evicted).
using PricedActions = std::vector<std::pair<const Workload*, std::int32_t>>;

/// Optional: `describe_cost(actions)` tells a plan's cost by its parts ("2 victim(s) x
/// 2147483648 + priority sum 3") where the bare number would hide them; plan explanations
/// print it next to the cost.
template <class Model>
concept DescribedCostModel = CostModel<Model> &&
    requires(const Model& model, const PricedActions& actions) {
  { model.describe_cost(actions) } -> std::convertible_to<std::string>;
};

/// 2^53: sums of grid multiples up to this many grid steps are exact in double.
inline constexpr double exact_grid_steps = 9007199254740992.0;

namespace cost {

/// Number of disrupted workloads: 1 per eviction, 1 per shrink.
struct victim_count {
  /// The name plans carry.
  static constexpr std::string_view name = "victim_count";
  /// 1 per eviction.
  [[nodiscard]] double evict(const Workload&) const noexcept { return 1.0; }
  /// 1 per shrink, whatever it drops.
  [[nodiscard]] double shrink(const Workload&, std::int32_t) const noexcept { return 1.0; }
  /// Every action costs 1.
  [[nodiscard]] double least_price() const noexcept { return 1.0; }
  /// Every action costs exactly 1 (no victim is dearer either).
  [[nodiscard]] double uniform_price() const noexcept { return 1.0; }
  /// Integer-valued: costs are exact.
  [[nodiscard]] double cost_grid() const noexcept { return 1.0; }
};

/// Priority-weighted: `priority + offset` per evicted workload (offset 2^31 makes every int32
/// priority positive, as the topology-aware preemption paper does), pro rata per dropped
/// replica for a shrink, rounded up to a whole unit so that every cost is an exact integer
/// (with a whole offset). Prefers few, low-priority victims. A plan's cost is
/// `victims x offset + priority sum` (shrinks counted pro rata): `describe_cost` shows the parts.
struct priority_weighted {
  /// The name plans carry.
  static constexpr std::string_view name = "priority_weighted";
  /// Added to every victim's priority (2^31: the paper's weighting).
  double offset = 2147483648.0;
  /// `priority + offset`.
  [[nodiscard]] double evict(const Workload& victim) const noexcept {
    return static_cast<double>(victim.priority) + offset;
  }
  /// `priority + offset` pro rata to the replicas dropped, rounded up to a whole number.
  [[nodiscard]] double shrink(const Workload& victim, std::int32_t dropped) const noexcept {
    const double whole = evict(victim);
    const std::int32_t replicas = std::max(victim.replicas, 1);
    if (!whole_offset() || !(whole >= 0.0)) return whole * dropped / replicas;
    // (priority + offset) x dropped < 2^63 for a whole offset below 2^31 x 2: exact in int64.
    const auto units = static_cast<std::int64_t>(whole);
    if (units > (std::int64_t{1} << 62) / std::max(dropped, 1)) {
      return std::ceil(whole * dropped / replicas);  // out of int64: still a whole number
    }
    const std::int64_t scaled = units * dropped;
    return static_cast<double>(scaled / replicas + (scaled % replicas != 0 ? 1 : 0));
  }
  /// 1 (integer prices) when the offset is a whole number below 2^52, else none.
  [[nodiscard]] double cost_grid() const noexcept { return whole_offset() ? 1.0 : 0.0; }
  /// An eviction costs `priority + offset` and frees at most the gang's device entries; a
  /// shrink pays the same share of it per dropped replica: at least `(priority + offset) /
  /// most entries per victim` per entry freed.
  [[nodiscard]] PriceRate index_price_rate(const IndexBand& band) const noexcept {
    const double whole = static_cast<double>(band.priority) + offset;
    if (!(whole > 0.0) || band.most_entries_per_victim <= 0) return {};
    return {0.0, whole / static_cast<double>(band.most_entries_per_victim)};
  }
  /// "2 victims x 2147483648 + priority sum 3" for a plan whose victims are `evicted` (with
  /// their dropped-replica counts for shrinks; 0 means evicted).
  template <class Range>
  [[nodiscard]] std::string describe_cost(const Range& actions) const {
    double weight = 0.0;
    double priorities = 0.0;
    for (const auto& [victim, dropped] : actions) {
      const double share =
          dropped == 0 ? 1.0 : static_cast<double>(dropped) / std::max(victim->replicas, 1);
      weight += share;
      priorities += share * victim->priority;
    }
    const auto number = [](double value) {
      if (value == std::floor(value) && std::abs(value) < 9.0e15) {
        return std::to_string(static_cast<long long>(value));
      }
      return std::to_string(value);
    };
    return number(weight) + " victim(s) x " + number(offset) + " + priority sum " +
           number(priorities);
  }

 private:
  [[nodiscard]] bool whole_offset() const noexcept {
    return offset == std::floor(offset) && std::abs(offset) < 4503599627370496.0;
  }
};

/// Kubernetes' DefaultPreemption order as an additive cost. Kubernetes picks the node whose
/// victims have (1) the lowest highest priority, then (2) the smallest priority sum, then
/// (3) the fewest victims. Each victim costs the weight of its priority's rank (rank 0 = lowest
/// distinct priority in `priorities`):
/// - by default (`base` 0) a mixed radix: weight(0) = 1 and weight(r + 1) = weight(r) x
///   (1 + entries of rank r in `priorities`), so one victim of a rank costs more than every
///   listed workload of lower ranks together. With `priorities` listing every running
///   workload's priority (`of(state)` does), any two victim sets compare exactly as Kubernetes'
///   criterion (1) says, ties broken by fewer victims at each priority from the top;
/// - with `base` >= 2 (a whole number): `base^rank`, the 0.4 encoding (lexicographic while a
///   set has fewer than `base` victims of each lower rank).
/// Prices are exact integers (cost grid 1); the constructor rejects weights above 2^53, and
/// `check_price_sum` any set of eligible victims whose weights sum past 2^53.
class kubernetes_order {
 public:
  /// The name plans carry.
  static constexpr std::string_view name = "kubernetes_order";
  /// `priorities`: every priority a victim may have (e.g. each running workload's priority,
  /// duplicates included: they size the default radix). `base`: 0 for the exact mixed radix,
  /// else a whole number >= 2.
  explicit kubernetes_order(std::vector<std::int32_t> priorities, double base = 0.0) : base_(base) {
    if (!(base_ == 0.0 || (base_ >= 2.0 && base_ == std::floor(base_)))) {
      throw std::invalid_argument(
          "kubernetes_order: base must be 0 (exact mixed radix) or a whole number >= 2, not " +
          std::to_string(base_));
    }
    std::sort(priorities.begin(), priorities.end());
    double weight = 1.0;
    for (std::size_t i = 0; i < priorities.size();) {
      std::size_t j = i;
      while (j < priorities.size() && priorities[j] == priorities[i]) ++j;
      if (weight > exact_grid_steps) {
        throw std::invalid_argument("kubernetes_order: the weight of priority " +
                                    std::to_string(priorities[i]) +
                                    " passes 2^53, where costs would no longer be exact; use fewer "
                                    "priorities or a smaller base");
      }
      priorities_.push_back(priorities[i]);
      weights_.push_back(weight);
      weight *= base_ == 0.0 ? static_cast<double>(j - i + 1) : base_;
      i = j;
    }
  }
  /// Collects the priorities of every running workload of `state` (the exact mixed radix by
  /// default).
  [[nodiscard]] static kubernetes_order of(const Allocation& state, double base = 0.0) {
    std::vector<std::int32_t> priorities;
    state.for_each_workload([&](const Workload& w) { priorities.push_back(w.priority); });
    return kubernetes_order(std::move(priorities), base);
  }
  /// The weight of the victim's priority rank; throws for a priority not given at construction.
  [[nodiscard]] double evict(const Workload& victim) const {
    const auto it = std::lower_bound(priorities_.begin(), priorities_.end(), victim.priority);
    if (it == priorities_.end() || *it != victim.priority) {
      throw std::invalid_argument("kubernetes_order: priority " + std::to_string(victim.priority) +
                                  " of " + victim.label() + " was not registered");
    }
    return weights_[static_cast<std::size_t>(it - priorities_.begin())];
  }
  /// As an eviction: Kubernetes counts a disrupted pod whole.
  [[nodiscard]] double shrink(const Workload& victim, std::int32_t) const { return evict(victim); }
  /// The lowest rank costs 1.
  [[nodiscard]] double least_price() const noexcept { return 1.0; }
  /// Every action on a victim costs its rank's weight and frees at most the gang's device
  /// entries. The weight is that of the highest registered priority at or below the band's
  /// (weights grow with rank; an unregistered priority is rejected when priced anyway).
  [[nodiscard]] PriceRate index_price_rate(const IndexBand& band) const noexcept {
    if (band.most_entries_per_victim <= 0) return {};
    return {0.0, band_weight(band) / static_cast<double>(band.most_entries_per_victim)};
  }
  /// Every action (a shrink prices as an eviction) costs its rank's weight: the band's.
  [[nodiscard]] double index_action_price(const IndexBand& band) const noexcept {
    return band_weight(band);
  }
  /// Integer-valued: costs are exact.
  [[nodiscard]] double cost_grid() const noexcept { return 1.0; }
  /// "priority 5: 1, priority 2: 3" (victims per priority, highest first), the order
  /// Kubernetes compares.
  template <class Range>
  [[nodiscard]] std::string describe_cost(const Range& actions) const {
    std::vector<std::int32_t> seen;
    for (const auto& [victim, dropped] : actions) seen.push_back(victim->priority);
    std::sort(seen.begin(), seen.end(), std::greater<>());
    std::string text;
    for (std::size_t i = 0; i < seen.size();) {
      std::size_t j = i;
      while (j < seen.size() && seen[j] == seen[i]) ++j;
      text += (text.empty() ? "" : ", ") + std::string("priority ") + std::to_string(seen[i]) +
              ": " + std::to_string(j - i);
      i = j;
    }
    return "victims per priority, highest first: " + (text.empty() ? std::string("none") : text);
  }

 private:
  /// The weight of the highest registered priority at or below the band's (1 below all).
  [[nodiscard]] double band_weight(const IndexBand& band) const noexcept {
    const auto it = std::upper_bound(priorities_.begin(), priorities_.end(), band.priority);
    return it == priorities_.begin()
               ? 1.0
               : weights_[static_cast<std::size_t>(it - priorities_.begin()) - 1];
  }

  std::vector<std::int32_t> priorities_;  // distinct, ascending
  std::vector<double> weights_;           // per rank
  double base_;
};

/// Lost work: GPU-seconds since the last checkpoint (whole devices, or the share in GPUs,
/// times replicas times `seconds_since_checkpoint`), plus `floor` per victim so that a victim
/// that just checkpointed is still not free to evict.
struct lost_work {
  /// The name plans carry.
  static constexpr std::string_view name = "lost_work";
  /// Added per victim, so that a just-checkpointed victim is not free.
  double floor = 1.0;
  /// Whole devices per replica, or a share's fraction of one (`device_units_per_replica`).
  [[nodiscard]] static double gpus_per_replica(const Workload& victim) noexcept {
    return device_units_per_replica(victim);
  }
  /// Device-seconds since the last checkpoint, all replicas, plus `floor`.
  [[nodiscard]] double evict(const Workload& victim) const noexcept {
    return floor + gpus_per_replica(victim) * victim.replicas *
                       std::max(victim.cost.seconds_since_checkpoint, 0.0);
  }
  /// The same, for the dropped replicas only, plus `floor`.
  [[nodiscard]] double shrink(const Workload& victim, std::int32_t dropped) const noexcept {
    return floor +
           gpus_per_replica(victim) * dropped * std::max(victim.cost.seconds_since_checkpoint, 0.0);
  }
  /// Lost work is never negative: `floor` per victim.
  [[nodiscard]] double least_price() const noexcept { return std::max(floor, 0.0); }
  /// `floor` per victim plus the band's least lost work per device entry for each entry freed
  /// (an action dropping k replicas frees at most k x entries per replica and loses k x
  /// devices per replica x seconds since checkpoint). Nothing with a negative floor.
  [[nodiscard]] PriceRate index_price_rate(const IndexBand& band) const noexcept {
    if (!(floor >= 0.0)) return {};
    return {floor, band.least_lost_work_per_entry};
  }
  /// `floor` plus the band's least lost work of one replica: an action drops one at least.
  [[nodiscard]] double index_action_price(const IndexBand& band) const noexcept {
    if (!(floor >= 0.0)) return 0.0;
    return floor + band.least_lost_work_per_replica;
  }
};

/// Model reload cost (Compass): seconds to load the victim's model back into GPU memory,
/// `model_size_gib / bandwidth_gib_per_s` per replica, plus `floor` per victim.
struct reload_time {
  /// The name plans carry.
  static constexpr std::string_view name = "reload_time";
  /// Model load bandwidth, GiB/s (> 0).
  double bandwidth_gib_per_s = 2.0;
  /// Added per victim.
  double floor = 1.0;
  /// Seconds to reload the model on every replica, plus `floor`.
  [[nodiscard]] double evict(const Workload& victim) const noexcept {
    return floor +
           victim.replicas * std::max(victim.cost.model_size_gib, 0.0) / bandwidth_gib_per_s;
  }
  /// The same, for the dropped replicas only, plus `floor`.
  [[nodiscard]] double shrink(const Workload& victim, std::int32_t dropped) const noexcept {
    return floor + dropped * std::max(victim.cost.model_size_gib, 0.0) / bandwidth_gib_per_s;
  }
  /// `floor` per victim (the reload time is >= 0 for a positive bandwidth, else no floor).
  [[nodiscard]] double least_price() const noexcept {
    return bandwidth_gib_per_s > 0.0 ? std::max(floor, 0.0) : 0.0;
  }
  /// `floor` per victim plus the band's least model size per device entry over the bandwidth
  /// for each entry freed. Nothing with a negative floor or a bandwidth that is not positive.
  [[nodiscard]] PriceRate index_price_rate(const IndexBand& band) const noexcept {
    if (!(floor >= 0.0) || !(bandwidth_gib_per_s > 0.0)) return {};
    return {floor, band.least_model_gib_per_entry / bandwidth_gib_per_s};
  }
  /// `floor` plus the reload of the band's least model of one replica (one dropped at least).
  [[nodiscard]] double index_action_price(const IndexBand& band) const noexcept {
    if (!(floor >= 0.0) || !(bandwidth_gib_per_s > 0.0)) return 0.0;
    return floor + band.least_model_gib_per_replica / bandwidth_gib_per_s;
  }
};

/// `first_weight * First + second_weight * Second`: combine any two models.
template <CostModel First, CostModel Second>
struct weighted_sum {
  /// The name plans carry.
  static constexpr std::string_view name = "weighted_sum";
  /// The first model.
  First first;
  /// The second model.
  Second second;
  /// Weight of the first (>= 0).
  double first_weight = 1.0;
  /// Weight of the second (>= 0).
  double second_weight = 1.0;
  /// `first_weight x first + second_weight x second`.
  [[nodiscard]] double evict(const Workload& victim) const {
    return first_weight * first.evict(victim) + second_weight * second.evict(victim);
  }
  /// `first_weight x first + second_weight x second`.
  [[nodiscard]] double shrink(const Workload& victim, std::int32_t dropped) const {
    return first_weight * first.shrink(victim, dropped) +
           second_weight * second.shrink(victim, dropped);
  }
  /// Declared when both parts declare one and both weights are >= 0.
  [[nodiscard]] double least_price() const requires PriceFloorModel<First> &&
      PriceFloorModel<Second> {
    if (!(first_weight >= 0.0) || !(second_weight >= 0.0)) return 0.0;
    return first_weight * first.least_price() + second_weight * second.least_price();
  }
  /// The weighted sum of the parts' rates (a part that declares none counts 0: its prices are
  /// >= 0). Declared when either part declares one; nothing with a negative weight.
  [[nodiscard]] PriceRate index_price_rate(const IndexBand& band) const requires
      IndexPricedModel<First> || IndexPricedModel<Second> {
    if (!(first_weight >= 0.0) || !(second_weight >= 0.0)) return {};
    const PriceRate a = index_price_rate_of(first, band);
    const PriceRate b = index_price_rate_of(second, band);
    return {first_weight * a.per_victim + second_weight * b.per_victim,
            first_weight * a.per_device_entry + second_weight * b.per_device_entry};
  }
  /// The weighted sum of the parts' least action prices (`index_action_price_of`: a part
  /// without one gives its rate for one entry, or 0). Nothing with a negative weight.
  [[nodiscard]] double index_action_price(const IndexBand& band) const requires
      IndexPricedModel<First> || IndexPricedModel<Second> {
    if (!(first_weight >= 0.0) || !(second_weight >= 0.0)) return 0.0;
    return first_weight * index_action_price_of(first, band) +
           second_weight * index_action_price_of(second, band);
  }
};

}  // namespace cost

/// Checks a model's answer: finite and non-negative, else `std::invalid_argument` naming the
/// model and the victim (solvers call this; a bad price must not produce a silent plan).
[[nodiscard]] inline double checked_cost(double value, std::string_view model,
                                         const Workload& victim) {
  if (!std::isfinite(value) || value < 0.0) {
    throw std::invalid_argument("cost model '" + std::string(model) + "' priced " + victim.label() +
                                " at " + std::to_string(value) + "; costs must be finite and >= 0");
  }
  return value;
}

namespace detail {

/// Throws `std::invalid_argument` naming the model when its declared `least_price()` (and
/// `uniform_price()`, if declared) is not finite and >= 0, or the uniform price undercuts the
/// floor. Returns the floor.
template <CostModel Model>
double checked_price_declarations(const Model& model) {
  const double floor = least_price_of(model);
  if (!std::isfinite(floor) || floor < 0.0) {
    throw std::invalid_argument("cost model '" + std::string(Model::name) +
                                "' declares least_price() " + std::to_string(floor) +
                                "; it must be finite and >= 0");
  }
  const double grid = cost_grid_of(model);
  // A power of two: bound / grid and k x grid are then exact in double.
  int exponent = 0;
  if (!std::isfinite(grid) || grid < 0.0 || (grid > 0.0 && std::frexp(grid, &exponent) != 0.5)) {
    throw std::invalid_argument("cost model '" + std::string(Model::name) +
                                "' declares cost_grid() " + std::to_string(grid) +
                                "; it must be 0 (none) or a power of two");
  }
  if constexpr (UniformPriceModel<Model>) {
    const auto uniform = static_cast<double>(model.uniform_price());
    if (!std::isfinite(uniform) || uniform < floor) {
      throw std::invalid_argument("cost model '" + std::string(Model::name) +
                                  "' declares uniform_price() " + std::to_string(uniform) +
                                  "; it must be finite and >= least_price() " +
                                  std::to_string(floor));
    }
  }
  return floor;
}

/// The prices of one victim that bound what solvers form from it: its cheapest action among
/// eviction and the shrinks that keep a replica (what a scan's fractional bound charges for the
/// victim's whole gain), and its dearest action (what any sum of its prices is bounded by).
struct VictimPriceRange {
  double cheapest = 0.0;
  double dearest = 0.0;
};

/// Prices every action on one eligible victim (eviction and each shrink), checks each price
/// (valid, on the declared grid, none below `floor`) and returns the range of them.
template <CostModel Model>
VictimPriceRange checked_price_range(const Model& model, const Workload& victim, double floor) {
  // A declared grid lets solvers round bounds up to it: an off-grid price would make them wrong.
  // Checked in the same pass that prices the actions (once each: this runs per victim read),
  // and reported after every price was found valid, first off-grid action first.
  const double grid = cost_grid_of(model);
  double off_grid = std::numeric_limits<double>::quiet_NaN();
  const auto priced = [&](auto price) {
    const double value = checked_cost(static_cast<double>(price), Model::name, victim);
    if (grid > 0.0 && std::isnan(off_grid) && std::fmod(value, grid) != 0.0) off_grid = value;
    return value;
  };
  const double evict = priced(model.evict(victim));
  VictimPriceRange range{evict, evict};
  double cheapest_any = evict;
  const std::int32_t kept_shrinks = std::min(victim.shrinkable_replicas(), victim.replicas - 1);
  for (std::int32_t dropped = 1; dropped <= victim.shrinkable_replicas(); ++dropped) {
    const double price = priced(model.shrink(victim, dropped));
    range.dearest = std::max(range.dearest, price);
    cheapest_any = std::min(cheapest_any, price);
    if (dropped <= kept_shrinks) range.cheapest = std::min(range.cheapest, price);
  }
  if (!std::isnan(off_grid)) {
    throw std::invalid_argument("cost model '" + std::string(Model::name) + "' prices " +
                                victim.label() + " at " + std::to_string(off_grid) +
                                ", not a multiple of its declared cost_grid() " +
                                std::to_string(grid));
  }
  // A declared floor lets solvers prune domains unread: a price below it would make plans wrong.
  if (cheapest_any < floor) {
    throw std::invalid_argument("cost model '" + std::string(Model::name) + "' prices " +
                                victim.label() + " at " + std::to_string(cheapest_any) +
                                ", below its declared least_price() " + std::to_string(floor));
  }
  return range;
}

/// Checks one eligible victim's prices (each valid, none below `floor`) and returns its
/// dearest action's price.
template <CostModel Model>
double checked_dearest_price(const Model& model, const Workload& victim, double floor) {
  return checked_price_range(model, victim, floor).dearest;
}

/// Checks a declared `index_price_rate` against one eligible victim: both parts finite and
/// >= 0, and no action on the victim cheaper than the rate of the band it alone forms (`band`)
/// says for the device entries that action frees. Throws `std::invalid_argument` naming the
/// model and the victim otherwise: solvers leave domains unread on this declaration.
template <CostModel Model>
void check_index_price_rate(const Model& model, const Workload& victim, const IndexBand& band) {
  if constexpr (IndexPricedModel<Model>) {
    const PriceRate rate = model.index_price_rate(band);
    if (!std::isfinite(rate.per_victim) || rate.per_victim < 0.0 ||
        !std::isfinite(rate.per_device_entry) || rate.per_device_entry < 0.0) {
      throw std::invalid_argument(
          "cost model '" + std::string(Model::name) + "' declares index_price_rate {" +
          std::to_string(rate.per_victim) + ", " + std::to_string(rate.per_device_entry) +
          "} for " + victim.label() + "; both parts must be finite and >= 0");
    }
    if (band.most_entries_per_victim <= 0) return;
    // Declared: checked exactly. Derived from the rate, it is checked with the rate.
    const double action = IndexActionPricedModel<Model> ? index_action_price_of(model, band) : 0.0;
    if (!std::isfinite(action) || action < 0.0) {
      throw std::invalid_argument("cost model '" + std::string(Model::name) +
                                  "' declares index_action_price " + std::to_string(action) +
                                  " for " + victim.label() + "; it must be finite and >= 0");
    }
    const std::int64_t per_replica = band.most_entries_per_victim / std::max(victim.replicas, 1);
    for (std::int32_t dropped = 0; dropped <= victim.shrinkable_replicas(); ++dropped) {
      const double price = dropped == 0 ? static_cast<double>(model.evict(victim))
                                        : static_cast<double>(model.shrink(victim, dropped));
      const auto entries =
          static_cast<double>((dropped == 0 ? victim.replicas : dropped) * per_replica);
      // Lowered by a few units of roundoff: the model computes its price in its own order.
      const double declared = rate.per_victim + rate.per_device_entry * entries;
      if (price < declared - declared * 0x1p-49) {
        throw std::invalid_argument(
            "cost model '" + std::string(Model::name) + "' prices " + victim.label() + " at " +
            std::to_string(price) + ", below its declared index_price_rate (" +
            std::to_string(declared) + " for " + std::to_string(entries) + " device entries)");
      }
      // Exact, unlike the rate: solvers prune a domain whose bound this is at the best cost.
      if (price < action) {
        throw std::invalid_argument("cost model '" + std::string(Model::name) + "' prices " +
                                    victim.label() + " at " + std::to_string(price) +
                                    ", below its declared index_action_price (" +
                                    std::to_string(action) + ")");
      }
    }
  }
}

/// The error `check_price_sum` raises when the prices of a model with a cost grid sum past
/// 2^53 grid steps, where sums of its prices would start to round.
template <CostModel Model>
[[noreturn]] void throw_inexact_price_sum(const Workload& preemptor, double total, double grid) {
  throw std::invalid_argument("cost model '" + std::string(Model::name) +
                              "': the prices of the victims " + preemptor.label() +
                              " may preempt sum to " + std::to_string(total) +
                              ", past 2^53 x its cost grid " + std::to_string(grid) +
                              "; costs would no longer be exact: rescale the model");
}

/// Whether `total` (a sum of prices on `grid`) passes the range where sums are exact.
[[nodiscard]] inline bool past_exact_range(double total, double grid) noexcept {
  return grid > 0.0 && !(total <= exact_grid_steps * grid);
}

/// The error `check_price_sum` raises when the prices sum past the largest double.
template <CostModel Model>
[[noreturn]] void throw_price_sum_overflow(const Workload& preemptor) {
  throw std::invalid_argument("cost model '" + std::string(Model::name) + "': the prices of the " +
                              "victims " + preemptor.label() + " may preempt sum past the " +
                              "largest double (1.8e308); rescale the model");
}

}  // namespace detail

/// Rejects a model whose prices cannot all be added up: throws `std::invalid_argument` naming
/// the model when the prices of every victim `preemptor` may have in `state` (preemptible,
/// strictly lower priority), each at its dearest action (eviction or any shrink), sum past the
/// largest finite double. Every plan's cost is at most that sum, so below it no cost or bound
/// of any solver can overflow to infinity (which would read as "no plan", a wrong
/// `infeasible`); above it the model must be rescaled. Also rejects an invalid single price
/// (see `checked_cost`), and a model whose declared `least_price()` (see `PriceFloorModel`) is
/// not finite and >= 0 or is undercut by some victim's price, and, for a `GridPriceModel`, a
/// price off its grid or prices summing past 2^53 grid steps. The baselines call this first;
/// the three solvers check the same things domain by domain, on the victims of the domains they
/// read (`docs/model.md#cost-models`). Cost: one pass over the running workloads, or O(1) for a
/// `UniformPriceModel` whose price times the number of running workloads is finite (its prices
/// are declared, not read).
template <CostModel Model>
void check_price_sum(const Allocation& state, const Workload& preemptor, const Model& model) {
  const double floor = detail::checked_price_declarations(model);
  const double grid = cost_grid_of(model);
  if constexpr (UniformPriceModel<Model>) {
    const double most =
        static_cast<double>(model.uniform_price()) * static_cast<double>(state.size());
    if (std::isfinite(most) && !detail::past_exact_range(most, grid)) return;
  }
  double total = 0.0;
  state.for_each_workload([&](const Workload& victim) {
    if (!victim.preemptible || victim.priority >= preemptor.priority) return;
    total += detail::checked_dearest_price(model, victim, floor);
    if constexpr (IndexPricedModel<Model>)
      detail::check_index_price_rate(model, victim, state.index_band_of(victim));
  });
  if (!std::isfinite(total)) detail::throw_price_sum_overflow<Model>(preemptor);
  if (detail::past_exact_range(total, grid))
    detail::throw_inexact_price_sum<Model>(preemptor, total, grid);
}

}  // namespace topopreempt
