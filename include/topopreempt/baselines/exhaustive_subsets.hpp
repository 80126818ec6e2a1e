// SPDX-License-Identifier: MIT
#pragma once
/// @file exhaustive_subsets.hpp
/// `exhaustive_subsets`: the victim search of topology-aware preemption (Zhang, Su, Yang, Chen,
/// arXiv 2411.11560, built on the Goedel scheduler): per node, every k-subset of the node's
/// lower-priority workloads for k = 1, 2, ..., keeping each subset after which the preemptor
/// fits, ranked by the paper's score S(C). Exponential by design; kept as a brute-force
/// reference for the exact solvers and as the paper's baseline.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/baselines/detail/common.hpp"
#include "topopreempt/model/capacity_view.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/plan/detail/dependencies.hpp"
#include "topopreempt/plan/detail/statistics.hpp"
#include "topopreempt/model/placement.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/plan/preemption_plan.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt::baselines {

/// How `exhaustive_subsets` ranks the victim sets after which the preemptor fits.
enum class SubsetRanking : std::uint8_t {
  /// Minimum total cost under the cost model; ties by higher S, then fewer victims, then the
  /// lexicographically smaller id list (then the lower domain id). An exact reference.
  cost_first,
  /// The paper's ranking: maximum S(C); ties by fewer victims, then the id list, then domain.
  paper_score,
};

/// "cost_first" / "paper_score".
[[nodiscard]] constexpr std::string_view to_string(SubsetRanking ranking) noexcept {
  return ranking == SubsetRanking::cost_first ? "cost_first" : "paper_score";
}

namespace detail {

/// A `CapacityView` of the state with a changing set of victims removed, exact inside one
/// domain's subtree (the only place the subset search queries). Removing or restoring a victim
/// costs O(entries x depth) and allocates nothing once the buffers have grown.
class SubsetView {
 public:
  /// A view of `base` (which must outlive it and stay unchanged) with nothing removed yet.
  explicit SubsetView(const Allocation& base) : base_(&base) {}

  /// The state's topology.
  [[nodiscard]] const Topology& topology() const { return base_->topology(); }

  /// Restricts the view to `domain`'s subtree and forgets every removal.
  void reset(DomainId domain) {
    const Topology& topology = base_->topology();
    domain_ = domain;
    first_ = domain.value;
    end_ = topology.subtree_end(domain).value;
    dims_ = topology.schema().size();
    const std::size_t span = end_ - first_;
    freed_.assign(span * dims_, 0);
    idle_gain_.assign(span, 0);
    released_.assign(span, 0);
  }

  /// Removes (sign +1) or restores (sign -1) one victim's entries: `domains[e]` with amounts
  /// `amounts[e * dims .. (e + 1) * dims)`. Every entry must lie inside the view's domain.
  void move(std::span<const DomainId> domains, std::span<const Amount> amounts, int sign) {
    const Topology& topology = base_->topology();
    for (std::size_t e = 0; e < domains.size(); ++e) {
      const DomainId domain = domains[e];
      for (DomainId at = domain;; at = topology.parent(at)) {
        Amount* freed = &freed_[(at.value - first_) * dims_];
        for (std::size_t i = 0; i < dims_; ++i) freed[i] += sign * amounts[e * dims_ + i];
        if (at == domain_) break;
      }
      if (!topology.is_device(domain)) continue;
      const std::int64_t occupancy = base_->device_occupancy(domain);
      std::int64_t& released = released_[domain.value - first_];
      const bool idle_before = occupancy - released == 0;
      released += sign;
      const bool idle_after = occupancy - released == 0;
      if (idle_before == idle_after) continue;
      const std::int64_t gain = idle_after ? 1 : -1;
      for (DomainId at = domain;; at = topology.parent(at)) {
        idle_gain_[at.value - first_] += gain;
        if (at == domain_) break;
      }
    }
  }

  /// Free amount of dimension `dim` in d's subtree, the removed victims' share included.
  [[nodiscard]] Amount free(DomainId d, std::size_t dim) const {
    const Amount base = base_->free(d, dim);
    return inside(d) ? base + freed_[(d.value - first_) * dims_ + dim] : base;
  }
  /// Idle devices in d's subtree once the removed victims are gone.
  [[nodiscard]] std::int64_t idle_devices(DomainId d) const {
    const std::int64_t base = base_->idle_devices(d);
    return inside(d) ? base + idle_gain_[d.value - first_] : base;
  }
  /// Placement entries left on device d once the removed victims are gone.
  [[nodiscard]] std::int64_t device_occupancy(DomainId d) const {
    const std::int64_t base = base_->device_occupancy(d);
    return inside(d) ? base - released_[d.value - first_] : base;
  }

