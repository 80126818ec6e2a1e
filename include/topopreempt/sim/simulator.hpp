// SPDX-License-Identifier: MIT
#pragma once
/// @file simulator.hpp
/// A discrete-event cluster simulator: replays a `Trace` on a topology, starts jobs with a
/// `PlacementPolicy`, and when a job that may preempt does not fit, asks any `PreemptionSolver`
/// (with any `CostModel`) for a plan, carries it out (victims evicted, or shrunk when elastic,
/// and requeued), and measures what that policy costs over time. An optional periodic controller
/// (`SimulationOptions::controller`, see `sim/cluster_control.hpp`) acts on the whole cluster.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/plan/verifier.hpp"
#include "topopreempt/plan/preemption_plan.hpp"
#include "topopreempt/solvers/preemption_solver.hpp"
#include "topopreempt/sim/cluster_control.hpp"
#include "topopreempt/sim/placement_policy.hpp"
#include "topopreempt/sim/random.hpp"
#include "topopreempt/sim/trace.hpp"

namespace topopreempt::sim {

/// Where a run stands; passed to `SimulationOptions::progress`.
struct SimulationProgress {
  double now_s = 0.0;               ///< simulated time
  std::uint64_t events = 0;         ///< events processed so far
  std::uint64_t jobs = 0;           ///< jobs in the trace
  std::uint64_t jobs_finished = 0;  ///< completed or dropped
  std::uint64_t preemptions = 0;    ///< preemptions carried out so far
};

/// What a preemptor does after a wasted preemption (its plan's placement breaks its guaranteed
/// topology, e.g. a `kube_default` plan with `topology_satisfied == false`).
enum class WastedPreemptor : std::uint8_t {
  /// It keeps waiting: a guaranteed requirement is a hard constraint (the victims' room goes to
  /// whoever fits next; it may preempt again later).
  keep_waiting,
  /// It starts on the plan's placement without its topology guarantee, as a pod does when the
  /// node-level scheduler preempted for it and the kubelet admits it anyway (how the
  /// topology-aware preemption paper counts its hit rate).
  start_without_topology,
};

/// How a run behaves. Plain data; copy freely.
struct SimulationOptions {
  /// See `WastedPreemptor`.
  WastedPreemptor wasted_preemptor = WastedPreemptor::keep_waiting;
  /// Whether jobs that do not fit may preempt (false: a pure placement simulation).
  bool preemption = true;
  /// Only jobs of at least this priority ask the solver for a plan.
  std::int32_t min_preemptor_priority = std::numeric_limits<std::int32_t>::min();
  /// Check every plan with `verify_plan` before carrying it out (a failing plan is counted in
  /// `plans_rejected` and not applied). On by default in debug builds.
#ifdef NDEBUG
  bool verify_plans = false;
#else
  bool verify_plans = true;
#endif
  /// false: a job that cannot start (nor preempt) when it arrives is dropped instead of
  /// waiting (FGD's protocol: pods that do not fit are not retried).
  bool keep_unplaced = true;
  /// Jobs of a priority below this are dropped like that too (e.g. best-effort pods), while
  /// the others wait. Default: nobody.
  std::int32_t drop_unplaced_below_priority = std::numeric_limits<std::int32_t>::min();
  /// Events after this simulated time are not processed.
  double horizon_s = std::numeric_limits<double>::infinity();
  /// Seeds the generator handed to the placement policy (tie-breaking).
  std::uint64_t seed = 1;
  /// Record `SimulationMetrics::allocation` (one sample per simulated instant with events).
  bool record_allocation = true;
  /// Record `SimulationMetrics::events` (one line per arrival, start, eviction, ...).
  bool record_events = false;
  /// Called every `progress_every` processed events and once at the end; may be empty.
  std::function<void(const SimulationProgress&)> progress{};
  /// Events between two `progress` calls.
  std::uint64_t progress_every = 1000;
  /// A cluster-level controller, called at simulated times 0, `control_interval_s`,
  /// 2 x `control_interval_s`, ... while some trace job is unfinished (none is called after the
  /// last job completed or was dropped; set `horizon_s` if the controller
  /// may hold capacity that waiting jobs need forever). At such an instant the events come
  /// first, then a scheduling pass, then the controller, then a second scheduling pass (so
  /// capacity it frees is used at once). May be empty (no controller).
  std::function<void(ClusterControl&)> controller{};
  /// Seconds between controller calls; must be finite and > 0 when `controller` is set.
  double control_interval_s = 0.0;
};

/// Waiting time of one priority class: from entering the queue (arrival, or re-entry after an
/// eviction) to each start.
struct PriorityWaits {
  /// The priority class.
  std::int32_t priority = 0;
  /// Starts counted (restarts after an eviction included).
  std::uint64_t starts = 0;
  /// Mean wait, seconds.
  double mean_s = 0.0;
  /// Median wait, seconds.
  double p50_s = 0.0;
  /// 99th-percentile wait, seconds.
  double p99_s = 0.0;
};

/// One sample of the allocation ratio.
struct AllocationSample {
  /// Simulated time, seconds.
  double time_s = 0.0;
  double arrived_gpu_ratio = 0.0;    ///< GPUs requested by every job arrived so far / capacity
  double allocated_gpu_ratio = 0.0;  ///< GPUs held by running jobs / capacity
};

/// What happened, for event logs (`SimulationOptions::record_events`).
enum class EventKind : std::uint8_t {
  arrival,     ///< the job arrived and joined the queue
  start,       ///< it started (or restarted) on a placement
  completion,  ///< it ran to completion
  eviction,    ///< a plan evicted it; it loses its work since the last checkpoint
  shrink,      ///< a plan or a controller dropped some of its replicas
  requeue,     ///< it rejoined the queue after an eviction's restart delay
  drop,        ///< it could not be placed and was dropped (`keep_unplaced`)
  grow,        ///< a controller added replicas (`ClusterControl::grow`)
};

/// "arrival", "start", ...
[[nodiscard]] constexpr std::string_view to_string(EventKind kind) noexcept {
  switch (kind) {
    case EventKind::arrival:
      return "arrival";
    case EventKind::start:
      return "start";
    case EventKind::completion:
      return "completion";
    case EventKind::eviction:
      return "eviction";
    case EventKind::shrink:
      return "shrink";
    case EventKind::requeue:
      return "requeue";
    case EventKind::drop:
      return "drop";
    case EventKind::grow:
      return "grow";
  }
  return "?";
}

/// One logged event.
struct EventRecord {
  /// Simulated time, seconds.
  double time_s = 0.0;
  /// What happened.
  EventKind kind = EventKind::arrival;
  /// To which job.
  WorkloadId id{};
  /// Member-wise equality.
  friend bool operator==(const EventRecord&, const EventRecord&) = default;
};

/// Everything a run measured. All fields but `decision_seconds` (and the two percentiles
/// derived from it) are deterministic for a trace, options and seed; `digest()` prints exactly
/// those.
struct SimulationMetrics {
  /// The solver's name.
  std::string solver;
  /// The cost model's name.
  std::string cost_model;
  /// The placement policy's name.
  std::string placement_policy;
  /// Jobs in the trace.
  std::uint64_t jobs = 0;
  std::uint64_t jobs_started = 0;  ///< jobs that started at least once
  /// Jobs that ran to completion.
  std::uint64_t jobs_completed = 0;
  std::uint64_t jobs_dropped = 0;  ///< `keep_unplaced = false` only
  /// Jobs still queued when the run ended.
  std::uint64_t jobs_waiting_at_end = 0;
  std::uint64_t decisions = 0;    ///< solver calls
  std::uint64_t preemptions = 0;  ///< plans with victims that were carried out
  /// Preemptions after which the preemptor could not start on the plan's placement with its
  /// guaranteed scopes (a topology-blind plan, or a placement `Allocation::add` rejected): the
  /// victims were evicted for nothing.
  std::uint64_t wasted_preemptions = 0;
  std::uint64_t victims = 0;        ///< victims of preemption plans (evictions + shrinks)
  std::uint64_t evictions = 0;      ///< by plans and by the controller
  std::uint64_t shrinks = 0;        ///< by plans and by the controller
  std::uint64_t grows = 0;          ///< replicas added by the controller
  std::uint64_t control_calls = 0;  ///< controller calls
  double victim_cost = 0.0;         ///< sum of the plans' costs under the run's cost model
  double gpu_hours_lost = 0.0;      ///< work since the last checkpoint of evicted jobs x GPUs
  /// Plans checked by the verifier (`verify_plans`).
  std::uint64_t plans_verified = 0;
  std::uint64_t plans_rejected = 0;            ///< failed `verify_plan`; not carried out
  std::vector<std::string> verifier_failures;  ///< the first few rejections, explained
  std::vector<PriorityWaits> waits;            ///< ascending priority
  /// The allocation ratio over time (`record_allocation`).
  std::vector<AllocationSample> allocation;
  /// Time-weighted GPU allocation ratio (controller reservations count when `in_use`).
  double mean_allocation_ratio = 0.0;
  double mean_jct_s = 0.0;    ///< completion - arrival, over completed jobs
  double mean_queue_s = 0.0;  ///< total time waiting in the queue, over completed jobs
  double end_time_s = 0.0;    ///< simulated time of the last processed event
  /// Every event, when `record_events` is set.
  std::vector<EventRecord> events;
  std::vector<double> decision_seconds;  ///< wall time of each decision (NOT deterministic)

