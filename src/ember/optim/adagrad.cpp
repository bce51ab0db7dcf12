#include "ember/optim/adagrad.h"

#include "ember/core/check.h"
#include "ember/kernels/cpu/optim.h"
#include "ember/ops/creation.h"

namespace ember::optim {

void AdagradOptions::to_value(Value& g) const {
  g["lr"] = lr_;
  g["lr_decay"] = lr_decay_;
  g["weight_decay"] = weight_decay_;
  g["initial_accumulator_value"] = initial_accumulator_value_;
  g["eps"] = eps_;
  g["maximize"] = maximize_;
}

void AdagradOptions::from_value(const Value& g) {
  lr_ = g.at("lr").to_double();
  lr_decay_ = g.at("lr_decay").to_double();
  weight_decay_ = g.at("weight_decay").to_double();
  initial_accumulator_value_ = g.at("initial_accumulator_value").to_double();
  eps_ = g.at("eps").to_double();
  if (g.contains("maximize")) maximize_ = g.at("maximize").to_bool();
}

void AdagradOptions::validate(const char* op) const {
  EMBER_CHECK(lr_ >= 0, "[", op, "] Invalid learning rate: ", lr_, " (lr must be >= 0)");
  EMBER_CHECK(lr_decay_ >= 0, "[", op, "] Invalid lr_decay value: ", lr_decay_, " (lr_decay must be >= 0)");
  EMBER_CHECK(weight_decay_ >= 0, "[", op, "] Invalid weight_decay value: ", weight_decay_,
              " (weight_decay must be >= 0)");
  EMBER_CHECK(initial_accumulator_value_ >= 0, "[", op, "] Invalid initial_accumulator_value value: ",
              initial_accumulator_value_, " (initial_accumulator_value must be >= 0)");
  EMBER_CHECK(eps_ >= 0, "[", op, "] Invalid epsilon value: ", eps_, " (eps must be >= 0)");
}

void Adagrad::update(OptimizerParamGroup& group) {
  const auto& o = group.options_as<AdagradOptions>();
  for (const Tensor& p : group.params()) {
    if (!p.grad().defined()) continue;
    ParamState& st = state(p);
    if (!st.has_step) {
      st.has_step = true;
      st.step = 0;
      st["sum"] = full(p.sizes(), o.initial_accumulator_value(), p.options());
    }
    st.step += 1;
    const double clr = o.lr() / (1 + static_cast<double>(st.step - 1) * o.lr_decay());
    const kernels::cpu::AdagradStep s{clr, o.eps(), o.weight_decay(), o.maximize()};
    const Tensor sum = st["sum"];
    detail::apply_contiguous("Adagrad", p, [&](const Tensor& pc, const Tensor& g) {
      kernels::cpu::adagrad_step(pc, g, sum, s);
    });
  }
}

}  // namespace ember::optim
