// SPDX-License-Identifier: MIT
// Internals of the C interface shared by its translation units. Not installed.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

// Only the umbrella header (it includes decisions/incremental_decider.hpp): the C ABI is a client
// of the public API.
#include "topopreempt/topopreempt.hpp"
#include "topopreempt_c.h"

namespace topopreempt_c {

namespace tp = topopreempt;

/// An error to report through the C interface: thrown inside, caught at the entry point.
/// Not a std::exception, so that library errors and ours are never confused.
struct Failure {
  tp_status status;
  std::string message;
};
[[noreturn]] void fail(tp_status status, std::string message);

/// Checks a struct's size against this library's (see "Conventions" in topopreempt_c.h).
void check_struct_size(std::size_t given, std::size_t expected, const char* type);

/// `amounts` over `schema`, validated: known names, each once, >= 0.
tp::ResourceVector to_vector(const tp::ResourceSchema& schema, const tp_amount* amounts,
                             std::size_t count, const std::string& context);

constexpr std::uint32_t no_index = UINT32_MAX;

/// One domain of the topology being edited.
struct SpecDomain {
  std::string name;
  tp::LevelIndex level = 0;
  std::uint32_t parent = no_index;
  std::vector<std::uint32_t> children;  // insertion order; removed ones are skipped
  tp::ResourceVector capacity;          // local capacity
  std::optional<Eigen::MatrixXd> affinity;
  bool alive = true;
};

/// The editable description of a topology. Made from a sealed topology, its domain index i is
/// that topology's DomainId i for i < `sealed_size`; edits append or mark removed, and the next
/// seal builds a topology from the live domains in pre-order.
struct TopologySpec {
  std::vector<std::string> levels;
  tp::ResourceSchema schema{std::vector<tp::ResourceDimension>{}};
  tp::LevelIndex device_level = 0;
  tp::LevelIndex host_level = 0;
  std::deque<SpecDomain> domains;  // [0] is the root
  std::unordered_map<std::string, std::uint32_t> by_parent_and_name;
  std::size_t sealed_size = 0;

  static TopologySpec from(const tp::Topology& topology);
  static std::string key(std::uint32_t parent, std::string_view name);
  /// Names joined by '/', none empty.
  static bool valid_path(std::string_view path);
  /// The live domain at `path` below `from` ("" is `from` itself), or nullopt.
  [[nodiscard]] std::optional<std::uint32_t> find(std::string_view path,
                                                  std::uint32_t from = 0) const;
  /// Adds a validated domain (strong guarantee) and returns its index.
  std::uint32_t add(std::string_view path, std::string_view level, tp::ResourceVector capacity);
  /// Marks the subtree of `index` removed (no-throw after collecting it).
  void remove(std::uint32_t index);
  /// The topology of the live domains; `spec_to_id[i]` is the DomainId of live domain i.
  [[nodiscard]] tp::Topology build(std::vector<std::uint32_t>& spec_to_id) const;
  [[nodiscard]] std::string path_of(std::uint32_t index) const;
};

/// How to plan: which solver, under which cost (the validated tp_plan_options).
struct PlanSettings {
  tp_solver solver = TP_SOLVER_BRANCH_AND_BOUND;
  std::uint64_t node_limit = 0;
  double time_limit_s = 0.0;
  std::vector<tp_cost_term> terms;
  std::vector<std::int32_t> priorities;  // running priorities (kubernetes_order only)
};

/// A question: which preemptor, under which solver and cost.
struct Question : PlanSettings {
  tp::Workload preemptor;
};

/// The validated settings of `options` on `cluster`'s state (its running priorities, for
/// kubernetes_order).
PlanSettings to_settings(const tp_cluster& cluster, const tp_plan_options* options);

/// Bytes that tell two settings apart: equal keys, equal prices and equal solves.
std::string settings_key(const PlanSettings& settings);

/// An IncrementalDecider behind a type-erased face, with the cost model for the verifier.
class Decider {
 public:
  virtual ~Decider() = default;
  virtual tp::PreemptionPlan decide(const tp::Allocation& state) = 0;
  virtual tp::PlanVerdict verify(const tp::Allocation& state,
                                 const tp::PreemptionPlan& plan) const = 0;
  [[nodiscard]] virtual std::string_view cost_name() const noexcept = 0;
  [[nodiscard]] virtual std::uint64_t reused_reads() const noexcept = 0;
  [[nodiscard]] virtual std::uint64_t fresh_reads() const noexcept = 0;
};

std::unique_ptr<Decider> make_decider(const Question& question);
std::unique_ptr<Decider> make_greedy_decider(const Question& question);
std::unique_ptr<Decider> make_knapsack_decider(const Question& question);
std::unique_ptr<Decider> make_branch_and_bound_decider(const Question& question);

/// The library's `plan_queue` under one solver and cost model, behind a type-erased face, with
/// the verifier of that model.
class QueuePlanner {
 public:
  virtual ~QueuePlanner() = default;
  virtual tp::QueueResult plan(const tp::Allocation& state, std::span<const tp::Workload> pending,
                               tp::Nominations& nominations) const = 0;
  virtual tp::PlanVerdict verify(const tp::Allocation& state, const tp::Workload& preemptor,
                                 const tp::PreemptionPlan& plan) const = 0;
  [[nodiscard]] virtual std::string_view cost_name() const noexcept = 0;
};

std::unique_ptr<QueuePlanner> make_queue_planner(const PlanSettings& settings);
std::unique_ptr<QueuePlanner> make_greedy_queue_planner(const PlanSettings& settings);
std::unique_ptr<QueuePlanner> make_knapsack_queue_planner(const PlanSettings& settings);
std::unique_ptr<QueuePlanner> make_branch_and_bound_queue_planner(const PlanSettings& settings);

/// The cost of several weighted terms (or one term the library has no model for): the C
/// interface's own model, priced term by term with the library's models.
class WeightedTerms {
 public:
  static constexpr std::string_view name = "weighted_sum";
  WeightedTerms(const std::vector<tp_cost_term>& terms,
                const std::vector<std::int32_t>& priorities);
  [[nodiscard]] double evict(const tp::Workload& victim) const;
  [[nodiscard]] double shrink(const tp::Workload& victim, std::int32_t dropped) const;
  /// Every term's floor, weighted: no action undercuts it since each term's price is at least
  /// its floor and rounding of sums and non-negative products is monotone.
  [[nodiscard]] double least_price() const noexcept { return least_price_; }