  /// Preemptions whose preemptor started with its topology requirements met, over all
  /// preemptions (1 when there were none).
  [[nodiscard]] double hit_rate() const noexcept {
    return preemptions == 0 ? 1.0
                            : static_cast<double>(preemptions - wasted_preemptions) /
                                  static_cast<double>(preemptions);
  }
  /// Victims per preemption (0 when there were none).
  [[nodiscard]] double victims_per_preemption() const noexcept {
    return preemptions == 0 ? 0.0 : static_cast<double>(victims) / static_cast<double>(preemptions);
  }
  /// Nearest-rank percentile (p in [0, 1]) of the decision times; 0 without decisions.
  [[nodiscard]] double decision_percentile(double p) const;
  /// Waits of one priority class, or nullopt when it never started.
  [[nodiscard]] std::optional<PriorityWaits> waits_of(std::int32_t priority) const {
    for (const PriorityWaits& w : waits) {
      if (w.priority == priority) return w;
    }
    return std::nullopt;
  }
  /// A text rendering of every deterministic field (numbers printed exactly, `%.17g`): equal
  /// digests mean equal runs.
  [[nodiscard]] std::string digest() const;
};

namespace detail {

/// Nearest-rank percentile of a sorted vector.
[[nodiscard]] inline double sorted_percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0.0;
  const double rank = std::ceil(p * static_cast<double>(sorted.size()));
  const auto index = static_cast<std::size_t>(std::max(rank, 1.0)) - 1;
  return sorted[std::min(index, sorted.size() - 1)];
}

[[nodiscard]] inline std::string exact(double value) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

}  // namespace detail

