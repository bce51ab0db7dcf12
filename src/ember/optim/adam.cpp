#include "ember/optim/adam.h"

#include "ember/core/check.h"
#include "ember/kernels/cpu/optim.h"

namespace ember::optim {
namespace {

template <typename O>
void adam_to_value(const O& o, Value& g) {
  g["lr"] = o.lr();
  g["betas"] = Value(std::vector<double>{std::get<0>(o.betas()), std::get<1>(o.betas())});
  g["eps"] = o.eps();
  g["weight_decay"] = o.weight_decay();
  g["amsgrad"] = o.amsgrad();
  g["maximize"] = o.maximize();
}

template <typename O>
void adam_from_value(O& o, const Value& g) {
  o.lr(g.at("lr").to_double());
  const std::vector<double> b = g.at("betas").to_double_list();
  EMBER_CHECK(b.size() == 2, "[Adam] load_state_dict: 'betas' must hold 2 values, got ", b.size());
  o.betas(std::make_tuple(b[0], b[1]));
  o.eps(g.at("eps").to_double());
  o.weight_decay(g.at("weight_decay").to_double());
  o.amsgrad(g.at("amsgrad").to_bool());
  if (g.contains("maximize")) o.maximize(g.at("maximize").to_bool());
}

template <typename O>
void adam_validate(const O& o, const char* op) {
  const auto [beta1, beta2] = o.betas();
  EMBER_CHECK(o.lr() >= 0, "[", op, "] Invalid learning rate: ", o.lr(), " (lr must be >= 0)");
  EMBER_CHECK(o.eps() >= 0, "[", op, "] Invalid epsilon value: ", o.eps(), " (eps must be >= 0)");
  EMBER_CHECK(beta1 >= 0 && beta1 < 1, "[", op, "] Invalid beta parameter at index 0: ", beta1,
              " (betas must be in [0, 1))");
  EMBER_CHECK(beta2 >= 0 && beta2 < 1, "[", op, "] Invalid beta parameter at index 1: ", beta2,
              " (betas must be in [0, 1))");
  EMBER_CHECK(o.weight_decay() >= 0, "[", op, "] Invalid weight_decay value: ", o.weight_decay(),
              " (weight_decay must be >= 0)");
}

template <typename O>
void adam_update(Optimizer& opt, OptimizerParamGroup& group, bool decoupled, const char* op) {
  const auto& o = group.options_as<O>();
  for (const Tensor& p : group.params()) {
    if (!p.grad().defined()) continue;
    ParamState& st = opt.state(p);
    if (!st.has_step) {
      st.has_step = true;
      st.step = 0;
      st["exp_avg"] = detail::zeros_state(p);
      st["exp_avg_sq"] = detail::zeros_state(p);
    }
    Tensor max_sq;
    if (o.amsgrad()) {
      Tensor& slot = st["max_exp_avg_sq"];
      if (!slot.defined()) slot = detail::zeros_state(p);
      max_sq = slot;
    }
    st.step += 1;
    const kernels::cpu::AdamStep s{o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.eps(),
                                   o.weight_decay(), st.step, o.amsgrad(), o.maximize(), decoupled};
    const Tensor m = st["exp_avg"], v = st["exp_avg_sq"];
    detail::apply_contiguous(op, p, [&](const Tensor& pc, const Tensor& g) {
      kernels::cpu::adam_step(pc, g, m, v, max_sq, s);
    });
  }
}

}  // namespace

void AdamOptions::to_value(Value& g) const { adam_to_value(*this, g); }
void AdamOptions::from_value(const Value& g) { adam_from_value(*this, g); }
void AdamOptions::validate(const char* op) const { adam_validate(*this, op); }
void AdamWOptions::to_value(Value& g) const { adam_to_value(*this, g); }
void AdamWOptions::from_value(const Value& g) { adam_from_value(*this, g); }
void AdamWOptions::validate(const char* op) const { adam_validate(*this, op); }

void Adam::update(OptimizerParamGroup& group) { adam_update<AdamOptions>(*this, group, false, "Adam"); }
void AdamW::update(OptimizerParamGroup& group) { adam_update<AdamWOptions>(*this, group, true, "AdamW"); }

}  // namespace ember::optim