 private:
  [[nodiscard]] bool inside(DomainId d) const noexcept {
    return d.value >= first_ && d.value < end_;
  }

  const Allocation* base_;
  DomainId domain_;
  std::uint32_t first_ = 0;
  std::uint32_t end_ = 0;
  std::size_t dims_ = 0;
  std::vector<Amount> freed_;             // (domain - first) x dims
  std::vector<std::int64_t> idle_gain_;   // per domain of the subtree
  std::vector<std::int64_t> released_;    // per device of the subtree: entries removed
};

static_assert(CapacityView<SubsetView>);

/// Whether `demand` fits inside `domain` as `view` stands, honouring its guaranteed scopes.
template <CapacityView View>
[[nodiscard]] bool fits_in(const View& view, const ResolvedDemand& demand, DomainId domain) {
  const Topology& topology = view.topology();
  if (demand.gang_required && topology.level(domain) < *demand.gang_required) {
    for (DomainId gang : topology.domains_at(*demand.gang_required, domain)) {
      if (replicas_that_fit(view, demand, gang) >= demand.replicas) return true;
    }
    return false;
  }
  return replicas_that_fit(view, demand, domain) >= demand.replicas;
}

/// A victim set after which the preemptor fits.
struct SubsetCandidate {
  bool valid = false;
  double cost = 0.0;
  double score = 0.0;               ///< the paper's S(C)
  int affinity = 0;                 ///< the paper's T(C): 15, 12 or 7
  std::vector<WorkloadId> ids;      ///< ascending
  DomainId domain;
};

/// True when `a` ranks strictly before `b` (an invalid `b` ranks last).
[[nodiscard]] inline bool ranks_before(const SubsetCandidate& a, const SubsetCandidate& b,
                                       SubsetRanking ranking) {
  if (!b.valid) return a.valid;
  if (!a.valid) return false;
  if (ranking == SubsetRanking::cost_first && a.cost != b.cost) return a.cost < b.cost;
  if (a.score != b.score) return a.score > b.score;
  if (a.ids.size() != b.ids.size()) return a.ids.size() < b.ids.size();
  if (a.ids != b.ids) return a.ids < b.ids;
  return a.domain < b.domain;
}

/// Options of `exhaustive_subsets_solver`, gathered for the search.
struct SubsetOptions {
  SubsetRanking ranking = SubsetRanking::cost_first;
  double alpha = 0.0;
  std::size_t max_victims_per_domain = 22;
  std::chrono::nanoseconds time_limit = std::chrono::nanoseconds::max();
  std::uint64_t node_limit = std::numeric_limits<std::uint64_t>::max();
};

/// One topology tier of a preemptor with best-effort scopes: those scopes made guaranteed at
/// one level each.
struct SubsetTier {
  ResolvedDemand demand;
  std::string label;
};

/// The tiers to try, tightest first (gang level outer, replica level inner, as DESIGN.md §3
/// ranks placements: tier first, then cost). `paper_score` keeps the paper's semantics, where a
/// best-effort scope never blocks a placement and topology only ranks (through T), so it gets
/// a single tier with the best-effort scopes dropped; so does a preemptor without them.
[[nodiscard]] inline std::vector<SubsetTier> subset_tiers(const Topology& topology,
                                                          const ResolvedDemand& demand,
                                                          SubsetRanking ranking) {
  const auto loose = [&] {
    ResolvedDemand plain = demand;
    plain.replica_preferred.reset();
    plain.gang_preferred.reset();
    return plain;
  };
  if (ranking == SubsetRanking::paper_score || (!demand.replica_preferred && !demand.gang_preferred)) {
    return {SubsetTier{loose(), "guaranteed scopes only"}};
  }
  const LevelIndex host = topology.host_level();
  std::vector<LevelIndex> replica_levels;
  if (demand.replica_preferred) {
    // unit_level is the loosest level allowed (the host, or a deeper guaranteed gang level).
    for (int level = *demand.replica_preferred; level >= std::max(host, demand.unit_level);
         --level) {
      replica_levels.push_back(static_cast<LevelIndex>(level));
    }
  } else {
    replica_levels.push_back(demand.unit_level);
  }
  std::vector<std::optional<LevelIndex>> gang_levels;
  if (demand.replicas == 1 || demand.gang_required || !demand.gang_preferred) {
    gang_levels.push_back(demand.replicas == 1 ? std::nullopt : demand.gang_required);
  } else {
    for (int level = *demand.gang_preferred; level >= 0; --level) {
      gang_levels.emplace_back(static_cast<LevelIndex>(level));
    }
  }
  std::vector<SubsetTier> tiers;
  for (const std::optional<LevelIndex>& gang : gang_levels) {
    for (LevelIndex replica : replica_levels) {
      SubsetTier tier{loose(), "replicas in one " + topology.levels()[replica]};
      tier.demand.unit_level = replica;
      // A single replica is its own gang, yet a guaranteed gang level still confines its unit.
      tier.demand.gang_required =
          gang ? gang : (demand.replicas == 1 ? demand.gang_required : std::nullopt);
      if (gang) tier.label += ", gang in one " + topology.levels()[*gang];
      tiers.push_back(std::move(tier));
    }
  }
  return tiers;
}

/// Why a domain did not provide the winning set.
enum class SubsetVerdictKind : std::uint8_t {
  no_fit, not_searched, over_cap, bounded, partly_searched, enumerated
};

/// A domain's verdict in compact form; formatted only for the few the plan keeps.
struct SubsetVerdict {
  DomainId domain;
  SubsetVerdictKind kind = SubsetVerdictKind::no_fit;
  std::size_t eligible = 0;
  double first = 0.0;   ///< cap (over_cap) or cheapest victim's cost (bounded)
  double second = 0.0;  ///< incumbent cost when bounded
};

/// Stores verdicts in the plan, by domain id; formats the first `max_rejected_verdicts` only.
inline void format_verdicts(PreemptionPlan& plan, std::vector<SubsetVerdict> verdicts) {
  std::sort(verdicts.begin(), verdicts.end(),
            [](const SubsetVerdict& a, const SubsetVerdict& b) { return a.domain < b.domain; });
  plan.rejected_total = verdicts.size();
  plan.rejected.clear();
  for (std::size_t i = 0; i < verdicts.size() && i < max_rejected_verdicts; ++i) {
    const SubsetVerdict& v = verdicts[i];
    const std::string victims = count_of(v.eligible, "eligible victim");
    std::string reason;
    switch (v.kind) {
      case SubsetVerdictKind::no_fit:
        reason = v.eligible == 0 ? "does not fit and holds no eligible victims"
                                 : "does not fit even after evicting all " + victims;
        break;
      case SubsetVerdictKind::not_searched:
        reason = "not searched: the node or time limit was reached (" + victims + ")";
        break;
      case SubsetVerdictKind::over_cap:
        reason = "skipped: " + victims + " exceed max_victims_per_domain (" +
                 std::to_string(static_cast<std::size_t>(v.first)) +
                 "); only the evict-all set was tried";
        break;
      case SubsetVerdictKind::bounded:
        reason = "cannot win: its cheapest eligible victim costs " + std::to_string(v.first) +
                 " > " + std::to_string(v.second) + " already found";
        break;
      case SubsetVerdictKind::partly_searched:
        reason = "partly searched: the node or time limit was reached (" + victims + ")";
        break;
      case SubsetVerdictKind::enumerated:
        reason = "all subsets of its " + victims + " enumerated; none ranks before the winner";
        break;
    }
    plan.rejected.push_back({v.domain, std::move(reason)});
  }
}

/// The search over all candidate domains for one preemptor. Not part of the public API.
template <CostModel M>
class SubsetSearch {
 public:
  SubsetSearch(const Allocation& state, const Workload& preemptor, const ResolvedDemand& demand,
               const M& model, const SubsetOptions& options)
      : state_(state),
        topology_(state.topology()),
        preemptor_(preemptor),
        demand_(demand),
        model_(model),
        options_(options),
        view_(state),
        started_(std::chrono::steady_clock::now()) {
    const LevelIndex host = topology_.host_level();
    // T(C)'s levels: "numa" and "socket" when the topology names them, else just below the host.
    const auto below_host = static_cast<LevelIndex>(host + 1);
    numa_level_ = topology_.find_level("numa").value_or(below_host);
    socket_level_ = topology_.find_level("socket").value_or(below_host);
    domain_level = host;
    if (demand.replicas > 1) {
      if (demand.gang_required && *demand.gang_required < host) {
        domain_level = *demand.gang_required;
      } else if (!demand.gang_required) {
        domain_level = 0;  // an unconstrained gang may span the whole cluster
      }
    }
  }

