// SPDX-License-Identifier: MIT
// The preemption index (issue 10, item 1): Allocation's per-domain summary of what preemptible
// workloads hold per priority stays equal to a recount after any change sequence (exact at and
// above the host level, the host's answer below it), and the
// solve driver that reads domains lazily by it finds the same costs and statuses as the full
// scan, deterministically, with every rejected domain counted.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "relaxed_cost.hpp"
#include "support.hpp"
#include "topopreempt/model/cluster_generator.hpp"
#include "topopreempt/plan/verifier.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/solvers/detail/preemption_context.hpp"
#include "topopreempt/solvers/greedy.hpp"
#include "topopreempt/solvers/knapsack.hpp"

namespace topopreempt {
namespace {

/// Recount of what `preemptible_below` should answer: every entry of every preemptible workload
/// of priority < `priority` inside d's subtree.
struct Recount {
  std::vector<Amount> amounts;
  std::int64_t device_entries = 0;
};

Recount recount(const Allocation& state, DomainId d, std::int32_t priority) {
  const Topology& topology = state.topology();
  Recount result;
  result.amounts.assign(topology.schema().size(), 0);
  for (const WorkloadId id : state.workload_ids()) {
    const Workload& workload = state.workload(id);
    if (!workload.preemptible || workload.priority >= priority) continue;
    for (const auto& replica : state.placement(id).replicas) {
      for (const auto& entry : replica.entries) {
        if (!topology.contains(d, entry.domain)) continue;
        if (topology.is_device(entry.domain)) ++result.device_entries;
        for (std::size_t dim = 0; dim < result.amounts.size(); ++dim) {
          result.amounts[dim] += entry.amount(static_cast<Eigen::Index>(dim));
        }
      }
    }
  }
  return result;
}

/// A model whose prices undercut the floor it declares.
struct lying {
  static constexpr std::string_view name = "lying";
  [[nodiscard]] double evict(const Workload&) const noexcept { return 0.5; }
  [[nodiscard]] double shrink(const Workload&, std::int32_t) const noexcept { return 0.5; }
  [[nodiscard]] double least_price() const noexcept { return 1.0; }
};

/// Recount of what `for_each_index_band` should visit in d's subtree.
std::vector<IndexBand> recount_bands(const Allocation& state, DomainId d, std::int32_t priority) {
  const Topology& topology = state.topology();
  return test::recount_bands_where(
      state, priority, [&](DomainId entry) { return topology.contains(d, entry); });
}

/// A model whose prices (1 per victim) undercut the index price rate it declares (1 per device
/// entry) for any victim of two or more devices.
struct undercut {
  static constexpr std::string_view name = "undercut";
  [[nodiscard]] double evict(const Workload&) const noexcept { return 1.0; }
  [[nodiscard]] double shrink(const Workload&, std::int32_t) const noexcept { return 1.0; }
  [[nodiscard]] PriceRate index_price_rate(const IndexBand&) const noexcept { return {0.0, 1.0}; }
};

/// A model whose prices (1 + the replicas dropped) undercut the least action price it declares
/// (3) for an action that drops one replica.
struct undercut_action {
  static constexpr std::string_view name = "undercut_action";
  [[nodiscard]] double evict(const Workload& w) const noexcept { return 1.0 + w.replicas; }
  [[nodiscard]] double shrink(const Workload&, std::int32_t dropped) const noexcept {
    return 1.0 + dropped;
  }
  [[nodiscard]] PriceRate index_price_rate(const IndexBand&) const noexcept { return {1.0, 0.0}; }
  [[nodiscard]] double index_action_price(const IndexBand&) const noexcept { return 3.0; }
};

/// Exact at and above the host level; below it, the host's answer.
void check_index(const Allocation& state, const std::vector<std::int32_t>& priorities) {
  const Topology& topology = state.topology();
  for (std::uint32_t d = 0; d < topology.size(); ++d) {
    const DomainId domain{d};
    DomainId indexed = domain;
    while (topology.level(indexed) > topology.host_level()) indexed = topology.parent(indexed);
    for (const std::int32_t priority : priorities) {
      const Recount expected = recount(state, indexed, priority);
      CHECK(state.preemptible_device_entries_below(domain, priority) == expected.device_entries);
      const std::vector<IndexBand> bands = recount_bands(state, indexed, priority);
      std::size_t visited = 0;
      state.for_each_index_band(domain, priority, [&](const IndexBand& band) {
        REQUIRE(visited < bands.size());
        const IndexBand& want = bands[visited++];
        CHECK(band.priority == want.priority);
        CHECK(band.least_lost_work_per_entry == want.least_lost_work_per_entry);
        CHECK(band.least_model_gib_per_entry == want.least_model_gib_per_entry);
        CHECK(band.most_entries_per_victim == want.most_entries_per_victim);
        CHECK(band.second_least_lost_work_per_entry == want.second_least_lost_work_per_entry);
        CHECK(band.entries_of_least_lost_work == want.entries_of_least_lost_work);
        // Kept above the host level only; a host gives its per-entry leasts (no larger).
        if (topology.level(indexed) < topology.host_level()) {
          CHECK(band.least_lost_work_per_replica == want.least_lost_work_per_replica);
          CHECK(band.least_model_gib_per_replica == want.least_model_gib_per_replica);
        } else {
          CHECK(band.least_lost_work_per_replica == want.least_lost_work_per_entry);
          CHECK(band.least_model_gib_per_replica == want.least_model_gib_per_entry);
        }
      });
      CHECK(visited == bands.size());
      for (std::size_t dim = 0; dim < expected.amounts.size(); ++dim) {
        CHECK(state.preemptible_below(domain, priority, dim) == expected.amounts[dim]);
      }
    }
  }
}


/// Checks `index_price_bound` of every target of every tier against `least_relaxed_cost`;
/// returns how many targets got a bound above the declared price floor.
template <class Model>
std::size_t check_price_bounds(const Allocation& state, const Workload& preemptor,
                               const Model& model) {
  check_price_sum(state, preemptor, model);  // validates the declarations (solvers check only what they read)
  const detail::PreemptionContext<Model> context(state, preemptor, model);
  const double floor = least_price_of(model);
  const double grid = cost_grid_of(model);
  std::size_t above_floor = 0;
  for (const detail::Tier& tier : context.tiers()) {
    for (const DomainId target : context.targets(tier)) {
      const double bound = context.index_price_bound(tier, target, floor, grid);
      CHECK(bound >= floor);
      const std::int64_t demand =
          static_cast<std::int64_t>(tier.demand.replicas) * tier.demand.whole_devices;
      const std::int64_t need = demand - state.idle_devices(target);
      if (need <= 0 || demand > state.topology().device_count(target)) continue;
      const double least = test::least_relaxed_cost(state, target, preemptor.priority, need, model);
      if (!std::isfinite(least)) continue;  // hopeless: no plan to bound
      INFO(Model::name, " ", preemptor.label(), " target ", target.value, " needs ", need);
      CHECK(bound <= least);
      above_floor += bound > floor ? 1 : 0;
      // Every group that holds the target (the root, racks, its host when the target lies
      // below it) bounds it too: the driver prunes a group whole by that bound.
      if (!context.grouped(tier)) continue;
      const Topology& topology = state.topology();
      for (DomainId group = topology.parent(target); group.valid();
           group = group == Topology::root() ? DomainId{} : topology.parent(group)) {
        if (topology.level(group) > topology.host_level()) continue;
        const double group_bound = context.group_price_bound(tier, group, floor, grid);
        INFO("group ", group.value);
        CHECK(group_bound >= floor);
        CHECK(group_bound <= least);
        above_floor += group_bound > floor ? 1 : 0;
      }
    }
  }
  return above_floor;
}

/// One rack of two 8-GPU hosts, nothing running (not even CPU-only pods).
GeneratedCluster two_empty_hosts() {
  ClusterSpec spec;
  spec.nodes = 2;
  spec.nodes_per_rack = 2;
  spec.target_occupancy = 0.0;
  spec.cpu_only_per_node = 0.0;
  return generate_cluster(spec);
}

TEST_SUITE("preemption_index") {
  TEST_CASE("the index equals a recount after random removals and shrinks") {
    // Checked after every change: a departure that set an extreme must recompute it then, or a
    // stale (lower) minimum would linger until some later change happened to recompute it.
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      ClusterSpec spec;
      spec.nodes = 6;
      spec.nodes_per_rack = 3;
      spec.elastic_fraction = 0.5;
      spec.seed = seed;
      GeneratedCluster cluster = generate_cluster(spec);
      Allocation& state = cluster.state;
      std::vector<std::int32_t> priorities{std::numeric_limits<std::int32_t>::min(), 0, 1};
      state.for_each_workload([&](const Workload& w) {
        priorities.push_back(w.priority);
        priorities.push_back(w.priority + 1);
      });
      std::sort(priorities.begin(), priorities.end());
      priorities.erase(std::unique(priorities.begin(), priorities.end()), priorities.end());
      check_index(state, priorities);
      std::mt19937_64 random(7 + seed);
      for (int step = 0; step < 24 && state.size() > 0; ++step) {
        const std::vector<WorkloadId> ids = state.workload_ids();
        const WorkloadId id = ids[random() % ids.size()];
        const Workload& workload = state.workload(id);
        if (workload.shrinkable_replicas() > 0) {
          const std::array<std::int32_t, 1> drop{0};
          state.shrink(id, drop);
        } else {
          state.remove(id);
        }
        INFO("seed ", seed, " step ", step);
        check_index(state, priorities);
      }
    }
  }

