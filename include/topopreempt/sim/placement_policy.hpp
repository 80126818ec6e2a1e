// SPDX-License-Identifier: MIT
#pragma once
/// @file placement_policy.hpp
/// `PlacementPolicy`: where the simulator starts a job that fits without preemption. The default
/// is the library's own `find_placement`; `best_fit_placement` is FGD's BestFit (node choice as
/// in hkust-adsl/kubernetes-scheduler-simulator) and `random_placement` its Random baseline, so
/// that FGD's published allocation curves can be reproduced.

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/placement.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/sim/random.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt::sim {

/// A placement policy answers "where does `workload` start now, if anywhere?" without
/// preempting: `policy.place(state, workload, random)` returns a placement `Allocation::add`
/// accepts, or nullopt. `random` is the simulation's generator (for tie-breaking); the policy
/// must draw from it deterministically. `Policy::name` names it.
template <class Policy>
concept PlacementPolicy = requires(const Policy& policy, const Allocation& state,
                                   const Workload& workload, Random& random) {
  { policy.place(state, workload, random) } -> std::same_as<std::optional<Placement>>;
  { Policy::name } -> std::convertible_to<std::string_view>;
};

/// The library's placement: `find_placement` (tightest tier, best fit by idle devices, affinity
/// inside a host). Draws nothing from `random`.
struct default_placement {
  /// The name reports carry.
  static constexpr std::string_view name = "find_placement";
  /// Where `workload` would go in `state`, or nothing when it does not fit.
  [[nodiscard]] std::optional<Placement> place(const Allocation& state, const Workload& workload,
                                               Random&) const {
    PlacementSearchResult found = find_placement(state, workload);
    if (!found.found) return std::nullopt;
    return std::move(found.placement);
  }
};

namespace detail {

/// Hosts on which one replica of `workload` fits (exactly, `replicas_that_fit`), ascending.
[[nodiscard]] inline std::vector<DomainId> feasible_hosts(const Allocation& state,
                                                          const ResolvedDemand& demand) {
  const Topology& topology = state.topology();
  std::vector<DomainId> hosts;
  for (DomainId host : topology.domains_at(topology.host_level())) {
    if (replicas_that_fit(state, demand, host) >= demand.replicas) hosts.push_back(host);
  }
  return hosts;
}

/// Places a single-replica workload inside `host` with `find_placement` (best-fit GPU for a
/// share, tightest sub-domain for whole GPUs).
[[nodiscard]] inline std::optional<Placement> place_on_host(const Allocation& state,
                                                            const ResolvedDemand& demand,
                                                            DomainId host) {
  PlacementSearchResult found = find_placement(state, demand, host);
  if (!found.found) return std::nullopt;
  return std::move(found.placement);
}

/// Whether a policy choosing one host per workload applies; gangs and gang scopes go to
/// `find_placement`, which places them as one.
[[nodiscard]] inline bool single_host_workload(const Workload& workload) {
  return workload.replicas == 1 && workload.gang_scope.mode == RequirementMode::none;
}

}  // namespace detail

/// FGD's BestFit (`best_fit_score.go` of hkust-adsl/kubernetes-scheduler-simulator): among the
/// hosts where the pod fits, score each by
/// `s = 0.5 (cpu_free - cpu_req) / 128000 + 0.5 (gpu_free - gpu_req) / 8000` (milli-CPU and
/// milli-GPU summed over the node: lower is tighter), turn it into the integer
/// `int((1 - s) * 100)`, min-max normalise the integers to 0..100 with integer division (their
/// `NormalizeScore`), and pick uniformly at random among the hosts with the top score (the
/// Kubernetes scheduler's `selectHost`). With `fgd_integer_scores = false` the raw `s` is
/// compared instead and ties go to the lowest domain id (a strict best fit, no randomness).
/// Inside the chosen host the pod is placed by `find_placement` (a GPU share goes to the GPU
/// with the least room left that fits). Gangs (more than one replica, or a gang scope) are
/// placed by `find_placement`.
struct best_fit_placement {
  /// The name reports carry.
  static constexpr std::string_view name = "best_fit";
  /// true: FGD's integer scores with random tie-breaks; false: raw scores, lowest domain id.
  bool fgd_integer_scores = true;

  /// Where `workload` would go in `state`, or nothing when it does not fit.
  [[nodiscard]] std::optional<Placement> place(const Allocation& state, const Workload& workload,
                                               Random& random) const {
    if (!detail::single_host_workload(workload))
      return default_placement{}.place(state, workload, random);
    const Topology& topology = state.topology();
    const ResolvedDemand demand = ResolvedDemand::of(workload, topology);
    const std::vector<DomainId> hosts = detail::feasible_hosts(state, demand);
    if (hosts.empty()) return std::nullopt;
    const ResourceSchema& schema = topology.schema();
    const std::size_t gpu = schema.index_of("gpu_milli");
    const std::size_t cpu = schema.index_of("cpu_milli");
    const auto requested_gpu = static_cast<double>(
        demand.whole_devices > 0 ? demand.whole_devices * 1000
                                 : demand.share(static_cast<Eigen::Index>(gpu)));
    const auto requested_cpu = static_cast<double>(demand.pooled(static_cast<Eigen::Index>(cpu)));
    std::vector<double> raw;
    raw.reserve(hosts.size());
    for (DomainId host : hosts) {
      const double cpu_left = static_cast<double>(state.free(host, cpu)) - requested_cpu;
      const double gpu_left = static_cast<double>(state.free(host, gpu)) - requested_gpu;
      raw.push_back(0.5 * cpu_left / 128000.0 + 0.5 * gpu_left / 8000.0);
    }
    std::size_t chosen = 0;
    if (!fgd_integer_scores) {
      for (std::size_t i = 1; i < hosts.size(); ++i) {
        if (raw[i] < raw[chosen]) chosen = i;
      }
    } else {
      std::vector<std::int64_t> score(hosts.size());
      for (std::size_t i = 0; i < hosts.size(); ++i) {
        score[i] = static_cast<std::int64_t>((1.0 - raw[i]) * 100.0);
      }
      const auto [low, high] = std::minmax_element(score.begin(), score.end());
      const std::int64_t lowest = *low;
      const std::int64_t range = *high - lowest;
      for (std::int64_t& s : score) s = range == 0 ? 0 : (s - lowest) * 100 / range;
      const std::int64_t top = *std::max_element(score.begin(), score.end());
      std::vector<std::size_t> best;
      for (std::size_t i = 0; i < hosts.size(); ++i) {
        if (score[i] == top) best.push_back(i);
      }
      chosen = best[uniform_below(random, best.size())];
    }
    return detail::place_on_host(state, demand, hosts[chosen]);
  }
};

/// FGD's Random baseline: a host chosen uniformly among those where the pod fits. Gangs are
/// placed by `find_placement`.
struct random_placement {
  /// The name reports carry.
  static constexpr std::string_view name = "random";
  /// Where `workload` would go in `state`, or nothing when it does not fit.
  [[nodiscard]] std::optional<Placement> place(const Allocation& state, const Workload& workload,
                                               Random& random) const {
    if (!detail::single_host_workload(workload))
      return default_placement{}.place(state, workload, random);
    const ResolvedDemand demand = ResolvedDemand::of(workload, state.topology());
    const std::vector<DomainId> hosts = detail::feasible_hosts(state, demand);
    if (hosts.empty()) return std::nullopt;
    return detail::place_on_host(state, demand, hosts[uniform_below(random, hosts.size())]);
  }
};

static_assert(PlacementPolicy<default_placement>);
static_assert(PlacementPolicy<best_fit_placement>);
static_assert(PlacementPolicy<random_placement>);

}  // namespace topopreempt::sim
