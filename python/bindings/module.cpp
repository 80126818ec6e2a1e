// SPDX-License-Identifier: MIT
// The extension module topopreempt._core; the package's __init__.py re-exports it.

#include <stdexcept>

#include "common.hpp"
#include "topopreempt/version.hpp"

namespace nb = nanobind;

NB_MODULE(_core, m) {
  namespace tp = topopreempt::python;
  m.doc() = "topopreempt: topology-aware preemption planning for GPU clusters (C++ core).";
  // A name or id that is not there is bad input, as an invalid amount is: ValueError, with the
  // library's message (std::out_of_range would otherwise become IndexError).
  nb::register_exception_translator([](const std::exception_ptr& error, void*) {
    try {
      std::rethrow_exception(error);
    } catch (const std::out_of_range& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  tp::bind_model(m);
  tp::bind_cost_models(m);
  tp::bind_plan(m);
  tp::bind_exact_solvers(m);
  tp::bind_baselines(m);
  tp::bind_snapshots(m);
  tp::bind_simulator(m);
  m.attr("__version__") = nb::str(topopreempt::version_string.data(), topopreempt::version_string.size());
}
