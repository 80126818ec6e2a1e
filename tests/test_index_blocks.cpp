// SPDX-License-Identifier: MIT
// The preemption index's blocks (issue 36, item 1): the domains above the hosts under a parent
// with many children (the racks of a large cluster's root) are gathered into blocks of
// consecutive siblings, each with bands folded from its members'. A block's bands equal a
// recount over its members after any change sequence, whatever the order the state was built
// in; a block's bound never exceeds any member's group bound; and the driver, which opens the
// root into blocks and a block into its members, finds the full scan's plans.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "relaxed_cost.hpp"
#include "topopreempt/model/cluster_generator.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/detail/preemption_context.hpp"
#include "topopreempt/solvers/greedy.hpp"

namespace topopreempt {
namespace {

constexpr std::uint32_t block_size = detail::PreemptionIndex::block_size;

/// Runs `check` under each of the four price models the bound tests hold the bounds to.
template <class Check>
void for_each_bound_model(Check&& check) {
  check(cost::weighted_sum<cost::lost_work, cost::reload_time>{});
  check(cost::lost_work{});
  check(cost::reload_time{0.5, 0.0});
  check(cost::priority_weighted{});
}

/// A cluster whose root holds `racks` racks of `per_rack` nodes.
GeneratedCluster wide_cluster(std::size_t racks, std::size_t per_rack, std::uint64_t seed,
                              double occupancy) {
  ClusterSpec spec;
  spec.nodes = racks * per_rack;
  spec.nodes_per_rack = per_rack;
  spec.seed = seed;
  spec.elastic_fraction = 0.5;
  spec.target_occupancy = occupancy;
  return generate_cluster(spec);
}

/// rack16 (two replicas of 8 GPUs, each on its own host of one rack) at the generated
/// preemptor's priority, 700 and 400: the preemptors of the rack-gang tests.
std::vector<Workload> rack_gang_preemptors() {
  std::vector<Workload> preemptors;
  for (const std::int32_t priority : {generated_priority::preemptor, 700, 400}) {
    PreemptorSpec spec{PreemptorKind::rack_gang, 16, 2};
    spec.priority = priority;
    preemptors.push_back(make_preemptor(spec));
  }
  return preemptors;
}

/// The racks (domains of the level above the hosts) of block b.
std::vector<DomainId> members_of(const Allocation& state, std::uint32_t b) {
  const Topology& topology = state.topology();
  const auto [first, last] = state.index_block_ordinals(b);
  const auto level = static_cast<LevelIndex>(topology.host_level() - 1);
  const auto all = topology.domains_at(level);
  return {all.begin() + first, all.begin() + last};
}

/// How many blocks `state` has (they are numbered from 0, in ascending member order).
std::uint32_t block_count(const Allocation& state) {
  const Topology& topology = state.topology();
  const auto level = static_cast<LevelIndex>(topology.host_level() - 1);
  std::uint32_t count = 0;
  for (const DomainId d : topology.domains_at(level)) {
    const std::uint32_t b = state.index_block_of(d);
    if (b != Allocation::index_no_block) count = std::max(count, b + 1);
  }
  return count;
}

/// One random change: the last departed workload in `gone` comes back when `arrival` (and one
/// has left), else a random workload shrinks by a replica (when it can, half the time) or
/// leaves (kept in `gone`).
void random_change(Allocation& state, std::vector<std::pair<Workload, Placement>>& gone,
                   std::mt19937_64& random, bool arrival) {
  const std::vector<WorkloadId> ids = state.workload_ids();
  const WorkloadId id = ids[random() % ids.size()];
  const Workload& workload = state.workload(id);
  if (arrival && !gone.empty()) {
    state.add(gone.back().first, gone.back().second);
    gone.pop_back();
  } else if (workload.shrinkable_replicas() > 0 && random() % 2 == 0) {
    const std::array<std::int32_t, 1> drop{0};
    state.shrink(id, drop);
  } else {
    gone.emplace_back(workload, state.placement(id));
    state.remove(id);
  }
}

/// Recount of block b's bands below `priority` (as a parent's bands are over its children's).
std::vector<IndexBand> recount_block_bands(const Allocation& state, std::uint32_t b,
                                           std::int32_t priority) {
  const Topology& topology = state.topology();
  const std::vector<DomainId> members = members_of(state, b);
  return test::recount_bands_where(state, priority, [&](DomainId entry) {
    return std::any_of(members.begin(), members.end(),
                       [&](DomainId member) { return topology.contains(member, entry); });
  });
}


/// Every block's bands equal their recount, for every priority in `priorities`.
void check_blocks(const Allocation& state, const std::vector<std::int32_t>& priorities) {
  const std::uint32_t blocks = block_count(state);
  REQUIRE(blocks > 0);
  for (std::uint32_t b = 0; b < blocks; ++b) {
    for (const std::int32_t priority : priorities) {
      const std::vector<IndexBand> bands = recount_block_bands(state, b, priority);
      std::size_t visited = 0;
      INFO("block ", b, " priority ", priority);
      state.for_each_index_block_band(b, priority, [&](const IndexBand& band) {
        REQUIRE(visited < bands.size());
        const IndexBand& want = bands[visited++];
        CHECK(band.priority == want.priority);
        CHECK(band.least_lost_work_per_entry == want.least_lost_work_per_entry);
        CHECK(band.least_model_gib_per_entry == want.least_model_gib_per_entry);
        CHECK(band.most_entries_per_victim == want.most_entries_per_victim);
        CHECK(band.second_least_lost_work_per_entry == want.second_least_lost_work_per_entry);
        CHECK(band.entries_of_least_lost_work == want.entries_of_least_lost_work);
        CHECK(band.least_lost_work_per_replica == want.least_lost_work_per_replica);
        CHECK(band.least_model_gib_per_replica == want.least_model_gib_per_replica);
      });
      CHECK(visited == bands.size());
    }
  }
}

std::vector<std::int32_t> held_priorities(const Allocation& state) {
  std::vector<std::int32_t> priorities{std::numeric_limits<std::int32_t>::max()};
  state.for_each_workload([&](const Workload& w) {
    priorities.push_back(w.priority);
    priorities.push_back(w.priority + 1);
  });
  std::sort(priorities.begin(), priorities.end());
  priorities.erase(std::unique(priorities.begin(), priorities.end()), priorities.end());
  return priorities;
}

/// The indexed decision is the full scan's: status, cost, victims, and every target considered.
void check_same_decision(const PreemptionPlan& lazy, const PreemptionPlan& eager) {
  CHECK(lazy.status == eager.status);
  CHECK(lazy.cost == doctest::Approx(eager.cost));
  CHECK(lazy.victims == eager.victims);
  CHECK(lazy.statistics.domains_considered == eager.statistics.domains_considered);
}

TEST_SUITE("index_blocks") {
  TEST_CASE("blocks gather runs of the root's racks, and only under a parent with many") {
    const GeneratedCluster wide = wide_cluster(block_size * 2 + 3, 1, 1, 0.5);
    const Allocation& state = wide.state;
    const Topology& topology = state.topology();
    const auto racks = topology.domains_at(static_cast<LevelIndex>(topology.host_level() - 1));
    REQUIRE(racks.size() == block_size * 2 + 3);
    CHECK(block_count(state) == 3);
    for (std::size_t i = 0; i < racks.size(); ++i)
      CHECK(state.index_block_of(racks[i]) == i / block_size);
    CHECK(state.index_block_ordinals(2) ==
          std::pair<std::uint32_t, std::uint32_t>{2 * block_size, 2 * block_size + 3});
    // Hosts and the root are in no block.
    CHECK(state.index_block_of(Topology::root()) == Allocation::index_no_block);
    CHECK(state.index_block_of(topology.domains_at(topology.host_level()).front()) ==
          Allocation::index_no_block);
    // A root of few racks has none: its own bands are the block's.
    const GeneratedCluster narrow = wide_cluster(block_size, 1, 1, 0.5);
    for (const DomainId rack :
         narrow.state.topology().domains_at(static_cast<LevelIndex>(topology.host_level() - 1)))
      CHECK(narrow.state.index_block_of(rack) == Allocation::index_no_block);
  }

  TEST_CASE("a block's bands equal a recount after random removals, shrinks and arrivals") {
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      GeneratedCluster cluster = wide_cluster(block_size + 4, 1, seed, 0.9);
      Allocation& state = cluster.state;
      const std::vector<std::int32_t> priorities = held_priorities(state);
      check_blocks(state, priorities);
      std::mt19937_64 random(11 + seed);
      std::vector<std::pair<Workload, Placement>> gone;
      for (int step = 0; step < 40 && state.size() > 0; ++step) {
        // Every fifth step a departed workload comes back: an arrival folds into the
        // block's extremes.
        random_change(state, gone, random, step % 5 == 4);
        INFO("seed ", seed, " step ", step);
        check_blocks(state, priorities);
      }
    }
  }

