// SPDX-License-Identifier: MIT
// The cost models: each built-in one with its parameters, and a cost model written in Python.

#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "common.hpp"

namespace topopreempt::python {

double PythonCostModel::call(const nb::object& function, const Workload& victim,
                             std::optional<std::int32_t> dropped) {
  nb::gil_scoped_acquire gil;
  // A copy: the callable may keep what it is given, and the state's own workload must not
  // outlive a change of the state.
  nb::object price = dropped ? function(victim, *dropped) : function(victim);
  if (!PyFloat_Check(price.ptr()) && !PyLong_Check(price.ptr())) {
    throw nb::type_error(("the Python cost model returned " +
                          std::string(nb::str(nb::type_name(price.type())).c_str()) + " for " +
                          victim.label() + "; it must return a float")
                             .c_str());
  }
  return nb::cast<double>(price);
}

namespace {

template <class Model>
constexpr bool is_weighted_sum = std::is_same_v<Model, IndexedWeightedSum> || std::is_same_v<Model, PlainWeightedSum>;

}  // namespace

bool declares_price_floor(const ModelVariant& model) {
  return std::visit([](const auto& m) {
    using Model = std::decay_t<decltype(m)>;
    if constexpr (is_weighted_sum<Model>) {
      return declares_price_floor(m.first.part().model) && declares_price_floor(m.second.part().model);
    } else {
      return PriceFloorModel<Model>;
    }
  }, model);
}

bool declares_index_rate(const ModelVariant& model) {
  return std::visit([](const auto& m) {
    using Model = std::decay_t<decltype(m)>;
    if constexpr (is_weighted_sum<Model>) {
      return std::is_same_v<Model, IndexedWeightedSum>;
    } else {
      return IndexPricedModel<Model>;
    }
  }, model);
}

namespace {

struct VictimCountModel : CostModelHandle {};
struct PriorityWeightedModel : CostModelHandle {};
struct LostWorkModel : CostModelHandle {};
struct ReloadTimeModel : CostModelHandle {};
struct KubernetesOrderModel : CostModelHandle {};
struct ShrinkElasticFirstModel : CostModelHandle {};
struct CacheAwareReloadModel : CostModelHandle {};
struct CallableModel : CostModelHandle {};
/// The parts as the Python objects they were given as (a part may be a CallableCostModel, so
/// the garbage collector sees through them as it does through a CallableCostModel).
struct WeightedSumModel : CostModelHandle {
  nb::object first;
  nb::object second;
};

template <class Model>
const Model& held(const CostModelHandle& handle) {
  return std::get<Model>(handle.model);
}

/// Calls `action(python_model)` on every Python cost model `model` holds that nothing else
/// shares: the model itself when no solve or decider holds a copy, and the parts of a weighted
/// sum that no copy shares (a sum holds detached copies of its Python parts).
template <class Action>
void for_each_sole_python_model(const ModelVariant& model, const Action& action) {
  std::visit([&](const auto& m) {
    using Model = std::decay_t<decltype(m)>;
    if constexpr (std::is_same_v<Model, PythonCostModel>) {
      if (m.sole_owner()) action(m);
    } else if constexpr (is_weighted_sum<Model>) {
      for (const ModelPart* part : {static_cast<const ModelPart*>(&m.first), static_cast<const ModelPart*>(&m.second)}) {
        if (part->owners() == 1) for_each_sole_python_model(part->part().model, action);
      }
    }
  }, model);
}

/// A copy of `model` whose Python models (its own, or its parts') share nothing with `model`.
ModelVariant detached(const ModelVariant& model) {
  return std::visit([](const auto& m) -> ModelVariant {
    using Model = std::decay_t<decltype(m)>;
    if constexpr (std::is_same_v<Model, PythonCostModel>) {
      return m.detached();
    } else if constexpr (is_weighted_sum<Model>) {
      using Part = decltype(m.first);
      const auto copy = [](const Part& part) {
        return Part(std::make_shared<const PartModel>(PartModel{detached(part.part().model)}), part.floor_declared());
      };
      return Model{copy(m.first), copy(m.second), m.first_weight, m.second_weight};
    } else {
      return m;
    }
  }, model);
}

// A CallableCostModel refers to Python functions, which refer to their module's globals, which
// may refer to the model: a cycle the garbage collector must see through (nanobind's pattern,
// docs "refleaks"), or the model and everything its functions' globals hold would never be freed.
// A WeightedSum refers to its parts as Python objects and holds detached copies of the Python
// models among them: it reports both.
int visit_sole_callables(const CostModelHandle& handle, visitproc visit, void* arg) {
  int result = 0;
  for_each_sole_python_model(handle.model, [&](const PythonCostModel& model) {
    for (const nb::object* callable : {&model.evict_callable(), &model.shrink_callable()}) {
      if (result == 0 && callable->ptr() != nullptr) result = visit(callable->ptr(), arg);
    }
  });
  return result;
}

void clear_sole_callables(const CostModelHandle& handle) {
  for_each_sole_python_model(handle.model, [](const PythonCostModel& model) { model.clear(); });
}

int callable_model_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  return visit_sole_callables(*nb::inst_ptr<CallableModel>(self), visit, arg);
}

int callable_model_clear(PyObject* self) {
  clear_sole_callables(*nb::inst_ptr<CallableModel>(self));
  return 0;
}

PyType_Slot callable_model_slots[] = {
    {Py_tp_traverse, reinterpret_cast<void*>(callable_model_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(callable_model_clear)},
    {0, nullptr}};

int weighted_sum_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  const auto* sum = nb::inst_ptr<WeightedSumModel>(self);
  Py_VISIT(sum->first.ptr());
  Py_VISIT(sum->second.ptr());
  return visit_sole_callables(*sum, visit, arg);
}

int weighted_sum_clear(PyObject* self) {
  auto* sum = nb::inst_ptr<WeightedSumModel>(self);
  sum->first.reset();
  sum->second.reset();
  clear_sole_callables(*sum);
  return 0;
}

PyType_Slot weighted_sum_slots[] = {
    {Py_tp_traverse, reinterpret_cast<void*>(weighted_sum_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(weighted_sum_clear)},
    {0, nullptr}};

/// ValueError unless `weight` is finite and >= 0 (what `cost::weighted_sum` expects).
double checked_weight(double weight, const char* model, const char* parameter) {
  if (!std::isfinite(weight) || weight < 0.0) {
    throw std::invalid_argument(std::string(model) + ": " + parameter + " must be finite and >= 0, got " +
                                std::to_string(weight));
  }
  return weight;
}

/// `cost::weighted_sum` of two models chosen at run time (see `IndexedWeightedSum`).
ModelVariant weighted_sum_of(const ModelVariant& first, const ModelVariant& second, double first_weight,
                             double second_weight) {
  auto a = std::make_shared<const PartModel>(PartModel{detached(first)});
  auto b = std::make_shared<const PartModel>(PartModel{detached(second)});
  const bool floor = declares_price_floor(first) && declares_price_floor(second);
  if (declares_index_rate(first) || declares_index_rate(second)) {
    return IndexedWeightedSum{IndexedModelPart(std::move(a), floor), IndexedModelPart(std::move(b), floor),
                              first_weight, second_weight};
  }
  return PlainWeightedSum{ModelPart(std::move(a), floor), ModelPart(std::move(b), floor), first_weight,
                          second_weight};
}

/// The weights of the weighted sum `handle` holds (first, second).
std::pair<double, double> sum_weights(const CostModelHandle& handle) {
  return std::visit([](const auto& m) -> std::pair<double, double> {
    if constexpr (is_weighted_sum<std::decay_t<decltype(m)>>) {
      return {m.first_weight, m.second_weight};
    } else {
      throw std::logic_error("a WeightedSum holds a weighted sum");
    }
  }, handle.model);
}

}  // namespace

void bind_cost_models(nb::module_& m) {
  nb::class_<CostModelHandle>(
      m, "CostModel",
      "What evicting or shrinking one victim costs. Costs are additive over victims, "
      "non-negative and finite; solvers minimise their sum. Use a subclass: VictimCount, "
      "PriorityWeighted, LostWork, ReloadTime, KubernetesOrder, ShrinkElasticFirst, "
      "CacheAwareReload, WeightedSum or CallableCostModel.")
      .def_prop_ro("name", [](const CostModelHandle& h) { return model_name(h.model); },
                   "The model's name ('lost_work', ...).")
      .def("evict", [](const CostModelHandle& h, const Workload& victim) {
        return ErasedModel{&h.model}.evict(victim);
      }, nb::arg("victim"), "The price of preempting the whole gang `victim`.")
      .def("shrink", [](const CostModelHandle& h, const Workload& victim, std::int32_t dropped) {
        return ErasedModel{&h.model}.shrink(victim, dropped);
      }, nb::arg("victim"), nb::arg("dropped"),
         "The price of dropping `dropped` (>= 1) replicas of an elastic workload.")
      .def("__repr__", [](const CostModelHandle& h) { return "<CostModel " + model_name(h.model) + ">"; });

  nb::class_<VictimCountModel, CostModelHandle>(
      m, "VictimCount", "Number of disrupted workloads: 1 per eviction, 1 per shrink.")
      .def("__init__", [](VictimCountModel* h) { new (h) VictimCountModel{{cost::victim_count{}}}; });

  nb::class_<PriorityWeightedModel, CostModelHandle>(
      m, "PriorityWeighted",
      "Priority-weighted: `priority + offset` per evicted workload (offset 2^31 makes every "
      "int32 priority positive, as the topology-aware preemption paper does), pro rata per "
      "dropped replica for a shrink, rounded up to a whole unit. Prefers few, low-priority "
      "victims. A plan's cost is `victims x offset + priority sum`.")
      .def("__init__", [](PriorityWeightedModel* h, double offset) {
        if (!std::isfinite(offset)) throw std::invalid_argument("priority_weighted: offset must be finite");
        new (h) PriorityWeightedModel{{cost::priority_weighted{offset}}};
      }, nb::kw_only(), nb::arg("offset") = 2147483648.0)
      .def_prop_ro("offset", [](const CostModelHandle& h) { return held<cost::priority_weighted>(h).offset; });

  nb::class_<LostWorkModel, CostModelHandle>(
      m, "LostWork",
      "Lost work: GPU-seconds since the last checkpoint (whole devices, or the share in GPUs, "
      "times replicas times `seconds_since_checkpoint`), plus `floor` per victim so that a "
      "victim that just checkpointed is still not free to evict.")
      .def("__init__", [](LostWorkModel* h, double floor) {
        new (h) LostWorkModel{{cost::lost_work{floor}}};
      }, nb::kw_only(), nb::arg("floor") = 1.0)
      .def_prop_ro("floor", [](const CostModelHandle& h) { return held<cost::lost_work>(h).floor; });

  nb::class_<ReloadTimeModel, CostModelHandle>(
      m, "ReloadTime",
      "Model reload cost (Compass): seconds to load the victim's model back into GPU memory, "
      "`model_size_gib / bandwidth_gib_per_s` per replica, plus `floor` per victim.")
      .def("__init__", [](ReloadTimeModel* h, double bandwidth, double floor) {
        new (h) ReloadTimeModel{{cost::reload_time{bandwidth, floor}}};
      }, nb::kw_only(), nb::arg("bandwidth_gib_per_s") = 2.0, nb::arg("floor") = 1.0)
      .def_prop_ro("bandwidth_gib_per_s", [](const CostModelHandle& h) {
        return held<cost::reload_time>(h).bandwidth_gib_per_s;
      })
      .def_prop_ro("floor", [](const CostModelHandle& h) { return held<cost::reload_time>(h).floor; });

  nb::class_<KubernetesOrderModel, CostModelHandle>(
      m, "KubernetesOrder",
      "Kubernetes' DefaultPreemption order as an additive cost: each victim costs the weight of "
      "its priority's rank among `priorities`. By default (`base` 0) a mixed radix, so one "
      "victim of a rank costs more than every listed workload of lower ranks together: victim "
      "sets compare as Kubernetes' lowest-highest-priority criterion, ties by fewer victims at "
      "each priority from the top. With `base` >= 2 (whole): `base^rank` (the 0.4 encoding). "
      "ValueError on weights above 2^53. `KubernetesOrder.of(state)` lists every running "
      "workload's priority.")
      .def("__init__", [](KubernetesOrderModel* h, std::vector<std::int32_t> priorities, double base) {
        new (h) KubernetesOrderModel{{cost::kubernetes_order(std::move(priorities), base), base}};
      }, nb::arg("priorities"), nb::kw_only(), nb::arg("base") = 0.0)
      .def_static("of", [](const StateHandle& state, double base) {
        return new KubernetesOrderModel{{cost::kubernetes_order::of(state.allocation, base), base}};
      }, nb::arg("state"), nb::kw_only(), nb::arg("base") = 0.0, nb::rv_policy::take_ownership,
         "The model over the priorities of every running workload of `state`.");

  nb::class_<CallableModel, CostModelHandle>(
      m, "CallableCostModel", nb::type_slots(callable_model_slots),
      "A cost model written in Python: `evict(victim: Workload) -> float` and optionally "
      "`shrink(victim: Workload, dropped: int) -> float` (default: the eviction price). Each "
      "price is a call into Python under the GIL (the victim is passed as a copy), so it is "
      "far slower than a built-in model, threads solving with it take turns, and it declares "
      "no price bound (solvers read every candidate domain). Prices must be finite and >= 0 "
      "(ValueError naming the victim otherwise); an exception raised by the callable "
      "propagates out of the solve.")
      .def("__init__", [](CallableModel* h, nb::callable evict, std::optional<nb::callable> shrink) {
        new (h) CallableModel{{PythonCostModel(std::move(evict),
                                               shrink ? nb::object(*shrink) : nb::none())}};
      }, nb::arg("evict"), nb::arg("shrink") = nb::none())
      .def_prop_ro("evict_callable", [](const CostModelHandle& h) {
        return held<PythonCostModel>(h).evict_callable();
      })
      .def_prop_ro("shrink_callable", [](const CostModelHandle& h) {
        return held<PythonCostModel>(h).shrink_callable();
      });

  nb::class_<ShrinkElasticFirstModel, CostModelHandle>(
      m, "ShrinkElasticFirst",
      "Aryl's preference (capacity loaning): dropping an elastic worker costs `shrink_weight` "
      "per dropped replica, preempting a job costs `evict_weight` per replica it runs. With the "
      "default weights (1 and 10) shrinking is an order of magnitude cheaper per replica, so "
      "every solver drops elastic workers before it preempts anything, and among preemptions "
      "prefers small jobs. It declares no price bound. ValueError on a weight that is negative "
      "or not finite.")
      .def("__init__", [](ShrinkElasticFirstModel* h, double shrink_weight, double evict_weight) {
        capacity::shrink_elastic_first model;
        model.shrink_weight = checked_weight(shrink_weight, "shrink_elastic_first", "shrink_weight");
        model.evict_weight = checked_weight(evict_weight, "shrink_elastic_first", "evict_weight");
        new (h) ShrinkElasticFirstModel{{model}};
      }, nb::kw_only(), nb::arg("shrink_weight") = 1.0, nb::arg("evict_weight") = 10.0)
      .def_prop_ro("shrink_weight", [](const CostModelHandle& h) {
        return held<capacity::shrink_elastic_first>(h).shrink_weight;
      }, "price of one dropped elastic replica")
      .def_prop_ro("evict_weight", [](const CostModelHandle& h) {
        return held<capacity::shrink_elastic_first>(h).evict_weight;
      }, "price of each replica of a preempted job");

  nb::class_<model_cache::ModelCacheState>(
      m, "ModelCache",
      "The model cache of every GPU of a topology (capacity: each GPU's gpu_memory_mib), as "
      "CacheAwareReload prices it. Every mutating call validates first and changes nothing when "
      "it raises (ValueError naming the device and the model). Devices are ints.")
      .def("__init__", [](model_cache::ModelCacheState* c, std::shared_ptr<Topology> topology, double bandwidth) {
        new (c) model_cache::ModelCacheState(std::shared_ptr<const Topology>(std::move(topology)), bandwidth);
      }, nb::arg("topology"), nb::arg("load_bandwidth_mib_per_s") = 12288.0,
         "An empty cache over `topology`, loading models at `load_bandwidth_mib_per_s` (default 12 "
         "GiB/s, about a PCIe 4.0 x16 host-to-GPU copy). ValueError for a bandwidth that is not "
         "finite and > 0 or a schema without the device dimension gpu_memory_mib.")
      .def_prop_ro("load_bandwidth_mib_per_s", &model_cache::ModelCacheState::load_bandwidth_mib_per_s)
      .def("load_time", &model_cache::ModelCacheState::load_time, nb::arg("size_mib"),
           "Seconds to load `size_mib` into a GPU.")
      .def("workers", [](const model_cache::ModelCacheState& c) {
        std::vector<std::uint32_t> ids;
        for (DomainId d : c.workers()) ids.push_back(d.value);
        return ids;
      }, "All workers (GPU leaves), ascending id.")
      .def("capacity_mib", &model_cache::ModelCacheState::capacity_mib, nb::arg("device"))
      .def("used_mib", &model_cache::ModelCacheState::used_mib, nb::arg("device"))
      .def("free_mib", &model_cache::ModelCacheState::free_mib, nb::arg("device"))
      .def("is_cached", &model_cache::ModelCacheState::is_cached, nb::arg("device"), nb::arg("model_id"))
      .def("devices_caching", [](const model_cache::ModelCacheState& c, std::string_view model_id) {
        std::vector<std::uint32_t> ids;
        for (DomainId d : c.devices_caching(model_id)) ids.push_back(d.value);
        return ids;
      }, nb::arg("model_id"), "The devices that cache `model_id`, ascending.")
      .def("model_size", &model_cache::ModelCacheState::model_size, nb::arg("model_id"),
           "The size `model_id` is cached with (MiB), or None when it is cached nowhere.")
      .def("insert", [](model_cache::ModelCacheState& c, DomainId device, std::string model_id, Amount size_mib,
                        double now) { c.insert(device, model_cache::ModelRef{std::move(model_id), size_mib}, now); },
           nb::arg("device"), nb::arg("model_id"), nb::arg("size_mib"), nb::arg("now") = 0.0,
           "Caches `model_id` (`size_mib`) on `device`, last used at `now`. ValueError for an empty "
           "id, a size <= 0 or other than the model's size elsewhere, a model already cached "
           "there, or not enough free memory.")
      .def("touch", &model_cache::ModelCacheState::touch, nb::arg("device"), nb::arg("model_id"), nb::arg("now"),
           "Marks `model_id` on `device` as used at `now` (the later time is kept).")
      .def("erase", &model_cache::ModelCacheState::erase, nb::arg("device"), nb::arg("model_id"),
           "Drops `model_id` from `device`.");

  nb::class_<CacheAwareReloadModel, CostModelHandle>(
      m, "CacheAwareReload",
      "A drop-in for ReloadTime that knows the model cache: evicting a workload costs "
      "`cached_elsewhere_cost` when its model (`cost.model_id`) stays cached on some GPU it "
      "does not occupy, otherwise `cached_elsewhere_cost` plus replicas x load time of the "
      "model size (`cost.model_size_gib`, else the size it is cached with, else 0); a workload "
      "without a model id costs `cached_elsewhere_cost`. A shrink that leaves replicas of a "
      "model cached anywhere costs `cached_elsewhere_cost`, else it is priced as an eviction of "
      "the dropped replicas. It prices against copies of `cache` and `state` taken when it is "
      "made (so solves never race with changes to them): make a new one after either changes. "
      "ValueError when the two are not over the same topology object. Declares no price bound.")
      .def("__init__", [](CacheAwareReloadModel* h, const model_cache::ModelCacheState& cache,
                          const StateHandle& state, double cached_elsewhere_cost) {
        if (!std::isfinite(cached_elsewhere_cost) || cached_elsewhere_cost < 0.0) {
          throw std::invalid_argument("cache_aware_reload: cached_elsewhere_cost must be finite and >= 0, got " +
                                      std::to_string(cached_elsewhere_cost));
        }
        new (h) CacheAwareReloadModel{{CacheAwareReload(std::make_shared<const model_cache::ModelCacheState>(cache),
                                                        std::make_shared<const Allocation>(state.allocation),
                                                        cached_elsewhere_cost)}};
      }, nb::arg("cache"), nb::arg("state"), nb::kw_only(), nb::arg("cached_elsewhere_cost") = 0.1)
      .def_prop_ro("cached_elsewhere_cost", [](const CostModelHandle& h) {
        return held<CacheAwareReload>(h).cached_elsewhere_cost();
      }, "price of a victim whose model survives elsewhere (and of a model-less victim)");

  nb::class_<WeightedSumModel, CostModelHandle>(
      m, "WeightedSum", nb::type_slots(weighted_sum_slots),
      "`first_weight x first + second_weight x second`: combines any two cost models (built-in, "
      "CallableCostModel, or weighted sums themselves). The C++ `cost::weighted_sum`, with its "
      "declarations: a price floor when both parts declare one, index price bounds when either "
      "does. The parts are priced through one indirection each (a little slower than a C++ "
      "sum of concrete models; the plans are the same). ValueError on a weight that is "
      "negative or not finite.")
      .def("__init__", [](WeightedSumModel* h, const CostModelHandle& first, const CostModelHandle& second,
                          double first_weight, double second_weight) {
        checked_weight(first_weight, "weighted_sum", "first_weight");
        checked_weight(second_weight, "weighted_sum", "second_weight");
        new (h) WeightedSumModel{{weighted_sum_of(first.model, second.model, first_weight, second_weight)},
                                 nb::borrow(nb::find(&first)), nb::borrow(nb::find(&second))};
      }, nb::arg("first"), nb::arg("second"), nb::kw_only(), nb::arg("first_weight") = 1.0,
         nb::arg("second_weight") = 1.0)
      .def_prop_ro("first", [](const WeightedSumModel& h) -> nb::object {
        return h.first.is_valid() ? h.first : nb::none();
      }, "the first model (None once the garbage collector broke a cycle through it)")
      .def_prop_ro("second", [](const WeightedSumModel& h) -> nb::object {
        return h.second.is_valid() ? h.second : nb::none();
      }, "the second model (None once the garbage collector broke a cycle through it)")
      .def_prop_ro("first_weight", [](const CostModelHandle& h) { return sum_weights(h).first; })
      .def_prop_ro("second_weight", [](const CostModelHandle& h) { return sum_weights(h).second; });
}

}  // namespace topopreempt::python
