// Autograd from Python: grad modes, backward/grad, graph nodes (grad_fn), anomaly mode,
// gradcheck, checkpointing, and autograd.Function subclasses written in Python (their
// backward runs inside ember's engine through autograd::CustomNode).

#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bind.h"

namespace ember::python {

namespace {

using autograd::AutogradContext;
using autograd::CustomNode;
using autograd::Node;
using autograd::variable_list;

variable_list tensor_seq(py::handle h, const char* op, const char* arg) {
  variable_list out;
  if (h.is_none()) return out;
  if (const Tensor* t = as_tensor(h)) {
    out.push_back(*t);
    return out;
  }
  for (py::handle item : h) {
    if (item.is_none()) {
      out.emplace_back();
      continue;
    }
    const Tensor* t = as_tensor(item);
    if (!t) throw py::type_error(std::string(op) + "(): '" + arg + "' must be a Tensor or a sequence of Tensors, found " +
                                 Py_TYPE(item.ptr())->tp_name);
    out.push_back(*t);
  }
  return out;
}

// Function.apply(*args): runs cls.forward(ctx, *args) with grad off and, when a graph is
// recorded, gives the outputs a CustomNode whose backward calls cls.backward(ctx, *grads).
py::object function_apply(py::object cls, py::args args) {
  variable_list inputs;
  std::vector<bool> is_tensor;
  for (py::handle a : args) {
    if (const Tensor* t = as_tensor(a)) {
      inputs.push_back(*t);
      is_tensor.push_back(true);
    } else {
      is_tensor.push_back(false);
    }
  }
  py::object ctx = py::module_::import("ember.autograd.function").attr("FunctionCtx")();
  auto ctx_ref = std::make_shared<PyRef>(ctx);
  auto cls_ref = std::make_shared<PyRef>(cls);
  const size_t nargs = args.size();
  const std::string name = py::str(cls.attr("__name__")).cast<std::string>() + "Backward";
  std::shared_ptr<CustomNode> node = CustomNode::make_named(
      name,
      [ctx_ref, cls_ref, nargs, name](AutogradContext*, variable_list grads) -> variable_list {
        py::gil_scoped_acquire gil;
        py::tuple gargs(grads.size() + 1);
        gargs[0] = ctx_ref->obj;
        for (size_t i = 0; i < grads.size(); ++i)
          gargs[i + 1] = grads[i].defined() ? wrap(grads[i]) : py::none();
        py::object r = cls_ref->obj.attr("backward")(*gargs);
        variable_list out;
        if (PyTuple_Check(r.ptr()) || PyList_Check(r.ptr())) {
          for (py::handle h : r) out.push_back(h.is_none() ? Tensor() : h.cast<Tensor>());
        } else {
          out.push_back(r.is_none() ? Tensor() : r.cast<Tensor>());
        }
        // Extra trailing Nones are allowed, as in torch.
        while (out.size() > nargs && !out.back().defined()) out.pop_back();
        if (out.size() != nargs)
          throw Error(name, "backward returned " + std::to_string(out.size()) + " gradients, but forward took " +
                                std::to_string(nargs) + " arguments; return one gradient (or None) per argument");
        return out;
      },
      inputs, is_tensor);
  AutogradContext local;
  AutogradContext* c = node ? &node->ctx() : &local;
  ctx.attr("_ctx") = py::cast(c, py::return_value_policy::reference);
  py::list needs;
  size_t ti = 0;
  for (size_t i = 0; i < nargs; ++i) {
    needs.append(py::bool_(is_tensor[i] && node && c->needs_input_grad(ti)));
    if (is_tensor[i]) ++ti;
  }
  ctx.attr("needs_input_grad") = py::tuple(needs);
  py::object result;
  {
    ember::AutoGradMode no_grad(false);
    py::tuple fargs(nargs + 1);
    fargs[0] = ctx;
    for (size_t i = 0; i < nargs; ++i) fargs[i + 1] = args[i];
    result = cls.attr("forward")(*fargs);
  }
  if (!node) {
    ctx.attr("_ctx") = py::none();  // `local` dies here
    return result;
  }
  const bool single = as_tensor(result) != nullptr;
  variable_list outs;
  if (single) outs.push_back(result.cast<Tensor>());
  else
    for (py::handle h : result) {
      const Tensor* t = as_tensor(h);
      outs.push_back(t ? *t : Tensor());
    }
  node->finish(inputs, outs);
  if (single) return wrap(outs[0]);
  py::tuple out(outs.size());
  size_t k = 0;
  for (py::handle h : result) {
    out[k] = outs[k].defined() ? wrap(outs[k]) : py::reinterpret_borrow<py::object>(h);
    ++k;
  }
  return out;
}

// ember.inference_mode as a context: the C++ guard lives between __enter__ and __exit__.
struct InferenceModeCtx {
  bool enabled;
  std::unique_ptr<InferenceMode> guard;
};

}  // namespace

void init_autograd(py::module_& m) {
  m.def("is_grad_enabled", &is_grad_enabled);
  m.def("_set_grad_enabled", &set_grad_enabled, py::arg("mode"));
  m.def("is_inference_mode_enabled", &is_inference_mode_enabled);
  py::class_<InferenceModeCtx>(m, "_InferenceMode")
      .def(py::init([](bool enabled) { return InferenceModeCtx{enabled, nullptr}; }), py::arg("mode") = true)
      .def("__enter__", [](InferenceModeCtx& c) { c.guard = std::make_unique<InferenceMode>(c.enabled); })
      .def("__exit__", [](InferenceModeCtx& c, py::args) { c.guard.reset(); });
  m.def("_set_detect_anomaly", &autograd::set_detect_anomaly, py::arg("mode"), py::arg("check_nan") = true);
  m.def("is_anomaly_enabled", &autograd::AnomalyMode::is_enabled);

  py::class_<Node, std::shared_ptr<Node>>(m, "Node")
      .def("name", &Node::name)
      .def("__repr__", [](const Node& n) {
            std::ostringstream os;
            os << "<" << n.name() << " object at " << static_cast<const void*>(&n) << ">";
            return os.str();
          })
      .def_property_readonly("next_functions", [](const Node& n) {
            auto nf = n.next_functions();
            py::tuple out(nf.size());
            for (size_t i = 0; i < nf.size(); ++i)
              out[i] = py::make_tuple(nf[i].first ? py::cast(nf[i].first) : py::none(), nf[i].second);
            return out;
          })
      .def_property_readonly("variable", [](const Node& n) -> py::object {
            if (auto* acc = dynamic_cast<const autograd::AccumulateGrad*>(&n)) return wrap(acc->variable());
            throw py::attribute_error("'" + n.name() + "' object has no attribute 'variable'");
          })
      .def("register_hook", [](Node&, py::function) {
            throw py::value_error("grad_fn.register_hook is not supported; use Tensor.register_hook on the output");
          });

  py::module_ ag = m.def_submodule("_autograd", "autograd's C++ part");
  ag.def("backward", [](py::handle tensors, py::handle grad_tensors, std::optional<bool> retain_graph, bool create_graph,
                        py::handle inputs) {
        const variable_list t = tensor_seq(tensors, "backward", "tensors");
        const variable_list g = tensor_seq(grad_tensors, "backward", "grad_tensors");
        const variable_list in = tensor_seq(inputs, "backward", "inputs");
        without_gil([&] {
          autograd::backward(t, g, retain_graph, create_graph, in);
          return 0;
        });
      }, py::arg("tensors"), py::arg("grad_tensors") = py::none(), py::arg("retain_graph") = py::none(),
      py::arg("create_graph") = false, py::arg("inputs") = py::none());
  ag.def("grad", [](py::handle outputs, py::handle inputs, py::handle grad_outputs, std::optional<bool> retain_graph,
                    bool create_graph, bool allow_unused) {
        const variable_list outs = tensor_seq(outputs, "grad", "outputs");
        const variable_list ins = tensor_seq(inputs, "grad", "inputs");
        const variable_list gos = tensor_seq(grad_outputs, "grad", "grad_outputs");
        variable_list r = without_gil([&] { return autograd::grad(outs, ins, gos, retain_graph, create_graph, allow_unused); });
        py::tuple out(r.size());
        for (size_t i = 0; i < r.size(); ++i) out[i] = r[i].defined() ? wrap(r[i]) : py::none();
        return out;
      }, py::arg("outputs"), py::arg("inputs"), py::arg("grad_outputs") = py::none(), py::arg("retain_graph") = py::none(),
      py::arg("create_graph") = false, py::arg("allow_unused") = false);
  ag.def("function_apply", &function_apply);
  ag.def("gradcheck", [](py::function fn, py::handle inputs, double eps, double atol, double rtol, bool raise, bool second) {
        autograd::GradcheckOptions o;
        o.eps = eps;
        o.atol = atol;
        o.rtol = rtol;
        o.raise = raise;
        auto ref = std::make_shared<PyRef>(fn);
        auto f = [ref](const variable_list& in) -> variable_list {
          py::gil_scoped_acquire gil;
          py::tuple args(in.size());
          for (size_t i = 0; i < in.size(); ++i) args[i] = wrap(in[i]);
          py::object r = ref->obj(*args);
          return tensor_seq(r, "gradcheck", "outputs");
        };
        const variable_list in = tensor_seq(inputs, "gradcheck", "inputs");
        return second ? autograd::gradgradcheck(f, in, o) : autograd::gradcheck(f, in, o);
      }, py::arg("func"), py::arg("inputs"), py::arg("eps"), py::arg("atol"), py::arg("rtol"), py::arg("raise_exception"),
      py::arg("second_order"));
  ag.def("checkpoint", [](py::function fn, py::args args, bool preserve_rng_state) {
        auto ref = std::make_shared<PyRef>(fn);
        auto f = [ref](const variable_list& in) -> variable_list {
          py::gil_scoped_acquire gil;  // backward reruns it with the GIL released
          py::tuple a(in.size());
          for (size_t i = 0; i < in.size(); ++i) a[i] = wrap(in[i]);
          py::object r = ref->obj(*a);
          return tensor_seq(r, "checkpoint", "outputs");
        };
        variable_list r = autograd::checkpoint(f, tensor_seq(args, "checkpoint", "inputs"), preserve_rng_state);
        if (r.size() == 1) return wrap(r[0]);
        py::tuple out(r.size());
        for (size_t i = 0; i < r.size(); ++i) out[i] = wrap(r[i]);
        return py::object(std::move(out));
      }, py::arg("function"), py::kw_only(), py::arg("preserve_rng_state") = true);

  py::class_<AutogradContext>(ag, "_Context")
      .def("save_for_backward", [](AutogradContext& c, py::args ts) {
            variable_list v;
            for (py::handle h : ts) v.push_back(h.is_none() ? Tensor() : h.cast<Tensor>());
            c.save_for_backward(std::move(v));
          })
      .def("saved_tensors", [](const AutogradContext& c) {
            variable_list v = c.get_saved_variables();
            py::tuple out(v.size());
            for (size_t i = 0; i < v.size(); ++i) out[i] = v[i].defined() ? wrap(v[i]) : py::none();
            return out;
          })
      .def("mark_dirty", [](AutogradContext& c, py::args ts) { c.mark_dirty(tensor_seq(ts, "mark_dirty", "args")); })
      .def("mark_non_differentiable", [](AutogradContext& c, py::args ts) {
            c.mark_non_differentiable(tensor_seq(ts, "mark_non_differentiable", "args"));
          })
      .def("set_materialize_grads", &AutogradContext::set_materialize_grads, py::arg("value"));
}

}  // namespace ember::python
