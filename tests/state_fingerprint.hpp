// SPDX-License-Identifier: MIT
#pragma once
// A state's fingerprint, shared by the transaction tests and the snapshot fuzzer (no doctest).
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/topology.hpp"

namespace topopreempt::test {

/// Everything observable about a state: workloads in `for_each_workload` slot order with their
/// replicas and placements; per domain its version, usage and idle devices; at and above the
/// hosts the preemption index at each of `priorities`; per host its occupants. Equal
/// fingerprints mean two states answer every query alike.
inline std::vector<std::string> state_fingerprint(const Allocation& state,
                                                  std::initializer_list<std::int32_t> priorities) {
  const Topology& topology = state.topology();
  std::vector<std::string> lines;
  state.for_each_workload([&](const Workload& w) {
    lines.push_back(w.label() + " r" + std::to_string(w.replicas) + " " +
                    state.placement(w.id).describe(topology));
  });
  for (std::uint32_t d = 0; d < topology.size(); ++d) {
    const DomainId domain{d};
    std::string line = std::to_string(d) + " v" + std::to_string(state.domain_version(domain)) +
                       " " + topology.schema().format(state.used(domain)) + " idle " +
                       std::to_string(state.idle_devices(domain));
    if (topology.level(domain) <= topology.host_level()) {
      for (const std::int32_t priority : priorities) {
        line += " p" + std::to_string(state.preemptible_device_entries_below(domain, priority));
        for (std::size_t dim = 0; dim < topology.schema().size(); ++dim) {
          line += "," + std::to_string(state.preemptible_below(domain, priority, dim));
        }
      }
    }
    if (topology.level(domain) == topology.host_level()) {
      for (const WorkloadId id : state.occupants(domain)) line += " o" + std::to_string(id.value);
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace topopreempt::test
