// SPDX-License-Identifier: MIT
#pragma once
// Helpers shared by the test files: building workloads and starting them where the placement
// search says. Not a test file itself (tests/CMakeLists.txt globs only test_*.cpp).
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>

#include "data_dir.hpp"
#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt::test {

/// A topology shared the way an `Allocation` wants it.
inline std::shared_ptr<const Topology> shared(Topology topology) {
  return std::make_shared<const Topology>(std::move(topology));
}

/// `gpus` whole GPUs per replica with 2 cores and 8 GiB of host memory per GPU.
inline Workload gpu_job(std::uint64_t id, std::int32_t priority, std::int32_t gpus,
                        std::int32_t replicas = 1, TopologyRequirement replica_scope = {},
                        TopologyRequirement gang_scope = {}) {
  Workload workload;
  workload.id = WorkloadId{id};
  workload.name = "job" + std::to_string(id);
  workload.priority = priority;
  workload.replicas = replicas;
  workload.demand.whole_devices = gpus;
  workload.demand.resources =
      ResourceSchema::standard().make({{"cpu_milli", 2000 * gpus}, {"memory_mib", 8192 * gpus}});
  workload.replica_scope = std::move(replica_scope);
  workload.gang_scope = std::move(gang_scope);
  return workload;
}

/// Starts `workload` where the placement search puts it and returns that placement.
inline Placement start(Allocation& state, const Workload& workload) {
  const auto found = find_placement(state, workload);
  REQUIRE_MESSAGE(found.found, workload.label());
  state.add(workload, found.placement);
  return found.placement;
}

/// Marker of a check skipped for want of the full data set: ctest's SKIP_REGULAR_EXPRESSION for
/// the `topopreempt.full_data` entry (tests/CMakeLists.txt) matches it.
inline constexpr std::string_view skipped_marker = "SKIPPED (no data set)";

/// `relative` inside the full data set (`data_dir()`); when it is missing, reports through doctest
/// that the calling check is skipped and why, and returns empty: the caller then returns. Put
/// such test cases in the "full_data" suite so ctest lists them as skipped.
inline std::optional<std::filesystem::path> data_file_or_skip(std::string_view relative) {
  auto file = data_file(relative);
  if (!file) {
    const auto dir = data_dir();
    MESSAGE(skipped_marker, ": ", relative, " is not in ",
            dir ? dir->string() : std::string("the data directory (none found)"),
            "; set TOPOPREEMPT_DATA_DIR to the data set (../shared/data) to run this check;"
            " where to get it: docs/install.md, \"Data for tests and experiments\"");
  }
  return file;
}

/// A small cluster whose GPUs are shared (openb-style), and a whole-GPU preemptor for it.
struct SharedGpuInstance {
  Allocation state;
  Workload preemptor;
};

/// Draws a `SharedGpuInstance` from `random`: 1-2 openb T4 nodes (4 GPUs each), 14 jobs of
/// priority [0, `priorities`), 1 in 8 not preemptible, 1 in `whole_one_in` holding a whole GPU
/// and the rest a 250-750 milli share; the preemptor (priority `preemptor_priority`) wants 1-2
/// whole GPUs guaranteed in one NUMA node or one node. Jobs that do not fit are left out.
inline SharedGpuInstance random_shared_gpu_instance(std::mt19937_64& random,
                                                    std::uint64_t priorities,
                                                    std::uint64_t whole_one_in,
                                                    std::int32_t preemptor_priority) {
  const auto topology =
      shared(shapes::cluster(shapes::openb_node("T4", 4, 64000, 262144), 1 + random() % 2, 2));
  SharedGpuInstance instance{Allocation(topology), Workload{}};
  for (std::uint64_t id = 1; id <= 14; ++id) {
    Workload workload;
    workload.id = WorkloadId{id};
    workload.priority = static_cast<std::int32_t>(random() % priorities);
    workload.preemptible = random() % 8 != 0;
    if (random() % whole_one_in == 0) {
      workload.demand.whole_devices = 1;
      workload.demand.resources = topology->schema().make({{"cpu_milli", 2000}});
    } else {
      workload.demand.resources = topology->schema().make(
          {{"gpu_milli", static_cast<Amount>(250 * (1 + random() % 3))}, {"cpu_milli", 1000}});
    }
    const auto found = find_placement(instance.state, workload);
    if (found.found) instance.state.add(workload, found.placement);
  }
  Workload& preemptor = instance.preemptor;
  preemptor.id = WorkloadId{999};
  preemptor.priority = preemptor_priority;
  preemptor.demand.whole_devices = 1 + static_cast<std::int32_t>(random() % 2);
  preemptor.replica_scope = TopologyRequirement::guaranteed(random() % 2 ? "numa" : "node");
  return instance;
}

}  // namespace topopreempt::test
