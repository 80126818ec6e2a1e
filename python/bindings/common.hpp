// SPDX-License-Identifier: MIT
#pragma once
// Shared by the binding translation units: how cost models, solvers and cluster states look to
// Python, and the type-erased solver and model through which the templates that only pass a
// solver or model through (the simulator, plan_queue, verify_plan) are instantiated once.

#include <nanobind/nanobind.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "topopreempt/capacity/loaning.hpp"
#include "topopreempt/model/allocation.hpp"
#include "topopreempt/model/cost_model.hpp"
#include "topopreempt/model/workload.hpp"
#include "topopreempt/model_cache/model_cache.hpp"
#include "topopreempt/plan/preemption_plan.hpp"

namespace topopreempt::python {

namespace nb = nanobind;

/// A cost model written in Python: `evict(victim) -> float` and, optionally,
/// `shrink(victim, dropped) -> float` (default: the eviction price). Every price is a call
/// into Python under the GIL, so it is much slower than a built-in model and serialises the
/// threads that solve with it; it declares no bound, so solvers read every candidate domain.
class PythonCostModel {
 public:
  static constexpr std::string_view name = "python";

  PythonCostModel(nb::object evict, nb::object shrink)
      : callables_(std::make_shared<Callables>(std::move(evict), std::move(shrink))) {}

  [[nodiscard]] double evict(const Workload& victim) const {
    if (!callables_->evict.is_valid()) {
      throw std::invalid_argument("this CallableCostModel was cleared by the garbage collector");
    }
    return call(callables_->evict, victim, {});
  }
  [[nodiscard]] double shrink(const Workload& victim, std::int32_t dropped) const {
    if (!callables_->shrink.is_valid() || callables_->shrink.is_none()) return evict(victim);
    return call(callables_->shrink, victim, dropped);
  }
  [[nodiscard]] const nb::object& evict_callable() const noexcept { return callables_->evict; }
  [[nodiscard]] const nb::object& shrink_callable() const noexcept { return callables_->shrink; }
  /// Whether no copy (a decider's, a running solve's) shares the callables: only then may the
  /// garbage collector see them as this model's alone (traverse) and drop them (clear).
  [[nodiscard]] bool sole_owner() const noexcept { return callables_.use_count() == 1; }
  /// A model with the same callables that shares nothing with this one (called with the GIL):
  /// what a weighted sum holds, so that its callables are the sum's alone to report to the
  /// garbage collector.
  [[nodiscard]] PythonCostModel detached() const { return {callables_->evict, callables_->shrink}; }
  /// Drops the callables, shared by every copy (the collector breaking a cycle such as model ->
  /// function -> module globals -> model, when `sole_owner`); a later price is then an error,
  /// not a crash.
  void clear() const noexcept {
    callables_->evict.reset();
    callables_->shrink.reset();
  }

 private:
  // Copies of the model travel into solvers that run without the GIL: they share these
  // references through an atomic count instead of touching Python reference counts, and the
  // last one to go takes the GIL to drop them.
  struct Callables {
    Callables(nb::object e, nb::object s) : evict(std::move(e)), shrink(std::move(s)) {}
    Callables(const Callables&) = delete;
    Callables& operator=(const Callables&) = delete;
    ~Callables() {
      nb::gil_scoped_acquire gil;
      evict.reset();
      shrink.reset();
    }
    nb::object evict;
    nb::object shrink;
  };

  [[nodiscard]] static double call(const nb::object& function, const Workload& victim,
                                   std::optional<std::int32_t> dropped);

  std::shared_ptr<Callables> callables_;
};

/// `model_cache::cache_aware_reload` over its own copies of the model cache and the cluster
/// state, taken when it is made: solves read them without the GIL while Python may change the
/// originals, and copies of the model (a solve's, a decider's) share them.
class CacheAwareReload {
 public:
  static constexpr std::string_view name = model_cache::cache_aware_reload::name;
  CacheAwareReload(std::shared_ptr<const model_cache::ModelCacheState> cache,
                   std::shared_ptr<const Allocation> state, double cached_elsewhere_cost)
      : cache_(std::move(cache)), state_(std::move(state)), model_(*cache_, *state_) {
    model_.cached_elsewhere_cost = cached_elsewhere_cost;
  }
  [[nodiscard]] double evict(const Workload& victim) const { return model_.evict(victim); }
  [[nodiscard]] double shrink(const Workload& victim, std::int32_t dropped) const {
    return model_.shrink(victim, dropped);
  }
  [[nodiscard]] double cached_elsewhere_cost() const noexcept { return model_.cached_elsewhere_cost; }

