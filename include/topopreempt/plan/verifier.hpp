// SPDX-License-Identifier: MIT
#pragma once
/// @file verifier.hpp
/// An independent check of any `PreemptionPlan` against the rules of DESIGN.md §3.
///
/// The verifier shares no code with the solvers: it re-applies the plan through the public
/// `Allocation` operations (`remove`, `shrink`, `add`), whose own validation (capacity, whole
/// devices, shares, pooled sums, one host per replica, guaranteed scopes) is the ground truth.
/// A solver bug therefore cannot hide behind a shared helper. The re-application is first a
/// dry run on the state itself (`Allocation::check_preempt_and_start`, O(what the plan
/// touches)); only a plan that fails it is re-applied step by step to a *copy* of the state,
/// to name the step at fault. Either way the verdict is the same.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/placement.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"
#include "topopreempt/plan/preemption_plan.hpp"
#include "topopreempt/model/cost_model.hpp"

namespace topopreempt {

/// How strictly `verify_plan` judges a plan.
struct VerifyOptions {
  /// True: the preemptor's guaranteed scopes must hold and `topology_satisfied` must be true.
  /// False (topology-blind baselines such as `kube_default`): the placement is checked with the
  /// preemptor's scopes relaxed to `none`; whether the guaranteed scopes held anyway is reported
  /// in `PlanVerdict::topology_ok` instead of being a violation.
  bool require_topology = true;
  /// Relative tolerance for cost comparisons: |a - b| <= tolerance * max(1, |a|, |b|). The
  /// default 0 compares exactly: a plan's cost must be the sum of its victims' prices taken in
  /// plan order (ascending id), bit for bit, and an `optimal` plan's lower bound must equal its
  /// cost (docs/costs.md). A positive tolerance is for plans built outside this library.
  double tolerance = 0.0;
};

/// The verifier's answer.
struct PlanVerdict {
  /// No violation found.
  bool ok = true;
  /// The placement honours every guaranteed scope of the preemptor (vacuously true when the plan
  /// has no placement). Meaningful mostly with `require_topology = false`: it is how the
  /// topology hit rate of a topology-blind baseline is measured.
  bool topology_ok = true;
  /// One line per broken rule, each naming the workload, replica or domain at fault.
  std::vector<std::string> violations;

  /// "plan ok" or "N violation(s): first; second; ...".
  [[nodiscard]] std::string summary() const {
    if (violations.empty()) return "plan ok";
    std::string text = std::to_string(violations.size()) + " violation(s): ";
    for (std::size_t i = 0; i < violations.size(); ++i) {
      if (i > 0) text += "; ";
      text += violations[i];
    }
    return text;
  }
};

/// Whether `workload` has a placement honouring its guaranteed scopes as `state` stands.
[[nodiscard]] inline bool fits_without_preemption(const Allocation& state,
                                                  const Workload& workload) {
  return find_placement(state, workload).found;
}

namespace detail::verification {

/// Collects violations; keeps `verify_plan` itself a readable list of rules.
class VerdictBuilder {
 public:
  void fail(std::string message) { verdict_.violations.push_back(std::move(message)); }
  void set_topology_ok(bool value) { verdict_.topology_ok = value; }
  [[nodiscard]] PlanVerdict finish() && {
    verdict_.ok = verdict_.violations.empty();
    return std::move(verdict_);
  }