inline double SimulationMetrics::decision_percentile(double p) const {
  std::vector<double> sorted = decision_seconds;
  std::sort(sorted.begin(), sorted.end());
  return detail::sorted_percentile(sorted, p);
}

inline std::string SimulationMetrics::digest() const {
  using detail::exact;
  std::string text =
      "solver " + solver + "\ncost_model " + cost_model + "\nplacement " + placement_policy + "\n";
  const auto line = [&](std::string_view key, const std::string& value) {
    text += std::string(key) + ' ' + value + '\n';
  };
  line("jobs", std::to_string(jobs));
  line("jobs_started", std::to_string(jobs_started));
  line("jobs_completed", std::to_string(jobs_completed));
  line("jobs_dropped", std::to_string(jobs_dropped));
  line("jobs_waiting_at_end", std::to_string(jobs_waiting_at_end));
  line("decisions", std::to_string(decisions));
  line("preemptions", std::to_string(preemptions));
  line("wasted_preemptions", std::to_string(wasted_preemptions));
  line("victims", std::to_string(victims));
  line("evictions", std::to_string(evictions));
  line("shrinks", std::to_string(shrinks));
  line("grows", std::to_string(grows));
  line("control_calls", std::to_string(control_calls));
  line("victim_cost", exact(victim_cost));
  line("gpu_hours_lost", exact(gpu_hours_lost));
  line("plans_verified", std::to_string(plans_verified));
  line("plans_rejected", std::to_string(plans_rejected));
  for (const PriorityWaits& w : waits) {
    line("waits", std::to_string(w.priority) + ' ' + std::to_string(w.starts) + ' ' +
                      exact(w.mean_s) + ' ' + exact(w.p50_s) + ' ' + exact(w.p99_s));
  }
  for (const AllocationSample& s : allocation) {
    line("allocation",
         exact(s.time_s) + ' ' + exact(s.arrived_gpu_ratio) + ' ' + exact(s.allocated_gpu_ratio));
  }
  line("mean_allocation_ratio", exact(mean_allocation_ratio));
  line("mean_jct_s", exact(mean_jct_s));
  line("mean_queue_s", exact(mean_queue_s));
  line("end_time_s", exact(end_time_s));
  for (const EventRecord& e : events) {
    line("event",
         exact(e.time_s) + ' ' + std::string(to_string(e.kind)) + ' ' + std::to_string(e.id.value));
  }
  return text;
}

