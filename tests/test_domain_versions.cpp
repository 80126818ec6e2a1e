// SPDX-License-Identifier: MIT
// Allocation::domain_version: changes exactly where a state change reaches, compares across
// copies, and never returns to an old value when a change is undone.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "support.hpp"
#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "transaction_support.hpp"

namespace topopreempt {

using test::all_versions;

namespace {

/// Domains whose version differs between `before` and `after`.
std::vector<DomainId> moved(const std::vector<std::uint64_t>& before,
                            const std::vector<std::uint64_t>& after) {
  std::vector<DomainId> result;
  for (std::uint32_t d = 0; d < before.size(); ++d) {
    if (before[d] != after[d]) result.push_back(DomainId{d});
  }
  return result;
}

/// Domains on the paths from the workload's placement entries to the root.
std::vector<DomainId> reached_by(const Allocation& state, WorkloadId id) {
  const Topology& topology = state.topology();
  std::vector<bool> hit(topology.size(), false);
  for (const auto& replica : state.placement(id).replicas) {
    for (const auto& entry : replica.entries) {
      for (DomainId at = entry.domain; at.valid(); at = topology.parent(at)) {
        hit[at.value] = true;
        if (at == Topology::root()) break;
      }
    }
  }
  std::vector<DomainId> result;
  for (std::uint32_t d = 0; d < hit.size(); ++d) {
    if (hit[d]) result.push_back(DomainId{d});
  }
  return result;
}

}  // namespace

TEST_CASE("domain_version changes exactly on the domains a change reaches") {
  Allocation state(test::shared(shapes::cluster(shapes::dense_8gpu_server(), 4, 2)));
  test::start(state, test::gpu_job(1, 100, 2, 1, TopologyRequirement::guaranteed("pcie_switch")));
  test::start(state, test::gpu_job(2, 100, 8, 1, TopologyRequirement::guaranteed("node")));
  const auto before = all_versions(state);

  SUBCASE("add") {
    test::start(state, test::gpu_job(3, 100, 1, 1, TopologyRequirement::guaranteed("numa")));
    CHECK(moved(before, all_versions(state)) == reached_by(state, WorkloadId{3}));
  }
  SUBCASE("remove") {
    const auto reached = reached_by(state, WorkloadId{1});
    state.remove(WorkloadId{1});
    CHECK(moved(before, all_versions(state)) == reached);
  }
  SUBCASE("shrink moves every domain of the shrunk workload, kept replicas included") {
    Workload elastic = test::gpu_job(4, 100, 1, 3, TopologyRequirement::guaranteed("numa"));
    elastic.min_replicas = 1;
    test::start(state, elastic);
    const auto reached = reached_by(state, WorkloadId{4});
    const auto with_elastic = all_versions(state);
    const std::vector<std::int32_t> drop{0};
    state.shrink(WorkloadId{4}, drop);
    CHECK(moved(with_elastic, all_versions(state)) == reached);
  }
  SUBCASE("a failed change moves nothing") {
    CHECK_THROWS(state.remove(WorkloadId{99}));
    CHECK_THROWS(state.add(test::gpu_job(1, 100, 1), Placement{}));
    CHECK(all_versions(state) == before);
  }
}

TEST_CASE("domain_version: undoing a change gives a new version; copies compare") {
  Allocation state(test::shared(shapes::cluster(shapes::dense_8gpu_server(), 2, 2)));
  test::start(state, test::gpu_job(1, 100, 2, 1, TopologyRequirement::guaranteed("pcie_switch")));
  const auto before = all_versions(state);
  const Workload extra = test::gpu_job(2, 100, 1, 1, TopologyRequirement::guaranteed("numa"));

  Allocation copy_a = state;
  Allocation copy_b = state;
  CHECK(all_versions(copy_a) == before);

  const Placement placement = test::start(copy_a, extra);
  copy_b.add(extra, placement);  // the same change on another copy: the same versions
  CHECK(all_versions(copy_a) == all_versions(copy_b));

  copy_a.remove(WorkloadId{2});  // undone: same content as `state`, but a new version
  const auto undone = all_versions(copy_a);
  CHECK(moved(before, undone) == reached_by(copy_b, WorkloadId{2}));

  // A different change to the same domains: differs from copy_b's.
  Workload other = extra;
  other.priority = 7;
  Allocation copy_c = state;
  copy_c.add(other, placement);
  for (DomainId d : reached_by(copy_c, WorkloadId{2})) {
    CHECK(copy_c.domain_version(d) != copy_b.domain_version(d));
  }
  CHECK_THROWS_AS(
      (void)state.domain_version(DomainId{static_cast<std::uint32_t>(state.topology().size())}),
      std::out_of_range);
}

TEST_CASE("versions_at: a level's versions side by side, each its domain's, after every change") {
  Allocation state(test::shared(shapes::cluster(shapes::dense_8gpu_server(), 4, 2)));
  const Topology& topology = state.topology();
  // Every level at or above the hosts, each domain by its ordinal: its domain_version.
  const auto check_levels = [&](const Allocation& s) {
    for (LevelIndex level = 0; level <= topology.host_level(); ++level) {
      const auto domains = topology.domains_at(level);
      const auto versions = s.versions_at(level);
      REQUIRE(versions.size() == domains.size());
      for (std::size_t i = 0; i < domains.size(); ++i) {
        INFO("level ", int{level}, " ordinal ", i);
        CHECK(versions[i] == s.domain_version(domains[i]));
      }
    }
  };
  check_levels(state);
  std::mt19937_64 random(5);
  std::vector<WorkloadId> running;
  for (std::uint64_t id = 1; id <= 40; ++id) {
    if (!running.empty() && random() % 3 == 0) {
      const std::size_t at = random() % running.size();
      state.remove(running[at]);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(at));
    } else {
      const Workload job = test::gpu_job(id, 100, 1 + static_cast<std::int32_t>(random() % 2), 1,
                                         TopologyRequirement::guaranteed("numa"));
      const auto found = find_placement(state, job);
      if (!found.found) continue;  // full
      state.add(job, found.placement);
      running.push_back(job.id);
    }
    check_levels(state);
  }
  const Allocation copy = state;  // copies carry them
  check_levels(copy);
  CHECK_THROWS_AS((void)state.versions_at(static_cast<LevelIndex>(topology.host_level() + 1)),
                  std::out_of_range);
}

