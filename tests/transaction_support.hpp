// SPDX-License-Identifier: MIT
#pragma once
// Fixtures shared by the transaction and queue tests: a small cluster where whole-node
// preemptors must preempt, and helpers to compare states and find hosts.
#include <cstdint>
#include <vector>

#include "support.hpp"
#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt::test {

/// Every domain's version: equal vectors mean nothing observable changed.
inline std::vector<std::uint64_t> all_versions(const Allocation& state) {
  std::vector<std::uint64_t> versions;
  for (std::uint32_t d = 0; d < state.topology().size(); ++d)
    versions.push_back(state.domain_version(DomainId{d}));
  return versions;
}

/// The host of running workload `id`'s first entry.
inline DomainId host_of(const Allocation& state, WorkloadId id) {
  const Topology& topology = state.topology();
  return topology.ancestor_at(state.view(id).domains.front(), topology.host_level());
}

/// Options of `four_nodes`.
struct FourNodes {
  bool node1_preemptible = true;  ///< false: node0's job is the only victim in the cluster
};

/// Four 8-GPU nodes: node0 holds victim 1 (priority 1), node1 victim 2 (priority 2), node2 a
/// job that may not be preempted, node3 another one on half its GPUs. Whole-node preemptors
/// must preempt; a 4-GPU one fits on node3.
inline Allocation four_nodes(FourNodes options = {}) {
  Allocation state(shared(shapes::cluster(shapes::dense_8gpu_server(), 4, 4)));
  start(state, gpu_job(1, 1, 8, 1, TopologyRequirement::guaranteed("node")));
  Workload second = gpu_job(2, 2, 8, 1, TopologyRequirement::guaranteed("node"));
  second.preemptible = options.node1_preemptible;
  start(state, second);
  Workload fixed = gpu_job(3, 1, 8, 1, TopologyRequirement::guaranteed("node"));
  fixed.preemptible = false;
  start(state, fixed);
  Workload half = gpu_job(6, 1, 4, 1, TopologyRequirement::guaranteed("node"));
  half.preemptible = false;
  start(state, half);
  return state;
}

/// A preemptor that needs a whole 8-GPU node.
inline Workload whole_node(std::uint64_t id, std::int32_t priority) {
  return gpu_job(id, priority, 8, 1, TopologyRequirement::guaranteed("node"));
}

}  // namespace topopreempt::test