namespace detail {

/// GPUs one replica holds: whole devices, or its share of one (gpu_milli / 1000).
[[nodiscard]] inline double gpus_per_replica(const Workload& workload,
                                             const ResourceSchema& schema) {
  if (workload.demand.whole_devices > 0) return workload.demand.whole_devices;
  const std::optional<std::size_t> gpu = schema.find("gpu_milli");
  if (!gpu || workload.demand.resources.size() == 0) return 0.0;
  return static_cast<double>(workload.demand.resources(static_cast<Eigen::Index>(*gpu))) / 1000.0;
}

/// The state of one trace job during a run.
struct JobRun {
  enum class Phase : std::uint8_t { future, waiting, running, restarting, completed, dropped };
  Phase phase = Phase::future;
  std::int32_t replicas = 1;  ///< current replica count (elastic jobs may be shrunk)
  double work_done_s = 0.0;   ///< full-size seconds of work done as of `updated_s`
  double updated_s = 0.0;
  double enqueued_s = 0.0;  ///< when it last entered the queue
  double queued_total_s = 0.0;
  std::uint64_t generation = 0;  ///< invalidates stale completion events
};

/// One pending event. Ordered by time, then kind (completions first, so that freed resources
/// are visible to the arrivals of the same instant), then insertion order.
struct PendingEvent {
  double time_s = 0.0;
  int kind = 0;  ///< 0 completion, 1 requeue, 2 arrival, 3 controller call
  std::uint64_t sequence = 0;
  std::size_t job = 0;
  std::uint64_t generation = 0;
  friend bool operator>(const PendingEvent& a, const PendingEvent& b) {
    if (a.time_s != b.time_s) return a.time_s > b.time_s;
    if (a.kind != b.kind) return a.kind > b.kind;
    return a.sequence > b.sequence;
  }
};

/// What a job asks for, as a key: jobs of one shape fit or fail together.
struct ShapeKey {
  std::int32_t replicas = 0;
  std::int32_t whole_devices = 0;
  std::vector<Amount> resources;
  TopologyRequirement replica_scope;
  TopologyRequirement gang_scope;
  std::int32_t priority = 0;  ///< preemption depends on it; placement does not
  bool distinct_hosts = false;
  friend bool operator==(const ShapeKey&, const ShapeKey&) = default;
  [[nodiscard]] static ShapeKey of(const Workload& w) {
    ShapeKey key{w.replicas, w.demand.whole_devices, {}, w.replica_scope, w.gang_scope,
                 w.priority, w.distinct_hosts};
    key.resources.assign(w.demand.resources.data(),
                         w.demand.resources.data() + w.demand.resources.size());
    return key;
  }
  [[nodiscard]] bool same_placement(const ShapeKey& other) const {
    return replicas == other.replicas && whole_devices == other.whole_devices &&
           resources == other.resources && replica_scope == other.replica_scope &&
           gang_scope == other.gang_scope && distinct_hosts == other.distinct_hosts;
  }
};

template <class Solver, class Model, class Policy>
class SimulationRun final : public ClusterControl {
 public:
  SimulationRun(std::shared_ptr<const Topology> topology, const Trace& trace, const Solver& solver,
                const Model& model, const SimulationOptions& options, const Policy& policy)
      : state_(std::move(topology)),
        trace_(trace),
        solver_(solver),
        model_(model),
        options_(options),
        policy_(policy),
        random_(options.seed),
        jobs_(trace.size()) {
    const Topology& topo = state_.topology();
    const std::optional<std::size_t> gpu = topo.schema().find("gpu_milli");
    gpu_capacity_ =
        gpu ? static_cast<double>(topo.capacity(Topology::root())(static_cast<Eigen::Index>(*gpu)))
            : 0.0;
    gpu_dim_ = gpu;
    for (std::size_t j = 0; j < trace_.size(); ++j) {
      validate(trace_[j], topo);
      if (!index_.emplace(trace_[j].workload.id.value, j).second) {
        throw std::invalid_argument("trace: " + trace_[j].workload.label() + " appears twice");
      }
      push({trace_[j].arrival_s, 2, 0, j, 0});
    }
    if (options_.controller) {
      if (!(options_.control_interval_s > 0.0) || !std::isfinite(options_.control_interval_s)) {
        throw std::invalid_argument(
            "simulate: control_interval_s must be finite and > 0 with a "
            "controller, got " +
            exact(options_.control_interval_s));
      }
      push({0.0, 3, 0, 0, 0});
    }
    metrics_.solver = std::string(Solver::name);
    metrics_.cost_model = std::string(Model::name);
    metrics_.placement_policy = std::string(Policy::name);
    metrics_.jobs = trace_.size();
  }

  SimulationMetrics run() {
    while (!events_.empty() && events_.top().time_s <= options_.horizon_s) {
      if (events_.top().kind == 3 && unfinished_jobs() == 0) {
        events_.pop();  // a controller call after the last job: nothing left to control
        continue;
      }
      const double now = events_.top().time_s;
      advance_clock(now);
      while (!events_.empty() && events_.top().time_s == now) {
        const PendingEvent event = events_.top();
        events_.pop();
        handle(event, now);
        ++processed_;
        if (options_.progress && options_.progress_every > 0 &&
            processed_ % options_.progress_every == 0) {
          options_.progress(progress(now));
        }
      }
      schedule(now);
      if (control_due_) {
        control_due_ = false;
        now_ = now;
        ++metrics_.control_calls;
        options_.controller(*this);
        schedule(now);
      }
      sample(now);
    }
    return finish();
  }

