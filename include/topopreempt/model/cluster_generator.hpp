// SPDX-License-Identifier: MIT
#pragma once
/// @file cluster_generator.hpp
/// Seeded synthetic clusters of the DESIGN.md §6 kind (dense 8-GPU nodes in racks, >= 90 % of
/// GPUs busy with mixed-priority 1/2/4/8-GPU workloads, gangs, elastic jobs, CPU-only jobs) and
/// the high-priority preemptors the benchmarks ask for. Shared by tests, benchmarks and
/// experiments so that they all measure the same clusters.
///
/// Determinism: the same `ClusterSpec` gives the same state (ids, placements, cost inputs) on
/// every platform: randomness is `std::mt19937_64` (fully specified by the standard) mapped to
/// ranges by our own modulo arithmetic, never by `std::*_distribution` (implementation-defined).
///
/// Cost: O(nodes x node size) overall. Every workload is placed with `find_placement` restricted
/// to one chosen node (or NUMA node), never searched over the whole cluster, so 10,000 nodes and
/// ~60,000 workloads take a few seconds.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/model/topology.hpp"
#include "topopreempt/model/workload.hpp"

namespace topopreempt {

/// Priority classes of generated workloads (larger wins).
namespace generated_priority {
inline constexpr std::int32_t spot = 0;          ///< opportunistic batch, cheapest to evict
inline constexpr std::int32_t batch = 100;       ///< offline batch training / evaluation
inline constexpr std::int32_t research = 300;    ///< interactive research training
inline constexpr std::int32_t production = 600;  ///< production training (gangs mostly)
inline constexpr std::int32_t serving = 1000;    ///< online inference; mostly non-preemptible
inline constexpr std::int32_t preemptor = 2000;  ///< default priority of `make_preemptor`
}  // namespace generated_priority

/// What `generate_cluster` builds. Defaults give ~6 workloads per node (so 10,000 nodes hold
/// ~60,000 workloads) at 92 % GPU occupancy.
struct ClusterSpec {
  std::size_t nodes = 100;  ///< dense 8-GPU nodes (`shapes::dense_8gpu_server`)
  /// Nodes per rack.
  std::size_t nodes_per_rack = 32;
  double target_occupancy = 0.92;  ///< fraction of GPUs to keep busy, in [0, 1]
  /// Random seed: the same spec and seed give the same cluster.
  std::uint64_t seed = 1;
  /// Fraction of busy GPUs held by multi-node gangs (2-4 replicas of 8 GPUs, guaranteed node
  /// per replica and rack per gang). Only racks of at least 2 nodes get gangs.
  double gang_fraction = 0.15;
  /// Probability that a multi-GPU or gang workload is elastic (may shrink to `min_replicas`).
  double elastic_fraction = 0.10;
  /// Fraction of single-node GPU workloads that are serving jobs; 70 % of those are
  /// non-preemptible.
  double serving_fraction = 0.12;
  /// Mean number of CPU-only jobs (1-4 cores, no GPU) per node, pinned to a random NUMA node.
  /// They make CPU a binding dimension next to the GPUs.
  double cpu_only_per_node = 2.6;
  /// Relative frequency of 1-, 2-, 4- and 8-GPU single-node workloads.
  std::array<double, 4> size_weights{0.55, 0.22, 0.13, 0.10};
  /// The generator's clock: start times lie up to a week before it.
  double now_s = 1'000'000.0;
};

/// A generated cluster: the topology and the running workloads (ids 1, 2, ... in creation
/// order).
struct GeneratedCluster {
  /// The generated topology (racks of dense 8-GPU nodes).
  std::shared_ptr<const Topology> topology;
  /// The running workloads on it.
  Allocation state;
};

/// Fraction of the devices of `state` that hold anything (1 - idle / devices).
[[nodiscard]] inline double gpu_occupancy(const Allocation& state) {
  const auto devices = static_cast<double>(state.topology().device_count(Topology::root()));
  if (devices == 0.0) return 0.0;
  return 1.0 - static_cast<double>(state.idle_devices(Topology::root())) / devices;
}

namespace detail {

/// `std::mt19937_64` with our own range mapping (portable sequences; the slight modulo bias is
/// irrelevant for workload mixes).
class GeneratorRandom {
 public:
  explicit GeneratorRandom(std::uint64_t seed) : engine_(seed) {}
  /// Uniform-ish integer in [0, n); 0 when n <= 1.
  std::uint64_t below(std::uint64_t n) { return n <= 1 ? 0 : engine_() % n; }
  /// Uniform double in [0, 1) from the top 53 bits.
  double unit() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  /// True with probability p.
  bool chance(double p) { return unit() < p; }
  /// Index drawn in proportion to `weights` (all >= 0, not all 0).
  std::size_t pick(std::span<const double> weights) {
    double total = 0.0;
    for (double w : weights) total += w;
    double x = unit() * total;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (x < weights[i]) return i;
      x -= weights[i];
    }
    return weights.size() - 1;
  }
  /// Fisher-Yates shuffle.
  template <class T>
  void shuffle(std::vector<T>& items) {
    for (std::size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[below(i)]);
  }

