// The optimizers' fused update loops (kernels/cpu/optim.h), one call per parameter. The
// optimizer classes themselves are Python (ember/optim), holding torch's param_groups and
// per-parameter state dicts, so state_dict() has torch's layout and Python subclasses work.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bind.h"
#include "ember/kernels/cpu/optim.h"

namespace ember::python {

namespace {
Tensor opt_tensor(py::handle h) { return h.is_none() ? Tensor() : h.cast<Tensor>(); }
}  // namespace

void init_optim(py::module_& m) {
  py::module_ o = m.def_submodule("_optim", "fused optimizer updates");
  o.def("adam_step", [](const Tensor& p, const Tensor& exp_avg, const Tensor& exp_avg_sq, py::handle max_sq, int64_t step,
                        double lr, double beta1, double beta2, double eps, double weight_decay, bool amsgrad,
                        bool maximize, bool decoupled) {
        const kernels::cpu::AdamStep s{lr, beta1, beta2, eps, weight_decay, step, amsgrad, maximize, decoupled};
        const Tensor ms = opt_tensor(max_sq);
        py::gil_scoped_release release;
        optim::detail::apply_contiguous(decoupled ? "AdamW" : "Adam", p, [&](const Tensor& pc, const Tensor& g) {
          kernels::cpu::adam_step(pc, g, exp_avg, exp_avg_sq, ms, s);
        });
      }, py::arg("param"), py::arg("exp_avg"), py::arg("exp_avg_sq"), py::arg("max_exp_avg_sq"), py::arg("step"),
      py::arg("lr"), py::arg("beta1"), py::arg("beta2"), py::arg("eps"), py::arg("weight_decay"), py::arg("amsgrad"),
      py::arg("maximize"), py::arg("decoupled"));
  o.def("sgd_step", [](const Tensor& p, py::handle buf, bool init_buffer, double lr, double momentum, double dampening,
                       double weight_decay, bool nesterov, bool maximize) {
        const kernels::cpu::SgdStep s{lr, momentum, dampening, weight_decay, nesterov, maximize, init_buffer};
        const Tensor b = opt_tensor(buf);
        optim::detail::apply_contiguous("SGD", p, [&](const Tensor& pc, const Tensor& g) { kernels::cpu::sgd_step(pc, g, b, s); });
      }, py::arg("param"), py::arg("momentum_buffer"), py::arg("init_buffer"), py::arg("lr"), py::arg("momentum"),
      py::arg("dampening"), py::arg("weight_decay"), py::arg("nesterov"), py::arg("maximize"));
  o.def("rmsprop_step", [](const Tensor& p, const Tensor& square_avg, py::handle grad_avg, py::handle buf, double lr,
                           double alpha, double eps, double weight_decay, double momentum, bool centered, bool maximize) {
        const kernels::cpu::RmspropStep s{lr, alpha, eps, weight_decay, momentum, centered, maximize};
        const Tensor ga = opt_tensor(grad_avg), b = opt_tensor(buf);
        optim::detail::apply_contiguous("RMSprop", p, [&](const Tensor& pc, const Tensor& g) {
          kernels::cpu::rmsprop_step(pc, g, square_avg, ga, b, s);
        });
      }, py::arg("param"), py::arg("square_avg"), py::arg("grad_avg"), py::arg("momentum_buffer"), py::arg("lr"),
      py::arg("alpha"), py::arg("eps"), py::arg("weight_decay"), py::arg("momentum"), py::arg("centered"),
      py::arg("maximize"));
  o.def("clip_grad_norm_", [](py::handle params, double max_norm, double norm_type, bool error_if_nonfinite) {
        std::vector<Tensor> ps;
        for (py::handle h : params) ps.push_back(h.cast<Tensor>());
        return scalar_tensor(nn::utils::clip_grad_norm_(ps, max_norm, norm_type, error_if_nonfinite));
      }, py::arg("parameters"), py::arg("max_norm"), py::arg("norm_type") = 2.0, py::arg("error_if_nonfinite") = false);
  o.def("clip_grad_value_", [](py::handle params, double clip_value) {
        std::vector<Tensor> ps;
        for (py::handle h : params) ps.push_back(h.cast<Tensor>());
        nn::utils::clip_grad_value_(ps, clip_value);
      }, py::arg("parameters"), py::arg("clip_value"));
}

}  // namespace ember::python
