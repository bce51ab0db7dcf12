#pragma once
// ember::optim::Optimizer: the base of every optimizer, as libtorch's torch::optim::Optimizer.
// An optimizer holds parameter groups (tensors + per-group options) and per-parameter state;
// step() updates the parameters in place under NoGradGuard. See docs/optim.md for how to
// write a new optimizer in a few lines.

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "ember/core/ordered_dict.h"
#include "ember/core/tensor.h"
#include "ember/serialize/value.h"

// Declares an option with a chainable setter and a getter, as libtorch's TORCH_ARG:
//   EMBER_OPTIM_ARG(double, lr) = 1e-3;   ->  opts.lr(0.1).lr() == 0.1
#define EMBER_OPTIM_ARG(T, name)                  \
 public:                                          \
  auto& name(const T& new_##name) {               \
    this->name##_ = new_##name;                   \
    return *this;                                 \
  }                                               \
  const T& name() const noexcept { return name##_; } \
  T& name() noexcept { return name##_; }          \
                                                  \
 private:                                         \
  T name##_

namespace ember::optim {

// Per-group options. Every optimizer's options derive from this (through
// OptimizerCloneableOptions); schedulers reach the learning rate through get_lr/set_lr.
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  virtual double get_lr() const = 0;
  virtual void set_lr(double lr) = 0;
  // The momentum OneCycleLR cycles: `momentum` for SGD/RMSprop, beta1 for Adam/AdamW.
  virtual bool has_momentum() const { return false; }
  virtual double get_momentum() const { return 0; }
  virtual void set_momentum(double) {}
  // The options as PyTorch's param_group entries ({"lr": .., "betas": [..], ...}) and back.
  // The defaults handle only "lr"; override both when the options have more fields.
  virtual void to_value(Value& group) const;
  virtual void from_value(const Value& group);
  // Throws ember::Error naming the option when a value is out of range; `op` names the optimizer.
  virtual void validate(const char* op) const;
};

// CRTP helper providing clone().
template <typename Derived>
class OptimizerCloneableOptions : public OptimizerOptions {
 public:
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }
};

// A list of parameters and their options. Built without options, a group takes the
// optimizer's defaults when added.
class OptimizerParamGroup {
 public:
  OptimizerParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
      : params_(std::move(params)), options_(std::move(options)) {}
  template <typename O, typename = std::enable_if_t<std::is_base_of_v<OptimizerOptions, O>>>
  OptimizerParamGroup(std::vector<Tensor> params, const O& options)
      : params_(std::move(params)), options_(options.clone()) {}
  OptimizerParamGroup(const OptimizerParamGroup& other);
  OptimizerParamGroup& operator=(const OptimizerParamGroup& other);
  OptimizerParamGroup(OptimizerParamGroup&&) noexcept = default;
  OptimizerParamGroup& operator=(OptimizerParamGroup&&) noexcept = default;

  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }
  bool has_options() const { return static_cast<bool>(options_); }
  OptimizerOptions& options();
  const OptimizerOptions& options() const;
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }
  // The options as their concrete type, e.g. group.options_as<AdamOptions>().betas().
  template <typename O>
  O& options_as() {
    return dynamic_cast<O&>(options());
  }
  // Shorthands for options().get_lr() / set_lr().
  double lr() const { return options().get_lr(); }
  void set_lr(double lr) { options().set_lr(lr); }

  // Extra numbers stored in the group, as PyTorch's param_group dict holds them:
  // schedulers keep "initial_lr", "max_lr", ... here; they are saved in state_dict().
  bool has(const std::string& key) const { return extras_.contains(key); }
  double get(const std::string& key) const;
  void set(const std::string& key, double value) { extras_.insert_or_assign(key, value); }
  const OrderedDict<std::string, double>& extras() const { return extras_; }

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
  OrderedDict<std::string, double> extras_;
};

// State of one parameter: a step counter (saved as "step" when has_step) and named tensors
// (exp_avg, momentum_buffer, ...), saved in insertion order.
struct ParamState {
  bool has_step = false;
  int64_t step = 0;
  OrderedDict<std::string, Tensor> tensors;
  // The named tensor, inserted undefined when absent.
  Tensor& operator[](const std::string& name);
  bool contains(const std::string& name) const { return tensors.contains(name); }
};

// Re-evaluates the model and returns the loss; step(closure) runs it with grad enabled.
using LossClosure = std::function<Tensor()>;

class Optimizer {
 public:
  // `name` is used in error messages ("[Adam] ...").
  Optimizer(std::vector<OptimizerParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults,
            std::string name);
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;
  virtual ~Optimizer();

