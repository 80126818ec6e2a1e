// SPDX-License-Identifier: MIT
// The discrete-event simulator: traces, options, placement policies, the portable random
// draws trace generators use, and metrics as plain Python values.

#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <limits>

#include "common.hpp"
#include "topopreempt/sim/sim.hpp"

namespace topopreempt::python {

namespace {

using PolicyVariant = std::variant<sim::default_placement, sim::best_fit_placement, sim::random_placement>;

/// A placement policy chosen at run time (its name is overwritten in the metrics).
struct ErasedPolicy {
  static constexpr std::string_view name = "erased";
  const PolicyVariant* policy = nullptr;
  [[nodiscard]] std::optional<Placement> place(const Allocation& state, const Workload& workload,
                                               sim::Random& random) const {
    return std::visit([&](const auto& p) { return p.place(state, workload, random); }, *policy);
  }
};

PolicyVariant policy_named(const std::string& name) {
  if (name == "find_placement") return sim::default_placement{};
  if (name == "best_fit") return sim::best_fit_placement{};
  if (name == "best_fit_strict") return sim::best_fit_placement{false};
  if (name == "random") return sim::random_placement{};
  throw std::invalid_argument("unknown placement policy '" + name +
                              "' (find_placement, best_fit, best_fit_strict or random)");
}

const char* event_name(sim::EventKind kind) {
  switch (kind) {
    case sim::EventKind::arrival: return "arrival";
    case sim::EventKind::start: return "start";
    case sim::EventKind::completion: return "completion";
    case sim::EventKind::eviction: return "eviction";
    case sim::EventKind::shrink: return "shrink";
    case sim::EventKind::requeue: return "requeue";
    case sim::EventKind::drop: return "drop";
    case sim::EventKind::grow: return "grow";
  }
  return "unknown";
}

/// The scalar metrics, one dict: a row of a pandas.DataFrame.
nb::dict metrics_row(const sim::SimulationMetrics& m) {
  nb::dict d;
  d["solver"] = m.solver;
  d["cost_model"] = m.cost_model;
  d["placement_policy"] = m.placement_policy;
  d["jobs"] = m.jobs;
  d["jobs_started"] = m.jobs_started;
  d["jobs_completed"] = m.jobs_completed;
  d["jobs_dropped"] = m.jobs_dropped;
  d["jobs_waiting_at_end"] = m.jobs_waiting_at_end;
  d["decisions"] = m.decisions;
  d["preemptions"] = m.preemptions;
  d["wasted_preemptions"] = m.wasted_preemptions;
  d["hit_rate"] = m.hit_rate();
  d["victims"] = m.victims;
  d["victims_per_preemption"] = m.victims_per_preemption();
  d["evictions"] = m.evictions;
  d["shrinks"] = m.shrinks;
  d["victim_cost"] = m.victim_cost;
  d["gpu_hours_lost"] = m.gpu_hours_lost;
  d["plans_verified"] = m.plans_verified;
  d["plans_rejected"] = m.plans_rejected;
  d["mean_allocation_ratio"] = m.mean_allocation_ratio;
  d["mean_jct_s"] = m.mean_jct_s;
  d["mean_queue_s"] = m.mean_queue_s;
  d["end_time_s"] = m.end_time_s;
  d["decision_p50_s"] = m.decision_percentile(0.5);
  d["decision_p99_s"] = m.decision_percentile(0.99);
  return d;
}

}  // namespace

void bind_simulator(nb::module_& m) {
  nb::module_ sim_module = m.def_submodule(
      "sim", "The discrete-event simulator (docs/simulator.md): replays a trace of jobs on a "
             "cluster with a solver deciding every preemption.");

  nb::class_<sim::TraceJob>(sim_module, "TraceJob",
                            "One job of a trace: what it asks for (`workload`), when it comes and "
                            "how long it runs, and what an eviction costs it.")
      .def("__init__", [](sim::TraceJob* j, Workload w, double arrival, double duration,
                          double checkpoint, double restart) {
        new (j) sim::TraceJob{std::move(w), arrival, duration, checkpoint, restart};
      }, nb::arg("workload"), nb::arg("arrival_s"), nb::arg("duration_s"), nb::kw_only(),
         nb::arg("checkpoint_interval_s") = 0.0, nb::arg("restart_delay_s") = 0.0)
      .def_rw("workload", &sim::TraceJob::workload)
      .def_rw("arrival_s", &sim::TraceJob::arrival_s, "when it enters the queue")
      .def_rw("duration_s", &sim::TraceJob::duration_s, "seconds it runs at full size if never disturbed")
      .def_rw("checkpoint_interval_s", &sim::TraceJob::checkpoint_interval_s,
              "progress is saved every this many seconds of work (0 = never)")
      .def_rw("restart_delay_s", &sim::TraceJob::restart_delay_s,
              "an evicted job re-enters the queue this long after its eviction");

  sim_module.def("load_trace_csv", [](const std::string& path, const Topology& topology) {
    try {
      return sim::load_trace_csv(path, topology);
    } catch (const std::runtime_error& error) {
      throw std::invalid_argument(error.what());  // a bad trace is bad input: ValueError
    }
  }, nb::arg("path"), nb::arg("topology"),
     "Reads a trace CSV (columns in docs/simulator.md). ValueError naming the file, line and "
     "column of the first bad field, a duplicate id, or a job invalid against `topology`.");

  nb::enum_<sim::WastedPreemptor>(sim_module, "WastedPreemptor",
                                  "What a preemptor does after a wasted preemption.")
      .value("keep_waiting", sim::WastedPreemptor::keep_waiting)
      .value("start_without_topology", sim::WastedPreemptor::start_without_topology);

  nb::class_<sim::Random>(sim_module, "Random",
                          "The simulator's generator (std::mt19937_64): a seed gives the same "
                          "sequence on every platform, so traces made with it match C++'s.")
      .def(nb::init<std::uint64_t>(), nb::arg("seed"))
      .def("uniform01", [](sim::Random& r) { return sim::uniform01(r); }, "Uniform in [0, 1) with 53 random bits.")
      .def("uniform_below", [](sim::Random& r, std::uint64_t bound) { return sim::uniform_below(r, bound); },
           nb::arg("bound"), "Uniform integer in [0, bound) without modulo bias; ValueError on 0.")
      .def("exponential", [](sim::Random& r, double mean) { return sim::exponential(r, mean); },
           nb::arg("mean"), "Exponentially distributed with the given mean.");

  nb::class_<sim::SimulationMetrics>(
      sim_module, "SimulationMetrics",
      "Everything a run measured. `as_dict()` is one row for pandas.DataFrame; `allocation`, "
      "`events` and `waits` are column dicts / lists of dicts pandas takes directly.")
      .def_ro("solver", &sim::SimulationMetrics::solver)
      .def_ro("cost_model", &sim::SimulationMetrics::cost_model)
      .def_ro("placement_policy", &sim::SimulationMetrics::placement_policy)
      .def_ro("jobs", &sim::SimulationMetrics::jobs)
      .def_ro("jobs_started", &sim::SimulationMetrics::jobs_started)
      .def_ro("jobs_completed", &sim::SimulationMetrics::jobs_completed)
      .def_ro("jobs_dropped", &sim::SimulationMetrics::jobs_dropped)
      .def_ro("jobs_waiting_at_end", &sim::SimulationMetrics::jobs_waiting_at_end)
      .def_ro("decisions", &sim::SimulationMetrics::decisions, "solver calls")
      .def_ro("preemptions", &sim::SimulationMetrics::preemptions, "plans with victims carried out")
      .def_ro("wasted_preemptions", &sim::SimulationMetrics::wasted_preemptions,
              "preemptions after which the preemptor could not start with its guaranteed scopes")
      .def_ro("victims", &sim::SimulationMetrics::victims)
      .def_ro("evictions", &sim::SimulationMetrics::evictions)
      .def_ro("shrinks", &sim::SimulationMetrics::shrinks)
      .def_ro("victim_cost", &sim::SimulationMetrics::victim_cost)
      .def_ro("gpu_hours_lost", &sim::SimulationMetrics::gpu_hours_lost)
      .def_ro("plans_verified", &sim::SimulationMetrics::plans_verified)
      .def_ro("plans_rejected", &sim::SimulationMetrics::plans_rejected)
      .def_ro("verifier_failures", &sim::SimulationMetrics::verifier_failures)
      .def_ro("mean_allocation_ratio", &sim::SimulationMetrics::mean_allocation_ratio)
      .def_ro("mean_jct_s", &sim::SimulationMetrics::mean_jct_s)
      .def_ro("mean_queue_s", &sim::SimulationMetrics::mean_queue_s)
      .def_ro("end_time_s", &sim::SimulationMetrics::end_time_s)
      .def_ro("decision_seconds", &sim::SimulationMetrics::decision_seconds,
              "wall time of each decision (not deterministic)")
      .def("hit_rate", &sim::SimulationMetrics::hit_rate,
           "Preemptions whose preemptor started with its topology requirements met, over all (1 without any).")
      .def("victims_per_preemption", &sim::SimulationMetrics::victims_per_preemption)
      .def("decision_percentile", &sim::SimulationMetrics::decision_percentile, nb::arg("p"),
           "Nearest-rank percentile (p in [0, 1]) of the decision times.")
      .def("digest", &sim::SimulationMetrics::digest,
           "Every deterministic field as text: equal digests mean equal runs.")
      .def("as_dict", &metrics_row, "The scalar metrics as one dict (a DataFrame row).")
      .def_prop_ro("waits", [](const sim::SimulationMetrics& s) {
        nb::list rows;
        for (const auto& w : s.waits) {
          nb::dict d;
          d["priority"] = w.priority;
          d["starts"] = w.starts;
          d["mean_s"] = w.mean_s;
          d["p50_s"] = w.p50_s;
          d["p99_s"] = w.p99_s;
          rows.append(d);
        }
        return rows;
      }, "Waits per priority class (ascending), a list of dicts.")
      .def_prop_ro("allocation", [](const sim::SimulationMetrics& s) {
        nb::list time, arrived, allocated;
        for (const auto& a : s.allocation) {
          time.append(a.time_s);
          arrived.append(a.arrived_gpu_ratio);
          allocated.append(a.allocated_gpu_ratio);
        }
        nb::dict d;
        d["time_s"] = time;
        d["arrived_gpu_ratio"] = arrived;
        d["allocated_gpu_ratio"] = allocated;
        return d;
      }, "The allocation samples as columns {time_s, arrived_gpu_ratio, allocated_gpu_ratio}.")
      .def_prop_ro("events", [](const sim::SimulationMetrics& s) {
        nb::list time, kind, id;
        for (const auto& e : s.events) {
          time.append(e.time_s);
          kind.append(event_name(e.kind));
          id.append(e.id.value);
        }
        nb::dict d;
        d["time_s"] = time;
        d["kind"] = kind;
        d["id"] = id;
        return d;
      }, "The event log (with record_events=True) as columns {time_s, kind, id}.");

  sim_module.def("simulate", [](std::shared_ptr<Topology> topology, const std::vector<sim::TraceJob>& trace,
                                const SolverHandle& solver, const CostModelHandle& model,
                                sim::WastedPreemptor wasted, bool preemption,
                                std::optional<std::int32_t> min_preemptor_priority, bool verify_plans,
                                bool keep_unplaced, std::optional<std::int32_t> drop_below,
                                std::optional<double> horizon_s, std::uint64_t seed, bool record_allocation,
                                bool record_events, const std::string& placement_policy) {
    if (!topology) throw std::invalid_argument("simulate: no topology");
    sim::SimulationOptions options;
    options.wasted_preemptor = wasted;
    options.preemption = preemption;
    options.min_preemptor_priority = min_preemptor_priority.value_or(std::numeric_limits<std::int32_t>::min());
    options.verify_plans = verify_plans;
    options.keep_unplaced = keep_unplaced;
    options.drop_unplaced_below_priority = drop_below.value_or(std::numeric_limits<std::int32_t>::min());
    options.horizon_s = horizon_s.value_or(std::numeric_limits<double>::infinity());
    options.seed = seed;
    options.record_allocation = record_allocation;
    options.record_events = record_events;
    const PolicyVariant policy = policy_named(placement_policy);
    sim::SimulationMetrics metrics = [&] {
      nb::gil_scoped_release release;
      return sim::simulate(std::shared_ptr<const Topology>(std::move(topology)), trace,
                           ErasedSolver{&solver, &model.model}, ErasedModel{&model.model}, options,
                           ErasedPolicy{&policy});
    }();
    metrics.solver = std::string(solver.name());
    metrics.cost_model = model_name(model.model);
    metrics.placement_policy = std::visit([](const auto& p) { return std::string(p.name); }, policy);
    return metrics;
  }, nb::arg("topology"), nb::arg("trace"), nb::arg("solver"), nb::arg("cost_model"), nb::kw_only(),
     nb::arg("wasted_preemptor") = sim::WastedPreemptor::keep_waiting, nb::arg("preemption") = true,
     nb::arg("min_preemptor_priority") = nb::none(), nb::arg("verify_plans") = false,
     nb::arg("keep_unplaced") = true, nb::arg("drop_unplaced_below_priority") = nb::none(),
     nb::arg("horizon_s") = nb::none(), nb::arg("seed") = 1, nb::arg("record_allocation") = true,
     nb::arg("record_events") = false, nb::arg("placement_policy") = "find_placement",
     "Replays `trace` on an empty cluster over `topology`. Each simulated instant: completions "
     "free their resources, evicted jobs whose restart delay is over re-enter the queue, "
     "arrivals join it; then one pass over the queue (highest priority first, then longest "
     "waiting, then lowest id) starts every job the placement policy can place. A job that does "
     "not fit and may preempt (`preemption`, priority >= `min_preemptor_priority`) gets "
     "solver.solve(state, job, cost_model); a plan with victims is verified (`verify_plans`) "
     "and carried out. Deterministic for a trace, options and seed (decision wall times "
     "aside). Releases the GIL; independent runs may execute concurrently. `placement_policy`: "
     "'find_placement' (default), 'best_fit' (FGD's), 'best_fit_strict' or 'random'. "
     "ValueError naming the job for an invalid trace. (The C++ progress callback and cluster "
     "controller are not bound.)");
}

}  // namespace topopreempt::python
