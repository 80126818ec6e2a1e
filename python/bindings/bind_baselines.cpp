// SPDX-License-Identifier: MIT
// The baselines: Kubernetes' DefaultPreemption and the paper's exhaustive subset search.

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string_view.h>

#include "solver_impl.hpp"
#include "topopreempt/baselines/exhaustive_subsets.hpp"
#include "topopreempt/baselines/kube_default.hpp"

namespace topopreempt::python {

namespace {

using KubeDefault = ConcreteSolver<baselines::kube_default_solver>;

class ExhaustiveSubsets : public ConcreteSolver<baselines::exhaustive_subsets_solver> {
 public:
  ExhaustiveSubsets(baselines::SubsetRanking ranking, double alpha, std::size_t max_victims,
                    std::optional<double> time_limit_ms, std::optional<std::uint64_t> node_limit)
      : time_limit_ms_(time_limit_ms) {
    solver_ = solver_.ranking(ranking).alpha(alpha).max_victims_per_domain(max_victims);
    if (time_limit_ms) solver_ = solver_.time_limit(milliseconds(*time_limit_ms, "exhaustive_subsets"));
    if (node_limit) solver_ = solver_.node_limit(*node_limit);
  }
  [[nodiscard]] std::optional<double> time_limit_ms() const noexcept { return time_limit_ms_; }

 private:
  std::optional<double> time_limit_ms_;
};

}  // namespace

void bind_baselines(nb::module_& m) {
  nb::class_<KubeDefault, SolverHandle>(
      m, "KubeDefaultSolver",
      "Kubernetes' DefaultPreemption, modelled as a baseline (for comparison only). Per replica "
      "of the preemptor: the scheduler's topology-blind filter first (a pod that fits some node "
      "at node level is bound there, with scopes relaxed if need be: `topology_satisfied` "
      "False); otherwise on every node remove all lower-priority pods, check a node-level "
      "aggregate fit that ignores NUMA, socket and NVLink, reprieve pods in MoreImportantPod "
      "order, pick the node as pickOneNodeForPreemption does, evict (a gang entirely), and place "
      "the replica honouring its scopes when it can, else with them relaxed "
      "(`topology_satisfied` False: the wasted preemption this baseline exists to show). "
      "Status `feasible` with victims (no optimality claim), `no_preemption_needed`, or "
      "`infeasible`. Cost = sum of evict prices; elastic victims are always evicted whole.")
      .def(nb::init<>());

  nb::enum_<baselines::SubsetRanking>(m, "SubsetRanking", "How ExhaustiveSubsetsSolver ranks victim sets.")
      .value("cost_first", baselines::SubsetRanking::cost_first,
             "Minimum total cost under the cost model; ties by higher S, then fewer victims.")
      .value("paper_score", baselines::SubsetRanking::paper_score,
             "The paper's ranking: maximum S(C); ties by fewer victims.");

  nb::class_<ExhaustiveSubsets, SolverHandle>(
      m, "ExhaustiveSubsetsSolver",
      "The victim search of topology-aware preemption (arXiv 2411.11560): per node, every "
      "k-subset of the node's lower-priority workloads for k = 1, 2, ..., keeping each subset "
      "after which the preemptor fits, ranked by cost (default) or by the paper's score "
      "S(C) = alpha / sum(priority + 2^31) + (1 - alpha) T(C). Exponential by design: domains "
      "with more than `max_victims_per_domain` eligible victims are not enumerated (the plan "
      "is then at best `feasible`). A baseline, and the brute-force reference for the exact "
      "solvers.")
      .def(nb::init<baselines::SubsetRanking, double, std::size_t, std::optional<double>,
                    std::optional<std::uint64_t>>(),
           nb::kw_only(), nb::arg("ranking") = baselines::SubsetRanking::cost_first,
           nb::arg("alpha") = 0.0, nb::arg("max_victims_per_domain") = std::size_t{22},
           nb::arg("time_limit_ms") = nb::none(), nb::arg("node_limit") = nb::none())
      .def_prop_ro("ranking", [](const ExhaustiveSubsets& s) { return s.solver().ranking(); })
      .def_prop_ro("alpha", [](const ExhaustiveSubsets& s) { return s.solver().alpha(); })
      .def_prop_ro("max_victims_per_domain", [](const ExhaustiveSubsets& s) {
        return s.solver().max_victims_per_domain();
      })
      .def_prop_ro("node_limit", [](const ExhaustiveSubsets& s) { return s.solver().node_limit(); })
      .def_prop_ro("time_limit_ms", &ExhaustiveSubsets::time_limit_ms);

  m.attr("kube_default") = nb::cast(KubeDefault{}, nb::rv_policy::move);
  m.attr("exhaustive_subsets") = nb::cast(
      ExhaustiveSubsets(baselines::SubsetRanking::cost_first, 0.0, 22, std::nullopt, std::nullopt),
      nb::rv_policy::move);
}

}  // namespace topopreempt::python
