#include "ember/optim/sgd.h"

#include "ember/core/check.h"
#include "ember/kernels/cpu/optim.h"

namespace ember::optim {

void SGDOptions::to_value(Value& g) const {
  g["lr"] = lr_;
  g["momentum"] = momentum_;
  g["dampening"] = dampening_;
  g["weight_decay"] = weight_decay_;
  g["nesterov"] = nesterov_;
  g["maximize"] = maximize_;
}

void SGDOptions::from_value(const Value& g) {
  lr_ = g.at("lr").to_double();
  momentum_ = g.at("momentum").to_double();
  dampening_ = g.at("dampening").to_double();
  weight_decay_ = g.at("weight_decay").to_double();
  nesterov_ = g.at("nesterov").to_bool();
  if (g.contains("maximize")) maximize_ = g.at("maximize").to_bool();
}

void SGDOptions::validate(const char* op) const {
  EMBER_CHECK(lr_ >= 0, "[", op, "] Invalid learning rate: ", lr_, " (lr must be >= 0)");
  EMBER_CHECK(momentum_ >= 0, "[", op, "] Invalid momentum value: ", momentum_, " (momentum must be >= 0)");
  EMBER_CHECK(weight_decay_ >= 0, "[", op, "] Invalid weight_decay value: ", weight_decay_,
              " (weight_decay must be >= 0)");
  EMBER_CHECK(!nesterov_ || (momentum_ > 0 && dampening_ == 0), "[", op,
              "] Nesterov momentum requires a momentum and zero dampening (momentum=", momentum_,
              ", dampening=", dampening_, ")");
}

void SGD::update(OptimizerParamGroup& group) {
  const auto& o = group.options_as<SGDOptions>();
  for (const Tensor& p : group.params()) {
    if (!p.grad().defined()) continue;
    kernels::cpu::SgdStep s{o.lr(), o.momentum(), o.dampening(), o.weight_decay(), o.nesterov(), o.maximize(), false};
    Tensor buf;
    if (o.momentum() != 0) {
      Tensor& slot = state(p)["momentum_buffer"];
      if (!slot.defined()) {
        slot = detail::zeros_state(p);
        s.init_buffer = true;
      }
      buf = slot;
    }
    detail::apply_contiguous("SGD", p, [&](const Tensor& pc, const Tensor& g) { kernels::cpu::sgd_step(pc, g, buf, s); });
  }
}

}  // namespace ember::optim
