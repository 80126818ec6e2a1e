// SPDX-License-Identifier: MIT
// libFuzzer target: snapshot text -> loader -> every solver (small limits) -> verifier.
// Findings are: any sanitizer report, any exception other than `SnapshotError` from the loader,
// a non-baseline plan that fails `verify_plan`, a baseline plan that fails it with its
// topology-blindness allowed, a save -> load round trip that changes the snapshot, a `commit`
// that ends elsewhere than replaying the plan's remove / shrink / add on a copy (or changes the
// state when it fails), and an `IncrementalDecider` whose plan or error differs from a cold
// solve's, before and after changes to the state.
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
#include <utility>
#include <vector>

#include "../state_fingerprint.hpp"
#include "topopreempt/baselines/exhaustive_subsets.hpp"
#include "topopreempt/baselines/kube_default.hpp"
#include "topopreempt/decisions/incremental_decider.hpp"
#include "topopreempt/io/snapshot.hpp"
#include "topopreempt/plan/transaction.hpp"
#include "topopreempt/plan/verifier.hpp"
#include "topopreempt/solvers/preemption_solver.hpp"
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

/// Equal fingerprints, equal states (the index read at the preemptor's priority).
std::vector<std::string> fingerprint(const Allocation& state, std::int32_t priority) {
  return test::state_fingerprint(state, {priority});
}

/// `commit` in place must end exactly where replaying the plan on a copy ends, reject the same
/// plan once it is stale, and leave the state untouched whenever it throws.
void check_commit(const io::Snapshot& snapshot, const PreemptionPlan& plan,
                  std::string_view solver) {
  // Nothing to commit without a placement (infeasible, or unknown at a limit).
  if (plan.status == PlanStatus::infeasible || plan.status == PlanStatus::unknown) return;
  const Workload& preemptor = snapshot.preemptor;
  const std::string who = std::string(solver) + " plan: ";
  std::optional<std::vector<std::string>> replayed;
  try {
    Allocation copy = snapshot.state;
    detail::transaction::apply(copy, plan, preemptor);
    replayed = fingerprint(copy, preemptor.priority);
  } catch (const std::exception&) {
  }
  Allocation state = snapshot.state;
  const std::vector<std::string> before = fingerprint(state, preemptor.priority);
  CommitResult result;
  try {
    result = commit(state, plan, preemptor);
  } catch (const std::exception& error) {
    if (fingerprint(state, preemptor.priority) != before) {
      finding(who + "a commit that threw changed the state: " + error.what());
    }
    if (replayed) finding(who + "commit threw where the replay succeeded: " + error.what());
    return;
  }
  if (!result.committed) finding(who + "a plan made on this very state did not commit");
  if (!replayed) finding(who + "commit succeeded where the replay failed");
  const std::vector<std::string> after = fingerprint(state, preemptor.priority);
  if (after != *replayed) finding(who + "commit in place ended elsewhere than the replay");
  // The preemptor now runs where the plan said: applying the plan again must be refused and
  // change nothing.
  try {
    if (commit(state, plan, preemptor).committed) finding(who + "a plan committed a second time");
  } catch (const std::exception&) {
  }
  if (fingerprint(state, preemptor.priority) != after) {
    finding(who + "a refused second commit changed the state");
  }
}

/// What `decide` returned: the plan, or the error message (errors compare by message).
template <class Decide>
std::pair<std::optional<PreemptionPlan>, std::string> outcome(Decide&& decide) {
  try {
    return {decide(), {}};
  } catch (const std::exception& error) {
    return {std::nullopt, error.what()};
  }
}

/// An `IncrementalDecider` must answer as a cold solve does: on the snapshot, after a workload
/// leaves, after it comes back, and after the preemptor's plan is committed.
template <class Solver, class Model>
void check_decider(const Solver& solver, const io::Snapshot& snapshot, const Model& model) {
  IncrementalDecider decider(solver, model, snapshot.preemptor);
  Allocation state = snapshot.state;
  const auto compare = [&](const char* when) {
    const auto warm = outcome([&] { return decider.decide(state); });
    auto cold = outcome([&] { return solver.solve(state, snapshot.preemptor, model); });
    if (warm != cold) {
      finding(std::string(Solver::name) + ": the incremental decider differs from a cold solve " +
              when + (warm.first ? "" : " (decider threw: " + warm.second + ")") +
              (cold.first ? "" : " (cold threw: " + cold.second + ")"));
    }
    return cold.first;
  };
  const std::optional<PreemptionPlan> first = compare("on the snapshot");
  const std::vector<WorkloadId> ids = state.workload_ids();
  if (!ids.empty()) {
    const WorkloadId leaving = ids[ids.size() / 2];
    const Workload kept = state.workload(leaving);
    const Placement where = state.placement(leaving);
    state.remove(leaving);
    (void)compare("after a workload left");
    state.add(kept, where);
    (void)compare("after it came back");
  }
  if (first && first->status != PlanStatus::infeasible && first->status != PlanStatus::unknown) {
    try {
      if (commit(state, *first, snapshot.preemptor).committed) (void)compare("after a commit");
    } catch (const std::exception&) {
    }
  }
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
  if constexpr (!is_baseline_v<Solver>) check_commit(snapshot, plan, Solver::name);
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
    check_solver(solvers::branch_and_bound_solver{}.node_limit(20'000).time_limit(
                     std::chrono::milliseconds(200)),
                 snapshot, model);
    // Deterministic limits only: a time limit could end the warm and the cold search apart.
    check_decider(solvers::greedy, snapshot, model);
    check_decider(solvers::knapsack, snapshot, model);
    check_decider(solvers::branch_and_bound_solver{}.node_limit(20'000), snapshot, model);
    check_solver(baselines::kube_default, snapshot, model);
    check_solver(baselines::exhaustive_subsets.max_victims_per_domain(10).time_limit(
                     std::chrono::milliseconds(200)),
                 snapshot, model);
    return 0;
  });
  return 0;
}
