// SPDX-License-Identifier: MIT
#pragma once
/// @file index_band.hpp
/// `IndexBand`: what the preemption index of `Allocation` tells a cost model about one priority
/// band of one domain, so that a price bound needs no occupant read.

#include <cstdint>

namespace topopreempt {

/// One priority band of the preemption index in one domain: what the preemptible workloads of
/// one priority holding devices there have at the extreme, for price bounds that need no
/// occupant read (see `Allocation::for_each_index_band` and `IndexPricedModel`). Each extreme
/// is over the band's workloads that hold at least one device entry in the domain; a band
/// none of whose workloads holds a device is not visited.
struct IndexBand {
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
};

}  // namespace topopreempt
