// SPDX-License-Identifier: MIT
#pragma once
/// @file placement.hpp
/// Where a workload's replicas sit, down to devices and pools.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "topopreempt/model/resources.hpp"
#include "topopreempt/model/topology.hpp"

namespace topopreempt {

/// An amount taken from one domain: a whole device, a share of a device, or a pooled amount
/// (CPU, memory) from a domain holding pooled capacity.
struct PlacementEntry {
  /// The domain the amount is taken from: a device, or a domain holding pooled capacity.
  DomainId domain;
  /// The amounts taken there (zero in the other dimensions).
  ResourceVector amount;
  /// Same domain and same amounts.
  friend bool operator==(const PlacementEntry& a, const PlacementEntry& b) {
    return a.domain == b.domain && a.amount.size() == b.amount.size() && a.amount == b.amount;
  }
};

/// Everything one replica holds.
struct ReplicaPlacement {
  /// The replica's entries.
  std::vector<PlacementEntry> entries;
  /// Member-wise equality.
  friend bool operator==(const ReplicaPlacement&, const ReplicaPlacement&) = default;
};

/// Everything a workload holds, replica by replica.
struct Placement {
  /// One entry per replica, in replica order.
  std::vector<ReplicaPlacement> replicas;
  /// Member-wise equality.
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
  /// Lowest domain holding every replica (`replica_domain` of each, combined); the root for an
  /// empty placement.
  [[nodiscard]] DomainId enclosing_domain(const Topology& topology) const {
    DomainId enclosing;
    for (std::size_t r = 0; r < replicas.size(); ++r) {
      if (replicas[r].entries.empty()) continue;
      const DomainId domain = replica_domain(topology, r);
      enclosing = enclosing.valid() ? topology.lowest_common_ancestor(enclosing, domain) : domain;
    }
    return enclosing.valid() ? enclosing : Topology::root();
  }
  /// Lowest domain containing every entry, pools included (the root for an empty placement).
  [[nodiscard]] DomainId span_domain(const Topology& topology) const {
    DomainId span;
    for (const auto& replica : replicas) {
      for (const auto& entry : replica.entries) {
        span = span.valid() ? topology.lowest_common_ancestor(span, entry.domain) : entry.domain;
      }
    }
    return span.valid() ? span : Topology::root();
  }
  /// The domain replica `index` occupies, see `footprint_domain`.
  [[nodiscard]] DomainId replica_domain(const Topology& topology, std::size_t index) const {
    return footprint_domain(topology, replicas.at(index).entries);
  }

  /// The domain a replica occupies: the lowest common ancestor of its *core* entries — its
  /// devices and the pools that enclose none of its other entries — widened by any other pool
  /// that does not enclose that domain. Pools that enclose it (a NUMA node's CPUs serving the
  /// GPUs under one of its PCIe switches, or the memory of a NUMA node serving CPUs taken from
  /// one of its core groups) are merely drawn from. So are the pools of a replica with devices
  /// that hold only dimensions its devices' domain D lacks, inside the pool root of D (the
  /// nearest ancestor of D, not above the host, whose subtree holds them): on the RTX 4090
  /// server a GPU share with CPU from a core group beside the GPU occupies the GPU, exactly as
  /// an HGX GPU occupies its PCIe switch while drawing CPU from the NUMA node above. A replica
  /// whose only entry is a pool occupies that pool. The root when empty.
  [[nodiscard]] static DomainId footprint_domain(const Topology& topology,
                                                 const std::vector<PlacementEntry>& entries) {
    DomainId devices;
    for (const auto& entry : entries) {
      if (!topology.is_device(entry.domain)) continue;
      devices = devices.valid() ? topology.lowest_common_ancestor(devices, entry.domain)
                                : entry.domain;
    }
    const auto served_beside = [&](const PlacementEntry& pool) {
      return devices.valid() && !topology.is_device(pool.domain) &&
             drawn_from_pool_root(topology, devices, pool);
    };
    const auto encloses_another = [&](const PlacementEntry& pool) {
      return std::any_of(entries.begin(), entries.end(), [&](const PlacementEntry& other) {
        return other.domain != pool.domain && topology.contains(pool.domain, other.domain);
      });
    };
    DomainId core;
    for (const auto& entry : entries) {
      if (served_beside(entry)) continue;
      if (!topology.is_device(entry.domain) && encloses_another(entry)) continue;
      core = core.valid() ? topology.lowest_common_ancestor(core, entry.domain) : entry.domain;
    }
    DomainId domain = core;
    for (const auto& entry : entries) {
      if (served_beside(entry)) continue;
      if (topology.is_device(entry.domain) || !encloses_another(entry)) continue;
      if (core.valid() && topology.contains(entry.domain, core)) continue;
      domain = domain.valid() ? topology.lowest_common_ancestor(domain, entry.domain) : entry.domain;
    }
    return domain.valid() ? domain : Topology::root();
  }
  /// Whether every dimension `pool` holds is absent from the subtree of `devices` and `pool`
  /// lies inside the nearest ancestor of `devices` (not above the host) whose subtree holds it:
  /// the domain placement search draws that dimension from for a unit holding those devices.
  [[nodiscard]] static bool drawn_from_pool_root(const Topology& topology, DomainId devices,
                                                 const PlacementEntry& pool) {
    bool any = false;
    for (Eigen::Index i = 0; i < pool.amount.size(); ++i) {
      if (pool.amount(i) <= 0) continue;
      if (topology.capacity(devices)(i) > 0) return false;
      DomainId root;
      for (DomainId at = topology.parent(devices); at.valid(); at = topology.parent(at)) {
        if (topology.level(at) < topology.host_level()) break;
        if (topology.capacity(at)(i) > 0) {
          root = at;
          break;
        }
      }
      if (!root.valid() || !topology.contains(root, pool.domain)) return false;
      any = true;
    }
    return any;
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
