// SPDX-License-Identifier: MIT
#pragma once
// The sequence fuzzer's engine (issue 19): input bytes drive a random sequence of operations on
// one cluster state (add, remove, shrink, solve and commit, stale commits, queue plans committed
// in order, incremental decider calls) and every rule the library promises is checked after each
// step. Deterministic: the same bytes replay the same sequence. Driven by libFuzzer
// (tests/fuzz/fuzz_sequence.cpp) and by a doctest case over fixed seeds
// (tests/test_sequence_fuzz.cpp), so plain ctest runs it without clang.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "state_fingerprint.hpp"
#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/placement_search.hpp"
#include "topopreempt/decisions/incremental_decider.hpp"
#include "topopreempt/decisions/preemptor_queue.hpp"
#include "topopreempt/plan/transaction.hpp"
#include "topopreempt/plan/verifier.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/solvers/greedy.hpp"
#include "topopreempt/solvers/knapsack.hpp"

namespace topopreempt::test::sequence {

/// Reads small numbers from the input; past its end every read is 0 (so any prefix replays).
class Bytes {
 public:
  explicit Bytes(std::span<const std::uint8_t> data) : data_(data) {}
  /// A number in [0, bound) (bound >= 1).
  [[nodiscard]] std::uint32_t below(std::uint32_t bound) {
    const std::uint32_t byte = at_ < data_.size() ? data_[at_++] : 0U;
    return byte % bound;
  }
  /// Whether input is left.
  [[nodiscard]] bool more() const { return at_ < data_.size(); }

 private:
  std::span<const std::uint8_t> data_;
  std::size_t at_ = 0;
};

/// What a sequence found: empty when every check held.
using Finding = std::optional<std::string>;

/// One sequence over one state. Operations never let a library exception other than the
/// documented ones escape; a broken rule becomes the finding.
class Run {
 public:
  explicit Run(std::span<const std::uint8_t> data) : bytes_(data), state_(make_cluster(bytes_)) {}

  /// Runs at most `max_steps` operations (or until the input ends); the first broken rule.
  Finding run(std::size_t max_steps) {
    for (std::size_t step = 0; step < max_steps && bytes_.more() && !finding_; ++step) {
      switch (bytes_.below(7)) {
        case 0:
        case 1:
          add();
          break;
        case 2:
          remove();
          break;
        case 3:
          shrink();
          break;
        case 4:
          solve_and_commit();
          break;
        case 5:
          queue();
          break;
        default:
          decide();
          break;
      }
    }
    return finding_;
  }
  /// The state as the operations so far left it.
  [[nodiscard]] const Allocation& state() const noexcept { return state_; }

 private:
  static Allocation make_cluster(Bytes& bytes) {
    switch (bytes.below(3)) {
      case 0:
        return Allocation(std::make_shared<const Topology>(
            shapes::cluster(shapes::rtx4090_server(), 2, 2)));
      case 1:
        return Allocation(std::make_shared<const Topology>(
            shapes::cluster(shapes::hgx_h100(), 2, 1)));
      default:
        return Allocation(std::make_shared<const Topology>(
            shapes::cluster(shapes::dense_8gpu_server(), 3, 2)));
    }
  }

  void fail(std::string what) {
    if (!finding_) finding_ = std::move(what);
  }

  [[nodiscard]] std::vector<std::string> fingerprint() const {
    return state_fingerprint(state_, {0, 5, 10, 20, 30});
  }

  /// A random requirement at a level this topology has (or none), including levels whose
  /// domains hold no device (the RTX 4090 server's core groups), where a workload with devices
  /// cannot be guaranteed and every check must agree that it is infeasible.
  TopologyRequirement requirement() {
    const Topology& topology = state_.topology();
    const auto& levels = topology.levels();
    const std::uint32_t pick = bytes_.below(static_cast<std::uint32_t>(levels.size()) + 2);
    if (pick >= levels.size()) return {};
    const std::string& level = levels[pick];
    return bytes_.below(2) == 0 ? TopologyRequirement::guaranteed(level)
                                : TopologyRequirement::best_effort(level);
  }

  /// A random workload: whole GPUs or a GPU share, with CPU (pools beside the devices on the
  /// RTX 4090 server), or CPU only; a gang of up to 3, sometimes elastic.
  Workload workload(std::int32_t priority) {
    const ResourceSchema& schema = state_.topology().schema();
    Workload w;
    w.id = WorkloadId{next_id_++};
    w.priority = priority;
    w.preemptible = bytes_.below(8) != 0;
    w.replicas = static_cast<std::int32_t>(1 + bytes_.below(3));
    if (w.replicas > 1 && bytes_.below(2) == 0) w.min_replicas = 1;
    const Amount cpu = 1000 * static_cast<Amount>(bytes_.below(9));
    switch (bytes_.below(3)) {
      case 0:
        w.demand.whole_devices = static_cast<std::int32_t>(1 + bytes_.below(4));
        w.demand.resources = schema.make({{"cpu_milli", cpu}});
        break;
      case 1:
        w.demand.resources = schema.make(
            {{"gpu_milli", 100 * static_cast<Amount>(1 + bytes_.below(9))}, {"cpu_milli", cpu}});
        break;
      default:
        w.demand.resources = schema.make({{"cpu_milli", cpu + 1000}});
        break;
    }
    w.replica_scope = requirement();
    w.gang_scope = requirement();
    return w;
  }