 private:
  std::shared_ptr<const model_cache::ModelCacheState> cache_;
  std::shared_ptr<const Allocation> state_;
  model_cache::cache_aware_reload model_;  // points into *cache_ and *state_
};

struct PartModel;

/// One part of a weighted sum: any model a Python caller can pass (weighted sums included),
/// held as a `PartModel` (defined with `ModelVariant`, which holds sums of parts). Its price
/// floor is the model's when both parts of the sum declare one and 0 otherwise, as
/// `cost::weighted_sum` declares a floor only when both of its parts do.
class ModelPart {
 public:
  static constexpr std::string_view name = "weighted_sum_part";
  ModelPart(std::shared_ptr<const PartModel> model, bool floor_declared)
      : model_(std::move(model)), floor_declared_(floor_declared) {}
  [[nodiscard]] double evict(const Workload& victim) const;
  [[nodiscard]] double shrink(const Workload& victim, std::int32_t dropped) const;
  [[nodiscard]] double least_price() const;
  [[nodiscard]] const PartModel& part() const noexcept { return *model_; }
  [[nodiscard]] bool floor_declared() const noexcept { return floor_declared_; }
  /// Holders of the part's model: 1 when no copy of the sum (a solve's, a decider's) shares it.
  [[nodiscard]] long owners() const noexcept { return model_.use_count(); }

 protected:
  std::shared_ptr<const PartModel> model_;
  bool floor_declared_;
};

/// A part of a sum that declares index bounds: the model's own, or none ({0, 0}, 0) for a
/// model that declares none, as `cost::weighted_sum` counts such a part.
class IndexedModelPart : public ModelPart {
 public:
  using ModelPart::ModelPart;
  [[nodiscard]] PriceRate index_price_rate(const IndexBand& band) const;
  [[nodiscard]] double index_action_price(const IndexBand& band) const;
};

/// `cost::weighted_sum` over models chosen at run time: one alternative whose parts declare the
/// index price bounds (when either part's model does, as the C++ sum declares them) and one
/// whose parts do not, so that solvers take the same paths as with the concrete C++ sum.
using IndexedWeightedSum = cost::weighted_sum<IndexedModelPart, IndexedModelPart>;
/// See `IndexedWeightedSum`: the sum of two models neither of which declares index bounds.
using PlainWeightedSum = cost::weighted_sum<ModelPart, ModelPart>;

/// Every cost model a Python caller can pass.
using ModelVariant =
    std::variant<cost::victim_count, cost::priority_weighted, cost::lost_work, cost::reload_time,
                 cost::kubernetes_order, capacity::shrink_elastic_first, CacheAwareReload,
                 PythonCostModel, IndexedWeightedSum, PlainWeightedSum>;

/// What a `ModelPart` points at.
struct PartModel {
  ModelVariant model;
};

/// Whether `model` declares a price floor as its C++ type would (a sum: when both parts do).
[[nodiscard]] bool declares_price_floor(const ModelVariant& model);
/// Whether `model` declares index price bounds as its C++ type would (a sum: when either part
/// does).
[[nodiscard]] bool declares_index_rate(const ModelVariant& model);

/// The Python base class `CostModel`; each built-in model is a subclass that fills `model`.
struct CostModelHandle {
  ModelVariant model;
  /// For `KubernetesOrder`: the `base` it was built with (the model keeps only its weights),
  /// so that a snapshot can name it.
  double kubernetes_base = 0.0;
};

/// Prices through whichever model a `ModelVariant` holds. It declares nothing beyond the
/// `CostModel` concept: it is handed only to code that passes the model through to a real
/// solver or prices a plan's victims one by one (the verifier, the simulator's tallies).
struct ErasedModel {
  static constexpr std::string_view name = "erased";
  const ModelVariant* model = nullptr;
  [[nodiscard]] double evict(const Workload& victim) const {
    return std::visit([&](const auto& m) { return static_cast<double>(m.evict(victim)); }, *model);
  }
  [[nodiscard]] double shrink(const Workload& victim, std::int32_t dropped) const {
    return std::visit([&](const auto& m) { return static_cast<double>(m.shrink(victim, dropped)); },
                      *model);
  }
};

inline double ModelPart::evict(const Workload& victim) const { return ErasedModel{&model_->model}.evict(victim); }
inline double ModelPart::shrink(const Workload& victim, std::int32_t dropped) const {
  return ErasedModel{&model_->model}.shrink(victim, dropped);
}
inline double ModelPart::least_price() const {
  if (!floor_declared_) return 0.0;
  return std::visit([](const auto& m) { return least_price_of(m); }, model_->model);
}
inline PriceRate IndexedModelPart::index_price_rate(const IndexBand& band) const {
  return std::visit([&](const auto& m) { return index_price_rate_of(m, band); }, model_->model);
}
inline double IndexedModelPart::index_action_price(const IndexBand& band) const {
  return std::visit([&](const auto& m) { return index_action_price_of(m, band); }, model_->model);
}

/// The name of the model a variant holds ("lost_work", "python", ...).
[[nodiscard]] inline std::string model_name(const ModelVariant& model) {
  return std::visit([](const auto& m) { return std::string(std::decay_t<decltype(m)>::name); }, model);
}

class DeciderBase;

/// The Python base class `Solver`: one subclass per solver and baseline, each solving with the
/// concrete C++ solver and model (every solver x model pair is instantiated once, in the
/// solver's translation unit).
class SolverHandle {
 public:
  SolverHandle() = default;
  SolverHandle(const SolverHandle&) = default;
  SolverHandle& operator=(const SolverHandle&) = default;
  virtual ~SolverHandle() = default;
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  [[nodiscard]] virtual bool is_exact() const noexcept = 0;
  [[nodiscard]] virtual bool is_baseline() const noexcept = 0;
  /// Whether plans come with their text (false for a solver built `without_text()`; true for
  /// the baselines, which always word their plans).
  [[nodiscard]] virtual bool builds_text() const noexcept = 0;
  /// `solver.solve(state, preemptor, model)`; called without the GIL.
  [[nodiscard]] virtual PreemptionPlan solve(const Allocation& state, const Workload& preemptor,
                                             const ModelVariant& model) const = 0;
  /// An `IncrementalDecider` over this solver; throws `std::invalid_argument` for a solver
  /// without an incremental form (the baselines).
  [[nodiscard]] virtual std::unique_ptr<DeciderBase> decider(ModelVariant model,
                                                             Workload preemptor) const = 0;
};

/// `IncrementalDecider<Solver, Model>` behind one interface.
class DeciderBase {
 public:
  virtual ~DeciderBase() = default;
  [[nodiscard]] virtual PreemptionPlan decide(const Allocation& state) = 0;
  [[nodiscard]] virtual std::uint64_t reused_reads() const noexcept = 0;
  [[nodiscard]] virtual std::uint64_t fresh_reads() const noexcept = 0;
  [[nodiscard]] virtual const Workload& preemptor() const noexcept = 0;
  /// `IncrementalDecider::explain` after `check_explainable`: words `plan` on `state` with
  /// the decider's preemptor and model (called without the GIL).
  virtual void explain(PreemptionPlan& plan, const Allocation& state) const = 0;
};

/// A `PreemptionSolver` for templates that only pass the solver through: it solves with the
/// real solver and the real model whatever model it is handed (the erased one). `name` is a
/// placeholder the callers overwrite (`SimulationMetrics::solver`).
struct ErasedSolver {
  static constexpr std::string_view name = "erased";
  const SolverHandle* solver = nullptr;
  const ModelVariant* model = nullptr;
  template <CostModel Model>
  [[nodiscard]] PreemptionPlan solve(const Allocation& state, const Workload& preemptor,
                                     const Model& /*erased*/) const {
    return solver->solve(state, preemptor, *model);
  }
};

/// A cluster state shared with Python. Solves read it without the GIL, under a shared lock;
/// mutations take the lock exclusively (waiting for running solves, with the GIL released
/// meanwhile) and then run under the GIL, so a Python thread reading the state never sees a
/// half-done change and a solve never reads a state being changed.
struct StateHandle {
  explicit StateHandle(Allocation state) : allocation(std::move(state)) {}
  Allocation allocation;
  mutable std::shared_mutex solving;

