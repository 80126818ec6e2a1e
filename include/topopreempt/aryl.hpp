// SPDX-License-Identifier: MIT
#pragma once
/// @file aryl.hpp
/// Aryl / Lyra (Li et al., arXiv 2202.07896, EuroSys'23): reclaiming servers loaned from
/// inference to training by lowest *server preemption cost*, and handing spare GPUs to elastic
/// jobs by a multiple-choice knapsack.
///
/// - `server_preemption_cost` / `server_preemption_breakdown`: what reclaiming one host costs
///   as the state stands (elastic jobs drop their replicas there if they can stay at or above
///   `min_replicas`, every other job on the host is preempted whole).
/// - `reclaim_servers`: Aryl's greedy (cheapest host first, costs recomputed after each pick);
///   `reclaim_servers_exact`: exhaustive search over host subsets for small inputs, to measure
///   the greedy's optimality gap; `apply_reclaim` carries a plan out on a state.
/// - `scale_elastic_jobs`: exact multiple-choice knapsack (one group per elastic job, item = w
///   extra workers) solved through `detail::solve_min_cost_covering`.
/// - `aryl_shrink_first`: a `CostModel` that makes every solver of the library prefer dropping
///   elastic workers to preempting jobs, as Aryl does.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "topopreempt/allocation.hpp"
#include "topopreempt/cost_model.hpp"
#include "topopreempt/detail/min_cost_covering.hpp"
#include "topopreempt/preemption_plan.hpp"
#include "topopreempt/topology.hpp"
#include "topopreempt/workload.hpp"

namespace topopreempt::aryl {

/// Aryl's preference as a `CostModel`: dropping an elastic worker costs `shrink_weight` per
/// dropped replica, preempting a job costs `evict_weight` per replica it runs. With the default
/// weights (1 and 10) shrinking is an order of magnitude cheaper per replica, so every solver
/// drops elastic workers before it preempts anything, and among preemptions prefers small jobs.
struct aryl_shrink_first {
  static constexpr std::string_view name = "aryl_shrink_first";
  double shrink_weight = 1.0;  ///< price of one dropped elastic replica
  double evict_weight = 10.0;  ///< price of each replica of a preempted job
  /// `evict_weight` x the victim's replicas.
  [[nodiscard]] double evict(const Workload& victim) const noexcept {
    return evict_weight * victim.replicas;
  }
  /// `shrink_weight` x `dropped`.
  [[nodiscard]] double shrink(const Workload&, std::int32_t dropped) const noexcept {
    return shrink_weight * dropped;
  }
};

static_assert(CostModel<aryl_shrink_first>);

/// What reclaiming one host costs, victim by victim.
struct ServerCost {
  DomainId host;
  /// Sum of the victims' costs; +infinity when the host is not reclaimable.
  double cost = 0.0;
  /// False when a workload on the host is not preemptible: it can be neither shrunk nor
  /// preempted, so the host cannot be handed back.
  bool reclaimable = true;
  /// One entry per workload on the host, ascending id. `dropped_replicas` are indices into
  /// that workload's replica list in the state that was priced.
  std::vector<Victim> victims;
  /// Why the host is not reclaimable (empty when it is).
  std::string blocked_reason;
};

/// One pick of a reclaim plan.
struct ReclaimStep {
  DomainId host;
  /// Marginal cost of this host at the moment it was picked, i.e. after the previous steps'
  /// shrinks and preemptions (the quantity Aryl's greedy compares).
  double cost = 0.0;
  /// What this pick does. `dropped_replicas` are indices into the workload's replica list in
  /// the *input* state (not renumbered by earlier shrinks), so steps can be read independently.
  std::vector<Victim> victims;
  friend bool operator==(const ReclaimStep&, const ReclaimStep&) = default;
};

/// Result of `reclaim_servers` / `reclaim_servers_exact`.
struct ReclaimPlan {
  /// `feasible` (greedy: no optimality claim), `optimal` (exact search), `infeasible` (not
  /// enough reclaimable loaned hosts; see `explanation`) or `no_preemption_needed` (zero
  /// servers asked for).
  PlanStatus status = PlanStatus::infeasible;
  std::string solver;              ///< "aryl_greedy" or "aryl_exact"
  std::vector<ReclaimStep> steps;  ///< pick order (greedy) or ascending host id (exact)
  /// Net effect on the input state, one entry per disrupted workload, ascending id: a job
  /// shrunk at one pick and preempted at a later one appears once, as `evict`. `cost` of each
  /// entry is the model's price of that net action on the input workload.
  std::vector<Victim> victims;
  /// Sum of `victims[i].cost`: the real disruption of reclaiming exactly these hosts. This is
  /// what `reclaim_servers_exact` minimises, so greedy and exact plans compare on it.
  double cost = 0.0;
  /// Sum of `steps[i].cost`. Equals `cost` unless a job is touched at several picks: a job
  /// shrunk at one pick and preempted at a later one is then counted as the shrink plus the
  /// preemption of the already shrunk job, while `cost` prices one preemption of the job as it
  /// stood (either may be larger, depending on the model).
  double step_cost_sum = 0.0;
  std::uint64_t cost_evaluations = 0;  ///< host costs computed (greedy recomputations included)
  std::uint64_t subsets_explored = 0;  ///< host subsets priced (exact only)
  std::string explanation;             ///< readable summary; the reason when infeasible