TEST_CASE("changed_since lists every domain whose version moved, and refuses what it cannot know") {
  Allocation state(test::shared(shapes::cluster(shapes::dense_8gpu_server(), 4, 2)));
  const Topology& topology = state.topology();
  std::mt19937_64 random(7);
  std::vector<WorkloadId> running;
  std::uint64_t next_id = 1;
  for (int round = 0; round < 40; ++round) {
    const auto before = all_versions(state);
    const std::uint64_t since = state.domain_version(Topology::root());
    const int changes = static_cast<int>(random() % 4);  // 0: nothing changed, nothing listed
    for (int c = 0; c < changes; ++c) {
      if (!running.empty() && random() % 2 == 0) {
        const std::size_t pick = random() % running.size();
        state.remove(running[pick]);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(pick));
      } else {
        const Workload job =
            test::gpu_job(next_id++, 100, 1 + static_cast<std::int32_t>(random() % 4), 1,
                          TopologyRequirement::guaranteed("node"));
        if (find_placement(state, job).found) {
          test::start(state, job);
          running.push_back(job.id);
        }
      }
    }
    std::vector<DomainId> changed{DomainId{0}};  // kept: the log appends
    REQUIRE(state.changed_since(since, changed));
    CHECK(changed.front() == DomainId{0});
    // Each moved domain is a listed domain or an ancestor of one.
    for (const DomainId d : moved(before, all_versions(state))) {
      INFO("round ", round, " domain ", topology.describe(d));
      CHECK(std::any_of(changed.begin() + 1, changed.end(),
                        [&](DomainId c) { return topology.contains(d, c); }));
    }
    if (moved(before, all_versions(state)).empty()) CHECK(changed.size() == 1);
  }
  SUBCASE("a version this state never had, or one the log no longer reaches, is refused") {
    std::vector<DomainId> changed;
    CHECK_FALSE(state.changed_since(0x1234567ULL, changed));
    CHECK(changed.empty());
    const std::uint64_t since = state.domain_version(Topology::root());
    // More entries than the log keeps (at least 256): add and remove one job again and again.
    const Workload job = test::gpu_job(next_id, 100, 1, 1, TopologyRequirement::guaranteed("node"));
    const Placement where = find_placement(state, job).placement;
    for (int i = 0; i < 5000; ++i) {
      state.add(job, where);
      state.remove(job.id);
    }
    CHECK_FALSE(state.changed_since(since, changed));
    CHECK(changed.empty());
  }
  SUBCASE("a root version seen on a copy answers on the copy's descendants") {
    Allocation copy = state;
    const std::uint64_t since = copy.domain_version(Topology::root());
    const Workload job = test::gpu_job(next_id, 100, 1, 1, TopologyRequirement::guaranteed("node"));
    test::start(state, job);
    std::vector<DomainId> changed;
    REQUIRE(state.changed_since(since, changed));
    CHECK_FALSE(changed.empty());
    // The copy then diverges: the original's version after the change is not in its history.
    test::start(copy,
                test::gpu_job(next_id + 1, 100, 2, 1, TopologyRequirement::guaranteed("node")));
    std::vector<DomainId> none;
    CHECK_FALSE(copy.changed_since(state.domain_version(Topology::root()), none));
  }
}

}  // namespace topopreempt
