// SPDX-License-Identifier: MIT
// The idle-device index (issue 22, item 2): Allocation's per-level buckets of domains by idle
// devices stay equal to a recount after any change sequence, and `find_placement` on an
// Allocation (which reads them to meet gang domains in best-fit order) places every workload
// exactly where the walk over every candidate does (`find_placement` on an unchanged overlay,
// which the index does not serve).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "support.hpp"
#include "topopreempt/model/capacity_view.hpp"
#include "topopreempt/model/cluster_generator.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/placement_search.hpp"

namespace topopreempt {
namespace {

/// Every indexed level's order, read back through `first_accepted` with a visitor that never
/// accepts, equals the recount: the level's domains with at least `min_idle` idle devices,
/// ascending (idle devices, id).
void check_idle_buckets(const Allocation& state, std::int64_t min_idle) {
  const Topology& topology = state.topology();
  const detail::IdleDeviceIndex& index = state.idle_device_index();
  for (LevelIndex level = 1; level < topology.levels().size(); ++level) {
    if (!index.covers(level)) continue;
    std::vector<DomainId> met;
    const DomainId accepted =
        index.first_accepted(topology, level, Topology::root(), min_idle, [&](DomainId d) {
          met.push_back(d);
          return false;
        });
    CHECK_FALSE(accepted.valid());
    std::vector<std::pair<std::int64_t, DomainId>> expected;
    for (const DomainId d : topology.domains_at(level)) {
      if (state.idle_devices(d) >= min_idle) expected.emplace_back(state.idle_devices(d), d);
    }
    std::sort(expected.begin(), expected.end());
    REQUIRE(met.size() == expected.size());
    for (std::size_t i = 0; i < met.size(); ++i) CHECK(met[i] == expected[i].second);
    // The largest idle counts of a run of ordinals, and the level's largest device count.
    const auto domains = topology.domains_at(level);
    std::uint32_t most_devices = 0;
    for (const DomainId d : domains) most_devices = std::max(most_devices, topology.device_count(d));
    CHECK(index.most_devices(level) == most_devices);
    const std::size_t n = domains.size();
    for (const auto& [first, last] : {std::pair<std::size_t, std::size_t>{0, n},
                                      {n / 3, 2 * n / 3 + 1}, {n - 1, n}, {n / 2, n / 2}}) {
      std::vector<std::int64_t> want;
      for (std::size_t o = first; o < std::min(last, n); ++o)
        want.push_back(state.idle_devices(domains[o]));
      std::sort(want.rbegin(), want.rend());
      for (const std::size_t count : {std::size_t{1}, std::size_t{2}, std::size_t{3}, n + 1}) {
        std::vector<std::int64_t> got{-7};  // cleared by the call
        index.most_idle_counts_in(level, first, std::min(last, n), count, got);
        const std::vector<std::int64_t> head(
            want.begin(), want.begin() + static_cast<std::ptrdiff_t>(std::min(count, want.size())));
        CAPTURE(level);
        // CAPTURE takes its argument in a lambda, and Clang 14 cannot capture a binding.
        const std::size_t range_first = first;
        CAPTURE(range_first);
        CAPTURE(count);
        CHECK(got == head);
      }
    }
  }
}

/// A random workload over `topology`'s levels: 0-8 whole devices (0: a device share or pooled
/// only), 1-4 replicas, random replica and gang scopes and anti-affinity. Invalid mixes (which
/// `ResolvedDemand::of` refuses) are redrawn.
Workload idle_index_probe(const Topology& topology, std::mt19937_64& random, std::uint64_t id) {
  const ResourceSchema& schema = topology.schema();
  const std::vector<std::string>& levels = topology.levels();
  const auto scope = [&]() {
    const auto mode = random() % 3;
    const std::string& level = levels[1 + random() % (levels.size() - 1)];
    if (mode == 0) return TopologyRequirement{};
    return mode == 1 ? TopologyRequirement::guaranteed(level)
                     : TopologyRequirement::best_effort(level);
  };
  for (;;) {
    Workload workload;
    workload.id = WorkloadId{id};
    workload.name = "probe" + std::to_string(id);
    workload.priority = static_cast<std::int32_t>(random() % 10);
    workload.preemptible = random() % 4 != 0;
    constexpr std::array<std::int32_t, 6> gpus{0, 1, 1, 2, 4, 8};
    workload.demand.whole_devices = gpus[random() % gpus.size()];
    const Amount cores = static_cast<Amount>(random() % 9);
    const Amount share = workload.demand.whole_devices == 0 && random() % 2 == 0
                             ? static_cast<Amount>(250 * (1 + random() % 3))
                             : 0;
    workload.demand.resources = schema.make(
        {{"cpu_milli", 1000 * cores}, {"memory_mib", 4096 * cores}, {"gpu_milli", share}});
    workload.replicas = static_cast<std::int32_t>(1 + random() % 4);
    workload.replica_scope = scope();
    workload.gang_scope = scope();
    workload.distinct_hosts = random() % 3 == 0;
    try {
      (void)ResolvedDemand::of(workload, topology);
      return workload;
    } catch (const std::invalid_argument&) {
      continue;  // e.g. anti-affinity under a gang scope at or below the host
    }
  }
}

/// The two searches agree on `workload` inside `within`; returns the indexed one.
PlacementSearchResult check_idle_index_placement(const Allocation& state, const Workload& workload,
                                                 DomainId within) {
  const ResolvedDemand demand = ResolvedDemand::of(workload, state.topology());
  const PlacementSearchResult indexed = find_placement(state, demand, within);
  const PlacementSearchResult walked =
      find_placement(OverlayView<Allocation>(state), demand, within);
  INFO(workload.label(), " inside domain ", within.value);
  REQUIRE(indexed.found == walked.found);
  CHECK(indexed.placement == walked.placement);
  CHECK(indexed.gang_domain == walked.gang_domain);
  CHECK(indexed.gang_level == walked.gang_level);
  CHECK(indexed.replica_level == walked.replica_level);
  return indexed;
}

/// A random running workload's id, or nullopt when none runs.
std::optional<WorkloadId> idle_index_victim(const Allocation& state, std::mt19937_64& random) {
  const std::vector<WorkloadId> ids = state.workload_ids();
  if (ids.empty()) return std::nullopt;
  return ids[random() % ids.size()];
}

/// `steps` random changes to `state` (starts, removals, shrinks, preempt-and-starts), each
/// followed by the bucket recount and `probes` random placements compared both ways, inside
/// the root and inside a random domain.
void idle_index_exercise(Allocation& state, std::mt19937_64& random, int steps, int probes) {
  const Topology& topology = state.topology();
  std::uint64_t next_id = 1'000'000;
  for (int step = 0; step < steps; ++step) {
    const auto op = random() % 8;
    if (op < 3) {  // start what fits now
      const Workload workload = idle_index_probe(topology, random, next_id++);
      const PlacementSearchResult found =
          check_idle_index_placement(state, workload, Topology::root());
      if (found.found) state.add(workload, found.placement);
    } else if (op < 5) {
      if (const auto id = idle_index_victim(state, random)) state.remove(*id);
    } else if (op == 5) {
      const auto id = idle_index_victim(state, random);
      if (id && state.workload(*id).min_replicas &&
          state.workload(*id).replicas > *state.workload(*id).min_replicas) {
        const std::array<std::int32_t, 1> drop{state.workload(*id).replicas - 1};
        state.shrink(*id, drop);
      }
    } else {  // evict up to two victims and start what then fits where they were
      std::vector<Allocation::VictimChange> victims;
      OverlayView<Allocation> after(state);
      for (int v = 0; v < 2; ++v) {
        const auto id = idle_index_victim(state, random);
        if (!id || std::any_of(victims.begin(), victims.end(),
                               [&](const auto& victim) { return victim.id == *id; })) {
          continue;
        }
        victims.push_back({*id, true, {}});
        after.release(state.placement(*id));
      }
      const Workload workload = idle_index_probe(topology, random, next_id++);
      const PlacementSearchResult found = find_placement(after, workload);
      if (found.found) state.preempt_and_start(victims, workload, found.placement);
    }
    check_idle_buckets(state, 0);
    check_idle_buckets(state, static_cast<std::int64_t>(1 + random() % 8));
    for (int probe = 0; probe < probes; ++probe) {
      const Workload workload = idle_index_probe(topology, random, next_id++);
      (void)check_idle_index_placement(state, workload, Topology::root());
      const DomainId within{static_cast<std::uint32_t>(random() % topology.size())};
      (void)check_idle_index_placement(state, workload, within);
    }
  }
}

TEST_SUITE("idle_device_index") {
  TEST_CASE("generated clusters: the index places as the walk does after random changes") {
    constexpr std::array<double, 4> occupancies{0.3, 0.5, 0.8, 0.95};
    for (std::uint64_t seed = 1; seed <= 12; ++seed) {
      ClusterSpec spec;
      spec.nodes = 2 + seed % 7;
      spec.nodes_per_rack = 1 + seed % 4;
      spec.seed = seed;
      spec.elastic_fraction = 0.5;
      spec.target_occupancy = occupancies[seed % occupancies.size()];
      GeneratedCluster cluster = generate_cluster(spec);
      CAPTURE(seed);
      std::mt19937_64 random(seed);
      idle_index_exercise(cluster.state, random, 30, 6);
    }
  }

  TEST_CASE("uneven machines and skipped levels: the index places as the walk does") {
    // openb nodes of 1, 2, 4 and 8 GPUs (a level's domains hold different device counts, so
    // its buckets differ in how far up they reach) and RTX 4090 servers (GPUs beside the core
    // groups: a branch that skips a level).
    std::vector<shapes::ClusterMember> members;
    constexpr std::array<int, 5> gpus{1, 2, 4, 8, 8};
    for (std::size_t i = 0; i < 7; ++i) {
      const int count = gpus[i % gpus.size()];
      members.push_back({"n" + std::to_string(i),
                         std::make_shared<const shapes::MachineShape>(shapes::openb_node(
                             "T4", count, 8000 * static_cast<Amount>(count), 65536 * count))});
    }
    const std::array<std::shared_ptr<const Topology>, 2> topologies{
        test::shared(shapes::cluster(members, 3)),
        test::shared(shapes::cluster(shapes::rtx4090_server(), 5, 2))};
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
      for (const auto& topology : topologies) {
        CAPTURE(seed);
        Allocation state(topology);
        std::mt19937_64 random(seed);
        idle_index_exercise(state, random, 40, 6);
      }
    }
  }

  TEST_CASE("an empty cluster buckets every domain by its device count") {
    Allocation state(test::shared(shapes::cluster(shapes::hgx_h100(), 4, 2)));
    const Topology& topology = state.topology();
    CHECK(state.idle_device_index().covers(topology.host_level()));
    CHECK(state.idle_device_index().covers(topology.device_level()));
    CHECK_FALSE(state.idle_device_index().covers(0));  // the root: never below a `within`
    check_idle_buckets(state, 0);
    check_idle_buckets(state, 8);
    CHECK(state.memory_bytes() > state.idle_device_index().memory_bytes());
  }
}

}  // namespace
}  // namespace topopreempt
