// SPDX-License-Identifier: MIT
// The discrete-event simulator: traces, options, placement policies, the portable random
// draws trace generators use, and metrics as plain Python values.

#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <limits>
#include <span>

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
  d["grows"] = m.grows;
  d["control_calls"] = m.control_calls;
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

class PyClusterControl;
/// What simulate's `progress` and `controller` accept (typed for the stubs).
using ProgressCallable = nb::typed<nb::callable, nb::object(const sim::SimulationProgress&)>;
using ControllerCallable = nb::typed<nb::callable, nb::object(const PyClusterControl&)>;

/// The Python face of `sim::ClusterControl`: valid only during the controller call it is
/// passed to (the simulator's object dies with the run), so the call invalidates it on return
/// and any later use is a ValueError instead of a dangling access.
class PyClusterControl {
 public:
  explicit PyClusterControl(sim::ClusterControl* control) : control_(control) {}
  [[nodiscard]] sim::ClusterControl& get() const {
    if (control_ == nullptr) {
      throw std::invalid_argument("this ClusterControl was used after its controller call returned");
    }
    return *control_;
  }
  void invalidate() noexcept { control_ = nullptr; }

 private:
  sim::ClusterControl* control_;
};

/// `SimulationOptions::controller` calling a Python callable. The run holds no GIL: each call
/// takes it, hands Python a fresh PyClusterControl and invalidates it when the call is over
/// (also when the callable raises; the exception then ends the run). Only the pointer to the
/// callable is captured, so copies of the options touch no Python reference count.
std::function<void(sim::ClusterControl&)> python_controller(const nb::object* controller) {
  return [controller](sim::ClusterControl& control) {
    nb::gil_scoped_acquire gil;
    nb::object handle = nb::cast(PyClusterControl(&control));
    struct Invalidate {
      nb::handle handle;
      ~Invalidate() { nb::inst_ptr<PyClusterControl>(handle)->invalidate(); }
    } invalidate_after{handle};
    (*controller)(handle);
  };
}

/// `SimulationOptions::progress` calling a Python callable with a copy of the progress (GIL
/// taken for the call, as for the controller).
std::function<void(const sim::SimulationProgress&)> python_progress(const nb::object* progress) {
  return [progress](const sim::SimulationProgress& where) {
    nb::gil_scoped_acquire gil;
    (*progress)(where);
  };
}

void bind_control(nb::module_& sim_module) {
  nb::class_<sim::SimulationProgress>(sim_module, "SimulationProgress",
                                      "Where a run stands; passed to simulate's `progress` callable.")
      .def_ro("now_s", &sim::SimulationProgress::now_s, "simulated time")
      .def_ro("events", &sim::SimulationProgress::events, "events processed so far")
      .def_ro("jobs", &sim::SimulationProgress::jobs, "jobs in the trace")
      .def_ro("jobs_finished", &sim::SimulationProgress::jobs_finished, "completed or dropped")
      .def_ro("preemptions", &sim::SimulationProgress::preemptions, "preemptions carried out so far")
      .def("__repr__", [](const sim::SimulationProgress& p) {
        return "<SimulationProgress t=" + std::to_string(p.now_s) + " s, " + std::to_string(p.events) +
               " events, " + std::to_string(p.jobs_finished) + "/" + std::to_string(p.jobs) + " jobs finished>";
      });

  nb::class_<sim::JobStatus>(sim_module, "JobStatus", "A trace job as a controller sees it.")
      .def_ro("id", &sim::JobStatus::id, "the job's workload id")
      .def_ro("priority", &sim::JobStatus::priority)
      .def_ro("replicas", &sim::JobStatus::replicas, "replicas now (running), or as it will start (waiting)")
      .def_ro("trace_replicas", &sim::JobStatus::trace_replicas,
              "replicas in the trace: the size at which work rate is 1")
      .def_ro("min_replicas", &sim::JobStatus::min_replicas, "elastic lower bound, as in the trace")
      .def_ro("gpus_per_replica", &sim::JobStatus::gpus_per_replica,
              "whole GPUs, or the fraction of one (gpu_milli / 1000)")
      .def_ro("remaining_work_s", &sim::JobStatus::remaining_work_s,
              "seconds of work left at trace size (at r replicas it takes remaining_work_s x "
              "trace_replicas / r)")
      .def_ro("queued_since_s", &sim::JobStatus::queued_since_s,
              "waiting jobs: when it last entered the queue")
      .def("__repr__", [](const sim::JobStatus& j) {
        return "<JobStatus " + std::to_string(j.id.value) + " priority " + std::to_string(j.priority) + ", " +
               std::to_string(j.replicas) + " replica(s)>";
      });

  nb::enum_<sim::HeldCapacity>(sim_module, "HeldCapacity",
                               "Whether capacity a controller holds (ClusterControl.reserve) counts "
                               "as used in the allocation metrics.")
      .value("in_use", sim::HeldCapacity::in_use,
             "held and busy (e.g. servers running inference outside the trace): counted as allocated")
      .value("idle", sim::HeldCapacity::idle,
             "held but idle (e.g. a cordoned server): not counted as allocated; simply unavailable "
             "to the trace's jobs");

  nb::class_<PyClusterControl>(
      sim_module, "ClusterControl",
      "What a periodic cluster-level controller (simulate's `controller`) may do: loan or "
      "reclaim servers, scale elastic jobs, hold capacity. Valid only during the call it is "
      "passed to (ValueError afterwards); every action takes effect at once (the scheduling "
      "pass that follows the call sees it), keeps the simulator's accounting right, validates "
      "first and raises ValueError naming the job, with nothing changed, for an unknown id, a "
      "job that is not running, or an action the state rejects.")
      .def_prop_ro("now", [](const PyClusterControl& c) { return c.get().now(); },
                   "simulated time of this call, seconds")
      .def("state", [](const PyClusterControl& c) { return new StateHandle(c.get().state()); },
           nb::rv_policy::take_ownership,
           "A copy of the cluster state (trace jobs and the controller's reservations) as an "
           "Allocation, e.g. for find_placement before reserve. O(state): changing it changes "
           "nothing in the run.")
      .def("running", [](const PyClusterControl& c) { return c.get().running(); },
           "The running trace jobs, in trace order (JobStatus list).")
      .def("waiting", [](const PyClusterControl& c) { return c.get().waiting(); },
           "The trace jobs in the queue (arrived, not running, not restarting), in trace order.")
      .def("evict", [](const PyClusterControl& c, WorkloadId id) { c.get().evict(id); }, nb::arg("id"),
           "Evicts running job `id` exactly as a preemption plan would: it loses the work since "
           "its last checkpoint and re-enters the queue after its restart delay. Counted in "
           "`evictions`.")
      .def("shrink", [](const PyClusterControl& c, WorkloadId id, const std::vector<std::int32_t>& drop) {
        c.get().shrink(id, std::span<const std::int32_t>(drop));
      }, nb::arg("id"), nb::arg("replicas_to_drop"),
         "Drops replicas of running elastic job `id` (indices into its current replica list, as "
         "Allocation.shrink); it keeps its work and runs slower. Counted in `shrinks`.")
      .def("grow", [](const PyClusterControl& c, WorkloadId id, std::int32_t extra) {
        return c.get().grow(id, extra);
      }, nb::arg("id"), nb::arg("extra"),
         "Adds up to `extra` replicas to running elastic job `id`, one at a time where "
         "find_placement finds room for one more replica; stops at the first that does not fit. "
         "Returns how many were added (counted in `grows`); the job runs faster (work rate = "
         "replicas / trace replicas). ValueError for a job that is not elastic or a negative "
         "`extra`.")
      .def("reserve", [](const PyClusterControl& c, const Workload& workload, const Placement& placement,
                         sim::HeldCapacity use) { c.get().reserve(workload, placement, use); },
           nb::arg("workload"), nb::arg("placement"), nb::arg("use") = sim::HeldCapacity::in_use,
           "Holds capacity outside the trace: adds `workload` (not preemptible; its id neither a "
           "trace job's nor running) at `placement` until `release`.")
      .def("release", [](const PyClusterControl& c, WorkloadId id) { c.get().release(id); }, nb::arg("id"),
           "Frees a reservation made by `reserve`.");
}

}  // namespace

