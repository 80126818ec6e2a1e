// SPDX-License-Identifier: MIT
#pragma once
/// @file placement.hpp
/// Where a workload's replicas sit, down to devices and pools.

#include <cstdint>
#include <string>
#include <vector>

#include "topopreempt/resources.hpp"
#include "topopreempt/topology.hpp"

namespace topopreempt {

/// An amount taken from one domain: a whole device, a share of a device, or a pooled amount
/// (CPU, memory) from a domain holding pooled capacity.
struct PlacementEntry {
  DomainId domain;
  ResourceVector amount;
  friend bool operator==(const PlacementEntry& a, const PlacementEntry& b) {
    return a.domain == b.domain && a.amount.size() == b.amount.size() && a.amount == b.amount;
  }
};

/// Everything one replica holds.
struct ReplicaPlacement {
  std::vector<PlacementEntry> entries;
  friend bool operator==(const ReplicaPlacement&, const ReplicaPlacement&) = default;
};

/// Everything a workload holds, replica by replica.
struct Placement {
  std::vector<ReplicaPlacement> replicas;
  friend bool operator==(const Placement&, const Placement&) = default;

  /// The device leaves of all replicas, in order.
  [[nodiscard]] std::vector<DomainId> devices(const Topology& topology) const {
    std::vector<DomainId> result;
    for (const auto& replica : replicas) {
      for (const auto& entry : replica.entries) {
        if (topology.is_device(entry.domain)) result.push_back(entry.domain);
      }
    }
    return result;
  }
  /// Lowest domain containing every entry (the root for an empty placement).
  [[nodiscard]] DomainId enclosing_domain(const Topology& topology) const {
    DomainId enclosing;
    for (const auto& replica : replicas) {
      for (const auto& entry : replica.entries) {
        enclosing = enclosing.valid() ? topology.lowest_common_ancestor(enclosing, entry.domain)
                                      : entry.domain;
      }
    }
    return enclosing.valid() ? enclosing : Topology::root();
  }
  /// Lowest domain containing every entry of replica `index`.
  [[nodiscard]] DomainId replica_domain(const Topology& topology, std::size_t index) const {
    DomainId enclosing;
    for (const auto& entry : replicas.at(index).entries) {
      enclosing = enclosing.valid() ? topology.lowest_common_ancestor(enclosing, entry.domain)
                                    : entry.domain;
    }
    return enclosing.valid() ? enclosing : Topology::root();
  }
  /// "replica 0: gpu rack0/node1/.../gpu0, ...; replica 1: ..." for explanations.
  [[nodiscard]] std::string describe(const Topology& topology) const {
    std::string text;
    for (std::size_t r = 0; r < replicas.size(); ++r) {
      if (r > 0) text += "; ";
      text += "replica " + std::to_string(r) + ": ";
      bool first = true;
      for (const auto& entry : replicas[r].entries) {
        if (!first) text += ", ";
        first = false;
        text += topology.path(entry.domain) + " (" + topology.schema().format(entry.amount) + ")";
      }
    }
    return text;
  }
};

}  // namespace topopreempt
