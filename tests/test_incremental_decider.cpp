// SPDX-License-Identifier: MIT
// IncrementalDecider (issue 10, item 2): after any sequence of adds, removes and shrinks, the
// decider's plan is the cold solve's plan, for every solver, and it re-reads only the domains
// whose versions changed.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "topopreempt/model/cluster_generator.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/decisions/incremental_decider.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/greedy.hpp"
#include "topopreempt/solvers/knapsack.hpp"

namespace topopreempt {
namespace {

/// Lost work, except that one workload is priced at NaN: the price check must name it.
struct bad_price_for {
  static constexpr std::string_view name = "bad_price_for";
  WorkloadId bad;
  cost::lost_work base{};
  [[nodiscard]] double evict(const Workload& victim) const {
    return victim.id == bad ? std::numeric_limits<double>::quiet_NaN() : base.evict(victim);
  }
  [[nodiscard]] double shrink(const Workload& victim, std::int32_t dropped) const {
    return victim.id == bad ? std::numeric_limits<double>::quiet_NaN()
                            : base.shrink(victim, dropped);
  }
};

/// Every action costs `price`, declared uniform.
struct declared_uniform {
  static constexpr std::string_view name = "declared_uniform";
  double price = 1.0;
  double floor = 1.0;
  [[nodiscard]] double evict(const Workload&) const noexcept { return price; }
  [[nodiscard]] double shrink(const Workload&, std::int32_t) const noexcept { return price; }
  [[nodiscard]] double least_price() const noexcept { return floor; }
  [[nodiscard]] double uniform_price() const noexcept { return price; }
};

/// The message `call` throws as `std::invalid_argument` (empty if it does not throw).
template <class Call>
std::string error_of(Call&& call) {
  try {
    (void)call();
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return {};
}

/// Everything a plan says except its wall time.
void check_same_plan(const PreemptionPlan& warm, const PreemptionPlan& cold) {
  CHECK(warm.status == cold.status);
  CHECK(warm.cost == cold.cost);
  CHECK(warm.lower_bound == cold.lower_bound);
  CHECK(warm.target_domain == cold.target_domain);
  CHECK(warm.explanation == cold.explanation);
  CHECK(warm.rejected_total == cold.rejected_total);
  REQUIRE(warm.victims.size() == cold.victims.size());
  for (std::size_t v = 0; v < warm.victims.size(); ++v)
    CHECK(warm.victims[v].id == cold.victims[v].id);
  SolverStatistics a = warm.statistics;
  SolverStatistics b = cold.statistics;
  a.seconds = b.seconds = 0.0;
  CHECK(a == b);
  CHECK(warm.rejected == cold.rejected);  // the listed verdicts, values and order
  CHECK(warm == cold);                    // every field, the wall time aside
}

/// One random change: remove a workload (kept aside), shrink an elastic one, or start a removed
/// one again where it ran.
void change(Allocation& state, std::vector<std::pair<Workload, Placement>>& removed,
            std::mt19937_64& random) {
  const std::uint64_t dice = random() % 3;
  if (dice == 0 && !removed.empty()) {
    const std::size_t pick = random() % removed.size();
    state.add(removed[pick].first, removed[pick].second);
    removed.erase(removed.begin() + static_cast<std::ptrdiff_t>(pick));
    return;
  }
  const std::vector<WorkloadId> ids = state.workload_ids();
  if (ids.empty()) return;
  const WorkloadId id = ids[random() % ids.size()];
  if (dice == 1 && state.workload(id).shrinkable_replicas() > 0) {
    const std::array<std::int32_t, 1> drop{0};
    state.shrink(id, drop);
    return;
  }
  removed.emplace_back(state.workload(id), state.placement(id));
  state.remove(id);
}

/// A preemptor of each way targets are found: below the host (NUMA, island), a whole host,
/// and a gang of whole hosts in a rack.
const std::array<PreemptorSpec, 4> four_kinds{{{PreemptorKind::numa, 1},
                                               {PreemptorKind::nvlink_island, 4},
                                               {PreemptorKind::node, 8},
                                               {PreemptorKind::rack_gang, 16, 2}}};

template <class Solver>
void run_sequence(const Solver& solver, PreemptorSpec spec, std::uint64_t seed,
                  std::int32_t nodes = 16, int rounds = 8) {
  ClusterSpec cluster_spec;
  cluster_spec.nodes = nodes;
  cluster_spec.nodes_per_rack = 8;
  cluster_spec.seed = seed;
  cluster_spec.elastic_fraction = 0.4;
  if (spec.gpus == 1) cluster_spec.target_occupancy = 1.0;
  GeneratedCluster cluster = generate_cluster(cluster_spec);
  const Workload preemptor = make_preemptor(spec);
  const cost::weighted_sum<cost::lost_work, cost::reload_time> model{};
  IncrementalDecider decider(solver, model, preemptor);
  std::vector<std::pair<Workload, Placement>> removed;
  std::mt19937_64 random(seed);
  for (int round = 0; round < rounds; ++round) {
    INFO("seed ", seed, " round ", round, " ", Solver::name, " ", to_string(spec.kind));
    check_same_plan(decider.decide(cluster.state), solver.solve(cluster.state, preemptor, model));
    const int changes = 1 + static_cast<int>(random() % 4);
    for (int c = 0; c < changes; ++c) change(cluster.state, removed, random);
  }
  // Decided again on an unchanged state, nothing is read again.
  check_same_plan(decider.decide(cluster.state), solver.solve(cluster.state, preemptor, model));
  const std::uint64_t fresh = decider.fresh_reads();
  const std::uint64_t fresh_groups = decider.fresh_group_bounds();
  const std::uint64_t fresh_admissions = decider.fresh_admissions();
  const std::uint64_t fresh_openings = decider.fresh_openings();
  check_same_plan(decider.decide(cluster.state), solver.solve(cluster.state, preemptor, model));
  CHECK(decider.fresh_reads() == fresh);
  CHECK(decider.fresh_group_bounds() == fresh_groups);
  CHECK(decider.fresh_admissions() == fresh_admissions);
  CHECK(decider.fresh_openings() == fresh_openings);
}

/// A generated cluster of `nodes` hosts, `nodes_per_rack` a rack, 30 % elastic jobs, filled
/// to `occupancy` (the generator's default when none is given).
GeneratedCluster elastic_cluster(std::size_t nodes, std::size_t nodes_per_rack, std::uint64_t seed,
                                 std::optional<double> occupancy = std::nullopt) {
  ClusterSpec spec;
  spec.nodes = nodes;
  spec.nodes_per_rack = nodes_per_rack;
  spec.seed = seed;
  spec.elastic_fraction = 0.3;
  if (occupancy) spec.target_occupancy = *occupancy;
  return generate_cluster(spec);
}

/// 64 hosts, 8 a rack, every GPU busy (seed 11).
GeneratedCluster full_cluster() {
  ClusterSpec spec;
  spec.nodes = 64;
  spec.nodes_per_rack = 8;
  spec.target_occupancy = 1.0;
  spec.seed = 11;
  return generate_cluster(spec);
}

TEST_SUITE("incremental_decider") {
  TEST_CASE("after random changes the decider's plan is the cold plan, for every solver") {
    const std::array<PreemptorSpec, 5> specs{{{PreemptorKind::numa, 1},
                                              {PreemptorKind::nvlink_island, 4},
                                              {PreemptorKind::socket, 4},
                                              {PreemptorKind::node, 8},
                                              {PreemptorKind::rack_gang, 16, 2}}};
    for (const std::uint64_t seed : {1U, 2U}) {
      for (const PreemptorSpec& spec : specs) {
        run_sequence(solvers::greedy, spec, seed);
        run_sequence(solvers::knapsack, spec, seed);
        run_sequence(solvers::branch_and_bound, spec, seed);
      }
    }
  }

  TEST_CASE("the change log: half-empty clusters, long gaps and copies give the cold plan") {
    // A half-empty cluster makes "fits already" flip back and forth (the fit check then reads
    // the change log); a round of many changes outgrows the log (the full comparison takes
    // over); deciding on a copy that diverged must not trust the original's log.
    const cost::weighted_sum<cost::lost_work, cost::reload_time> model{};
    for (const std::uint64_t seed : {3U, 4U, 5U}) {
      for (const PreemptorSpec& spec : four_kinds) {
        GeneratedCluster cluster =
            elastic_cluster(16, 8, seed, 0.5 + 0.1 * static_cast<double>(seed - 3));
        const Workload preemptor = make_preemptor(spec);
        IncrementalDecider decider(solvers::branch_and_bound, model, preemptor);
        std::vector<std::pair<Workload, Placement>> removed;
        std::mt19937_64 random(seed * 31 + static_cast<std::uint64_t>(spec.gpus));
        for (int round = 0; round < 24; ++round) {
          INFO("seed ", seed, " round ", round, " ", to_string(spec.kind));
          Allocation copy = cluster.state;
          const bool on_copy = round % 5 == 4;
          std::vector<std::pair<Workload, Placement>> removed_from_copy = removed;
          if (on_copy)
            change(copy, removed_from_copy, random);  // diverges from what the decider saw
          const Allocation& decided = on_copy ? copy : cluster.state;
          check_same_plan(decider.decide(decided),
                          solvers::branch_and_bound.solve(decided, preemptor, model));
          const int changes = round % 7 == 6 ? 150 : 1 + static_cast<int>(random() % 3);
          for (int c = 0; c < changes; ++c) change(cluster.state, removed, random);
        }
      }
    }
  }

  TEST_CASE("bounds kept by version: eight racks, many rounds, every plan the cold plan") {
    // Enough racks that most keep their bounds from one round to the next: a bound reused
    // after its rack changed would move the search, and the statistics or the plan with it.
    for (const std::uint64_t seed : {7U, 8U}) {
      for (const PreemptorSpec& spec : four_kinds) {
        run_sequence(solvers::greedy, spec, seed, 64, 24);
        run_sequence(solvers::branch_and_bound, spec, seed, 64, 24);
      }
    }
  }

  TEST_CASE("pruned groups listed from kept bounds: sixteen racks, every plan the cold plan") {
    // The verdicts a plan lists come from opening pruned groups; a group that did not change
    // lists its targets from the bounds it kept. A stale list would change `rejected` (its
    // values or order), which `check_same_plan` compares whole.
    const cost::weighted_sum<cost::lost_work, cost::reload_time> model{};
    std::uint64_t reused = 0;  // pruned groups listed from what their versions kept
    std::uint64_t fresh = 0;
    std::uint64_t reused_admissions = 0;  // opened groups admitted from what their versions kept
    std::uint64_t fresh_admissions = 0;
    std::uint64_t reused_openings = 0;  // groups opened into groups from what their versions kept
    std::uint64_t fresh_openings = 0;
    for (const std::uint64_t seed : {31U, 32U, 33U}) {
      for (const PreemptorSpec& spec : {PreemptorSpec{PreemptorKind::numa, 1},
                                        PreemptorSpec{PreemptorKind::nvlink_island, 4},
                                        PreemptorSpec{PreemptorKind::socket, 4},
                                        PreemptorSpec{PreemptorKind::node, 8}}) {
        GeneratedCluster cluster = elastic_cluster(128, 8, seed, spec.gpus == 1 ? 1.0 : 0.95);
        const Workload preemptor = make_preemptor(spec);
        IncrementalDecider greedy(solvers::greedy.without_text(), model, preemptor);
        IncrementalDecider exact(solvers::branch_and_bound, model, preemptor);
        std::vector<std::pair<Workload, Placement>> removed;
        std::mt19937_64 random(seed * 13 + static_cast<std::uint64_t>(spec.gpus));
        for (int round = 0; round < 30; ++round) {
          INFO("seed ", seed, " round ", round, " ", to_string(spec.kind));
          check_same_plan(greedy.decide(cluster.state),
                          solvers::greedy.without_text().solve(cluster.state, preemptor, model));
          check_same_plan(exact.decide(cluster.state),
                          solvers::branch_and_bound.solve(cluster.state, preemptor, model));
          // A few changes, or (some rounds) a removal undone at once: a new version, the same
          // content.
          const int changes = round % 6 == 5 ? 0 : 1 + static_cast<int>(random() % 3);
          for (int c = 0; c < changes; ++c) change(cluster.state, removed, random);
          if (changes == 0 && !cluster.state.workload_ids().empty()) {
            const WorkloadId id = cluster.state.workload_ids().front();
            const Workload workload = cluster.state.workload(id);
            const Placement placement = cluster.state.placement(id);
            cluster.state.remove(id);
            cluster.state.add(workload, placement);
          }
        }
        reused += greedy.reused_listings() + exact.reused_listings();
        fresh += greedy.fresh_listings() + exact.fresh_listings();
        reused_admissions += greedy.reused_admissions() + exact.reused_admissions();
        fresh_admissions += greedy.fresh_admissions() + exact.fresh_admissions();
        reused_openings += greedy.reused_openings() + exact.reused_openings();
        fresh_openings += greedy.fresh_openings() + exact.fresh_openings();
      }
    }
    // Both paths taken (a preemptor that fits already lists nothing: NUMA rounds mostly do).
    CHECK(reused > fresh);
    CHECK(fresh > 0);
    CHECK(reused_admissions > fresh_admissions);
    CHECK(fresh_admissions > 0);
    CHECK(reused_openings > 0);
    CHECK(fresh_openings > 0);
  }

  TEST_CASE("openings kept by version: racks in index blocks, every plan the cold plan") {
    // Forty racks: the root opens into blocks of sixteen racks, a block into its racks (kept
    // by a digest of their versions), a rack into its hosts (kept by its version). A stale
    // opening would push other bounds or counts, and move the search or the listed verdicts.
    const cost::weighted_sum<cost::lost_work, cost::reload_time> model{};
    for (const std::uint64_t seed : {41U, 42U}) {
      for (const PreemptorSpec& spec : {PreemptorSpec{PreemptorKind::numa, 4},
                                        PreemptorSpec{PreemptorKind::nvlink_island, 4},
                                        PreemptorSpec{PreemptorKind::socket, 4},
                                        PreemptorSpec{PreemptorKind::node, 8}}) {
        GeneratedCluster cluster = elastic_cluster(160, 4, seed, 0.97);
        const Workload preemptor = make_preemptor(spec);
        const auto greedy = solvers::greedy.without_text();
        detail::ScanCache greedy_cache;
        detail::ScanCache exact_cache;
        std::vector<std::pair<Workload, Placement>> removed;
        std::mt19937_64 random(seed * 17 + static_cast<std::uint64_t>(spec.gpus));
        for (int round = 0; round < 20; ++round) {
          INFO("seed ", seed, " round ", round, " ", to_string(spec.kind));
          check_same_plan(greedy.solve(cluster.state, preemptor, model, greedy_cache),
                          greedy.solve(cluster.state, preemptor, model));
          check_same_plan(
              solvers::branch_and_bound.solve(cluster.state, preemptor, model, exact_cache),
              solvers::branch_and_bound.solve(cluster.state, preemptor, model));
          const int changes = 1 + static_cast<int>(random() % 3);
          for (int c = 0; c < changes; ++c) change(cluster.state, removed, random);
        }
        INFO("seed ", seed, " ", to_string(spec.kind));
        CHECK(greedy_cache.opening_hits + exact_cache.opening_hits > 0);
        CHECK(greedy_cache.opening_misses + exact_cache.opening_misses > 0);
        // Blocks were opened and kept (the root's children are blocks of racks).
        const auto kept_block = [](const detail::ScanCache& cache) {
          for (const auto& entries : cache.block_openings) {
            for (const auto& entry : entries) {
              if (entry.valid) return true;
            }
          }
          return false;
        };
        CHECK((kept_block(greedy_cache) || kept_block(exact_cache)));
      }
    }
  }

  TEST_CASE("admissions kept by a group's version: only the group that changed admits afresh") {
    // Targets below the host (NVLink islands) open from their host, whole hosts from their
    // rack: the group whose version the admissions are kept by.
    for (const PreemptorSpec& spec :
         {PreemptorSpec{PreemptorKind::nvlink_island, 4}, PreemptorSpec{PreemptorKind::node, 8}}) {
      INFO(to_string(spec.kind));
      GeneratedCluster cluster = full_cluster();
      const Workload preemptor = make_preemptor(spec);
      const cost::weighted_sum<cost::lost_work, cost::reload_time> model{};
      IncrementalDecider decider(solvers::branch_and_bound, model, preemptor);
      const PreemptionPlan first = decider.decide(cluster.state);
      REQUIRE(first.has_victims_plan());
      const std::uint64_t opened = decider.fresh_admissions();
      REQUIRE(opened > 0);
      CHECK(decider.reused_admissions() == 0);
      // Unchanged: every group opened admits its targets as kept.
      check_same_plan(decider.decide(cluster.state),
                      solvers::branch_and_bound.solve(cluster.state, preemptor, model));
      CHECK(decider.fresh_admissions() == opened);
      CHECK(decider.reused_admissions() == opened);
      const std::uint64_t openings = decider.fresh_openings();
      CHECK(decider.reused_openings() == openings);  // every group opened into groups before
      // A workload on the chosen target's host leaves and comes back: the same content under
      // a new version of its host and rack. The group holding the plan's target opens again
      // and admits afresh; every other group opened admits as kept.
      const Topology& topology = cluster.state.topology();
      const DomainId host = topology.ancestor_at(first.target_domain, topology.host_level());
      REQUIRE(!cluster.state.occupants(host).empty());
      const WorkloadId id = cluster.state.occupants(host).front();
      const Workload workload = cluster.state.workload(id);
      const Placement placement = cluster.state.placement(id);
      cluster.state.remove(id);
      cluster.state.add(workload, placement);
      check_same_plan(decider.decide(cluster.state),
                      solvers::branch_and_bound.solve(cluster.state, preemptor, model));
      CHECK(decider.fresh_admissions() == opened + 1);
      CHECK(decider.reused_admissions() == 2 * opened - 1);
      // The root changed, and for islands the rack holding the host (opened into hosts).
      CHECK(decider.fresh_openings() - openings >= 1);
      CHECK(decider.fresh_openings() - openings <= 2);
    }
  }

  TEST_CASE("searches kept by scan versions and incumbent: under node budgets, the cold plan") {
    // A domain searched again against the same incumbent, its scan versions unchanged, takes
    // the kept outcome and counters only when the budget it was searched under is the same
    // too (the nodes explored before it, the domains left): under tight node budgets a search
    // that completed after a cheap start may stop after a costly one, as the cold call's does.
    // Statistics (nodes explored) are compared too.
    const cost::weighted_sum<cost::lost_work, cost::reload_time> model{};
    std::uint64_t reused = 0;
    std::uint64_t limited = 0;
    for (const std::uint64_t nodes : {std::uint64_t{60}, std::uint64_t{600}, std::uint64_t{6000},
                                      std::uint64_t{2'000'000}}) {
      for (const PreemptorSpec& spec : four_kinds) {
        for (const std::uint64_t seed : {61U, 62U}) {
          GeneratedCluster cluster = elastic_cluster(32, 8, seed);
          const Workload preemptor = make_preemptor(spec);
          const auto solver = solvers::branch_and_bound_solver{}.node_limit(nodes);
          IncrementalDecider decider(solver, model, preemptor);
          std::vector<std::pair<Workload, Placement>> removed;
          std::mt19937_64 random(seed + nodes);
          for (int round = 0; round < 16; ++round) {
            INFO("nodes ", nodes, " seed ", seed, " round ", round, " ", to_string(spec.kind));
            const PreemptionPlan cold = solver.solve(cluster.state, preemptor, model);
            check_same_plan(decider.decide(cluster.state), cold);
            limited += cold.statistics.limit_reached ? 1 : 0;
            // Every other round unchanged: each search is taken again against the same
            // incumbent.
            if (round % 2 == 1) change(cluster.state, removed, random);
          }
          reused += decider.reused_searches();
        }
      }
    }
    CHECK(reused > 100);
    CHECK(limited > 10);  // the budgets bind
  }

  /// Greedy's search, saying in its note what it was searched under (the incumbent, the
  /// searches before it in the decision, the domains left): a kept search reused under
  /// another incumbent or budget shows in the plan's verdicts.
  struct EchoingSearch {
    bool counts_nodes = true;  ///< one node a search, else none (every search after none)
    [[nodiscard]] detail::DomainOutcome search(const Allocation& state,
                                               const detail::DomainProblem& problem,
                                               double incumbent,
                                               const detail::SearchLimits& limits,
                                               SolverStatistics& statistics) const {
      detail::DomainOutcome outcome =
          solvers::detail::GreedySearch{}.search(state, problem, incumbent, limits, statistics);
      outcome.note += " (against " + std::to_string(incumbent) + ", after " +
                      std::to_string(statistics.nodes_explored) + " searches, " +
                      std::to_string(limits.domains_left) + " domains left)";
      if (counts_nodes) ++statistics.nodes_explored;  // the searches before the next one
      return outcome;
    }
  };

  TEST_CASE("a kept search is reused only with the same incumbent and budget") {
    // A change to a domain moves the incumbent, or the number of searches, that the domains
    // searched after it see, whose scan versions did not move: their kept searches must not
    // be reused then (each verdict's note says what its search saw). Counting no nodes, every
    // search sees the same budget, and only the incumbent tells them apart.
    const cost::weighted_sum<cost::lost_work, cost::reload_time> model{};
    std::uint64_t hits = 0;
    std::uint64_t misses = 0;
    for (const bool counts_nodes : {true, false}) {
      for (const PreemptorSpec& spec : {PreemptorSpec{PreemptorKind::nvlink_island, 4},
                                        PreemptorSpec{PreemptorKind::node, 8},
                                        PreemptorSpec{PreemptorKind::rack_gang, 16, 2}}) {
        for (const std::uint64_t seed : {71U, 72U, 73U}) {
          GeneratedCluster cluster = elastic_cluster(32, 8, seed, 0.97);
          const Workload preemptor = make_preemptor(spec);
          const detail::SearchLimits limits;
          detail::ScanCache cache;
          std::vector<std::pair<Workload, Placement>> removed;
          std::mt19937_64 random(seed);
          for (int round = 0; round < 16; ++round) {
            INFO("seed ", seed, " round ", round, " ", to_string(spec.kind), " nodes ",
                 counts_nodes);
            const EchoingSearch search{counts_nodes};
            check_same_plan(detail::solve_with("echo", cluster.state, preemptor, model, search,
                                               limits, &cache),
                            detail::solve_with("echo", cluster.state, preemptor, model, search,
                                               limits));
            change(cluster.state, removed, random);
          }
          hits += cache.search_hits;
          misses += cache.search_misses;
        }
      }
    }
    CHECK(hits > 20);    // searched again with the same inputs
    CHECK(misses > 20);  // and with others
  }

  TEST_CASE("a kept search is reused only when every input it was a function of is the same") {
    // Decided again on the same state, every search is taken from the cache. A kept search
    // whose scan versions, incumbent, nodes explored before it or domains left differ from
    // the search's at hand (each one moved in turn) is searched again.
    const cost::weighted_sum<cost::lost_work, cost::reload_time> model{};
    const GeneratedCluster cluster = elastic_cluster(32, 8, 81, 0.97);
    for (const PreemptorSpec& spec : {PreemptorSpec{PreemptorKind::node, 8},
                                      PreemptorSpec{PreemptorKind::rack_gang, 16, 2}}) {
      INFO(to_string(spec.kind));
      const Workload preemptor = make_preemptor(spec);
      const PreemptionPlan cold = solvers::branch_and_bound.solve(cluster.state, preemptor, model);
      REQUIRE(cold.has_victims_plan());
      detail::ScanCache cache;
      check_same_plan(solvers::branch_and_bound.solve(cluster.state, preemptor, model, cache),
                      cold);
      const std::uint64_t searched = cache.search_misses;
      REQUIRE(searched > 0);
      check_same_plan(solvers::branch_and_bound.solve(cluster.state, preemptor, model, cache),
                      cold);
      CHECK(cache.search_hits == searched);
      CHECK(cache.search_misses == searched);
      using Kept = detail::ScanCache::KeptSearch;
      const std::array<std::pair<const char*, void (*)(Kept&)>, 4> moves{{
          {"scan versions", [](Kept& kept) { ++kept.key; }},
          {"incumbent", [](Kept& kept) { kept.incumbent ^= 1; }},
          {"nodes before", [](Kept& kept) { ++kept.spent; }},
          {"domains left", [](Kept& kept) { ++kept.domains_left; }},
      }};
      for (const auto& input : moves) {
        INFO("moved: ", input.first);
        detail::ScanCache moved = cache;
        for (Kept& kept : moved.searches) input.second(kept);
        check_same_plan(solvers::branch_and_bound.solve(cluster.state, preemptor, model, moved),
                        cold);
        CHECK(moved.search_hits == cache.search_hits);  // none reused
        CHECK(moved.search_misses == cache.search_misses + searched);
      }
    }
  }

  TEST_CASE("a plan's placement is kept while its target's reach and victims stay the same") {
    GeneratedCluster cluster = full_cluster();
    const Workload preemptor = make_preemptor({PreemptorKind::node, 8});
    const cost::weighted_sum<cost::lost_work, cost::reload_time> model{};
    IncrementalDecider decider(solvers::branch_and_bound, model, preemptor);
    const auto decide_and_check = [&] {
      const PreemptionPlan plan = decider.decide(cluster.state);
      check_same_plan(plan, solvers::branch_and_bound.solve(cluster.state, preemptor, model));
      return plan;
    };
    const PreemptionPlan first = decide_and_check();
    REQUIRE(first.has_victims_plan());
    CHECK(decider.fresh_placements() == 1);
    CHECK(decider.reused_placements() == 0);
    // Unchanged: the same plan, its placement the kept one.
    (void)decide_and_check();
    CHECK(decider.reused_placements() == 1);
    // A workload leaves and comes back where it ran: the same state, but every domain on its
    // way to the root has a new version.
    const auto leave_and_return = [&](WorkloadId id) {
      const Workload workload = cluster.state.workload(id);
      const Placement placement = cluster.state.placement(id);
      cluster.state.remove(id);
      cluster.state.add(workload, placement);
    };
    const Topology& topology = cluster.state.topology();
    const DomainId target_host = topology.ancestor_at(first.target_domain, topology.host_level());
    const auto on_host = [&](WorkloadId id, bool inside) {
      for (const DomainId device : cluster.state.placement(id).devices(topology)) {
        if (topology.contains(target_host, device) == inside) return true;
      }
      return false;
    };
    // Outside the target's reach (no device on its host): the placement is kept.
    std::optional<WorkloadId> outside;
    std::optional<WorkloadId> inside;
    cluster.state.for_each_workload([&](const Workload& w) {
      if (!outside && !on_host(w.id, true)) outside = w.id;
      if (!inside && on_host(w.id, true) && !on_host(w.id, false) &&
          std::none_of(first.victims.begin(), first.victims.end(),
                       [&](const Victim& v) { return v.id == w.id; }))
        inside = w.id;
    });
    REQUIRE(outside.has_value());
    leave_and_return(*outside);
    const PreemptionPlan after_outside = decide_and_check();
    REQUIRE(after_outside.target_domain == first.target_domain);
    CHECK(decider.reused_placements() == 2);
    CHECK(decider.fresh_placements() == 1);
    // Inside it, on a workload the plan does not evict: the same victims, but the reach has
    // another version, so the placement is searched for again (a kept one could be stale).
    if (inside) {
      leave_and_return(*inside);
      const PreemptionPlan after_inside = decide_and_check();
      REQUIRE(after_inside.target_domain == first.target_domain);
      CHECK(after_inside.victims.size() == first.victims.size());
      CHECK(decider.reused_placements() == 2);
      CHECK(decider.fresh_placements() == 2);
    } else {
      // Every workload on the host is a victim: one of them leaves and returns instead.
      leave_and_return(first.victims.front().id);
      (void)decide_and_check();
      CHECK(decider.reused_placements() == 2);
      CHECK(decider.fresh_placements() == 2);
    }
  }

  TEST_CASE("the winner's problem is kept by its scan versions, on copies of the state too") {
    GeneratedCluster cluster = full_cluster();
    const Workload preemptor = make_preemptor({PreemptorKind::node, 8});
    const cost::weighted_sum<cost::lost_work, cost::reload_time> model{};
    IncrementalDecider exact(solvers::branch_and_bound, model, preemptor);
    IncrementalDecider greedy(solvers::greedy, model, preemptor);
    const auto decide_and_check = [&](const Allocation& state) {
      check_same_plan(exact.decide(state),
                      solvers::branch_and_bound.solve(state, preemptor, model));
      check_same_plan(greedy.decide(state), solvers::greedy.solve(state, preemptor, model));
    };
    decide_and_check(cluster.state);
    REQUIRE(exact.reused_problems() == 0);
    // Unchanged: the winning domain's problem is the one its slot kept.
    decide_and_check(cluster.state);
    CHECK(exact.reused_problems() == 1);
    CHECK(greedy.reused_problems() == 1);
    // A copy has the same versions and its workloads elsewhere in memory: the kept problem
    // is taken with its pointers into the copy, then the copy is gone before the next call.
    {
      const Allocation copy = cluster.state;
      decide_and_check(copy);
    }
    CHECK(exact.reused_problems() == 2);
    const Allocation other_copy = cluster.state;
    decide_and_check(other_copy);
    CHECK(exact.reused_problems() == 3);
    CHECK(greedy.reused_problems() == 3);
    // One of the winner's victims leaves: its host has a new version, so the problems read
    // there are read again (and the plans stay the cold ones); unchanged since, kept again.
    const PreemptionPlan plan = exact.decide(cluster.state);
    REQUIRE(plan.has_victims_plan());
    cluster.state.remove(plan.victims.front().id);
    decide_and_check(cluster.state);
    const std::uint64_t reused = exact.reused_problems();
    decide_and_check(cluster.state);
    CHECK(exact.reused_problems() > reused);
  }

  TEST_CASE("after a change on one host only the bounds of the groups holding it are retaken") {
    GeneratedCluster cluster = full_cluster();
    const Workload preemptor = make_preemptor({PreemptorKind::node, 8});
    const cost::weighted_sum<cost::lost_work, cost::reload_time> model{};
    IncrementalDecider decider(solvers::branch_and_bound, model, preemptor);
    const PreemptionPlan first = decider.decide(cluster.state);
    REQUIRE(first.has_victims_plan());
    const std::uint64_t cold_groups = decider.fresh_group_bounds();
    CHECK(cold_groups == 9);  // the root and its eight racks
    // Unchanged: every bound is reused.
    check_same_plan(decider.decide(cluster.state),
                    solvers::branch_and_bound.solve(cluster.state, preemptor, model));
    CHECK(decider.fresh_group_bounds() == cold_groups);
    // A one-replica workload leaves a host of a rack the plan did not choose, a host on which
    // another workload keeps a device (so the preemptor still does not fit): only the bounds
    // of the groups on the way from the root to that host (root, rack) are taken again.
    const Topology& topology = cluster.state.topology();
    const LevelIndex rack_level = 1;
    REQUIRE(topology.host_level() == 2);
    const DomainId chosen_rack = topology.ancestor_at(first.target_domain, rack_level);
    const auto host_of = [&](WorkloadId id) {
      return topology.ancestor_at(
          cluster.state.placement(id).replicas.front().entries.front().domain, 2);
    };
    std::optional<WorkloadId> leaving;
    cluster.state.for_each_workload([&](const Workload& w) {
      const Placement& placement = cluster.state.placement(w.id);
      const DomainId host = host_of(w.id);
      if (leaving || placement.replicas.size() != 1 ||
          topology.ancestor_at(host, rack_level) == chosen_rack)
        return;
      for (const WorkloadId other : cluster.state.occupants(host)) {
        if (other == w.id) continue;
        for (const DomainId device : cluster.state.placement(other).devices(topology)) {
          if (topology.contains(host, device)) leaving = w.id;
        }
      }
    });
    REQUIRE(leaving.has_value());
    cluster.state.remove(*leaving);
    const std::uint64_t reused = decider.reused_group_bounds();
    const PreemptionPlan after = decider.decide(cluster.state);
    check_same_plan(after, solvers::branch_and_bound.solve(cluster.state, preemptor, model));
    REQUIRE(after.has_victims_plan());
    CHECK(decider.fresh_group_bounds() - cold_groups == 2);  // the root and that rack
    CHECK(decider.reused_group_bounds() - reused == 7);      // the other racks
  }

  /// Every bound a decider keeps, taken through `cache` on `state`, against the same bound
  /// taken afresh: equal bit for bit (what the cache promises), for every tier, candidate
  /// domain and group.
  template <class Model>
  void check_kept_bounds(const Allocation& state, const Workload& preemptor, const Model& model,
                         detail::ScanCache& cache) {
    const detail::PreemptionContext<Model> context(state, preemptor, model);
    const double floor = context.price_floor();
    const double grid = context.cost_grid();
    cache.keep_bounds_for(floor, grid);
    const Topology& topology = state.topology();
    const auto bits = [](double x) { return std::bit_cast<std::uint64_t>(x); };
    for (std::size_t t = 0; t < context.tiers().size(); ++t) {
      const detail::Tier& tier = context.tiers()[t];
      for (const DomainId target : context.targets(tier)) {
        INFO("tier ", t, " target ", target.value);
        CHECK(bits(context.index_price_bound_cached(t, tier, target, floor, grid, false,
                                                    &cache)) ==
              bits(context.index_price_bound(tier, target, floor, grid, false)));
        CHECK(bits(context.index_price_bound_cached(t, tier, target, floor, grid, true,
                                                    &cache)) ==
              bits(context.index_price_bound(tier, target, floor, grid, true)));
        if (context.per_host_bound_applies(tier, target)) {
          CHECK(bits(context.per_host_index_bound_cached(t, tier, target, floor, grid,
                                                         &cache)) ==
                bits(context.per_host_index_bound(tier, target, floor, grid)));
        }
      }
      if (!context.grouped(tier)) continue;
      for (LevelIndex level = 0; level <= topology.host_level() && level < tier.target_level;
           ++level) {
        for (const DomainId group : topology.domains_at(level)) {
          INFO("tier ", t, " group ", group.value);
          CHECK(bits(context.group_price_bound_cached(t, tier, group, floor, grid, &cache)) ==
                bits(context.group_price_bound(tier, group, floor, grid)));
        }
      }
      // The bounds a pruned group's targets are listed by, kept by the group's version.
      const auto& shape = context.tier_shape(cache, t, tier);
      const auto all = context.targets(tier);
      std::vector<detail::ScanCache::ListedTarget> scratch;
      for (const DomainId group : topology.domains_at(shape.opening_level)) {
        const auto from = std::lower_bound(all.begin(), all.end(), group);
        const auto to = std::lower_bound(from, all.end(), topology.subtree_end(group));
        const std::span<const DomainId> members(from, to);
        if (members.empty()) continue;
        INFO("tier ", t, " listed group ", group.value);
        const auto listed =
            context.listed_targets_cached(t, tier, group, members, floor, grid, &cache, scratch);
        // Every member once, by its fresh bound, in ascending (bound, id): one run of the heap.
        std::vector<std::pair<double, DomainId>> fresh_listed;
        for (const DomainId member : members)
          fresh_listed.emplace_back(context.index_price_bound(tier, member, floor, grid), member);
        std::sort(fresh_listed.begin(), fresh_listed.end());
        REQUIRE(listed.size() == fresh_listed.size());
        for (std::size_t i = 0; i < listed.size(); ++i) {
          CHECK(listed[i].child == fresh_listed[i].second);
          CHECK(bits(listed[i].bound) == bits(fresh_listed[i].first));
        }
        // What opening the group admitted, kept by the same version.
        const auto* admitted =
            context.admissions_cached(t, tier, group, members, floor, grid, &cache);
        if (admitted == nullptr) continue;
        REQUIRE(admitted->size() == members.size());
        for (std::size_t i = 0; i < members.size(); ++i) {
          const auto fresh = context.admission(t, tier, members[i], floor, grid, nullptr);
          CHECK((*admitted)[i].verdict == fresh.verdict);
          CHECK((*admitted)[i].refine == fresh.refine);
          CHECK(bits((*admitted)[i].bound) == bits(fresh.bound));
          if (fresh.verdict != detail::ScanCache::Admission::Verdict::admitted) {
            CHECK((*admitted)[i].shortfall.dim == fresh.shortfall.dim);
            CHECK(bits((*admitted)[i].shortfall.have) == bits(fresh.shortfall.have));
            CHECK(bits((*admitted)[i].shortfall.need) == bits(fresh.shortfall.need));
            CHECK((*admitted)[i].shortfall.victims == fresh.shortfall.victims);
          }
        }
      }
    }
  }

  TEST_CASE("every kept bound equals the bound taken afresh, bit for bit, after each change") {
    // Direct, not through a plan: a stale bound need not move a search. NUMA targets read
    // their host's bands (a change on a sibling NUMA node moves them), gangs of whole hosts
    // take per-host bounds, and every kind opens racks.
    const cost::weighted_sum<cost::lost_work, cost::reload_time> model{};
    for (const std::uint64_t seed : {21U, 22U}) {
      for (const PreemptorSpec& spec : four_kinds) {
        GeneratedCluster cluster = elastic_cluster(32, 8, seed);
        const Workload preemptor = make_preemptor(spec);
        detail::ScanCache cache;
        std::vector<std::pair<Workload, Placement>> removed;
        std::mt19937_64 random(seed * 7 + static_cast<std::uint64_t>(spec.gpus));
        for (int round = 0; round < 30; ++round) {
          INFO("seed ", seed, " round ", round, " ", to_string(spec.kind));
          check_kept_bounds(cluster.state, preemptor, model, cache);
          change(cluster.state, removed, random);
        }
        // Racks are targets of the gang, not groups: only the other kinds take group bounds
        // (and list a pruned group's targets from what its version kept).
        if (spec.kind != PreemptorKind::rack_gang) {
          CHECK(cache.group_hits > 0);
          CHECK(cache.listed_hits > 0);
          CHECK(cache.admission_hits > 0);
          // Racks that changed kept their bounds by their covers (`group_covers`: no blocks
          // here, four racks); one GPU is never short of a host's idle devices.
          if (spec.gpus > 1) CHECK(cache.cover_hits > 0);
        }
        // A gang's per-host bound adds each host's terms kept by its version: most hosts' are
        // current (a change touches one host), and the bounds above equal fresh ones.
        if (spec.kind == PreemptorKind::rack_gang) {
          REQUIRE_FALSE(cache.host_terms.empty());
          const auto& kept = cache.host_terms[0];
          const auto versions =
              cluster.state.versions_at(cluster.state.topology().host_level());
          REQUIRE(kept.size() == versions.size());
          std::size_t current = 0;
          for (std::size_t h = 0; h < kept.size(); ++h) {
            if (kept[h].valid && kept[h].version == versions[h]) ++current;
          }
          CHECK(current * 2 > kept.size());
        }
        // Whole-node targets read only their own host: a changed rack lists them again from
        // the bounds of those that did not change, each checked against a fresh bound above.
        if (spec.kind == PreemptorKind::node) {
          const detail::PreemptionContext<decltype(model)> context(cluster.state, preemptor,
                                                                   model);
          CHECK(context.tier_shape(cache, 0, context.tiers()[0]).targets_local);
          CHECK(cache.listed_misses > 0);
        }
      }
    }
  }

  TEST_CASE("bounds of changed blocks kept by their cover equal fresh ones") {
    // Forty racks of four hosts: the racks lie in index blocks of sixteen. Each change moves
    // the version of its block (and of its host and rack), but seldom the block's bands'
    // extremes or most idle host: its bound comes from the cover it was taken from
    // (`kept_cover_bound`). A cover kept past a change of its bands or need would give another
    // bound, bit for bit.
    const cost::weighted_sum<cost::lost_work, cost::reload_time> model{};
    for (const std::uint64_t seed : {51U, 52U}) {
      for (const PreemptorSpec& spec : {PreemptorSpec{PreemptorKind::numa, 4},
                                        PreemptorSpec{PreemptorKind::node, 8}}) {
        GeneratedCluster cluster = elastic_cluster(160, 4, seed, 0.97);
        const Workload preemptor = make_preemptor(spec);
        const Allocation& state = cluster.state;
        const Topology& topology = state.topology();
        const auto block_level = static_cast<LevelIndex>(topology.host_level() - 1);
        std::uint32_t blocks = 0;
        for (const DomainId d : topology.domains_at(block_level)) {
          const std::uint32_t b = state.index_block_of(d);
          if (b != Allocation::index_no_block) blocks = std::max(blocks, b + 1);
        }
        REQUIRE(blocks > 1);
        detail::ScanCache cache;
        std::vector<std::pair<Workload, Placement>> removed;
        std::mt19937_64 random(seed * 11 + static_cast<std::uint64_t>(spec.gpus));
        const auto bits = [](double x) { return std::bit_cast<std::uint64_t>(x); };
        for (int round = 0; round < 40; ++round) {
          INFO("seed ", seed, " round ", round, " ", to_string(spec.kind));
          const detail::PreemptionContext<decltype(model)> context(state, preemptor, model);
          const double floor = context.price_floor();
          const double grid = context.cost_grid();
          cache.keep_bounds_for(floor, grid);
          for (std::size_t t = 0; t < context.tiers().size(); ++t) {
            const detail::Tier& tier = context.tiers()[t];
            if (!context.grouped(tier)) continue;
            for (std::uint32_t b = 0; b < blocks; ++b) {
              INFO("tier ", t, " block ", b);
              CHECK(bits(context.block_price_bound(tier, b, floor, grid, &cache)) ==
                    bits(context.block_price_bound(tier, b, floor, grid)));
            }
            for (LevelIndex level = 1; level <= topology.host_level(); ++level) {
              for (const DomainId group : topology.domains_at(level)) {
                INFO("tier ", t, " group ", group.value);
                CHECK(bits(context.group_price_bound_cached(t, tier, group, floor, grid,
                                                            &cache)) ==
                      bits(context.group_price_bound(tier, group, floor, grid)));
              }
            }
          }
          const int changes = 1 + static_cast<int>(random() % 6);
          for (int c = 0; c < changes; ++c) change(cluster.state, removed, random);
        }
        INFO("seed ", seed, " ", to_string(spec.kind));
        CHECK(cache.cover_hits > 0);    // changed, same bands and need: the kept bound
        CHECK(cache.cover_misses > 0);  // changed bands or need: taken afresh
      }
    }
  }

  TEST_CASE("a block whose bands change under the same need takes its bound again") {
    // A workload in each block checkpoints (its lost work drops to none) and keeps its
    // devices: the block's most idle host, so its need, stays, but its bands' least lost
    // work moves. The kept cover no longer matches: the bound is taken again, bit for bit the
    // fresh one.
    const cost::weighted_sum<cost::lost_work, cost::reload_time> model{};
    GeneratedCluster cluster = elastic_cluster(160, 4, 71, 0.97);
    Allocation& state = cluster.state;
    const Topology& topology = state.topology();
    const Workload preemptor = make_preemptor({PreemptorKind::numa, 4});
    const auto block_level = static_cast<LevelIndex>(topology.host_level() - 1);
    detail::ScanCache cache;
    const auto bits = [](double x) { return std::bit_cast<std::uint64_t>(x); };
    const auto check_blocks = [&] {
      const detail::PreemptionContext<decltype(model)> context(state, preemptor, model);
      const double floor = context.price_floor();
      const double grid = context.cost_grid();
      cache.keep_bounds_for(floor, grid);
      std::size_t checked = 0;
      for (const detail::Tier& tier : context.tiers()) {
        if (!context.grouped(tier)) continue;
        for (const DomainId rack : topology.domains_at(block_level)) {
          const std::uint32_t b = state.index_block_of(rack);
          if (b == Allocation::index_no_block) continue;
          INFO("block ", b);
          CHECK(bits(context.block_price_bound(tier, b, floor, grid, &cache)) ==
                bits(context.block_price_bound(tier, b, floor, grid)));
          ++checked;
        }
      }
      return checked;
    };
    REQUIRE(check_blocks() > 0);
    const std::uint64_t misses = cache.cover_misses;
    // In every block, the workload of least priority below the preemptor's checkpoints now.
    std::size_t moved = 0;
    for (const DomainId rack : topology.domains_at(block_level)) {
      const std::uint32_t b = state.index_block_of(rack);
      if (b == Allocation::index_no_block ||
          rack != topology.domains_at(block_level)[state.index_block_ordinals(b).first])
        continue;  // the block's first rack only
      for (const DomainId host : topology.domains_at(topology.host_level(), rack)) {
        bool done = false;
        for (const WorkloadId id : state.occupants(host)) {
          Workload workload = state.workload(id);
          if (workload.priority >= preemptor.priority ||
              !(workload.cost.seconds_since_checkpoint > 0.0))
            continue;
          const Placement placement = state.placement(id);
          state.remove(id);
          workload.cost.seconds_since_checkpoint = 0.0;
          state.add(workload, placement);
          done = true;
          break;
        }
        if (done) {
          ++moved;
          break;
        }
      }
    }
    REQUIRE(moved > 0);
    (void)check_blocks();
    CHECK(cache.cover_misses > misses);  // bands moved: taken again
  }

  TEST_CASE("after many changes between calls the decider's plan is the cold plan") {
    // Fifty changes between two calls, as a scheduler's busy cycle: nearly every block and
    // many racks changed; block bounds come from kept covers, openings from kept children
    // with their bounds taken again. Every plan, its verdicts included, is the cold one.
    const cost::weighted_sum<cost::lost_work, cost::reload_time> model{};
    std::uint64_t reused_covers = 0;
    std::uint64_t fresh_openings = 0;
    for (const std::uint64_t seed : {61U, 62U}) {
      for (const PreemptorSpec& spec : {PreemptorSpec{PreemptorKind::numa, 4},
                                        PreemptorSpec{PreemptorKind::nvlink_island, 8},
                                        PreemptorSpec{PreemptorKind::node, 8},
                                        PreemptorSpec{PreemptorKind::rack_gang, 16, 2}}) {
        GeneratedCluster cluster = elastic_cluster(160, 4, seed, 0.97);
        const Workload preemptor = make_preemptor(spec);
        const auto greedy = solvers::greedy.without_text();
        IncrementalDecider quick(greedy, model, preemptor);
        IncrementalDecider exact(solvers::branch_and_bound, model, preemptor);
        std::vector<std::pair<Workload, Placement>> removed;
        std::mt19937_64 random(seed * 13 + static_cast<std::uint64_t>(spec.gpus));
        for (int round = 0; round < 8; ++round) {
          INFO("seed ", seed, " round ", round, " ", to_string(spec.kind));
          check_same_plan(quick.decide(cluster.state), greedy.solve(cluster.state, preemptor, model));
          check_same_plan(exact.decide(cluster.state),
                          solvers::branch_and_bound.solve(cluster.state, preemptor, model));
          for (int c = 0; c < 50; ++c) change(cluster.state, removed, random);
        }
        reused_covers += quick.reused_covers() + exact.reused_covers();
        fresh_openings += quick.fresh_openings() + exact.fresh_openings();
      }
    }
    CHECK(reused_covers > 0);
    CHECK(fresh_openings > 0);
  }

  // A small generated cluster: 8 nodes, 4 per rack.
  GeneratedCluster two_racks_of_four() {
    ClusterSpec spec;
    spec.nodes = 8;
    spec.nodes_per_rack = 4;
    return generate_cluster(spec);
  }

  TEST_CASE("a bad price met after changes is rejected as the cold solve rejects it") {
    GeneratedCluster cluster = two_racks_of_four();
    const Workload preemptor = make_preemptor({PreemptorKind::node, 8});
    // The lowest-priority preemptible workload: an eligible victim of the preemptor.
    std::vector<WorkloadId> eligible;
    cluster.state.for_each_workload([&](const Workload& w) {
      if (w.preemptible && w.priority < preemptor.priority) eligible.push_back(w.id);
    });
    REQUIRE(!eligible.empty());
    const WorkloadId bad = eligible.front();
    const Workload kept = cluster.state.workload(bad);
    const Placement where = cluster.state.placement(bad);
    const bad_price_for model{bad};
    IncrementalDecider decider(solvers::branch_and_bound, model, preemptor);
    cluster.state.remove(bad);
    check_same_plan(decider.decide(cluster.state),
                    solvers::branch_and_bound.solve(cluster.state, preemptor, model));
    cluster.state.add(kept, where);
    const std::string cold =
        error_of([&] { return solvers::branch_and_bound.solve(cluster.state, preemptor, model); });
    CHECK(cold.find(kept.label()) != std::string::npos);
    CHECK(error_of([&] { return decider.decide(cluster.state); }) == cold);
    CHECK(error_of([&] { return decider.decide(cluster.state); }) == cold);  // not cached as valid
    cluster.state.remove(bad);
    check_same_plan(decider.decide(cluster.state),
                    solvers::branch_and_bound.solve(cluster.state, preemptor, model));
  }

  TEST_CASE("room freed on one host after a decision: the decider sees that the preemptor fits") {
    GeneratedCluster cluster = two_racks_of_four();
    const Workload preemptor = make_preemptor({PreemptorKind::node, 8});
    const cost::victim_count model{};
    IncrementalDecider decider(solvers::greedy, model, preemptor);
    PreemptionPlan first = decider.decide(cluster.state);
    REQUIRE(first.has_victims_plan());
    // Empty the host the plan chose (every occupant leaves): now it fits without preemption.
    const DomainId host = cluster.state.topology().ancestor_at(
        first.target_domain, cluster.state.topology().host_level());
    REQUIRE(host.valid());
    std::vector<WorkloadId> occupants(cluster.state.occupants(host).begin(),
                                      cluster.state.occupants(host).end());
    for (const WorkloadId id : occupants) cluster.state.remove(id);
    const PreemptionPlan warm = decider.decide(cluster.state);
    check_same_plan(warm, solvers::greedy.solve(cluster.state, preemptor, model));
    CHECK(warm.status == PlanStatus::no_preemption_needed);
    CHECK(cluster.state.topology().contains(host, warm.target_domain));
  }

  TEST_CASE(
      "a declared uniform price replaces the pass over the workloads, and is itself checked") {
    static_assert(UniformPriceModel<cost::victim_count>);
    static_assert(UniformPriceModel<declared_uniform>);
    static_assert(!UniformPriceModel<cost::lost_work>);
    ClusterSpec spec;
    spec.nodes = 4;
    const GeneratedCluster cluster = generate_cluster(spec);
    const Workload preemptor = make_preemptor({PreemptorKind::node, 8});
    CHECK_NOTHROW(check_price_sum(cluster.state, preemptor, declared_uniform{}));
    CHECK_THROWS_WITH_AS(check_price_sum(cluster.state, preemptor, declared_uniform{0.5, 1.0}),
                         doctest::Contains("uniform_price()"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(
        check_price_sum(cluster.state, preemptor,
                        declared_uniform{std::numeric_limits<double>::infinity(), 1.0}),
        doctest::Contains("uniform_price()"), std::invalid_argument);
    // n x price overflows: the full pass decides, and three eligible victims overflow too.
    std::size_t eligible = 0;
    cluster.state.for_each_workload(
        [&](const Workload& w) { eligible += w.preemptible && w.priority < preemptor.priority; });
    REQUIRE(eligible >= 3);
    CHECK_THROWS_WITH_AS(
        check_price_sum(cluster.state, preemptor,
                        declared_uniform{std::numeric_limits<double>::max() / 2, 1.0}),
        doctest::Contains("rescale"), std::invalid_argument);
    const PreemptionPlan plan =
        solvers::branch_and_bound.solve(cluster.state, preemptor, declared_uniform{2.0, 2.0});
    const PreemptionPlan counted =
        solvers::branch_and_bound.solve(cluster.state, preemptor, cost::victim_count{});
    CHECK(plan.cost == doctest::Approx(2.0 * counted.cost));
  }

  TEST_CASE("a state on another topology resets the cache") {
    ClusterSpec spec;
    spec.nodes = 4;
    const GeneratedCluster first = generate_cluster(spec);
    spec.nodes = 6;
    const GeneratedCluster second = generate_cluster(spec);
    const Workload preemptor = make_preemptor({PreemptorKind::node, 8});
    IncrementalDecider decider(solvers::branch_and_bound, cost::victim_count{}, preemptor);
    check_same_plan(decider.decide(first.state),
                    solvers::branch_and_bound.solve(first.state, preemptor, cost::victim_count{}));
    check_same_plan(decider.decide(second.state),
                    solvers::branch_and_bound.solve(second.state, preemptor, cost::victim_count{}));
    check_same_plan(decider.decide(first.state),
                    solvers::branch_and_bound.solve(first.state, preemptor, cost::victim_count{}));
  }
}

}  // namespace
}  // namespace topopreempt
