#include "ember/optim/optimizer.h"

#include "ember/autograd/zero_grad_default.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <sstream>
#include <unordered_set>
#include <vector>

#include "ember/autograd/autograd_meta.h"
#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/core/warning.h"
#include "ember/guards/guards.h"
#include "ember/ops/creation.h"

namespace ember::optim {

void OptimizerOptions::to_value(Value& group) const { group["lr"] = get_lr(); }

void OptimizerOptions::from_value(const Value& group) {
  if (group.contains("lr")) set_lr(group.at("lr").to_double());
}

void OptimizerOptions::validate(const char* op) const {
  EMBER_CHECK(get_lr() >= 0, "[", op, "] Invalid learning rate: ", get_lr(), " (lr must be >= 0)");
}

OptimizerParamGroup::OptimizerParamGroup(const OptimizerParamGroup& other)
    : params_(other.params_), options_(other.options_ ? other.options_->clone() : nullptr),
      extras_(other.extras_) {}

OptimizerParamGroup& OptimizerParamGroup::operator=(const OptimizerParamGroup& other) {
  if (this != &other) {
    params_ = other.params_;
    options_ = other.options_ ? other.options_->clone() : nullptr;
    extras_ = other.extras_;
  }
  return *this;
}

OptimizerOptions& OptimizerParamGroup::options() {
  EMBER_CHECK(options_, "[OptimizerParamGroup] the group has no options (add it to an optimizer first)");
  return *options_;
}

const OptimizerOptions& OptimizerParamGroup::options() const {
  EMBER_CHECK(options_, "[OptimizerParamGroup] the group has no options (add it to an optimizer first)");
  return *options_;
}

double OptimizerParamGroup::get(const std::string& key) const {
  const double* v = extras_.find(key);
  EMBER_CHECK(v, "[OptimizerParamGroup] the group has no entry '", key, "'");
  return *v;
}

Tensor& ParamState::operator[](const std::string& name) {
  if (Tensor* t = tensors.find(name)) return *t;
  return tensors.insert(name, Tensor());
}

namespace {
// The live optimizers, for detail::live_optimizer_memory.
std::mutex g_live_mu;
// Never destroyed: an optimizer that outlives static destruction (a global, or one freed
// late at exit) must still find it.
std::vector<const Optimizer*>& live_optimizers() {
  static auto* live = new std::vector<const Optimizer*>;
  return *live;
}
}  // namespace

Optimizer::Optimizer(std::vector<OptimizerParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults,
                     std::string name)
    : defaults_(std::move(defaults)), name_(std::move(name)) {
  EMBER_CHECK(defaults_, "[", name_, "] no default options given");
  defaults_->validate(name_.c_str());
  for (const OptimizerParamGroup& g : groups) add_param_group(g);
  std::lock_guard<std::mutex> lock(g_live_mu);
  live_optimizers().push_back(this);
}

Optimizer::~Optimizer() {
  std::lock_guard<std::mutex> lock(g_live_mu);
  auto& live = live_optimizers();
  live.erase(std::remove(live.begin(), live.end(), this), live.end());
}

void Optimizer::add_param_group(const OptimizerParamGroup& group) {
  OpScope scope("optim::add_param_group");
  OptimizerParamGroup g(group.params(), group.has_options() ? group.options().clone() : defaults_->clone());
  for (const auto& item : group.extras()) g.set(item.key(), item.value());
  g.options().validate(name_.c_str());
  std::unordered_set<const TensorImpl*> seen;
  for (const OptimizerParamGroup& other : groups_) {
    for (const Tensor& p : other.params()) seen.insert(p.impl());
  }
  for (const Tensor& p : g.params()) {
    EMBER_CHECK(p.defined(), "[", name_, "] a parameter is an undefined tensor");
    EMBER_CHECK(p.is_leaf(), "[", name_, "] can't optimize a non-leaf Tensor (sizes ", p.sizes(),
                "); optimize the leaf it was computed from, or detach() it and call requires_grad_()");
    EMBER_CHECK(p.is_floating_point(), "[", name_, "] can only optimize floating-point tensors, got dtype ",
                p.dtype());
    EMBER_CHECK(seen.insert(p.impl()).second, "[", name_,
                "] some parameters appear in more than one parameter group (sizes ", p.sizes(), ")");
  }
  groups_.push_back(std::move(g));
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> out;
  for (const OptimizerParamGroup& g : groups_) out.insert(out.end(), g.params().begin(), g.params().end());
  return out;
}

size_t Optimizer::size() const {
  size_t n = 0;
  for (const OptimizerParamGroup& g : groups_) n += g.params().size();
  return n;
}

void Optimizer::zero_grad(std::optional<bool> set_to_none_arg) {
  const bool set_to_none = set_to_none_arg.value_or(zero_grad_sets_to_none());
  OpScope scope("optim::zero_grad");
  NoGradGuard no_grad;
  for (OptimizerParamGroup& g : groups_) {
    for (Tensor& p : g.params()) {
      Tensor& grad = p.mutable_grad();
      if (!grad.defined()) continue;
      if (set_to_none) {
        grad = Tensor();
      } else {
        if (grad.grad_fn()) grad = grad.detach();
        grad.zero_();
      }
    }
  }
}

Tensor Optimizer::step(const LossClosure& closure) {
  OpScope scope("optim::step");
  Tensor loss;
  if (closure) {
    EnableGradGuard enable;
    loss = closure();
  }
  NoGradGuard no_grad;
  if (report_grad_norm_ || guards::is_enabled(guards::Guard::GradAccumulation) ||
      guards::is_enabled(guards::Guard::NonFiniteGrad)) {
    check_gradients();
  }
  for (OptimizerParamGroup& g : groups_) update(g);
  guards::detail::on_optimizer_step(name_.c_str());
  return loss;
}

void Optimizer::set_accumulation_steps(int64_t steps) {
  EMBER_CHECK(steps >= 1, "[", name_, ".set_accumulation_steps] steps must be >= 1, got ", steps);
  accumulation_steps_ = steps;
  short_steps_ = 0;
}

void Optimizer::check_gradients() {
  int64_t passes = 0, index = -1;
  double sum_squares = 0;
  bool finite_checked = !guards::is_enabled(guards::Guard::NonFiniteGrad);
  for (const OptimizerParamGroup& g : groups_) {
    for (const Tensor& p : g.params()) {
      ++index;
      const autograd::AutogradMeta* meta = p.impl()->autograd_meta();
      if (!meta || !meta->grad.defined()) continue;
      if (!finite_checked && meta->grad.is_floating_point() && !meta->grad.isfinite().all().item<bool>()) {
        finite_checked = true;  // one report per step at most
        const Tensor bad = meta->grad.isfinite().logical_not();
        std::ostringstream sizes;
        sizes << p.sizes();
        guards::detail::nonfinite_grad_warning(name_.c_str(), index, sizes.str(), bad.sum().item<int64_t>(),
                                               meta->grad.isnan().any().item<bool>());
      }
      passes = std::max<int64_t>(passes, meta->grad_accumulations);
      if (report_grad_norm_) {
        const double n = meta->grad.norm(2).item<double>();
        sum_squares += n * n;
      }
    }
  }
  if (report_grad_norm_) last_grad_norm_ = std::sqrt(sum_squares);
  // passes == 0: gradients set by hand (not by backward); nothing to judge.
  if (passes == 0 || accumulation_warned_ || !guards::is_enabled(guards::Guard::GradAccumulation)) return;
  short_steps_ = passes < accumulation_steps_ ? short_steps_ + 1 : 0;
  if (passes <= accumulation_steps_ && short_steps_ < 2) return;
  accumulation_warned_ = true;
  const std::string n = std::to_string(passes), k = std::to_string(accumulation_steps_);
  std::string msg = "[" + name_ + ".step] the gradients come from " + n + " backward passes since they were last ";
  msg += "cleared, but the optimizer expects " + k + " per step (set_accumulation_steps(" + k + ")). ";
  if (passes > accumulation_steps_) {
    msg += "If this is not deliberate gradient accumulation, zero_grad() is missing: call optimizer.zero_grad() ";
    msg += "after every step(). If it is, declare it with optimizer.set_accumulation_steps(" + n;
    msg += ") and divide each loss by " + n + ". ";
  } else {
    msg += "Call backward() " + k + " times per step(), or declare the number you use with ";
    msg += "optimizer.set_accumulation_steps(" + n + "). ";
  }
  msg += "(disable: ember::guards::set_enabled(ember::guards::Guard::GradAccumulation, false))";
  warn(msg);
}

ParamState& Optimizer::state(const Tensor& param) { return state_[param.impl()]; }

const ParamState* Optimizer::find_state(const Tensor& param) const {
  auto it = state_.find(param.impl());
  return it == state_.end() ? nullptr : &it->second;
}

Value Optimizer::state_dict() const {
  Value state = Value::dict();
  Value groups = Value::list();
  int64_t index = 0;
  for (const OptimizerParamGroup& g : groups_) {
    Value gv = Value::dict();
    g.options().to_value(gv);
    for (const auto& item : g.extras()) gv[item.key()] = item.value();
    std::vector<int64_t> ids;
    for (const Tensor& p : g.params()) {
      if (const ParamState* st = find_state(p)) {
        Value sv = Value::dict();
        // PyTorch 1.13 keeps `step` as a float32 scalar tensor.
        if (st->has_step) sv["step"] = ember::tensor(static_cast<double>(st->step), kFloat32);
        for (const auto& item : st->tensors) {
          sv[item.key()] = item.value().defined() ? Value(item.value().clone()) : Value();
        }
        state[std::to_string(index)] = std::move(sv);
      }
      ids.push_back(index++);
    }
    gv["params"] = Value(ids);
    groups.push_back(std::move(gv));
  }
  Value out = Value::dict();
  out["state"] = std::move(state);
  out["param_groups"] = std::move(groups);
  return out;
}

void Optimizer::load_state_dict(const Value& sd) {
  OpScope scope("optim::load_state_dict");
  EMBER_CHECK(sd.is_dict() && sd.contains("state") && sd.contains("param_groups"), "[", name_,
              "] load_state_dict expects a dict with 'state' and 'param_groups' (from state_dict())");
  const Value::List& saved_groups = sd.at("param_groups").to_list();
  EMBER_CHECK(saved_groups.size() == groups_.size(), "[", name_,
              "] loaded state dict has a different number of parameter groups: ", saved_groups.size(),
              " saved, ", groups_.size(), " in the optimizer");
  for (size_t i = 0; i < groups_.size(); ++i) {
    const size_t n = saved_groups[i].at("params").to_list().size();
    EMBER_CHECK(n == groups_[i].params().size(), "[", name_, "] loaded state dict contains a parameter group ", i,
                " with ", n, " parameters, but the optimizer's group has ", groups_[i].params().size());
  }
  // Build everything first so a bad entry leaves the optimizer untouched.
  std::vector<OptimizerParamGroup> new_groups;
  std::unordered_map<const TensorImpl*, ParamState> new_state;
  const Value& saved_state = sd.at("state");
  for (size_t i = 0; i < groups_.size(); ++i) {
    const Value& gv = saved_groups[i];
    std::unique_ptr<OptimizerOptions> opts = make_options();
    opts->from_value(gv);
    opts->validate(name_.c_str());
    Value option_keys = Value::dict();
    opts->to_value(option_keys);
    OptimizerParamGroup g(groups_[i].params(), std::move(opts));
    for (const auto& item : gv.to_dict()) {
      if (item.key() == "params" || option_keys.contains(item.key())) continue;
      if (item.value().is_double() || item.value().is_int()) g.set(item.key(), item.value().to_double());
    }
    const std::vector<int64_t> ids = gv.at("params").to_int_list();
    for (size_t k = 0; k < ids.size(); ++k) {
      const std::string key = std::to_string(ids[k]);
      if (!saved_state.contains(key)) continue;
      const Tensor& p = g.params()[k];
      ParamState st;
      for (const auto& item : saved_state.at(key).to_dict()) {
        const Value& v = item.value();
        if (item.key() == "step") {
          st.has_step = true;
          st.step = v.is_tensor() ? static_cast<int64_t>(v.to_tensor().item<double>())
                                  : static_cast<int64_t>(v.to_double());
        } else if (v.is_none()) {
          st.tensors.insert(item.key(), Tensor());
        } else {
          const Tensor& t = v.to_tensor();
          EMBER_CHECK(t.sizes() == p.sizes(), "[", name_, "] state '", item.key(), "' of parameter ", key,
                      " has sizes ", t.sizes(), " but the parameter has sizes ", p.sizes());
          st.tensors.insert(item.key(), t.to(p.dtype()).contiguous().clone());
        }
      }
      new_state.emplace(p.impl(), std::move(st));
    }
    new_groups.push_back(std::move(g));
  }
  groups_ = std::move(new_groups);
  state_ = std::move(new_state);
}

namespace detail {

void apply_contiguous(const char* op, const Tensor& param,
                      const std::function<void(const Tensor& p, const Tensor& g)>& fn) {
  const Tensor& grad = param.grad();
  EMBER_CHECK(param.dtype() == kFloat32 || param.dtype() == kFloat64, "[", op,
              "] parameters must be float32 or float64, got ", param.dtype());
  EMBER_CHECK(grad.sizes() == param.sizes(), "[", op, "] gradient sizes ", grad.sizes(),
              " differ from the parameter's ", param.sizes());
  const Tensor g = grad.to(param.dtype()).contiguous();
  if (param.is_contiguous()) {
    fn(param, g);
    param.bump_version();
  } else {
    Tensor work = param.contiguous();
    fn(work, g);
    Tensor(param).copy_(work);
  }
}

Tensor zeros_state(const Tensor& p) { return zeros(p.sizes(), p.options()); }

OptimizerMemory live_optimizer_memory(const std::vector<Tensor>& more_parameters) {
  OptimizerMemory m;
  std::unordered_set<const StorageImpl*> seen;
  auto count = [&](const Tensor& t, int64_t& into) {
    if (!t.defined()) return;
    const StorageImpl* s = t.storage().get();
    if (s && seen.insert(s).second) into += static_cast<int64_t>(s->nbytes());
  };
  std::lock_guard<std::mutex> lock(g_live_mu);
  for (const Optimizer* o : live_optimizers()) {
    for (const OptimizerParamGroup& g : o->param_groups()) {
      for (const Tensor& p : g.params()) count(p, m.parameters);
    }
  }
  for (const Tensor& p : more_parameters) count(p, m.parameters);
  for (const Optimizer* o : live_optimizers()) {
    for (const OptimizerParamGroup& g : o->param_groups()) {
      for (const Tensor& p : g.params()) {
        count(p.grad(), m.gradients);
        if (const ParamState* st = o->find_state(p)) {
          for (const auto& item : st->tensors) count(item.value(), m.state);
        }
      }
    }
  }
  for (const Tensor& p : more_parameters) count(p.grad(), m.gradients);
  return m;
}

}  // namespace detail

}  // namespace ember::optim
