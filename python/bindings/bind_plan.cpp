// SPDX-License-Identifier: MIT
// Plans and what is done with them: the Solver interface, PreemptionPlan, verify_plan, commit,
// plan_queue with its nominations, and IncrementalDecider.

#include <nanobind/eigen/dense.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <chrono>

#include "common.hpp"
#include "topopreempt/decisions/preemptor_queue.hpp"
#include "topopreempt/plan/transaction.hpp"
#include "topopreempt/plan/verifier.hpp"

namespace topopreempt::python {

namespace {

/// The preemptor as a solve reads it without the GIL: a copy, since another thread may change
/// the Python object meanwhile. The copy goes into a per-thread buffer whose strings and vectors
/// keep their capacity from one solve to the next, so that a small decision does not pay for
/// allocations there (a measured tenth of a 5 us answer); a solve nested in another on the same
/// thread (a Python cost model that solves) gets a fresh copy instead.
class PreemptorCopy {
 public:
  explicit PreemptorCopy(const Workload& preemptor) {
    if (scratch_in_use_) {
      fresh_.emplace(preemptor);
      copy_ = &*fresh_;
      return;
    }
    scratch_ = preemptor;  // if this throws, the buffer stays free
    scratch_in_use_ = true;
    copy_ = &scratch_;
  }
  PreemptorCopy(const PreemptorCopy&) = delete;
  PreemptorCopy& operator=(const PreemptorCopy&) = delete;
  ~PreemptorCopy() {
    if (copy_ == &scratch_) scratch_in_use_ = false;
  }
  [[nodiscard]] const Workload& get() const noexcept { return *copy_; }

 private:
  static thread_local Workload scratch_;
  static thread_local bool scratch_in_use_;
  std::optional<Workload> fresh_;
  const Workload* copy_ = nullptr;
};

thread_local Workload PreemptorCopy::scratch_{};
thread_local bool PreemptorCopy::scratch_in_use_ = false;

/// A decider and the model it was made with (the model may hold a Python callable).
class PyDecider {
 public:
  PyDecider(const SolverHandle& solver, const CostModelHandle& model, const Workload& preemptor)
      : decider_(solver.decider(model.model, preemptor)), solver_name_(solver.name()) {}
  [[nodiscard]] PreemptionPlan decide(const StateHandle& state) {
    // One decide at a time: the decider's cache is single-threaded (the C++ rule).
    std::unique_lock<std::mutex> lock(busy_, std::defer_lock);
    return state.read_released([&](const Allocation& a) {
      lock.lock();
      return decider_->decide(a);
    });
  }
  /// `plan` worded on `state` (a copy: the argument is left as it is). Waits for a running
  /// decide, as a second decide does (the C++ decider is single-threaded).
  [[nodiscard]] PreemptionPlan explain(const PreemptionPlan& plan, const StateHandle& state) {
    PreemptionPlan worded = plan;
    std::unique_lock<std::mutex> lock(busy_, std::defer_lock);
    state.read_released([&](const Allocation& a) {
      lock.lock();
      decider_->explain(worded, a);
    });
    return worded;
  }
  [[nodiscard]] const DeciderBase& decider() const noexcept { return *decider_; }
  [[nodiscard]] const std::string& solver_name() const noexcept { return solver_name_; }