  /// Runs `change(allocation)` with exclusive access (called with the GIL held).
  template <class Change>
  decltype(auto) mutate(Change&& change) {
    std::unique_lock lock(solving, std::defer_lock);
    {
      nb::gil_scoped_release release;
      lock.lock();
    }
    return change(allocation);
  }
  /// Runs `read(allocation)` without the GIL, beside other readers (called with the GIL held).
  template <class Read>
  decltype(auto) read_released(Read&& read) const {
    nb::gil_scoped_release release;
    std::shared_lock lock(solving);
    return read(allocation);
  }
};

/// Throws `std::invalid_argument` naming `id` when it is not a domain of `topology`.
inline DomainId checked_domain(const Topology& topology, std::uint32_t id) {
  if (!topology.valid_domain(DomainId{id})) {
    throw std::invalid_argument("domain id " + std::to_string(id) + " is not in the topology (" +
                                std::to_string(topology.size()) + " domains)");
  }
  return DomainId{id};
}

// Each translation unit binds one area into the module.
void bind_model(nb::module_& m);
void bind_plan(nb::module_& m);
void bind_cost_models(nb::module_& m);
void bind_exact_solvers(nb::module_& m);
void bind_baselines(nb::module_& m);
void bind_snapshots(nb::module_& m);
void bind_simulator(nb::module_& m);

}  // namespace topopreempt::python

// Ids cross as plain Python ints.
namespace nanobind::detail {

/// A strong id (`WorkloadId`, `DomainId`) as the Python int of its `Raw` value.
template <class Id, class Raw>
struct id_caster {
  NB_TYPE_CASTER(Id, const_name("int"))
  bool from_python(handle src, uint8_t flags, cleanup_list* cleanup) noexcept {
    make_caster<Raw> inner;
    if (!inner.from_python(src, flags, cleanup)) return false;
    value = Id{inner.value};
    return true;
  }
  static handle from_cpp(Id id, rv_policy policy, cleanup_list* cleanup) noexcept {
    return make_caster<Raw>::from_cpp(id.value, policy, cleanup);
  }
};

template <>
struct type_caster<topopreempt::WorkloadId> : id_caster<topopreempt::WorkloadId, std::uint64_t> {};
template <>
struct type_caster<topopreempt::DomainId> : id_caster<topopreempt::DomainId, std::uint32_t> {};

}  // namespace nanobind::detail
