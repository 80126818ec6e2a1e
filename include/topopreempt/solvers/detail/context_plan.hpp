// SPDX-License-Identifier: MIT
#pragma once
/// @file context_plan.hpp
/// Stage 3 of a decision: assembling the `PreemptionPlan` from the winning domain's outcome (or a
/// plan without victims) as structured facts, and wording them (`fill_text`: the explanation a
/// person reads, each victim's and each rejected domain's reason) when the text is asked for.

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

#include "topopreempt/solvers/detail/context_core.hpp"

namespace topopreempt::detail {

template <CostModel Model>
PreemptionPlan PreemptionContext<Model>::make_plan(std::string_view solver,
                                                   const DomainProblem& problem,
                                                   const DomainOutcome& outcome, PlanStatus status,
                                                   double lower_bound, SolverStatistics statistics,
                                                   std::vector<DomainVerdict> rejected,
                                                   std::uint64_t rejected_total,
                                                   ScanCache* cache) const {
  const auto tier = static_cast<std::size_t>(problem.tier - tiers().data());
  if (tier >= tiers().size()) throw std::logic_error("topopreempt: internal error: foreign tier");
  PreemptionPlan plan;
  plan.solver = std::string(solver);
  plan.status = status;
  for (std::size_t v = 0; v < problem.victims.size(); ++v) {
    if (outcome.choice[v] < 0) continue;
    const auto option = static_cast<std::size_t>(outcome.choice[v]);
    const CandidateVictim& candidate = problem.victims[v];
    const VictimOption& chosen = candidate.options[option];
    Victim victim;
    victim.id = candidate.id;
    victim.action = chosen.dropped.empty() ? VictimAction::evict : VictimAction::shrink;
    victim.dropped_replicas = chosen.dropped;
    victim.cost = chosen.cost;
    victim.freed_in = problem.target;
    for (std::size_t k = 0; k < problem.need.size(); ++k) {
      if (chosen.gain[k] > 0.0) victim.freed.push_back({problem.dims[k], chosen.gain[k]});
    }
    plan.victims.push_back(std::move(victim));
  }
  PlacementSearchResult searched;
  const PlacementSearchResult& placement =
      plan_placement(problem, outcome, static_cast<std::uint32_t>(tier), cache, searched);
  plan.placement = placement.placement;
  plan.gang_level = placement.gang_level;
  plan.replica_level = placement.replica_level;
  // Pools above a target (a NUMA node's CPUs for a PCIe-switch target) widen what the
  // preemptor lands in: report the domain that holds all of it.
  plan.target_domain =
      plan.placement.replicas.empty()
          ? problem.target
          : topology_.lowest_common_ancestor(problem.target, plan.placement.span_domain(topology_));
  for (const auto& victim : plan.victims) plan.cost += victim.cost;
  plan.lower_bound = status == PlanStatus::optimal ? plan.cost : std::min(lower_bound, plan.cost);
  plan.statistics = statistics;
  plan.rejected = std::move(rejected);
  plan.rejected_total = rejected_total;
  plan.tier = static_cast<std::uint32_t>(tier);
  return plan;
}

template <CostModel Model>
const PlacementSearchResult& PreemptionContext<Model>::plan_placement(
    const DomainProblem& problem, const DomainOutcome& outcome, std::uint32_t tier,
    ScanCache* cache, PlacementSearchResult& searched) const {
  // The victims' chosen options in order: with the tier, target and reach version, what the
  // placement is a function of.
  const auto chosen = [&](const auto& visit) {
    for (std::size_t v = 0; v < problem.victims.size(); ++v) {
      if (outcome.choice[v] >= 0) visit(v, problem.victims[v].id, outcome.choice[v]);
    }
  };
  ScanCache::KeptPlacement* const kept = cache != nullptr ? &cache->plan_placement : nullptr;
  const std::uint64_t reach_version =
      kept != nullptr ? state_.domain_version(reach(*problem.tier, problem.target)) : 0;
  if (kept != nullptr && kept->valid && kept->tier == tier && kept->target == problem.target &&
      kept->reach_version == reach_version) {
    // The same victims' options on the same reach: the state less the victims is the same
    // there, and so is the placement.
    std::size_t i = 0;
    bool same = true;
    chosen([&](std::size_t, WorkloadId id, std::int32_t option) {
      same = same && i < kept->chosen.size() && kept->chosen[i] == std::pair{id, option};
      ++i;
    });
    if (same && i == kept->chosen.size()) {
      ++cache->placement_hits;
      return kept->result;
    }
  }
  FeasibilityOracle oracle(state_, problem);
  chosen([&](std::size_t v, WorkloadId, std::int32_t option) {
    oracle.apply(v, static_cast<std::size_t>(option), +1);
  });
  searched = find_placement(oracle.view(), problem.tier->demand, problem.target);
  if (!searched.found) {
    throw std::logic_error("topopreempt: internal error: chosen victims do not free " +
                           topology_.describe(problem.target));
  }
  if (kept == nullptr) return searched;
  kept->valid = false;  // stays so if keeping it throws
  kept->chosen.clear();
  chosen([&](std::size_t, WorkloadId id, std::int32_t option) {
    kept->chosen.emplace_back(id, option);
  });
  kept->result = searched;
  kept->tier = tier;
  kept->target = problem.target;
  kept->reach_version = reach_version;
  kept->valid = true;
  ++cache->placement_misses;
  return searched;
}

template <CostModel Model>
PreemptionPlan PreemptionContext<Model>::make_plan_without_victims(
    std::string_view solver, PlanStatus status, const PlacementSearchResult* placement,
    SolverStatistics statistics, std::vector<DomainVerdict> rejected,
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
  return plan;
}

template <CostModel Model>
void PreemptionContext<Model>::fill_text(PreemptionPlan& plan) const {
  for (Victim& victim : plan.victims) {
    if (victim.reason.empty()) victim.reason = describe_gain(victim);
  }
  for (DomainVerdict& verdict : plan.rejected) {
    if (verdict.reason.empty()) verdict.reason = describe_verdict(verdict);
  }
  if (!plan.explanation.empty()) return;
  const Tier* tier = nullptr;
  if (plan.has_victims_plan()) {
    if (plan.tier >= tiers().size()) {
      throw std::invalid_argument("topopreempt: explain: the plan's tier " +
                                  std::to_string(plan.tier) + " is not one of " +
                                  preemptor_.label() + "'s");
    }
    tier = &tiers()[plan.tier];
  }
  plan.explanation = explain(plan, tier);
}

template <CostModel Model>
std::string PreemptionContext<Model>::describe_gain(const Victim& victim) const {
  std::string text = victim.dropped_replicas.empty()
                         ? "evicted whole"
                         : "shrunk by " + std::to_string(victim.dropped_replicas.size()) +
                               " replica(s)";
  text += "; frees";
  bool any = false;
  for (const FreedAmount& freed : victim.freed) {
    text += (any ? ", " : " ") + quantity(freed.amount, freed.dimension);
    any = true;
  }
  if (!any) text += " nothing binding (needed only to complete a device or pool)";
  return text + " in " + topology_.describe(victim.freed_in);
}

template <CostModel Model>
std::string PreemptionContext<Model>::describe_verdict(const DomainVerdict& v) const {
  const auto amount = format_amount;
  switch (v.kind) {
    case RejectionKind::too_small:
      return "too small: holds " + quantity(v.have, v.dimension) + ", needs " + amount(v.need);
    case RejectionKind::hopeless:
      return "even evicting all " + std::to_string(v.victims) + " eligible victims frees " +
             amount(v.have) + " of the " + amount(v.need) + " " + dimension_name(v.dimension) +
             " missing";
    case RejectionKind::hopeless_unread:
      return "not read: even evicting every eligible victim frees at most " + amount(v.have) +
             " of the " + amount(v.need) + " " + dimension_name(v.dimension) +
             " missing (preemption index)";
    case RejectionKind::too_few_hosts:
      return "not searched: even evicting every eligible victim, its " + host_noun() +
             "s hold at most " + amount(v.have) + " of the " + amount(v.need) +
             " replicas (preemption index)";
    case RejectionKind::bound:
      return "lower bound " + amount(v.value) + " >= best cost " + amount(v.best);
    case RejectionKind::bound_unread:
      return "not read: index lower bound " + amount(v.value) + " >= best cost " + amount(v.best);
    case RejectionKind::costlier:
      return "best victim set costs " + amount(v.value) + " > " + amount(v.best) +
             (v.note.empty() ? "" : " (" + v.note + ")");
    case RejectionKind::no_better:
      return v.note.empty() ? "no victim set here beats " + amount(v.best) : v.note;
    case RejectionKind::text_only:
      return {};
  }
  return {};
}

template <CostModel Model>
std::string PreemptionContext<Model>::describe_preemptor() const {
  std::string text = preemptor_.label() + " (priority " + std::to_string(preemptor_.priority) +
                     "): " + std::to_string(preemptor_.replicas) + " replica(s) of ";
  if (demand().whole_devices > 0) {
    text += std::to_string(demand().whole_devices) + " " +
            topology_.levels()[topology_.device_level()] + "(s)";
  } else if (demand().has_share) {
    text += "a device share " + topology_.schema().format(demand().share);
  } else {
    text += "no devices";
  }
  if (demand().pooled.any()) text += " + " + topology_.schema().format(demand().pooled);
  const auto scope = [](const TopologyRequirement& requirement) {
    return requirement.mode == RequirementMode::none
               ? std::string("none")
               : std::string(requirement.mode == RequirementMode::guaranteed ? "guaranteed "
                                                                             : "best-effort ") +
                     requirement.level;
  };
  text += "; replica scope " + scope(preemptor_.replica_scope) + ", gang scope " +
          scope(preemptor_.gang_scope);
  if (demand().distinct_hosts) {
    text += ", each replica on its own " + topology_.levels()[topology_.host_level()];
  }
  return text;
}

template <CostModel Model>
std::string PreemptionContext<Model>::explain(const PreemptionPlan& plan, const Tier* tier) const {
  std::string text = plan.solver + " (cost model " + std::string(Model::name) +
                     "): " + std::string(to_string(plan.status)) + "\n";
  text += "preemptor: " + describe_preemptor() + "\n";
  if (plan.status == PlanStatus::no_preemption_needed) {
    text += "fits without preemption in " + topology_.describe(plan.target_domain) + "\n";
  } else if (plan.status == PlanStatus::unknown) {
    const SolverStatistics& s = plan.statistics;
    text += "a limit (time or search nodes) stopped the search before it found a plan or proved "
            "that none exists: nothing is claimed (" +
            std::to_string(s.domains_considered) + " candidate domain(s) considered, " +
            std::to_string(s.domains_pruned) + " dismissed, " + std::to_string(s.domains_solved) +
            " searched in depth)\n";
  } else if (plan.status == PlanStatus::infeasible) {
    const std::string unplaceable = guarantee_without_devices(topology_, preemptor_, demand());
    text += unplaceable.empty() ? "no placement exists even after evicting every eligible victim"
                                : unplaceable;
    text += "\n";
  } else {
    text += "target: " + topology_.describe(plan.target_domain) +
            (tier ? " (" + tier->label + ")" : "") + "\n";
    text += "cost " + format_amount(plan.cost) + ", lower bound " +
            format_amount(plan.lower_bound) + ", " + std::to_string(plan.victims.size()) +
            " victim(s):\n";
    if constexpr (DescribedCostModel<Model>) {
      PricedActions actions;
      for (const auto& victim : plan.victims) {
        actions.emplace_back(&state_.workload(victim.id),
                             static_cast<std::int32_t>(victim.dropped_replicas.size()));
      }
      text += "cost parts: " + std::string(model_.describe_cost(actions)) + "\n";
    }
    for (const auto& victim : plan.victims) {
      const Workload& workload = state_.workload(victim.id);
      text += "  - " + workload.label() + " priority " + std::to_string(workload.priority) +
              ", cost " + format_amount(victim.cost) + ": " + victim.reason + "\n";
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

}  // namespace topopreempt::detail