  TEST_CASE("a host's band digest answers as its rows, past its few bands and after removals") {
    // The digest keeps a host's first 4 device-holding bands: a host with more answers a
    // preemptor above the 4th from its rows, one below it from the digest, and every change
    // rewrites it. Six priorities over one host's 8 GPUs, checkpoints apart so that removals
    // move the extremes.
    const GeneratedCluster cluster = two_empty_hosts();
    Allocation state(cluster.topology);
    std::vector<std::int32_t> priorities{std::numeric_limits<std::int32_t>::min(), 0};
    for (std::uint64_t id = 1; id <= 12; ++id) {
      const auto priority = static_cast<std::int32_t>(10 * (1 + id % 6));
      Workload job = test::gpu_job(id, priority, 1);
      job.cost.seconds_since_checkpoint = 50.0 * static_cast<double>(id);
      job.cost.model_size_gib = static_cast<double>(id);
      (void)test::start(state, job);
      priorities.push_back(priority);
      priorities.push_back(priority + 1);
    }
    std::sort(priorities.begin(), priorities.end());
    priorities.erase(std::unique(priorities.begin(), priorities.end()), priorities.end());
    check_index(state, priorities);
    for (const std::uint64_t id : {3U, 9U, 1U, 7U, 12U, 2U, 6U}) {
      state.remove(WorkloadId{id});
      INFO("removed ", id);
      check_index(state, priorities);
    }
  }

