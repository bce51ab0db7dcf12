#include "ember/optim/rmsprop.h"

#include "ember/core/check.h"
#include "ember/kernels/cpu/optim.h"

namespace ember::optim {

void RMSpropOptions::to_value(Value& g) const {
  g["lr"] = lr_;
  g["momentum"] = momentum_;
  g["alpha"] = alpha_;
  g["eps"] = eps_;
  g["centered"] = centered_;
  g["weight_decay"] = weight_decay_;
  g["maximize"] = maximize_;
}

void RMSpropOptions::from_value(const Value& g) {
  lr_ = g.at("lr").to_double();
  momentum_ = g.at("momentum").to_double();
  alpha_ = g.at("alpha").to_double();
  eps_ = g.at("eps").to_double();
  centered_ = g.at("centered").to_bool();
  weight_decay_ = g.at("weight_decay").to_double();
  if (g.contains("maximize")) maximize_ = g.at("maximize").to_bool();
}

void RMSpropOptions::validate(const char* op) const {
  EMBER_CHECK(lr_ >= 0, "[", op, "] Invalid learning rate: ", lr_, " (lr must be >= 0)");
  EMBER_CHECK(eps_ >= 0, "[", op, "] Invalid epsilon value: ", eps_, " (eps must be >= 0)");
  EMBER_CHECK(momentum_ >= 0, "[", op, "] Invalid momentum value: ", momentum_, " (momentum must be >= 0)");
  EMBER_CHECK(weight_decay_ >= 0, "[", op, "] Invalid weight_decay value: ", weight_decay_,
              " (weight_decay must be >= 0)");
  EMBER_CHECK(alpha_ >= 0, "[", op, "] Invalid alpha value: ", alpha_, " (alpha must be >= 0)");
}

void RMSprop::update(OptimizerParamGroup& group) {
  const auto& o = group.options_as<RMSpropOptions>();
  for (const Tensor& p : group.params()) {
    if (!p.grad().defined()) continue;
    ParamState& st = state(p);
    if (!st.has_step) {
      st.has_step = true;
      st.step = 0;
      st["square_avg"] = detail::zeros_state(p);
    }
    Tensor buf, grad_avg;
    if (o.momentum() > 0) {
      Tensor& slot = st["momentum_buffer"];
      if (!slot.defined()) slot = detail::zeros_state(p);
      buf = slot;
    }
    if (o.centered()) {
      Tensor& slot = st["grad_avg"];
      if (!slot.defined()) slot = detail::zeros_state(p);
      grad_avg = slot;
    }
    st.step += 1;
    const kernels::cpu::RmspropStep s{o.lr(), o.alpha(), o.eps(), o.weight_decay(), o.momentum(), o.centered(),
                                      o.maximize()};
    const Tensor sq = st["square_avg"];
    detail::apply_contiguous("RMSprop", p, [&](const Tensor& pc, const Tensor& g) {
      kernels::cpu::rmsprop_step(pc, g, sq, grad_avg, buf, s);
    });
  }
}

}  // namespace ember::optim