  // --- ClusterControl ------------------------------------------------------------------------
  [[nodiscard]] double now() const override { return now_; }
  [[nodiscard]] const Allocation& state() const override { return state_; }
  [[nodiscard]] std::vector<JobStatus> running() const override {
    return statuses(JobRun::Phase::running);
  }
  [[nodiscard]] std::vector<JobStatus> waiting() const override {
    return statuses(JobRun::Phase::waiting);
  }
  void evict(WorkloadId id) override { evict(running_job(id, "evict"), now_); }
  void shrink(WorkloadId id, std::span<const std::int32_t> replicas_to_drop) override {
    const std::size_t j = running_job(id, "shrink");
    // Validated by the state before anything of the job changes.
    state_.shrink(id, replicas_to_drop);
    catch_up_to(j, now_, jobs_[j].replicas);
    jobs_[j].replicas -= static_cast<std::int32_t>(replicas_to_drop.size());
    reschedule_completion(j, now_);
    ++metrics_.shrinks;
    log(now_, EventKind::shrink, j);
  }
  std::int32_t grow(WorkloadId id, std::int32_t extra) override {
    const std::size_t j = running_job(id, "grow");
    if (extra < 0) {
      throw std::invalid_argument("grow: " + trace_[j].workload.label() + ": extra replicas " +
                                  std::to_string(extra) + " is negative");
    }
    if (!trace_[j].workload.min_replicas) {
      throw std::invalid_argument("grow: " + trace_[j].workload.label() + " is not elastic");
    }
    const std::int32_t before = jobs_[j].replicas;
    std::int32_t added = 0;
    for (; added < extra; ++added) {
      Workload current = state_.workload(id);
      Workload probe = current;
      probe.replicas = 1;
      probe.min_replicas.reset();
      probe.gang_scope = {};
      PlacementSearchResult found = find_placement(state_, probe);
      if (!found.found) break;
      Placement grown = state_.placement(id);
      grown.replicas.push_back(std::move(found.placement.replicas.front()));
      Workload bigger = current;
      ++bigger.replicas;
      const Placement old = state_.placement(id);
      state_.remove(id);
      try {
        state_.add(bigger, grown);
      } catch (const std::invalid_argument&) {
        state_.add(current, old);  // the state held it a moment ago: cannot fail
        break;
      }
    }
    if (added > 0) {
      catch_up_to(j, now_, before);
      jobs_[j].replicas = before + added;
      reschedule_completion(j, now_);
      metrics_.grows += static_cast<std::uint64_t>(added);
      log(now_, EventKind::grow, j);
    }
    return added;
  }
  void reserve(const Workload& workload, const Placement& placement, HeldCapacity use) override {
    if (index_.contains(workload.id.value)) {
      throw std::invalid_argument("reserve: " + workload.label() + " has the id of a trace job");
    }
    if (workload.preemptible) {
      // A plan could pick it as a victim, and it has no job to requeue.
      throw std::invalid_argument("reserve: " + workload.label() + " must not be preemptible");
    }
    const Amount before = gpu_dim_ ? state_.used(Topology::root(), *gpu_dim_) : 0;
    state_.add(workload, placement);
    const Amount held = gpu_dim_ ? state_.used(Topology::root(), *gpu_dim_) - before : 0;
    reservations_[workload.id.value] = use == HeldCapacity::idle ? held : 0;
    idle_held_gpu_milli_ += reservations_[workload.id.value];
  }
  void release(WorkloadId id) override {
    const auto it = reservations_.find(id.value);
    if (it == reservations_.end()) {
      throw std::invalid_argument("release: workload " + std::to_string(id.value) +
                                  " is not a reservation");
    }
    state_.remove(id);
    idle_held_gpu_milli_ -= it->second;
    reservations_.erase(it);
  }

 private:
  void push(PendingEvent event) {
    event.sequence = sequence_++;
    events_.push(event);
  }
  void log(double now, EventKind kind, std::size_t job) {
    if (options_.record_events) metrics_.events.push_back({now, kind, trace_[job].workload.id});
  }
  [[nodiscard]] SimulationProgress progress(double now) const {
    return {now, processed_, metrics_.jobs, metrics_.jobs_completed + metrics_.jobs_dropped,
            metrics_.preemptions};
  }
  [[nodiscard]] double allocated_ratio() const {
    if (!gpu_dim_ || gpu_capacity_ <= 0.0) return 0.0;
    return static_cast<double>(state_.used(Topology::root(), *gpu_dim_) - idle_held_gpu_milli_) /
           gpu_capacity_;
  }
  [[nodiscard]] std::uint64_t unfinished_jobs() const {
    return metrics_.jobs - metrics_.jobs_completed - metrics_.jobs_dropped;
  }
  [[nodiscard]] std::size_t running_job(WorkloadId id, std::string_view action) const {
    const auto it = index_.find(id.value);
    if (it == index_.end()) {
      throw std::invalid_argument(std::string(action) + ": workload " + std::to_string(id.value) +
                                  " is not a trace job");
    }
    if (jobs_[it->second].phase != JobRun::Phase::running) {
      throw std::invalid_argument(std::string(action) + ": " + trace_[it->second].workload.label() +
                                  " is not running");
    }
    return it->second;
  }
  [[nodiscard]] std::vector<JobStatus> statuses(JobRun::Phase phase) const {
    std::vector<JobStatus> result;
    for (std::size_t j = 0; j < jobs_.size(); ++j) {
      const JobRun& job = jobs_[j];
      if (job.phase != phase) continue;
      const Workload& w = trace_[j].workload;
      double done = job.work_done_s;
      if (phase == JobRun::Phase::running) {
        done = std::min(trace_[j].duration_s, done + static_cast<double>(job.replicas) /
                                                         w.replicas * (now_ - job.updated_s));
      }
      // A job in the queue restarts at its trace size.
      const std::int32_t replicas = phase == JobRun::Phase::running ? job.replicas : w.replicas;
      result.push_back({w.id, w.priority, replicas, w.replicas, w.min_replicas,
                        gpus_per_replica(w, state_.topology().schema()),
                        trace_[j].duration_s - done, job.enqueued_s});
    }
    return result;
  }
  void advance_clock(double now) {
    if (clock_started_) allocation_integral_ += allocated_ratio() * (now - last_time_);
    if (!clock_started_) first_time_ = now;
    clock_started_ = true;
    last_time_ = now;
  }
  void sample(double now) {
    if (!options_.record_allocation) return;
    AllocationSample s{now, gpu_capacity_ > 0 ? arrived_gpu_milli_ / gpu_capacity_ : 0.0,
                       allocated_ratio()};
    if (!metrics_.allocation.empty() && metrics_.allocation.back().time_s == now) {
      metrics_.allocation.back() = s;
    } else {
      metrics_.allocation.push_back(s);
    }
  }