 private:
  std::mt19937_64 engine_;
};

/// A model a workload keeps in GPU memory (reload cost input).
struct GeneratedModel {
  const char* id;
  double size_gib;
};
inline constexpr std::array<GeneratedModel, 8> generated_models{{{"bert-l", 1.3},
                                                                 {"llama-8b", 16.0},
                                                                 {"mistral-7b", 14.5},
                                                                 {"llama-13b", 26.0},
                                                                 {"mixtral-8x7", 93.0},
                                                                 {"llama-70b", 140.0},
                                                                 {"sdxl", 6.9},
                                                                 {"whisper-l", 3.1}}};

/// Fills one `Allocation`; lives only during `generate_cluster`.
class ClusterFiller {
 public:
  ClusterFiller(const ClusterSpec& spec, Allocation& state)
      : spec_(spec),
        state_(state),
        topology_(state.topology()),
        random_(spec.seed),
        schema_(topology_.schema()),
        rack_level_(topology_.level_index("rack")),
        node_level_(topology_.host_level()),
        numa_level_(topology_.level_index("numa")),
        cpu_dim_(static_cast<Eigen::Index>(schema_.index_of("cpu_milli"))),
        memory_dim_(static_cast<Eigen::Index>(schema_.index_of("memory_mib"))) {}

  void run() {
    const auto nodes = topology_.domains_at(node_level_);
    target_used_ = node_targets(nodes);
    place_gangs();
    std::int64_t carry = 0;  // GPUs a node fell short of; the next node takes them over
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      const std::int64_t capacity = topology_.device_count(nodes[n]);
      const std::int64_t target = std::clamp<std::int64_t>(target_used_[n] + carry, 0, capacity);
      fill_node(nodes[n], target);
      carry = target_used_[n] + carry - (capacity - state_.idle_devices(nodes[n]));
      carry = std::max<std::int64_t>(carry, 0);
      place_cpu_only(nodes[n]);
    }
  }