 private:
  PlanVerdict verdict_;
};

[[nodiscard]] inline bool costs_agree(double a, double b, double tolerance) {
  if (tolerance == 0.0) return a == b;  // exact: no slack can hide a difference
  return std::abs(a - b) <= tolerance * std::max({1.0, std::abs(a), std::abs(b)});
}

/// The shortest text that reads back as `value`: two different costs never print alike.
[[nodiscard]] inline std::string number(double value) {
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return error == std::errc() ? std::string(buffer, end) : std::string("?");
}

/// The preemptor with both scopes relaxed to `none` (how a topology-blind baseline sees it).
/// `distinct_hosts` stays: anti-affinity is a placement rule every scheduler honours
/// (Kubernetes' required pod anti-affinity), not a topology preference.
[[nodiscard]] inline Workload relaxed(Workload workload) {
  workload.replica_scope = {};
  workload.gang_scope = {};
  return workload;
}

/// Whether every *guaranteed* scope of `workload` holds for `placement`: each replica's
/// footprint (and the gang's) lies inside one domain of the scope's level (levels only;
/// capacity is `Allocation::add`'s business).
[[nodiscard]] inline bool guaranteed_scopes_hold(const Topology& topology, const Workload& workload,
                                                 const Placement& placement) {
  if (placement.replicas.empty()) return true;
  if (workload.replica_scope.mode == RequirementMode::guaranteed) {
    const auto level = topology.find_level(workload.replica_scope.level);
    if (!level) return false;
    for (std::size_t r = 0; r < placement.replicas.size(); ++r) {
      if (placement.replicas[r].entries.empty()) continue;
      if (!topology.lies_within_level(placement.replica_domain(topology, r), *level)) return false;
    }
  }
  if (workload.gang_scope.mode == RequirementMode::guaranteed) {
    const auto level = topology.find_level(workload.gang_scope.level);
    if (!level) return false;
    if (!topology.lies_within_level(placement.enclosing_domain(topology), *level)) return false;
  }
  return true;
}

/// Whether every entry of the placement names a domain of the topology (so that the level and
/// containment checks below may call the topology safely).
[[nodiscard]] inline bool placement_in_topology(const Topology& topology,
                                                const Placement& placement) {
  for (const auto& replica : placement.replicas) {
    for (const auto& entry : replica.entries) {
      if (!entry.domain.valid() || entry.domain.value >= topology.size()) return false;
    }
  }
  return true;
}

/// The structured facts a plan's text is worded from (the text itself may be left to
/// `explain`): the rejected domains listed are counted, a verdict written as text only has
/// its text, and what each victim frees is a positive amount.
inline void check_facts(VerdictBuilder& out, const PreemptionPlan& plan) {
  if (plan.rejected.size() > plan.rejected_total) {
    out.fail("the plan lists " + std::to_string(plan.rejected.size()) +
             " rejected domain(s) but counts " + std::to_string(plan.rejected_total) +
             " in all");
  }
  for (const DomainVerdict& verdict : plan.rejected) {
    if (verdict.kind == RejectionKind::text_only && verdict.reason.empty()) {
      out.fail("a rejected domain has neither a kind nor a reason");
    }
  }
  for (const Victim& victim : plan.victims) {
    for (const FreedAmount& freed : victim.freed) {
      if (!(std::isfinite(freed.amount) && freed.amount > 0.0)) {
        out.fail("victim " + std::to_string(victim.id.value) + " frees " +
                 number(freed.amount) + ", not a positive amount");
      }
    }
  }
}

/// Status rules that need no state: bounds, and which statuses may carry victims or a placement.
inline void check_status(VerdictBuilder& out, const PreemptionPlan& plan, double tolerance) {
  const std::string status(to_string(plan.status));
  check_facts(out, plan);
  if (!std::isfinite(plan.cost) || plan.cost < 0.0) {
    out.fail("plan cost " + number(plan.cost) + " is not finite and non-negative");
  }
  if (std::isnan(plan.lower_bound)) out.fail("plan lower bound is NaN");
  switch (plan.status) {
    case PlanStatus::no_preemption_needed:
      if (!plan.victims.empty()) {
        out.fail("status no_preemption_needed but the plan has " +
                 std::to_string(plan.victims.size()) + " victim(s)");
      }
      break;
    case PlanStatus::unknown:
      // "Don't know" is honest only where a limit stopped the search.
      if (!plan.statistics.limit_reached) {
        out.fail("status unknown but no limit was reached (a complete search proves either way)");
      }
      [[fallthrough]];
    case PlanStatus::infeasible:
      if (!plan.victims.empty()) {
        out.fail("status " + status + " but the plan has " + std::to_string(plan.victims.size()) +
                 " victim(s)");
      }
      if (!plan.placement.replicas.empty())
        out.fail("status " + status + " but the plan has a placement");
      break;
    case PlanStatus::optimal:
      if (!costs_agree(plan.lower_bound, plan.cost, tolerance)) {
        out.fail("status optimal but lower bound " + number(plan.lower_bound) +
                 " differs from cost " + number(plan.cost));
      }
      [[fallthrough]];
    case PlanStatus::feasible:
      if (plan.lower_bound > plan.cost && !costs_agree(plan.lower_bound, plan.cost, tolerance)) {
        out.fail("status " + status + " but lower bound " + number(plan.lower_bound) +
                 " exceeds cost " + number(plan.cost));
      }
      if (plan.victims.empty()) {
        out.fail("status " + status + " without victims (should be no_preemption_needed)");
      }
      break;
  }
}

/// The victims as `Allocation::check_preempt_and_start` takes them: exactly the steps
/// `check_and_apply_victims` applies (a repeated victim once, a victim not running not at all).
[[nodiscard]] inline std::vector<Allocation::VictimChange> victim_changes(
    const Allocation& state, const PreemptionPlan& plan) {
  std::vector<Allocation::VictimChange> changes;
  changes.reserve(plan.victims.size());
  for (std::size_t i = 0; i < plan.victims.size(); ++i) {
    const Victim& victim = plan.victims[i];
    if (i > 0 && plan.victims[i - 1].id == victim.id) continue;
    if (!state.contains(victim.id)) continue;
    const bool evict = victim.action == VictimAction::evict;
    changes.push_back({.id = victim.id,
                       .evict = evict,
                       .dropped = evict ? std::span<const std::int32_t>()
                                        : std::span<const std::int32_t>(victim.dropped_replicas)});
  }
  return changes;
}

/// Whether every step of the plan (its victims' removals and shrinks, then the preemptor's
/// start at its placement) goes through on `state` without an error: a dry run, so no copy.
/// When it does, the step-by-step re-application on a copy would throw nowhere either, and
/// the verdict needs no copy.
[[nodiscard]] inline bool applies_cleanly(const Allocation& state, const Workload& preemptor,
                                          const PreemptionPlan& plan,
                                          const VerifyOptions& options) {
  if (!plan.has_victims_plan() && plan.status != PlanStatus::no_preemption_needed) return false;
  if (plan.placement.replicas.empty()) return false;
  if (!placement_in_topology(state.topology(), plan.placement)) return false;
  try {
    state.check_preempt_and_start(victim_changes(state, plan),
                                  options.require_topology ? preemptor : relaxed(preemptor),
                                  plan.placement);
    return true;
  } catch (const std::exception&) {
    return false;  // the step-by-step path on a copy names what failed
  }
}

/// Victim eligibility, order, action shape and price; applies each victim to `after`, or,
/// with `after` null (the plan is known to apply cleanly), only judges them.
template <CostModel Model>
void check_and_apply_victims(VerdictBuilder& out, const Allocation& state, Allocation* after,
                             const Workload& preemptor, const PreemptionPlan& plan,
                             const Model& cost_model, double tolerance) {
  double total = 0.0;
  for (std::size_t i = 0; i < plan.victims.size(); ++i) {
    const Victim& victim = plan.victims[i];
    const std::string who = "victim workload " + std::to_string(victim.id.value);
    if (i > 0 && !(plan.victims[i - 1].id < victim.id)) {
      const bool repeated = plan.victims[i - 1].id == victim.id;
      out.fail(who + (repeated ? " is listed more than once"
                               : " is out of order (victims must be sorted by id)"));
      if (repeated) continue;  // already applied once
    }
    if (!state.contains(victim.id)) {
      out.fail(who + " is not running");
      continue;
    }
    const Workload& running = state.workload(victim.id);
    const std::string label = "victim " + running.label();
    if (!running.preemptible) out.fail(label + " is not preemptible");
    if (running.priority >= preemptor.priority) {
      out.fail(label + " has priority " + std::to_string(running.priority) +
               ", not lower than the preemptor's " + std::to_string(preemptor.priority));
    }
    std::optional<double> expected;
    try {
      if (victim.action == VictimAction::evict) {
        if (!victim.dropped_replicas.empty()) {
          out.fail(label + " is evicted but lists " +
                   std::to_string(victim.dropped_replicas.size()) + " dropped replica(s)");
        }
        expected = cost_model.evict(running);
        if (after != nullptr) after->remove(victim.id);
      } else {
        if (!running.min_replicas) out.fail(label + " is shrunk but is not elastic");
        if (victim.dropped_replicas.empty()) out.fail(label + " is shrunk by zero replicas");
        const auto dropped = static_cast<std::int32_t>(victim.dropped_replicas.size());
        expected = cost_model.shrink(running, dropped);
        // Checks indices and min_replicas.
        if (after != nullptr) after->shrink(victim.id, victim.dropped_replicas);
      }
    } catch (const std::exception& error) {
      out.fail(label + ": " + error.what());
    }
    if (expected) {
      if (!costs_agree(victim.cost, *expected, tolerance)) {
        out.fail(label + " costs " + number(victim.cost) + " in the plan but " + number(*expected) +
                 " under cost model " + std::string(Model::name));
      }
      total += *expected;
    }
  }
  double listed = 0.0;
  for (const Victim& victim : plan.victims) listed += victim.cost;
  if (!costs_agree(plan.cost, listed, tolerance)) {
    out.fail("plan cost " + number(plan.cost) + " is not the sum of its victims' costs " +
             number(listed));
  }
  if (!costs_agree(plan.cost, total, tolerance)) {
    out.fail("plan cost " + number(plan.cost) + " differs from the cost model's total " +
             number(total));
  }
}

/// Anti-affinity, checked here on its own (not only through `Allocation::add`): with
/// `distinct_hosts`, no two replicas of the preemptor may have an entry on the same host.
inline void check_distinct_hosts(VerdictBuilder& out, const Topology& topology,
                                 const Workload& preemptor, const Placement& placement) {
  if (!preemptor.distinct_hosts) return;
  const LevelIndex host_level = topology.host_level();
  std::vector<std::vector<DomainId>> hosts(placement.replicas.size());
  for (std::size_t r = 0; r < placement.replicas.size(); ++r) {
    for (const auto& entry : placement.replicas[r].entries) {
      if (topology.level(entry.domain) < host_level) continue;  // a pool above the host
      hosts[r].push_back(topology.ancestor_at(entry.domain, host_level));
    }
  }
  const auto shared_host = [&](std::size_t a, std::size_t b) -> std::optional<DomainId> {
    for (DomainId host : hosts[a]) {
      if (std::find(hosts[b].begin(), hosts[b].end(), host) != hosts[b].end()) return host;
    }
    return std::nullopt;
  };
  for (std::size_t a = 0; a < hosts.size(); ++a) {
    for (std::size_t b = a + 1; b < hosts.size(); ++b) {
      if (const std::optional<DomainId> host = shared_host(a, b)) {
        out.fail(preemptor.label() + " replicas " + std::to_string(a) + " and " +
                 std::to_string(b) + " both sit on " + topology.describe(*host) +
                 ", but it asks for distinct hosts");
      }
    }
  }
}

/// The preemptor's placement against the state after the victims are gone (`after`), or, with
/// `after` null, on a plan known to apply cleanly (its start at the placement cannot fail).
inline void check_placement(VerdictBuilder& out, const Topology& topology, Allocation* after,
                            const Workload& preemptor, const PreemptionPlan& plan,
                            const VerifyOptions& options) {
  if (!placement_in_topology(topology, plan.placement)) {
    out.fail("the placement of " + preemptor.label() + " names a domain outside the topology");
    out.set_topology_ok(false);
    return;
  }
  const bool scopes_hold = guaranteed_scopes_hold(topology, preemptor, plan.placement);
  out.set_topology_ok(scopes_hold);
  check_distinct_hosts(out, topology, preemptor, plan.placement);
  if (options.require_topology && !plan.topology_satisfied) {
    out.fail("the plan says topology_satisfied = false but the topology is required");
  }
  if (!options.require_topology && plan.topology_satisfied && !scopes_hold) {
    out.fail("the plan says topology_satisfied = true but " + preemptor.label() +
             " breaks a guaranteed scope");
  }
  try {
    if (after != nullptr) {
      after->add(options.require_topology ? preemptor : relaxed(preemptor), plan.placement);
    }
  } catch (const std::exception& error) {
    out.fail("placing " + preemptor.label() + " after the victims are gone fails: " + error.what());
  }
  if (!plan.target_domain.valid() || plan.target_domain.value >= topology.size()) {
    out.fail("the plan places " + preemptor.label() + " but has no valid target domain");
  } else {
    // A replica lies in the target when its footprint does: a pool that encloses its devices
    // (a NUMA node's CPUs serving GPUs under a PCIe switch) may sit above a tight target.
    for (std::size_t r = 0; r < plan.placement.replicas.size(); ++r) {
      if (plan.placement.replicas[r].entries.empty()) continue;
      const DomainId footprint = plan.placement.replica_domain(topology, r);
      if (!topology.contains(plan.target_domain, footprint)) {
        out.fail(preemptor.label() + " replica " + std::to_string(r) + " occupies " +
                 topology.describe(footprint) + ", outside target " +
                 topology.describe(plan.target_domain));
      }
    }
    // Where a victim's freed amounts were measured lies inside the target.
    for (const Victim& victim : plan.victims) {
      if (!victim.freed_in.valid()) continue;
      if (victim.freed_in.value >= topology.size() ||
          !topology.contains(plan.target_domain, victim.freed_in)) {
        out.fail("victim " + std::to_string(victim.id.value) +
                 " frees its resources outside target " + topology.describe(plan.target_domain));
      }
    }
  }
  if (plan.placement.replicas.empty()) return;
  const LevelIndex gang_level = topology.level(plan.placement.enclosing_domain(topology));
  if (plan.gang_level != gang_level) {
    out.fail("plan gang_level " + std::to_string(plan.gang_level) +
             " but the placement's gang level is " + std::to_string(gang_level) + " (" +
             topology.levels()[gang_level] + ")");
  }
  auto replica_level = static_cast<LevelIndex>(topology.levels().size() - 1);
  for (std::size_t r = 0; r < plan.placement.replicas.size(); ++r) {
    replica_level =
        std::min(replica_level, topology.level(plan.placement.replica_domain(topology, r)));
  }
  if (plan.replica_level != replica_level) {
    out.fail("plan replica_level " + std::to_string(plan.replica_level) +
             " but the placement's loosest replica level is " + std::to_string(replica_level) +
             " (" + topology.levels()[replica_level] + ")");
  }
}

/// "Infeasible" must mean infeasible: after evicting every eligible victim, no placement that
/// `Allocation::add` accepts may exist. Only a found placement counts (sound, not complete).
inline void check_infeasible_claim(VerdictBuilder& out, const Allocation& state,
                                   const Workload& preemptor) {
  Allocation emptied = state;
  for (WorkloadId id : state.workload_ids()) {
    const Workload& running = state.workload(id);
    if (running.preemptible && running.priority < preemptor.priority) emptied.remove(id);
  }
  const PlacementSearchResult found = find_placement(emptied, preemptor);
  if (!found.found) return;
  try {
    emptied.add(preemptor, found.placement);
  } catch (const std::exception&) {
    return;  // the search's placement is not valid either: no evidence against the claim
  }
  out.fail("status infeasible, but evicting every eligible victim admits " + preemptor.label() +
           " at " + found.placement.describe(state.topology()));
}

}  // namespace detail::verification

/// Checks `plan`, computed for `preemptor` on `state` under `cost_model`, against every rule of
/// DESIGN.md §3. `state` is not modified; it is copied only when the plan's steps do not all go
/// through (then the copy shows which one fails) and to judge an `infeasible` claim. Rules:
/// - status: `no_preemption_needed` has no victims and its placement fits the untouched state;
///   `infeasible` has no victims, no placement, and indeed no placement exists after evicting
///   every eligible victim; `unknown` has no victims, no placement and
///   `statistics.limit_reached`, and the preemptor does not fit as the state stands; `optimal` has lower bound == cost, `feasible` and
///   `optimal` have lower bound <= cost and at least one victim; if the preemptor fits as the
///   state stands (at any tier, for best-effort scopes), the plan has no victims;
/// - victims: running, preemptible, strictly lower priority, listed once, sorted by id; an
///   eviction drops no replica list, a shrink is of an elastic workload with valid, distinct
///   indices leaving at least `min_replicas`;
/// - cost: each victim's cost is the model's `evict`/`shrink` price; the plan's cost their sum;
/// - placement: accepted by `Allocation::add` once the victims are gone (capacity, devices,
///   shares, pooled sums, one host per replica, guaranteed scopes unless relaxed by
///   `options.require_topology = false`), inside `target_domain`, with matching `gang_level`
///   and `replica_level`; with `distinct_hosts`, no two replicas on one host (checked on its
///   own as well, whatever `options.require_topology` says).
/// - facts: no more rejected domains listed than counted, each with a kind or a reason; what
///   each victim frees is positive and measured inside `target_domain`. The text
///   (`explanation`, reasons) is not required: a solver built `without_text()` leaves it to
///   `explain`.
/// Determinism is not checked here (compare two plans with `operator==`).
template <CostModel Model>
[[nodiscard]] PlanVerdict verify_plan(const Allocation& state, const Workload& preemptor,
                                      const PreemptionPlan& plan, const Model& cost_model,
                                      VerifyOptions options = {}) {
  namespace rules = detail::verification;
  rules::VerdictBuilder out;
  try {
    validate(preemptor, state.topology());
  } catch (const std::exception& error) {
    out.fail(std::string("the preemptor is invalid: ") + error.what());
    return std::move(out).finish();
  }
  const Workload judged = options.require_topology ? preemptor : rules::relaxed(preemptor);
  rules::check_status(out, plan, options.tolerance);
  // In place when the plan applies cleanly: a copy of a 10,000-workload state costs far more
  // than the plan's own few steps. Otherwise a copy (sharing the immutable topology) takes
  // the steps one by one, so each failure is named.
  std::optional<Allocation> copy;
  const bool nothing_to_apply = plan.victims.empty() && plan.placement.replicas.empty();
  if (!nothing_to_apply && !rules::applies_cleanly(state, preemptor, plan, options)) {
    copy.emplace(state);
  }
  Allocation* after = copy ? &*copy : nullptr;
  rules::check_and_apply_victims(out, state, after, preemptor, plan, cost_model, options.tolerance);
  switch (plan.status) {
    case PlanStatus::infeasible:
      rules::check_infeasible_claim(out, state, judged);
      break;
    case PlanStatus::unknown:
      // Claims nothing about a plan, but a solver always knows when the preemptor fits as is.
      if (fits_without_preemption(state, preemptor)) {
        out.fail("status unknown, but " + preemptor.label() + " fits without preemption");
      }
      break;
    case PlanStatus::no_preemption_needed:
    case PlanStatus::optimal:
    case PlanStatus::feasible:
      if (plan.placement.replicas.empty()) {
        out.fail("status " + std::string(to_string(plan.status)) + " without a placement for " +
                 preemptor.label());
      } else {
        rules::check_placement(out, state.topology(), after, preemptor, plan, options);
      }
      // DESIGN §3: "if P fits without preemption, the plan has zero victims" (best effort too:
      // a tighter tier is no reason to preempt). Judged with P's real scopes even in relaxed
      // mode: a topology-blind baseline rightly preempts when P fits only with its scopes
      // broken (kube_default's own filter is topology-aware).
      if (plan.status != PlanStatus::no_preemption_needed && !plan.victims.empty() &&
          fits_without_preemption(state, preemptor)) {
        out.fail(preemptor.label() + " fits without preemption, yet the plan preempts " +
                 std::to_string(plan.victims.size()) + " victim(s)");
      }
      break;
  }
  return std::move(out).finish();
}

}  // namespace topopreempt