  TEST_CASE("the index depends on the state, not on the order it was built in") {
    ClusterSpec spec;
    spec.nodes = 4;
    spec.nodes_per_rack = 2;
    const GeneratedCluster cluster = generate_cluster(spec);
    Allocation reversed(cluster.topology);
    std::vector<WorkloadId> ids = cluster.state.workload_ids();
    std::reverse(ids.begin(), ids.end());
    for (const WorkloadId id : ids)
      reversed.add(cluster.state.workload(id), cluster.state.placement(id));
    for (std::uint32_t d = 0; d < cluster.topology->size(); ++d) {
      for (const std::int32_t priority : {100, 500, 1000, 5000}) {
        CHECK(reversed.preemptible_device_entries_below(DomainId{d}, priority) ==
              cluster.state.preemptible_device_entries_below(DomainId{d}, priority));
        for (std::size_t dim = 0; dim < cluster.topology->schema().size(); ++dim) {
          CHECK(reversed.preemptible_below(DomainId{d}, priority, dim) ==
                cluster.state.preemptible_below(DomainId{d}, priority, dim));
        }
      }
    }
    // Removing everything empties the index and its rows.
    for (const WorkloadId id : ids) reversed.remove(id);
    CHECK(reversed.preemptible_below(Topology::root(), std::numeric_limits<std::int32_t>::max(),
                                     0) == 0);
    CHECK(reversed.preemptible_device_entries_below(Topology::root(),
                                                    std::numeric_limits<std::int32_t>::max()) == 0);
  }