  /// The reclaimed hosts in step order.
  [[nodiscard]] std::vector<DomainId> hosts() const {
    std::vector<DomainId> result;
    result.reserve(steps.size());
    for (const ReclaimStep& step : steps) result.push_back(step.host);
    return result;
  }
  friend bool operator==(const ReclaimPlan&, const ReclaimPlan&) = default;
};

/// Most loaned hosts `reclaim_servers_exact` accepts (it enumerates host subsets).
inline constexpr std::size_t max_exact_loaned_hosts = 16;

namespace impl {

[[nodiscard]] inline std::string number(double value) {
  char buffer[32];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return error == std::errc() ? std::string(buffer, end) : std::string("?");
}

/// Throws `std::invalid_argument` unless `host` is a host-level domain of `topology`.
inline void check_host(const Topology& topology, DomainId host, const std::string& what) {
  if (!topology.valid_domain(host)) {
    throw std::invalid_argument("aryl: " + what + " (domain id " + std::to_string(host.value) +
                                ") is not in the topology");
  }
  if (topology.level(host) != topology.host_level()) {
    throw std::invalid_argument("aryl: " + what + " (" + topology.describe(host) + ") is not a '" +
                                topology.levels()[topology.host_level()] + "' domain");
  }
}

/// Indices of the replicas of `view` that run on `host` (a replica never spans hosts, so its
/// first entry decides).
[[nodiscard]] inline std::vector<std::int32_t> replicas_on(const Topology& topology,
                                                           const WorkloadView& view, DomainId host) {
  std::vector<std::int32_t> result;
  for (std::size_t r = 0; r < view.replica_begin.size(); ++r) {
    const auto [first, last] = view.replica_entries(r);
    if (first < last && topology.ancestor_at(view.domains[first], topology.host_level()) == host) {
      result.push_back(static_cast<std::int32_t>(r));
    }
  }
  return result;
}

/// What losing `lost` replicas does to `workload` (as it currently stands), priced by `model`.
/// Aryl's rule: an elastic job that stays at or above its minimum just drops the workers;
/// anything else is preempted whole. `dropped_replicas` is left for the caller to fill.
template <CostModel Model>
[[nodiscard]] Victim consequence(const Workload& workload, std::int32_t lost, const Model& model,
                                 std::string_view where) {
  Victim victim;
  victim.id = workload.id;
  const std::int32_t left = workload.replicas - lost;
  if (workload.min_replicas && left >= *workload.min_replicas) {
    victim.action = VictimAction::shrink;
    victim.cost = checked_cost(model.shrink(workload, lost), Model::name, workload);
    victim.reason = "drops " + std::to_string(lost) + " of " + std::to_string(workload.replicas) +
                    " replicas" + std::string(where) + ", keeps " + std::to_string(left) +
                    " >= min " + std::to_string(*workload.min_replicas);
  } else {
    victim.action = VictimAction::evict;
    victim.cost = checked_cost(model.evict(workload), Model::name, workload);
    victim.reason =
        workload.min_replicas
            ? "preempted: losing " + std::to_string(lost) + " replicas" + std::string(where) +
                  " would leave " + std::to_string(left) + " < min " +
                  std::to_string(*workload.min_replicas)
            : "preempted: not elastic, loses " + std::to_string(lost) + " of " +
                  std::to_string(workload.replicas) + " replicas" + std::string(where);
  }
  return victim;
}

/// The loaned hosts and the workloads on them, with the consequences of picks applied so far.
/// This is the "scratch copy of the state" of Aryl's greedy, restricted to what reclaiming can
/// change: copying a whole `Allocation` per decision would cost O(cluster) for nothing.
class Ledger {
 public:
  struct Tracked {
    Workload original;                 // as in the input state
    Workload current;                  // replicas reduced by the shrinks applied so far
    std::vector<std::int32_t> dropped;  // input-state indices dropped so far
    std::vector<std::size_t> hosts;     // positions of the loaned hosts it touches
    std::int32_t lost = 0;              // its replicas on the hosts picked so far
    bool evicted = false;
  };
  struct Entry {
    std::size_t tracked = 0;
    std::vector<std::int32_t> replicas;  // input-state indices on this host
  };

