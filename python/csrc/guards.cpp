// ember.guards: the training guards (docs/guards.md) from Python — switches, settings and
// the hooks the Python layers and optimizers call (the C++ ones call them from C++).

#include <pybind11/pybind11.h>

#include "bind.h"
#include "ember/guards/guards.h"

namespace ember::python {

namespace {
guards::Guard guard_by_name(const std::string& name) {
  for (int i = 0; i < guards::kNumGuards; ++i) {
    const auto g = static_cast<guards::Guard>(i);
    if (name == guards::guard_name(g)) return g;
  }
  std::string known;
  for (int i = 0; i < guards::kNumGuards; ++i) {
    if (i) known += ", ";
    known += guards::guard_name(static_cast<guards::Guard>(i));
  }
  throw py::value_error("unknown guard '" + name + "'; the guards are " + known);
}
}  // namespace

void init_guards(py::module_& m) {
  py::module_ g = m.def_submodule("_guards", "the training guards (docs/guards.md)");
  g.def("names", []() {
    py::list out;
    for (int i = 0; i < guards::kNumGuards; ++i) out.append(guards::guard_name(static_cast<guards::Guard>(i)));
    return out;
  });
  g.def("set_enabled", [](const std::string& name, bool on) { guards::set_enabled(guard_by_name(name), on); },
        py::arg("guard"), py::arg("enabled"));
  g.def("is_enabled", [](const std::string& name) { return guards::is_enabled(guard_by_name(name)); }, py::arg("guard"));
  g.def("set_all_enabled", &guards::set_all_enabled, py::arg("enabled"));
  g.def("reset", &guards::reset);
  g.def("optimizer_steps", &guards::optimizer_steps);
  g.def("saved_tensor_bytes", []() { return guards::saved_tensor_stats().bytes; });
  // Hooks for the Python side: an optimizer's step (counts steps, checks graph retention),
  // a train-mode Dropout/BatchNorm called under no-grad.
  g.def("on_optimizer_step", [](const std::string& name) { guards::detail::on_optimizer_step(name.c_str()); });
  g.def("eval_mode_warning", [](const std::string& module) {
    if (guards::is_enabled(guards::Guard::EvalMode)) guards::detail::eval_mode_warning(module.c_str());
  });
}

}  // namespace ember::python
