// SPDX-License-Identifier: MIT
#include <Eigen/Core>  // must be reachable through topopreempt::topopreempt alone
#include <iostream>
#include <memory>
#include <string>
#include <range/v3/version.hpp>
#include <topopreempt/topopreempt.hpp>
#ifdef TEST_PACKAGE_IO
#include <topopreempt/io/snapshot.hpp>
#endif

// Eigen 5 versions semantically inside the old macros: 3.4.0 is WORLD.MAJOR.MINOR, 5.0.1 is
// MAJOR.MINOR.PATCH (WORLD stays 3).
#ifdef EIGEN_PATCH_VERSION
constexpr int eigen_version[] = {EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION, EIGEN_PATCH_VERSION};
#else
constexpr int eigen_version[] = {EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION};
#endif

int main() {
  using namespace topopreempt;
  // One real decision, so the package is exercised and not just included.
  auto topology = std::make_shared<const Topology>(shapes::single_machine(shapes::hgx_h100()));
  Allocation cluster(topology);
  const Workload running{.id = WorkloadId{1}, .priority = 0, .demand = {.whole_devices = 8}};
  cluster.add(running, find_placement(cluster, running).placement);
  const Workload urgent{.id = WorkloadId{2}, .priority = 10, .demand = {.whole_devices = 2}};
  const PreemptionPlan plan =
      solvers::branch_and_bound.solve(cluster, urgent, cost::victim_count{});

  std::cout << "topopreempt " << version_string << " (conan test_package; Eigen "
            << eigen_version[0] << '.' << eigen_version[1] << '.' << eigen_version[2]
            << ", range-v3 " << RANGE_V3_MAJOR << '.' << RANGE_V3_MINOR
            << "): " << plan.victims.size() << " victim(s)\n";
#ifdef TEST_PACKAGE_IO
  // with_io: the snapshot format through topopreempt::io.
  const std::string document =
      io::save_snapshot(io::Snapshot{.topology = topology, .state = cluster, .preemptor = urgent})
          .dump();
  const io::Snapshot reloaded = io::load_snapshot_text(document);
  std::cout << "io: " << document.size() << " bytes saved and reloaded, "
            << reloaded.state.size() << " workload(s)\n";
  if (reloaded.state.size() != 1) return 1;
#endif
  return plan.victims.size() == 1 ? 0 : 1;
}
