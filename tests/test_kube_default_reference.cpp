// SPDX-License-Identifier: MIT
// Issue 11, item 15: kube_default against an independent, topology-blind reference of
// Kubernetes' DefaultPreemption on random one-node instances (2 sockets x 2 NUMA x 2 GPUs):
// bind without preemption when the pod fits by node-level aggregates; else remove every
// lower-priority pod, reprieve in MoreImportantPod order, evict what stays a victim.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/baselines/kube_default.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/model/topology.hpp"

using namespace topopreempt;

namespace {

constexpr Amount numa_cpu = 8000;

/// cluster > node > 2 sockets > 2 NUMA nodes (8 cores each) > 2 GPUs.
std::shared_ptr<const Topology> one_node() {
  const ResourceSchema schema = ResourceSchema::standard();
  TopologyBuilder builder({"cluster", "node", "socket", "numa", "gpu"}, schema, "gpu", "node",
                          "cluster");
  const auto node = builder.add(TopologyBuilder::root(), "node", "node0");
  int gpu = 0;
  for (int s = 0; s < 2; ++s) {
    const auto socket = builder.add(node, "socket", "socket" + std::to_string(s));
    for (int n = 0; n < 2; ++n) {
      const auto numa = builder.add(socket, "numa", "numa" + std::to_string(2 * s + n),
                                    schema.make({{"cpu_milli", numa_cpu}}));
      for (int g = 0; g < 2; ++g) {
        (void)builder.add(numa, "gpu", "gpu" + std::to_string(gpu++),
                          schema.make({{"gpu_milli", 1000}, {"gpu_memory_mib", 1024}}));
      }
    }
  }
  return std::make_shared<const Topology>(builder.build());
}

/// One pod as the reference sees it: node-level amounts only.
struct Pod {
  std::uint64_t id = 0;
  std::int32_t priority = 0;
  double start = 0.0;
  std::int32_t replica = 0;
  std::int64_t gpus = 0;
  Amount cpu = 0;
  bool preemptible = true;
};

/// The reference's answer: infeasible, or the evicted workload ids.
struct Expected {
  bool infeasible = false;
  std::set<std::uint64_t> victims;
};

/// Topology-blind DefaultPreemption on one node, pod by pod.
Expected reference(std::vector<Pod> pods, std::int64_t idle, Amount cpu_free,
                   const Workload& preemptor) {
  Expected expected;
  const std::int64_t gpus = preemptor.demand.whole_devices;
  const Amount cpu = preemptor.demand.resources(
      static_cast<Eigen::Index>(ResourceSchema::standard().index_of("cpu_milli")));
  const auto fits = [&](std::int64_t have_gpus, Amount have_cpu) {
    return have_gpus >= gpus && have_cpu >= cpu;
  };
  for (std::int32_t r = 0; r < preemptor.replicas; ++r) {
    if (!fits(idle, cpu_free)) {
      std::vector<Pod> lower;
      std::int64_t all_idle = idle;
      Amount all_cpu = cpu_free;
      for (const Pod& pod : pods) {
        if (!pod.preemptible || pod.priority >= preemptor.priority) continue;
        lower.push_back(pod);
        all_idle += pod.gpus;
        all_cpu += pod.cpu;
      }
      if (!fits(all_idle, all_cpu)) {
        expected.infeasible = true;
        return expected;
      }
      std::sort(lower.begin(), lower.end(), [](const Pod& a, const Pod& b) {
        if (a.priority != b.priority) return a.priority > b.priority;
        if (a.start != b.start) return a.start < b.start;
        if (a.id != b.id) return a.id < b.id;
        return a.replica < b.replica;
      });
      std::set<std::uint64_t> evicted;
      for (const Pod& pod : lower) {
        if (fits(all_idle - pod.gpus, all_cpu - pod.cpu)) {
          all_idle -= pod.gpus;  // reprieved
          all_cpu -= pod.cpu;
        } else {
          evicted.insert(pod.id);
        }
      }
      // A victim pod takes its whole workload down (every pod lives on this node).
      std::vector<Pod> kept;
      for (const Pod& pod : pods) {
        if (evicted.count(pod.id) != 0) {
          idle += pod.gpus;
          cpu_free += pod.cpu;
        } else {
          kept.push_back(pod);
        }
      }
      pods = std::move(kept);
      expected.victims.insert(evicted.begin(), evicted.end());
    }
    idle -= gpus;
    cpu_free -= cpu;
  }
  return expected;
}

TopologyRequirement random_scope(std::mt19937_64& random,
                                 std::initializer_list<const char*> levels) {
  const std::vector<const char*> options(levels);
  const std::size_t pick = random() % (options.size() + 1);
  if (pick == options.size()) return {};
  return TopologyRequirement::guaranteed(options[pick]);
}

}  // namespace

