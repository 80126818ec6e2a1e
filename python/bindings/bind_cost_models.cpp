// SPDX-License-Identifier: MIT
// The cost models: each built-in one with its parameters, and a cost model written in Python.

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>

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

struct VictimCountModel : CostModelHandle {};
struct PriorityWeightedModel : CostModelHandle {};
struct LostWorkModel : CostModelHandle {};
struct ReloadTimeModel : CostModelHandle {};
struct KubernetesOrderModel : CostModelHandle {};
struct CallableModel : CostModelHandle {};

template <class Model>
const Model& held(const CostModelHandle& handle) {
  return std::get<Model>(handle.model);
}

// A CallableCostModel refers to Python functions, which refer to their module's globals, which
// may refer to the model: a cycle the garbage collector must see through (nanobind's pattern,
// docs "refleaks"), or the model and everything its functions' globals hold would never be freed.
int callable_model_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  const auto* model = std::get_if<PythonCostModel>(&nb::inst_ptr<CallableModel>(self)->model);
  if (model != nullptr && model->sole_owner()) {
    Py_VISIT(model->evict_callable().ptr());
    Py_VISIT(model->shrink_callable().ptr());
  }
  return 0;
}

int callable_model_clear(PyObject* self) {
  auto* model = std::get_if<PythonCostModel>(&nb::inst_ptr<CallableModel>(self)->model);
  if (model != nullptr && model->sole_owner()) model->clear();
  return 0;
}

PyType_Slot callable_model_slots[] = {
    {Py_tp_traverse, reinterpret_cast<void*>(callable_model_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(callable_model_clear)},
    {0, nullptr}};

}  // namespace

void bind_cost_models(nb::module_& m) {
  nb::class_<CostModelHandle>(
      m, "CostModel",
      "What evicting or shrinking one victim costs. Costs are additive over victims, "
      "non-negative and finite; solvers minimise their sum. Use a subclass: VictimCount, "
      "PriorityWeighted, LostWork, ReloadTime, KubernetesOrder or CallableCostModel.")
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
}

}  // namespace topopreempt::python
