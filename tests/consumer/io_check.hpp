// SPDX-License-Identifier: MIT
#pragma once
// Shared by the consumers: when built against topopreempt::io (CONSUMER_IO), load a snapshot
// from a string and plan it, so that the JSON headers and nlohmann_json arrive through the
// package alone. Prints what it checked.
#include <iostream>

#ifdef CONSUMER_IO
#include <topopreempt/io/snapshot.hpp>
#include <topopreempt/solvers/greedy.hpp>

inline bool consumer_io_check() {
  const auto snapshot = topopreempt::io::load_snapshot_text(R"({
    "format": "topopreempt-snapshot/1",
    "topology": {"cluster_of": {"shape": "hgx_h100", "nodes": 1}},
    "workloads": [],
    "preemptor": {"id": 1, "priority": 1, "demand": {"whole_devices": 1}}
  })");
  const auto plan = topopreempt::solvers::greedy.solve(snapshot.state, snapshot.preemptor,
                                                      topopreempt::cost::victim_count{});
  std::cout << "io: snapshot loaded through topopreempt::io, plan "
            << topopreempt::to_string(plan.status) << "\n";
  return plan.status == topopreempt::PlanStatus::no_preemption_needed;
}
#else
inline bool consumer_io_check() {
  std::cout << "io: not built (topopreempt::io not found)\n";
  return true;
}
#endif