TEST_SUITE("kube_default_reference") {
  TEST_CASE("issue 11 trigger: the pods fit topology-blind, so Kubernetes binds them unpreempted") {
    const auto topology = one_node();
    Allocation state(topology);
    Workload spread;
    spread.id = WorkloadId{10};
    spread.priority = 1;
    spread.demand.whole_devices = 4;
    spread.demand.resources = ResourceSchema::standard().zeros();
    Placement placement;
    placement.replicas.emplace_back();
    // 4 GPUs over three NUMA nodes (gpu0, gpu2, gpu4, gpu5) leave gpu1 (numa0), gpu3 (numa1),
    // gpu6 and gpu7 (numa3) free: 4 free GPUs, but only numa3 has two.
    for (const char* path : {"node0/socket0/numa0/gpu0", "node0/socket0/numa1/gpu2",
                             "node0/socket1/numa2/gpu4", "node0/socket1/numa2/gpu5"}) {
      const DomainId gpu = *topology->find(path);
      placement.replicas.back().entries.push_back({gpu, topology->local_capacity(gpu)});
    }
    state.add(spread, placement);
    Workload preemptor;
    preemptor.id = WorkloadId{1};
    preemptor.priority = 5;
    preemptor.replicas = 2;
    preemptor.demand.whole_devices = 2;
    preemptor.demand.resources = ResourceSchema::standard().zeros();
    preemptor.replica_scope = TopologyRequirement::guaranteed("numa");
    preemptor.gang_scope = TopologyRequirement::guaranteed("node");
    const PreemptionPlan plan =
        baselines::kube_default.solve(state, preemptor, cost::victim_count{});
    // Nothing was preempted (not infeasible); the placement breaks the NUMA guarantee.
    CHECK(plan.status == PlanStatus::no_preemption_needed);
    CHECK(plan.victims.empty());
    CHECK_FALSE(plan.topology_satisfied);
    CHECK(plan.placement.replicas.size() == 2);
  }

  TEST_CASE("kube_default matches the topology-blind reference on random one-node instances") {
    std::mt19937_64 random(20261123);
    const auto topology = one_node();
    const ResourceSchema schema = ResourceSchema::standard();
    const auto devices = topology->domains_at(topology->device_level());
    const auto numas = topology->domains_at(topology->level_index("numa"));
    int compared = 0;
    int unpreempted = 0;
    for (int instance = 0; instance < 600; ++instance) {
      Allocation state(topology);
      std::vector<Pod> pods;
      std::vector<bool> busy(devices.size(), false);
      std::vector<Amount> numa_free(numas.size(), numa_cpu);
      const int workloads = 1 + static_cast<int>(random() % 5);
      for (int w = 0; w < workloads; ++w) {
        Workload workload;
        workload.id = WorkloadId{static_cast<std::uint64_t>(100 + w)};
        workload.priority = static_cast<std::int32_t>(random() % 6);
        workload.preemptible = random() % 5 != 0;
        workload.replicas = 1 + static_cast<std::int32_t>(random() % 2);
        workload.demand.whole_devices = static_cast<std::int32_t>(random() % 3);
        const Amount cpu = static_cast<Amount>(random() % 4) * 1000;
        if (workload.demand.whole_devices == 0 && cpu == 0) continue;
        workload.demand.resources = schema.make({{"cpu_milli", cpu}});
        workload.cost.start_time_s = static_cast<double>(random() % 3);
        // Random devices and a random NUMA pool per replica: placements spread on purpose.
        Placement placement;
        std::vector<bool> taken = busy;
        std::vector<Amount> pool = numa_free;
        bool ok = true;
        for (std::int32_t r = 0; r < workload.replicas && ok; ++r) {
          ReplicaPlacement replica;
          for (std::int32_t g = 0; g < workload.demand.whole_devices && ok; ++g) {
            std::vector<std::size_t> idle;
            for (std::size_t d = 0; d < devices.size(); ++d) {
              if (!taken[d]) idle.push_back(d);
            }
            if (idle.empty()) {
              ok = false;
              break;
            }
            const std::size_t d = idle[random() % idle.size()];
            taken[d] = true;
            replica.entries.push_back({devices[d], topology->local_capacity(devices[d])});
          }
          if (cpu > 0 && ok) {
            const std::size_t n = random() % numas.size();
            if (pool[n] < cpu) {
              ok = false;
              break;
            }
            pool[n] -= cpu;
            replica.entries.push_back({numas[n], schema.make({{"cpu_milli", cpu}})});
          }
          placement.replicas.push_back(std::move(replica));
        }
        if (!ok) continue;
        state.add(workload, placement);
        busy = taken;
        numa_free = pool;
        for (std::int32_t r = 0; r < workload.replicas; ++r) {
          pods.push_back({workload.id.value, workload.priority, workload.cost.start_time_s, r,
                          workload.demand.whole_devices, cpu, workload.preemptible});
        }
      }
      Workload preemptor;
      preemptor.id = WorkloadId{1};
      preemptor.priority = 2 + static_cast<std::int32_t>(random() % 4);
      preemptor.replicas = 1 + static_cast<std::int32_t>(random() % 2);
      preemptor.demand.whole_devices = 1 + static_cast<std::int32_t>(random() % 4);
      preemptor.demand.resources =
          schema.make({{"cpu_milli", static_cast<Amount>(random() % 5) * 1000}});
      preemptor.replica_scope = random_scope(random, {"numa", "socket", "node"});
      preemptor.gang_scope = random_scope(random, {"node", "cluster"});
      CAPTURE(instance);
      std::int64_t idle = 0;
      for (bool b : busy) idle += b ? 0 : 1;
      Amount cpu_free = 0;
      for (Amount free : numa_free) cpu_free += free;
      const PreemptionPlan plan =
          baselines::kube_default.solve(state, preemptor, cost::victim_count{});
      if (find_placement(state, preemptor).found) {
        CHECK(plan.status == PlanStatus::no_preemption_needed);
        CHECK(plan.victims.empty());
        continue;
      }
      const Expected expected = reference(pods, idle, cpu_free, preemptor);
      ++compared;
      CHECK((plan.status == PlanStatus::infeasible) == expected.infeasible);
      if (expected.infeasible) continue;
      std::set<std::uint64_t> victims;
      for (const Victim& victim : plan.victims) victims.insert(victim.id.value);
      CHECK(victims == expected.victims);
      if (expected.victims.empty()) ++unpreempted;
    }
    // The instances must exercise both paths: blind binds without victims, and preemption.
    CHECK(compared > 200);
    CHECK(unpreempted > 10);
  }
}