 private:
  std::unique_ptr<DeciderBase> decider_;
  std::string solver_name_;
  std::mutex busy_;
};

/// A dimension as a FreedAmount's or a verdict's repr shows it.
std::string dimension_label(std::size_t dimension) {
  if (dimension == whole_devices_dimension) return "whole_devices";
  if (dimension == distinct_hosts_dimension) return "distinct_hosts";
  return "dimension " + std::to_string(dimension);
}

void bind_plan_types(nb::module_& m) {
  nb::enum_<PlanStatus>(m, "PlanStatus", "Outcome of a preemption decision.")
      .value("optimal", PlanStatus::optimal, "victims found and proven minimum-cost (lower_bound == cost)")
      .value("feasible", PlanStatus::feasible,
             "victims found; a limit was hit or the solver makes no optimality claim")
      .value("infeasible", PlanStatus::infeasible,
             "proven: no placement even after evicting every eligible victim")
      .value("no_preemption_needed", PlanStatus::no_preemption_needed, "the preemptor fits as the cluster stands")
      .value("unknown", PlanStatus::unknown,
             "a limit stopped the search before it found a plan or proved that none exists")
      .def("__str__", [](PlanStatus s) { return std::string(to_string(s)); });

  nb::enum_<VictimAction>(m, "VictimAction", "What happens to one victim.")
      .value("evict", VictimAction::evict, "the whole gang is preempted")
      .value("shrink", VictimAction::shrink, "an elastic workload loses `dropped_replicas` and keeps running");

  m.attr("whole_devices_dimension") = whole_devices_dimension;
  m.attr("distinct_hosts_dimension") = distinct_hosts_dimension;

  nb::class_<FreedAmount>(m, "FreedAmount",
                          "How much of one dimension a victim frees where the preemptor needs it.")
      .def_ro("dimension", &FreedAmount::dimension,
              "`whole_devices_dimension` (whole idle devices), `distinct_hosts_dimension` (hosts "
              "of a distinct_hosts preemptor), or an index into the topology's ResourceSchema (a "
              "device share or a pooled resource)")
      .def_ro("amount", &FreedAmount::amount, "how much (devices, hosts, or the resource's unit)")
      .def("__eq__", [](const FreedAmount& a, const FreedAmount& b) { return a == b; })
      .def("__repr__", [](const FreedAmount& f) {
        return "<FreedAmount " + dimension_label(f.dimension) + " " + std::to_string(f.amount) + ">";
      });

  nb::class_<Victim>(m, "Victim",
                     "One victim of a plan. `reason` is text for people, built from the structured "
                     "fields (`action`, `dropped_replicas`, `freed`, `freed_in`): the index solvers "
                     "(greedy, knapsack, branch_and_bound) fill it unless built `without_text()`, "
                     "and explain() fills it afterwards. Baselines, plan_queue and loaning always "
                     "fill it and may leave `freed` empty.")
      .def_ro("id", &Victim::id)
      .def_ro("action", &Victim::action)
      .def_ro("dropped_replicas", &Victim::dropped_replicas, "replica indices, for `shrink`")
      .def_ro("cost", &Victim::cost, "its share of the plan's cost")
      .def_ro("reason", &Victim::reason,
              "e.g. 'evicted whole; frees 2 whole GPUs in socket ...'; empty in a plan of a "
              "solver built without_text() until explain() words it")
      .def_prop_ro("freed_in", [](const Victim& v) -> std::optional<std::uint32_t> {
        return v.freed_in.valid() ? std::optional(v.freed_in.value) : std::nullopt;
      }, "the domain searched when it was chosen, where `freed` is measured: the plan's target, "
         "or a domain inside `target_domain` when pools widen the target (None where the plan "
         "does not say: baselines, plan_queue, loaning)")
      .def_ro("freed", &Victim::freed,
              "what it frees there, one FreedAmount per dimension the preemptor needs (dimensions "
              "it frees nothing of are left out), in the order the solver measures them")
      .def("__eq__", [](const Victim& a, const Victim& b) { return a == b; }, "Member-wise equality.")
      .def("__repr__", [](const Victim& v) {
        return "<Victim " + std::to_string(v.id.value) + (v.action == VictimAction::evict ? " evict" : " shrink") +
               " cost " + std::to_string(v.cost) + ">";
      });

  nb::enum_<RejectionKind>(m, "RejectionKind",
                           "Why a candidate domain lost, as data (DomainVerdict.kind): which of the "
                           "verdict's numbers apply.")
      .value("too_small", RejectionKind::too_small,
             "holds `have` of the `need` of `dimension` even empty (static capacity)")
      .value("hopeless", RejectionKind::hopeless,
             "read: evicting all `victims` eligible victims frees `have` of the `need` missing")
      .value("hopeless_unread", RejectionKind::hopeless_unread,
             "not read: the preemption index says eviction frees at most `have` of the `need` missing")
      .value("too_few_hosts", RejectionKind::too_few_hosts,
             "not searched: its hosts hold at most `have` of the `need` replicas (preemption index)")
      .value("bound", RejectionKind::bound, "its lower bound `value` is at least the best cost `best`")
      .value("bound_unread", RejectionKind::bound_unread,
             "not read: its index lower bound `value` is at least the best cost `best`")
      .value("costlier", RejectionKind::costlier,
             "searched: its best victim set costs `value` > `best` (`note`: why, if said)")
      .value("no_better", RejectionKind::no_better,
             "searched: no victim set beats `best` (`note`, when set, says why instead)")
      .value("text_only", RejectionKind::text_only,
             "written as text only (baselines, plan_queue): `reason` is all there is")
      .def("__str__", [](RejectionKind k) { return std::string(to_string(k)); });

  nb::class_<DomainVerdict>(m, "DomainVerdict",
                            "Why a candidate domain did not win. `reason` is text for people, built "
                            "from the other fields: the index solvers fill it unless built "
                            "`without_text()`, and explain() fills it afterwards. Baselines write "
                            "`reason` only (`kind` is then `text_only`).")
      .def_ro("domain", &DomainVerdict::domain, "the candidate target domain")
      .def_ro("reason", &DomainVerdict::reason,
              "why it lost, e.g. 'lower bound 7 >= best cost 5'; empty in a plan of a solver built "
              "without_text() until explain() words it")
      .def_ro("kind", &DomainVerdict::kind, "why it lost, as data: which of the numbers below apply")
      .def_ro("dimension", &DomainVerdict::dimension,
              "the dimension short (too_small, hopeless, hopeless_unread; as FreedAmount.dimension)")
      .def_ro("have", &DomainVerdict::have, "what the domain holds or can free of `dimension`")
      .def_ro("need", &DomainVerdict::need, "what the preemptor needs (or is missing) of it")
      .def_ro("victims", &DomainVerdict::victims, "eligible victims read (hopeless)")
      .def_ro("value", &DomainVerdict::value, "the domain's bound or cost (bound, bound_unread, costlier)")
      .def_ro("best", &DomainVerdict::best, "the best cost it was compared with")
      .def_ro("note", &DomainVerdict::note, "the search's own word, if any (costlier, no_better)")
      .def("__eq__", [](const DomainVerdict& a, const DomainVerdict& b) { return a == b; },
           "Member-wise equality.")
      .def("__repr__", [](const DomainVerdict& v) {
        return "<DomainVerdict " + std::to_string(v.domain.value) + " " + std::string(to_string(v.kind)) + ">";
      });

  nb::enum_<DowngradeReason>(m, "DowngradeReason",
                             "Why a searched domain was not solved by the solver's exact method.")
      .value("precondition", DowngradeReason::precondition)
      .value("cell_limit", DowngradeReason::cell_limit)
      .value("node_limit", DowngradeReason::node_limit)
      .value("time_limit", DowngradeReason::time_limit)
      .value("incomplete_options", DowngradeReason::incomplete_options);

  nb::class_<Downgrade>(m, "Downgrade",
                        "One searched domain where the solver fell back to a weaker method or "
                        "stopped early, so the plan cannot claim optimality there.")
      .def_ro("domain", &Downgrade::domain)
      .def_ro("reason", &Downgrade::reason)
      .def_ro("detail", &Downgrade::detail);

  nb::class_<SolverStatistics>(m, "SolverStatistics", "Work done by a solver.")
      .def_ro("domains_considered", &SolverStatistics::domains_considered)
      .def_ro("domains_pruned", &SolverStatistics::domains_pruned)
      .def_ro("domains_solved", &SolverStatistics::domains_solved)
      .def_ro("nodes_explored", &SolverStatistics::nodes_explored)
      .def_ro("dp_cells", &SolverStatistics::dp_cells)
      .def_ro("victims_considered", &SolverStatistics::victims_considered)
      .def_ro("seconds", &SolverStatistics::seconds, "wall time of the decision")
      .def_ro("limit_reached", &SolverStatistics::limit_reached)
      .def("as_dict", [](const SolverStatistics& s) {
        nb::dict d;
        d["domains_considered"] = s.domains_considered;
        d["domains_pruned"] = s.domains_pruned;
        d["domains_solved"] = s.domains_solved;
        d["nodes_explored"] = s.nodes_explored;
        d["dp_cells"] = s.dp_cells;
        d["victims_considered"] = s.victims_considered;
        d["seconds"] = s.seconds;
        d["limit_reached"] = s.limit_reached;
        return d;
      }, "The statistics as a dict of plain values.");

  nb::class_<DomainVersion>(m, "DomainVersion", "The version of one domain a plan was computed against.")
      .def_ro("domain", &DomainVersion::domain)
      .def_ro("version", &DomainVersion::version);

  nb::class_<PreemptionPlan>(m, "PreemptionPlan",
                             "The answer to 'what must be preempted so that this workload can start?'.")
      .def_ro("status", &PreemptionPlan::status)
      .def_ro("solver", &PreemptionPlan::solver, "which solver produced it")
      .def_ro("victims", &PreemptionPlan::victims, "sorted by workload id")
      .def_prop_ro("target_domain", [](const PreemptionPlan& p) -> std::optional<std::uint32_t> {
        return p.target_domain.valid() ? std::optional(p.target_domain.value) : std::nullopt;
      }, "the domain the preemptor lands in (None when it has none)")
      .def_ro("placement", &PreemptionPlan::placement, "the preemptor's placement, down to devices")
      .def_ro("cost", &PreemptionPlan::cost, "total victim cost under the cost model used")
      .def_ro("lower_bound", &PreemptionPlan::lower_bound, "best proven lower bound on the optimal cost")
      .def_ro("gang_level", &PreemptionPlan::gang_level, "level of the lowest domain holding all replicas")
      .def_ro("replica_level", &PreemptionPlan::replica_level, "loosest level among the replicas' own domains")
      .def_ro("topology_satisfied", &PreemptionPlan::topology_satisfied, "false only for topology-blind baselines")
      .def_ro("rejected", &PreemptionPlan::rejected, "why other domains lost (capped in length)")
      .def_ro("rejected_total", &PreemptionPlan::rejected_total, "how many domains lost in all")
      .def_ro("downgrades", &PreemptionPlan::downgrades,
              "searched domains where the exact method did not apply or stopped early")
      .def_ro("explanation", &PreemptionPlan::explanation,
              "readable summary of all of the above, built from the structured fields; empty "
              "(with every victim's and verdict's reason) in a plan of a solver built "
              "without_text() until explain() words it, to the same text")
      .def_ro("tier", &PreemptionPlan::tier,
              "the topology tier the plan was found in, as the solver orders them (0 = the "
              "preferred levels; the explanation prints its label); 0 for a plan without victims")
      .def_ro("statistics", &PreemptionPlan::statistics)
      .def_ro("preemptor", &PreemptionPlan::preemptor, "the workload this plan is for")
      .def_ro("dependencies", &PreemptionPlan::dependencies,
              "versions of the domains the plan relies on, as the state stood when it was computed")
      .def("has_victims_plan", &PreemptionPlan::has_victims_plan, "True for optimal and feasible.")
      .def("gap", &PreemptionPlan::gap, "Relative optimality gap (cost - bound) / max(cost, tiny); 0 when proven.")
      .def("victim_ids", [](const PreemptionPlan& p) {
        std::vector<std::uint64_t> ids;
        for (const Victim& v : p.victims) ids.push_back(v.id.value);
        return ids;
      }, "The victims' ids, ascending.")
      .def("__eq__", [](const PreemptionPlan& a, const PreemptionPlan& b) { return a == b; },
           "Equal in everything but the decision's wall time.")
      .def("__repr__", [](const PreemptionPlan& p) {
        return "<PreemptionPlan " + p.solver + " " + std::string(to_string(p.status)) + ", " +
               std::to_string(p.victims.size()) + " victim(s), cost " + std::to_string(p.cost) + ">";
      });
}

void bind_solver_interface(nb::module_& m) {
  nb::class_<SolverHandle>(
      m, "Solver",
      "A victim-selection solver or baseline: `solve(state, preemptor, cost_model)` answers "
      "which running workloads must go so that `preemptor` can start, and never modifies the "
      "state. Use a subclass (GreedySolver, KnapsackSolver, BranchAndBoundSolver, "
      "KubeDefaultSolver, ExhaustiveSubsetsSolver) or the ready instances `greedy`, `knapsack`, "
      "`branch_and_bound`, `kube_default`, `exhaustive_subsets`.")
      .def_prop_ro("name", [](const SolverHandle& s) { return std::string(s.name()); })
      .def_prop_ro("is_exact", &SolverHandle::is_exact,
                   "proves optimality when its preconditions hold and no limit is hit")
      .def_prop_ro("is_baseline", &SolverHandle::is_baseline, "a reference kept for comparison")
      .def_prop_ro("builds_text", &SolverHandle::builds_text,
                   "whether its plans come with their text (explanation, victims' and verdicts' "
                   "reasons): False for a solver built without_text(), True for the baselines, "
                   "which always word their plans")
      .def("solve", [](const SolverHandle& solver, const StateHandle& state, const Workload& preemptor,
                       const CostModelHandle& model) {
        const PreemptorCopy copy(preemptor);
        return state.read_released(
            [&](const Allocation& a) { return solver.solve(a, copy.get(), model.model); });
      }, nb::arg("state"), nb::arg("preemptor"), nb::arg("cost_model"),
         "Chooses victims for `preemptor` (pending, not running) under `cost_model`. Victims are "
         "running, preemptible, of strictly lower priority; the plan's placement is valid once "
         "they are gone; the same input gives the same plan. ValueError naming the preemptor "
         "when it is invalid or already running, or naming the model and victim for a bad "
         "price.\n\nReleases the GIL: any number of threads may solve on one state at once; a "
         "mutation of that state waits until they are done.")
      .def("__repr__", [](const SolverHandle& s) {
        return "<Solver " + std::string(s.name()) + (s.builds_text() ? "" : " without text") + ">";
      });
}

void bind_verification(nb::module_& m) {
  nb::class_<PlanVerdict>(m, "PlanVerdict", "What verify_plan found.")
      .def_ro("ok", &PlanVerdict::ok, "no violation found")
      .def_ro("topology_ok", &PlanVerdict::topology_ok,
              "the placement honours every guaranteed scope of the preemptor")
      .def_ro("violations", &PlanVerdict::violations, "one line per broken rule")
      .def("summary", &PlanVerdict::summary, "'plan ok' or 'N violation(s): first; second; ...'.")
      .def("__bool__", [](const PlanVerdict& v) { return v.ok; });

  m.def("verify_plan", [](const StateHandle& state, const Workload& preemptor, const PreemptionPlan& plan,
                          const CostModelHandle& model, bool require_topology, double tolerance) {
    VerifyOptions options;
    options.require_topology = require_topology;
    options.tolerance = tolerance;
    const Workload copy = preemptor;
    return state.read_released([&](const Allocation& a) {
      return verify_plan(a, copy, plan, ErasedModel{&model.model}, options);
    });
  }, nb::arg("state"), nb::arg("preemptor"), nb::arg("plan"), nb::arg("cost_model"), nb::kw_only(),
     nb::arg("require_topology") = true, nb::arg("tolerance") = 0.0,
     "The independent plan verifier: re-applies `plan` to a copy of `state` and checks every "
     "rule (status, victims, each victim's price and the total, the placement once the victims "
     "are gone, guaranteed scopes unless `require_topology` is False, as for topology-blind "
     "baselines). `tolerance` is a relative allowance for costs (0: exact).");

  nb::class_<CommitResult>(m, "CommitResult", "What commit did.")
      .def_ro("committed", &CommitResult::committed,
              "True when the plan was applied; False on a conflict (the state is then unchanged)")
      .def_ro("moved", &CommitResult::moved, "on a conflict, the dependency domains whose version moved")
      .def("__bool__", [](const CommitResult& r) { return r.committed; });

  m.def("commit", [](StateHandle& state, const PreemptionPlan& plan, const Workload& preemptor) {
    return state.mutate([&](Allocation& a) { return commit(a, plan, preemptor); });
  }, nb::arg("state"), nb::arg("plan"), nb::arg("preemptor"),
     "Applies `plan` (evicts and shrinks its victims, starts `preemptor` at its placement) if "
     "none of its dependencies moved since it was computed; otherwise returns committed=False "
     "with the moved domains and changes nothing. ValueError (state unchanged) when the plan "
     "cannot be committed (infeasible, for another workload, inconsistent with the state).");
}

void bind_queue(nb::module_& m) {
  nb::enum_<NominationStatus>(m, "NominationStatus", "What plan_queue did for one preemptor.")
      .value("kept", NominationStatus::kept, "its nomination was still current: reused as is")
      .value("resumed", NominationStatus::resumed,
             "a dependency moved but the nomination still applies at the same placement")
      .value("planned", NominationStatus::planned, "it had no nomination: planned afresh")
      .value("replanned", NominationStatus::replanned, "its nomination no longer applied: planned afresh")
      .value("infeasible", NominationStatus::infeasible, "no plan on the state left by the preemptors before it")
      .value("unknown", NominationStatus::unknown,
             "a limit stopped its search before a plan or a proof: nothing planned")
      .value("rejected", NominationStatus::rejected, "the preemptor itself is bad: `error` says why");

  nb::class_<Nominations>(m, "Nominations",
                          "Caller-owned memory of the last plan of every pending preemptor, "
                          "carried from one plan_queue call to the next.")
      .def(nb::init<>())
      .def("find", [](const Nominations& n, WorkloadId id) -> std::optional<PreemptionPlan> {
        const PreemptionPlan* plan = n.find(id);
        return plan ? std::optional(*plan) : std::nullopt;
      }, nb::arg("id"), "The nomination of preemptor `id` (a copy), or None.")
      .def("remember", &Nominations::remember, nb::arg("preemptor"), nb::arg("plan"),
           "Records `plan` as the nomination of `preemptor`; ValueError for an infeasible plan "
           "or a plan made for another workload.")
      .def("forget", &Nominations::forget, nb::arg("id"), "Drops the nomination of `id`.")
      .def("clear", &Nominations::clear)
      .def("__len__", &Nominations::size);

  nb::class_<QueuedPlan>(m, "QueuedPlan", "One pending preemptor's outcome in plan_queue.")
      .def_ro("preemptor", &QueuedPlan::preemptor)
      .def_ro("status", &QueuedPlan::status)
      .def_ro("plan", &QueuedPlan::plan,
              "computed on (and valid for) the state left by the preemptors before it")
      .def_ro("moved", &QueuedPlan::moved)
      .def_ro("error", &QueuedPlan::error, "for `rejected`: the error");

  nb::class_<QueueResult>(m, "QueueResult", "plan_queue's answer.")
      .def_ro("plans", &QueueResult::plans, "one per pending preemptor, priority descending, then id")
      .def("count", &QueueResult::count, nb::arg("status"), "How many preemptors ended with `status`.");

  m.def("plan_queue", [](const StateHandle& state, std::vector<Workload> pending, const SolverHandle& solver,
                         const CostModelHandle& model, Nominations* nominations) {
    Nominations scratch;
    Nominations& memory = nominations ? *nominations : scratch;
    return state.read_released([&](const Allocation& a) {
      return plan_queue(a, std::span<const Workload>(pending), ErasedSolver{&solver, &model.model},
                        ErasedModel{&model.model}, memory);
    });
  }, nb::arg("state"), nb::arg("pending"), nb::arg("solver"), nb::arg("cost_model"),
     nb::arg("nominations") = nb::none(),
     "Plans for every preemptor in `pending` in one call, highest priority first (ties by id), "
     "each on a working copy of `state` where the plans before it are applied. With "
     "`nominations` (updated in place), a preemptor whose nomination is still current is not "
     "re-solved. A bad preemptor is `rejected` with its error and does not spoil the queue. "
     "Committing the plans in result order with commit() lands them all while the state does "
     "not move. Do not use one Nominations object from two threads at once.");
}

void bind_decider(nb::module_& m) {
  nb::class_<PyDecider>(
      m, "IncrementalDecider",
      "Decides for one pending preemptor under one solver (greedy, knapsack or "
      "branch_and_bound) and cost model, call after call, on a state that changes in between "
      "(a scheduler's cycle): it keeps the scan of every candidate domain keyed by the domain "
      "versions it depended on and reads a domain again only when one changed. decide(state) "
      "returns exactly the plan solver.solve(state, preemptor, model) returns (only "
      "statistics.seconds differs). One decide at a time per decider; different deciders may "
      "decide concurrently on one state.\n\nOn a hot path, give it a solver built "
      "without_text() (`tp.branch_and_bound.without_text()`): decide then returns the plan's "
      "structured facts without its text, and explain(plan, state) words a plan to be printed, "
      "to the text the solver with text would have returned.")
      .def(nb::init<const SolverHandle&, const CostModelHandle&, const Workload&>(), nb::arg("solver"),
           nb::arg("cost_model"), nb::arg("preemptor"),
           "ValueError for a solver without an incremental form (the baselines).")
      .def("decide", &PyDecider::decide, nb::arg("state"),
           "The plan for the preemptor on `state`, reusing every domain read whose versions did "
           "not change. Releases the GIL.")
      .def("explain", &PyDecider::explain, nb::arg("plan"), nb::arg("state"),
           "`plan`, returned by decide(state) with a solver built without_text(), worded on the "
           "same `state` (before it is committed): explain(plan, state, preemptor, cost_model) "
           "with this decider's preemptor and cost model. Returns a worded copy (the argument is "
           "left as it is); a plan with its text already comes back as it is. ValueError, as "
           "explain() raises it, for a plan that is not this preemptor's or not of `state`. "
           "Releases the GIL.")
      .def_prop_ro("reused_reads", [](const PyDecider& d) { return d.decider().reused_reads(); },
                   "domain reads answered from the cache over the decider's life")
      .def_prop_ro("fresh_reads", [](const PyDecider& d) { return d.decider().fresh_reads(); },
                   "domain reads done over the decider's life")
      .def_prop_ro("preemptor", [](const PyDecider& d) { return d.decider().preemptor(); })
      .def_prop_ro("solver", [](const PyDecider& d) { return d.solver_name(); });
}

}  // namespace

void bind_plan(nb::module_& m) {
  bind_plan_types(m);
  bind_solver_interface(m);
  bind_verification(m);
  bind_queue(m);
  bind_decider(m);

  // For benchmarks/python_overhead.py: the same decision timed inside C++, so that the
  // binding's overhead is the difference between it and a timed Python call.
  m.def("_native_solve_seconds", [](const SolverHandle& solver, const StateHandle& state,
                                    const Workload& preemptor, const CostModelHandle& model,
                                    int repeats) {
    if (repeats < 1) throw std::invalid_argument("repeats must be >= 1");
    return state.read_released([&](const Allocation& a) {
      std::vector<double> seconds;
      for (int i = 0; i < repeats; ++i) {
        const auto start = std::chrono::steady_clock::now();
        const PreemptionPlan plan = solver.solve(a, preemptor, model.model);
        seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      return seconds;
    });
  }, nb::arg("solver"), nb::arg("state"), nb::arg("preemptor"), nb::arg("cost_model"), nb::arg("repeats"),
     "Wall seconds of `repeats` solves timed inside C++ (no Python crossing), for the overhead benchmark.");
}

}  // namespace topopreempt::python
