// SPDX-License-Identifier: MIT
#pragma once
/// @file workload.hpp
/// What a job asks for: a gang of identical replicas, its priority and its topology needs.

#include <compare>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "topopreempt/model/resources.hpp"
#include "topopreempt/model/topology.hpp"

namespace topopreempt {

/// Identifies a workload inside one `Allocation`.
struct WorkloadId {
  /// The id's number, chosen by the caller.
  std::uint64_t value = 0;
  /// Ordered by number.
  friend constexpr auto operator<=>(WorkloadId, WorkloadId) = default;
};

/// How strictly a scope must hold.
enum class RequirementMode : std::uint8_t {
  none,         ///< no topology wish at this scope
  best_effort,  ///< always schedulable; the tighter the placement, the better (tier ranks plans)
  guaranteed,   ///< must hold exactly, otherwise the workload does not fit
};

/// "Everything of this scope inside one domain of `level`".
struct TopologyRequirement {
  /// How strictly the scope must hold (`none`: no wish).
  RequirementMode mode = RequirementMode::none;
  std::string level{};  ///< a level name of the topology (ignored when mode is none)

  /// A guaranteed requirement at `level`.
  [[nodiscard]] static TopologyRequirement guaranteed(std::string level_name) {
    return {RequirementMode::guaranteed, std::move(level_name)};
  }
  /// A best-effort requirement at `level`.
  [[nodiscard]] static TopologyRequirement best_effort(std::string level_name) {
    return {RequirementMode::best_effort, std::move(level_name)};
  }
  /// Member-wise equality.
  friend bool operator==(const TopologyRequirement&, const TopologyRequirement&) = default;
};

/// What one replica needs.
///
/// `whole_devices` > 0: that many devices, each taken entirely (all its device dimensions);
/// the device dimensions of `resources` must then be zero. `whole_devices` == 0 with non-zero
/// device dimensions: a share of one single device (e.g. gpu_milli=500). Pooled dimensions
/// (CPU, memory) are drawn from pools inside the domain the replica is confined to.
struct ReplicaDemand {
  /// Whole devices per replica (the device dimensions of `resources` are then zero).
  std::int32_t whole_devices = 0;
  ResourceVector resources{};  ///< over the topology's schema; empty means all zero
};

/// Inputs of the cost models; all optional (zero means unknown / none).
struct CostInputs {
  double start_time_s = 0.0;              ///< when the workload started (seconds, any epoch)
  double seconds_since_checkpoint = 0.0;  ///< progress lost if evicted now
  std::string model_id{};                 ///< model held in GPU memory (for reload cost)
  double model_size_gib = 0.0;            ///< its size
  double extra_cost = 0.0;                ///< user-supplied additive cost (e.g. SLO penalty)
};

/// A job: a gang of `replicas` identical replicas. Preempting it frees every replica; an
/// elastic workload (`min_replicas` < `replicas`) may instead be shrunk to `min_replicas`.
struct Workload {
  /// Unique among the workloads of one state and its preemptors.
  WorkloadId id{};
  std::string name{};         ///< for messages only; may be empty
  std::int32_t priority = 0;  ///< larger wins; only strictly lower priorities are victims
  /// false: never a victim.
  bool preemptible = true;
  /// Replicas of the gang (1 for a single pod).
  std::int32_t replicas = 1;
  /// Elastic lower bound in [1, replicas]; nullopt = not elastic. Never 0: a workload shrunk
  /// to no replica would be running with nothing, so losing every replica is an eviction.
  std::optional<std::int32_t> min_replicas{};
  /// What each replica asks for.
  ReplicaDemand demand{};
  TopologyRequirement replica_scope{};  ///< e.g. guaranteed "numa": each replica in one NUMA node
  TopologyRequirement gang_scope{};     ///< e.g. guaranteed "rack": all replicas in one rack
  /// Anti-affinity: no two replicas on one host (a domain of `Topology::host_level()`), so a
  /// host failure takes at most one replica, or because the replicas each need a whole
  /// host's network or scheduler slot. Always enforced (never relaxed like a best-effort
  /// scope): a gang of R replicas needs R distinct hosts inside its gang-scope domain. Has no
  /// effect on a single replica (`replicas` == 1), and a shrink only ever removes replicas, so
  /// it keeps holding. Requires a gang scope looser than the host level (or none), since R > 1
  /// replicas cannot lie on distinct hosts inside one host.
  bool distinct_hosts = false;
  /// Inputs of the cost models (start time, lost work, model size, extra cost).
  CostInputs cost{};