 private:
  /// Busy-GPU target per node: idle GPUs per node ~ Binomial(devices, 1 - occupancy) capped at
  /// twice the mean (a busy scheduler leaves scattered holes, not a few empty machines, so big
  /// preemptors really need victims), then nudged at random nodes until the cluster-wide idle
  /// count is exactly what the occupancy asks for (small clusters hit the target too).
  std::vector<std::int64_t> node_targets(std::span<const DomainId> nodes) {
    const double idle_probability = 1.0 - spec_.target_occupancy;
    std::vector<std::int64_t> idle(nodes.size(), 0);
    std::vector<std::int64_t> capacity(nodes.size(), 0);
    std::vector<std::int64_t> cap(nodes.size(), 0);
    std::int64_t total_devices = 0;
    std::int64_t total_idle = 0;
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      capacity[n] = topology_.device_count(nodes[n]);
      total_devices += capacity[n];
      cap[n] = std::max<std::int64_t>(
          1, static_cast<std::int64_t>(
                 std::ceil(2.0 * idle_probability * static_cast<double>(capacity[n]))));
      for (std::int64_t g = 0; g < capacity[n]; ++g) idle[n] += random_.chance(idle_probability);
      cap[n] = std::min(cap[n], capacity[n]);
      idle[n] = std::min(idle[n], cap[n]);
      total_idle += idle[n];
    }
    const auto wanted_idle = static_cast<std::int64_t>(
        std::floor(idle_probability * static_cast<double>(total_devices) + 1e-9));
    while (total_idle != wanted_idle) {
      const std::size_t n = random_.below(nodes.size());
      if (total_idle > wanted_idle && idle[n] > 0) {
        --idle[n];
        --total_idle;
      } else if (total_idle < wanted_idle && idle[n] < cap[n]) {
        ++idle[n];
        ++total_idle;
      }
    }
    std::vector<std::int64_t> target(nodes.size());
    for (std::size_t n = 0; n < nodes.size(); ++n) target[n] = capacity[n] - idle[n];
    return target;
  }

  /// Multi-node gangs, rack by rack, on random nodes that are meant to be fully busy.
  void place_gangs() {
    const auto nodes = topology_.domains_at(node_level_);
    for (DomainId rack : topology_.domains_at(rack_level_)) {
      const auto rack_nodes = topology_.domains_at(node_level_, rack);
      if (rack_nodes.size() < 2) continue;
      std::vector<DomainId> full;
      double busy = 0.0;
      for (DomainId node : rack_nodes) {
        const std::size_t n = node_ordinal(nodes, node);
        busy += static_cast<double>(target_used_[n]);
        if (target_used_[n] == topology_.device_count(node)) full.push_back(node);
      }
      random_.shuffle(full);
      double budget = spec_.gang_fraction * busy;
      std::size_t next = 0;
      while (budget >= 16.0 && full.size() - next >= 2) {
        auto replicas = static_cast<std::int32_t>(2 + random_.below(3));
        replicas = std::min<std::int32_t>(replicas, static_cast<std::int32_t>(full.size() - next));
        replicas = std::min<std::int32_t>(replicas, static_cast<std::int32_t>(budget / 8.0));
        if (replicas < 2) break;
        const std::vector<DomainId> hosts(
            full.begin() + static_cast<std::ptrdiff_t>(next),
            full.begin() + static_cast<std::ptrdiff_t>(next) + replicas);
        next += static_cast<std::size_t>(replicas);
        if (place_gang(hosts)) budget -= 8.0 * replicas;
      }
    }
  }

  bool place_gang(const std::vector<DomainId>& hosts) {
    const auto replicas = static_cast<std::int32_t>(hosts.size());
    const std::int32_t priority =
        random_.chance(0.7) ? generated_priority::production : generated_priority::research;
    Workload gang = gpu_workload("gang", priority, 8, replicas);
    gang.replica_scope = TopologyRequirement::guaranteed("node");
    gang.gang_scope = TopologyRequirement::guaranteed("rack");
    if (random_.chance(spec_.elastic_fraction)) {
      gang.min_replicas =
          static_cast<std::int32_t>(1 + random_.below(static_cast<std::uint64_t>(replicas - 1)));
    }
    // Each replica is placed inside its own chosen node: O(node size), not O(rack).
    ResolvedDemand single = ResolvedDemand::of(gang, topology_);
    single.replicas = 1;
    single.gang_required.reset();
    Placement placement;
    for (DomainId host : hosts) {
      auto found = find_placement(state_, single, host);
      if (!found.found) return false;
      placement.replicas.push_back(std::move(found.placement.replicas.front()));
    }
    state_.add_found(std::move(gang), placement);
    return true;
  }

  /// Single-node GPU workloads until `node` has `target` busy GPUs: sizes drawn from the mix
  /// (never more than what is left), placed largest first so that the buddy-like node shape
  /// (1 per NUMA, 2 per switch, 4 per socket) never fragments.
  void fill_node(DomainId node, std::int64_t target) {
    std::int64_t remaining = target - (topology_.device_count(node) - state_.idle_devices(node));
    std::vector<std::int32_t> sizes;
    constexpr std::array<std::int32_t, 4> size_of{1, 2, 4, 8};
    while (remaining > 0) {
      std::array<double, 4> weights = spec_.size_weights;
      for (std::size_t i = 0; i < weights.size(); ++i) {
        if (size_of[i] > remaining) weights[i] = 0.0;
      }
      if (weights[0] + weights[1] + weights[2] + weights[3] <= 0.0) weights[0] = 1.0;
      const std::int32_t size = size_of[random_.pick(weights)];
      sizes.push_back(size);
      remaining -= size;
    }
    std::sort(sizes.begin(), sizes.end(), std::greater<>());
    for (std::int32_t size : sizes) {
      Workload workload = node_workload(size);
      if (try_place(workload, node)) continue;
      // CPU drawn by earlier neighbours can strand a tight scope; the job then runs node-wide.
      workload.replica_scope = TopologyRequirement::guaranteed("node");
      (void)try_place(workload, node);
    }
  }

  /// A single-node GPU workload of `size` GPUs with a realistic scope for that size.
  Workload node_workload(std::int32_t size) {
    const bool serving = random_.chance(spec_.serving_fraction);
    std::int32_t priority = generated_priority::serving;
    if (!serving) {
      constexpr std::array<double, 4> class_weights{0.22, 0.28, 0.30, 0.20};
      constexpr std::array<std::int32_t, 4> classes{
          generated_priority::spot, generated_priority::batch, generated_priority::research,
          generated_priority::production};
      priority = classes[random_.pick(class_weights)];
    }
    const bool preemptible = !serving || random_.chance(0.3);
    // Elastic: the same GPUs as several smaller replicas (data-parallel workers / inference
    // replicas) that may be dropped down to min_replicas.
    std::int32_t replicas = 1;
    if (size >= 2 && preemptible && random_.chance(spec_.elastic_fraction)) {
      replicas = size == 8 ? (random_.chance(0.5) ? 2 : 4) : (random_.chance(0.5) ? 2 : size);
    }
    const std::int32_t per_replica = size / replicas;
    Workload workload =
        gpu_workload(serving ? "serve" : "train", priority, per_replica, replicas, serving);
    workload.preemptible = preemptible;
    workload.replica_scope = replica_scope_for(per_replica);
    if (replicas > 1) {
      workload.min_replicas =
          static_cast<std::int32_t>(1 + random_.below(static_cast<std::uint64_t>(replicas - 1)));
      workload.gang_scope = TopologyRequirement::best_effort("node");
    }
    return workload;
  }

  TopologyRequirement replica_scope_for(std::int32_t gpus) {
    const double x = random_.unit();
    switch (gpus) {
      case 1:
        if (x < 0.50) return TopologyRequirement::guaranteed("numa");
        if (x < 0.65) return TopologyRequirement::guaranteed("pcie_switch");
        if (x < 0.75) return TopologyRequirement::guaranteed("socket");
        if (x < 0.85) return TopologyRequirement::guaranteed("node");
        return TopologyRequirement::best_effort("numa");
      case 2:
        if (x < 0.60) return TopologyRequirement::guaranteed("pcie_switch");
        if (x < 0.80) return TopologyRequirement::guaranteed("socket");
        if (x < 0.90) return TopologyRequirement::guaranteed("node");
        return TopologyRequirement::best_effort("pcie_switch");
      case 4:
        if (x < 0.60) return TopologyRequirement::guaranteed("socket");
        if (x < 0.85) return TopologyRequirement::guaranteed("node");
        return TopologyRequirement::best_effort("socket");
      default:
        return TopologyRequirement::guaranteed("node");
    }
  }

  /// A GPU workload with CPU/memory proportional to its GPUs and realistic cost inputs.
  Workload gpu_workload(const char* kind, std::int32_t priority, std::int32_t gpus,
                        std::int32_t replicas, bool serving = false) {
    constexpr std::array<double, 4> core_weights{0.15, 0.35, 0.35, 0.15};
    constexpr std::array<Amount, 4> cores{2, 4, 6, 8};
    constexpr std::array<double, 3> memory_weights{0.3, 0.45, 0.25};
    constexpr std::array<Amount, 3> memory_gib{32, 64, 96};
    const Amount cpu = (serving ? 2 : cores[random_.pick(core_weights)]) * 1000 * gpus;
    const Amount memory = memory_gib[random_.pick(memory_weights)] * 1024 * gpus;
    Workload workload = new_workload(kind, priority);
    workload.replicas = replicas;
    workload.demand.whole_devices = gpus;
    workload.demand.resources = cpu_and_memory(cpu, memory);
    const GeneratedModel& model = generated_models[random_.below(generated_models.size())];
    workload.cost.model_id = model.id;
    workload.cost.model_size_gib = model.size_gib;
    // Serving is stateless (nothing to lose but the reload); training loses work since its
    // last checkpoint (every 30-60 min).
    workload.cost.seconds_since_checkpoint =
        serving ? 0.0 : static_cast<double>(random_.below(3600));
    return workload;
  }

  /// CPU-only jobs pinned to random NUMA nodes (they ignore GPUs, so they can strand an idle
  /// GPU's CPUs: a realistic reason why even a 1-GPU preemptor may need victims).
  void place_cpu_only(DomainId node) {
    const auto numas = topology_.domains_at(numa_level_, node);
    const auto count = static_cast<std::int64_t>(
        random_.below(static_cast<std::uint64_t>(std::llround(2.0 * spec_.cpu_only_per_node)) + 1));
    for (std::int64_t j = 0; j < count; ++j) {
      const std::int32_t priority =
          random_.chance(0.6) ? generated_priority::spot : generated_priority::batch;
      Workload workload = new_workload("cpu", priority);
      const auto cores = static_cast<Amount>(1 + random_.below(4));
      const auto memory = static_cast<Amount>(4 + 4 * random_.below(4));
      workload.demand.resources = cpu_and_memory(cores * 1000, memory * 1024);
      workload.replica_scope = TopologyRequirement::guaranteed("numa");
      workload.cost.seconds_since_checkpoint = static_cast<double>(random_.below(1800));
      if (!try_place(workload, numas[random_.below(numas.size())])) {
        (void)try_place(workload, numas[random_.below(numas.size())]);
      }
    }
  }

  /// `schema_.make({{"cpu_milli", cpu}, {"memory_mib", memory}})` (both >= 0) without its
  /// name lookups and bookkeeping.
  ResourceVector cpu_and_memory(Amount cpu, Amount memory) const {
    ResourceVector resources = schema_.zeros();
    resources(cpu_dim_) = cpu;
    resources(memory_dim_) = memory;
    return resources;
  }

  Workload new_workload(const char* kind, std::int32_t priority) {
    Workload workload;
    workload.id = WorkloadId{next_id_};
    workload.name = std::string(kind) + std::to_string(next_id_);
    ++next_id_;
    workload.priority = priority;
    workload.cost.start_time_s =
        spec_.now_s - static_cast<double>(random_.below(std::uint64_t{7} * 86400));
    return workload;
  }

  /// Starts `workload` inside `within` if it fits there (then `workload` is moved from).
  bool try_place(Workload& workload, DomainId within) {
    auto found = find_placement(state_, workload, within);
    if (!found.found) return false;
    state_.add_found(std::move(workload), found.placement);
    return true;
  }

  static std::size_t node_ordinal(std::span<const DomainId> nodes, DomainId node) {
    return static_cast<std::size_t>(std::lower_bound(nodes.begin(), nodes.end(), node) -
                                    nodes.begin());
  }

  const ClusterSpec& spec_;
  Allocation& state_;
  const Topology& topology_;
  GeneratorRandom random_;
  const ResourceSchema& schema_;
  LevelIndex rack_level_;
  LevelIndex node_level_;
  LevelIndex numa_level_;
  Eigen::Index cpu_dim_;
  Eigen::Index memory_dim_;
  std::vector<std::int64_t> target_used_;
  std::uint64_t next_id_ = 1;
};