  /// Runs both phases; results are in the public fields below.
  void run() {
    screen();
    enumerate_domains();
  }

  SubsetCandidate best;
  bool complete = true;            ///< every feasible domain fully enumerated, no limit hit
  /// Whether an eligible victim could have been shrunk instead: the whole-eviction search then
  /// proves nothing about the true optimum.
  [[nodiscard]] bool elastic_seen() const noexcept { return elastic_seen_; }
  std::size_t skipped = 0;         ///< domains over `max_victims_per_domain`
  std::vector<SubsetVerdict> verdicts;  ///< compact; see `format_verdicts`
  SolverStatistics statistics;
  LevelIndex domain_level = 0;     ///< level of the enumerated domains

  /// Describes T: "one numa", "one socket", "cross-socket".
  [[nodiscard]] std::string affinity_text(int affinity) const {
    if (affinity == 15) return "one " + topology_.levels()[numa_level_];
    if (affinity == 12) return "one " + topology_.levels()[socket_level_];
    return "cross-" + topology_.levels()[socket_level_];
  }

 private:
  struct VictimInfo {
    WorkloadId id;
    double cost = 0.0;
    double weight = 0.0;  // priority + 2^31
    DomainId lca;         // of its entries inside the domain
    std::uint32_t entry_begin = 0;
    std::uint32_t entry_end = 0;
  };
  struct Screened {
    DomainId domain;
    std::size_t eligible = 0;
    double cheapest = 0.0;
  };