  /// "workload 7 'llama-70b'" for messages.
  [[nodiscard]] std::string label() const {
    return "workload " + std::to_string(id.value) + (name.empty() ? "" : " '" + name + "'");
  }
  /// Replicas that may be dropped without preempting the whole workload.
  [[nodiscard]] std::int32_t shrinkable_replicas() const noexcept {
    return min_replicas ? replicas - *min_replicas : 0;
  }
};

/// Devices one replica of `workload` occupies as cost models count them: its whole devices, or
/// for a share the fraction of one device (`gpu_milli`, dimension 0 of the standard schema,
/// over 1000; 1 for other schemas). `cost::lost_work` prices by it, and the preemption index
/// keeps the least lost work per device entry by it, so the two cannot drift apart.
[[nodiscard]] inline double device_units_per_replica(const Workload& workload) noexcept {
  if (workload.demand.whole_devices > 0) return workload.demand.whole_devices;
  return workload.demand.resources.size() > 0
             ? static_cast<double>(workload.demand.resources(0)) / 1000.0
             : 1.0;
}

/// Throws `std::invalid_argument` naming the workload and the field if `workload` is not valid
/// against `topology`: replicas >= 1, 1 <= min_replicas <= replicas, whole_devices >= 0,
/// resources sized to the schema and non-negative, device dimensions zero when whole devices are
/// asked for, requirement levels that exist, a replica scope no looser than the host level,
/// a gang scope no tighter than the replica scope, and, for `distinct_hosts` with more than one
/// replica, a guaranteed gang scope looser than the host level.
inline void validate(const Workload& workload, const Topology& topology) {
  const auto fail = [&](const std::string& what) {
    throw std::invalid_argument(workload.label() + ": " + what);
  };
  if (workload.replicas < 1)
    fail("replicas must be >= 1, got " + std::to_string(workload.replicas));
  // A running workload keeps at least one replica: shrinking to none is an eviction, priced
  // and reported as one, so an elastic floor of 0 is rejected here rather than at shrink time.
  if (workload.min_replicas &&
      (*workload.min_replicas < 1 || *workload.min_replicas > workload.replicas)) {
    fail("min_replicas must be in [1, replicas], got " + std::to_string(*workload.min_replicas));
  }
  const ReplicaDemand& demand = workload.demand;
  if (demand.whole_devices < 0) {
    fail("whole_devices must be >= 0, got " + std::to_string(demand.whole_devices));
  }
  const ResourceSchema& schema = topology.schema();
  if (demand.resources.size() != 0 &&
      static_cast<std::size_t>(demand.resources.size()) != schema.size()) {
    fail("demand has " + std::to_string(demand.resources.size()) +
         " resource entries, the schema " + std::to_string(schema.size()));
  }
  for (Eigen::Index i = 0; i < demand.resources.size(); ++i) {
    const auto dim = static_cast<std::size_t>(i);
    if (demand.resources(i) < 0) fail("negative demand of '" + schema[dim].name + "'");
    if (demand.whole_devices > 0 && schema.is_device(dim) && demand.resources(i) != 0) {
      fail("asks for whole devices and also for '" + schema[dim].name +
           "'; whole devices already include every device dimension");
    }
  }
  std::optional<LevelIndex> replica_level;
  if (workload.replica_scope.mode != RequirementMode::none) {
    try {
      replica_level = topology.level_index(workload.replica_scope.level);
    } catch (const std::invalid_argument& error) {
      fail(std::string("replica scope: ") + error.what());
    }
    if (*replica_level < topology.host_level()) {
      fail("replica scope '" + workload.replica_scope.level + "' is looser than the host level '" +
           topology.levels()[topology.host_level()] + "'; a replica never spans hosts");
    }
  }
  if (workload.gang_scope.mode != RequirementMode::none) {
    LevelIndex gang_level = 0;
    try {
      gang_level = topology.level_index(workload.gang_scope.level);
    } catch (const std::invalid_argument& error) {
      fail(std::string("gang scope: ") + error.what());
    }
    if (replica_level && gang_level > *replica_level) {
      fail("gang scope '" + workload.gang_scope.level + "' is tighter than replica scope '" +
           workload.replica_scope.level + "'");
    }
    // A best-effort gang scope at or below the host only ranks placements (it relaxes to a
    // looser level), so only a guaranteed one contradicts distinct hosts.
    if (workload.distinct_hosts && workload.replicas > 1 &&
        workload.gang_scope.mode == RequirementMode::guaranteed &&
        gang_level >= topology.host_level()) {
      fail("distinct_hosts needs " + std::to_string(workload.replicas) +
           " hosts but the guaranteed gang scope '" + workload.gang_scope.level + "' is one " +
           topology.levels()[topology.host_level()] + " or less");
    }
  }
}

}  // namespace topopreempt
