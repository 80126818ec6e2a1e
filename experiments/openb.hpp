// SPDX-License-Identifier: MIT
#pragma once
// The Alibaba openb trace (shared/data/openb): its GPU nodes as a topology and its pods as
// workloads. Used by Experiments B1 and B2. Not part of the library.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"

namespace experiments {

/// The data directory when it holds the openb trace; otherwise nothing, after telling the user on
/// stdout that `experiment` is skipped and which folders (`folders`, e.g. "openb/ and fgd/") the
/// directory set by TOPOPREEMPT_DATA_DIR must hold.
inline std::optional<std::filesystem::path> openb_data_dir_or_skip(std::string_view experiment,
                                                                   std::string_view folders) {
  auto data = data_dir();
  if (data && std::filesystem::exists(*data / "openb" / "openb_pod_list_default.csv")) return data;
  std::cout << experiment
            << " skipped: the openb trace is not there (set TOPOPREEMPT_DATA_DIR to the "
            << "directory holding " << folders << ")\n"
            << "  openb/: github.com/alibaba/clusterdata, commit 7a6c496e, "
               "cluster-trace-gpu-v2023/csv\n"
            << "  fgd/: github.com/hkust-adsl/kubernetes-scheduler-simulator, commit 8f3d6417, "
               "experiments/analysis/expected_results\n"
            << "  (docs/install.md, \"Data for tests and experiments\")\n";
  return std::nullopt;
}

/// One pod of `openb_pod_list_*.csv`.
struct OpenbPod {
  std::string name;
  topopreempt::Amount cpu_milli = 0;
  topopreempt::Amount memory_mib = 0;
  std::int32_t num_gpu = 0;
  topopreempt::Amount gpu_milli = 0;  ///< per GPU; < 1000 is a share of one GPU
  std::string qos;                    ///< LS, BE, Burstable, Guaranteed
  double creation_s = 0.0;
  double deletion_s = 0.0;

  /// GPUs requested (a share counts as its fraction).
  [[nodiscard]] double gpus() const {
    return num_gpu == 1 && gpu_milli < 1000 ? static_cast<double>(gpu_milli) / 1000.0 : num_gpu;
  }
  /// The pod as a workload (no topology requirement; the caller sets priority and scopes).
  [[nodiscard]] topopreempt::Workload workload(std::uint64_t id) const {
    using namespace topopreempt;
    Workload w;
    w.id = WorkloadId{id};
    w.name = name;
    const ResourceSchema schema = ResourceSchema::standard();
    if (num_gpu == 1 && gpu_milli < 1000) {
      w.demand.resources = schema.make(
          {{"gpu_milli", gpu_milli}, {"cpu_milli", cpu_milli}, {"memory_mib", memory_mib}});
    } else {
      w.demand.whole_devices = num_gpu;
      w.demand.resources = schema.make({{"cpu_milli", cpu_milli}, {"memory_mib", memory_mib}});
    }
    return w;
  }
};

/// Reads a pod list (`name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,pod_phase,
/// creation_time,deletion_time,scheduled_time]`); throws naming the file and line.
inline std::vector<OpenbPod> load_openb_pods(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::string line;
  std::getline(in, line);
  if (line.rfind("name,cpu_milli,memory_mib,num_gpu,gpu_milli", 0) != 0) {
    throw std::runtime_error(path.string() + ":1: unexpected header");
  }
  std::vector<OpenbPod> pods;
  for (std::size_t number = 2; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    std::vector<std::string> f;
    std::stringstream row(line);
    for (std::string field; std::getline(row, field, ',');) f.push_back(field);
    try {
      OpenbPod pod;
      pod.name = f.at(0);
      pod.cpu_milli = std::stoll(f.at(1));
      pod.memory_mib = std::stoll(f.at(2));
      pod.num_gpu = std::stoi(f.at(3));
      pod.gpu_milli = std::stoll(f.at(4));
      if (f.size() >= 10) {
        pod.qos = f[6];
        pod.creation_s = f[8].empty() ? 0.0 : std::stod(f[8]);
        pod.deletion_s = f[9].empty() ? 0.0 : std::stod(f[9]);
      }
      pods.push_back(std::move(pod));
    } catch (const std::exception& error) {
      throw std::runtime_error(path.string() + ":" + std::to_string(number) + ": " + error.what());
    }
  }
  return pods;
}

/// The 1,213 GPU nodes as a cluster (racks of 32; node internals synthesised, see
/// `shapes::openb_node`).
inline std::shared_ptr<const topopreempt::Topology> openb_cluster(
    const std::filesystem::path& data) {
  namespace shapes = topopreempt::shapes;
  return std::make_shared<const topopreempt::Topology>(shapes::cluster(
      shapes::load_openb_nodes((data / "openb" / "openb_node_list_gpu_node.csv").string()), 32));
}

}  // namespace experiments
