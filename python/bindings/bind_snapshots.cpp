// SPDX-License-Identifier: MIT
// JSON snapshots, the same documents the CLI (tools/topopreempt-whatif) reads and writes.

#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>

#include <limits>

#include "common.hpp"
#include "topopreempt/io/snapshot.hpp"

namespace topopreempt::python {

namespace {

/// A loaded snapshot as Python sees it: the state is a shared `Allocation` object, the cost
/// model and solver the snapshot's own choice (as specs, so that they are written back as read).
struct PySnapshot {
  std::string description;
  nb::object state;  // an Allocation (StateHandle)
  Workload preemptor;
  std::optional<io::CostModelSpec> cost_model;
  std::optional<io::SolverSpec> solver;

  [[nodiscard]] const Allocation& allocation() const { return nb::cast<const StateHandle&>(state).allocation; }
};

nb::object module_attr(const char* name) { return nb::module_::import_("topopreempt._core").attr(name); }

PySnapshot from_io(io::Snapshot snapshot) {
  nb::object state = nb::cast(new StateHandle(std::move(snapshot.state)), nb::rv_policy::take_ownership);
  return PySnapshot{std::move(snapshot.description), std::move(state), std::move(snapshot.preemptor),
                    std::move(snapshot.cost_model), std::move(snapshot.solver)};
}

/// The Python cost model object a spec names; `KubernetesOrder` over the snapshot's state.
nb::object model_object(const io::CostModelSpec& spec, const nb::object& state) {
  return std::visit(
      [&](const auto& model) -> nb::object {
        using Model = std::decay_t<decltype(model)>;
        if constexpr (std::is_same_v<Model, cost::victim_count>) {
          return module_attr("VictimCount")();
        } else if constexpr (std::is_same_v<Model, cost::priority_weighted>) {
          return module_attr("PriorityWeighted")(nb::arg("offset") = model.offset);
        } else if constexpr (std::is_same_v<Model, cost::lost_work>) {
          return module_attr("LostWork")(nb::arg("floor") = model.floor);
        } else if constexpr (std::is_same_v<Model, cost::reload_time>) {
          return module_attr("ReloadTime")(nb::arg("bandwidth_gib_per_s") = model.bandwidth_gib_per_s,
                                           nb::arg("floor") = model.floor);
        } else {
          return module_attr("KubernetesOrder").attr("of")(state, nb::arg("base") = model.base);
        }
      },
      spec);
}

io::CostModelSpec model_spec(const CostModelHandle& handle) {
  return std::visit(
      [&](const auto& model) -> io::CostModelSpec {
        using Model = std::decay_t<decltype(model)>;
        if constexpr (std::is_same_v<Model, PythonCostModel>) {
          throw std::invalid_argument("a CallableCostModel cannot be written to a snapshot");
        } else if constexpr (!std::is_constructible_v<io::CostModelSpec, Model> &&
                             !std::is_same_v<Model, cost::kubernetes_order>) {
          throw std::invalid_argument("cost model '" + std::string(Model::name) +
                                      "' cannot be written to a snapshot (the format names " +
                                      "victim_count, priority_weighted, lost_work, reload_time "
                                      "and kubernetes_order)");
        } else if constexpr (std::is_same_v<Model, cost::kubernetes_order>) {
          return io::KubernetesOrderSpec{handle.kubernetes_base};
        } else {
          return model;
        }
      },
      handle.model);
}

/// The solver a spec names, with the limits it supports.
nb::object solver_object(const io::SolverSpec& spec) {
  const std::optional<double> time_limit =
      spec.time_limit_ms ? std::optional(static_cast<double>(*spec.time_limit_ms)) : std::nullopt;
  if (spec.name == "greedy") return module_attr("GreedySolver")();
  if (spec.name == "knapsack") return module_attr("KnapsackSolver")();
  if (spec.name == "kube_default") return module_attr("KubeDefaultSolver")();
  if (spec.name == "branch_and_bound") {
    nb::object solver = spec.node_limit
                            ? module_attr("BranchAndBoundSolver")(nb::arg("node_limit") = *spec.node_limit,
                                                                 nb::arg("time_limit_ms") = time_limit)
                            : module_attr("BranchAndBoundSolver")(nb::arg("time_limit_ms") = time_limit);
    return solver;
  }
  if (spec.name == "exhaustive_subsets") {
    return module_attr("ExhaustiveSubsetsSolver")(nb::arg("time_limit_ms") = time_limit,
                                                  nb::arg("node_limit") = spec.node_limit);
  }
  // "all" names no one solver.
  return nb::none();
}

io::Snapshot to_io(const PySnapshot& snapshot) {
  const Allocation& state = snapshot.allocation();
  return io::Snapshot{snapshot.description, state.topology_ptr(), state,
                      snapshot.preemptor,   snapshot.cost_model,  snapshot.solver};
}

}  // namespace

void bind_snapshots(nb::module_& m) {
  static nb::exception<io::SnapshotError> snapshot_error(m, "SnapshotError", PyExc_ValueError);
  nb::register_exception_translator([](const std::exception_ptr& error, void*) {
    try {
      std::rethrow_exception(error);
    } catch (const io::SnapshotError& e) {
      nb::object exception = snapshot_error(nb::str(e.what()));
      nb::setattr(exception, "path", nb::str(e.path().c_str()));
      nb::setattr(exception, "message", nb::str(e.message().c_str()));
      PyErr_SetObject(snapshot_error.ptr(), exception.ptr());
    }
  });

  nb::class_<PySnapshot>(
      m, "Snapshot",
      "A cluster snapshot (docs/snapshot-format.md, format 'topopreempt-snapshot/1'): the "
      "topology, the running workloads at their placements (`state`), the workload that wants "
      "in (`preemptor`), and optionally the file's cost model and solver.")
      .def("__init__", [](PySnapshot* s, nb::object state, Workload preemptor, std::string description,
                          std::optional<const CostModelHandle*> model, std::optional<nb::object> solver) {
        (void)nb::cast<const StateHandle&>(state);  // TypeError for anything else
        std::optional<io::CostModelSpec> model_spec_value;
        if (model && *model) model_spec_value = model_spec(**model);
        std::optional<io::SolverSpec> solver_spec;
        if (solver && !solver->is_none()) {
          const auto& handle = nb::cast<const SolverHandle&>(*solver);
          io::SolverSpec spec;
          spec.name = std::string(handle.name());
          // A node limit is written only where it differs from the solver's default, so that
          // a snapshot names what was chosen (and reads back to the same document).
          if (nb::hasattr(*solver, "node_limit") && !solver->attr("node_limit").is_none()) {
            const auto limit = nb::cast<std::uint64_t>(solver->attr("node_limit"));
            const std::uint64_t default_limit = spec.name == "branch_and_bound"
                                                    ? std::uint64_t{2'000'000}
                                                    : std::numeric_limits<std::uint64_t>::max();
            if (limit != default_limit) spec.node_limit = limit;
          }
          if (nb::hasattr(*solver, "time_limit_ms") && !solver->attr("time_limit_ms").is_none()) {
            spec.time_limit_ms = static_cast<std::int64_t>(nb::cast<double>(solver->attr("time_limit_ms")));
          }
          solver_spec = spec;
        }
        new (s) PySnapshot{std::move(description), std::move(state), std::move(preemptor),
                           std::move(model_spec_value), std::move(solver_spec)};
      }, nb::arg("state"), nb::arg("preemptor"), nb::kw_only(), nb::arg("description") = "",
         nb::arg("cost_model") = nb::none(), nb::arg("solver") = nb::none(),
         "A snapshot of `state` with `preemptor` pending (for save/to_json).")
      .def_ro("description", &PySnapshot::description, "free text from the file (may be empty)")
      .def_prop_ro("state", [](const PySnapshot& s) { return s.state; },
                   "the running workloads at their placements (an Allocation)")
      .def_prop_ro("topology", [](const PySnapshot& s) { return s.state.attr("topology"); })
      .def_ro("preemptor", &PySnapshot::preemptor, "not running; its id is unused in `state`")
      .def_prop_ro("cost_model", [](const PySnapshot& s) -> nb::object {
        return s.cost_model ? model_object(*s.cost_model, s.state) : nb::none();
      }, "the file's cost model (KubernetesOrder over this state), or None")
      .def_prop_ro("solver", [](const PySnapshot& s) -> nb::object {
        return s.solver ? solver_object(*s.solver) : nb::none();
      }, "the file's solver with its limits, or None ('all' or none named)")
      .def_prop_ro("solver_time_limit_ms", [](const PySnapshot& s) -> std::optional<std::int64_t> {
        return s.solver ? s.solver->time_limit_ms : std::nullopt;
      }, "the file's solver time limit in ms, or None (the CLI applies it to every solver with limits)")
      .def_prop_ro("solver_node_limit", [](const PySnapshot& s) -> std::optional<std::uint64_t> {
        return s.solver ? s.solver->node_limit : std::nullopt;
      }, "the file's solver node limit, or None")
      .def_prop_ro("solver_name", [](const PySnapshot& s) -> std::optional<std::string> {
        return s.solver ? std::optional(s.solver->name) : std::nullopt;
      }, "the file's solver name ('all' included), or None")
      .def("to_json", [](const PySnapshot& s, int indent) { return io::save_snapshot(to_io(s)).dump(indent); },
           nb::kw_only(), nb::arg("indent") = 2,
           "The snapshot document that load_snapshot_text reads back to the same topology, "
           "state (ascending ids, explicit placements) and preemptor.")
      .def("save", [](const PySnapshot& s, const std::string& path, int indent) {
        io::save_snapshot_file(to_io(s), path, indent);
      }, nb::arg("path"), nb::kw_only(), nb::arg("indent") = 2, "Writes to_json() to `path`.");

  m.def("load_snapshot", [](const std::string& path) { return from_io(io::load_snapshot_file(path)); },
        nb::arg("path"),
        "Reads a snapshot file. Every field is validated; unknown keys are errors. Raises "
        "SnapshotError (a ValueError) whose `path` is the JSON path of the first problem.");
  m.def("load_snapshot_text", [](std::string_view text) { return from_io(io::load_snapshot_text(text)); },
        nb::arg("text"), "Reads snapshot text (see load_snapshot).");
  m.def("plan_to_json", [](const PreemptionPlan& plan, const StateHandle& state, int indent) {
    return io::to_json(plan, state.allocation).dump(indent);
  }, nb::arg("plan"), nb::arg("state"), nb::kw_only(), nb::arg("indent") = 2,
     "A plan as JSON (format 'topopreempt-plan/1'), as the CLI prints it; victims carry their "
     "name, priority and replica count from `state` (the state the plan was computed on).");
}

}  // namespace topopreempt::python