  TEST_CASE("an unknown domain is named") {
    ClusterSpec spec;
    spec.nodes = 1;
    const GeneratedCluster cluster = generate_cluster(spec);
    const DomainId unknown{static_cast<std::uint32_t>(cluster.topology->size())};
    CHECK_THROWS_WITH_AS((void)cluster.state.preemptible_below(unknown, 0, 0),
                         doctest::Contains(std::to_string(unknown.value).c_str()),
                         std::out_of_range);
  }

  TEST_CASE("a model whose prices undercut its declared least_price is rejected") {
    static_assert(PriceFloorModel<lying>);
    static_assert(PriceFloorModel<cost::weighted_sum<cost::lost_work, cost::reload_time>>);
    static_assert(!PriceFloorModel<cost::priority_weighted>);
    static_assert(!PriceFloorModel<cost::weighted_sum<cost::lost_work, cost::priority_weighted>>);
    ClusterSpec spec;
    spec.nodes = 2;
    const GeneratedCluster cluster = generate_cluster(spec);
    const Workload preemptor = make_preemptor({PreemptorKind::node, 8});
    CHECK_THROWS_WITH_AS((void)solvers::greedy.solve(cluster.state, preemptor, lying{}),
                         doctest::Contains("least_price"), std::invalid_argument);
  }

