// SPDX-License-Identifier: MIT
#pragma once
/// @file snapshot.hpp
/// Cluster snapshots as JSON (format "topopreempt-snapshot/1", see docs/snapshot-format.md):
/// load with every field validated, save for round trips, and plans as JSON.
///
/// Errors carry the JSON path of the offending value, e.g.
/// `$.workloads[3].placement[0][1].domain: unknown domain 'rack0/node9/gpu2' ...`. Unknown keys
/// are errors, because a typo ("priorty") that is silently ignored changes the decision.
///
/// Needs nlohmann_json (the core headers never include it).
///
/// The format is split over: `snapshot_types.hpp` (what a snapshot holds, limits, errors),
/// `snapshot_reader.hpp` (loading, with `detail/json_reading.hpp`, `detail/topology_reading.hpp`
/// and `detail/workload_reading.hpp`) and `snapshot_writer.hpp` (saving, plans as JSON).

#include "topopreempt/io/snapshot_reader.hpp"
#include "topopreempt/io/snapshot_writer.hpp"
