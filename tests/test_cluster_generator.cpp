// SPDX-License-Identifier: MIT
// The synthetic §6 clusters every benchmark and experiment measures: occupancy, determinism and
// the workload mix they promise.
#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "state_fingerprint.hpp"
#include "topopreempt/model/cluster_generator.hpp"

using namespace topopreempt;

namespace {

/// Everything observable about a state, in id order, for determinism checks.
struct Fingerprint {
  std::vector<std::uint64_t> ids;
  std::vector<Placement> placements;
  std::vector<std::int32_t> priorities;
  std::vector<double> checkpoints;
  bool operator==(const Fingerprint&) const = default;
};

Fingerprint fingerprint(const Allocation& state) {
  Fingerprint print;
  for (WorkloadId id : state.workload_ids()) {
    const Workload& workload = state.workload(id);
    print.ids.push_back(id.value);
    print.placements.push_back(state.placement(id));
    print.priorities.push_back(workload.priority);
    print.checkpoints.push_back(workload.cost.seconds_since_checkpoint);
  }
  return print;
}

/// FNV-1a over `test::state_fingerprint` (workloads with their placements in slot order, per
/// domain version, usage, idle devices and preemption index, per host occupants). Versions
/// digest every field of every workload, so equal digests mean equal clusters.
std::uint64_t state_digest(const Allocation& state) {
  std::uint64_t digest = 0xcbf29ce484222325ULL;
  for (const std::string& line : test::state_fingerprint(state, {2000, 700, 350, 150, 50})) {
    for (const unsigned char c : line) digest = (digest ^ c) * 0x100000001b3ULL;
    digest = (digest ^ '\n') * 0x100000001b3ULL;
  }
  return digest;
}

}  // namespace

