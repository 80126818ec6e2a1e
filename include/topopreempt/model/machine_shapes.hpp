// SPDX-License-Identifier: MIT
#pragma once
/// @file machine_shapes.hpp
/// Real machine shapes in a few lines each, and clusters of them grouped in racks.
///
/// All shapes use `ResourceSchema::standard()`: gpu_milli (1000 = one GPU) and gpu_memory_mib
/// on GPU leaves; cpu_milli (1000 = one core) and memory_mib pooled on NUMA nodes (or core
/// groups). The host level is always "node".

#include <Eigen/Core>
#include <algorithm>
#include <cstddef>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "topopreempt/model/resources.hpp"
#include "topopreempt/model/topology.hpp"

namespace topopreempt::shapes {

/// One domain of a machine shape and its subtree.
struct ShapeDomain {
  /// Its level, e.g. "numa".
  std::string level;
  /// Its name, unique among its siblings, e.g. "numa0".
  std::string name;
  ResourceVector local_capacity;  ///< empty = zero
  /// Its child domains, in order.
  std::vector<ShapeDomain> children;
};

/// A machine (or a rack that is one NVLink domain) described as a subtree template.
struct MachineShape {
  std::string model;                ///< e.g. "hgx-h100"
  std::vector<std::string> levels;  ///< the shape's own levels, its root's level first
  /// The machine's root domain (at `levels.front()`) and its subtree.
  ShapeDomain root;
  std::optional<Eigen::MatrixXd> affinity;  ///< per host (node): device x device
};

namespace detail {

inline ResourceVector gpu_capacity(Amount memory_mib) {
  return ResourceSchema::standard().make({{"gpu_milli", 1000}, {"gpu_memory_mib", memory_mib}});
}
inline ResourceVector host_pool(Amount cpu_milli, Amount memory_mib) {
  return ResourceSchema::standard().make({{"cpu_milli", cpu_milli}, {"memory_mib", memory_mib}});
}
inline ShapeDomain gpu(int index, Amount memory_mib) {
  return {"gpu", "gpu" + std::to_string(index), gpu_capacity(memory_mib), {}};
}
/// Affinity from the level at which two GPUs meet: `by_depth[k]` for GPUs whose lowest common
/// ancestor is k levels below the node (so deeper meeting = stronger link).
inline Eigen::MatrixXd affinity_by_common_level(const ShapeDomain& node,
                                                const std::vector<double>& by_depth) {
  std::vector<std::vector<int>> paths;  // child indices from the node down to each GPU
  std::vector<int> path;
  const auto walk = [&](const auto& self, const ShapeDomain& at) -> void {
    if (at.children.empty() && at.level == "gpu") paths.push_back(path);
    for (std::size_t i = 0; i < at.children.size(); ++i) {
      path.push_back(static_cast<int>(i));
      self(self, at.children[i]);
      path.pop_back();
    }
  };
  walk(walk, node);
  const auto n = static_cast<Eigen::Index>(paths.size());
  Eigen::MatrixXd matrix = Eigen::MatrixXd::Zero(n, n);
  for (Eigen::Index a = 0; a < n; ++a) {
    for (Eigen::Index b = 0; b < n; ++b) {
      if (a == b) continue;
      std::size_t common = 0;
      const auto& pa = paths[static_cast<std::size_t>(a)];
      const auto& pb = paths[static_cast<std::size_t>(b)];
      while (common < pa.size() && common < pb.size() && pa[common] == pb[common]) ++common;
      matrix(a, b) = by_depth.at(std::min(common, by_depth.size() - 1));
    }
  }
  return matrix;
}

}  // namespace detail

/// The server of the topology-aware preemption paper (arXiv 2411.11560): 8x RTX 4090 (24 GiB),
/// 2 sockets, 8 NUMA nodes (4 per socket, one GPU each), 2 core groups of 6 cores per NUMA
/// node, 64 GiB per NUMA node. Levels: node > socket > numa > core_group > gpu.
/// Affinity (PCIe only, no NVLink): 2 within a socket, 1 across sockets.
[[nodiscard]] inline MachineShape rtx4090_server() {
  ShapeDomain node{"node", "node", {}, {}};
  int gpu = 0;
  for (int s = 0; s < 2; ++s) {
    ShapeDomain socket{"socket", "socket" + std::to_string(s), {}, {}};
    for (int n = 0; n < 4; ++n) {
      const int numa_index = s * 4 + n;
      ShapeDomain numa{"numa", "numa" + std::to_string(numa_index),
                       ResourceSchema::standard().make({{"memory_mib", 65536}}), {}};
      for (int g = 0; g < 2; ++g) {
        numa.children.push_back({"core_group", "cores" + std::to_string(numa_index * 2 + g),
                                 ResourceSchema::standard().make({{"cpu_milli", 6000}}), {}});
      }
      numa.children.push_back(detail::gpu(gpu++, 24576));
      socket.children.push_back(std::move(numa));
    }
    node.children.push_back(std::move(socket));
  }
  MachineShape shape{"rtx4090-server", {"node", "socket", "numa", "core_group", "gpu"}, node, {}};
  shape.affinity = detail::affinity_by_common_level(node, {1.0, 2.0});
  return shape;
}

/// An NVIDIA HGX H100 node: 8x H100 80 GB all-to-all on NVSwitch (the node is one NVLink
/// island, 900 GB/s between any two GPUs), 2 sockets of 56 cores with 1 TiB each (one NUMA
/// node per socket), 2 PCIe switches per socket with 2 GPUs each.
/// Levels: node > socket > numa > pcie_switch > gpu.
[[nodiscard]] inline MachineShape hgx_h100() {
  ShapeDomain node{"node", "node", {}, {}};
  int gpu = 0;
  for (int s = 0; s < 2; ++s) {
    ShapeDomain numa{"numa", "numa" + std::to_string(s), detail::host_pool(56000, 1048576), {}};
    for (int p = 0; p < 2; ++p) {
      ShapeDomain pcie{"pcie_switch", "pcie" + std::to_string(s * 2 + p), {}, {}};
      for (int g = 0; g < 2; ++g) pcie.children.push_back(detail::gpu(gpu++, 81920));
      numa.children.push_back(std::move(pcie));
    }
    node.children.push_back({"socket", "socket" + std::to_string(s), {}, {std::move(numa)}});
  }
  MachineShape shape{"hgx-h100", {"node", "socket", "numa", "pcie_switch", "gpu"}, node, {}};
  shape.affinity = detail::affinity_by_common_level(node, {900.0});
  return shape;
}

/// The node of DESIGN.md §6 benchmarks: 8 GPUs (80 GiB), 2 sockets, 4 PCIe switches (2 per
/// socket), 8 NUMA nodes (2 per switch, 1 GPU and 8 cores / 128 GiB each). A GPU pair under one
/// PCIe switch is joined by an NVLink bridge, so "pcie_switch" is the NVLink island.
/// Levels: node > socket > pcie_switch > numa > gpu.
[[nodiscard]] inline MachineShape dense_8gpu_server() {
  ShapeDomain node{"node", "node", {}, {}};
  int index = 0;
  for (int s = 0; s < 2; ++s) {
    ShapeDomain socket{"socket", "socket" + std::to_string(s), {}, {}};
    for (int p = 0; p < 2; ++p) {
      ShapeDomain pcie{"pcie_switch", "pcie" + std::to_string(s * 2 + p), {}, {}};
      for (int n = 0; n < 2; ++n, ++index) {
        pcie.children.push_back({"numa", "numa" + std::to_string(index),
                                 detail::host_pool(8000, 131072), {detail::gpu(index, 81920)}});
      }
      socket.children.push_back(std::move(pcie));
    }
    node.children.push_back(std::move(socket));
  }
  MachineShape shape{"dense-8gpu", {"node", "socket", "pcie_switch", "numa", "gpu"}, node, {}};
  shape.affinity = detail::affinity_by_common_level(node, {1.0, 2.0, 50.0});
  return shape;
}

/// An NVIDIA GB200 NVL72 rack: one NVLink domain of 72 B200 GPUs (186 GiB each) over 18
/// compute trays ("node"), each with 2 Grace sockets (72 cores, 480 GiB) carrying 2 GPUs.
/// The shape's root is the rack, so "guaranteed at rack" means "inside one NVLink domain".
/// Levels: rack > node > socket > gpu.
[[nodiscard]] inline MachineShape gb200_nvl72_rack() {
  ShapeDomain rack{"rack", "nvl72", {}, {}};
  for (int t = 0; t < 18; ++t) {
    ShapeDomain tray{"node", "tray" + std::to_string(t), {}, {}};
    for (int s = 0; s < 2; ++s) {
      ShapeDomain grace{"socket", "grace" + std::to_string(s), detail::host_pool(72000, 491520), {}};
      for (int g = 0; g < 2; ++g) grace.children.push_back(detail::gpu(s * 2 + g, 190464));
      tray.children.push_back(std::move(grace));
    }
    rack.children.push_back(std::move(tray));
  }
  MachineShape shape{"gb200-nvl72", {"rack", "node", "socket", "gpu"}, rack, {}};
  return shape;
}

/// GPU memory (MiB) of an openb GPU model. The trace names two models only as "G2" and "G3";
/// we assume 24 GiB for them (A10-class), and 16 GiB for P100, T4 and V100M16.
[[nodiscard]] inline Amount openb_gpu_memory_mib(const std::string& model) {
  if (model == "V100M32") return 32768;
  if (model == "A10" || model == "G2" || model == "G3") return 24576;
  if (model == "P100" || model == "T4" || model == "V100M16") return 16384;
  throw std::invalid_argument("unknown openb GPU model '" + model + "'");
}

/// A node of the Alibaba openb trace. The trace gives only CPU, memory, GPU count and model;
/// the internal topology is *synthesised*: up to 2 GPUs: 1 socket with 1 NUMA node; 4 GPUs:
/// 2 sockets with 1 NUMA node and 2 GPUs each; 8 GPUs: 2 sockets x 2 NUMA nodes x 2 GPUs.
/// CPU and memory are split evenly over the NUMA nodes (remainder to the first).
/// Levels: node > socket > numa > gpu.
[[nodiscard]] inline MachineShape openb_node(const std::string& model, int gpus, Amount cpu_milli,
                                             Amount memory_mib) {
  if (gpus < 0 || gpus > 8 || cpu_milli < 0 || memory_mib < 0) {
    throw std::invalid_argument("openb node: gpus must be 0..8 and amounts non-negative");
  }
  const int sockets = gpus >= 4 ? 2 : 1;
  const int numa_per_socket = gpus == 8 ? 2 : 1;
  const int numa_count = sockets * numa_per_socket;
  const Amount memory = gpus > 0 ? openb_gpu_memory_mib(model) : 0;
  ShapeDomain node{"node", "node", {}, {}};
  int gpu = 0;
  for (int s = 0; s < sockets; ++s) {
    ShapeDomain socket{"socket", "socket" + std::to_string(s), {}, {}};
    for (int n = 0; n < numa_per_socket; ++n) {
      const int index = s * numa_per_socket + n;
      const Amount cpu = cpu_milli / numa_count + (index == 0 ? cpu_milli % numa_count : 0);
      const Amount mem = memory_mib / numa_count + (index == 0 ? memory_mib % numa_count : 0);
      ShapeDomain numa{"numa", "numa" + std::to_string(index), detail::host_pool(cpu, mem), {}};
      const int here = gpus / numa_count + (index < gpus % numa_count ? 1 : 0);
      for (int g = 0; g < here; ++g) numa.children.push_back(detail::gpu(gpu++, memory));
      socket.children.push_back(std::move(numa));
    }
    node.children.push_back(std::move(socket));
  }
  return MachineShape{"openb-" + model, {"node", "socket", "numa", "gpu"}, node, {}};
}

namespace detail {

inline void add_subtree(TopologyBuilder& builder, TopologyBuilder::Handle parent,
                        const ShapeDomain& domain, std::string name) {
  const auto handle = builder.add(parent, domain.level, std::move(name), domain.local_capacity);
  for (const auto& child : domain.children) add_subtree(builder, handle, child, child.name);
}

/// Number of domains of `domain`'s subtree (itself included).
[[nodiscard]] inline std::size_t domain_count(const ShapeDomain& domain) {
  std::size_t count = 1;
  for (const auto& child : domain.children) count += domain_count(child);
  return count;
}

/// Adds one machine of `shape`; `affinity` is the shape's matrix, registered once per shape
/// (`TopologyBuilder::intern_affinity`) so that a cluster of n machines costs O(n).
inline void add_machine(TopologyBuilder& builder, TopologyBuilder::Handle parent,
                        const MachineShape& shape, std::string name,
                        std::optional<TopologyBuilder::AffinityHandle> affinity) {
  if (shape.affinity && shape.root.level != "node") {
    throw std::invalid_argument("shape '" + shape.model + "': affinity needs a node-rooted shape");
  }
  const auto handle = builder.add(parent, shape.root.level, std::move(name), shape.root.local_capacity);
  for (const auto& child : shape.root.children) add_subtree(builder, handle, child, child.name);
  if (affinity) builder.set_affinity(handle, *affinity);
}

/// The shape's affinity matrix registered with `builder`, or nullopt when it has none.
[[nodiscard]] inline std::optional<TopologyBuilder::AffinityHandle> intern_affinity(
    TopologyBuilder& builder, const MachineShape& shape) {
  if (!shape.affinity || shape.root.level != "node") return std::nullopt;
  return builder.intern_affinity(*shape.affinity);
}

}  // namespace detail

/// One machine as a whole topology; its root is a "cluster" domain holding the machine.
[[nodiscard]] inline Topology single_machine(const MachineShape& shape, std::string name = "node0") {
  std::vector<std::string> levels{"cluster"};
  levels.insert(levels.end(), shape.levels.begin(), shape.levels.end());
  TopologyBuilder builder(levels, ResourceSchema::standard(), "gpu", "node", "cluster");
  detail::add_machine(builder, TopologyBuilder::root(), shape, std::move(name),
                      detail::intern_affinity(builder, shape));
  return builder.build();
}

/// A named machine of a cluster.
struct ClusterMember {
  /// The machine's domain name in the cluster, e.g. "node7".
  std::string name;
  /// Its shape (shared by every machine of that model).
  std::shared_ptr<const MachineShape> shape;
};

/// A cluster of machines grouped `per_rack` to a rack: levels cluster > rack > shape levels.
/// Shapes whose root is already a rack (NVL72) are not grouped again. All shapes must share
/// one level list. Racks are named rack0, rack1, ...
[[nodiscard]] inline Topology cluster(const std::vector<ClusterMember>& members,
                                      std::size_t per_rack) {
  if (members.empty()) throw std::invalid_argument("a cluster needs at least one machine");
  if (per_rack == 0) throw std::invalid_argument("per_rack must be at least 1");
  const std::vector<std::string>& shape_levels = members.front().shape->levels;
  for (const auto& member : members) {
    if (!member.shape) throw std::invalid_argument("machine '" + member.name + "' has no shape");
    if (member.shape->levels != shape_levels) {
      throw std::invalid_argument("machine '" + member.name + "' (" + member.shape->model +
                                  ") has levels that differ from the first machine's");
    }
  }
  const bool racked = shape_levels.front() == "rack";
  std::vector<std::string> levels{"cluster"};
  if (!racked) levels.emplace_back("rack");
  levels.insert(levels.end(), shape_levels.begin(), shape_levels.end());
  TopologyBuilder builder(levels, ResourceSchema::standard(), "gpu", "node", "cluster");
  {  // Room for every domain at once: a cluster of 1,000,000 nodes then never moves its arrays.
    std::unordered_map<const MachineShape*, std::size_t> sizes;
    std::size_t domains = 1 + (racked ? 0 : (members.size() + per_rack - 1) / per_rack);
    for (const auto& member : members) {
      auto known = sizes.find(member.shape.get());
      if (known == sizes.end()) {
        known = sizes.emplace(member.shape.get(), detail::domain_count(member.shape->root)).first;
      }
      domains += known->second;
    }
    builder.reserve(domains);
  }
  TopologyBuilder::Handle rack = TopologyBuilder::root();
  // One registered affinity matrix per shape object: members usually share a handful.
  std::unordered_map<const MachineShape*, std::optional<TopologyBuilder::AffinityHandle>> affinity;
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (!racked && i % per_rack == 0) {
      rack = builder.add(TopologyBuilder::root(), "rack", "rack" + std::to_string(i / per_rack));
    }
    const MachineShape& shape = *members[i].shape;
    auto known = affinity.find(&shape);
    if (known == affinity.end()) {
      known = affinity.emplace(&shape, detail::intern_affinity(builder, shape)).first;
    }
    detail::add_machine(builder, racked ? TopologyBuilder::root() : rack, shape, members[i].name,
                        known->second);
  }
  return builder.build();
}