  Ledger(const Allocation& state, std::span<const DomainId> loaned)
      : hosts_(loaned.size()), blocked_(loaned.size()) {
    const Topology& topology = state.topology();
    for (std::size_t i = 0; i < loaned.size(); ++i) {
      check_host(topology, loaned[i], "loaned host #" + std::to_string(i));
      for (std::size_t j = 0; j < i; ++j) {
        if (loaned[j] == loaned[i]) {
          throw std::invalid_argument("aryl: loaned host #" + std::to_string(i) + " (" +
                                      topology.describe(loaned[i]) + ") is listed twice");
        }
      }
    }
    std::map<std::uint64_t, std::size_t> index;  // ordered: tracked ids in first-seen order
    for (std::size_t p = 0; p < loaned.size(); ++p) {
      state.for_each_occupant(loaned[p], [&](const WorkloadView& view) {
        std::vector<std::int32_t> on = replicas_on(topology, view, loaned[p]);
        if (on.empty()) return;
        auto [it, inserted] = index.try_emplace(view.workload.id.value, tracked_.size());
        if (inserted) tracked_.push_back({view.workload, view.workload, {}, {}, false});
        tracked_[it->second].hosts.push_back(p);
        hosts_[p].push_back({it->second, std::move(on)});
        if (!view.workload.preemptible && blocked_[p].empty()) {
          blocked_[p] = view.workload.label() + " on " + topology.describe(loaned[p]) +
                        " is not preemptible";
        }
      });
    }
    names_.reserve(loaned.size());
    for (DomainId host : loaned) names_.push_back(" on " + topology.path(host));
  }

  [[nodiscard]] std::size_t host_count() const noexcept { return hosts_.size(); }
  [[nodiscard]] const std::string& blocked(std::size_t p) const { return blocked_.at(p); }
  [[nodiscard]] const std::vector<Tracked>& tracked() const noexcept { return tracked_; }
  [[nodiscard]] const std::vector<Entry>& entries(std::size_t p) const { return hosts_[p]; }

  /// Marginal consequences of reclaiming host p now (ascending workload id).
  template <CostModel Model>
  [[nodiscard]] std::vector<Victim> price(std::size_t p, const Model& model) const {
    std::vector<Victim> victims;
    for (const Entry& entry : hosts_[p]) {
      const Tracked& t = tracked_[entry.tracked];
      if (t.evicted) continue;
      Victim victim =
          consequence(t.current, static_cast<std::int32_t>(entry.replicas.size()), model, names_[p]);
      if (victim.action == VictimAction::shrink) victim.dropped_replicas = entry.replicas;
      victims.push_back(std::move(victim));
    }
    std::sort(victims.begin(), victims.end(),
              [](const Victim& a, const Victim& b) { return a.id < b.id; });
    return victims;
  }

  /// Applies the consequences of reclaiming host p; returns the hosts whose cost may change.
  std::vector<std::size_t> apply(std::size_t p, const std::vector<Victim>& victims) {
    std::vector<std::size_t> dirty;
    for (const Entry& entry : hosts_[p]) {
      Tracked& t = tracked_[entry.tracked];
      t.lost += static_cast<std::int32_t>(entry.replicas.size());
      if (t.evicted) continue;
      const auto it = std::find_if(victims.begin(), victims.end(),
                                   [&](const Victim& v) { return v.id == t.original.id; });
      if (it->action == VictimAction::shrink) {
        t.current.replicas -= static_cast<std::int32_t>(entry.replicas.size());
        t.dropped.insert(t.dropped.end(), entry.replicas.begin(), entry.replicas.end());
        std::sort(t.dropped.begin(), t.dropped.end());
      } else {
        t.evicted = true;
      }
      dirty.insert(dirty.end(), t.hosts.begin(), t.hosts.end());
    }
    std::sort(dirty.begin(), dirty.end());
    dirty.erase(std::unique(dirty.begin(), dirty.end()), dirty.end());
    return dirty;
  }

