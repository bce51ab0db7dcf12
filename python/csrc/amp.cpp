// ember.autocast from Python: the thread-local autocast state (docs/amp.md). The context
// manager in python/ember/amp.py holds one _AutocastGuard per `with` block; entering
// constructs the C++ guard, leaving destroys it, so nesting and the weight cache behave
// as in C++.

#include <pybind11/pybind11.h>

#include <memory>

#include "bind.h"
#include "ember/amp/autocast.h"

namespace ember::python {

namespace {
struct PyAutocastGuard {
  DType dtype;
  bool enabled;
  bool cache_enabled;
  std::unique_ptr<amp::AutocastGuard> guard;
};
}  // namespace

void init_amp(py::module_& m) {
  py::module_ a = m.def_submodule("_amp", "autocast state (docs/amp.md)");
  py::class_<PyAutocastGuard>(a, "_AutocastGuard")
      .def(py::init([](DType dtype, bool enabled, bool cache_enabled) {
             return PyAutocastGuard{dtype, enabled, cache_enabled, nullptr};
           }),
           py::arg("dtype"), py::arg("enabled"), py::arg("cache_enabled"))
      .def("enter",
           [](PyAutocastGuard& g) {
             if (g.guard) throw py::value_error("[autocast] this autocast object is already active; nest a new one");
             g.guard = std::make_unique<amp::AutocastGuard>(g.dtype, g.enabled, g.cache_enabled);
           })
      .def("exit", [](PyAutocastGuard& g) { g.guard.reset(); });
  a.def("is_autocast_enabled", &amp::is_autocast_enabled);
  a.def("get_autocast_dtype", &amp::get_autocast_dtype);
  a.def("clear_autocast_cache", &amp::clear_autocast_cache);
  a.def("low_precision_gemm_path", &amp::low_precision_gemm_path, py::arg("dtype"));
}

}  // namespace ember::python