  /// Phase 1: per domain, can the preemptor fit even with every eligible victim gone? That set
  /// is itself the k = n candidate, so it seeds the incumbent.
  void screen() {
    for (DomainId domain : topology_.domains_at(domain_level)) {
      ++statistics.domains_considered;
      load_victims(domain);
      statistics.victims_considered += victims_.size();
      view_.reset(domain);
      for (std::size_t i = 0; i < victims_.size(); ++i) move(i, +1);
      if (!fits_in(view_, demand_, domain)) {
        ++statistics.domains_pruned;
        verdicts.push_back({domain, SubsetVerdictKind::no_fit, victims_.size(), 0.0, 0.0});
        continue;
      }
      double cost = 0.0;
      double weight = 0.0;
      DomainId lca;
      double cheapest = std::numeric_limits<double>::infinity();
      for (const VictimInfo& victim : victims_) {
        cost += victim.cost;
        weight += victim.weight;
        lca = join(lca, victim.lca);
        cheapest = std::min(cheapest, victim.cost);
      }
      chosen_.resize(victims_.size());
      for (std::size_t i = 0; i < victims_.size(); ++i) chosen_[i] = i;
      offer(domain, victims_.size(), cost, weight, lca);
      screened_.push_back({domain, victims_.size(), cheapest});
    }
  }

  /// Phase 2: enumerate k-subsets, k = 1..n, in every domain that passed the screen.
  void enumerate_domains() {
    for (const Screened& screened : screened_) {
      const DomainId domain = screened.domain;
      if (stopped_) {
        verdicts.push_back({domain, SubsetVerdictKind::not_searched, screened.eligible, 0.0, 0.0});
        continue;
      }
      if (screened.eligible > options_.max_victims_per_domain) {
        complete = false;
        ++skipped;
        ++statistics.domains_pruned;
        verdicts.push_back({domain, SubsetVerdictKind::over_cap, screened.eligible,
                            static_cast<double>(options_.max_victims_per_domain), 0.0});
        continue;
      }
      if (options_.ranking == SubsetRanking::cost_first && best.valid &&
          screened.cheapest > best.cost) {
        ++statistics.domains_pruned;
        verdicts.push_back({domain, SubsetVerdictKind::bounded, screened.eligible,
                            screened.cheapest, best.cost});
        continue;
      }
      load_victims(domain);
      view_.reset(domain);
      const std::size_t n = victims_.size();
      cost_.assign(n + 1, 0.0);
      weight_.assign(n + 1, 0.0);
      lca_.assign(n + 1, DomainId{});
      chosen_.assign(n, 0);
      for (std::size_t k = 1; k <= n && !stopped_; ++k) search(domain, 0, 0, k);
      if (stopped_) {
        verdicts.push_back({domain, SubsetVerdictKind::partly_searched, n, 0.0, 0.0});
        continue;
      }
      ++statistics.domains_solved;
      verdicts.push_back({domain, SubsetVerdictKind::enumerated, n, 0.0, 0.0});
    }
    if (stopped_) complete = false;
    // The winner's own domain did not lose, whatever was noted about it on the way.
    std::erase_if(verdicts,
                  [&](const SubsetVerdict& v) { return best.valid && v.domain == best.domain; });
  }

  /// Depth-first over the subsets of size `k` that extend chosen_[0..depth).
  void search(DomainId domain, std::size_t start, std::size_t depth, std::size_t k) {
    const std::size_t n = victims_.size();
    for (std::size_t i = start; i + (k - depth) <= n; ++i) {
      if (!tick()) return;
      const VictimInfo& victim = victims_[i];
      const double cost = cost_[depth] + victim.cost;
      const double weight = weight_[depth] + victim.weight;
      const DomainId lca = join(lca_[depth], victim.lca);
      if (dominated(cost, score(weight, lca), k)) continue;
      chosen_[depth] = i;
      move(i, +1);
      if (depth + 1 == k) {
        if (fits_in(view_, demand_, domain)) offer(domain, k, cost, weight, lca);
      } else {
        cost_[depth + 1] = cost;
        weight_[depth + 1] = weight;
        lca_[depth + 1] = lca;
        search(domain, i + 1, depth + 1, k);
      }
      move(i, -1);
      if (stopped_) return;
    }
  }