  /// Net effect on the input state of the picks applied so far (ascending id).
  template <CostModel Model>
  [[nodiscard]] std::vector<Victim> net_victims(const Model& model) const {
    std::vector<Victim> victims;
    for (const Tracked& t : tracked_) {
      if (t.lost == 0) continue;
      // Preempted at some pick exactly when its replicas on all picked hosts take it below its
      // minimum, so pricing the total loss on the input workload gives the same action.
      Victim victim = consequence(t.original, t.lost, model, " on reclaimed hosts");
      if (victim.action == VictimAction::shrink) victim.dropped_replicas = t.dropped;
      victims.push_back(std::move(victim));
    }
    std::sort(victims.begin(), victims.end(),
              [](const Victim& a, const Victim& b) { return a.id < b.id; });
    return victims;
  }

 private:
  std::vector<Tracked> tracked_;
  std::vector<std::vector<Entry>> hosts_;
  std::vector<std::string> blocked_;  // per host: why it is not reclaimable, or empty
  std::vector<std::string> names_;
};

[[nodiscard]] inline std::string infeasible_reason(const Ledger& ledger,
                                                   std::span<const DomainId> loaned,
                                                   std::size_t needed) {
  std::size_t reclaimable = 0;
  std::string blockers;
  for (std::size_t p = 0; p < ledger.host_count(); ++p) {
    if (ledger.blocked(p).empty()) {
      ++reclaimable;
    } else if (blockers.size() < 400) {
      blockers += "; " + ledger.blocked(p);
    }
  }
  return std::to_string(needed) + " servers needed but only " + std::to_string(reclaimable) +
         " of " + std::to_string(loaned.size()) + " loaned hosts are reclaimable" + blockers;
}

[[nodiscard]] inline std::string summary(const ReclaimPlan& plan, const Topology& topology) {
  std::string text = plan.solver + ": reclaims " + std::to_string(plan.steps.size()) + " hosts:";
  for (const ReclaimStep& step : plan.steps) {
    text += " " + topology.path(step.host) + " (" + number(step.cost) + ")";
  }
  text += "; " + std::to_string(plan.victims.size()) + " workloads disrupted, cost " +
          number(plan.cost);
  return text;
}

template <CostModel Model>
void finish(ReclaimPlan& plan, const Ledger& ledger, const Model& model, const Topology& topology) {
  plan.victims = ledger.net_victims(model);
  plan.cost = 0.0;
  for (const Victim& victim : plan.victims) plan.cost += victim.cost;
  plan.step_cost_sum = 0.0;
  for (const ReclaimStep& step : plan.steps) plan.step_cost_sum += step.cost;
  plan.explanation = summary(plan, topology);
}

}  // namespace impl

/// What reclaiming `host` costs as `state` stands, victim by victim: for every workload with
/// replicas on the host, an elastic job (`min_replicas` set) that keeps at least
/// `min_replicas` after losing those replicas is shrunk (`model.shrink(job, lost)`), any other
/// is preempted whole (`model.evict(job)`); a workload that is not preemptible blocks the host
/// (cost +infinity). Priorities play no part: loaned capacity is reclaimed unconditionally.
///
/// Throws `std::invalid_argument` naming the domain if `host` is not a host-level domain of the
/// state's topology, or naming the model and victim if a price is negative or not finite.
template <CostModel Model = aryl_shrink_first>
[[nodiscard]] ServerCost server_preemption_breakdown(const Allocation& state, DomainId host,
                                                     const Model& model = {}) {
  const Topology& topology = state.topology();
  impl::check_host(topology, host, "host");
  ServerCost result;
  result.host = host;
  const std::string where = " on " + topology.path(host);
  state.for_each_occupant(host, [&](const WorkloadView& view) {
    std::vector<std::int32_t> on = impl::replicas_on(topology, view, host);
    if (on.empty()) return;
    if (!view.workload.preemptible) {
      if (result.reclaimable) {
        result.blocked_reason = view.workload.label() + where + " is not preemptible";
      }
      result.reclaimable = false;
      return;
    }
    Victim victim =
        impl::consequence(view.workload, static_cast<std::int32_t>(on.size()), model, where);
    if (victim.action == VictimAction::shrink) victim.dropped_replicas = std::move(on);
    result.cost += victim.cost;
    result.victims.push_back(std::move(victim));
  });
  if (!result.reclaimable) result.cost = std::numeric_limits<double>::infinity();
  return result;
}

/// Aryl's server preemption cost of `host` in `state` (see `server_preemption_breakdown`);
/// +infinity when a non-preemptible workload runs there.
template <CostModel Model = aryl_shrink_first>
[[nodiscard]] double server_preemption_cost(const Allocation& state, DomainId host,
                                            const Model& model = {}) {
  return server_preemption_breakdown(state, host, model).cost;
}

/// Aryl's reclaim: picks `servers_needed` of the `loaned_hosts` one at a time, each time the
/// host with the lowest server preemption cost (ties: lowest domain id), and applies its
/// consequences before pricing the rest again, so that a gang preempted for one host no longer
/// costs anything on the others, and a job shrunk once may have to be preempted on the next.
/// Only the hosts whose workloads changed are re-priced. `state` is not modified.
///
/// Status: `feasible` (no optimality claim; compare with `reclaim_servers_exact`),
/// `no_preemption_needed` when `servers_needed` is 0, `infeasible` when fewer than
/// `servers_needed` loaned hosts are reclaimable (explanation says why).
/// Throws `std::invalid_argument` naming the host for a domain that is not a host of the
/// topology or a host listed twice, and naming the victim for an invalid price.
/// Complexity: O(H x W) to price H loaned hosts carrying W workload-host pairs, plus the
/// re-pricing of touched hosts after each pick.
template <CostModel Model = aryl_shrink_first>
[[nodiscard]] ReclaimPlan reclaim_servers(const Allocation& state,
                                          std::span<const DomainId> loaned_hosts,
                                          std::size_t servers_needed, const Model& model = {}) {
  const Topology& topology = state.topology();
  impl::Ledger ledger(state, loaned_hosts);
  ReclaimPlan plan;
  plan.solver = "aryl_greedy";
  if (servers_needed == 0) {
    plan.status = PlanStatus::no_preemption_needed;
    plan.explanation = "no servers needed";
    return plan;
  }
  const std::size_t n = loaned_hosts.size();
  std::vector<double> cost(n, std::numeric_limits<double>::infinity());
  std::vector<bool> open(n, false);
  std::size_t reclaimable = 0;
  const auto reprice = [&](std::size_t p) {
    double sum = 0.0;
    for (const Victim& victim : ledger.price(p, model)) sum += victim.cost;
    cost[p] = sum;
    ++plan.cost_evaluations;
  };
  for (std::size_t p = 0; p < n; ++p) {
    open[p] = ledger.blocked(p).empty();
    if (open[p]) {
      ++reclaimable;
      reprice(p);
    }
  }
  if (reclaimable < servers_needed) {
    plan.status = PlanStatus::infeasible;
    plan.explanation = "aryl_greedy: " + impl::infeasible_reason(ledger, loaned_hosts, servers_needed);
    return plan;
  }
  for (std::size_t step = 0; step < servers_needed; ++step) {
    std::size_t best = n;
    for (std::size_t p = 0; p < n; ++p) {
      if (!open[p]) continue;
      if (best == n || cost[p] < cost[best] ||
          (cost[p] == cost[best] && loaned_hosts[p] < loaned_hosts[best])) {
        best = p;
      }
    }
    std::vector<Victim> victims = ledger.price(best, model);
    open[best] = false;
    for (std::size_t p : ledger.apply(best, victims)) {
      if (open[p]) reprice(p);
    }
    plan.steps.push_back({loaned_hosts[best], cost[best], std::move(victims)});
  }
  plan.status = PlanStatus::feasible;
  impl::finish(plan, ledger, model, topology);
  return plan;
}

/// Exact reclaim for small inputs: prices every subset of `servers_needed` reclaimable loaned
/// hosts by the net disruption of reclaiming them together (an elastic job losing k replicas
/// on the subset is shrunk by k if it stays at or above its minimum, otherwise preempted) and
/// returns a cheapest one (ties: the first subset in enumeration order). Steps are listed in
/// ascending host id with their marginal costs in that order. Status `optimal`, or as
/// `reclaim_servers` for zero servers and infeasible inputs.
///
/// Throws `std::length_error` for more than `max_exact_loaned_hosts` loaned hosts, otherwise
/// as `reclaim_servers`. Complexity: O(C(H, k) x k x W) for H hosts, k servers.
template <CostModel Model = aryl_shrink_first>
[[nodiscard]] ReclaimPlan reclaim_servers_exact(const Allocation& state,
                                                std::span<const DomainId> loaned_hosts,
                                                std::size_t servers_needed, const Model& model = {}) {
  if (loaned_hosts.size() > max_exact_loaned_hosts) {
    throw std::length_error("aryl: reclaim_servers_exact takes at most " +
                            std::to_string(max_exact_loaned_hosts) + " loaned hosts, got " +
                            std::to_string(loaned_hosts.size()));
  }
  const Topology& topology = state.topology();
  impl::Ledger ledger(state, loaned_hosts);
  ReclaimPlan plan;
  plan.solver = "aryl_exact";
  if (servers_needed == 0) {
    plan.status = PlanStatus::no_preemption_needed;
    plan.explanation = "no servers needed";
    return plan;
  }
  // Candidate hosts in ascending domain id, so that bit i of a subset is the i-th lowest host.
  std::vector<std::size_t> candidates;
  for (std::size_t p = 0; p < loaned_hosts.size(); ++p) {
    if (ledger.blocked(p).empty()) candidates.push_back(p);
  }
  std::sort(candidates.begin(), candidates.end(),
            [&](std::size_t a, std::size_t b) { return loaned_hosts[a] < loaned_hosts[b]; });
  if (candidates.size() < servers_needed) {
    plan.status = PlanStatus::infeasible;
    plan.explanation = "aryl_exact: " + impl::infeasible_reason(ledger, loaned_hosts, servers_needed);
    return plan;
  }
  const auto& tracked = ledger.tracked();
  std::vector<std::int32_t> lost(tracked.size(), 0);
  std::vector<std::size_t> touched;
  const auto subset_cost = [&](std::uint32_t subset) {
    touched.clear();
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      if (!(subset >> i & 1U)) continue;
      for (const auto& entry : ledger.entries(candidates[i])) {
        if (lost[entry.tracked] == 0) touched.push_back(entry.tracked);
        lost[entry.tracked] += static_cast<std::int32_t>(entry.replicas.size());
      }
    }
    double sum = 0.0;
    for (std::size_t t : touched) {
      sum += impl::consequence(tracked[t].original, lost[t], model, "").cost;
      lost[t] = 0;
    }
    return sum;
  };
  // Gosper's hack walks the k-subsets of candidates.size() bits in increasing integer order.
  const std::uint32_t limit = std::uint32_t{1} << candidates.size();
  std::uint32_t subset = (std::uint32_t{1} << servers_needed) - 1U;
  std::uint32_t best_subset = subset;
  double best_cost = std::numeric_limits<double>::infinity();
  while (subset < limit) {
    const double c = subset_cost(subset);
    ++plan.subsets_explored;
    if (c < best_cost) {
      best_cost = c;
      best_subset = subset;
    }
    const std::uint32_t low = subset & (~subset + 1U);
    const std::uint32_t ripple = subset + low;
    if (ripple == 0) break;
    subset = (((ripple ^ subset) >> 2U) / low) | ripple;
  }
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (!(best_subset >> i & 1U)) continue;
    const std::size_t p = candidates[i];
    std::vector<Victim> victims = ledger.price(p, model);
    double sum = 0.0;
    for (const Victim& victim : victims) sum += victim.cost;
    ++plan.cost_evaluations;
    (void)ledger.apply(p, victims);
    plan.steps.push_back({loaned_hosts[p], sum, std::move(victims)});
  }
  plan.status = PlanStatus::optimal;
  impl::finish(plan, ledger, model, topology);
  return plan;
}

