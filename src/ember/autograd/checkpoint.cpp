// Activation checkpointing (see autograd.h).

#include "ember/amp/autocast.h"
#include "ember/autograd/autograd.h"
#include "ember/autograd/autograd_meta.h"
#include "ember/autograd/record.h"
#include "ember/core/check.h"
#include "ember/core/generator.h"

namespace ember::autograd {

namespace {

class CheckpointBackward final : public Node {
 public:
  CheckpointBackward(CheckpointFn fn, const variable_list& inputs, Tensor rng_state)
      : fn_(std::move(fn)),
        rng_state_(std::move(rng_state)),
        autocast_(amp::is_autocast_enabled()),
        autocast_dtype_(amp::get_autocast_dtype()) {
    for (const Tensor& t : inputs) {
      saved_.emplace_back(t, false);
      requires_grad_.push_back(t.defined() && t.requires_grad());
    }
  }
  std::string name() const override { return "CheckpointFunctionBackward"; }
  void release_variables() override {
    for (SavedVariable& s : saved_) s.reset();
  }

  variable_list apply(variable_list&& grads) override {
    variable_list inputs;
    for (size_t i = 0; i < saved_.size(); ++i) {
      Tensor t = saved_[i].unpack();
      if (t.defined()) {
        t = t.detach();
        if (requires_grad_[i]) t.requires_grad_(true);
      }
      inputs.push_back(t);
    }
    variable_list outputs;
    {
      // Rerun with the forward's random numbers, then put the generator back.
      Tensor now;
      if (rng_state_.defined()) {
        now = default_generator().get_state();
        default_generator().set_state(rng_state_);
      }
      try {
        EnableGradGuard grad_on;
        // The rerun sees the forward's autocast state, so it computes in the same dtypes.
        amp::AutocastGuard autocast(autocast_dtype_, autocast_);
        outputs = fn_(inputs);
      } catch (...) {
        if (now.defined()) default_generator().set_state(now);
        throw;
      }
      if (now.defined()) default_generator().set_state(now);
    }
    variable_list tensors, grad_tensors;
    for (size_t i = 0; i < outputs.size() && i < grads.size(); ++i) {
      if (outputs[i].defined() && outputs[i].requires_grad() && grads[i].defined()) {
        tensors.push_back(outputs[i]);
        grad_tensors.push_back(grads[i]);
      }
    }
    if (!tensors.empty()) backward(tensors, grad_tensors, false, GradMode::is_enabled());
    variable_list result;
    for (size_t i = 0; i < inputs.size(); ++i) result.push_back(requires_grad_[i] ? inputs[i].grad() : Tensor());
    return result;
  }

 private:
  CheckpointFn fn_;
  Tensor rng_state_;
  bool autocast_;
  DType autocast_dtype_;
  std::vector<SavedVariable> saved_;
  std::vector<bool> requires_grad_;
};

}  // namespace

variable_list checkpoint(const CheckpointFn& fn, const variable_list& inputs, bool preserve_rng_state) {
  EMBER_CHECK(static_cast<bool>(fn), "[checkpoint] fn is empty");
  // Without a graph to cut there is nothing to save; with no input requiring grad the
  // rerun could not reach fn's parameters, so fn then runs normally (still correct).
  if (!GradMode::is_enabled() || !needs_grad_list(inputs)) return fn(inputs);
  Tensor rng_state = preserve_rng_state ? default_generator().get_state() : Tensor();
  variable_list outputs;
  {
    NoGradGuard no_grad;
    outputs = fn(inputs);
  }
  auto node = std::make_shared<CheckpointBackward>(fn, inputs, rng_state);
  collect_next_edges(*node, inputs);
  maybe_record_anomaly(*node);
  for (Tensor& out : outputs) {
    if (!out.defined() || !is_floating_point(out.dtype())) {
      node->add_input_metadata(out);
      continue;
    }
    for (const Tensor& in : inputs) {
      if (in.defined() && in.impl() == out.impl()) {
        NoGradGuard no_grad;
        out = out.alias();  // an input returned as is keeps its own history
        break;
      }
    }
    set_history(out, node);
  }
  return outputs;
}

}  // namespace ember::autograd