  /// Whether every k-subset extending a partial set (cost, score) ranks after the incumbent:
  /// extensions cost no less and score no more (S falls as victims are added).
  [[nodiscard]] bool dominated(double cost, double partial_score, std::size_t k) const {
    if (!best.valid) return false;
    if (options_.ranking == SubsetRanking::cost_first) {
      if (cost != best.cost) return cost > best.cost;
    }
    if (partial_score != best.score) return partial_score < best.score;
    return k > best.ids.size();
  }

  /// Counts a search node; false (and `stopped_`) once a limit is reached.
  bool tick() {
    if (stopped_) return false;
    // The clock is read every 256 nodes only: it costs more than a node.
    const bool out_of_time = (statistics.nodes_explored & 255U) == 0 &&
                             options_.time_limit != std::chrono::nanoseconds::max() &&
                             std::chrono::steady_clock::now() - started_ >= options_.time_limit;
    stopped_ = statistics.nodes_explored >= options_.node_limit || out_of_time;
    if (stopped_) {
      statistics.limit_reached = true;
      return false;
    }
    ++statistics.nodes_explored;
    return true;
  }

  void offer(DomainId domain, std::size_t k, double cost, double weight, DomainId lca) {
    candidate_.valid = true;
    candidate_.cost = cost;
    candidate_.score = score(weight, lca);
    candidate_.affinity = affinity(lca);
    candidate_.domain = domain;
    candidate_.ids.resize(k);
    for (std::size_t j = 0; j < k; ++j) candidate_.ids[j] = victims_[chosen_[j]].id;
    if (ranks_before(candidate_, best, options_.ranking)) best = candidate_;
  }

  /// T(C) from the lowest domain holding every victim's freed resources.
  [[nodiscard]] int affinity(DomainId lca) const {
    const LevelIndex level = topology_.level(lca);
    if (level >= numa_level_) return 15;
    if (level >= socket_level_) return 12;
    return 7;
  }
  /// S(C) = alpha / sum(priority + 2^31) + (1 - alpha) T(C); the sum is taken as at least 1 so
  /// that victims all at INT32_MIN priority do not divide by zero.
  [[nodiscard]] double score(double weight, DomainId lca) const {
    return options_.alpha / std::max(weight, 1.0) + (1.0 - options_.alpha) * affinity(lca);
  }
  [[nodiscard]] DomainId join(DomainId a, DomainId b) const {
    return a.valid() ? topology_.lowest_common_ancestor(a, b) : b;
  }

  void move(std::size_t victim, int sign) {
    const VictimInfo& info = victims_[victim];
    const std::size_t dims = topology_.schema().size();
    view_.move(std::span<const DomainId>(entry_domain_).subspan(info.entry_begin,
                                                                info.entry_end - info.entry_begin),
               std::span<const Amount>(entry_amount_)
                   .subspan(info.entry_begin * dims, (info.entry_end - info.entry_begin) * dims),
               sign);
  }

  /// The eligible victims of `domain` (sorted by id) with their entries inside it.
  void load_victims(DomainId domain) {
    ids_.clear();
    for (DomainId host : topology_.domains_at(topology_.host_level(), domain)) {
      state_.for_each_occupant_unordered(host, [&](const WorkloadView& view) {
        const Workload& workload = view.workload;
        if (workload.preemptible && workload.priority < preemptor_.priority) {
          ids_.push_back(workload.id);
        }
      });
    }
    // Sorted ids make the subset order, and so every tie, deterministic.
    std::sort(ids_.begin(), ids_.end());
    ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
    victims_.clear();
    entry_domain_.clear();
    entry_amount_.clear();
    const std::size_t dims = topology_.schema().size();
    constexpr double offset = 2147483648.0;  // 2^31, as in the paper
    for (WorkloadId id : ids_) {
      const WorkloadView view = state_.view(id);
      const Workload& workload = view.workload;
      VictimInfo info;
      info.id = id;
      info.cost = checked_cost(static_cast<double>(model_.evict(workload)), M::name, workload);
      info.weight = static_cast<double>(workload.priority) + offset;
      info.entry_begin = static_cast<std::uint32_t>(entry_domain_.size());
      for (std::size_t e = 0; e < view.domains.size(); ++e) {
        if (!topology_.contains(domain, view.domains[e])) continue;
        entry_domain_.push_back(view.domains[e]);
        for (std::size_t i = 0; i < dims; ++i) entry_amount_.push_back(view.amount(e, i));
        info.lca = join(info.lca, view.domains[e]);
      }
      info.entry_end = static_cast<std::uint32_t>(entry_domain_.size());
      if (info.entry_begin == info.entry_end) continue;  // holds nothing here
      elastic_seen_ = elastic_seen_ || workload.shrinkable_replicas() > 0;
      victims_.push_back(info);
    }
  }