/// Carries out `plan.victims` on `state`: preempts (`remove`) the evicted workloads and drops
/// the listed replicas of the shrunk ones. Strong guarantee: works on a copy and swaps it in,
/// so on any error (a victim not running, a replica index out of range, a shrink below the
/// minimum: the plan was made for another state) `state` is unchanged and the message names
/// the victim.
inline void apply_reclaim(Allocation& state, const ReclaimPlan& plan) {
  Allocation next = state;
  for (const Victim& victim : plan.victims) {
    try {
      if (victim.action == VictimAction::evict) {
        next.remove(victim.id);
      } else {
        next.shrink(victim.id, victim.dropped_replicas);
      }
    } catch (const std::exception& error) {
      throw std::invalid_argument("aryl: cannot apply reclaim victim workload " +
                                  std::to_string(victim.id.value) + ": " + error.what());
    }
  }
  state = std::move(next);
}

// ---------------------------------------------------------------------------------------------
// Elastic scaling by multiple-choice knapsack
// ---------------------------------------------------------------------------------------------

/// The scaling options of one elastic job: giving it `w` extra workers (w = 1..size of
/// `jct_reduction`) uses `w x gpus_per_worker` GPUs and shortens its JCT by
/// `jct_reduction[w - 1]` (seconds, or any unit shared by all jobs). Values need not grow with
/// w (a throughput curve may saturate or fall); dominated options are simply never chosen.
struct ElasticJobOption {
  WorkloadId job{};
  std::string name{};  ///< for messages only; may be empty
  std::int64_t gpus_per_worker = 1;
  std::vector<double> jct_reduction{};

