// SPDX-License-Identifier: MIT
#pragma once
/// @file benchmarks/scan_floors.hpp
/// The two floors every decision time is compared with (shared by the benchmark programs):
///
/// - `priority_scan`: one pass over every running workload, reading its priority, its
///   preemptibility and its GPU count (the workload records only, in storage order). A lower
///   floor: it does not read where anything runs.
/// - `footprint_scan`: host by host (`for_each_occupant_unordered`), every occupant's priority
///   and every placement entry of it on that host: its domain id and all its amounts. This is
///   what a decision really depends on (who runs where, holding what). Each entry is summed
///   once, on its own host; a gang member's entries on its other hosts are skipped by an id
///   range test, as any per-host screen must.
#include <cstdint>

#include "topopreempt/model/allocation.hpp"

namespace topopreempt_bench {

/// The priority-only floor: a sum over workload records so the compiler cannot drop the pass.
inline std::int64_t priority_scan(const topopreempt::Allocation& state) {
  std::int64_t sum = 0;
  state.for_each_workload([&](const topopreempt::Workload& workload) {
    sum += workload.preemptible ? workload.priority : 0;
    sum += static_cast<std::int64_t>(workload.demand.whole_devices) * workload.replicas;
  });
  return sum;
}

/// The footprint floor: every placement entry of every running workload, read on its host.
/// `entries` (optional) receives the number of entries summed.
inline std::int64_t footprint_scan(const topopreempt::Allocation& state,
                                   std::int64_t* entries = nullptr) {
  using namespace topopreempt;
  const Topology& topology = state.topology();
  std::int64_t sum = 0;
  std::int64_t count = 0;
  for (const DomainId host : topology.domains_at(topology.host_level())) {
    const std::uint32_t first = host.value;
    const std::uint32_t end = topology.subtree_end(host).value;
    state.for_each_occupant_unordered(host, [&](const WorkloadView& view) {
      sum += view.workload.preemptible ? view.workload.priority : 0;
      const auto rows = view.amounts.rows();
      for (std::size_t e = 0; e < view.domains.size(); ++e) {
        const std::uint32_t d = view.domains[e].value;
        if (d < first || d >= end) continue;  // read on its own host
        ++count;
        sum += d;
        const auto column = static_cast<Eigen::Index>(e);
        for (Eigen::Index i = 0; i < rows; ++i) sum += view.amounts(i, column);
      }
    });
  }
  if (entries != nullptr) *entries = count;
  return sum;
}

}  // namespace topopreempt_bench
