// SPDX-License-Identifier: MIT
#pragma once
/// @file index_band.hpp
/// `IndexBand`: what the preemption index of `Allocation` tells a cost model about one priority
/// band of one domain, so that a price bound needs no occupant read.

#include <cstdint>
#include <limits>

namespace topopreempt {

/// One priority band of the preemption index in one domain: what the preemptible workloads of
/// one priority holding devices there have at the extreme, for price bounds that need no
/// occupant read (see `Allocation::for_each_index_band` and `IndexPricedModel`). Each extreme
/// is over the band's workloads that hold at least one device entry in the domain; a band
/// none of whose workloads holds a device is not visited.
struct IndexBand {
  /// The band's priority.
  std::int32_t priority = 0;
  /// Least `max(seconds_since_checkpoint, 0) x device_units_per_replica / device entries per
  /// replica`: the least lost work (device-seconds) per device entry a victim frees. The most
  /// recently checkpointed workload sets it.
  double least_lost_work_per_entry = 0.0;
  /// Least `max(model_size_gib, 0) / device entries per replica`: the least model size to
  /// reload per device entry a victim frees.
  double least_model_gib_per_entry = 0.0;
  /// Most device entries one workload holds in all (replicas x entries per replica): no
  /// single eviction or shrink frees more.
  std::int64_t most_entries_per_victim = 0;
  /// The least lost work per device entry over the band's workloads other than the one that
  /// sets `least_lost_work_per_entry` (equal to it when two workloads tie; +infinity when the
  /// band holds one workload). Every device entry but that workload's costs at least this
  /// much lost work, so freeing many entries in one domain is bounded by more than `N x` the
  /// least (see `PriceRate` and docs/costs.md).
  double second_least_lost_work_per_entry = std::numeric_limits<double>::infinity();
  /// Device entries in all (replicas x entries per replica) of the workload that sets
  /// `least_lost_work_per_entry`: at most this many entries cost less than
  /// `second_least_lost_work_per_entry`.
  std::int64_t entries_of_least_lost_work = 0;
  /// Least lost work of one replica, `max(seconds_since_checkpoint, 0) x
  /// device_units_per_replica`, over the band's workloads: no action frees less than a replica,
  /// so none loses less (see `cost::index_action_price_of`). The index keeps it above the host
  /// level; at a host and below it gives `least_lost_work_per_entry` (no larger: a replica
  /// holds at least one entry).
  double least_lost_work_per_replica = 0.0;
  /// Least model size of one replica, `max(model_size_gib, 0)`, over the band's workloads; at
  /// a host and below, `least_model_gib_per_entry` (as above).
  double least_model_gib_per_replica = 0.0;
};

}  // namespace topopreempt