  TEST_CASE("the index price bound never exceeds a domain's optimum, under every priced model") {
    using priced_sum = cost::weighted_sum<cost::lost_work, cost::reload_time>;
    static_assert(IndexPricedModel<cost::lost_work> && IndexPricedModel<cost::reload_time>);
    static_assert(IndexPricedModel<cost::priority_weighted> &&
                  IndexPricedModel<cost::kubernetes_order>);
    static_assert(IndexPricedModel<priced_sum> && !IndexPricedModel<cost::victim_count>);
    static_assert(IndexPricedModel<cost::weighted_sum<cost::victim_count, cost::lost_work>>);
    static_assert(!IndexPricedModel<cost::weighted_sum<cost::victim_count, cost::victim_count>>);
    const std::array<PreemptorSpec, 6> kinds{{{PreemptorKind::numa, 1},
                                              {PreemptorKind::numa, 4},
                                              {PreemptorKind::nvlink_island, 4},
                                              {PreemptorKind::socket, 4},
                                              {PreemptorKind::node, 8},
                                              {PreemptorKind::rack_gang, 16, 2}}};
    const std::array<std::int32_t, 3> priorities{generated_priority::preemptor, 700, 400};
    const std::array<double, 3> occupancies{0.6, 0.9, 1.0};
    std::size_t instances = 0;
    std::size_t above_floor = 0;
    for (std::uint64_t seed = 1; seed <= 120; ++seed) {
      ClusterSpec spec;
      spec.nodes = 2 + seed % 2;
      spec.nodes_per_rack = 2;
      spec.seed = seed;
      spec.elastic_fraction = 0.5;
      spec.target_occupancy = occupancies[seed % occupancies.size()];
      const GeneratedCluster cluster = generate_cluster(spec);
      const Allocation& state = cluster.state;
      const cost::kubernetes_order kubernetes = cost::kubernetes_order::of(state);
      for (const PreemptorSpec& kind : kinds) {
        PreemptorSpec with_priority = kind;
        with_priority.priority = priorities[(seed + instances) % priorities.size()];
        const Workload preemptor = make_preemptor(with_priority);
        ++instances;
        above_floor += check_price_bounds(state, preemptor, cost::lost_work{});
        above_floor += check_price_bounds(state, preemptor, cost::lost_work{0.0});
        above_floor += check_price_bounds(state, preemptor, cost::reload_time{});
        above_floor += check_price_bounds(state, preemptor, cost::reload_time{0.5, 0.0});
        above_floor += check_price_bounds(state, preemptor, cost::priority_weighted{});
        above_floor += check_price_bounds(state, preemptor, cost::priority_weighted{2.5});
        above_floor += check_price_bounds(state, preemptor, kubernetes);
        above_floor += check_price_bounds(state, preemptor, cost::kubernetes_order::of(state, 2.0));
        above_floor += check_price_bounds(state, preemptor, priced_sum{{}, {}, 1.0, 3.0});
        above_floor += check_price_bounds(state, preemptor, priced_sum{{}, {}, 1.0 / 3600.0, 0.1});
        above_floor += check_price_bounds(
            state, preemptor,
            cost::weighted_sum<cost::priority_weighted, cost::lost_work>{{}, {}, 1e-6, 1.0});
        above_floor +=
            check_price_bounds(state, preemptor,
                               cost::weighted_sum<cost::kubernetes_order, cost::reload_time>{
                                   kubernetes, {}, 1.0, 1.0});
        above_floor += check_price_bounds(
            state, preemptor,
            cost::weighted_sum<cost::victim_count, cost::lost_work>{{}, {}, 1.0, 1.0});
      }
    }
    CHECK(instances == 720);
    // The bound is not the floor in disguise: it lifts many domains above it.
    CHECK(above_floor > instances);
  }

  TEST_CASE("a group's bound charges one replica of its cheapest victim, not one entry") {
    // One rack of two full hosts, each held by one 8-GPU job: the cheaper checkpointed 100 s
    // ago. A 1-GPU preemptor needs one entry: at the cover's rate that is 100 GPU-seconds, but
    // no action frees less than a replica, which loses 800.
    const GeneratedCluster cluster = two_empty_hosts();
    Allocation state(cluster.topology);
    for (const auto& [id, seconds] : {std::pair{1, 100.0}, std::pair{2, 1000.0}}) {
      Workload job = test::gpu_job(static_cast<std::uint64_t>(id), 0, 8, 1,
                                   TopologyRequirement::guaranteed("node"));
      job.cost.seconds_since_checkpoint = seconds;
      job.cost.model_size_gib = 10.0;
      (void)test::start(state, job);
    }
    REQUIRE(state.idle_devices(Topology::root()) == 0);
    const Workload preemptor = make_preemptor({PreemptorKind::numa, 1});
    const cost::lost_work model{};
    const detail::PreemptionContext<cost::lost_work> context(state, preemptor, model);
    const detail::Tier& tier = context.tiers().front();
    REQUIRE(context.grouped(tier));
    const DomainId rack = state.topology().parent(state.topology().domains_at(
        state.topology().host_level(), Topology::root())[0]);
    REQUIRE(state.topology().level(rack) < state.topology().host_level());
    for (const DomainId group : {Topology::root(), rack}) {
      const double bound = context.group_price_bound(tier, group, least_price_of(model), 0.0);
      INFO("group ", group.value);
      CHECK(bound > 1.0 + 799.0);  // the cover alone: 1 + 100
      CHECK(bound <= 1.0 + 800.0);
    }
    // The optimum is that replica: the bound is tight.
    const PreemptionPlan plan = solvers::branch_and_bound.solve(state, preemptor, model);
    REQUIRE(plan.status == PlanStatus::optimal);
    CHECK(plan.cost == 801.0);
  }

