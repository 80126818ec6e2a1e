// SPDX-License-Identifier: MIT
// libFuzzer target: snapshot text -> loader -> every solver (small limits) -> verifier.
// Findings are: any sanitizer report, any exception other than `SnapshotError` from the loader,
// a non-baseline plan that fails `verify_plan`, a baseline plan that fails it with its
// topology-blindness allowed, and a save -> load round trip that changes the snapshot.
// Built only by tests/fuzz/CMakeLists.txt (clang, -fsanitize=fuzzer,address,undefined).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <string_view>

#include "topopreempt/baselines/exhaustive_subsets.hpp"
#include "topopreempt/baselines/kube_default.hpp"
#include "topopreempt/io/snapshot.hpp"
#include "topopreempt/plan_verifier.hpp"
#include "topopreempt/preemption_solver.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/greedy.hpp"
#include "topopreempt/solvers/knapsack.hpp"

namespace {

using namespace topopreempt;

// Bigger snapshots are loaded (the loader is what they test) but not solved: a solve over
// thousands of domains per input would starve the fuzzer of executions.
constexpr std::size_t max_solved_domains = 4'000;
constexpr std::size_t max_solved_workloads = 64;

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "FINDING: %s\n", what.c_str());
  std::abort();
}

template <class Solver, class Model>
void check_solver(const Solver& solver, const io::Snapshot& snapshot, const Model& model) {
  PreemptionPlan plan;
  try {
    plan = solver.solve(snapshot.state, snapshot.preemptor, model);
  } catch (const std::invalid_argument&) {
    return;  // a preemptor the solver rejects by contract (e.g. an unpriceable cost)
  }
  VerifyOptions options;
  options.require_topology = !(is_baseline_v<Solver> && !plan.topology_satisfied);
  const PlanVerdict verdict = verify_plan(snapshot.state, snapshot.preemptor, plan, model, options);
  if (!verdict.ok) {
    std::string text = std::string(Solver::name) + " plan (" + std::string(to_string(plan.status)) +
                       ") fails verification:";
    for (const auto& violation : verdict.violations) text += "\n  " + violation;
    finding(text);
  }
}

void round_trip(const io::Snapshot& snapshot) {
  const nlohmann::json saved = io::save_snapshot(snapshot);
  std::optional<io::Snapshot> reloaded;
  try {
    reloaded.emplace(io::load_snapshot(saved));
  } catch (const io::SnapshotError& error) {
    finding(std::string("a saved snapshot does not load: ") + error.what());
  }
  if (io::save_snapshot(*reloaded) != saved) finding("save -> load -> save changed the document");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<io::Snapshot> loaded;
  try {
    loaded.emplace(io::load_snapshot_text(text));
  } catch (const io::SnapshotError& error) {
    if (error.path().empty() || error.path().front() != '$') {
      finding(std::string("a SnapshotError without a JSON path: ") + error.what());
    }
    return 0;
  } catch (const std::bad_alloc&) {
    return 0;  // the sanitizer's allocation limit, reported by libFuzzer itself if it matters
  } catch (const std::exception& error) {
    finding(std::string("a foreign exception left the loader: ") + error.what());
  }
  const io::Snapshot& snapshot = *loaded;
  round_trip(snapshot);
  if (snapshot.topology->size() > max_solved_domains ||
      snapshot.state.size() > max_solved_workloads) {
    return 0;
  }
  const io::CostModelSpec spec = snapshot.cost_model.value_or(io::CostModelSpec{});
  io::visit_cost_model(spec, snapshot.state, [&](const auto& model) {
    check_solver(solvers::greedy, snapshot, model);
    check_solver(solvers::knapsack, snapshot, model);
    check_solver(solvers::branch_and_bound_solver{}
                     .node_limit(20'000)
                     .time_limit(std::chrono::milliseconds(200)),
                 snapshot, model);
    check_solver(baselines::kube_default, snapshot, model);
    check_solver(baselines::exhaustive_subsets.max_victims_per_domain(10).time_limit(
                     std::chrono::milliseconds(200)),
                 snapshot, model);
    return 0;
  });
  return 0;
}