  const Allocation& state_;
  const Topology& topology_;
  const Workload& preemptor_;
  const ResolvedDemand& demand_;
  const M& model_;
  SubsetOptions options_;
  SubsetView view_;
  std::chrono::steady_clock::time_point started_;
  LevelIndex numa_level_ = 0;
  LevelIndex socket_level_ = 0;
  bool stopped_ = false;
  bool elastic_seen_ = false;

  std::vector<Screened> screened_;
  std::vector<WorkloadId> ids_;
  std::vector<VictimInfo> victims_;
  std::vector<DomainId> entry_domain_;
  std::vector<Amount> entry_amount_;  // entries x dims
  // Per DFS depth: partial cost, priority weight and victims' common domain.
  std::vector<double> cost_;
  std::vector<double> weight_;
  std::vector<DomainId> lca_;
  std::vector<std::size_t> chosen_;
  SubsetCandidate candidate_;  // reused to avoid an allocation per feasible subset
};

}  // namespace detail

/// The topology-aware preemption paper's victim search (arXiv 2411.11560), as a baseline and
/// as a brute-force exact reference.
///
/// Domains: per node (host-level domain); for a multi-replica preemptor with a guaranteed gang
/// scope looser than the host, per domain of that gang level; for a multi-replica preemptor
/// without a guaranteed gang scope, the whole cluster is one domain. In each domain the eligible
/// victims (preemptible, priority < the preemptor's, holding anything there) are enumerated as
/// k-subsets for k = 1, 2, ..., n (k = 0, no preemption, is checked first on the whole cluster);
/// a subset is kept when, with its workloads removed (`SubsetView`), the preemptor fits inside
/// the domain honouring its guaranteed scopes (`replicas_that_fit`). Candidates are scored with
/// `S(C) = alpha / sum(priority + 2^31) + (1 - alpha) T(C)`, T = 15 when all the victims'
/// freed resources in the domain lie in one NUMA node, 12 in one socket, 7 otherwise (levels
/// "numa" and "socket" when the topology has them, else the level just below the host), and
/// ranked by `SubsetRanking`. A best-effort scope is a guarantee the paper's search does not
/// know: under `cost_first` the preemptor's tiers (best-effort levels made guaranteed, tightest
/// first) are searched in turn and the first tier with any feasible set wins, as DESIGN.md §3
/// ranks plans; under `paper_score` best-effort scopes never block a placement and topology
/// ranks only through T, as in the paper. Subsets that provably rank after the incumbent are not checked
/// (their cost and S are bounded by any subset they extend), which changes the work, never the
/// answer.
///
/// Victims are always evicted whole: the paper has no elastic jobs, so no shrink is tried, and
/// a plan among whose candidates an elastic workload was eligible claims no optimality.
///
/// Status: `optimal` (lower_bound = cost) when every feasible domain was fully enumerated under
/// `cost_first` and no eligible victim was elastic; `feasible` with an elastic candidate, under
/// `paper_score` (it optimises S, not cost), or when a domain was
/// skipped for having more than `max_victims_per_domain` eligible victims (its evict-all set is
/// still a candidate) or a time/node limit stopped the search (`statistics.limit_reached`);
/// `infeasible` when no domain fits even with all its eligible victims gone (always proven: that
/// screen runs before any limit applies); `no_preemption_needed` when the preemptor fits as is.
/// The time limit makes results timing-dependent; the node limit does not.
///
/// Options are chainable and return a modified copy:
/// `exhaustive_subsets.ranking(SubsetRanking::paper_score).alpha(0.5).node_limit(1'000'000)`.
/// Thread-safety: `solve` is const and reads `state` only.
class exhaustive_subsets_solver {
 public:
  /// The name plans and reports carry.
  static constexpr std::string_view name = "exhaustive_subsets";
  /// Exact: brute force over every subset (within its victim limit).
  static constexpr bool is_exact = true;
  /// A reference for comparison, not a solver to deploy (`is_baseline_v`).
  static constexpr bool is_baseline = true;

  /// How candidates are ranked (default `cost_first`).
  [[nodiscard]] constexpr exhaustive_subsets_solver ranking(SubsetRanking value) const {
    exhaustive_subsets_solver copy = *this;
    copy.options_.ranking = value;
    return copy;
  }
  /// The ranking in use.
  [[nodiscard]] constexpr SubsetRanking ranking() const noexcept { return options_.ranking; }

