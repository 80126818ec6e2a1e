// SPDX-License-Identifier: MIT
#pragma once
/// @file cluster_control.hpp
/// `ClusterControl`: what a periodic cluster-level controller may do during a simulation
/// (`SimulationOptions::controller`). Scheduling a queue is per job; some policies act on the
/// cluster as a whole at regular intervals: loaning idle servers of one cluster to another and
/// reclaiming them (Aryl), scaling elastic jobs into spare GPUs, cordoning hosts for
/// maintenance. The controller sees the state and the jobs, and acts through this interface so
/// that the simulator keeps its accounting (lost work, requeues, work rates, allocation) right.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/placement.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt::sim {

/// A trace job as a controller sees it.
struct JobStatus {
  /// The job's workload id.
  WorkloadId id{};
  /// Its priority.
  std::int32_t priority = 0;
  std::int32_t replicas = 0;        ///< replicas now (running), or as it will start (waiting)
  std::int32_t trace_replicas = 0;  ///< replicas in the trace: the size at which work rate is 1
  std::optional<std::int32_t> min_replicas{};  ///< elastic lower bound, as in the trace
  double gpus_per_replica = 0.0;  ///< whole GPUs, or the fraction of one (gpu_milli / 1000)
  /// Seconds of work left at trace size (a job at r replicas finishes it in
  /// remaining_work_s x trace_replicas / r).
  double remaining_work_s = 0.0;
  double queued_since_s = 0.0;  ///< waiting jobs: when it last entered the queue
};

/// Whether capacity a controller holds (`ClusterControl::reserve`) counts as used in the
/// allocation metrics.
enum class HeldCapacity : std::uint8_t {
  /// Held and busy (e.g. servers running inference outside the trace): counted as allocated.
  in_use,
  /// Held but idle (e.g. a cordoned server, an inference server kept back although idle): not
  /// counted as allocated; it is simply unavailable to the trace's jobs.
  idle,
};

/// The simulator's side of a controller call. Valid only during the call it is passed to;
/// every action takes effect at once (the scheduling pass that follows the call sees it).
/// Actions validate first and throw `std::invalid_argument` naming the job or workload, with
/// nothing changed, for an unknown id, a job that is not running, or an action the state
/// rejects. Not thread-safe (the run is single-threaded).
class ClusterControl {
 public:
  ClusterControl() = default;
  ClusterControl(const ClusterControl&) = delete;
  ClusterControl& operator=(const ClusterControl&) = delete;
  virtual ~ClusterControl() = default;

  /// Simulated time of this call.
  [[nodiscard]] virtual double now() const = 0;
  /// The cluster state: trace jobs and the controller's reservations.
  [[nodiscard]] virtual const Allocation& state() const = 0;
  /// The running trace jobs, in trace order.
  [[nodiscard]] virtual std::vector<JobStatus> running() const = 0;
  /// The trace jobs in the queue (arrived, not running, not restarting), in trace order.
  [[nodiscard]] virtual std::vector<JobStatus> waiting() const = 0;

  /// Evicts running job `id` exactly as a preemption plan would: it loses the work since its
  /// last checkpoint and re-enters the queue after its restart delay. Counted in `evictions`.
  virtual void evict(WorkloadId id) = 0;
  /// Drops replicas of running elastic job `id` (indices into its current replica list, as
  /// `Allocation::shrink`); it keeps its work and runs slower. Counted in `shrinks`.
  virtual void shrink(WorkloadId id, std::span<const std::int32_t> replicas_to_drop) = 0;
  /// Adds up to `extra` replicas to running elastic job `id`, one at a time where
  /// `find_placement` finds room for one more replica (its replica scope holds, its gang scope
  /// is checked by the state); stops at the first that does not fit. Returns how many were
  /// added (counted in `grows`). The job runs faster: work rate = replicas / trace replicas.
  /// Throws for a job that is not elastic or a negative `extra`.
  virtual std::int32_t grow(WorkloadId id, std::int32_t extra) = 0;
  /// Holds capacity outside the trace: adds `workload` at `placement` (its id must be neither
  /// a trace job's nor running) and must not be preemptible (solvers never pick it). It stays
  /// until `release`.
  virtual void reserve(const Workload& workload, const Placement& placement, HeldCapacity use) = 0;
  /// Frees a reservation made by `reserve`.
  virtual void release(WorkloadId id) = 0;
};

}  // namespace topopreempt::sim
