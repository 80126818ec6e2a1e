// SPDX-License-Identifier: MIT
// greedy, knapsack and branch_and_bound, each instantiated once per cost model, and explain
// (which words their plans with the same per-model context).

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string_view.h>

#include "solver_impl.hpp"
#include "topopreempt/solvers/branch_and_bound.hpp"
#include "topopreempt/solvers/explain.hpp"
#include "topopreempt/solvers/greedy.hpp"
#include "topopreempt/solvers/knapsack.hpp"

namespace topopreempt::python {

namespace {

using Greedy = ConcreteSolver<solvers::greedy_solver>;
using Knapsack = ConcreteSolver<solvers::knapsack_solver>;

class BranchAndBound : public ConcreteSolver<solvers::branch_and_bound_solver> {
 public:
  BranchAndBound(std::uint64_t node_limit, std::optional<double> time_limit_ms)
      : time_limit_ms_(time_limit_ms) {
    solver_.node_limit(node_limit);
    if (time_limit_ms) solver_.time_limit(milliseconds(*time_limit_ms, "branch_and_bound"));
  }
  [[nodiscard]] std::uint64_t node_limit() const noexcept { return solver_.limits().max_nodes; }
  [[nodiscard]] std::optional<double> time_limit_ms() const noexcept { return time_limit_ms_; }

 private:
  std::optional<double> time_limit_ms_;
};

class KnapsackWithCells : public Knapsack {
 public:
  explicit KnapsackWithCells(std::size_t cells) : cells_(cells) { solver_.max_cells(cells); }
  [[nodiscard]] std::size_t max_cells() const noexcept { return cells_; }

 private:
  std::size_t cells_;
};

/// What `without_text()` says, for each of the three solvers.
constexpr const char* without_text_doc =
    "The same solver (its options kept), returning plans without their text: `explanation` "
    "and every victim's and rejected domain's `reason` stay empty, the structured facts are "
    "all there (victims' `freed` and `freed_in`, verdicts' `kind` and numbers, `tier`), and "
    "explain(plan, state, preemptor, cost_model) words them later, to the same text. For hot "
    "paths (an IncrementalDecider, a scheduler loop) that print rarely.";

}  // namespace

void bind_exact_solvers(nb::module_& m) {
  nb::class_<Greedy, SolverHandle>(
      m, "GreedySolver",
      "Greedy: per target domain, repeatedly evicts (or shrinks) the victim with the lowest cost "
      "per useful freed resource until the preemptor fits, then spares the victims no longer "
      "needed. Domains are visited in ascending lower bound and skipped once their bound reaches "
      "the best cost found. Plans are topology-valid; cost is not proven minimal (`feasible`).")
      .def(nb::init<>())
      .def("without_text", [](const Greedy& s) { return Greedy::without_text(s); }, without_text_doc);

  nb::class_<KnapsackWithCells, SolverHandle>(
      m, "KnapsackSolver",
      "Knapsack: in each candidate domain, solves victim selection exactly as a multiple-choice "
      "min-cost covering over the (at most two) short dimensions by dynamic programming, when "
      "its preconditions hold (single unit target; whole devices or none; no shared occupied "
      "device; pools inside the target; at most two short dimensions; every elastic victim's "
      "shrink choices listed). A plan is `optimal` only if every searched domain met them; "
      "otherwise those domains were solved greedily, the plan is `feasible`, and each such "
      "domain's downgrade says why. The DP table per domain is at most `max_cells` (2^24).")
      .def(nb::init<std::size_t>(), nb::kw_only(), nb::arg("max_cells") = std::size_t{1} << 24)
      .def_prop_ro("max_cells", &KnapsackWithCells::max_cells)
      .def("without_text", [](const KnapsackWithCells& s) { return KnapsackWithCells::without_text(s); },
           without_text_doc);

  nb::class_<BranchAndBound, SolverHandle>(
      m, "BranchAndBoundSolver",
      "Exact branch-and-bound: minimum total cost over every victim set (and shrink choice) "
      "inside every candidate target domain of the tightest feasible tier, with fractional "
      "covering bounds, a greedy incumbent and pruning of whole domains by bound. `optimal` "
      "unless a limit stops it; then `feasible` with `lower_bound` and `gap()`. The default "
      "node budget (2,000,000) keeps it anytime and deterministic; `time_limit_ms` adds a "
      "clock (and makes the result depend on machine load).")
      .def(nb::init<std::uint64_t, std::optional<double>>(), nb::kw_only(),
           nb::arg("node_limit") = std::uint64_t{2'000'000}, nb::arg("time_limit_ms") = nb::none())
      .def_prop_ro("node_limit", &BranchAndBound::node_limit)
      .def_prop_ro("time_limit_ms", &BranchAndBound::time_limit_ms)
      .def("without_text", [](const BranchAndBound& s) { return BranchAndBound::without_text(s); },
           without_text_doc);

  m.def("explain", [](const PreemptionPlan& plan, const StateHandle& state, const Workload& preemptor,
                      const CostModelHandle& model) {
    PreemptionPlan worded = plan;
    const Workload copy = preemptor;
    state.read_released([&](const Allocation& a) {
      check_explainable(worded, a, copy);
      std::visit([&](const auto& concrete) { topopreempt::explain(worded, a, copy, concrete); }, model.model);
    });
    return worded;
  }, nb::arg("plan"), nb::arg("state"), nb::arg("preemptor"), nb::arg("cost_model"),
     "`plan` with its text: a copy (the argument is left as it is) whose `explanation` and "
     "every victim's and rejected domain's `reason`, where empty, are worded from the plan's "
     "structured facts exactly as the solver words them when it builds the text itself: for a "
     "plan of `solver.without_text()`, `explain(plan, state, preemptor, cost_model) == "
     "solver.solve(state, preemptor, cost_model)`. Pass what the plan was decided for: the "
     "same `state` (before the plan is committed: its victims still running, the preemptor "
     "not), `preemptor` and `cost_model` (another model words the same facts under its own "
     "name and cost parts). Text already there is kept, so a worded plan, or a plan of a "
     "baseline or of plan_queue (which always carry their text), comes back equal. ValueError "
     "for a plan made for another workload than `preemptor`, naming a domain, dimension or "
     "victim that `state` does not have (another state, or after commit), a tier the "
     "preemptor does not have, or a preemptor that is invalid or already running. Costs "
     "O(what it prints); releases the GIL.");

  m.attr("greedy") = nb::cast(Greedy{}, nb::rv_policy::move);
  m.attr("knapsack") = nb::cast(KnapsackWithCells(std::size_t{1} << 24), nb::rv_policy::move);
  m.attr("branch_and_bound") = nb::cast(BranchAndBound(2'000'000, std::nullopt), nb::rv_policy::move);
}

}  // namespace topopreempt::python