 private:
  [[nodiscard]] double price(const tp_cost_term& term, const tp::Workload& victim,
                             std::optional<std::int32_t> dropped) const;
  std::vector<tp_cost_term> terms_;
  std::optional<tp::cost::kubernetes_order> kubernetes_;
  double least_price_ = 0.0;
};

/// Calls `use(model)` with the library's model when the question has one unit-weight term the
/// library prices, else with `WeightedTerms`.
template <class Use>
auto with_model(const PlanSettings& question, Use&& use) {
  if (question.terms.size() == 1 && question.terms[0].weight == 1.0) {
    const tp_cost_term& term = question.terms[0];
    switch (term.model) {
      case TP_COST_PRIORITY_WEIGHTED:
        return use(tp::cost::priority_weighted{.offset = term.offset});
      case TP_COST_VICTIM_COUNT:
        return use(tp::cost::victim_count{});
      case TP_COST_KUBERNETES_ORDER:
        return use(tp::cost::kubernetes_order(question.priorities, term.base));
      case TP_COST_LOST_WORK:
        return use(tp::cost::lost_work{.floor = term.floor});
      case TP_COST_RELOAD_TIME:
        return use(tp::cost::reload_time{.bandwidth_gib_per_s = term.bandwidth_gib_per_s,
                                         .floor = term.floor});
      default:
        break;
    }
  }
  return use(WeightedTerms(question.terms, question.priorities));
}

/// `Decider` for one solver type and one model type.
template <class Solver, class Model>
class DeciderFor final : public Decider {
 public:
  DeciderFor(Solver solver, Model model, tp::Workload preemptor)
      : model_(model), decider_(std::move(solver), std::move(model), std::move(preemptor)) {}
  tp::PreemptionPlan decide(const tp::Allocation& state) override { return decider_.decide(state); }
  tp::PlanVerdict verify(const tp::Allocation& state,
                         const tp::PreemptionPlan& plan) const override {
    return tp::verify_plan(state, decider_.preemptor(), plan, model_);
  }
  [[nodiscard]] std::string_view cost_name() const noexcept override { return Model::name; }
  [[nodiscard]] std::uint64_t reused_reads() const noexcept override {
    return decider_.reused_reads();
  }
  [[nodiscard]] std::uint64_t fresh_reads() const noexcept override {
    return decider_.fresh_reads();
  }