  void handle(const PendingEvent& event, double now) {
    JobRun& job = jobs_[event.job];
    const TraceJob& spec = trace_[event.job];
    switch (event.kind) {
      case 0:  // completion
        if (job.phase != JobRun::Phase::running || event.generation != job.generation) return;
        state_.remove(spec.workload.id);
        job.phase = JobRun::Phase::completed;
        ++metrics_.jobs_completed;
        jct_sum_ += now - spec.arrival_s;
        queue_sum_ += job.queued_total_s;
        log(now, EventKind::completion, event.job);
        return;
      case 1:  // requeue after an eviction's restart delay
        job.phase = JobRun::Phase::waiting;
        job.enqueued_s = now;
        pending_.push_back(event.job);
        log(now, EventKind::requeue, event.job);
        return;
      case 3:  // controller call: runs after the scheduling pass of this instant
        control_due_ = true;
        if (unfinished_jobs() > 0) push({now + options_.control_interval_s, 3, 0, 0, 0});
        return;
      default:  // arrival
        job.phase = JobRun::Phase::waiting;
        job.replicas = spec.workload.replicas;
        job.enqueued_s = now;
        arrived_gpu_milli_ += 1000.0 * gpus_per_replica(spec.workload, state_.topology().schema()) *
                              spec.workload.replicas;
        pending_.push_back(event.job);
        log(now, EventKind::arrival, event.job);
        return;
    }
  }

  [[nodiscard]] Workload running_copy(std::size_t j, double now) const {
    Workload w = trace_[j].workload;
    w.cost.start_time_s = now;
    return w;
  }

  /// Starts job j at `placement` (as `as_running` when given: a copy with relaxed scopes).
  void start(std::size_t j, const Placement& placement, double now,
             const Workload* as_running = nullptr) {
    JobRun& job = jobs_[j];
    state_.add(as_running != nullptr ? *as_running : running_copy(j, now), placement);
    if (!job_started_[j]) {
      job_started_[j] = true;
      ++metrics_.jobs_started;
    }
    const double wait = now - job.enqueued_s;
    job.queued_total_s += wait;
    waits_[trace_[j].workload.priority].push_back(wait);
    job.phase = JobRun::Phase::running;
    job.replicas = trace_[j].workload.replicas;
    job.updated_s = now;
    ++job.generation;
    push({now + (trace_[j].duration_s - job.work_done_s), 0, 0, j, job.generation});
    log(now, EventKind::start, j);
  }

  /// Work progresses at replicas / full replicas (a shrunk elastic job slows down, a grown
  /// one speeds up).
  void catch_up(std::size_t j, double now) { catch_up_to(j, now, jobs_[j].replicas); }
  void catch_up_to(std::size_t j, double now, std::int32_t replicas) {
    JobRun& job = jobs_[j];
    const double rate = static_cast<double>(replicas) / trace_[j].workload.replicas;
    job.work_done_s =
        std::min(trace_[j].duration_s, job.work_done_s + rate * (now - job.updated_s));
    job.updated_s = now;
  }
  /// A new completion event at the job's current work rate (the old one goes stale).
  void reschedule_completion(std::size_t j, double now) {
    JobRun& job = jobs_[j];
    ++job.generation;
    const double rate = static_cast<double>(job.replicas) / trace_[j].workload.replicas;
    if (rate > 0.0) {
      push({now + (trace_[j].duration_s - job.work_done_s) / rate, 0, 0, j, job.generation});
    }
  }

  void evict(std::size_t j, double now) {
    JobRun& job = jobs_[j];
    const TraceJob& spec = trace_[j];
    catch_up(j, now);
    const double interval = spec.checkpoint_interval_s;
    const double saved = interval > 0.0 ? std::floor(job.work_done_s / interval) * interval : 0.0;
    const double lost = job.work_done_s - saved;
    metrics_.gpu_hours_lost += lost * gpus_per_replica(spec.workload, state_.topology().schema()) *
                               spec.workload.replicas / 3600.0;
    job.work_done_s = saved;
    state_.remove(spec.workload.id);
    job.phase = JobRun::Phase::restarting;
    ++job.generation;
    ++metrics_.evictions;
    log(now, EventKind::eviction, j);
    push({now + spec.restart_delay_s, 1, 0, j, job.generation});
  }

