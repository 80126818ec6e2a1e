// SPDX-License-Identifier: MIT
#pragma once
/// @file dependencies.hpp
/// Records, on a finished plan, which preemptor it is for and the domain versions it relies on.

#include <algorithm>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/plan/preemption_plan.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt::detail {

/// The domain whose version guards an entry on `d`: its host, or `d` itself above the hosts.
[[nodiscard]] inline DomainId guarding_domain(const Topology& topology, DomainId d) {
  const DomainId host = topology.ancestor_at(d, topology.host_level());
  return host.valid() ? host : d;
}

/// Sets `plan.preemptor` and `plan.dependencies` from `state`, the state the plan was computed
/// on. Every solver calls it once the plan is complete; a plan without a placement (infeasible
/// or unknown) depends on nothing.
inline void record_dependencies(const Allocation& state, const Workload& preemptor,
                                PreemptionPlan& plan) {
  const Topology& topology = state.topology();
  plan.preemptor = preemptor.id;
  plan.dependencies.clear();
  if (plan.status == PlanStatus::infeasible || plan.status == PlanStatus::unknown) return;
  std::vector<DomainId> domains;
  for (const auto& replica : plan.placement.replicas) {
    for (const auto& entry : replica.entries)
      domains.push_back(guarding_domain(topology, entry.domain));
  }
  for (const Victim& victim : plan.victims) {
    if (!state.contains(victim.id)) continue;  // cannot happen for a solver's own victims
    for (DomainId d : state.view(victim.id).domains)
      domains.push_back(guarding_domain(topology, d));
  }
  std::sort(domains.begin(), domains.end());
  domains.erase(std::unique(domains.begin(), domains.end()), domains.end());
  plan.dependencies.reserve(domains.size());
  for (DomainId d : domains) plan.dependencies.push_back({d, state.domain_version(d)});
}

}  // namespace topopreempt::detail