/// `count` identical machines named node0, node1, ... grouped `per_rack` to a rack.
[[nodiscard]] inline Topology cluster(const MachineShape& shape, std::size_t count,
                                      std::size_t per_rack) {
  const auto shared = std::make_shared<const MachineShape>(shape);
  std::vector<ClusterMember> members;
  members.reserve(count);
  const std::string prefix = shape.levels.front() == "rack" ? "rack" : "node";
  for (std::size_t i = 0; i < count; ++i) members.push_back({prefix + std::to_string(i), shared});
  return cluster(members, per_rack);
}

/// The GPU nodes of an openb node list (`sn,cpu_milli,memory_mib,gpu,model`), e.g.
/// `../shared/data/openb/openb_node_list_gpu_node.csv`, as cluster members (see `openb_node`
/// for the synthesised internal topology). Throws naming the file and line on a bad row.
[[nodiscard]] inline std::vector<ClusterMember> load_openb_nodes(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open openb node list '" + path + "'");
  std::string line;
  std::getline(in, line);
  if (line.rfind("sn,cpu_milli,memory_mib,gpu,model", 0) != 0) {
    throw std::runtime_error(path + ":1: unexpected header '" + line + "'");
  }
  std::vector<ClusterMember> members;
  std::vector<std::pair<std::string, std::shared_ptr<const MachineShape>>> cache;
  for (std::size_t number = 2; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    std::vector<std::string> fields;
    std::stringstream row(line);
    for (std::string field; std::getline(row, field, ',');) fields.push_back(field);
    const std::string where = path + ":" + std::to_string(number) + ": ";
    if (fields.size() != 5) throw std::runtime_error(where + "expected 5 fields");
    try {
      const std::string key = fields[1] + "," + fields[2] + "," + fields[3] + "," + fields[4];
      auto it = std::find_if(cache.begin(), cache.end(), [&](const auto& c) { return c.first == key; });
      if (it == cache.end()) {
        cache.emplace_back(key, std::make_shared<const MachineShape>(openb_node(
                                    fields[4], std::stoi(fields[3]), std::stoll(fields[1]),
                                    std::stoll(fields[2]))));
        it = cache.end() - 1;
      }
      members.push_back({fields[0], it->second});
    } catch (const std::exception& error) {
      throw std::runtime_error(where + error.what());
    }
  }
  return members;
}

}  // namespace topopreempt::shapes