  /// The paper's alpha in [0, 1] (default 0, as in its code); throws `std::invalid_argument`
  /// otherwise.
  [[nodiscard]] constexpr exhaustive_subsets_solver alpha(double value) const {
    if (!(value >= 0.0 && value <= 1.0)) {
      throw std::invalid_argument("exhaustive_subsets: alpha must lie in [0, 1]");
    }
    exhaustive_subsets_solver copy = *this;
    copy.options_.alpha = value;
    return copy;
  }
  /// The alpha in use.
  [[nodiscard]] constexpr double alpha() const noexcept { return options_.alpha; }

  /// Domains with more eligible victims than this are not enumerated (default 22: 4 million
  /// subsets); the plan is then at best `feasible`.
  [[nodiscard]] constexpr exhaustive_subsets_solver max_victims_per_domain(std::size_t value) const {
    exhaustive_subsets_solver copy = *this;
    copy.options_.max_victims_per_domain = value;
    return copy;
  }
  /// The per-domain victim cap in use.
  [[nodiscard]] constexpr std::size_t max_victims_per_domain() const noexcept {
    return options_.max_victims_per_domain;
  }

  /// Stops enumerating after `limit` of wall time (checked every 256 subsets); throws
  /// `std::invalid_argument` on a negative limit.
  template <class Rep, class Period>
  [[nodiscard]] constexpr exhaustive_subsets_solver time_limit(
      std::chrono::duration<Rep, Period> limit) const {
    if (limit < std::chrono::duration<Rep, Period>::zero()) {
      throw std::invalid_argument("exhaustive_subsets: time_limit must not be negative");
    }
    exhaustive_subsets_solver copy = *this;
    copy.options_.time_limit =
        std::chrono::duration<double>(limit) >= std::chrono::duration<double>(std::chrono::hours(24 * 365))
            ? std::chrono::nanoseconds::max()
            : std::chrono::duration_cast<std::chrono::nanoseconds>(limit);
    return copy;
  }
  /// The time limit in use (`nanoseconds::max()` = none).
  [[nodiscard]] constexpr std::chrono::nanoseconds time_limit() const noexcept {
    return options_.time_limit;
  }

  /// Stops enumerating after `limit` subsets (search nodes).
  [[nodiscard]] constexpr exhaustive_subsets_solver node_limit(std::uint64_t limit) const {
    exhaustive_subsets_solver copy = *this;
    copy.options_.node_limit = limit;
    return copy;
  }
  /// The node limit in use.
  [[nodiscard]] constexpr std::uint64_t node_limit() const noexcept { return options_.node_limit; }

  /// Chooses victims for `preemptor` (see the type's documentation). Throws
  /// `std::invalid_argument` naming the preemptor if it is invalid or already running, and the
  /// cost model's error for an invalid price; `state` is never modified.
  template <CostModel M>
  [[nodiscard]] PreemptionPlan solve(const Allocation& state, const Workload& preemptor,
                                     const M& cost_model) const {
    const auto started = std::chrono::steady_clock::now();
    const Topology& topology = state.topology();
    const ResolvedDemand demand = detail::resolve_preemptor(state, preemptor, name);
    check_price_sum(state, preemptor, cost_model);
    PreemptionPlan plan;
    plan.solver = std::string(name);
    const std::string title = std::string(name) + " (" + std::string(to_string(options_.ranking)) +
                              ", alpha " + std::to_string(options_.alpha) + "): " +
                              preemptor.label();
    const auto finish = [&]() -> PreemptionPlan {
      plan.statistics.seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      topopreempt::detail::record_dependencies(state, preemptor, plan);  // what commit checks
      // Like the solvers' explanations, it ends its last line: a caller that prints something
      // after it starts on a line of its own.
      if (!plan.explanation.ends_with('\n')) plan.explanation += '\n';
      return std::move(plan);
    };

    if (detail::fits_already(state, demand, plan)) {
      plan.explanation = title + " fits as the cluster stands (k = 0); no preemption needed";
      return finish();
    }

    // Tightest tier first: the first tier with any feasible victim set wins (DESIGN.md §3).
    const std::vector<detail::SubsetTier> tiers =
        detail::subset_tiers(topology, demand, options_.ranking);
    std::optional<detail::SubsetSearch<M>> found;
    const detail::SubsetTier* tier = nullptr;
    for (const detail::SubsetTier& candidate : tiers) {
      // Limits are shared by all tiers.
      detail::SubsetOptions budget = options_;
      budget.node_limit -= std::min(budget.node_limit, plan.statistics.nodes_explored);
      if (budget.time_limit != std::chrono::nanoseconds::max()) {
        budget.time_limit -= std::min(budget.time_limit,
                                      std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now() - started));
      }
      found.emplace(state, preemptor, candidate.demand, cost_model, budget);
      found->run();
      topopreempt::detail::accumulate(plan.statistics, found->statistics);
      tier = &candidate;
      if (found->best.valid) break;
    }
    detail::SubsetSearch<M>& search = *found;
    const std::string scope = "per " + topology.levels()[search.domain_level];
    if (!search.best.valid) {
      plan.status = PlanStatus::infeasible;
      detail::format_verdicts(plan, std::move(search.verdicts));
      plan.explanation = title + " is infeasible: no " + topology.levels()[search.domain_level] +
                         " fits it even after evicting all its eligible victims (" +
                         detail::count_of(plan.rejected_total, "domain") + " screened" +
                         (tiers.size() > 1 ? ", loosest tier: " + tier->label : std::string()) +
                         ")";
      if (const std::string unplaceable = guarantee_without_devices(topology, preemptor, demand);
          !unplaceable.empty()) {
        plan.explanation += ": " + unplaceable;
      }
      return finish();
    }