  [[nodiscard]] std::optional<WorkloadId> running() {
    const std::vector<WorkloadId> ids = state_.workload_ids();
    if (ids.empty()) return std::nullopt;
    return ids[bytes_.below(static_cast<std::uint32_t>(ids.size()))];
  }

  /// The placement search's answer must be accepted by `add`.
  void add() {
    const Workload w = workload(static_cast<std::int32_t>(1 + bytes_.below(20)));
    PlacementSearchResult found;
    try {
      found = find_placement(state_, w);
    } catch (const std::invalid_argument&) {
      return;  // e.g. a best-effort level below a guaranteed one: rejected by contract
    }
    if (!found.found) return;
    try {
      state_.add(w, found.placement);
    } catch (const std::invalid_argument& error) {
      fail("add refused the placement search's placement for " + w.label() + ": " + error.what());
    }
  }

  /// Removing twice: the second is refused and changes nothing.
  void remove() {
    const std::optional<WorkloadId> id = running();
    if (!id) return;
    state_.remove(*id);
    const auto before = fingerprint();
    try {
      state_.remove(*id);
      fail("a second remove of workload " + std::to_string(id->value) + " succeeded");
    } catch (const std::out_of_range&) {  // an unknown id, as documented
    }
    if (fingerprint() != before) fail("a refused remove changed the state");
  }

  /// Shrinks an elastic workload by one replica, or checks the refusal changes nothing.
  void shrink() {
    const std::optional<WorkloadId> id = running();
    if (!id) return;
    const Workload& w = state_.workload(*id);
    const std::int32_t drop = static_cast<std::int32_t>(bytes_.below(static_cast<std::uint32_t>(w.replicas)));
    const std::vector<std::int32_t> replicas{drop};
    const bool allowed = w.min_replicas && w.replicas > *w.min_replicas;
    const auto before = fingerprint();
    try {
      state_.shrink(*id, replicas);
      if (!allowed) fail("shrink below min_replicas succeeded for workload " + std::to_string(id->value));
    } catch (const std::invalid_argument&) {
      if (allowed) fail("a valid shrink was refused for workload " + std::to_string(id->value));
      if (fingerprint() != before) fail("a refused shrink changed the state");
    }
  }

  template <class Solver>
  std::optional<PreemptionPlan> solve_verified(const Solver& solver, const Workload& preemptor) {
    PreemptionPlan plan;
    try {
      plan = solver.solve(state_, preemptor, model_);
    } catch (const std::invalid_argument&) {
      return std::nullopt;  // a request the library rejects by contract
    }
    const PlanVerdict verdict = verify_plan(state_, preemptor, plan, model_);
    if (!verdict.ok) {
      fail(std::string(Solver::name) + " plan for " + preemptor.label() +
           " fails verification: " + verdict.summary());
    }
    // The fits-already check and the solver agree on "no preemption needed" (issue 19: at a
    // level the devices' branch skips, they did not).
    const bool fits = find_placement(state_, preemptor).found;
    if (fits != (plan.status == PlanStatus::no_preemption_needed)) {
      fail(std::string(Solver::name) + " says " + std::string(to_string(plan.status)) + " for " +
           preemptor.label() + " but the placement search " + (fits ? "places" : "does not place") +
           " it as the cluster stands");
    }
    return plan;
  }

  /// Commits `plan` and checks the outcome against a replay on a copy: a stale plan is refused
  /// (or throws) leaving the state unchanged; a current one lands exactly where the replay does.
  void commit_checked(const PreemptionPlan& plan, const Workload& preemptor) {
    if (plan.status == PlanStatus::infeasible) return;
    const bool current = !state_.contains(preemptor.id) && plan_is_current(state_, plan);
    std::optional<std::vector<std::string>> replayed;
    try {
      Allocation copy = state_;
      detail::transaction::apply(copy, plan, preemptor);
      replayed = state_fingerprint(copy, {0, 5, 10, 20, 30});
    } catch (const std::exception&) {
    }
    const auto before = fingerprint();
    try {
      const CommitResult result = commit(state_, plan, preemptor);
      if (!result.committed) {
        if (current) fail("a current plan for " + preemptor.label() + " did not commit");
        if (fingerprint() != before) fail("a refused stale commit changed the state");
        return;
      }
      if (!current) fail("a stale plan for " + preemptor.label() + " committed");
      if (!replayed || fingerprint() != *replayed) fail("a commit ended elsewhere than its replay");
    } catch (const std::invalid_argument& error) {
      if (fingerprint() != before) fail(std::string("a commit that threw changed the state: ") + error.what());
      if (current && replayed) fail(std::string("a current plan's commit threw: ") + error.what());
    }
  }