  TEST_CASE("a model whose prices undercut its declared index_action_price is rejected") {
    static_assert(IndexActionPricedModel<undercut_action>);
    static_assert(IndexActionPricedModel<cost::lost_work> &&
                  IndexActionPricedModel<cost::reload_time> &&
                  IndexActionPricedModel<cost::kubernetes_order> &&
                  !IndexActionPricedModel<cost::priority_weighted>);
    static_assert(
        IndexActionPricedModel<cost::weighted_sum<cost::lost_work, cost::priority_weighted>>);
    ClusterSpec spec;
    spec.nodes = 2;
    spec.elastic_fraction = 1.0;
    const GeneratedCluster cluster = generate_cluster(spec);
    const Workload preemptor = make_preemptor({PreemptorKind::node, 8});
    // An elastic victim shrunk by one replica costs 2, below the declared 3.
    CHECK_THROWS_WITH_AS(check_price_sum(cluster.state, preemptor, undercut_action{}),
                         doctest::Contains("index_action_price"), std::invalid_argument);
  }

  TEST_CASE("a model whose prices undercut its declared index_price_rate is rejected") {
    static_assert(IndexPricedModel<undercut>);
    ClusterSpec spec;
    spec.nodes = 2;
    const GeneratedCluster cluster = generate_cluster(spec);
    const Workload preemptor = make_preemptor({PreemptorKind::node, 8});
    // Some victim holds 2+ devices: one action at 1 undercuts 1 per entry freed.
    CHECK_THROWS_WITH_AS((void)solvers::greedy.solve(cluster.state, preemptor, undercut{}),
                         doctest::Contains("index_price_rate"), std::invalid_argument);
  }

  /// The index path and the full scan agree on status and cost for `solver` and `model`; both
  /// account for every considered domain; the index path is deterministic.
  template <class Search, class Model>
  void compare_paths(std::string_view name, const Search& search, const Allocation& state,
                     const Workload& preemptor, const Model& model) {
    detail::SearchLimits indexed;
    detail::SearchLimits full;
    full.full_scan = true;
    const PreemptionPlan lazy = detail::solve_with(name, state, preemptor, model, search, indexed);
    const PreemptionPlan eager = detail::solve_with(name, state, preemptor, model, search, full);
    const PreemptionPlan again = detail::solve_with(name, state, preemptor, model, search, indexed);
    INFO(preemptor.label(), " ", name, " ", Model::name);
    // Both paths agree on whether a plan exists; an exact solver also on status and cost (a
    // heuristic's plan depends on which domain it searches first, and the index path may prove
    // a plan at the price floor optimal where the full scan cannot).
    CHECK(lazy.has_victims_plan() == eager.has_victims_plan());
    CHECK((lazy.status == PlanStatus::infeasible) == (eager.status == PlanStatus::infeasible));
    if (name == solvers::branch_and_bound_solver::name) {
      CHECK(lazy.status == eager.status);
      CHECK(lazy.cost == doctest::Approx(eager.cost));
    }
    CHECK(lazy.explanation == again.explanation);
    CHECK(lazy.statistics.domains_considered == eager.statistics.domains_considered);
    if (lazy.status == PlanStatus::optimal || lazy.status == PlanStatus::feasible) {
      CHECK(verify_plan(state, preemptor, lazy, model).ok);
      CHECK(lazy.rejected_total + 1 == lazy.statistics.domains_considered);
      CHECK(eager.rejected_total + 1 == eager.statistics.domains_considered);
    } else if (lazy.status == PlanStatus::infeasible) {
      CHECK(lazy.rejected_total == lazy.statistics.domains_considered);
    }
  }

