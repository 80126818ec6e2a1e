// SPDX-License-Identifier: MIT
#pragma once
/// @file topopreempt.hpp
/// Umbrella header: every public header of topopreempt except the optional JSON I/O
/// (`topopreempt/io/`, which needs nlohmann_json) and the simulator (`topopreempt/sim/sim.hpp`).
///
/// The folders are the table of contents; a folder's headers include only its own folder and
/// those above it in the table (`scripts/check_packaging.py` checks it):
/// | folder         | what it holds                                                              |
/// |----------------|----------------------------------------------------------------------------|
/// | `model/`       | resources, topology, machine shapes, workloads, placements, the cluster     |
/// |                | state (`Allocation`, its index and versions), placement search, generator, |
/// |                | cost models                                                                |
/// | `plan/`        | the plan, its verifier, transactions                                       |
/// | `solvers/`     | the `PreemptionSolver` concept, greedy, knapsack, B&B                       |
/// | `decisions/`   | decisions over time: the preemptor queue, the incremental decider          |
/// | `baselines/`   | Kubernetes DefaultPreemption and the paper's exhaustive subset search      |
/// | `capacity/`    | capacity loaning (server reclaim) and elastic scaling                       |
/// | `model_cache/` | GPU memory as a model cache: placement and eviction cost                    |
/// | `sim/`         | traces, placement policies, the discrete-event simulator (not included)    |
/// | `io/`          | JSON snapshots (not included: needs nlohmann_json)                          |

#include "topopreempt/version.hpp"

#include "topopreempt/model/resources.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/workload.hpp"
#include "topopreempt/model/placement.hpp"
#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/capacity_view.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/model/cluster_generator.hpp"
#include "topopreempt/model/cost_model.hpp"

#include "topopreempt/plan/preemption_plan.hpp"
#include "topopreempt/plan/verifier.hpp"
#include "topopreempt/plan/transaction.hpp"

#include "topopreempt/solvers/preemption_solver.hpp"
#include "topopreempt/solvers/greedy.hpp"
#include "topopreempt/solvers/knapsack.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/explain.hpp"

#include "topopreempt/decisions/preemptor_queue.hpp"
#include "topopreempt/decisions/incremental_decider.hpp"

#include "topopreempt/baselines/kube_default.hpp"
#include "topopreempt/baselines/exhaustive_subsets.hpp"

#include "topopreempt/capacity/loaning.hpp"
#include "topopreempt/capacity/elastic_scaling.hpp"
#include "topopreempt/model_cache/model_cache.hpp"