  /// Solves with every solver (each verified), commits one; stale plans from earlier steps
  /// are committed too and must be refused unless still current.
  void solve_and_commit() {
    const Workload preemptor = workload(static_cast<std::int32_t>(5 + bytes_.below(30)));
    std::vector<PreemptionPlan> plans;
    if (auto plan = solve_verified(solvers::greedy, preemptor)) plans.push_back(std::move(*plan));
    if (auto plan = solve_verified(solvers::knapsack, preemptor)) plans.push_back(std::move(*plan));
    if (auto plan = solve_verified(branch_and_bound_, preemptor)) plans.push_back(std::move(*plan));
    if (plans.empty() || finding_) return;
    if (stale_ && bytes_.below(2) == 0) commit_checked(stale_->first, stale_->second);
    const std::size_t chosen = bytes_.below(static_cast<std::uint32_t>(plans.size()));
    if (bytes_.below(3) == 0) {
      stale_.emplace(plans[chosen], preemptor);  // kept for a later, probably stale, commit
      return;
    }
    commit_checked(plans[chosen], preemptor);
  }

  /// Plans a queue of up to 3 preemptors and commits the plans in result order: each must be
  /// verified on the state it lands on and commit.
  void queue() {
    std::vector<Workload> pending;
    const std::uint32_t count = 1 + bytes_.below(3);
    for (std::uint32_t k = 0; k < count; ++k) {
      pending.push_back(workload(static_cast<std::int32_t>(5 + bytes_.below(30))));
    }
    const QueueResult result = plan_queue(state_, pending, solvers::greedy, model_, nominations_);
    for (const QueuedPlan& item : result.plans) {
      if (item.status == NominationStatus::rejected || item.status == NominationStatus::infeasible ||
          item.status == NominationStatus::unknown) {
        continue;
      }
      const Workload& preemptor = *std::find_if(pending.begin(), pending.end(), [&](const Workload& w) {
        return w.id == item.preemptor;
      });
      const PlanVerdict verdict = verify_plan(state_, preemptor, item.plan, model_);
      if (!verdict.ok) fail("queue plan for " + preemptor.label() + ": " + verdict.summary());
      try {
        if (!commit(state_, item.plan, preemptor).committed) {
          fail("queue plan for " + preemptor.label() + " did not commit in result order");
        }
      } catch (const std::invalid_argument& error) {
        fail("queue plan for " + preemptor.label() + " threw on commit: " + error.what());
      }
      nominations_.forget(preemptor.id);
    }
  }

  /// The incremental decider answers exactly as a cold solve does.
  void decide() {
    if (!decider_) {
      decider_preemptor_ = workload(static_cast<std::int32_t>(10 + bytes_.below(25)));
      decider_.emplace(solvers::knapsack, model_, decider_preemptor_);
    }
    if (state_.contains(decider_preemptor_.id)) return;
    const auto outcome = [](auto&& decide) -> std::pair<std::optional<PreemptionPlan>, std::string> {
      try {
        return {decide(), {}};
      } catch (const std::invalid_argument& error) {
        return {std::nullopt, error.what()};
      }
    };
    const auto warm = outcome([&] { return decider_->decide(state_); });
    const auto cold = outcome([&] { return solvers::knapsack.solve(state_, decider_preemptor_, model_); });
    if (warm != cold) fail("the incremental decider differs from a cold solve for " + decider_preemptor_.label());
  }

  Bytes bytes_;
  Allocation state_;
  cost::priority_weighted model_{};
  solvers::branch_and_bound_solver branch_and_bound_ = solvers::branch_and_bound_solver{}.node_limit(5'000);
  Nominations nominations_;
  std::optional<std::pair<PreemptionPlan, Workload>> stale_;
  Workload decider_preemptor_;
  std::optional<IncrementalDecider<solvers::knapsack_solver, cost::priority_weighted>> decider_;
  std::uint64_t next_id_ = 1;
  Finding finding_;
};

/// Runs the sequence the bytes describe (at most `max_steps` operations).
[[nodiscard]] inline Finding run_sequence(std::span<const std::uint8_t> data,
                                          std::size_t max_steps = 64) {
  return Run(data).run(max_steps);
}

}  // namespace topopreempt::test::sequence
