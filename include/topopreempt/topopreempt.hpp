// SPDX-License-Identifier: MIT
#pragma once
/// @file topopreempt.hpp
/// Umbrella header: every public header of topopreempt except the optional JSON I/O
/// (`topopreempt/io/*.hpp`, which needs nlohmann_json).

#include "topopreempt/version.hpp"

#include "topopreempt/resources.hpp"
#include "topopreempt/topology.hpp"
#include "topopreempt/machine_shapes.hpp"
#include "topopreempt/workload.hpp"
#include "topopreempt/placement.hpp"
#include "topopreempt/allocation.hpp"
#include "topopreempt/capacity_view.hpp"
#include "topopreempt/placement_search.hpp"

#include "topopreempt/cost_model.hpp"
#include "topopreempt/preemption_plan.hpp"
#include "topopreempt/preemption_solver.hpp"

#include "topopreempt/solvers/greedy.hpp"
#include "topopreempt/solvers/knapsack.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"

#include "topopreempt/baselines/kube_default.hpp"
#include "topopreempt/baselines/exhaustive_subsets.hpp"
#include "topopreempt/plan_verifier.hpp"
#include "topopreempt/plan_transaction.hpp"
#include "topopreempt/preemptor_queue.hpp"
#include "topopreempt/cluster_generator.hpp"

#include "topopreempt/aryl.hpp"
#include "topopreempt/compass.hpp"