  /// "elastic job 7 'bert'" for messages.
  [[nodiscard]] std::string label() const {
    return "elastic job " + std::to_string(job.value) + (name.empty() ? "" : " '" + name + "'");
  }
};

/// How many extra workers one job gets.
struct ScalingDecision {
  WorkloadId job{};
  std::int32_t extra_workers = 0;
  std::int64_t gpus = 0;         ///< extra_workers x gpus_per_worker
  double jct_reduction = 0.0;    ///< the option's value (0 for no extra workers)
  friend bool operator==(const ScalingDecision&, const ScalingDecision&) = default;
};

/// Outcome of `scale_elastic_jobs`.
enum class ScalingStatus : std::uint8_t {
  optimal,    ///< the decisions maximise the total JCT reduction within the free GPUs
  too_large,  ///< the DP table would exceed the cell limit; decisions are all zero
};

/// Result of `scale_elastic_jobs`.
struct ScalingPlan {
  ScalingStatus status = ScalingStatus::optimal;
  std::vector<ScalingDecision> decisions;  ///< one per input job, input order
  double total_jct_reduction = 0.0;        ///< sum of the decisions' values, in input order
  std::int64_t gpus_used = 0;
  std::int64_t free_gpus = 0;
  std::uint64_t dp_cells = 0;  ///< DP cells evaluated
  friend bool operator==(const ScalingPlan&, const ScalingPlan&) = default;
};