  TEST_CASE("a block's bands depend on the state, not on the order it was built in") {
    const GeneratedCluster cluster = wide_cluster(block_size + 2, 1, 5, 0.9);
    Allocation reversed(cluster.topology);
    std::vector<WorkloadId> ids = cluster.state.workload_ids();
    std::reverse(ids.begin(), ids.end());
    for (const WorkloadId id : ids)
      reversed.add(cluster.state.workload(id), cluster.state.placement(id));
    check_blocks(reversed, held_priorities(cluster.state));
  }

  TEST_CASE("band digests are the bands': a rebuilt state's, and moved whenever a band moves") {
    // What a decider keeps a bound by (`kept_cover_bound`): a digest of every priority's
    // bands of a domain above the hosts or of a block. A function of the bands alone, so a
    // state built afresh from the same workloads (in another order) has the same digests; and
    // a change that moves any band (every priority's, bit for bit) moves the digest.
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      GeneratedCluster cluster = wide_cluster(block_size + 4, 2, seed, 0.9);
      Allocation& state = cluster.state;
      const Topology& topology = state.topology();
      const std::uint32_t blocks = block_count(state);
      REQUIRE(blocks > 0);
      std::vector<DomainId> above_hosts;
      for (LevelIndex level = 0; level < topology.host_level(); ++level) {
        for (const DomainId d : topology.domains_at(level)) above_hosts.push_back(d);
      }
      const auto all_bands = [&](auto&& for_each) {
        std::vector<std::uint64_t> words;
        const auto bits = [](double x) { return std::bit_cast<std::uint64_t>(x); };
        for_each([&](const IndexBand& band) {
          words.insert(words.end(),
                       {static_cast<std::uint64_t>(band.priority),
                        bits(band.least_lost_work_per_entry), bits(band.least_model_gib_per_entry),
                        static_cast<std::uint64_t>(band.most_entries_per_victim),
                        bits(band.second_least_lost_work_per_entry),
                        static_cast<std::uint64_t>(band.entries_of_least_lost_work),
                        bits(band.least_lost_work_per_replica),
                        bits(band.least_model_gib_per_replica)});
        });
        return words;
      };
      constexpr std::int32_t every = std::numeric_limits<std::int32_t>::max();
      const auto snapshot = [&](const Allocation& s) {
        std::vector<std::pair<std::uint64_t, std::vector<std::uint64_t>>> out;
        for (const DomainId d : above_hosts) {
          out.emplace_back(s.index_band_digest(d), all_bands([&](const auto& visit) {
                             s.for_each_index_band(d, every, visit);
                           }));
        }
        for (std::uint32_t b = 0; b < blocks; ++b) {
          out.emplace_back(s.index_block_band_digest(b), all_bands([&](const auto& visit) {
                             s.for_each_index_block_band(b, every, visit);
                           }));
        }
        return out;
      };
      std::mt19937_64 random(31 + seed);
      std::vector<std::pair<Workload, Placement>> gone;
      auto before = snapshot(state);
      std::size_t moved = 0;
      for (int step = 0; step < 40 && state.size() > 0; ++step) {
        random_change(state, gone, random, step % 4 == 3);
        INFO("seed ", seed, " step ", step);
        const auto after = snapshot(state);
        // A state built afresh from the same workloads, in reverse order.
        Allocation rebuilt(cluster.topology);
        std::vector<WorkloadId> now = state.workload_ids();
        std::reverse(now.begin(), now.end());
        for (const WorkloadId w : now) rebuilt.add(state.workload(w), state.placement(w));
        const auto fresh = snapshot(rebuilt);
        REQUIRE(after.size() == before.size());
        for (std::size_t i = 0; i < after.size(); ++i) {
          INFO("entry ", i, " (domains above the hosts, then blocks)");
          CHECK(after[i].first == fresh[i].first);
          if (after[i].second != before[i].second) {
            CHECK(after[i].first != before[i].first);
            ++moved;
          }
        }
        before = after;
      }
      CHECK(moved > 0);
    }
    // Hosts keep no band digest: asked for one, the state names the domain.
    const GeneratedCluster cluster = wide_cluster(2, 1, 1, 0.5);
    const DomainId host = cluster.state.topology().domains_at(
        cluster.state.topology().host_level()).front();
    const std::string named = "domain " + std::to_string(host.value) + " is not above";
    CHECK_THROWS_WITH_AS((void)cluster.state.index_band_digest(host),
                         doctest::Contains(named.c_str()), std::out_of_range);
  }