 private:
  Model model_;
  tp::IncrementalDecider<Solver, Model> decider_;
};

/// `make_<solver>_decider`'s body: the decider of `solver` under the question's model.
template <class Solver>
std::unique_ptr<Decider> decider_of(const Solver& solver, const Question& question) {
  return with_model(question, [&](auto model) -> std::unique_ptr<Decider> {
    return std::make_unique<DeciderFor<Solver, decltype(model)>>(solver, std::move(model),
                                                                 question.preemptor);
  });
}

/// `QueuePlanner` for one solver type and one model type.
template <class Solver, class Model>
class QueuePlannerFor final : public QueuePlanner {
 public:
  QueuePlannerFor(Solver solver, Model model) : solver_(std::move(solver)), model_(model) {}
  tp::QueueResult plan(const tp::Allocation& state, std::span<const tp::Workload> pending,
                       tp::Nominations& nominations) const override {
    return tp::plan_queue(state, pending, solver_, model_, nominations);
  }
  tp::PlanVerdict verify(const tp::Allocation& state, const tp::Workload& preemptor,
                         const tp::PreemptionPlan& plan) const override {
    return tp::verify_plan(state, preemptor, plan, model_);
  }
  [[nodiscard]] std::string_view cost_name() const noexcept override { return Model::name; }

 private:
  Solver solver_;
  Model model_;
};

/// `make_<solver>_queue_planner`'s body: the queue planner of `solver` under the settings' model.
template <class Solver>
std::unique_ptr<QueuePlanner> queue_planner_of(const Solver& solver, const PlanSettings& settings) {
  return with_model(settings, [&](auto model) -> std::unique_ptr<QueuePlanner> {
    return std::make_unique<QueuePlannerFor<Solver, decltype(model)>>(solver, std::move(model));
  });
}

}  // namespace topopreempt_c

/// The persistent cluster state behind a `tp_cluster*`.
struct tp_cluster {
  struct CachedDecider {
    std::string key;
    std::unique_ptr<topopreempt_c::Decider> decider;
  };

  std::string last_error;
  const char* static_error = nullptr;  // when even the message could not be stored
  std::uint64_t serial = 0;            // tells clusters apart for commit

  std::optional<topopreempt_c::TopologySpec> spec;  // after define
  std::uint32_t pending_edits = 0;
  std::uint64_t generation = 0;

  std::shared_ptr<const topopreempt::Topology> topology;  // the sealed topology
  std::unique_ptr<topopreempt::Allocation> state;
  std::unordered_map<std::string, std::uint32_t> hosts;  // name -> DomainId; no_index: ambiguous
  std::map<std::int32_t, std::size_t> priorities;        // running workloads per priority

  std::vector<CachedDecider> deciders;  // most recently used first
  std::uint64_t reused_reads = 0;
  std::uint64_t fresh_reads = 0;
};

/// A plan and everything the C side reads from it, owned together.
struct tp_plan {
  std::uint64_t cluster_serial = 0;
  std::uint64_t generation = 0;
  topopreempt::Workload preemptor;
  topopreempt::PreemptionPlan plan;
  std::deque<std::string> strings;  // stable c_str() for every string handed out
  const char* cost_name = "";
  const char* target = "";
  const char* target_level = "";
  const char* target_host = "";
  std::vector<tp_victim> victims;
  std::vector<tp_plan_entry> entries;
  std::vector<tp_amount> amounts;  // entries point into it
};

/// A queue behind a `tp_queue*`: the nominations carried between calls, what they were made
/// under, and the outcomes of the last call (which own everything `tp_queue_get_plans` hands out).
struct tp_queue {
  struct Outcomes {
    std::vector<std::unique_ptr<tp_plan>> plans;
    std::deque<std::string> strings;              // stable c_str() for errors and paths
    std::vector<std::vector<const char*>> moved;  // one list per outcome
    std::vector<tp_queued_plan> items;            // point into the above
  };

  std::uint64_t cluster_serial = 0;  // 0: not used with a cluster yet
  std::uint64_t generation = 0;      // the cluster's topology generation of the nominations
  std::string settings_key;          // settings_key() of what the nominations were made under
  topopreempt::Nominations nominations;
  Outcomes outcomes;
};

namespace topopreempt_c {

/// A tp_workload as a library workload (`role` names it in messages), validated against the
/// sealed topology; TP_E_STATE when there is none.
tp::Workload to_workload(const tp_cluster& cluster, const tp_workload* given, const char* role);

/// Everything the C side reads from `out.plan`, owned by `out`.
void fill(tp_plan& out, const tp::Topology& topology, std::string_view cost_name);

/// The running workloads per priority after adding `added` and removing `removed` ones.
std::map<std::int32_t, std::size_t> priorities_after(const std::map<std::int32_t, std::size_t>& now,
                                                     const std::vector<std::int32_t>& added,
                                                     const std::vector<std::int32_t>& removed);

}  // namespace topopreempt_c