/// JCT reductions from a throughput curve: `throughput[0]` is the job's current throughput,
/// `throughput[w]` its throughput with w extra workers; the reduction of w workers is
/// `remaining_work / throughput[0] - remaining_work / throughput[w]`, clamped at 0 (more workers
/// that slow a job down are worth nothing, never a negative value). Throws
/// `std::invalid_argument` naming the index for a throughput that is not finite and positive,
/// or for a negative `remaining_work`.
[[nodiscard]] inline std::vector<double> jct_reductions(double remaining_work,
                                                        std::span<const double> throughput) {
  if (!(remaining_work >= 0.0) || !std::isfinite(remaining_work)) {
    throw std::invalid_argument("aryl: remaining_work must be finite and >= 0, got " +
                                impl::number(remaining_work));
  }
  for (std::size_t i = 0; i < throughput.size(); ++i) {
    if (!(throughput[i] > 0.0) || !std::isfinite(throughput[i])) {
      throw std::invalid_argument("aryl: throughput[" + std::to_string(i) +
                                  "] must be finite and > 0, got " + impl::number(throughput[i]));
    }
  }
  std::vector<double> result;
  if (throughput.empty()) return result;
  const double now = remaining_work / throughput[0];
  for (std::size_t w = 1; w < throughput.size(); ++w) {
    result.push_back(std::max(0.0, now - remaining_work / throughput[w]));
  }
  return result;
}