TEST_SUITE("cluster_generator") {
  TEST_CASE("100 nodes reach the occupancy target with the promised mix") {
    const GeneratedCluster cluster = generate_cluster(ClusterSpec{});
    const Allocation& state = cluster.state;
    const Topology& topology = *cluster.topology;
    CHECK(topology.domains_at(topology.host_level()).size() == 100);
    CHECK(topology.domains_at(topology.level_index("rack")).size() == 4);
    CHECK(gpu_occupancy(state) >= 0.9);
    CHECK(gpu_occupancy(state) <= 0.93);

    std::set<std::int32_t> priorities;
    std::set<std::int32_t> sizes;
    std::set<std::string> scopes;
    std::size_t non_preemptible = 0;
    std::size_t elastic = 0;
    std::size_t rack_gangs = 0;
    std::size_t cpu_only = 0;
    state.for_each_workload([&](const Workload& workload) {
      priorities.insert(workload.priority);
      if (workload.demand.whole_devices > 0) {
        sizes.insert(workload.demand.whole_devices * workload.replicas);
      } else {
        ++cpu_only;
      }
      scopes.insert(workload.replica_scope.level +
                    (workload.replica_scope.mode == RequirementMode::guaranteed ? "!" : "?"));
      if (!workload.preemptible) {
        ++non_preemptible;
        CHECK(workload.priority == generated_priority::serving);
      }
      if (workload.min_replicas) ++elastic;
      if (workload.gang_scope == TopologyRequirement::guaranteed("rack")) {
        ++rack_gangs;
        CHECK(workload.replicas >= 2);
        CHECK(workload.demand.whole_devices == 8);
      }
      CHECK(workload.cost.start_time_s <= ClusterSpec{}.now_s);
      CHECK(workload.cost.seconds_since_checkpoint >= 0.0);
    });
    CHECK(state.size() > 500);  // ~6 per node
    CHECK(priorities.size() >= 5);
    for (std::int32_t size : {1, 2, 4, 8}) CHECK(sizes.contains(size));
    for (const char* scope : {"numa!", "pcie_switch!", "socket!", "node!"}) {
      CHECK_MESSAGE(scopes.contains(scope), scope);
    }
    CHECK(non_preemptible > 0);
    CHECK(elastic > 0);
    CHECK(rack_gangs > 0);
    CHECK(cpu_only > 0);
    // Nothing over-committed (the state would have refused it, but aggregates must agree).
    for (std::uint32_t d = 0; d < topology.size(); ++d) {
      CHECK((state.free(DomainId{d}).array() >= 0).all());
    }
  }

  TEST_CASE("the generated clusters are pinned: 1,000 and 10,000 nodes as in 0.5") {
    // Digests of the clusters `generate_cluster` made before it started workloads through
    // `add_found` (main at 8368b3a): the fast path must not change a single workload, id,
    // placement, version or index entry.
    ClusterSpec spec;
    spec.nodes = 1000;
    const GeneratedCluster small = generate_cluster(spec);
    CHECK(small.state.size() == 6176);
    CHECK(state_digest(small.state) == 0x209b5770d2976fadULL);
    spec.nodes = 10000;
    const GeneratedCluster large = generate_cluster(spec);
    CHECK(large.state.size() == 60502);
    CHECK(state_digest(large.state) == 0x12df2bfc31ddc3a5ULL);
  }

  TEST_CASE("every generated workload passes add's checks and rebuilds the same state") {
    // The generator skips add's checks (find_placement has just made them); starting its
    // workloads again through the public add, in the same order, checks every one of them.
    ClusterSpec spec;
    spec.nodes = 300;
    spec.nodes_per_rack = 16;
    const GeneratedCluster generated = generate_cluster(spec);
    Allocation rebuilt(generated.topology);
    generated.state.for_each_workload([&](const Workload& workload) {
      REQUIRE_NOTHROW(rebuilt.add(workload, generated.state.placement(workload.id)));
    });
    CHECK(rebuilt.size() == generated.state.size());
    CHECK(test::state_fingerprint(rebuilt, {2000, 700, 350, 150, 50}) ==
          test::state_fingerprint(generated.state, {2000, 700, 350, 150, 50}));
  }

  TEST_CASE("the same spec gives the same cluster; another seed another one") {
    ClusterSpec spec;
    spec.nodes = 40;
    spec.nodes_per_rack = 8;
    const GeneratedCluster a = generate_cluster(spec);
    const GeneratedCluster b = generate_cluster(spec);
    CHECK(fingerprint(a.state) == fingerprint(b.state));
    spec.seed = 2;
    CHECK_FALSE(fingerprint(generate_cluster(spec).state) == fingerprint(a.state));
  }

  TEST_CASE("big preemptors need victims; preemptor shapes are valid") {
    const GeneratedCluster cluster = generate_cluster(ClusterSpec{});
    const Topology& topology = *cluster.topology;
    const auto fits = [&](PreemptorKind kind, std::int32_t gpus) {
      PreemptorSpec spec;
      spec.kind = kind;
      spec.gpus = gpus;
      const Workload preemptor = make_preemptor(spec);
      CHECK_NOTHROW(validate(preemptor, topology));
      CHECK_FALSE(cluster.state.contains(preemptor.id));
      CHECK(preemptor.demand.whole_devices * preemptor.replicas == gpus);
      return find_placement(cluster.state, preemptor).found;
    };
    // Idle GPUs are scattered (at most 2 per node at 92 %), so whole sockets and nodes are taken.
    CHECK_FALSE(fits(PreemptorKind::socket, 4));
    CHECK_FALSE(fits(PreemptorKind::node, 8));
    CHECK_FALSE(fits(PreemptorKind::rack_gang, 16));
    CHECK_FALSE(fits(PreemptorKind::nvlink_island, 8));
    (void)fits(PreemptorKind::numa, 1);
    (void)fits(PreemptorKind::numa, 4);
    (void)fits(PreemptorKind::nvlink_island, 4);
    (void)fits(PreemptorKind::best_effort, 4);
    CHECK(make_preemptor({PreemptorKind::nvlink_island, 4}).replicas == 2);
    CHECK(make_preemptor({PreemptorKind::numa, 4}).gang_scope ==
          TopologyRequirement::guaranteed("socket"));
    CHECK(make_preemptor({PreemptorKind::best_effort, 4}).replica_scope ==
          TopologyRequirement::best_effort("socket"));
    CHECK_THROWS_AS((void)make_preemptor({PreemptorKind::node, 12}), std::invalid_argument);
    CHECK_THROWS_AS((void)make_preemptor({PreemptorKind::rack_gang, 16, 1}), std::invalid_argument);
  }

  TEST_CASE("a saturated cluster and bad specs") {
    ClusterSpec spec;
    spec.nodes = 20;
    spec.nodes_per_rack = 4;
    spec.target_occupancy = 1.0;
    CHECK(gpu_occupancy(generate_cluster(spec).state) == 1.0);
    spec.target_occupancy = 1.5;
    CHECK_THROWS_AS((void)generate_cluster(spec), std::invalid_argument);
    spec.target_occupancy = 0.9;
    spec.nodes = 0;
    CHECK_THROWS_AS((void)generate_cluster(spec), std::invalid_argument);
  }
}