inline void check_spec_fraction(double value, const char* what) {
  if (!(value >= 0.0 && value <= 1.0)) {
    throw std::invalid_argument(std::string("ClusterSpec::") + what + " must be in [0, 1], got " +
                                std::to_string(value));
  }
}

}  // namespace detail

/// Builds `spec.nodes` dense 8-GPU nodes (`shapes::dense_8gpu_server`, levels
/// cluster > rack > node > socket > pcie_switch > numa > gpu) and fills them:
/// - rack-guaranteed gangs of 2-4 x 8 GPUs (production/research, some elastic) on random nodes
///   that are meant to be fully busy, about `gang_fraction` of the busy GPUs;
/// - per node, 1/2/4/8-GPU workloads up to the node's busy-GPU target, with replica scopes
///   guaranteed at numa / pcie_switch (NVLink island) / socket / node or best effort, priority
///   classes spot..serving (some serving jobs non-preemptible), some elastic;
/// - per node, CPU-only jobs on random NUMA nodes.
/// Every workload carries start time, seconds since checkpoint and a model (id, GiB).
/// Throws `std::invalid_argument` on a spec out of range.
[[nodiscard]] inline GeneratedCluster generate_cluster(const ClusterSpec& spec) {
  if (spec.nodes == 0) throw std::invalid_argument("ClusterSpec::nodes must be >= 1");
  if (spec.nodes_per_rack == 0) {
    throw std::invalid_argument("ClusterSpec::nodes_per_rack must be >= 1");
  }
  detail::check_spec_fraction(spec.target_occupancy, "target_occupancy");
  detail::check_spec_fraction(spec.gang_fraction, "gang_fraction");
  detail::check_spec_fraction(spec.elastic_fraction, "elastic_fraction");
  detail::check_spec_fraction(spec.serving_fraction, "serving_fraction");
  if (!(spec.cpu_only_per_node >= 0.0 && spec.cpu_only_per_node <= 64.0)) {
    throw std::invalid_argument("ClusterSpec::cpu_only_per_node must be in [0, 64]");
  }
  double weight_sum = 0.0;
  for (double w : spec.size_weights) {
    if (!(w >= 0.0 && std::isfinite(w))) {
      throw std::invalid_argument("ClusterSpec::size_weights must be finite and >= 0");
    }
    weight_sum += w;
  }
  if (weight_sum <= 0.0) throw std::invalid_argument("ClusterSpec::size_weights are all zero");

  auto topology = std::make_shared<const Topology>(
      shapes::cluster(shapes::dense_8gpu_server(), spec.nodes, spec.nodes_per_rack));
  GeneratedCluster cluster{topology, Allocation(topology)};
  // A little above what the filler makes (its CPU-only jobs and ~0.47 GPU workloads per busy
  // GPU: 6.1 per node with the defaults), so that the record table neither moves nor keeps its
  // growth slack (up to half of it, 0.8 GiB at 1,000,000 nodes).
  const double busy_gpus = spec.target_occupancy * static_cast<double>(topology->device_count(
                                                       Topology::root()));
  cluster.state.reserve(static_cast<std::size_t>(
      spec.cpu_only_per_node * static_cast<double>(spec.nodes) + 0.5 * busy_gpus + 64.0));
  detail::ClusterFiller(spec, cluster.state).run();
  return cluster;
}