void bind_simulator(nb::module_& m) {
  nb::module_ sim_module = m.def_submodule(
      "sim", "The discrete-event simulator (docs/simulator.md): replays a trace of jobs on a "
             "cluster with a solver deciding every preemption.");
  bind_control(sim_module);

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
      .def_ro("evictions", &sim::SimulationMetrics::evictions, "by plans and by the controller")
      .def_ro("shrinks", &sim::SimulationMetrics::shrinks, "by plans and by the controller")
      .def_ro("grows", &sim::SimulationMetrics::grows, "replicas added by the controller")
      .def_ro("control_calls", &sim::SimulationMetrics::control_calls, "controller calls")
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
                                bool record_events, const std::string& placement_policy,
                                std::optional<ProgressCallable> progress, std::uint64_t progress_every,
                                std::optional<ControllerCallable> controller, double control_interval_s) {
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
    // The callables stay referenced here (GIL held) for the whole run; the options' functions
    // only point at them.
    const nb::object progress_callable = progress ? nb::object(*progress) : nb::none();
    const nb::object controller_callable = controller ? nb::object(*controller) : nb::none();
    if (progress) options.progress = python_progress(&progress_callable);
    options.progress_every = progress_every;
    if (controller) options.controller = python_controller(&controller_callable);
    options.control_interval_s = control_interval_s;
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
     nb::arg("progress") = nb::none(), nb::arg("progress_every") = 1000, nb::arg("controller") = nb::none(),
     nb::arg("control_interval_s") = 0.0,
     "Replays `trace` on an empty cluster over `topology`. Each simulated instant: completions "
     "free their resources, evicted jobs whose restart delay is over re-enter the queue, "
     "arrivals join it; then one pass over the queue (highest priority first, then longest "
     "waiting, then lowest id) starts every job the placement policy can place. A job that does "
     "not fit and may preempt (`preemption`, priority >= `min_preemptor_priority`) gets "
     "solver.solve(state, job, cost_model); a plan with victims is verified (`verify_plans`) "
     "and carried out. Deterministic for a trace, options and seed (decision wall times "
     "aside). Releases the GIL; independent runs may execute concurrently. `placement_policy`: "
     "'find_placement' (default), 'best_fit' (FGD's), 'best_fit_strict' or 'random'. "
     "ValueError naming the job for an invalid trace.\n\n"
     "`progress(SimulationProgress)` is called every `progress_every` processed events and "
     "once at the end. `controller(ClusterControl)` is called at simulated times 0, "
     "`control_interval_s`, 2 x `control_interval_s`, ... while some trace job is unfinished "
     "(after that instant's scheduling pass; a second pass follows it, so capacity it frees is "
     "used at once); `control_interval_s` must then be finite and > 0 (ValueError). Both are "
     "called with the GIL taken for the call only (other threads run meanwhile); an exception "
     "either raises ends the run and propagates out of simulate.");
}

}  // namespace topopreempt::python
