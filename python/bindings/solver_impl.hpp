// SPDX-License-Identifier: MIT
#pragma once
// A C++ solver behind the Python `Solver` interface; included by the solver translation units
// only, so that each solver's instantiations (one per cost model) are compiled in one of them.

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

#include "common.hpp"
#include "topopreempt/decisions/incremental_decider.hpp"
#include "topopreempt/solvers/preemption_solver.hpp"

namespace topopreempt::python {

/// Throws `std::invalid_argument` unless `plan` can be worded on `state` for `preemptor`: the
/// plan is for that workload, every domain it names is one of `state`'s topology, every
/// dimension one of its schema (or whole devices, distinct hosts), and its victims are running
/// there. `topopreempt::explain` takes these as given (it is told to get what the plan was
/// decided for) and would read out of range otherwise; from Python they are checked, so a plan
/// explained on another state, for another preemptor or after its commit is an error, not a
/// crash. What it cannot see (another cost model, a state that changed since) gives text for
/// the facts as they are, not an error.
inline void check_explainable(const PreemptionPlan& plan, const Allocation& state, const Workload& preemptor) {
  const std::string where = "explain: the plan of " + plan.solver + " for workload " +
                            std::to_string(plan.preemptor.value);
  if (plan.preemptor != preemptor.id) {
    throw std::invalid_argument(where + " cannot be explained for " + preemptor.label() +
                                " (pass the preemptor it was decided for)");
  }
  const Topology& topology = state.topology();
  const auto foreign = [&](const std::string& what) {
    return std::invalid_argument(where + ": " + what + " is not a domain of the state's topology (" +
                                 std::to_string(topology.size()) +
                                 " domains): explain the plan on the state it was decided on");
  };
  const auto check_domain = [&](DomainId domain, const std::string& what) {
    if (domain.valid() && !topology.valid_domain(domain)) throw foreign(what + " " + std::to_string(domain.value));
  };
  const auto check_dimension = [&](std::size_t dimension, const std::string& what) {
    if (dimension != whole_devices_dimension && dimension != distinct_hosts_dimension &&
        dimension >= topology.schema().size()) {
      throw std::invalid_argument(where + ": " + what + " names resource dimension " +
                                  std::to_string(dimension) + ", but the state's schema has " +
                                  std::to_string(topology.schema().size()) +
                                  ": explain the plan on the state it was decided on");
    }
  };
  check_domain(plan.target_domain, "its target");
  for (const Victim& victim : plan.victims) {
    const std::string what = "victim " + std::to_string(victim.id.value);
    if (!state.contains(victim.id)) {
      throw std::invalid_argument(where + ": " + what +
                                  " is not running in the state: explain the plan on the state "
                                  "it was decided on, before it is committed");
    }
    check_domain(victim.freed_in, what + "'s domain");
    // A reason still to word names `freed_in`.
    if (victim.reason.empty() && !victim.freed_in.valid()) throw foreign(what + "'s domain (none)");
    for (const FreedAmount& freed : victim.freed) check_dimension(freed.dimension, what);
  }
  for (const DomainVerdict& verdict : plan.rejected) {
    if (!verdict.domain.valid()) throw foreign("a rejected domain (none)");
    check_domain(verdict.domain, "rejected domain");
    check_dimension(verdict.dimension, "the verdict on domain " + std::to_string(verdict.domain.value));
  }
  for (const Downgrade& downgrade : plan.downgrades) check_domain(downgrade.domain, "downgraded domain");
}

template <class Solver, class Model>
class ConcreteDecider final : public DeciderBase {
 public:
  ConcreteDecider(Solver solver, Model model, Workload preemptor)
      : decider_(std::move(solver), std::move(model), std::move(preemptor)) {}
  [[nodiscard]] PreemptionPlan decide(const Allocation& state) override { return decider_.decide(state); }
  [[nodiscard]] std::uint64_t reused_reads() const noexcept override { return decider_.reused_reads(); }
  [[nodiscard]] std::uint64_t fresh_reads() const noexcept override { return decider_.fresh_reads(); }
  [[nodiscard]] const Workload& preemptor() const noexcept override { return decider_.preemptor(); }
  void explain(PreemptionPlan& plan, const Allocation& state) const override {
    check_explainable(plan, state, decider_.preemptor());
    decider_.explain(plan, state);
  }

 private:
  IncrementalDecider<Solver, Model> decider_;
};

template <class Solver>
class ConcreteSolver : public SolverHandle {
 public:
  explicit ConcreteSolver(Solver solver = {}) : solver_(std::move(solver)) {}
  [[nodiscard]] std::string_view name() const noexcept override { return Solver::name; }
  [[nodiscard]] bool is_exact() const noexcept override { return is_exact_v<Solver>; }
  [[nodiscard]] bool is_baseline() const noexcept override { return is_baseline_v<Solver>; }
  [[nodiscard]] bool builds_text() const noexcept override {
    if constexpr (requires(const Solver& s) { s.builds_text(); }) {
      return solver_.builds_text();
    } else {
      return true;  // the baselines always word their plans
    }
  }
  /// The same solver, built `without_text()` (greedy, knapsack and branch_and_bound).
  template <class Self>
  [[nodiscard]] static Self without_text(const Self& solver) {
    Self copy = solver;
    copy.solver_ = copy.solver_.without_text();
    return copy;
  }
  [[nodiscard]] PreemptionPlan solve(const Allocation& state, const Workload& preemptor,
                                     const ModelVariant& model) const override {
    return std::visit([&](const auto& m) { return solver_.solve(state, preemptor, m); }, model);
  }
  [[nodiscard]] std::unique_ptr<DeciderBase> decider(ModelVariant model, Workload preemptor) const override {
    return std::visit(
        [&](auto& m) -> std::unique_ptr<DeciderBase> {
          using Model = std::decay_t<decltype(m)>;
          if constexpr (requires(detail::ScanCache& cache) { solver_.solve(std::declval<const Allocation&>(),
                                                                           preemptor, m, cache); }) {
            return std::make_unique<ConcreteDecider<Solver, Model>>(solver_, std::move(m), std::move(preemptor));
          } else {
            throw std::invalid_argument("solver '" + std::string(Solver::name) +
                                        "' has no incremental form (greedy, knapsack and "
                                        "branch_and_bound have one)");
          }
        },
        model);
  }
  [[nodiscard]] const Solver& solver() const noexcept { return solver_; }

 protected:
  Solver solver_;
};

/// Milliseconds from Python as a duration; ValueError for NaN or a negative value.
inline std::chrono::duration<double, std::milli> milliseconds(double ms, std::string_view solver) {
  if (!(ms >= 0.0)) {
    throw std::invalid_argument(std::string(solver) + ": time_limit_ms must be >= 0, got " +
                                std::to_string(ms));
  }
  return std::chrono::duration<double, std::milli>(ms);
}

}  // namespace topopreempt::python
