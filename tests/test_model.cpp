// SPDX-License-Identifier: MIT
// Topology, workload, allocation and placement search: the foundation every solver stands on.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "support.hpp"
#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/placement_search.hpp"

using namespace topopreempt;
using namespace topopreempt::test;

namespace {

/// Recounts every aggregate of `state` from its workloads and compares with the incremental ones.
void check_aggregates(const Allocation& state) {
  const Topology& topology = state.topology();
  const auto dims = static_cast<Eigen::Index>(topology.schema().size());
  Eigen::Matrix<Amount, Eigen::Dynamic, Eigen::Dynamic> used =
      Eigen::Matrix<Amount, Eigen::Dynamic, Eigen::Dynamic>::Zero(
          dims, static_cast<Eigen::Index>(topology.size()));
  std::vector<std::int64_t> occupancy(topology.size(), 0);
  state.for_each_workload([&](const Workload& workload) {
    for (const auto& replica : state.placement(workload.id).replicas) {
      for (const auto& entry : replica.entries) {
        for (DomainId at = entry.domain; at.valid(); at = topology.parent(at)) {
          used.col(at.value) += entry.amount;
          if (at == Topology::root()) break;
        }
        if (topology.is_device(entry.domain)) ++occupancy[entry.domain.value];
      }
    }
  });
  for (std::uint32_t d = 0; d < topology.size(); ++d) {
    const DomainId domain{d};
    REQUIRE(state.used(domain) == used.col(d));
    std::int64_t idle = 0;
    for (DomainId device : topology.domains_at(topology.device_level(), domain)) {
      idle += occupancy[device.value] == 0 ? 1 : 0;
    }
    REQUIRE(state.idle_devices(domain) == idle);
  }
}

}  // namespace

