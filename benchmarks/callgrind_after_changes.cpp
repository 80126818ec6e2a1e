// SPDX-License-Identifier: MIT
// Instructions of an `IncrementalDecider` after 100 changes against a cold decision, under
// callgrind (BENCHMARKS.md, "Deciding again after 100 changes"): replays the rounds of
// `after_changes/...` (bench_index.cpp) on 10,000 nodes and collects only the decider's calls
// (`warm`), or only the cold calls (`cold`), of the rounds that must preempt. Not built by
// CMake (it needs valgrind's header); built and run by hand (two command lines):
//   g++ -O3 -DNDEBUG -g -std=c++20 -Iinclude -Icompat/include -Ibenchmarks
//     -isystem /usr/include/eigen3 benchmarks/callgrind_after_changes.cpp -o /tmp/after_changes
//   valgrind --tool=callgrind --collect-atstart=no /tmp/after_changes numa4 greedy warm 20
// Arguments: the kind (bench_kinds.hpp), the solver (`greedy`, else branch-and-bound), `warm`
// or `cold`, and the rounds (40 by default). With COUNTS=1 in the environment it prints the
// decider's cache counters for each decision of a round that must preempt; with EVICT=1 it
// evicts the CPU's caches before each collected call, as the timed benchmark does (run it with
// `--cache-sim=yes` to count where such a call misses). Exits 1 when a
// decider's plan differs from the cold plan.
#include <valgrind/callgrind.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "bench_kinds.hpp"
#include "topopreempt/decisions/incremental_decider.hpp"
#include "topopreempt/model/cluster_generator.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/greedy.hpp"

namespace {

using namespace topopreempt;

const topopreempt_bench::BenchCost cost_model{};

/// The decider's cache counters, to print what one decision reused and took afresh.
template <class Decider>
std::array<std::uint64_t, 14> counters(const Decider& decider) {
  return {decider.reused_openings(),   decider.fresh_openings(),     decider.reused_group_bounds(),
          decider.fresh_group_bounds(), decider.reused_listings(),   decider.fresh_listings(),
          decider.reused_admissions(),  decider.fresh_admissions(),  decider.reused_covers(),
          decider.fresh_covers(),       decider.reused_searches(),   decider.fresh_searches(),
          decider.reused_placements(),  decider.fresh_placements()};
}

/// Writes a buffer twice the size of this machine's 32 MiB L3, as `bench_index` does before a
/// timed call, so that callgrind's cache simulation (`--cache-sim=yes`) counts the misses of a
/// call that finds none of its data in the caches.
void evict_cpu_caches() {
  static std::vector<unsigned char> buffer(64U << 20U);
  for (std::size_t i = 0; i < buffer.size(); i += 64) buffer[i] = static_cast<unsigned char>(i);
}

template <class Solver>
int replay(const Solver& solver, std::size_t kind, bool collect_decider, int rounds) {
  const topopreempt_bench::Kind& spec = topopreempt_bench::kinds()[kind];
  Allocation state = topopreempt_bench::cluster(10000, spec.saturated).state;
  const Workload preemptor = topopreempt_bench::variants(spec)[0];
  IncrementalDecider decider(solver, cost_model, preemptor);
  (void)decider.decide(state);
  topopreempt_bench::ChangeRounds changes(state);
  const bool print_counters = std::getenv("COUNTS") != nullptr;
  const bool evict = std::getenv("EVICT") != nullptr;
  int preempting = 0;
  int same = 0;
  for (int round = 0; round < rounds; ++round) {
    changes.draw();  // the benchmark's draw of 100 changes
    // As the benchmark: the decider decides on the generated cluster, then the changes again.
    changes.undo();
    (void)decider.decide(state);
    changes.redo();
    const bool must_preempt = solver.solve(state, preemptor, cost_model).has_victims_plan();
    changes.undo();
    (void)decider.decide(state);
    changes.redo();
    const auto before = counters(decider);
    if (evict && collect_decider) evict_cpu_caches();
    if (must_preempt && collect_decider) CALLGRIND_TOGGLE_COLLECT;
    const PreemptionPlan warm = decider.decide(state);
    if (must_preempt && collect_decider) CALLGRIND_TOGGLE_COLLECT;
    if (evict && !collect_decider) evict_cpu_caches();
    if (must_preempt && !collect_decider) CALLGRIND_TOGGLE_COLLECT;
    const PreemptionPlan cold = solver.solve(state, preemptor, cost_model);
    if (must_preempt && !collect_decider) CALLGRIND_TOGGLE_COLLECT;
    if (print_counters && must_preempt) {
      const auto after = counters(decider);
      std::printf("reused/fresh: openings %llu/%llu group bounds %llu/%llu listings %llu/%llu "
                  "admissions %llu/%llu covers %llu/%llu searches %llu/%llu placements %llu/%llu\n",
                  static_cast<unsigned long long>(after[0] - before[0]),
                  static_cast<unsigned long long>(after[1] - before[1]),
                  static_cast<unsigned long long>(after[2] - before[2]),
                  static_cast<unsigned long long>(after[3] - before[3]),
                  static_cast<unsigned long long>(after[4] - before[4]),
                  static_cast<unsigned long long>(after[5] - before[5]),
                  static_cast<unsigned long long>(after[6] - before[6]),
                  static_cast<unsigned long long>(after[7] - before[7]),
                  static_cast<unsigned long long>(after[8] - before[8]),
                  static_cast<unsigned long long>(after[9] - before[9]),
                  static_cast<unsigned long long>(after[10] - before[10]),
                  static_cast<unsigned long long>(after[11] - before[11]),
                  static_cast<unsigned long long>(after[12] - before[12]),
                  static_cast<unsigned long long>(after[13] - before[13]));
    }
    preempting += must_preempt ? 1 : 0;
    same += warm == cold ? 1 : 0;
    changes.undo();
    (void)decider.decide(state);
  }
  std::printf("kind=%s preempting=%d same=%d/%d\n", spec.name, preempting, same, rounds);
  return same == rounds ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s KIND greedy|branch_and_bound warm|cold [ROUNDS]\n", argv[0]);
    return 2;
  }
  const std::string_view kind_name = argv[1];
  const bool greedy = std::string_view(argv[2]) == "greedy";
  const bool collect_decider = std::string_view(argv[3]) == "warm";
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 40;
  std::size_t kind = 0;
  while (kind < topopreempt_bench::kinds().size() &&
         topopreempt_bench::kinds()[kind].name != kind_name)
    ++kind;
  if (kind == topopreempt_bench::kinds().size()) {
    std::fprintf(stderr, "unknown kind\n");
    return 2;
  }
  if (greedy) return replay(solvers::greedy.without_text(), kind, collect_decider, rounds);
  return replay(solvers::branch_and_bound.without_text(), kind, collect_decider, rounds);
}
