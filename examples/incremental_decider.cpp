// SPDX-License-Identifier: MIT
// A scheduler cycle with IncrementalDecider: decide for one pending preemptor, let the cluster
// change a little, decide again. The second decision re-reads only the domains whose version
// changed, and its plan is the one a cold solve gives (docs/speed.md). The decider's solver is
// built without text (the hot path): a plan is worded (`explain`) only when it is printed.
#include "topopreempt/decisions/incremental_decider.hpp"

#include <cstdlib>
#include <iostream>

#include "topopreempt/model/cluster_generator.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"

int main() {
  using namespace topopreempt;
  ClusterSpec spec;
  spec.nodes = 64;
  GeneratedCluster cluster = generate_cluster(spec);
  const Workload preemptor = make_preemptor({PreemptorKind::node, 8});
  const cost::victim_count model;

  IncrementalDecider decider(solvers::branch_and_bound.without_text(), model, preemptor);
  const PreemptionPlan first = decider.decide(cluster.state);
  std::cout << "cycle 1: " << to_string(first.status) << ", cost " << first.cost << ", "
            << decider.fresh_reads() << " domain reads\n";

  // The cluster moves on: two CPU-only jobs finish.
  int finished = 0;
  for (const WorkloadId id : cluster.state.workload_ids()) {
    if (finished == 2) break;
    if (cluster.state.workload(id).demand.whole_devices > 0) continue;
    cluster.state.remove(id);
    ++finished;
  }

  const std::uint64_t reads_before = decider.fresh_reads();
  const PreemptionPlan second = decider.decide(cluster.state);
  std::cout << "cycle 2: " << to_string(second.status) << ", cost " << second.cost << ", "
            << decider.fresh_reads() - reads_before << " domain reads, " << decider.reused_reads()
            << " reused\n";

  // Worded for printing, the same plan as deciding from scratch, text and all.
  PreemptionPlan worded = second;
  decider.explain(worded, cluster.state);
  const PreemptionPlan cold = solvers::branch_and_bound.solve(cluster.state, preemptor, model);
  if (!second.explanation.empty() || worded != cold) {
    std::cerr << "the incremental plan differs from the cold plan\n";
    return EXIT_FAILURE;
  }
  std::cout << worded.explanation;
  return EXIT_SUCCESS;
}
