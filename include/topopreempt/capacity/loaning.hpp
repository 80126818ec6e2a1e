// SPDX-License-Identifier: MIT
#pragma once
/// @file loaning.hpp
/// Capacity loaning (after Aryl / Lyra, Li et al., arXiv 2202.07896, EuroSys'23): reclaiming
/// servers loaned from inference to training at the lowest *server preemption cost*.
///
/// - `server_preemption_cost` / `server_preemption_breakdown`: what reclaiming one host costs
///   as the state stands (elastic jobs drop their replicas there if they can stay at or above
///   `min_replicas`, every other job on the host is preempted whole).
/// - `reclaim_servers`: the greedy (cheapest host first, costs recomputed after each pick);
///   `reclaim_servers_exact`: exhaustive search over host subsets for small inputs, to measure
///   the greedy's optimality gap; `apply_reclaim` carries a plan out on a state.
/// - `shrink_elastic_first`: a `CostModel` that makes every solver of the library prefer dropping
///   elastic workers to preempting jobs, as Aryl does.
/// Elastic scaling (handing spare GPUs to elastic jobs) is in `capacity/elastic_scaling.hpp`.
///
/// Thread-safety: the functions read the `Allocation` they are given and never modify it, except
/// `apply_reclaim`, which needs exclusive access to its state.

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

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/plan/preemption_plan.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt::capacity {

/// Aryl's preference as a `CostModel`: dropping an elastic worker costs `shrink_weight` per
/// dropped replica, preempting a job costs `evict_weight` per replica it runs. With the default
/// weights (1 and 10) shrinking is an order of magnitude cheaper per replica, so every solver
/// drops elastic workers before it preempts anything, and among preemptions prefers small jobs.
struct shrink_elastic_first {
  /// The name reports carry.
  static constexpr std::string_view name = "shrink_elastic_first";
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

static_assert(CostModel<shrink_elastic_first>);

/// What reclaiming one host costs, victim by victim.
struct ServerCost {
  /// The loaned host this prices.
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
  /// The host reclaimed at this step.
  DomainId host;
  /// Marginal cost of this host at the moment it was picked, i.e. after the previous steps'
  /// shrinks and preemptions (the quantity Aryl's greedy compares).
  double cost = 0.0;
  /// What this pick does. `dropped_replicas` are indices into the workload's replica list in
  /// the *input* state (not renumbered by earlier shrinks), so steps can be read independently.
  std::vector<Victim> victims;
  /// Member-wise equality.
  friend bool operator==(const ReclaimStep&, const ReclaimStep&) = default;
};

/// Result of `reclaim_servers` / `reclaim_servers_exact`.
struct ReclaimPlan {
  /// `feasible` (greedy: no optimality claim), `optimal` (exact search), `infeasible` (not
  /// enough reclaimable loaned hosts; see `explanation`) or `no_preemption_needed` (zero
  /// servers asked for).
  PlanStatus status = PlanStatus::infeasible;
  std::string solver;              ///< "reclaim_greedy" or "reclaim_exact"
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
  /// Member-wise equality.
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
    throw std::invalid_argument("capacity: " + what + " (domain id " + std::to_string(host.value) +
                                ") is not in the topology");
  }
  if (topology.level(host) != topology.host_level()) {
    throw std::invalid_argument("capacity: " + what + " (" + topology.describe(host) + ") is not a '" +
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
          throw std::invalid_argument("capacity: loaned host #" + std::to_string(i) + " (" +
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
template <CostModel Model = shrink_elastic_first>
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
template <CostModel Model = shrink_elastic_first>
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
template <CostModel Model = shrink_elastic_first>
[[nodiscard]] ReclaimPlan reclaim_servers(const Allocation& state,
                                          std::span<const DomainId> loaned_hosts,
                                          std::size_t servers_needed, const Model& model = {}) {
  const Topology& topology = state.topology();
  impl::Ledger ledger(state, loaned_hosts);
  ReclaimPlan plan;
  plan.solver = "reclaim_greedy";
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
    plan.explanation = "reclaim_greedy: " + impl::infeasible_reason(ledger, loaned_hosts, servers_needed);
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
template <CostModel Model = shrink_elastic_first>
[[nodiscard]] ReclaimPlan reclaim_servers_exact(const Allocation& state,
                                                std::span<const DomainId> loaned_hosts,
                                                std::size_t servers_needed, const Model& model = {}) {
  if (loaned_hosts.size() > max_exact_loaned_hosts) {
    throw std::length_error("capacity: reclaim_servers_exact takes at most " +
                            std::to_string(max_exact_loaned_hosts) + " loaned hosts, got " +
                            std::to_string(loaned_hosts.size()));
  }
  const Topology& topology = state.topology();
  impl::Ledger ledger(state, loaned_hosts);
  ReclaimPlan plan;
  plan.solver = "reclaim_exact";
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
    plan.explanation = "reclaim_exact: " + impl::infeasible_reason(ledger, loaned_hosts, servers_needed);
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
      throw std::invalid_argument("capacity: cannot apply reclaim victim workload " +
                                  std::to_string(victim.id.value) + ": " + error.what());
    }
  }
  state = std::move(next);
}

}  // namespace topopreempt::capacity