TEST_SUITE("model") {
  TEST_CASE("machine shapes have the documented structure") {
    const Topology paper = shapes::single_machine(shapes::rtx4090_server());
    CHECK(paper.domains_at(paper.level_index("gpu")).size() == 8);
    CHECK(paper.domains_at(paper.level_index("numa")).size() == 8);
    CHECK(paper.domains_at(paper.level_index("socket")).size() == 2);
    const auto cpu = paper.schema().index_of("cpu_milli");
    CHECK(paper.capacity(Topology::root())(static_cast<Eigen::Index>(cpu)) == 96000);
    const auto gpus = paper.domains_at(paper.level_index("gpu"));
    CHECK(paper.levels()[paper.lca_level(gpus[0], gpus[1])] == "socket");
    CHECK(paper.levels()[paper.lca_level(gpus[0], gpus[7])] == "node");
    CHECK(*paper.device_affinity(gpus[0], gpus[1]) > *paper.device_affinity(gpus[0], gpus[7]));

    const Topology hgx = shapes::single_machine(shapes::hgx_h100());
    CHECK(hgx.domains_at(hgx.level_index("pcie_switch")).size() == 4);
    CHECK(hgx.device_count(Topology::root()) == 8);

    const Topology nvl72 = shapes::cluster(shapes::gb200_nvl72_rack(), 2, 1);
    CHECK(nvl72.device_count(Topology::root()) == 144);
    CHECK(nvl72.domains_at(nvl72.level_index("rack")).size() == 2);
    CHECK(nvl72.domains_at(nvl72.level_index("node")).size() == 36);

    const Topology racks = shapes::cluster(shapes::dense_8gpu_server(), 70, 32);
    CHECK(racks.domains_at(racks.level_index("rack")).size() == 3);
    CHECK(racks.domains_at(racks.level_index("numa")).size() == 560);
    const DomainId some_gpu = racks.domains_at(racks.device_level())[100];
    CHECK(racks.find(racks.path(some_gpu)) == some_gpu);
    CHECK(racks.path(some_gpu) == "rack0/node12/socket1/pcie2/numa4/gpu4");
  }

  TEST_CASE("openb node list loads with synthesised topology") {
    // tests/data holds a slice of the list: up to 3 nodes of every (model, GPU count) pair.
    const auto members =
        shapes::load_openb_nodes(test_data("openb/openb_node_list_gpu_node.slice.csv").string());
    CHECK(members.size() == 35);
    const Topology topology = shapes::cluster(members, 32);
    CHECK(topology.device_count(Topology::root()) == 152);
    CHECK(topology.domains_at(topology.level_index("rack")).size() == 2);
    const auto cpu = static_cast<Eigen::Index>(topology.schema().index_of("cpu_milli"));
    const DomainId first = topology.domains_at(topology.host_level())[0];
    CHECK(topology.local_name(first) == "openb-node-0000");
    CHECK(topology.capacity(first)(cpu) == 64000);
    const DomainId last = topology.domains_at(topology.host_level()).back();
    CHECK(topology.local_name(last) == "openb-node-1033");
    CHECK(topology.capacity(last)(cpu) == 128000);
    CHECK_THROWS_WITH_AS(static_cast<void>(shapes::load_openb_nodes("/nonexistent.csv")),
                         doctest::Contains("/nonexistent.csv"), std::runtime_error);
  }

  TEST_CASE("the full openb node list loads" * doctest::test_suite("full_data")) {
    const auto file = data_file_or_skip("openb/openb_node_list_gpu_node.csv");
    if (!file) {
      return;
    }
    const auto members = shapes::load_openb_nodes(file->string());
    CHECK(members.size() == 1213);
    const Topology topology = shapes::cluster(members, 32);
    CHECK(topology.device_count(Topology::root()) == 6212);
  }

  TEST_CASE("domains_at(level, d): the O(1) span of a regular tree equals the binary search's") {
    const auto check_every_span = [](const Topology& topology) {
      std::size_t compared = 0;
      for (std::size_t level = 0; level < topology.levels().size(); ++level) {
        for (std::uint32_t d = 0; d < topology.size(); ++d) {
          const auto fast = topology.domains_at(static_cast<LevelIndex>(level), DomainId{d});
          const auto search =
              topology.domains_at_by_search(static_cast<LevelIndex>(level), DomainId{d});
          REQUIRE(fast.data() == search.data());
          REQUIRE(fast.size() == search.size());
          ++compared;
        }
      }
      return compared;
    };
    // Regular: 8 racks of 8 identical nodes.
    const Topology regular = shapes::cluster(shapes::dense_8gpu_server(), 64, 8);
    const LevelIndex rack = regular.level_index("rack");
    const LevelIndex node = regular.level_index("node");
    const LevelIndex gpu = regular.device_level();
    CHECK(regular.is_regular(0, gpu));
    CHECK(regular.is_regular(rack, node));
    CHECK(regular.is_regular(node, gpu));
    CHECK_FALSE(regular.is_regular(node, rack));
    CHECK(regular.domains_at(gpu, regular.domains_at(node)[9]).size() == 8);
    CHECK(check_every_span(regular) == regular.size() * regular.levels().size());
    // A last rack of 3 nodes: rack -> node and rack -> gpu irregular, node -> gpu still regular.
    const Topology partial = shapes::cluster(shapes::dense_8gpu_server(), 67, 8);
    CHECK_FALSE(partial.is_regular(rack, node));
    CHECK_FALSE(partial.is_regular(rack, gpu));
    CHECK(partial.is_regular(node, gpu));
    CHECK(partial.domains_at(node, partial.domains_at(rack).back()).size() == 3);
    (void)check_every_span(partial);
    // GPUs beside core groups: core_group -> gpu irregular.
    const Topology paper = shapes::single_machine(shapes::rtx4090_server());
    (void)check_every_span(paper);
    CHECK(paper.is_regular(paper.level_index("numa"), paper.device_level()));
    CHECK_FALSE(paper.is_regular(paper.level_index("core_group"), paper.device_level()));
    // Hand-built: a skipped level (a GPU straight under a node) and uneven fan-out.
    TopologyBuilder builder({"cluster", "rack", "node", "numa", "gpu"},
                            ResourceSchema::standard(), "gpu", "node");
    const auto g = ResourceSchema::standard().make({{"gpu_milli", 1000}});
    for (int r = 0; r < 3; ++r) {
      const auto rack_handle = builder.add(TopologyBuilder::root(), "rack", "r" + std::to_string(r));
      for (int n = 0; n <= r; ++n) {
        const auto node_handle = builder.add(rack_handle, "node", "n" + std::to_string(n));
        if (n % 2 == 0) {
          const auto numa = builder.add(node_handle, "numa", "numa0");
          builder.add(numa, "gpu", "g0", g);
        } else {
          builder.add(node_handle, "gpu", "g0", g);
        }
      }
    }
    const Topology uneven = builder.build();
    CHECK_FALSE(uneven.is_regular(1, 2));
    CHECK_FALSE(uneven.is_regular(3, 4));  // one GPU per NUMA node, but not every GPU has one
    CHECK(uneven.is_regular(2, 4));
    CHECK(check_every_span(uneven) == uneven.size() * 5);
    CHECK_THROWS_AS((void)uneven.domains_at(1, DomainId{999}), std::out_of_range);
  }

  TEST_CASE("topology builder: domains added out of order get the ids of a depth-first build") {
    // `build()` keeps the ids of a builder filled depth first and renumbers any other; both
    // must give the same topology.
    const auto schema = ResourceSchema::standard();
    const auto gpu = schema.make({{"gpu_milli", 1000}});
    const auto cpu = [&](Amount milli) { return schema.make({{"cpu_milli", milli}}); };
    const Eigen::MatrixXd affinity = (Eigen::MatrixXd(2, 2) << 0, 300, 300, 0).finished();
    const auto make = [&](bool depth_first) {
      TopologyBuilder builder({"cluster", "rack", "node", "gpu"}, schema, "gpu", "node");
      const auto r0 = builder.add(TopologyBuilder::root(), "rack", "r0", cpu(1));
      std::vector<TopologyBuilder::Handle> nodes;
      const auto add_node = [&](TopologyBuilder::Handle rack, int n) {
        nodes.push_back(builder.add(rack, "node", "n" + std::to_string(n), cpu(1000 * (n + 1))));
      };
      const auto add_gpus = [&](TopologyBuilder::Handle node) {
        builder.add(node, "gpu", "g0", gpu);
        builder.add(node, "gpu", "g1", gpu);
        builder.set_affinity(node, affinity);
      };
      if (depth_first) {
        add_node(r0, 0);
        add_gpus(nodes[0]);
        add_node(r0, 1);
        add_gpus(nodes[1]);
        const auto r1 = builder.add(TopologyBuilder::root(), "rack", "r1", cpu(2));
        add_node(r1, 2);
        add_gpus(nodes[2]);
      } else {  // racks and nodes first, GPUs last, in reverse
        const auto r1 = builder.add(TopologyBuilder::root(), "rack", "r1", cpu(2));
        add_node(r0, 0);
        add_node(r0, 1);
        add_node(r1, 2);
        for (auto node = nodes.rbegin(); node != nodes.rend(); ++node) add_gpus(*node);
      }
      return builder.build();
    };
    const Topology kept = make(true);
    const Topology renumbered = make(false);
    REQUIRE(kept.size() == 12);
    REQUIRE(renumbered.size() == kept.size());
    CHECK(renumbered.capacities() == kept.capacities());
    CHECK(kept.capacity(Topology::root())(static_cast<Eigen::Index>(
              schema.index_of("cpu_milli"))) == 1 + 2 + 1000 + 2000 + 3000);
    for (std::uint32_t i = 0; i < kept.size(); ++i) {
      const DomainId d{i};
      CHECK(renumbered.describe(d) == kept.describe(d));
      CHECK(renumbered.parent(d) == kept.parent(d));
      CHECK(renumbered.subtree_end(d) == kept.subtree_end(d));
      CHECK(renumbered.ordinal(d) == kept.ordinal(d));
      CHECK(renumbered.device_count(d) == kept.device_count(d));
      CHECK(renumbered.has_affinity(d) == kept.has_affinity(d));
    }
    for (LevelIndex level = 0; level < 4; ++level) {
      const auto a = kept.domains_at(level);
      const auto b = renumbered.domains_at(level);
      CHECK(std::vector<DomainId>(a.begin(), a.end()) == std::vector<DomainId>(b.begin(), b.end()));
    }
    CHECK(kept.memory_bytes() == renumbered.memory_bytes());
  }

  TEST_CASE("topology builder: a capacity overflow at build() leaves the builder unchanged") {
    // Summed bottom-up (descending ids): c into r1, r1 into the root, b and a into r0, then r0
    // into the root overflows. Had the partial sums stayed, building again would overflow at
    // r1 (c added twice), not at the root.
    const auto schema = ResourceSchema::standard();
    const Amount max = std::numeric_limits<Amount>::max();
    const auto cpu = [&](Amount milli) { return schema.make({{"cpu_milli", milli}}); };
    TopologyBuilder builder({"cluster", "rack", "node", "gpu"}, schema, "gpu", "node");
    const auto r0 = builder.add(TopologyBuilder::root(), "rack", "r0");
    builder.add(r0, "node", "a", cpu(max / 2));
    builder.add(r0, "node", "b", cpu(max / 2));
    const auto r1 = builder.add(TopologyBuilder::root(), "rack", "r1");
    builder.add(r1, "node", "c", cpu(max / 2 + 2));
    for (int attempt = 0; attempt < 2; ++attempt) {
      CAPTURE(attempt);
      CHECK_THROWS_WITH_AS((void)builder.build(), doctest::Contains("capacity of 'root'"),
                           std::overflow_error);
      CHECK(builder.size() == 6);
    }
  }

  TEST_CASE("topology builder: a bad affinity matrix at build() leaves the builder unchanged") {
    // Checked after every capacity is summed: had the sums stayed, building again would
    // overflow at the root (the host's capacity added twice) instead of naming the matrix.
    const auto schema = ResourceSchema::standard();
    const Amount max = std::numeric_limits<Amount>::max();
    TopologyBuilder builder({"cluster", "node", "gpu"}, schema, "gpu", "node");
    const auto half = schema.make({{"cpu_milli", max / 2 + 2}});
    const auto host = builder.add(TopologyBuilder::root(), "node", "h", half);
    builder.add(host, "gpu", "g0", schema.make({{"gpu_milli", 1000}}));
    builder.add(host, "gpu", "g1", schema.make({{"gpu_milli", 1000}}));
    builder.set_affinity(host, Eigen::MatrixXd::Zero(3, 3));
    for (int attempt = 0; attempt < 2; ++attempt) {
      CAPTURE(attempt);
      CHECK_THROWS_WITH_AS((void)builder.build(), doctest::Contains("affinity matrix of host 'h'"),
                           std::invalid_argument);
      CHECK(builder.size() == 4);
    }
  }

  TEST_CASE("topology builder rejects malformed trees, naming the domain") {
    TopologyBuilder builder({"cluster", "node", "gpu"}, ResourceSchema::standard(), "gpu", "node");
    const auto node = builder.add(TopologyBuilder::root(), "node", "n0");
    CHECK_THROWS_WITH_AS(builder.add(node, "rack", "x"), doctest::Contains("'rack'"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(builder.add(node, "node", "n1"), doctest::Contains("deeper"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(builder.add(TopologyBuilder::root(), "node", "n0"),
                         doctest::Contains("already exists"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(
        builder.add(node, "gpu", "g0", ResourceSchema::standard().make({{"cpu_milli", 1}})),
        doctest::Contains("cpu_milli"), std::invalid_argument);
    const auto gpu =
        builder.add(node, "gpu", "g0", ResourceSchema::standard().make({{"gpu_milli", 1000}}));
    CHECK_THROWS_WITH_AS(builder.add(gpu, "gpu", "g1"), doctest::Contains("leaves"),
                         std::invalid_argument);
    CHECK_THROWS_AS(static_cast<void>(ResourceSchema::standard().make({{"gpu_milli", -1}})),
                    std::invalid_argument);
    CHECK_THROWS_AS(static_cast<void>(ResourceSchema::standard().make({{"tpu", 1}})),
                    std::invalid_argument);
    const Topology topology = builder.build();
    CHECK(topology.size() == 3);
    CHECK_THROWS_WITH_AS((void)topology.level_index("rack"),
                         doctest::Contains("levels: cluster, node, gpu"), std::invalid_argument);
  }

  TEST_CASE("allocation rejects invalid operations and leaves state unchanged") {
    auto topology = shared(shapes::single_machine(shapes::hgx_h100()));
    Allocation state(topology);
    const Placement first = start(state, gpu_job(1, 5, 2));
    const auto before = state.used(Topology::root());

    CHECK_THROWS_WITH_AS(state.add(gpu_job(1, 5, 2), first), doctest::Contains("already running"),
                         std::invalid_argument);
    // Over-capacity: the same devices again under a new id.
    CHECK_THROWS_WITH_AS(state.add(gpu_job(2, 5, 2), first), doctest::Contains("over-commits"),
                         std::invalid_argument);
    // A placement whose replica count is wrong.
    CHECK_THROWS_WITH_AS(state.add(gpu_job(3, 5, 2, 2), first),
                         doctest::Contains("placement has 1"), std::invalid_argument);
    // Unknown level in a requirement.
    CHECK_THROWS_WITH_AS(
        state.add(gpu_job(4, 5, 2, 1, TopologyRequirement::guaranteed("nvl")), first),
        doctest::Contains("unknown topology level 'nvl'"), std::invalid_argument);
    Workload negative = gpu_job(5, 5, 1);
    negative.demand.resources(2) = -5;
    CHECK_THROWS_WITH_AS(state.add(negative, first), doctest::Contains("negative demand"),
                         std::invalid_argument);
    CHECK_THROWS_AS(state.remove(WorkloadId{99}), std::out_of_range);
    CHECK(state.used(Topology::root()) == before);
    CHECK(state.size() == 1);
    check_aggregates(state);
  }

  TEST_CASE("guaranteed scopes are honoured and checked") {
    auto topology = shared(shapes::single_machine(shapes::rtx4090_server()));
    Allocation state(topology);
    // Two GPUs in one NUMA node never exist on this server: guaranteed numa cannot fit.
    const auto numa2 =
        find_placement(state, gpu_job(1, 5, 2, 1, TopologyRequirement::guaranteed("numa")));
    CHECK_FALSE(numa2.found);
    const auto socket2 =
        find_placement(state, gpu_job(1, 5, 2, 1, TopologyRequirement::guaranteed("socket")));
    REQUIRE(socket2.found);
    CHECK(topology->levels()[socket2.replica_level] == "socket");
    // Best effort at numa still places the job, at socket tier.
    const auto best =
        find_placement(state, gpu_job(1, 5, 2, 1, TopologyRequirement::best_effort("numa")));
    REQUIRE(best.found);
    CHECK(topology->levels()[best.replica_level] == "socket");
    // A node-scoped placement handed to a guaranteed-numa workload is refused.
    CHECK_THROWS_WITH_AS(
        state.add(gpu_job(2, 5, 2, 1, TopologyRequirement::guaranteed("numa")), socket2.placement),
        doctest::Contains("numa"), std::invalid_argument);
  }

  TEST_CASE("gang placement in one rack") {
    auto topology = shared(shapes::cluster(shapes::dense_8gpu_server(), 8, 4));
    Allocation state(topology);
    const Workload gang = gpu_job(1, 5, 4, 6, TopologyRequirement::guaranteed("socket"),
                                  TopologyRequirement::guaranteed("rack"));
    const auto found = find_placement(state, gang);
    REQUIRE(found.found);
    CHECK(topology->levels()[found.gang_level] == "rack");
    state.add(gang, found.placement);
    check_aggregates(state);
    // 4 nodes x 2 sockets per rack = 8 slots per rack: a second gang of 6 fits only in rack 1.
    const auto second =
        find_placement(state, gpu_job(2, 5, 4, 6, TopologyRequirement::guaranteed("socket"),
                                      TopologyRequirement::guaranteed("rack")));
    REQUIRE(second.found);
    CHECK(second.gang_domain != found.gang_domain);
    CHECK(replicas_that_fit(state, ResolvedDemand::of(gang, *topology), found.gang_domain) == 2);
  }

  TEST_CASE("distinct_hosts: one replica per node in the count, the search, add and validation") {
    auto topology = shared(shapes::cluster(shapes::dense_8gpu_server(), 4, 2));
    Allocation state(topology);
    Workload gang = gpu_job(1, 5, 2, 3, TopologyRequirement::guaranteed("socket"),
                            TopologyRequirement::guaranteed("rack"));
    const DomainId rack0 = *topology->find("rack0");
    // Sharing nodes, a rack of 2 nodes x 2 sockets x 4 GPUs holds 8 two-GPU replicas.
    CHECK(replicas_that_fit(state, ResolvedDemand::of(gang, *topology), rack0) == 8);
    gang.distinct_hosts = true;
    const ResolvedDemand apart = ResolvedDemand::of(gang, *topology);
    CHECK(apart.distinct_hosts);
    CHECK(replicas_that_fit(state, apart, rack0) == 2);
    CHECK(replicas_that_fit(state, apart, *topology->find("rack0/node0")) == 1);
    CHECK(replicas_that_fit(state, apart, Topology::root()) == 4);
    // Three replicas on distinct nodes never fit in a rack of two nodes.
    CHECK_FALSE(find_placement(state, gang).found);
    gang.gang_scope = {};
    const auto found = find_placement(state, gang);
    REQUIRE(found.found);
    std::vector<DomainId> nodes;
    for (std::size_t r = 0; r < 3; ++r) {
      nodes.push_back(topology->ancestor_at(found.placement.replica_domain(*topology, r),
                                            topology->host_level()));
    }
    std::sort(nodes.begin(), nodes.end());
    CHECK(std::adjacent_find(nodes.begin(), nodes.end()) == nodes.end());
    state.add(gang, found.placement);
    check_aggregates(state);

    // add: two replicas on one node are refused, naming the workload and the node; no change.
    Workload pair = gpu_job(2, 5, 2, 2);
    pair.distinct_hosts = true;
    pair.gang_scope = {};
    Workload sharing = pair;
    sharing.distinct_hosts = false;
    Allocation spare(topology);
    const Placement stacked =
        *place_in(spare, ResolvedDemand::of(sharing, *topology), *topology->find("rack0/node0"));
    const auto before = spare.used(Topology::root());
    CHECK_THROWS_WITH_AS(spare.add(pair, stacked),
                         doctest::Contains("workload 2 'job2' replicas 0 and 1 share node "
                                           "rack0/node0, but distinct_hosts"),
                         std::invalid_argument);
    CHECK(spare.size() == 0);
    CHECK(spare.used(Topology::root()) == before);
    spare.add(sharing, stacked);  // the same placement is fine for a gang free to share

    // A second gang of three on distinct nodes: each node has room, so it fits, apart.
    Workload second = gang;
    second.id = WorkloadId{3};
    CHECK(find_placement(state, second).found);
    // Validation: a guaranteed gang scope at the host level contradicts distinct hosts.
    Workload invalid = gpu_job(4, 5, 1, 2, {}, TopologyRequirement::guaranteed("node"));
    invalid.distinct_hosts = true;
    CHECK_THROWS_WITH_AS(validate(invalid, *topology),
                         doctest::Contains("workload 4 'job4': distinct_hosts needs 2 hosts"),
                         std::invalid_argument);
    invalid.replicas = 1;  // one replica: the flag has no effect, and is valid
    CHECK_NOTHROW(validate(invalid, *topology));
    invalid.replicas = 2;
    invalid.gang_scope = TopologyRequirement::best_effort("node");  // relaxes: valid
    CHECK_NOTHROW(validate(invalid, *topology));
    CHECK(find_placement(Allocation(topology), invalid).gang_level < topology->host_level());
  }

  TEST_CASE("GPU shares from the openb trace pack onto one device") {
    auto topology = shared(shapes::single_machine(shapes::openb_node("T4", 2, 104000, 524288)));
    Allocation state(topology);
    Workload share = gpu_job(1, 1, 0);
    share.demand.resources = topology->schema().make({{"gpu_milli", 460}, {"cpu_milli", 6000}});
    const ResolvedDemand demand = ResolvedDemand::of(share, *topology);
    CHECK(replicas_that_fit(state, demand, Topology::root()) == 4);  // 2 per GPU
    start(state, share);
    share.id = WorkloadId{2};
    const Placement second = start(state, share);
    CHECK(state.idle_devices(Topology::root()) == 1);  // best fit stacked both on one GPU
    CHECK(second.devices(*topology).size() == 1);
    check_aggregates(state);
  }

  TEST_CASE("elastic shrink drops chosen replicas") {
    auto topology = shared(shapes::single_machine(shapes::hgx_h100()));
    Allocation state(topology);
    Workload elastic = gpu_job(1, 1, 2, 3);
    elastic.min_replicas = 1;
    start(state, elastic);
    CHECK(state.idle_devices(Topology::root()) == 2);
    const std::vector<std::int32_t> drop{0, 2};
    state.shrink(WorkloadId{1}, drop);
    CHECK(state.workload(WorkloadId{1}).replicas == 1);
    CHECK(state.idle_devices(Topology::root()) == 6);
    check_aggregates(state);
    const std::vector<std::int32_t> too_many{0};
    CHECK_THROWS_WITH_AS(state.shrink(WorkloadId{1}, too_many), doctest::Contains("minimum 1"),
                         std::invalid_argument);
  }

  TEST_CASE("randomised add/remove keeps incremental aggregates equal to a recount") {
    auto topology = shared(shapes::cluster(shapes::rtx4090_server(), 6, 3));
    Allocation state(topology);
    std::mt19937_64 random(20261121);
    std::vector<WorkloadId> running;
    std::uint64_t next_id = 1;
    for (int step = 0; step < 600; ++step) {
      if (running.empty() || random() % 3 != 0) {
        const auto gpus = static_cast<std::int32_t>(1 + random() % 3);
        const auto replicas = static_cast<std::int32_t>(1 + random() % 2);
        Workload workload =
            gpu_job(next_id++, static_cast<std::int32_t>(random() % 10), gpus, replicas);
        if (random() % 2 == 0) workload.replica_scope = TopologyRequirement::guaranteed("socket");
        const auto found = find_placement(state, workload);
        if (!found.found) continue;
        state.add(workload, found.placement);
        running.push_back(workload.id);
      } else {
        const std::size_t victim = random() % running.size();
        state.remove(running[victim]);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(victim));
      }
      if (step % 50 == 0) check_aggregates(state);
    }
    check_aggregates(state);
  }
}
