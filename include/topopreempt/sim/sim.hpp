// SPDX-License-Identifier: MIT
#pragma once
/// @file sim.hpp
/// Umbrella header of the simulation module (`topopreempt::sim`): traces, placement policies,
/// the periodic cluster controller and the discrete-event simulator. Not part of `topopreempt.hpp`:
/// the core never needs it.

#include "topopreempt/sim/cluster_control.hpp"
#include "topopreempt/sim/placement_policy.hpp"
#include "topopreempt/sim/random.hpp"
#include "topopreempt/sim/simulator.hpp"
#include "topopreempt/sim/trace.hpp"