    const detail::SubsetCandidate& best = search.best;
    OverlayView<Allocation> after(state);
    for (WorkloadId id : best.ids) {
      const Workload& victim = state.workload(id);
      const Placement where = state.placement(id);
      after.release(where);
      Victim v;
      v.id = id;
      v.action = VictimAction::evict;
      v.cost = checked_cost(static_cast<double>(cost_model.evict(victim)), M::name, victim);
      ResourceVector freed = topology.schema().zeros();
      DomainId lca;
      for (const auto& replica : where.replicas) {
        for (const auto& entry : replica.entries) {
          if (!topology.contains(best.domain, entry.domain)) continue;
          freed += entry.amount;
          lca = lca.valid() ? topology.lowest_common_ancestor(lca, entry.domain) : entry.domain;
        }
      }
      v.reason = "priority " + std::to_string(victim.priority) + " < " +
                 std::to_string(preemptor.priority) + "; frees " + topology.schema().format(freed) +
                 " in " + topology.describe(lca);
      if (victim.replicas > 1) {
        v.reason += "; evicts the whole gang of " + std::to_string(victim.replicas) + " replicas";
      }
      if (victim.min_replicas) v.reason += "; elastic, but evicted whole (no shrink in the paper)";
      plan.cost += v.cost;
      plan.victims.push_back(std::move(v));
    }
    const PlacementSearchResult placed = find_placement(after, tier->demand, best.domain);
    if (!placed.found) {
      throw std::logic_error("exhaustive_subsets: the chosen victims free " +
                             topology.describe(best.domain) +
                             " by count but no placement was found (internal inconsistency)");
    }
    plan.placement = placed.placement;
    plan.target_domain = best.domain;
    detail::set_levels(plan, topology);
    plan.topology_satisfied = true;
    const bool optimal = search.complete && options_.ranking == SubsetRanking::cost_first &&
                         !search.elastic_seen();
    plan.status = optimal ? PlanStatus::optimal : PlanStatus::feasible;
    plan.lower_bound = optimal ? plan.cost : 0.0;
    detail::format_verdicts(plan, std::move(search.verdicts));

    std::string text = title + " (priority " + std::to_string(preemptor.priority) + "), " + scope +
                       " k-subset search" +
                       (tiers.size() > 1 ? " at tier '" + tier->label + "'" : std::string()) +
                       ": evict " + detail::count_of(plan.victims.size(), "victim") +
                       " in " + topology.describe(best.domain) + ", cost " +
                       std::to_string(plan.cost) + " (" + std::string(M::name) + "), S " +
                       std::to_string(best.score) + ", T " + std::to_string(best.affinity) + " (" +
                       search.affinity_text(best.affinity) + ")";
    for (const Victim& v : plan.victims) text += "; " + state.workload(v.id).label() + ": " + v.reason;
    text += ". Placement: " + plan.placement.describe(topology) + ". Status " +
            std::string(to_string(plan.status));
    if (optimal) {
      text += ": every subset of every feasible domain was ranked";
    } else if (options_.ranking == SubsetRanking::paper_score && search.complete) {
      text += ": best by the paper's score, no cost optimality claim";
    } else if (search.complete) {
      text += ": not proven optimal (elastic candidates were only considered for whole "
              "eviction; a shrink might cost less)";
    } else {
      std::string why;
      if (search.skipped > 0) why = detail::count_of(search.skipped, "domain") + " over the victim cap";
      if (plan.statistics.limit_reached) {
        why += (why.empty() ? "" : ", ") + std::string("a node or time limit was reached");
      }
      text += ": not proven optimal (" + why + ")";
    }
    text += ".";
    detail::append_losers(text, plan, topology, "domain");
    plan.explanation = std::move(text);
    return finish();
  }

 private:
  detail::SubsetOptions options_;
};

/// Ready-to-use instance with default options: `exhaustive_subsets.solve(state, p, model)`.
inline constexpr exhaustive_subsets_solver exhaustive_subsets{};

}  // namespace topopreempt::baselines
