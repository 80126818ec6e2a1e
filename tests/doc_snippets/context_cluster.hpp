// SPDX-License-Identifier: MIT
#pragma once
// Context "cluster" of the documentation's C++ fragments (tests/doc_snippets/extract.py): the
// names the README and docs/*.md use for a running cluster and a pending preemptor, as members
// of `SnippetContext`, so that a fragment compiles exactly as the reader sees it.
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "topopreempt/sim/sim.hpp"
#include "topopreempt/topopreempt.hpp"

namespace doc_snippets::cluster {

using namespace topopreempt;

/// A 4-GPU request guaranteed in one NUMA node, as the README's opening example has it.
inline Workload serving_workload() {
  return Workload{.id = WorkloadId{100}, .name = "llm-serving", .priority = 10,
                  .demand = {.whole_devices = 4},
                  .replica_scope = TopologyRequirement::guaranteed("numa")};
}

/// What the fragments refer to without declaring it.
struct SnippetContext {
  std::shared_ptr<const Topology> topology =
      std::make_shared<const Topology>(shapes::cluster(shapes::hgx_h100(), 4, 2));
  Topology racks = shapes::cluster(shapes::dense_8gpu_server(), 4, 2);  ///< a value to move from
  Allocation state{topology};    ///< the cluster state a scheduler keeps
  Allocation cluster{topology};  ///< the same, under the name the transaction docs use
  Workload serving = serving_workload();
  Workload preemptor = serving_workload();
  Workload job = serving_workload();
  Workload workload = serving_workload();
  Placement placement;
  WorkloadId id{1};
  WorkloadId finished_job{1};
  PreemptionPlan plan;
  cost::priority_weighted cost_model;
  DomainId node = topology->domains_at(topology->host_level()).front();
  std::size_t cpu = topology->schema().index_of("cpu_milli");
  sim::Trace trace;

  /// The scheduler's own hooks a fragment calls.
  void log(const std::string& line) const { std::clog << line << '\n'; }
  [[nodiscard]] std::vector<Workload> pending_preemptors() const { return {serving}; }
  void start_evictions(const PreemptionPlan& started) const { log(started.solver); }
  [[nodiscard]] bool may_preempt(const Workload& candidate) const { return candidate.priority > 0; }
};

}  // namespace doc_snippets::cluster
