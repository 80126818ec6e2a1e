// SPDX-License-Identifier: MIT
#pragma once
/// @file preemption_context.hpp
/// What every solver shares: eligibility, topology tiers, candidate target domains, a cheap
/// scan of each domain with a fractional lower bound, an exact feasibility oracle, and the
/// assembly of the final plan with its explanation. Solvers differ only in how they choose
/// victims inside one target domain (`DomainSearch`).

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

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/capacity_view.hpp"
#include "topopreempt/solvers/cost_model.hpp"
#include "topopreempt/solvers/detail/decision_reuse.hpp"
#include "topopreempt/plan/detail/dependencies.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/plan/preemption_plan.hpp"

namespace topopreempt::detail {

using Clock = std::chrono::steady_clock;

/// One way to treat a candidate victim: evict it (no dropped replicas) or drop some replicas.
struct VictimOption {
  double cost = 0.0;
  std::vector<std::int32_t> dropped;  ///< empty = evict the whole gang
  std::vector<double> gain;           ///< freed per relaxation dimension (upper bound)
};

/// A running workload that may be preempted for the current target domain.
struct CandidateVictim {
  WorkloadId id;
  const Workload* workload = nullptr;
  std::vector<VictimOption> options;  ///< [0] = evict; then every shrink, fewest dropped first
  bool options_complete = true;       ///< false when shrink subsets were too many to list
};

/// Elastic victims with at most this many replicas in reach get every subset of them as a
/// shrink option (which replicas go matters); beyond it, prefixes only (and no exactness claim).
inline constexpr std::size_t max_enumerated_replicas = 7;

/// A relaxation dimension that cannot be covered: `have` of `need` (capacity, or what all
/// `victims` eligible victims would free).
struct Shortfall {
  std::size_t dim = 0;
  double have = 0.0;
  double need = 0.0;
  std::size_t victims = 0;
};

/// One topology tier: the demand with its levels made concrete (best-effort levels become
/// guaranteed at the tier's level) and the level of the candidate target domains.
struct Tier {
  ResolvedDemand demand;
  LevelIndex target_level = 0;
  int penalty = 0;  ///< levels short of the preferred ones (0 = preferred met)
  std::string label;
  std::vector<std::size_t> dims;  ///< relaxation dimensions (see PreemptionContext)
};

/// Reusable buffers of the per-domain scan, so scanning 10,000 domains allocates nothing
/// after the first few.
struct ScanWorkspace {
  /// Per-target accumulators of a batch.
  struct Target {
    DomainId reach;
    bool in_reach = false;
    std::size_t victims = 0;
    std::vector<DomainId> measured_in;
    std::vector<double> need;
    std::vector<double> total;
    std::vector<double> gain;
    std::vector<std::vector<std::pair<double, double>>> items;  // per dim: (cost ratio, gain)
  };
  std::vector<WorkloadId> seen;
  std::vector<Target> targets;
  std::vector<std::size_t> device_dims;  // relaxation dims fed by device entries
  std::vector<std::size_t> pooled_dims;  // relaxation dims fed by pool entries