/// Preemptor shapes of DESIGN.md §6, for the dense 8-GPU node (1 GPU per NUMA node, 2 per PCIe
/// switch = NVLink island, 4 per socket, 8 per node).
enum class PreemptorKind : std::uint8_t {
  nvlink_island,  ///< replicas of <= 2 GPUs, each guaranteed in one pcie_switch
  numa,           ///< replicas of 1 GPU, each guaranteed in one NUMA node
  socket,         ///< replicas of <= 4 GPUs, each guaranteed in one socket
  node,           ///< one replica of <= 8 GPUs guaranteed in one node
  rack_gang,      ///< `replicas` replicas guaranteed node, the gang guaranteed in one rack
  best_effort,    ///< one replica, best effort at the tightest level that can hold it
};

/// "nvlink_island", "numa", ...
[[nodiscard]] constexpr std::string_view to_string(PreemptorKind kind) noexcept {
  switch (kind) {
    case PreemptorKind::nvlink_island:
      return "nvlink_island";
    case PreemptorKind::numa:
      return "numa";
    case PreemptorKind::socket:
      return "socket";
    case PreemptorKind::node:
      return "node";
    case PreemptorKind::rack_gang:
      return "rack_gang";
    case PreemptorKind::best_effort:
      return "best_effort";
  }
  return "unknown";
}