  const std::string& name() const { return name_; }
  // Adds a group; without options it gets a copy of defaults(). Checks the options and that
  // no parameter is already in another group.
  void add_param_group(const OptimizerParamGroup& group);
  std::vector<OptimizerParamGroup>& param_groups() { return groups_; }
  const std::vector<OptimizerParamGroup>& param_groups() const { return groups_; }
  const OptimizerOptions& defaults() const { return *defaults_; }
  OptimizerOptions& defaults() { return *defaults_; }
  // Every parameter of every group, in order.
  std::vector<Tensor> parameters() const;
  size_t size() const;

  // Clears the gradients: drops them (set_to_none, PyTorch's default since 2.0 and
  // libtorch's) or zeroes them in place.
  // set_to_none unset: ember::zero_grad_sets_to_none() (true unless ember/torch.h is included).
  void zero_grad(std::optional<bool> set_to_none = std::nullopt);
  // Runs closure (if any) with grad enabled, then updates every parameter that has a
  // gradient, under NoGradGuard. Returns the closure's loss (undefined without closure).
  // Virtual (as libtorch's) so that wrappers such as ZeroRedundancyOptimizer can step a
  // shard and synchronize afterwards.
  virtual Tensor step(const LossClosure& closure = nullptr);

  // Gradient accumulation: the backward passes summed into the gradients per step() (default
  // 1). The GradAccumulation guard (docs/guards.md) warns once when step() sees gradients
  // from more passes (a missing zero_grad()), or from fewer on two steps in a row.
  void set_accumulation_steps(int64_t steps);
  int64_t accumulation_steps() const { return accumulation_steps_; }
  // With report on, step() computes the total 2-norm of the gradients it applies (one
  // reduction per parameter); last_grad_norm() returns it (NaN before the first such step).
  void set_report_grad_norm(bool report) { report_grad_norm_ = report; }
  double last_grad_norm() const { return last_grad_norm_; }

  // The state of a parameter (created empty on first use).
  ParamState& state(const Tensor& param);
  // The state if there is one, else nullptr.
  const ParamState* find_state(const Tensor& param) const;

  // PyTorch's layout: {"state": {"0": {"step": tensor, "exp_avg": tensor, ...}, ...},
  // "param_groups": [{"lr": .., ..., "params": [0, 1, ...]}]}. Parameters are numbered
  // across groups in order; only parameters with state appear in "state".
  virtual Value state_dict() const;
  // Loads what state_dict() produced for an optimizer with the same group sizes: state
  // tensors are copied (cast to each parameter's dtype), group options replaced.
  virtual void load_state_dict(const Value& state_dict);

 protected:
  // Updates the parameters of one group (called under NoGradGuard, once per group).
  virtual void update(OptimizerParamGroup& group) = 0;
  // Makes a blank options object of the right type for load_state_dict (default: a clone
  // of defaults()).
  virtual std::unique_ptr<OptimizerOptions> make_options() const { return defaults_->clone(); }

 private:
  std::vector<OptimizerParamGroup> groups_;
  std::unique_ptr<OptimizerOptions> defaults_;
  std::string name_;
  std::unordered_map<const TensorImpl*, ParamState> state_;
  void check_gradients();  // the GradAccumulation guard and the grad-norm report
  int64_t accumulation_steps_ = 1;
  int64_t short_steps_ = 0;  // consecutive steps with fewer passes than declared
  bool accumulation_warned_ = false;
  bool report_grad_norm_ = false;
  double last_grad_norm_ = std::numeric_limits<double>::quiet_NaN();
};

namespace detail {
// For the built-in optimizers: runs `fn(p, g)` with contiguous float32/float64 p and g
// (copies back into a non-contiguous param afterwards) and bumps p's version.
void apply_contiguous(const char* op, const Tensor& param,
                      const std::function<void(const Tensor& p, const Tensor& g)>& fn);
// A contiguous zero tensor shaped like p (optimizer state).
Tensor zeros_state(const Tensor& p);

// Bytes held by the parameters of every live optimizer and `more_parameters` (the live
// modules' parameters, nn/live_modules.h), by their gradients and by the optimizers'
// state, each storage counted once (the profiler's memory by category). Reads the
// optimizers unsynchronised: call it from the thread that runs them.
struct OptimizerMemory {
  int64_t parameters = 0, gradients = 0, state = 0;
};
OptimizerMemory live_optimizer_memory(const std::vector<Tensor>& more_parameters = {});
}  // namespace detail

}  // namespace ember::optim
