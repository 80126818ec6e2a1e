// SPDX-License-Identifier: MIT
#pragma once
/// @file topopreempt.hpp
/// Umbrella header: every public header of topopreempt except the optional JSON I/O
/// (`topopreempt/io/`, which needs nlohmann_json) and the simulator (`topopreempt/sim/sim.hpp`).
///
/// The folders are the table of contents:
/// | folder         | what it holds                                                              |
/// |----------------|----------------------------------------------------------------------------|
/// | `model/`       | resources, topology, machine shapes, workloads, placements, the cluster     |
/// |                | state (`Allocation`, its index and versions), placement search, generator  |
/// | `solvers/`     | the `PreemptionSolver` concept, cost models, greedy, knapsack, B&B          |
/// | `plan/`        | the plan, its verifier, transactions, the preemptor queue, the decider      |
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

#include "topopreempt/solvers/cost_model.hpp"
#include "topopreempt/solvers/preemption_solver.hpp"
#include "topopreempt/solvers/greedy.hpp"
#include "topopreempt/solvers/knapsack.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"

#include "topopreempt/plan/preemption_plan.hpp"
#include "topopreempt/plan/verifier.hpp"
#include "topopreempt/plan/transaction.hpp"
#include "topopreempt/plan/preemptor_queue.hpp"
#include "topopreempt/plan/incremental_decider.hpp"

#include "topopreempt/baselines/kube_default.hpp"
#include "topopreempt/baselines/exhaustive_subsets.hpp"

#include "topopreempt/capacity/loaning.hpp"
#include "topopreempt/capacity/elastic_scaling.hpp"
#include "topopreempt/model_cache/model_cache.hpp"