/// Aryl's elastic scaling: gives each elastic job w >= 0 extra workers so that the total JCT
/// reduction is maximal and the GPUs used stay within `free_gpus` (a multiple-choice knapsack:
/// one group per job, item = w workers, weight = w x gpus_per_worker, value = JCT reduction).
///
/// Exact. Per job, options heavier than `free_gpus` and options no better than a lighter one
/// are dropped (that never loses value); the rest have increasing weight *and* value, so the
/// knapsack becomes a covering problem: start from every job's heaviest option and choose, per
/// job, how much to give back (gain = GPUs returned, cost = value lost) so that at least
/// (total - free_gpus) GPUs are returned at minimum lost value. That is solved exactly by
/// `detail::solve_min_cost_covering`. Ties are deterministic (see the covering solver: earlier
/// jobs keep more workers). With non-integer values, "optimal" is up to floating-point rounding
/// of the value differences.
///
/// Throws `std::invalid_argument` naming the job for a negative `free_gpus`, a
/// `gpus_per_worker` < 1, a reduction that is negative or not finite, more than 255 worker
/// options, a job listed twice, or GPU counts overflowing int64.
/// Complexity: O(total options x (total heaviest weight - free_gpus + 1)); the table is bounded
/// by `max_dp_cells` (status `too_large` beyond it).
[[nodiscard]] inline ScalingPlan scale_elastic_jobs(std::span<const ElasticJobOption> jobs,
                                                    std::int64_t free_gpus,
                                                    std::size_t max_dp_cells = std::size_t{1} << 26) {
  if (free_gpus < 0) {
    throw std::invalid_argument("aryl: free_gpus is negative (" + std::to_string(free_gpus) + ")");
  }
  struct Kept {
    std::int32_t workers;
    std::int64_t gpus;
    double value;
  };
  std::vector<std::vector<Kept>> kept(jobs.size());
  std::map<std::uint64_t, std::size_t> seen;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const ElasticJobOption& job = jobs[j];
    if (auto [it, inserted] = seen.try_emplace(job.job.value, j); !inserted) {
      throw std::invalid_argument("aryl: " + job.label() + " is listed twice (entries " +
                                  std::to_string(it->second) + " and " + std::to_string(j) + ")");
    }
    if (job.gpus_per_worker < 1) {
      throw std::invalid_argument("aryl: " + job.label() + ": gpus_per_worker must be >= 1, got " +
                                  std::to_string(job.gpus_per_worker));
    }
    if (job.jct_reduction.size() > detail::max_covering_options_per_group - 1) {
      throw std::invalid_argument("aryl: " + job.label() + " offers " +
                                  std::to_string(job.jct_reduction.size()) +
                                  " worker options (at most " +
                                  std::to_string(detail::max_covering_options_per_group - 1) + ")");
    }
    double best = 0.0;  // "no extra workers" is worth 0
    for (std::size_t i = 0; i < job.jct_reduction.size(); ++i) {
      const double value = job.jct_reduction[i];
      const auto workers = static_cast<std::int32_t>(i + 1);
      if (!(value >= 0.0) || !std::isfinite(value)) {
        throw std::invalid_argument("aryl: " + job.label() + ": jct_reduction for " +
                                    std::to_string(workers) + " extra workers is " +
                                    impl::number(value) + "; it must be finite and >= 0");
      }
      if (job.gpus_per_worker > std::numeric_limits<std::int64_t>::max() / workers) {
        throw std::invalid_argument("aryl: " + job.label() + ": GPU count of " +
                                    std::to_string(workers) + " workers overflows");
      }
      const std::int64_t gpus = job.gpus_per_worker * workers;
      // Weights grow with w, so keeping only strict value improvements leaves the undominated
      // options (ties go to fewer workers).
      if (gpus <= free_gpus && value > best) {
        kept[j].push_back({workers, gpus, value});
        best = value;
      }
    }
  }

  ScalingPlan plan;
  plan.free_gpus = free_gpus;
  detail::covering_problem<double> problem;
  std::int64_t heaviest_total = 0;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    problem.begin_group();
    if (kept[j].empty()) continue;
    const Kept& top = kept[j].back();
    if (top.gpus > std::numeric_limits<std::int64_t>::max() - heaviest_total) {
      throw std::invalid_argument("aryl: total GPUs overflow at " + jobs[j].label());
    }
    heaviest_total += top.gpus;
    // Option i < size-1: fall back to kept[i]; the last option: no extra workers at all.
    for (std::size_t i = 0; i + 1 < kept[j].size(); ++i) {
      problem.add_option({{top.gpus - kept[j][i].gpus, 0}, top.value - kept[j][i].value});
    }
    problem.add_option({{top.gpus, 0}, top.value});
  }
  const std::int64_t deficit = std::max<std::int64_t>(heaviest_total - free_gpus, 0);
  detail::min_cost_covering_workspace<double> workspace;
  detail::covering_limits limits;
  limits.max_cells = max_dp_cells;
  const detail::covering_result<double> result =
      detail::solve_min_cost_covering(problem, {deficit, 0}, workspace, limits);
  plan.dp_cells = result.cells;
  plan.decisions.reserve(jobs.size());
  if (result.status != detail::covering_status::optimal) {
    // Infeasible cannot happen (giving everything back always covers); too_large can.
    plan.status = ScalingStatus::too_large;
    for (const ElasticJobOption& job : jobs) plan.decisions.push_back({job.job, 0, 0, 0.0});
    return plan;
  }
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    ScalingDecision decision{jobs[j].job, 0, 0, 0.0};
    if (!kept[j].empty()) {
      const auto choice = result.choice[j];
      const std::size_t last = kept[j].size() - 1;
      if (choice == detail::no_option || static_cast<std::size_t>(choice) < last) {
        const Kept& option = kept[j][choice == detail::no_option ? last : static_cast<std::size_t>(choice)];
        decision = {jobs[j].job, option.workers, option.gpus, option.value};
      }
    }
    plan.total_jct_reduction += decision.jct_reduction;
    plan.gpus_used += decision.gpus;
    plan.decisions.push_back(decision);
  }
  return plan;
}

}  // namespace topopreempt::aryl
