#include "ember/autograd/custom_function.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>

#include "ember/autograd/autograd_meta.h"
#include "ember/autograd/record.h"
#include "ember/core/check.h"
#include "ember/ops/creation.h"

namespace ember::autograd {

namespace {

std::string demangle(const char* mangled) {
  int status = 0;
  char* dem = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string out = status == 0 && dem ? dem : mangled;
  std::free(dem);
  return out;
}

bool contains(const std::vector<const TensorImpl*>& v, const TensorImpl* p) {
  return std::find(v.begin(), v.end(), p) != v.end();
}

}  // namespace

double SavedValue::toDouble() const {
  if (const int64_t* i = std::get_if<int64_t>(&v_)) return static_cast<double>(*i);
  return get<double>("double");
}

void SavedValue::type_error(const char* wanted) const {
  static const char* const kNames[] = {"None", "bool", "int", "double", "string", "Tensor", "int list"};
  EMBER_ERROR("[AutogradContext] saved_data holds a ", kNames[v_.index()], ", not a ", wanted);
}

void AutogradContext::save_for_backward(variable_list to_save) { to_save_ = std::move(to_save); }

variable_list AutogradContext::get_saved_variables() const {
  EMBER_CHECK(!has_freed_buffers_,
              "[autograd] Trying to backward through the graph a second time (or directly access saved "
              "tensors after they have already been freed). Saved intermediate values of the graph are "
              "freed when you call backward() or autograd::grad(). Specify retain_graph=true if you need "
              "to backward through the graph a second time or if you need to access saved tensors after "
              "calling backward.");
  variable_list out;
  if (saved_.empty() && !to_save_.empty()) return to_save_;  // no graph was recorded
  std::shared_ptr<Node> fn = grad_fn_.lock();
  out.reserve(saved_.size());
  for (const SavedVariable& s : saved_) out.push_back(s.unpack(fn));
  return out;
}

namespace detail {
bool running_backward_needs(const Edge& e);  // engine.cpp
}  // namespace detail

bool AutogradContext::needs_input_grad(size_t index) const {
  std::shared_ptr<Node> fn = grad_fn_.lock();
  // In backward, an input whose gradient this backward does not use (grad() of other
  // inputs) needs none either, as libtorch trims the graph task's edges.
  return fn && fn->should_compute_output(index) && detail::running_backward_needs(fn->next_edge(index));
}

bool AutogradContext::needs_input_grad(std::initializer_list<std::pair<size_t, size_t>> ranges) const {
  for (const auto& [begin, end] : ranges) {
    for (size_t i = begin; i < end; ++i) {
      if (needs_input_grad(i)) return true;
    }
  }
  return false;
}

void AutogradContext::mark_dirty(const variable_list& inputs) {
  for (const Tensor& t : inputs) {
    if (t.defined()) dirty_.push_back(t.impl());
  }
}

void AutogradContext::mark_non_differentiable(const variable_list& outputs) {
  for (const Tensor& t : outputs) {
    if (t.defined()) non_differentiable_.push_back(t.impl());
  }
}

std::shared_ptr<CustomNode> CustomNode::make(const char* mangled_name, BackwardFn backward,
                                             const variable_list& inputs, std::vector<bool> is_tensor_arg) {
  if (!needs_grad_list(inputs)) return nullptr;
  return make_named("CppNode<" + demangle(mangled_name) + ">", std::move(backward), inputs, std::move(is_tensor_arg));
}

std::shared_ptr<CustomNode> CustomNode::make_named(std::string name, BackwardFn backward,
                                                   const variable_list& inputs, std::vector<bool> is_tensor_arg) {
  if (!needs_grad_list(inputs)) return nullptr;
  auto node = std::make_shared<CustomNode>(std::move(name), std::move(backward), std::move(is_tensor_arg));
  collect_next_edges(*node, inputs);
  maybe_record_anomaly(*node);
  node->ctx_.grad_fn_ = node;
  return node;
}

void CustomNode::finish(const variable_list& inputs, variable_list& outputs) {
  auto self = std::static_pointer_cast<Node>(shared_from_this());
  for (Tensor& out : outputs) {
    if (!out.defined()) {
      add_input_metadata(out);  // keeps output numbers aligned with forward's outputs
      continue;
    }
    const bool is_input = std::any_of(inputs.begin(), inputs.end(),
                                      [&](const Tensor& in) { return in.defined() && in.impl() == out.impl(); });
    const bool dirty = contains(ctx_.dirty_, out.impl());
    EMBER_CHECK(!dirty || is_input, "[", name_, "] mark_dirty() was given a tensor that forward did not get as an input");
    if (contains(ctx_.non_differentiable_, out.impl()) || !is_floating_point(out.dtype())) {
      add_input_metadata(out);
      continue;
    }
    if (dirty) {
      check_inplace(out, name_.c_str());
      EMBER_CHECK(!out.impl()->view_base(), "[", name_, "] mark_dirty() on a view is not supported; modify the "
                  "view's base, or return a new tensor instead of modifying the input in place");
      // forward wrote into the input: record the write as an in-place op would.
      out.bump_version();
      const uint32_t nr = add_input_metadata(out);
      AutogradMeta& meta = out.impl()->ensure_autograd_meta();
      meta.requires_grad = true;
      meta.grad_fn = self;
      meta.output_nr = nr;
      continue;
    }
    if (is_input) {
      // An input returned as is becomes a new alias, so the input keeps its own history.
      AutoGradMode no_grad(false);
      out = out.alias();
    }
    set_history(out, self);
  }
  // Saved outputs are stored without their grad_fn (this node), which avoids a cycle.
  for (const Tensor& t : ctx_.to_save_) {
    const bool is_output = t.defined() && std::any_of(outputs.begin(), outputs.end(), [&](const Tensor& o) {
                             return o.defined() && o.impl() == t.impl();
                           });
    ctx_.saved_.emplace_back(t, is_output);
  }
  ctx_.to_save_.clear();
}

variable_list CustomNode::apply(variable_list&& grads) {
  if (ctx_.materialize_grads_) {
    for (size_t i = 0; i < grads.size() && i < input_meta_.size(); ++i) {
      if (!grads[i].defined()) grads[i] = zeros(input_meta_[i].sizes, TensorOptions(input_meta_[i].dtype));
    }
  }
  variable_list res = backward_(&ctx_, std::move(grads));
  const size_t nargs = is_tensor_arg_.size();
  if (res.size() > nargs) {
    for (size_t i = nargs; i < res.size(); ++i) {
      EMBER_CHECK(!res[i].defined(), "[", name_, "] backward returned an incorrect number of gradients (expected ",
                  nargs, ", got ", res.size(), ")");
    }
  }
  EMBER_CHECK(res.size() >= nargs, "[", name_, "] backward returned an incorrect number of gradients (expected ",
              nargs, ", got ", res.size(), "): return one per forward argument, an undefined Tensor() for "
              "arguments without a gradient");
  variable_list out;
  out.reserve(num_outputs());
  for (size_t i = 0; i < nargs; ++i) {
    if (is_tensor_arg_[i]) {
      out.push_back(std::move(res[i]));
    } else {
      EMBER_CHECK(!res[i].defined(), "[", name_, "] backward returned a defined gradient at position ", i,
                  ", but the corresponding forward argument is not a Tensor");
    }
  }
  return out;
}

void CustomNode::release_variables() {
  for (SavedVariable& s : ctx_.saved_) s.reset();
  ctx_.has_freed_buffers_ = true;
}

}  // namespace ember::autograd