  TEST_CASE("a block's bound bounds every member's targets, under priced models") {
    const std::array<PreemptorSpec, 4> kinds{{{PreemptorKind::numa, 4},
                                              {PreemptorKind::nvlink_island, 4},
                                              {PreemptorKind::node, 8},
                                              {PreemptorKind::nvlink_island, 8}}};
    std::size_t blocks_checked = 0;
    std::size_t above_floor = 0;
    std::size_t targets_checked = 0;
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      const GeneratedCluster cluster =
          wide_cluster(block_size + 5, 1 + seed % 2, seed, seed % 3 == 0 ? 1.0 : 0.9);
      const Allocation& state = cluster.state;
      const Topology& topology = state.topology();
      for (const PreemptorSpec& kind : kinds) {
        for (const std::int32_t priority : {generated_priority::preemptor, 700, 400}) {
          PreemptorSpec with_priority = kind;
          with_priority.priority = priority;
          const Workload preemptor = make_preemptor(with_priority);
          const auto check = [&](const auto& model) {
            using Model = std::decay_t<decltype(model)>;
            const detail::PreemptionContext<Model> context(state, preemptor, model);
            const double floor = least_price_of(model);
            const double grid = cost_grid_of(model);
            for (const detail::Tier& tier : context.tiers()) {
              if (!context.grouped(tier)) continue;
              for (std::uint32_t b = 0; b < block_count(state); ++b) {
                const double bound = context.block_price_bound(tier, b, floor, grid);
                CHECK(bound >= floor);
                above_floor += bound > floor ? 1 : 0;
                ++blocks_checked;
                for (const DomainId rack : members_of(state, b)) {
                  INFO(preemptor.label(), " ", Model::name, " block ", b, " rack ", rack.value);
                  // No larger than a member's own bound, unless the member's is the floor its
                  // bands fall back to when they hold too few entries (it has no plan then).
                  const double rack_bound = context.group_price_bound(tier, rack, floor, grid);
                  CHECK((bound <= rack_bound || rack_bound == floor));
                  // And a lower bound on every target under it (those that have a plan).
                  const std::int64_t demand = static_cast<std::int64_t>(tier.demand.replicas) *
                                              tier.demand.whole_devices;
                  for (const DomainId target : context.targets(tier)) {
                    if (!topology.contains(rack, target)) continue;
                    const std::int64_t need = demand - state.idle_devices(target);
                    if (need <= 0 || demand > topology.device_count(target)) continue;
                    const double least =
                        test::least_relaxed_cost(state, target, preemptor.priority, need, model);
                    if (!std::isfinite(least)) continue;  // hopeless: no plan to bound
                    CHECK(bound <= least);
                    ++targets_checked;
                  }
                }
              }
            }
          };
          for_each_bound_model(check);
        }
      }
    }
    CHECK(blocks_checked > 0);
    CHECK(targets_checked > blocks_checked);
    // Not the floor in disguise: many blocks are bounded above it.
    CHECK(above_floor > blocks_checked / 4);
  }

  TEST_CASE("a block's and a rack's gang bounds bound every gang plan, under priced models") {
    // rack16: two replicas of 8 GPUs, each on its own host of one rack. The exact relaxation of
    // a rack's optimum: over every pair of its hosts, the least cost that frees d - idle on
    // both at once (test::least_relaxed_gang_cost).
    std::size_t blocks_checked = 0;
    std::size_t above_floor = 0;
    std::size_t racks_checked = 0;
    std::size_t racks_above_floor = 0;
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
      const std::size_t per_rack = 2 + seed % 3;
      const GeneratedCluster cluster =
          wide_cluster(block_size + 5, per_rack, seed, seed % 3 == 0 ? 1.0 : 0.85 + 0.02 * seed);
      const Allocation& state = cluster.state;
      const Topology& topology = state.topology();
      for (const Workload& preemptor : rack_gang_preemptors()) {
        const auto check = [&](const auto& model) {
          using Model = std::decay_t<decltype(model)>;
          const detail::PreemptionContext<Model> context(state, preemptor, model);
          const double floor = least_price_of(model);
          const double grid = cost_grid_of(model);
          std::size_t gang_tiers = 0;
          for (const detail::Tier& tier : context.tiers()) {
            if (!context.gang_blocks(tier)) continue;
            ++gang_tiers;
            REQUIRE(tier.demand.replicas == 2);
            const std::int64_t d = tier.demand.whole_devices;
            for (std::uint32_t b = 0; b < block_count(state); ++b) {
              const double bound = context.block_gang_bound(tier, b, floor, grid);
              CHECK(bound >= floor);
              above_floor += bound > floor ? 1 : 0;
              ++blocks_checked;
              for (const DomainId rack : members_of(state, b)) {
                if (!std::binary_search(context.targets(tier).begin(),
                                        context.targets(tier).end(), rack))
                  continue;
                INFO(preemptor.label(), " ", Model::name, " seed ", seed, " block ", b, " rack ",
                     rack.value);
                // No larger than the rack's own per-host bound, unless that is the floor it
                // falls back to (too few hosts it can ready: no plan there): so the racks of
                // an opened block come up in the order they would one by one.
                const double own = context.per_host_index_bound(tier, rack, floor, grid);
                CHECK((bound <= own || own == floor));
                // The same bound from the rack's own bands and hosts (the rack's key until its
                // per-host bound is taken): no larger either.
                const double rack_bound = context.target_gang_bound(tier, rack, floor, grid);
                CHECK(rack_bound >= floor);
                CHECK((rack_bound <= own || own == floor));
                racks_above_floor += rack_bound > floor ? 1 : 0;
                // And a lower bound on every plan in the rack: on each pair of its hosts.
                const auto hosts = topology.domains_at(topology.host_level(), rack);
                double least = std::numeric_limits<double>::infinity();
                bool ready_pair = false;
                for (std::size_t i = 0; i < hosts.size(); ++i) {
                  for (std::size_t j = i + 1; j < hosts.size(); ++j) {
                    const std::vector<DomainId> pair{hosts[i], hosts[j]};
                    const std::vector<std::int64_t> needs{
                        std::max<std::int64_t>(0, d - state.idle_devices(hosts[i])),
                        std::max<std::int64_t>(0, d - state.idle_devices(hosts[j]))};
                    if (needs[0] == 0 && needs[1] == 0) ready_pair = true;
                    least = std::min(least, test::least_relaxed_gang_cost(
                                                state, pair, needs, preemptor.priority, model));
                  }
                }
                // A pair ready already: the floor stands for another dimension's plan.
                if (ready_pair || !std::isfinite(least)) continue;
                CHECK(bound <= least);
                CHECK(rack_bound <= least);
                CHECK(own <= least);
                ++racks_checked;
              }
            }
          }
          CHECK(gang_tiers > 0);
        };
        for_each_bound_model(check);
      }
    }
    CHECK(blocks_checked > 0);
    CHECK(racks_checked > blocks_checked);
    // Not the floor in disguise: most blocks and racks are bounded above it.
    CHECK(above_floor > blocks_checked / 2);
    CHECK(racks_above_floor > racks_checked / 2);
  }

  TEST_CASE("rack gangs pruned through blocks are listed by their per-host bounds") {
    // A block opened only to list pruned racks keys each rack by its rack-gang bound and takes
    // its per-host bound (every host's bands) only when it comes up: each listed rack must
    // still be listed by that bound (or, as before, by its rack-level bound once that alone
    // cannot win), in ascending order. A rack listed by its cheaper key, or re-keyed without
    // its group's bound, fails here.
    std::size_t listed = 0;
    std::size_t above_gang_bound = 0;
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      const GeneratedCluster cluster =
          wide_cluster(4 * block_size + 3, 32, seed, seed % 2 == 0 ? 0.9 : 0.95);
      const Allocation& state = cluster.state;
      for (const Workload& preemptor : rack_gang_preemptors()) {
        const auto check = [&](const auto& model) {
          using Model = std::decay_t<decltype(model)>;
          const detail::PreemptionContext<Model> context(state, preemptor, model);
          const double floor = least_price_of(model);
          const double grid = cost_grid_of(model);
          detail::SearchLimits limits;
          const solvers::detail::BranchAndBoundSearch exact(limits, detail::Clock::now());
          for (const PreemptionPlan& plan :
               {detail::solve_with("branch_and_bound", state, preemptor, model, exact, limits),
                detail::solve_with("greedy", state, preemptor, model,
                                   solvers::detail::GreedySearch{}, limits)}) {
            if (!plan.has_victims_plan()) continue;
            const detail::Tier* gang = nullptr;
            for (const detail::Tier& tier : context.tiers())
              if (context.gang_blocks(tier)) gang = &tier;
            REQUIRE(gang != nullptr);
            double previous = -std::numeric_limits<double>::infinity();
            for (const DomainVerdict& verdict : plan.rejected) {
              if (verdict.kind != RejectionKind::bound_unread &&
                  verdict.kind != RejectionKind::bound)
                continue;
              INFO(preemptor.label(), " ", Model::name, " seed ", seed, " rack ",
                   verdict.domain.value);
              CHECK(verdict.value >= previous);  // the closest first
              previous = verdict.value;
              CHECK(verdict.value >= plan.cost);
              if (verdict.kind != RejectionKind::bound_unread) continue;
              const double banded =
                  context.index_price_bound(*gang, verdict.domain, floor, grid, false);
              const double per_host =
                  context.index_price_bound(*gang, verdict.domain, floor, grid, true);
              CHECK((verdict.value >= per_host || (banded >= plan.cost && verdict.value >= banded)));
              above_gang_bound +=
                  verdict.value > context.target_gang_bound(*gang, verdict.domain, floor, grid)
                      ? 1
                      : 0;
              ++listed;
            }
          }
        };
        for_each_bound_model(check);
      }
    }
    CHECK(listed > 100);
    // Listed by more than their keys: the per-host bounds were taken.
    CHECK(above_gang_bound > listed / 2);
  }

  TEST_CASE("groups open in the order of their bounds: pruned domains are listed closest first") {
    // An opened group's children wait in the heap as one run that gives them up in ascending
    // (bound, id), the order they would come up in pushed one by one. A run out of that order
    // opens groups late, and lists their targets after farther ones, or not at all.
    const cost::weighted_sum<cost::lost_work, cost::reload_time> priced{};
    std::size_t listed = 0;
    std::size_t plans = 0;
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      const GeneratedCluster cluster = wide_cluster(2 * block_size + 3, 4, seed, 0.95);
      for (const PreemptorSpec& kind : {PreemptorSpec{PreemptorKind::numa, 4},
                                        PreemptorSpec{PreemptorKind::nvlink_island, 4},
                                        PreemptorSpec{PreemptorKind::socket, 4},
                                        PreemptorSpec{PreemptorKind::node, 8}}) {
        const Workload preemptor = make_preemptor(kind);
        detail::SearchLimits limits;
        const solvers::detail::BranchAndBoundSearch exact(limits, detail::Clock::now());
        for (const PreemptionPlan& plan :
             {detail::solve_with("branch_and_bound", cluster.state, preemptor, priced, exact,
                                 limits),
              detail::solve_with("greedy", cluster.state, preemptor, priced,
                                 solvers::detail::GreedySearch{}, limits)}) {
          if (!plan.has_victims_plan()) continue;
          ++plans;
          std::optional<std::pair<double, DomainId>> previous;
          for (const DomainVerdict& verdict : plan.rejected) {
            if (verdict.kind != RejectionKind::bound_unread && verdict.kind != RejectionKind::bound)
              continue;
            INFO(preemptor.label(), " seed ", seed, " domain ", verdict.domain.value);
            const std::pair<double, DomainId> key{verdict.value, verdict.domain};
            if (previous) CHECK(*previous < key);
            previous = key;
            ++listed;
          }
        }
      }
    }
    CHECK(plans > 12);
    CHECK(listed > 100);
  }

  TEST_CASE("decisions through blocks equal the full scan's") {
    const cost::weighted_sum<cost::lost_work, cost::reload_time> priced{};
    const std::array<PreemptorSpec, 8> kinds{{{PreemptorKind::numa, 1},
                                              {PreemptorKind::best_effort, 1},
                                              {PreemptorKind::nvlink_island, 4},
                                              {PreemptorKind::numa, 4},
                                              {PreemptorKind::socket, 4},
                                              {PreemptorKind::node, 8},
                                              {PreemptorKind::nvlink_island, 8},
                                              {PreemptorKind::rack_gang, 16, 2}}};
    std::size_t decided = 0;
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      const GeneratedCluster cluster = wide_cluster(2 * block_size + 3, 2, seed, 0.92);
      const GeneratedCluster saturated = wide_cluster(2 * block_size + 3, 2, seed, 1.0);
      for (const PreemptorSpec& kind : kinds) {
        const Allocation& state = kind.gpus == 1 ? saturated.state : cluster.state;
        for (const std::int32_t priority : {generated_priority::preemptor, 700, 400}) {
          PreemptorSpec with_priority = kind;
          with_priority.priority = priority;
          const Workload preemptor = make_preemptor(with_priority);
          detail::SearchLimits indexed;
          detail::SearchLimits full;
          full.full_scan = true;
          const solvers::detail::BranchAndBoundSearch exact(indexed, detail::Clock::now());
          const PreemptionPlan lazy =
              detail::solve_with("branch_and_bound", state, preemptor, priced, exact, indexed);
          const PreemptionPlan eager =
              detail::solve_with("branch_and_bound", state, preemptor, priced, exact, full);
          INFO(preemptor.label(), " seed ", seed);
          check_same_decision(lazy, eager);
          const PreemptionPlan greedy_lazy = detail::solve_with(
              "greedy", state, preemptor, priced, solvers::detail::GreedySearch{}, indexed);
          const PreemptionPlan greedy_eager = detail::solve_with(
              "greedy", state, preemptor, priced, solvers::detail::GreedySearch{}, full);
          CHECK(greedy_lazy.has_victims_plan() == greedy_eager.has_victims_plan());
          decided += lazy.has_victims_plan() ? 1 : 0;
        }
      }
    }
    CHECK(decided > 30);  // most decisions preempt
  }

  TEST_CASE("rack gangs through blocks equal the full scan's, however many hosts a rack has") {
    // The racks are the targets: the root opens into blocks keyed by the per-host gang bound,
    // a block into its racks. Racks of 2 to 6 hosts, busy to saturated, priced models.
    std::size_t decided = 0;
    std::size_t gang_blocked = 0;
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
      const std::size_t per_rack = 2 + seed % 5;
      const GeneratedCluster cluster = wide_cluster(2 * block_size + 3, per_rack, seed,
                                                    std::array{0.8, 0.9, 0.95, 1.0}[seed % 4]);
      const Allocation& state = cluster.state;
      for (const Workload& preemptor : rack_gang_preemptors()) {
        const auto decide = [&](const auto& model) {
          using Model = std::decay_t<decltype(model)>;
          const detail::PreemptionContext<Model> context(state, preemptor, model);
          for (const detail::Tier& tier : context.tiers())
            gang_blocked += context.gang_blocks(tier) ? 1 : 0;
          detail::SearchLimits indexed;
          detail::SearchLimits full;
          full.full_scan = true;
          const solvers::detail::BranchAndBoundSearch exact(indexed, detail::Clock::now());
          const PreemptionPlan lazy =
              detail::solve_with("branch_and_bound", state, preemptor, model, exact, indexed);
          const PreemptionPlan eager =
              detail::solve_with("branch_and_bound", state, preemptor, model, exact, full);
          INFO(preemptor.label(), " ", Model::name, " seed ", seed);
          check_same_decision(lazy, eager);
          CHECK(lazy.statistics.domains_pruned + lazy.statistics.domains_solved <=
                lazy.statistics.domains_considered);
          decided += lazy.has_victims_plan() ? 1 : 0;
        };
        decide(cost::weighted_sum<cost::lost_work, cost::reload_time>{});
        decide(cost::lost_work{});
        decide(cost::priority_weighted{});
      }
    }
    CHECK(gang_blocked > 0);
    CHECK(decided > 24);  // most decisions preempt
  }
}

}  // namespace
}  // namespace topopreempt
