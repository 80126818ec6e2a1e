// SPDX-License-Identifier: MIT
#pragma once
// A C++ solver behind the Python `Solver` interface; included by the solver translation units
// only, so that each solver's instantiations (one per cost model) are compiled in one of them.

#include <chrono>
#include <memory>

#include "common.hpp"
#include "topopreempt/decisions/incremental_decider.hpp"
#include "topopreempt/solvers/preemption_solver.hpp"

namespace topopreempt::python {

template <class Solver, class Model>
class ConcreteDecider final : public DeciderBase {
 public:
  ConcreteDecider(Solver solver, Model model, Workload preemptor)
      : decider_(std::move(solver), std::move(model), std::move(preemptor)) {}
  [[nodiscard]] PreemptionPlan decide(const Allocation& state) override { return decider_.decide(state); }
  [[nodiscard]] std::uint64_t reused_reads() const noexcept override { return decider_.reused_reads(); }
  [[nodiscard]] std::uint64_t fresh_reads() const noexcept override { return decider_.fresh_reads(); }
  [[nodiscard]] const Workload& preemptor() const noexcept override { return decider_.preemptor(); }

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