  TEST_CASE("galloping from a running position finds what std::lower_bound finds") {
    // As a group's children take their runs of the group's targets: ascending probes, each
    // galloping from where the previous one ended.
    std::mt19937_64 generator(7);
    for (int round = 0; round < 500; ++round) {
      std::vector<int> sorted(generator() % 40);
      for (int& x : sorted) x = static_cast<int>(generator() % 50);
      std::sort(sorted.begin(), sorted.end());
      std::vector<int> probes(generator() % 8);
      for (int& x : probes) x = static_cast<int>(generator() % 55);
      std::sort(probes.begin(), probes.end());
      std::size_t from = 0;
      for (const int value : probes) {
        const auto expected = static_cast<std::size_t>(
            std::lower_bound(sorted.begin(), sorted.end(), value) - sorted.begin());
        from = detail::gallop_lower_bound(std::span<const int>(sorted), from, value);
        CHECK(from == expected);
      }
    }
  }

  TEST_CASE("reading domains lazily by the index finds the full scan's costs and statuses") {
    const cost::weighted_sum<cost::lost_work, cost::reload_time> priced{};
    const cost::victim_count counted;
    const cost::priority_weighted weighted;  // declares no floor, an index price rate
    for (const std::uint64_t seed : {1U, 2U, 3U}) {
      ClusterSpec spec;
      spec.nodes = 24;
      spec.nodes_per_rack = 8;
      spec.seed = seed;
      const GeneratedCluster cluster = generate_cluster(spec);
      spec.target_occupancy = 1.0;
      const GeneratedCluster saturated = generate_cluster(spec);
      std::vector<std::int32_t> held;  // every priority either state holds
      for (const Allocation* state : {&cluster.state, &saturated.state}) {
        state->for_each_workload([&](const Workload& w) { held.push_back(w.priority); });
      }
      const cost::kubernetes_order kubernetes(held);
      const std::vector<std::pair<PreemptorSpec, const Allocation*>> cases{
          {{PreemptorKind::numa, 1}, &saturated.state},
          {{PreemptorKind::best_effort, 1}, &saturated.state},
          {{PreemptorKind::nvlink_island, 4}, &cluster.state},
          {{PreemptorKind::numa, 4}, &cluster.state},
          {{PreemptorKind::socket, 4}, &cluster.state},
          {{PreemptorKind::best_effort, 4}, &cluster.state},
          {{PreemptorKind::node, 8}, &cluster.state},
          {{PreemptorKind::nvlink_island, 8}, &cluster.state},
          {{PreemptorKind::rack_gang, 16, 2}, &cluster.state}};
      for (const auto& [preemptor_spec, state] : cases) {
        for (const std::int32_t priority : {generated_priority::preemptor, 700, 400}) {
          PreemptorSpec with_priority = preemptor_spec;
          with_priority.priority = priority;
          const Workload preemptor = make_preemptor(with_priority);
          compare_paths("greedy", solvers::detail::GreedySearch{}, *state, preemptor, priced);
          compare_paths("greedy", solvers::detail::GreedySearch{}, *state, preemptor, counted);
          compare_paths("knapsack", solvers::detail::KnapsackSearch{}, *state, preemptor, priced);
          const detail::SearchLimits limits;
          const solvers::detail::BranchAndBoundSearch exact(limits, detail::Clock::now());
          compare_paths("branch_and_bound", exact, *state, preemptor, priced);
          compare_paths("branch_and_bound", exact, *state, preemptor, counted);
          compare_paths("branch_and_bound", exact, *state, preemptor, weighted);
          compare_paths("greedy", solvers::detail::GreedySearch{}, *state, preemptor, weighted);
          compare_paths("knapsack", solvers::detail::KnapsackSearch{}, *state, preemptor, weighted);
          compare_paths("branch_and_bound", exact, *state, preemptor, kubernetes);
          compare_paths("branch_and_bound", exact, *state, preemptor, cost::lost_work{});
          compare_paths("branch_and_bound", exact, *state, preemptor, cost::reload_time{});
        }
      }
    }
  }
}

}  // namespace
}  // namespace topopreempt