/// A pending high-priority workload to make room for.
struct PreemptorSpec {
  /// What the preemptor asks for (GPU count and the scope it must hold).
  PreemptorKind kind = PreemptorKind::node;
  std::int32_t gpus = 8;  ///< total GPUs of the workload (all replicas)
  /// rack_gang only: number of replicas (gpus / replicas each, at most 8).
  std::int32_t replicas = 2;
  /// Its priority: above every generated workload by default.
  std::int32_t priority = generated_priority::preemptor;
  WorkloadId id{std::uint64_t{1} << 62};  ///< far above generated ids
  /// CPU it asks for per GPU, pooled beside its GPUs.
  Amount cpu_milli_per_gpu = 6000;
  /// Memory it asks for per GPU, pooled beside its GPUs.
  Amount memory_mib_per_gpu = Amount{64} * 1024;
};

/// Builds the preemptor `spec` describes. Several replicas (when `gpus` exceeds what one
/// domain of the scope holds) form a tensor-parallel group set kept in one node (socket for
/// NUMA-scoped replicas of <= 4 GPUs), guaranteed. Throws `std::invalid_argument` when `gpus`
/// does not split evenly into the scope's replicas or exceeds a node (rack gangs excepted).
[[nodiscard]] inline Workload make_preemptor(const PreemptorSpec& spec) {
  const auto fail = [&](const std::string& why) {
    throw std::invalid_argument("make_preemptor(" + std::string(to_string(spec.kind)) + ", " +
                                std::to_string(spec.gpus) + " GPUs): " + why);
  };
  if (spec.gpus < 1) fail("gpus must be >= 1");
  if (spec.cpu_milli_per_gpu < 0 || spec.memory_mib_per_gpu < 0) fail("negative CPU or memory");
  Workload workload;
  workload.id = spec.id;
  workload.name =
      "preemptor-" + std::string(to_string(spec.kind)) + "-" + std::to_string(spec.gpus);
  workload.priority = spec.priority;
  std::int32_t per_replica = spec.gpus;
  const auto split = [&](std::int32_t domain_gpus, const char* level) {
    per_replica = std::min(spec.gpus, domain_gpus);
    if (spec.gpus % per_replica != 0)
      fail("does not split into replicas of " + std::to_string(per_replica));
    workload.replicas = spec.gpus / per_replica;
    workload.replica_scope = TopologyRequirement::guaranteed(level);
  };
  switch (spec.kind) {
    case PreemptorKind::nvlink_island:
      split(2, "pcie_switch");
      break;
    case PreemptorKind::numa:
      split(1, "numa");
      break;
    case PreemptorKind::socket:
      split(4, "socket");
      break;
    case PreemptorKind::node:
      split(8, "node");
      break;
    case PreemptorKind::rack_gang:
      if (spec.replicas < 2 || spec.gpus % spec.replicas != 0 || spec.gpus / spec.replicas > 8) {
        fail("a rack gang needs >= 2 replicas of equal size <= 8 GPUs");
      }
      workload.replicas = spec.replicas;
      per_replica = spec.gpus / spec.replicas;
      workload.replica_scope = TopologyRequirement::guaranteed("node");
      workload.gang_scope = TopologyRequirement::guaranteed("rack");
      break;
    case PreemptorKind::best_effort:
      if (spec.gpus > 8) fail("a best-effort preemptor is a single replica of <= 8 GPUs");
      workload.replica_scope = TopologyRequirement::best_effort(spec.gpus == 1   ? "numa"
                                                                : spec.gpus == 2 ? "pcie_switch"
                                                                : spec.gpus <= 4 ? "socket"
                                                                                 : "node");
      break;
  }
  if (per_replica > 8) fail("a replica cannot exceed one node (8 GPUs)");
  if (workload.replicas > 1 && spec.kind != PreemptorKind::rack_gang) {
    const bool fits_socket = spec.gpus <= 4;
    workload.gang_scope = TopologyRequirement::guaranteed(
        fits_socket && spec.kind == PreemptorKind::numa ? "socket" : "node");
  }
  workload.demand.whole_devices = per_replica;
  workload.demand.resources =
      ResourceSchema::standard().make({{"cpu_milli", spec.cpu_milli_per_gpu * per_replica},
                                       {"memory_mib", spec.memory_mib_per_gpu * per_replica}});
  return workload;
}

}  // namespace topopreempt