  void shrink(std::size_t j, const std::vector<std::int32_t>& dropped, double now) {
    JobRun& job = jobs_[j];
    catch_up(j, now);
    state_.shrink(trace_[j].workload.id, dropped);
    job.replicas -= static_cast<std::int32_t>(dropped.size());
    reschedule_completion(j, now);
    ++metrics_.shrinks;
    log(now, EventKind::shrink, j);
  }

  /// One pass over the queue: highest priority first, then longest waiting, then id.
  void schedule(double now) {
    if (pending_.empty()) return;
    std::sort(pending_.begin(), pending_.end(), [&](std::size_t a, std::size_t b) {
      const Workload& wa = trace_[a].workload;
      const Workload& wb = trace_[b].workload;
      if (wa.priority != wb.priority) return wa.priority > wb.priority;
      if (jobs_[a].enqueued_s != jobs_[b].enqueued_s)
        return jobs_[a].enqueued_s < jobs_[b].enqueued_s;
      return wa.id < wb.id;
    });
    // Within a pass the cluster only fills up, except when a preemption frees room: shapes
    // that failed stay failed until then (a cache, not a change of outcome).
    std::vector<ShapeKey> no_room;
    std::vector<ShapeKey> no_plan;
    std::vector<std::size_t> still_waiting;
    const auto known = [](const std::vector<ShapeKey>& list, const ShapeKey& key,
                          bool placement_only) {
      return std::any_of(list.begin(), list.end(), [&](const ShapeKey& k) {
        return placement_only ? k.same_placement(key) : k == key;
      });
    };
    for (std::size_t i = 0; i < pending_.size(); ++i) {
      const std::size_t j = pending_[i];
      const Workload& workload = trace_[j].workload;
      const ShapeKey key = ShapeKey::of(workload);
      if (!known(no_room, key, true)) {
        if (std::optional<Placement> placement = policy_.place(state_, workload, random_)) {
          start(j, *placement, now);
          continue;
        }
        no_room.push_back(key);
      }
      const bool may_preempt =
          options_.preemption && workload.priority >= options_.min_preemptor_priority;
      if (may_preempt && !known(no_plan, key, false)) {
        switch (decide(j, now)) {
          case Outcome::started:
            no_room.clear();
            no_plan.clear();
            continue;
          case Outcome::freed_room:
            no_room.clear();
            no_plan.clear();
            break;
          case Outcome::no_plan:
            no_plan.push_back(key);
            break;
        }
      }
      if (!options_.keep_unplaced || workload.priority < options_.drop_unplaced_below_priority) {
        jobs_[j].phase = JobRun::Phase::dropped;
        ++metrics_.jobs_dropped;
        log(now, EventKind::drop, j);
        continue;
      }
      still_waiting.push_back(j);
    }
    pending_ = std::move(still_waiting);
  }

  enum class Outcome : std::uint8_t { started, freed_room, no_plan };

  Outcome decide(std::size_t j, double now) {
    const Workload& preemptor = trace_[j].workload;
    const PreemptionPlan plan = solver_.solve(state_, preemptor, model_);
    ++metrics_.decisions;
    metrics_.decision_seconds.push_back(plan.statistics.seconds);
    if (plan.status == PlanStatus::no_preemption_needed) {
      // The placement policy found nothing, yet the solver's own search did.
      if (plan.topology_satisfied) {
        start(j, plan.placement, now);
        return Outcome::started;
      }
      return Outcome::no_plan;
    }
    if (!plan.has_victims_plan() || plan.victims.empty()) return Outcome::no_plan;
    bool topology_ok = plan.topology_satisfied;
    if (options_.verify_plans) {
      ++metrics_.plans_verified;
      // A plan that claims its topology is held to it; a topology-blind one is checked with the
      // preemptor's scopes relaxed (and counted as wasted below).
      const PlanVerdict verdict =
          verify_plan(state_, preemptor, plan, model_,
                      VerifyOptions{.require_topology = plan.topology_satisfied});
      if (!verdict.ok) {
        ++metrics_.plans_rejected;
        if (metrics_.verifier_failures.size() < 8) {
          metrics_.verifier_failures.push_back(preemptor.label() + ": " + verdict.summary());
        }
        return Outcome::no_plan;
      }
      topology_ok = topology_ok && verdict.topology_ok;
    }
    for (const Victim& victim : plan.victims) {
      const std::size_t v = index_.at(victim.id.value);
      if (victim.action == VictimAction::shrink) {
        shrink(v, victim.dropped_replicas, now);
      } else {
        evict(v, now);
      }
    }
    ++metrics_.preemptions;
    metrics_.victims += plan.victims.size();
    metrics_.victim_cost += plan.cost;
    if (topology_ok) {
      try {
        start(j, plan.placement, now);
        return Outcome::started;
      } catch (const std::invalid_argument&) {
        // The plan's placement was not valid after all: the preemption is wasted below.
      }
    }
    ++metrics_.wasted_preemptions;
    if (options_.wasted_preemptor == WastedPreemptor::start_without_topology) {
      Workload relaxed = running_copy(j, now);
      relaxed.replica_scope = {};
      relaxed.gang_scope = {};
      try {
        start(j, plan.placement, now, &relaxed);
        return Outcome::started;
      } catch (const std::invalid_argument&) {
        // Not even valid without its scopes: the preemptor keeps waiting.
      }
    }
    return Outcome::freed_room;
  }