  /// Makes room for `batch` targets of `dims` dimensions (keeps capacity).
  void resize(std::size_t batch, std::size_t dims) {
    if (targets.size() < batch) targets.resize(batch);
    for (std::size_t t = 0; t < batch; ++t) {
      if (targets[t].need.size() == dims) continue;
      auto& target = targets[t];
      target.measured_in.resize(dims);
      target.need.resize(dims);
      target.total.resize(dims);
      target.gain.resize(dims);
      target.items.resize(dims);
    }
  }
};

/// What the cheap scan learns about one target.
struct ScanResult {
  std::optional<Shortfall> shortfall;
  double bound = 0.0;
  std::size_t victims = 0;
};

/// Scan results of the candidate domains of one preemptor class and cost model, kept across
/// decisions (see `IncrementalDecider`): per tier and target (by ordinal in its level), the
/// result and a digest of the versions of the domains the scan read. A result is reused while
/// that digest is unchanged. Not thread-safe: one decision at a time.
struct ScanCache {
  struct Entry {
    std::uint64_t key = 0;
    bool valid = false;
    ScanResult result;
    /// The preemption index's verdict (`index_shortfall`), keyed by the versions of the
    /// domains whose aggregates it reads.
    std::uint64_t index_key = 0;
    bool index_valid = false;
    std::optional<Shortfall> index_verdict;
  };
  std::vector<std::vector<Entry>> tiers;
  /// What never changes for a tier's target (the topology alone decides it), computed once:
  /// per target `1 + 2 x dims` domains (its reach, where each relaxation dimension is
  /// measured, and the indexed domain that answers for each of those), and the static
  /// capacity verdict (`too_small`).
  struct TierShape {
    bool ready = false;
    std::size_t stride = 0;
    std::vector<DomainId> domains;
    std::vector<std::optional<Shortfall>> too_small;
  };
  std::vector<TierShape> shapes;
  std::uint64_t hits = 0;    ///< scans answered from the cache
  std::uint64_t misses = 0;  ///< scans done (and stored)
  /// Scratch of one batch, kept so that a batch (one per host) allocates nothing: the targets
  /// to scan and their version digests, computed once per target.
  std::vector<DomainId> stale_targets;
  std::vector<std::uint64_t> stale_keys;
  /// The per-host part of `check_price_sum`, and gang domains known not to hold the preemptor
  /// as things stand (the "fits already" check), kept by version too.
  PriceCheckCache prices;
  FitCache fits;
};

/// Marks the "whole idle devices" relaxation dimension.
inline constexpr std::size_t whole_device_dimension = std::numeric_limits<std::size_t>::max();

/// The victim-selection problem inside one target domain.
struct DomainProblem {
  DomainId target;
  const Tier* tier = nullptr;
  std::vector<CandidateVictim> victims;  ///< ascending id
  std::vector<std::size_t> dims;         ///< relaxation dimensions (schema index or whole devices)
  std::vector<DomainId> measured_in;     ///< where each relaxation dimension is measured
  std::vector<double> demand_total;      ///< the preemptor's total demand per relaxation dim
  std::vector<double> need;              ///< deficit per relaxation dimension (>= 0)
  std::vector<std::string> dimension_names;
  double lower_bound = 0.0;
  /// Victims of an earlier domain, kept with their buffers so that reading the next domain
  /// reuses them instead of allocating per victim (`build_problem`); not part of the problem.
  std::vector<CandidateVictim> spare;
  std::vector<std::int32_t> scratch_inside;   ///< `add_options`' scratch
  std::vector<std::int32_t> scratch_dropped;  ///< `add_options`' scratch
};

/// What a per-domain search found.
struct DomainOutcome {
  bool found = false;
  double cost = 0.0;
  std::vector<std::int32_t> choice;  ///< per victim: -1 = spared, else option index
  bool exact = false;                ///< proven minimum for this domain
  bool limit_reached = false;
  double lower_bound = 0.0;          ///< proven bound for this domain (== cost when exact)
  std::string note;                  ///< e.g. why an exact method was not applicable
  std::optional<DowngradeReason> downgrade;  ///< set when not exact for that reason (note: detail)
};

/// Why a domain lost, kept as numbers and formatted only for the few domains a plan lists.
struct Rejection {
  enum class Kind : std::uint8_t { too_small, hopeless, hopeless_unread, bound, bound_unread, costlier, no_better };
  DomainId domain;
  Kind kind = Kind::bound;
  Shortfall shortfall;
  double value = 0.0;  ///< the domain's bound or cost
  double best = 0.0;   ///< the best cost it was compared with
  std::string note;
};

/// Limits shared by solvers that honour them. `time_limit` bounds the whole `solve` from its
/// first instruction: the scan of every candidate domain as well as the search (solvers without
/// a setter run with the default 10 s). Reaching it ends the solve with the best plan so far
/// (`feasible`), or `infeasible` with `statistics.limit_reached` and an explanation saying that
/// infeasibility is not proven. Loading a snapshot is not part of `solve`.
struct SearchLimits {
  std::uint64_t max_nodes = 2'000'000;
  std::chrono::nanoseconds time_limit = std::chrono::seconds(10);
  /// Candidate domains still to be searched in this tier, the current one included (set per
  /// domain by `solve_with`): the last one may spend every node left.
  std::size_t domains_left = 1;
  /// Reads (scans) every candidate domain before searching any, as before the preemption
  /// index existed. Same costs and statuses, possibly a different domain among equal-cost
  /// ones; kept so that benchmarks measure both paths in one run.
  bool full_scan = false;
};

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
  /// Whether the deadline has passed (checked now, not amortised).
  [[nodiscard]] bool expired_now() noexcept {
    if (!expired_) expired_ = Clock::now() >= deadline_;
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

/// Cheapest fractional cover of `need` by items (cost per unit, units available): sorts `items`
/// by ratio and takes them in order. Infinity when all of them cannot cover `need`.
[[nodiscard]] inline double fractional_cover(std::vector<std::pair<double, double>>& items, double need) {
  std::sort(items.begin(), items.end());
  double cost = 0.0;
  for (const auto& [ratio, available] : items) {
    if (need <= 0.0) break;
    const double take = std::min(available, need);
    cost += take * ratio;
    need -= take;
  }
  return need > 1e-9 ? std::numeric_limits<double>::infinity() : cost;
}

/// Fractional covering bound: for each relaxation dimension, cover `need` with the cheapest
/// gain per unit cost (each victim at its best option ratio, up to its eviction gain); the
/// bound is the largest of these. Valid because any feasible choice must cover every
/// dimension's aggregate deficit and pays at least that ratio for what it frees.
[[nodiscard]] inline double fractional_bound(const std::vector<double>& need,
                                             const std::vector<CandidateVictim>& victims,
                                             std::size_t first = 0,
                                             std::vector<std::pair<double, double>>* scratch = nullptr) {
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

/// Everything a solver needs about one decision. Built once per `solve` call.
template <CostModel Model>
class PreemptionContext {
 public:
  /// `prices` (optional) keeps the per-host part of `check_price_sum` across decisions.
  PreemptionContext(const Allocation& state, const Workload& preemptor, const Model& model,
                    PriceCheckCache* prices = nullptr)
      : state_(state), preemptor_(preemptor), model_(model), topology_(state.topology()),
        demand_(ResolvedDemand::of(preemptor, state.topology())) {
    if (state.contains(preemptor.id)) {
      throw std::invalid_argument(preemptor.label() + " is already running; a preemptor must be pending");
    }
    if (prices != nullptr) {
      check_price_sum_reusing(state, preemptor, model, *prices);
    } else {
      check_price_sum(state, preemptor, model);
    }
    build_tiers();
  }

  [[nodiscard]] const Allocation& state() const noexcept { return state_; }
  [[nodiscard]] const Workload& preemptor() const noexcept { return preemptor_; }
  [[nodiscard]] const Topology& topology() const noexcept { return topology_; }
  [[nodiscard]] const ResolvedDemand& demand() const noexcept { return demand_; }
  [[nodiscard]] const std::vector<Tier>& tiers() const noexcept { return tiers_; }

  /// Only strictly lower-priority, preemptible workloads may be victims.
  [[nodiscard]] bool eligible(const Workload& workload) const noexcept {
    return workload.preemptible && workload.priority < preemptor_.priority;
  }

  /// Candidate target domains of a tier, ascending id.
  [[nodiscard]] std::span<const DomainId> targets(const Tier& tier) const {
    return topology_.domains_at(tier.target_level);
  }

  /// The domain whose subtree holds everything a target's replicas may draw from: the target,
  /// or the pool root above it when the target lies below the pools (e.g. a PCIe switch whose
  /// CPUs belong to its NUMA node).
  [[nodiscard]] DomainId reach(const Tier& tier, DomainId target) const {
    DomainId reach = target;
    for (Eigen::Index i = 0; i < tier.demand.pooled.size(); ++i) {
      if (tier.demand.pooled(i) == 0) continue;
      const DomainId root = pool_root(topology_, target, static_cast<std::size_t>(i));
      if (root.valid() && topology_.contains(root, reach)) reach = root;
    }
    return reach;
  }

  /// Relaxation dimensions of a tier: 0 = whole devices (if asked), then every device-share
  /// and pooled dimension with demand. `aggregate_domain` says where each is measured.
  [[nodiscard]] std::vector<std::size_t> relaxation_dims(const Tier& tier) const {
    std::vector<std::size_t> dims;
    if (tier.demand.whole_devices > 0) dims.push_back(whole_device_dim);
    for (Eigen::Index i = 0; i < tier.demand.pooled.size(); ++i) {
      if (tier.demand.pooled(i) > 0 || (tier.demand.has_share && tier.demand.share(i) > 0)) {
        dims.push_back(static_cast<std::size_t>(i));
      }
    }
    return dims;
  }
  [[nodiscard]] std::string dimension_name(std::size_t dim) const {
    return dim == whole_device_dim ? std::string("whole ") + topology_.levels()[topology_.device_level()] + "s"
                                   : topology_.schema()[dim].name;
  }
  /// Where dimension `dim` is measured for `target`.
  [[nodiscard]] DomainId aggregate_domain(DomainId target, std::size_t dim) const {
    if (dim == whole_device_dim || topology_.schema().is_device(dim)) return target;
    const DomainId root = pool_root(topology_, target, dim);
    return (root.valid() && topology_.contains(target, root)) ? target : (root.valid() ? root : target);
  }
  /// Total demand of dimension `dim`.
  [[nodiscard]] double total_demand(const Tier& tier, std::size_t dim) const {
    const auto r = static_cast<double>(tier.demand.replicas);
    if (dim == whole_device_dim) return r * static_cast<double>(tier.demand.whole_devices);
    const auto i = static_cast<Eigen::Index>(dim);
    return r * static_cast<double>(tier.demand.pooled(i) + tier.demand.share(i));
  }
  /// Free amount of dimension `dim` in `domain` under `view`.
  template <CapacityView View>
  [[nodiscard]] double free_in(const View& view, DomainId domain, std::size_t dim) const {
    return dim == whole_device_dim ? static_cast<double>(view.idle_devices(domain))
                                   : static_cast<double>(view.free(domain, dim));
  }

  /// Static check on capacities alone: can the target ever hold the preemptor? Returns the
  /// failing relaxation dimension with capacity and demand.
  [[nodiscard]] std::optional<Shortfall> too_small(const Tier& tier, DomainId target) const {
    for (std::size_t dim : tier.dims) {
      const DomainId where = aggregate_domain(target, dim);
      const double capacity =
          dim == whole_device_dim
              ? static_cast<double>(topology_.device_count(where))
              : static_cast<double>(topology_.capacity(where)(static_cast<Eigen::Index>(dim)));
      if (capacity < total_demand(tier, dim)) return Shortfall{dim, capacity, total_demand(tier, dim), 0};
    }
    return std::nullopt;
  }

  /// The cheap first look at a batch of targets: deficits, what all eligible victims could
  /// free, and the fractional lower bound of each. A batch is either one target above the
  /// host level, or every target of one host (then each occupant of the host is read once
  /// for the whole batch, not once per NUMA node or PCIe switch). Allocates nothing once warm.
  /// Elastic victims enter the bound at their cheapest price (a shrink) for their full gain,
  /// which keeps the bound valid without enumerating shrink options here.
  template <class Emit>
  void scan_batch(const Tier& tier, std::span<const DomainId> targets, ScanWorkspace& workspace,
                  Emit&& emit) const {
    const std::size_t count = tier.dims.size();
    const std::size_t batch = targets.size();
    workspace.resize(batch, count);
    bool any_reach_above = false;
    bool any_measured_above = false;
    for (std::size_t t = 0; t < batch; ++t) {
      auto& slot = workspace.targets[t];
      slot.reach = reach(tier, targets[t]);
      slot.victims = 0;
      any_reach_above = any_reach_above || slot.reach != targets[t];
      for (std::size_t k = 0; k < count; ++k) {
        const DomainId where = aggregate_domain(targets[t], tier.dims[k]);
        slot.measured_in[k] = where;
        slot.need[k] = std::max(0.0, total_demand(tier, tier.dims[k]) - free_in(state_, where, tier.dims[k]));
        slot.total[k] = 0.0;
        slot.items[k].clear();
        any_measured_above = any_measured_above || where != targets[t];
      }
    }
    workspace.seen.clear();
    const auto locate = [&](DomainId domain) -> std::size_t {
      // Targets of a batch are disjoint subtrees in ascending pre-order.
      const auto it = std::upper_bound(targets.begin(), targets.end(), domain);
      if (it == targets.begin()) return batch;
      const auto index = static_cast<std::size_t>(it - targets.begin()) - 1;
      return topology_.contains(targets[index], domain) ? index : batch;
    };
    // Device entries hold only device dimensions and pool entries only pooled ones, so each
    // entry touches just the relaxation dimensions of its kind.
    workspace.device_dims.clear();
    workspace.pooled_dims.clear();
    for (std::size_t k = 0; k < count; ++k) {
      const std::size_t dim = tier.dims[k];
      if (dim == whole_device_dim || topology_.schema().is_device(dim)) {
        workspace.device_dims.push_back(k);
      } else {
        workspace.pooled_dims.push_back(k);
      }
    }
    const auto visit_occupant = [&](const WorkloadView& view) {
      if (!eligible(view.workload)) return;
      for (std::size_t t = 0; t < batch; ++t) {
        auto& slot = workspace.targets[t];
        slot.in_reach = false;
        std::fill(slot.gain.begin(), slot.gain.end(), 0.0);
      }
      for (std::size_t e = 0; e < view.domains.size(); ++e) {
        const DomainId domain = view.domains[e];
        const bool device = topology_.is_device(domain);
        const auto& dims_here = device ? workspace.device_dims : workspace.pooled_dims;
        const auto gain_of = [&](std::size_t k) {
          return tier.dims[k] == whole_device_dim ? 1.0 : static_cast<double>(view.amount(e, tier.dims[k]));
        };
        const std::size_t index = batch == 1 ? (topology_.contains(targets[0], domain) ? 0 : 1) : locate(domain);
        if (index < batch) {
          auto& slot = workspace.targets[index];
          slot.in_reach = true;
          for (std::size_t k : dims_here) {
            if (slot.measured_in[k] == targets[index]) slot.gain[k] += gain_of(k);
          }
        }
        if (any_reach_above || any_measured_above) {
          for (std::size_t t = 0; t < batch; ++t) {
            auto& slot = workspace.targets[t];
            if (slot.reach != targets[t] && topology_.contains(slot.reach, domain)) slot.in_reach = true;
            for (std::size_t k : dims_here) {
              if (slot.measured_in[k] != targets[t] && topology_.contains(slot.measured_in[k], domain)) {
                slot.gain[k] += gain_of(k);
              }
            }
          }
        }
      }
      double cheapest = -1.0;  // priced lazily: most occupants reach no target of a batch
      for (std::size_t t = 0; t < batch; ++t) {
        auto& slot = workspace.targets[t];
        if (!slot.in_reach) continue;
        if (cheapest < 0.0) {
          cheapest = price(view.workload, 0);
          const auto shrinkable = std::min(view.workload.shrinkable_replicas(), view.workload.replicas - 1);
          for (std::int32_t drop = 1; drop <= shrinkable; ++drop) {
            cheapest = std::min(cheapest, price(view.workload, static_cast<std::size_t>(drop)));
          }
        }
        ++slot.victims;
        for (std::size_t k = 0; k < count; ++k) {
          if (slot.gain[k] <= 0.0) continue;
          slot.total[k] += slot.gain[k];
          slot.items[k].emplace_back(cheapest / slot.gain[k], slot.gain[k]);
        }
      }
    };
    const LevelIndex host_level = topology_.host_level();
    if (batch == 1 && topology_.level(workspace.targets[0].reach) < host_level) {
      // One target spanning hosts: a gang may sit on several of them; count it once.
      for_each_host(workspace.targets[0].reach, [&](DomainId host) {
        state_.for_each_occupant_unordered(host, [&](const WorkloadView& view) {
          if (std::find(workspace.seen.begin(), workspace.seen.end(), view.workload.id) != workspace.seen.end()) return;
          workspace.seen.push_back(view.workload.id);
          visit_occupant(view);
        });
      });
    } else {
      // Order-free: the scan only sums integers and sorts its items.
      state_.for_each_occupant_unordered(topology_.ancestor_at(targets.front(), host_level), visit_occupant);
    }
    for (std::size_t t = 0; t < batch; ++t) emit(targets[t], finish_scan(tier, workspace.targets[t]));
  }

  /// The static facts of every target of `tier`, kept in `cache` (built on first use).
  const ScanCache::TierShape& tier_shape(ScanCache& cache, std::size_t tier_index, const Tier& tier) const {
    if (cache.shapes.size() <= tier_index) cache.shapes.resize(tier_index + 1);
    ScanCache::TierShape& shape = cache.shapes[tier_index];
    if (shape.ready) return shape;
    const auto all = targets(tier);
    const std::size_t dims = tier.dims.size();
    shape.stride = 1 + 2 * dims;
    shape.domains.assign(all.size() * shape.stride, DomainId{});
    shape.too_small.assign(all.size(), std::nullopt);
    const LevelIndex host_level = topology_.host_level();
    for (std::size_t t = 0; t < all.size(); ++t) {
      DomainId* row = shape.domains.data() + t * shape.stride;
      row[0] = reach(tier, all[t]);
      for (std::size_t k = 0; k < dims; ++k) {
        const DomainId where = aggregate_domain(all[t], tier.dims[k]);
        row[1 + k] = where;
        // The index answers below the host level for the enclosing host.
        row[1 + dims + k] = topology_.level(where) > host_level ? topology_.ancestor_at(where, host_level) : where;
      }
      shape.too_small[t] = too_small(tier, all[t]);
    }
    shape.ready = true;
    return shape;
  }

  /// Digest of the versions of the domains a scan of target `ordinal` reads.
  [[nodiscard]] std::uint64_t scan_key(const ScanCache::TierShape& shape, std::size_t ordinal, std::size_t dims) const {
    const DomainId* row = shape.domains.data() + ordinal * shape.stride;
    std::uint64_t key = state_.domain_version(row[0]);
    for (std::size_t k = 0; k < dims; ++k) key = key * 0x9e3779b97f4a7c15ULL ^ state_.domain_version(row[1 + k]);
    return key;
  }
  /// Digest of the versions of the domains `index_shortfall` of target `ordinal` reads.
  [[nodiscard]] std::uint64_t index_key(const ScanCache::TierShape& shape, std::size_t ordinal, std::size_t dims) const {
    const DomainId* row = shape.domains.data() + ordinal * shape.stride;
    std::uint64_t key = 0x696e646578ULL;
    for (std::size_t k = 0; k < dims; ++k) key = key * 0x9e3779b97f4a7c15ULL ^ state_.domain_version(row[1 + dims + k]);
    return key;
  }

  /// `index_shortfall` through `cache` (may be null): answered from it while the versions of
  /// the domains it reads are unchanged.
  [[nodiscard]] std::optional<Shortfall> index_shortfall_cached(std::size_t tier_index, const Tier& tier, DomainId target,
                                                                ScanCache* cache) const {
    if (cache == nullptr) return index_shortfall(tier, target);
    prepare_cache(*cache, tier_index, tier);
    const ScanCache::TierShape& shape = tier_shape(*cache, tier_index, tier);
    auto& entries = cache->tiers[tier_index];
    const std::size_t ordinal = topology_.ordinal(target);
    ScanCache::Entry& entry = entries[ordinal];
    const std::uint64_t key = index_key(shape, ordinal, tier.dims.size());
    if (!entry.index_valid || entry.index_key != key) {
      entry.index_verdict = index_shortfall(tier, target);
      entry.index_key = key;
      entry.index_valid = true;
    }
    return entry.index_verdict;
  }

  /// Sizes `cache`'s entries for `tier` (one per target).
  void prepare_cache(ScanCache& cache, std::size_t tier_index, const Tier& tier) const {
    if (cache.tiers.size() <= tier_index) cache.tiers.resize(tier_index + 1);
    auto& entries = cache.tiers[tier_index];
    if (entries.size() != targets(tier).size()) entries.assign(targets(tier).size(), {});
  }

  /// `too_small` through `cache` (may be null): computed once per target.
  [[nodiscard]] std::optional<Shortfall> too_small_cached(std::size_t tier_index, const Tier& tier, DomainId target,
                                                          ScanCache* cache) const {
    if (cache == nullptr) return too_small(tier, target);
    return tier_shape(*cache, tier_index, tier).too_small[topology_.ordinal(target)];
  }

  /// `scan_batch` through `cache` (may be null): targets whose read domains kept their
  /// versions are answered from it, the others scanned (as one batch) and stored. Results are
  /// emitted in target order either way, so a cached decision logs exactly what a cold one does.
  template <class Emit>
  void scan_batch_cached(std::size_t tier_index, const Tier& tier, std::span<const DomainId> targets,
                         ScanWorkspace& workspace, ScanCache* cache, Emit&& emit) const {
    if (cache == nullptr) {
      scan_batch(tier, targets, workspace, emit);
      return;
    }
    prepare_cache(*cache, tier_index, tier);
    auto& entries = cache->tiers[tier_index];
    const ScanCache::TierShape& shape = tier_shape(*cache, tier_index, tier);
    const auto key_of = [&](DomainId target) { return scan_key(shape, topology_.ordinal(target), tier.dims.size()); };
    auto& stale = cache->stale_targets;
    auto& stale_keys = cache->stale_keys;
    stale.clear();
    stale_keys.clear();
    for (const DomainId target : targets) {
      const auto& entry = entries[topology_.ordinal(target)];
      const std::uint64_t key = key_of(target);
      if (!entry.valid || entry.key != key) {
        stale.push_back(target);
        stale_keys.push_back(key);
      }
    }
    if (!stale.empty()) {
      // scan_batch emits in target order, so the i-th result belongs to stale[i].
      std::size_t next = 0;
      scan_batch(tier, std::span<const DomainId>(stale), workspace, [&](DomainId target, const ScanResult& result) {
        auto& entry = entries[topology_.ordinal(target)];
        entry.key = stale_keys[next++];
        entry.result = result;
        entry.valid = true;
      });
    }
    cache->misses += stale.size();
    cache->hits += targets.size() - stale.size();
    for (const DomainId target : targets) emit(target, entries[topology_.ordinal(target)].result);
  }

  /// Calls `visit(batch)` for the targets of `tier` in batches for `scan_batch`: one per host
  /// when targets lie at or below the host level (only those passing `keep`), else one each.
  template <class Keep, class Visit>
  void for_each_batch(const Tier& tier, std::vector<DomainId>& buffer, Keep&& keep, Visit&& visit) const {
    const LevelIndex host_level = topology_.host_level();
    if (tier.target_level <= host_level) {
      for (DomainId target : targets(tier)) {
        if (!keep(target)) continue;
        buffer.assign(1, target);
        visit(std::span<const DomainId>(buffer));
      }
      return;
    }
    for (DomainId host : topology_.domains_at(host_level)) {
      buffer.clear();
      for (DomainId target : topology_.domains_at(tier.target_level, host)) {
        if (keep(target)) buffer.push_back(target);
      }
      if (!buffer.empty()) visit(std::span<const DomainId>(buffer));
    }
  }

  /// Shortfall check and fractional bound of one scanned target.
  [[nodiscard]] static ScanResult finish_scan(const Tier& tier, ScanWorkspace::Target& slot) {
    ScanResult result;
    result.victims = slot.victims;
    const std::size_t count = tier.dims.size();
    for (std::size_t k = 0; k < count; ++k) {
      if (slot.total[k] + 1e-9 < slot.need[k]) {
        result.shortfall = Shortfall{tier.dims[k], slot.total[k], slot.need[k], slot.victims};
        return result;
      }
    }
    for (std::size_t k = 0; k < count; ++k) {
      if (slot.need[k] <= 0.0) continue;
      result.bound = std::max(result.bound, fractional_cover(slot.items[k], slot.need[k]));
    }
    return result;
  }

  /// The preemption index's verdict on one target, read from aggregates alone (no occupant):
  /// the first relaxation dimension whose deficit exceeds what every eligible victim holds
  /// where it is measured (for a domain below the host level, what they hold in its host).
  /// Never wrong: the index counts every eligible victim there, a superset of what the scan
  /// counts, so a domain it rejects the scan rejects too.
  [[nodiscard]] std::optional<Shortfall> index_shortfall(const Tier& tier, DomainId target) const {
    for (const std::size_t dim : tier.dims) {
      const DomainId where = aggregate_domain(target, dim);
      const double need = std::max(0.0, total_demand(tier, dim) - free_in(state_, where, dim));
      if (need <= 0.0) continue;
      const double have =
          dim == whole_device_dim
              ? static_cast<double>(state_.preemptible_device_entries_below(where, preemptor_.priority))
              : static_cast<double>(state_.preemptible_below(where, preemptor_.priority, dim));
      if (have + 1e-9 < need) return Shortfall{dim, have, need, 0};
    }
    return std::nullopt;
  }

  /// Calls `visit(host)` for each host-level domain that `scope` covers or lies in.
  template <class Visit>
  void for_each_host(DomainId scope, Visit&& visit) const {
    const LevelIndex host_level = topology_.host_level();
    if (topology_.level(scope) >= host_level) {
      visit(topology_.ancestor_at(scope, host_level));
      return;
    }
    for (DomainId host : topology_.domains_at(host_level, scope)) visit(host);
  }

  /// Reads the eligible victims of `target` into `problem` with their options and gains, the
  /// aggregate deficits and the fractional lower bound. Returns a reason when the target is
  /// hopeless even if every eligible victim went.
  std::optional<Shortfall> build_problem(const Tier& tier, DomainId target,
                                         DomainProblem& problem) const {
    problem.target = target;
    problem.tier = &tier;
    problem.victims.clear();
    problem.dims = tier.dims;
    const std::vector<std::size_t>& dims = problem.dims;
    problem.need.assign(dims.size(), 0.0);
    problem.dimension_names.clear();
    problem.measured_in.clear();
    problem.demand_total.clear();
    for (std::size_t k = 0; k < dims.size(); ++k) {
      problem.dimension_names.push_back(dimension_name(dims[k]));
      const DomainId where = aggregate_domain(target, dims[k]);
      problem.measured_in.push_back(where);
      problem.demand_total.push_back(total_demand(tier, dims[k]));
      problem.need[k] = std::max(0.0, total_demand(tier, dims[k]) - free_in(state_, where, dims[k]));
    }
    const DomainId scope = reach(tier, target);
    // Victims are built in recycled slots (their option and gain buffers kept): no allocation
    // per victim once the buffers have grown.
    for (auto& old : problem.victims) problem.spare.push_back(std::move(old));
    problem.victims.clear();
    for_each_host(scope, [&](DomainId host) {
      state_.for_each_occupant(host, [&](const WorkloadView& view) {
        if (!eligible(view.workload)) return;
        for (const auto& seen : problem.victims) {
          if (seen.id == view.workload.id) return;  // a gang met on an earlier host
        }
        if (problem.spare.empty()) problem.spare.emplace_back();
        CandidateVictim& victim = problem.spare.back();
        victim.id = view.workload.id;
        victim.workload = &view.workload;
        victim.options_complete = true;
        add_options(tier, target, dims, view, victim, problem);
        if (victim.options.empty()) return;  // the slot stays spare
        problem.victims.push_back(std::move(victim));
        problem.spare.pop_back();
      });
    });
    std::sort(problem.victims.begin(), problem.victims.end(),
              [](const auto& a, const auto& b) { return a.id < b.id; });
    for (std::size_t k = 0; k < dims.size(); ++k) {
      double total = 0.0;
      for (const auto& victim : problem.victims) total += victim.options.front().gain[k];
      if (total + 1e-9 < problem.need[k]) {
        return Shortfall{dims[k], total, problem.need[k], problem.victims.size()};
      }
    }
    problem.lower_bound = fractional_bound(problem.need, problem.victims);
    return std::nullopt;
  }

  /// Prices option `option` of `victim`.
  [[nodiscard]] double price(const Workload& victim, std::size_t dropped) const {
    return dropped == 0 ? checked_cost(model_.evict(victim), Model::name, victim)
                        : checked_cost(model_.shrink(victim, static_cast<std::int32_t>(dropped)),
                                       Model::name, victim);
  }

  /// Assembles the final plan from a domain's outcome.
  PreemptionPlan make_plan(std::string_view solver, const DomainProblem& problem,
                           const DomainOutcome& outcome, PlanStatus status, double lower_bound,
                           SolverStatistics statistics, std::vector<DomainVerdict> rejected,
                           std::uint64_t rejected_total) const {
    FeasibilityOracle oracle(state_, problem);
    PreemptionPlan plan;
    plan.solver = std::string(solver);
    plan.status = status;
    for (std::size_t v = 0; v < problem.victims.size(); ++v) {
      if (outcome.choice[v] < 0) continue;
      const auto option = static_cast<std::size_t>(outcome.choice[v]);
      oracle.apply(v, option, +1);
      const CandidateVictim& candidate = problem.victims[v];
      const VictimOption& chosen = candidate.options[option];
      Victim victim;
      victim.id = candidate.id;
      victim.action = chosen.dropped.empty() ? VictimAction::evict : VictimAction::shrink;
      victim.dropped_replicas = chosen.dropped;
      victim.cost = chosen.cost;
      victim.reason = describe_gain(problem, chosen);
      plan.victims.push_back(std::move(victim));
    }
    const PlacementSearchResult placement = find_placement(oracle.view(), problem.tier->demand, problem.target);
    if (!placement.found) {
      throw std::logic_error("topopreempt: internal error: chosen victims do not free " +
                             topology_.describe(problem.target));
    }
    plan.placement = placement.placement;
    plan.gang_level = placement.gang_level;
    plan.replica_level = placement.replica_level;
    // Pools above a target (a NUMA node's CPUs for a PCIe-switch target) widen what the
    // preemptor lands in: report the domain that holds all of it.
    plan.target_domain = plan.placement.replicas.empty()
                             ? problem.target
                             : topology_.lowest_common_ancestor(problem.target, plan.placement.span_domain(topology_));
    for (const auto& victim : plan.victims) plan.cost += victim.cost;
    plan.lower_bound = status == PlanStatus::optimal ? plan.cost : std::min(lower_bound, plan.cost);
    plan.statistics = statistics;
    plan.rejected = std::move(rejected);
    plan.rejected_total = rejected_total;
    plan.explanation = explain(plan, problem.tier);
    return plan;
  }

  /// A plan with zero victims (the preemptor fits) or none at all (infeasible).
  PreemptionPlan make_plan_without_victims(std::string_view solver, PlanStatus status,
                                           const PlacementSearchResult* placement,
                                           SolverStatistics statistics,
                                           std::vector<DomainVerdict> rejected,
                                           std::uint64_t rejected_total) const {
    PreemptionPlan plan;
    plan.solver = std::string(solver);
    plan.status = status;
    if (placement) {
      plan.placement = placement->placement;
      plan.target_domain = placement->placement.span_domain(topology_);
      plan.gang_level = placement->gang_level;
      plan.replica_level = placement->replica_level;
    }
    plan.statistics = statistics;
    plan.rejected = std::move(rejected);
    plan.rejected_total = rejected_total;
    plan.explanation = explain(plan, nullptr);
    return plan;
  }

  static constexpr std::size_t whole_device_dim = whole_device_dimension;

  [[nodiscard]] static std::string format_amount(double value) {
    if (std::abs(value - std::round(value)) < 1e-9) return std::to_string(static_cast<long long>(std::llround(value)));
    std::string text = std::to_string(value);
    return text;
  }

 private:
  /// Gains of the entries [first, last) of `view` inside the target, per relaxation dim.
  void add_gain(const Tier& tier, DomainId target, const std::vector<std::size_t>& dims,
                const WorkloadView& view, std::size_t first, std::size_t last,
                std::vector<double>& gain) const {
    (void)tier;
    for (std::size_t e = first; e < last; ++e) {
      const DomainId domain = view.domains[e];
      for (std::size_t k = 0; k < dims.size(); ++k) {
        const DomainId where = aggregate_domain(target, dims[k]);
        if (!topology_.contains(where, domain)) continue;
        if (dims[k] == whole_device_dim) {
          if (topology_.is_device(domain)) gain[k] += 1.0;
        } else {
          gain[k] += static_cast<double>(view.amount(e, dims[k]));
        }
      }
    }
  }

  /// Fills `victim.options` (reusing its buffers; emptied when nothing of the victim is in
  /// reach of the target): eviction first, then the shrinks.
  void add_options(const Tier& tier, DomainId target, const std::vector<std::size_t>& dims,
                   const WorkloadView& view, CandidateVictim& victim, DomainProblem& problem) const {
    std::size_t used = 0;
    const auto next_option = [&]() -> VictimOption& {
      if (used == victim.options.size()) victim.options.emplace_back();
      VictimOption& option = victim.options[used++];
      option.gain.assign(dims.size(), 0.0);
      option.dropped.clear();
      option.cost = 0.0;
      return option;
    };
    const DomainId scope = reach(tier, target);
    std::vector<std::int32_t>& inside = problem.scratch_inside;  // replicas with an entry in reach
    inside.clear();
    for (std::size_t r = 0; r < view.replica_begin.size(); ++r) {
      const auto [first, last] = view.replica_entries(r);
      for (std::size_t e = first; e < last; ++e) {
        if (topology_.contains(scope, view.domains[e])) {
          inside.push_back(static_cast<std::int32_t>(r));
          break;
        }
      }
    }
    if (inside.empty()) {  // nothing of it in reach: evicting it cannot help
      victim.options.clear();
      return;
    }
    {
      VictimOption& evict = next_option();
      add_gain(tier, target, dims, view, 0, view.domains.size(), evict.gain);
      evict.cost = price(view.workload, 0);
    }
    const auto shrinkable = std::min<std::int64_t>(
        {view.workload.shrinkable_replicas(), static_cast<std::int64_t>(inside.size()),
         static_cast<std::int64_t>(view.workload.replicas) - 1});  // dropping all = evicting
    const auto add_shrink = [&](const std::vector<std::int32_t>& dropped) {
      VictimOption& shrink = next_option();
      for (std::int32_t r : dropped) {
        const auto [first, last] = view.replica_entries(static_cast<std::size_t>(r));
        add_gain(tier, target, dims, view, first, last, shrink.gain);
      }
      shrink.dropped.assign(dropped.begin(), dropped.end());
      shrink.cost = price(view.workload, dropped.size());
    };
    std::vector<std::int32_t>& dropped = problem.scratch_dropped;
    if (shrinkable <= 0) {
      // nothing to shrink
    } else if (inside.size() <= max_enumerated_replicas) {
      // Which replicas go matters (they sit in different units): every subset, smallest first.
      const std::uint32_t subsets = 1U << inside.size();
      for (std::int64_t size = 1; size <= shrinkable; ++size) {
        for (std::uint32_t mask = 1; mask < subsets; ++mask) {
          if (std::popcount(mask) != size) continue;
          dropped.clear();
          for (std::size_t i = 0; i < inside.size(); ++i) {
            if ((mask >> i) & 1U) dropped.push_back(inside[i]);
          }
          add_shrink(dropped);
        }
      }
    } else {
      // Too many replicas to enumerate: drop the first ones in reach; exactness is lost.
      victim.options_complete = false;
      dropped.clear();
      for (std::int64_t size = 1; size <= shrinkable; ++size) {
        dropped.push_back(inside[static_cast<std::size_t>(size - 1)]);
        add_shrink(dropped);
      }
    }
    // Options beyond `used` belong to an earlier victim of this slot.
    victim.options.erase(victim.options.begin() + static_cast<std::ptrdiff_t>(used), victim.options.end());
  }

  [[nodiscard]] std::string describe_gain(const DomainProblem& problem, const VictimOption& option) const {
    std::string text = option.dropped.empty() ? "evicted whole" : "shrunk by " + std::to_string(option.dropped.size()) + " replica(s)";
    text += "; frees";
    bool any = false;
    for (std::size_t k = 0; k < problem.need.size(); ++k) {
      if (option.gain[k] <= 0.0) continue;
      text += (any ? ", " : " ") + format_amount(option.gain[k]) + " " + problem.dimension_names[k];
      any = true;
    }
    if (!any) text += " nothing binding (needed only to complete a device or pool)";
    return text + " in " + topology_.describe(problem.target);
  }

  void build_tiers() {
    const LevelIndex host = topology_.host_level();
    std::vector<std::pair<LevelIndex, int>> replica_levels;
    if (demand_.replica_preferred) {
      // unit_level is the loosest level allowed (the host, or a deeper guaranteed gang level).
      for (int level = *demand_.replica_preferred; level >= std::max(host, demand_.unit_level);
           --level) {
        replica_levels.emplace_back(static_cast<LevelIndex>(level), *demand_.replica_preferred - level);
      }
    } else {
      replica_levels.emplace_back(demand_.unit_level, 0);
    }
    std::vector<std::pair<std::optional<LevelIndex>, int>> gang_levels;
    if (demand_.replicas == 1) {
      gang_levels.emplace_back(std::nullopt, 0);  // a single replica is its own gang
    } else if (demand_.gang_required) {
      gang_levels.emplace_back(*demand_.gang_required, 0);
    } else if (demand_.gang_preferred) {
      for (int level = *demand_.gang_preferred; level >= 0; --level) {
        gang_levels.emplace_back(static_cast<LevelIndex>(level), *demand_.gang_preferred - level);
      }
    } else {
      gang_levels.emplace_back(LevelIndex{0}, 0);
    }
    for (const auto& [gang_level, gang_penalty] : gang_levels) {
      for (const auto& [replica_level, replica_penalty] : replica_levels) {
        Tier tier;
        tier.demand = demand_;
        tier.demand.unit_level = replica_level;
        tier.demand.replica_preferred.reset();
        tier.demand.gang_preferred.reset();
        tier.demand.gang_required = gang_level;
        tier.target_level = gang_level ? std::min(*gang_level, replica_level) : replica_level;
        if (gang_level && *gang_level > replica_level) tier.target_level = *gang_level;
        if (topology_.domains_at(tier.target_level).empty()) continue;
        tier.penalty = gang_penalty * 1000 + replica_penalty;
        tier.dims = relaxation_dims(tier);
        tier.label = "replicas in one " + topology_.levels()[replica_level] +
                     (gang_level ? ", gang in one " + topology_.levels()[*gang_level] : std::string());
        tiers_.push_back(std::move(tier));
      }
    }
  }

  [[nodiscard]] std::string describe_preemptor() const {
    std::string text = preemptor_.label() + " (priority " + std::to_string(preemptor_.priority) + "): " +
                       std::to_string(preemptor_.replicas) + " replica(s) of ";
    if (demand_.whole_devices > 0) {
      text += std::to_string(demand_.whole_devices) + " " + topology_.levels()[topology_.device_level()] + "(s)";
    } else if (demand_.has_share) {
      text += "a device share " + topology_.schema().format(demand_.share);
    } else {
      text += "no devices";
    }
    if (demand_.pooled.any()) text += " + " + topology_.schema().format(demand_.pooled);
    const auto scope = [](const TopologyRequirement& requirement) {
      return requirement.mode == RequirementMode::none
                 ? std::string("none")
                 : std::string(requirement.mode == RequirementMode::guaranteed ? "guaranteed " : "best-effort ") +
                       requirement.level;
    };
    text += "; replica scope " + scope(preemptor_.replica_scope) + ", gang scope " + scope(preemptor_.gang_scope);
    return text;
  }

  [[nodiscard]] std::string explain(const PreemptionPlan& plan, const Tier* tier) const {
    std::string text = plan.solver + " (cost model " + std::string(Model::name) + "): " +
                       std::string(to_string(plan.status)) + "\n";
    text += "preemptor: " + describe_preemptor() + "\n";
    if (plan.status == PlanStatus::no_preemption_needed) {
      text += "fits without preemption in " + topology_.describe(plan.target_domain) + "\n";
    } else if (plan.status == PlanStatus::infeasible && plan.statistics.limit_reached) {
      text += "no plan was found before a limit (time or search nodes) was reached: "
              "infeasibility is NOT proven\n";
    } else if (plan.status == PlanStatus::infeasible) {
      text += "no placement exists even after evicting every eligible victim\n";
    } else {
      text += "target: " + topology_.describe(plan.target_domain) + (tier ? " (" + tier->label + ")" : "") + "\n";
      text += "cost " + format_amount(plan.cost) + ", lower bound " + format_amount(plan.lower_bound) +
              ", " + std::to_string(plan.victims.size()) + " victim(s):\n";
      for (const auto& victim : plan.victims) {
        const Workload& workload = state_.workload(victim.id);
        text += "  - " + workload.label() + " priority " + std::to_string(workload.priority) + ", cost " +
                format_amount(victim.cost) + ": " + victim.reason + "\n";
      }
    }
    if (plan.rejected_total > 0) {
      text += "other domains (" + std::to_string(plan.rejected_total) + " lost; " +
              std::to_string(plan.rejected.size()) + " shown):\n";
      for (const auto& verdict : plan.rejected) {
        text += "  - " + topology_.describe(verdict.domain) + ": " + verdict.reason + "\n";
      }
    }
    return text;
  }

  const Allocation& state_;
  const Workload& preemptor_;
  const Model& model_;
  const Topology& topology_;
  ResolvedDemand demand_;
  std::vector<Tier> tiers_;
};

/// The search inside one domain: given the problem and the best cost found so far elsewhere
/// (`incumbent`), return an outcome. Greedy, knapsack and branch-and-bound implement it.
template <class Search>
concept DomainSearch = requires(const Search& search, const Allocation& state,
                                const DomainProblem& problem, double incumbent, SearchLimits limits,
                                SolverStatistics& statistics) {
  { search.search(state, problem, incumbent, limits, statistics) } -> std::same_as<DomainOutcome>;
};

/// How many rejected domains a plan lists (the closest competitors first).
inline constexpr std::size_t max_listed_verdicts = 12;

/// Collects why domains lost: counts all, keeps the first few of each phase for the plan.
class RejectionLog {
 public:
  void scanned(Rejection rejection) { add(scan_, std::move(rejection)); }
  void searched(Rejection rejection) { add(search_, std::move(rejection)); }
  [[nodiscard]] std::uint64_t total() const noexcept { return total_; }
  /// Whether another searched-phase rejection would still be listed.
  [[nodiscard]] bool wants_more() const noexcept { return search_.size() < max_listed_verdicts; }
  /// Counts rejections that are not listed.
  void count_unlisted(std::size_t count) noexcept { total_ += count; }
  /// Searched domains (closest competitors) first, then domains dismissed by the scan.
  template <CostModel Model>
  [[nodiscard]] std::vector<DomainVerdict> verdicts(const PreemptionContext<Model>& context) const {
    std::vector<DomainVerdict> result;
    for (const auto* list : {&search_, &scan_}) {
      for (const Rejection& rejection : *list) {
        if (result.size() == max_listed_verdicts) return result;
        result.push_back({rejection.domain, describe(context, rejection)});
      }
    }
    return result;
  }

 private:
  void add(std::vector<Rejection>& list, Rejection rejection) {
    ++total_;
    if (list.size() < max_listed_verdicts) list.push_back(std::move(rejection));
  }
  template <CostModel Model>
  static std::string describe(const PreemptionContext<Model>& context, const Rejection& r) {
    const auto amount = PreemptionContext<Model>::format_amount;
    switch (r.kind) {
      case Rejection::Kind::too_small:
        return "too small: holds " + amount(r.shortfall.have) + " " + context.dimension_name(r.shortfall.dim) +
               ", needs " + amount(r.shortfall.need);
      case Rejection::Kind::hopeless:
        return "even evicting all " + std::to_string(r.shortfall.victims) + " eligible victims frees " +
               amount(r.shortfall.have) + " of the " + amount(r.shortfall.need) + " " +
               context.dimension_name(r.shortfall.dim) + " missing";
      case Rejection::Kind::hopeless_unread:
        return "not read: even evicting every eligible victim frees at most " + amount(r.shortfall.have) + " of the " +
               amount(r.shortfall.need) + " " + context.dimension_name(r.shortfall.dim) +
               " missing (preemption index)";
      case Rejection::Kind::bound:
        return "lower bound " + amount(r.value) + " >= best cost " + amount(r.best);
      case Rejection::Kind::bound_unread:
        return "not read: index lower bound " + amount(r.value) + " >= best cost " + amount(r.best);
      case Rejection::Kind::costlier:
        return "best victim set costs " + amount(r.value) + " > " + amount(r.best) +
               (r.note.empty() ? "" : " (" + r.note + ")");
      case Rejection::Kind::no_better:
        return r.note.empty() ? "no victim set here beats " + amount(r.best) : r.note;
    }
    return {};
  }

  std::vector<Rejection> scan_;
  std::vector<Rejection> search_;
  std::uint64_t total_ = 0;
};

/// The driver every solver shares: checks "fits already", then per tier screens every target
/// domain from aggregates (capacity, and the preemption index: can evicting every eligible
/// victim free enough?), and takes domains in ascending lower-bound order: an unread domain
/// (bound: the model's declared price floor, see `PriceFloorModel`) is read (scanned: victims
/// and fractional bound) and goes back with its scan bound; a read one is searched. Once the
/// least bound left cannot beat the best plan, the rest is pruned, most of it never read.
/// Tiers are taken tightest first; the first tier with a plan wins. `limits.full_scan` reads
/// every domain first (the path before the index). `cache` (optional) keeps scan results
/// across decisions of one preemptor class and cost model (`IncrementalDecider`).
template <CostModel Model, DomainSearch Search>
PreemptionPlan solve_with(std::string_view solver, const Allocation& state, const Workload& preemptor,
                          const Model& model, const Search& search, SearchLimits limits,
                          ScanCache* cache = nullptr) {
  const auto start = Clock::now();
  DeadlineWatch deadline(deadline_after(start, limits.time_limit));
  PreemptionContext<Model> context(state, preemptor, model, cache != nullptr ? &cache->prices : nullptr);
  SolverStatistics statistics;
  const auto finish = [&](PreemptionPlan plan) {
    plan.statistics.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    record_dependencies(state, preemptor, plan);  // what a later commit checks
    return plan;
  };
  const PlacementSearchResult now = cache != nullptr ? find_placement_reusing(state, context.demand(), cache->fits)
                                                     : find_placement(state, context.demand());
  if (now.found) {
    return finish(context.make_plan_without_victims(solver, PlanStatus::no_preemption_needed, &now,
                                                    statistics, {}, 0));
  }
  RejectionLog log;
  std::vector<Downgrade> downgrades;  // every tier's, in search order
  bool unproven = false;  // an earlier tier ended at a limit without proving it has no plan
  const auto tolerance = [](double cost) {
    return std::isfinite(cost) ? 1e-9 * std::max(1.0, std::abs(cost)) : 0.0;
  };
  // Every domain costs at least the model's declared price floor: the preemptor fits nowhere
  // as things stand, so each plan evicts or shrinks at least one victim.
  const double floor = least_price_of(model);
  for (std::size_t tier_index = 0; tier_index < context.tiers().size(); ++tier_index) {
    const Tier& tier = context.tiers()[tier_index];
    // A read candidate domain, keyed by a lower bound on its cost: its scan bound (or the
    // price floor if larger).
    struct Candidate {
      double bound;
      DomainId target;
    };
    std::vector<Candidate> candidates;  // a heap of read domains
    // Unread candidates, ascending id. Their bound is the price floor, so taken cheapest
    // bound first they come in id order: a cursor replaces a heap.
    std::vector<DomainId> unread;
    std::size_t cursor = 0;
    DomainProblem problem;
    ScanWorkspace workspace;
    std::vector<DomainId> batch;
    const auto keep = [&](DomainId target) {
      if (deadline.expired()) return false;  // the rest stays unscanned: nothing is proven
      ++statistics.domains_considered;
      if (auto shortfall = context.too_small_cached(tier_index, tier, target, cache)) {
        ++statistics.domains_pruned;
        log.scanned({target, Rejection::Kind::too_small, *shortfall, 0.0, 0.0, {}});
        return false;
      }
      return true;
    };
    // A min-heap by (bound, id): usually only the first few domains are searched before the
    // bound closes the rest, so a full sort would be wasted.
    const auto later = [](const Candidate& a, const Candidate& b) {
      return a.bound > b.bound || (a.bound == b.bound && a.target > b.target);
    };
    const auto emit = [&](DomainId target, const ScanResult& result) {
      statistics.victims_considered += result.victims;
      if (result.shortfall) {
        ++statistics.domains_pruned;
        log.scanned({target, Rejection::Kind::hopeless, *result.shortfall, 0.0, 0.0, {}});
        return;
      }
      candidates.push_back({limits.full_scan ? result.bound : std::max(floor, result.bound), target});
      if (!limits.full_scan) std::push_heap(candidates.begin(), candidates.end(), later);
    };
    if (limits.full_scan) {
      // The path before the index: read every candidate domain first.
      context.for_each_batch(tier, batch, keep, [&](std::span<const DomainId> targets) {
        context.scan_batch_cached(tier_index, tier, targets, workspace, cache, emit);
      });
    } else {
      // The static capacity check waits until a domain is read: most are never read.
      unread.reserve(context.targets(tier).size());
      for (DomainId target : context.targets(tier)) {
        if (deadline.expired()) break;  // the rest stays unscanned: nothing is proven
        ++statistics.domains_considered;
        unread.push_back(target);
      }
    }
    bool cut_short = false;  // the deadline left domains of this tier unscanned or unsearched
    std::size_t searched_here = 0;
    if (deadline.has_expired()) {
      cut_short = true;
      statistics.limit_reached = true;
    }
    std::make_heap(candidates.begin(), candidates.end(), later);
    double best_cost = std::numeric_limits<double>::infinity();
    std::optional<DomainProblem> best_problem;
    DomainOutcome best;
    double open_bound = std::numeric_limits<double>::infinity();  // least bound left unclosed
    const LevelIndex host_level = context.topology().host_level();
    // Reads the next unread candidates: the one at the cursor, with the following ones on the
    // same host when targets lie below the host level (one pass over the host's occupants,
    // as the full scan does). The index rejects hopeless ones first, unread.
    const auto read_next = [&] {
      batch.clear();
      const DomainId first = unread[cursor];
      const DomainId host = tier.target_level > host_level ? context.topology().ancestor_at(first, host_level)
                                                           : DomainId{};
      do {
        const DomainId target = unread[cursor++];
        if (auto shortfall = context.too_small_cached(tier_index, tier, target, cache)) {
          ++statistics.domains_pruned;
          log.scanned({target, Rejection::Kind::too_small, *shortfall, 0.0, 0.0, {}});
        } else if (auto shortfall = context.index_shortfall_cached(tier_index, tier, target, cache)) {
          ++statistics.domains_pruned;
          log.scanned({target, Rejection::Kind::hopeless_unread, *shortfall, 0.0, 0.0, {}});
        } else {
          batch.push_back(target);
        }
      } while (host.valid() && cursor < unread.size() &&
               context.topology().ancestor_at(unread[cursor], host_level) == host);
      if (!batch.empty()) {
        context.scan_batch_cached(tier_index, tier, std::span<const DomainId>(batch), workspace, cache, emit);
      }
    };
    while (!candidates.empty() || cursor < unread.size()) {
      const std::size_t live = candidates.size() + (unread.size() - cursor);
      // Unread domains (bound: the floor) go before read ones of a larger bound; at equal
      // bounds read ones go first, so a plan at the floor ends the tier without reading the
      // other domains whose bound is the floor.
      const bool take_unread = cursor < unread.size() && (candidates.empty() || candidates.front().bound > floor);
      const double least = take_unread ? floor : candidates.front().bound;
      if (least >= best_cost - tolerance(best_cost)) {
        // Every domain left has a bound at least this large: all are pruned at once, the
        // closest read ones listed first, then unread ones.
        statistics.domains_pruned += live;
        std::size_t listed = 0;
        while (!candidates.empty() && log.wants_more()) {
          std::pop_heap(candidates.begin(), candidates.end(), later);
          log.searched({candidates.back().target, Rejection::Kind::bound, {}, candidates.back().bound, best_cost, {}});
          candidates.pop_back();
          ++listed;
        }
        for (std::size_t shown = 0; shown < max_listed_verdicts && cursor < unread.size() && log.wants_more();
             ++shown) {
          const DomainId target = unread[cursor++];
          if (auto shortfall = context.too_small_cached(tier_index, tier, target, cache)) {
            log.scanned({target, Rejection::Kind::too_small, *shortfall, 0.0, 0.0, {}});
          } else {
            log.searched({target, Rejection::Kind::bound_unread, {}, floor, best_cost, {}});
          }
          ++listed;
        }
        log.count_unlisted(live - listed);
        break;
      }
      // Past the deadline, one domain is still searched when none was: the most promising
      // one, at the price of one bounded search, so a tight limit still yields a plan.
      if (searched_here > 0 && deadline.expired_now()) {
        cut_short = true;
        statistics.limit_reached = true;
        open_bound = std::min(open_bound, least);  // the least bound left: still open
        break;
      }
      if (take_unread) {
        read_next();
        continue;
      }
      std::pop_heap(candidates.begin(), candidates.end(), later);
      const Candidate item = candidates.back();
      candidates.pop_back();
      (void)context.build_problem(tier, item.target, problem);
      ++statistics.domains_solved;
      ++searched_here;
      SearchLimits domain_limits = limits;
      domain_limits.domains_left = live;
      DomainOutcome outcome = search.search(state, problem, best_cost, domain_limits, statistics);
      if (outcome.limit_reached) statistics.limit_reached = true;
      if (outcome.downgrade) downgrades.push_back({item.target, *outcome.downgrade, outcome.note});
      if (!outcome.exact) open_bound = std::min(open_bound, std::max(outcome.lower_bound, item.bound));
      if (outcome.found && outcome.cost < best_cost - tolerance(best_cost)) {
        if (best_problem) {
          log.searched({best_problem->target, Rejection::Kind::costlier, {}, best.cost, outcome.cost, best.note});
        }
        best_cost = outcome.cost;
        best = std::move(outcome);
        // Swapped, not copied: `problem` is rebuilt before its next use, and takes over the
        // old winner's buffers.
        if (best_problem) {
          std::swap(*best_problem, problem);
        } else {
          best_problem.emplace(std::move(problem));
        }
      } else if (outcome.found) {
        log.searched({item.target, Rejection::Kind::costlier, {}, outcome.cost, best_cost, outcome.note});
      } else {
        log.searched({item.target, Rejection::Kind::no_better, {}, 0.0, best_cost, outcome.note});
      }
    }
    if (best_problem) {
      // Proven when nothing left open (other domains' bounds, and this domain's own bound for
      // an inexact search) could undercut the winner.
      const bool proven = !unproven && !cut_short && (best.exact || best.lower_bound >= best_cost - tolerance(best_cost)) &&
                          open_bound >= best_cost - tolerance(best_cost);
      const double bound = std::min({best.exact ? best_cost : best.lower_bound, open_bound, best_cost});
      PreemptionPlan plan = context.make_plan(
          solver, *best_problem, best, proven ? PlanStatus::optimal : PlanStatus::feasible,
          proven ? best_cost : bound, statistics, log.verdicts(context), log.total());
      plan.downgrades = std::move(downgrades);
      return finish(std::move(plan));
    }
    if (statistics.limit_reached) unproven = true;
  }
  PreemptionPlan plan = context.make_plan_without_victims(
      solver, PlanStatus::infeasible, nullptr, statistics, log.verdicts(context), log.total());
  plan.downgrades = std::move(downgrades);
  return finish(std::move(plan));
}

}  // namespace topopreempt::detail