  SimulationMetrics finish() {
    metrics_.end_time_s = clock_started_ ? last_time_ : 0.0;
    for (const JobRun& job : jobs_) {
      if (job.phase == JobRun::Phase::waiting || job.phase == JobRun::Phase::restarting) {
        ++metrics_.jobs_waiting_at_end;
      }
    }
    for (auto& [priority, list] : waits_) {
      std::sort(list.begin(), list.end());
      PriorityWaits w;
      w.priority = priority;
      w.starts = list.size();
      double sum = 0.0;
      for (double x : list) sum += x;
      w.mean_s = list.empty() ? 0.0 : sum / static_cast<double>(list.size());
      w.p50_s = sorted_percentile(list, 0.50);
      w.p99_s = sorted_percentile(list, 0.99);
      metrics_.waits.push_back(w);
    }
    const double span = last_time_ - first_time_;
    metrics_.mean_allocation_ratio = span > 0.0 ? allocation_integral_ / span : allocated_ratio();
    if (metrics_.jobs_completed > 0) {
      metrics_.mean_jct_s = jct_sum_ / static_cast<double>(metrics_.jobs_completed);
      metrics_.mean_queue_s = queue_sum_ / static_cast<double>(metrics_.jobs_completed);
    }
    if (options_.progress) options_.progress(progress(last_time_));
    return std::move(metrics_);
  }

  Allocation state_;
  const Trace& trace_;
  const Solver& solver_;
  const Model& model_;
  const SimulationOptions& options_;
  const Policy& policy_;
  Random random_;
  std::vector<JobRun> jobs_;
  std::vector<bool> job_started_ = std::vector<bool>(jobs_.size(), false);
  std::unordered_map<std::uint64_t, std::size_t> index_;  // id -> trace position (lookups only)
  std::priority_queue<PendingEvent, std::vector<PendingEvent>, std::greater<>> events_;
  std::uint64_t sequence_ = 0;
  std::uint64_t processed_ = 0;
  std::vector<std::size_t> pending_;
  std::map<std::int32_t, std::vector<double>> waits_;
  SimulationMetrics metrics_;
  std::optional<std::size_t> gpu_dim_;
  double gpu_capacity_ = 0.0;
  double arrived_gpu_milli_ = 0.0;
  double allocation_integral_ = 0.0;
  double first_time_ = 0.0;
  double last_time_ = 0.0;
  bool clock_started_ = false;
  double jct_sum_ = 0.0;
  double queue_sum_ = 0.0;
  bool control_due_ = false;
  double now_ = 0.0;                              // time of the controller call
  std::map<std::uint64_t, Amount> reservations_;  // controller-held id -> idle GPU milli
  Amount idle_held_gpu_milli_ = 0;
};

}  // namespace detail

/// Replays `trace` on an empty cluster over `topology`.
///
/// Each simulated instant: completions free their resources, evicted jobs whose restart delay
/// is over re-enter the queue, arrivals join it; then one pass over the queue (highest priority
/// first, then longest waiting, then lowest id) starts every job `policy` can place. A job that
/// does not fit and may preempt (`options.preemption`, priority >= `min_preemptor_priority`)
/// gets `solver.solve(state, job, model)`; a plan with victims is verified (when
/// `options.verify_plans`), carried out — evicted victims lose their work since their last
/// checkpoint and re-enter the queue after their restart delay; shrunk elastic victims keep
/// running slower (work rate = replicas / full replicas) — and the job starts on the plan's
/// placement. When it cannot (a topology-blind plan such as `kube_default`'s with
/// `topology_satisfied == false`, or a placement the state rejects) the preemption counts as
/// wasted and the job keeps waiting (or starts without its topology guarantee, see
/// `SimulationOptions::wasted_preemptor`). A job that never starts is never dropped unless
/// `options.keep_unplaced` is false.
///
/// Deterministic: the same trace, options and seed give the same `SimulationMetrics::digest()`
/// (decision wall times aside); solvers with a wall-clock limit are deterministic only while
/// they stay under it. Throws `std::invalid_argument` naming the job for an invalid trace
/// (duplicate ids included). Thread-safety: independent runs may execute concurrently; the
/// solver, model and policy are only read. Prints nothing; progress goes to `options.progress`.
template <class Solver, CostModel Model, PlacementPolicy Policy = default_placement>
requires PreemptionSolver<Solver, Model>
[[nodiscard]] SimulationMetrics simulate(std::shared_ptr<const Topology> topology,
                                         const Trace& trace, const Solver& solver,
                                         const Model& model, const SimulationOptions& options = {},
                                         const Policy& policy = {}) {
  if (!topology) throw std::invalid_argument("simulate: no topology");
  detail::SimulationRun<Solver, Model, Policy> run(std::move(topology), trace, solver, model,
                                                   options, policy);
  return run.run();
}

}  // namespace topopreempt::sim
