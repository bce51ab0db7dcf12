#include "ember/autograd/record.h"

#include <cxxabi.h>
#include <execinfo.h>

#include <cstdlib>
#include <string>

#include "ember/autograd/anomaly_mode.h"
#include "ember/autograd/autograd_meta.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/guards/guards.h"
#include "ember/ops/creation.h"

namespace ember::autograd {

bool needs_grad_list(const std::vector<Tensor>& ts) {
  if (!GradMode::is_enabled()) return false;
  bool any_requires = false, any_normal = false;
  for (const Tensor& t : ts) {
    any_requires = any_requires || requires_grad_fast(t);
    any_normal = any_normal || is_normal_tensor(t);
  }
  return any_requires && any_normal;
}

std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
  AutogradMeta& meta = leaf.impl()->ensure_autograd_meta();
  if (auto acc = meta.grad_accumulator.lock()) return acc;
  auto acc = std::make_shared<AccumulateGrad>(leaf);
  meta.grad_accumulator = acc;
  return acc;
}

namespace {

// The gradient of a view is the gradient of its base restricted to the view's
// elements: AsStridedBackward0 scatters it into zeros of the base's shape.
class ViewOfBaseBackward final : public Node {
 public:
  ViewOfBaseBackward(const Tensor& base, const Tensor& view)
      : base_sizes_(base.sizes()),
        base_strides_(base.strides()),
        sizes_(view.sizes()),
        strides_(view.strides()),
        offset_(view.storage_offset() - base.storage_offset()),
        dtype_(base.dtype()) {}
  std::string name() const override { return "AsStridedBackward0"; }
  variable_list apply(variable_list&& grads) override {
    Tensor g = empty_strided(base_sizes_, base_strides_, TensorOptions(dtype_));
    g.zero_();
    g.as_strided(sizes_, strides_, offset_).copy_(grads[0]);
    return {g};
  }

 private:
  DimVector base_sizes_, base_strides_, sizes_, strides_;
  int64_t offset_;
  DType dtype_;
};

// Note [In-place on a view]: when view V of base B is modified in place by an op whose
// backward is `fn`, B's new history is CopySlices: the gradient for B's old value is
// the incoming gradient with V's region replaced by what fn makes of that region; fn's
// other inputs get fn's other outputs. V becomes an as_strided view of B's new value.
class CopySlices final : public Node {
 public:
  CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<Node> fn)
      : base_sizes_(base.sizes()),
        base_strides_(base.strides()),
        sizes_(view.sizes()),
        strides_(view.strides()),
        offset_(view.storage_offset() - base.storage_offset()),
        dtype_(base.dtype()),
        fn_(std::move(fn)) {}
  std::string name() const override { return "CopySlices"; }
  void release_variables() override { fn_->release_variables(); }
  variable_list apply(variable_list&& grads) override {
    const Tensor& grad = grads[0];
    Tensor result = empty_strided(base_sizes_, base_strides_, TensorOptions(grad.dtype()));
    result.copy_(grad);
    Tensor region = result.as_strided(sizes_, strides_, offset_);
    variable_list res = fn_->apply({region.clone()});
    variable_list out(num_outputs());
    if (res.empty() || !res[0].defined()) {
      region.zero_();
    } else {
      region.copy_(res[0]);
    }
    out[0] = result;
    for (size_t i = 1; i < res.size() && i < out.size(); ++i) out[i] = std::move(res[i]);
    return out;
  }

 private:
  DimVector base_sizes_, base_strides_, sizes_, strides_;
  int64_t offset_;
  DType dtype_;
  std::shared_ptr<Node> fn_;
};

// A view whose base was modified in place after the view's history was recorded gets
// its history again, as a view of the base's current history.
void refresh_view_history(const Tensor& t) {
  TensorImpl* base_impl = t.impl()->view_base();
  AutogradMeta* meta = t.impl()->autograd_meta();
  if (!base_impl || !meta || !meta->grad_fn || meta->attr_version == t._version()) return;
  EMBER_CHECK(meta->view_forbids_inplace.empty(), "[autograd] this tensor is a view made by ",
              meta->view_forbids_inplace, " and its base was then modified in place; giving the view a new "
              "history through an op which does not have a derivative implemented is forbidden. clone() the view "
              "before modifying its base, or register an Autograd kernel for ", meta->view_forbids_inplace);
  Tensor base(t.impl()->view_base_ptr());
  if (!base.requires_grad()) return;
  auto node = std::make_shared<ViewOfBaseBackward>(base, t);
  node->mutable_next_edges().push_back(gradient_edge(base));
  node->add_input_metadata(t);
  meta->grad_fn = node;
  meta->output_nr = 0;
  meta->attr_version = t._version();
}

}  // namespace

void check_mode_view_not_stale(const Tensor& t) {
  const AutogradMeta* meta = t.impl()->autograd_meta();
  if (!meta || meta->grad_fn || !meta->requires_grad || !t.impl()->view_base() ||
      meta->attr_version == t._version()) {
    return;
  }
  if (!t.impl()->view_base()->requires_grad()) return;
  EMBER_ERROR("[autograd] A view was created in ", meta->made_in_inference_mode ? "inference mode" : "no_grad mode",
              " and its base or another view of its base has been modified inplace with grad mode enabled; its "
              "gradient could not reach the base, so using it is refused. Take the view again after the change, "
              "or take it with grad mode on");
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined()) return Edge();
  AutogradMeta* meta = t.impl()->autograd_meta();
  if (!meta || !meta->requires_grad) return Edge();
  if (!meta->grad_fn && t.impl()->view_base()) check_mode_view_not_stale(t);
  if (meta->grad_fn && t.impl()->view_base()) refresh_view_history(t);
  if (meta->grad_fn) return Edge(meta->grad_fn, meta->output_nr);
  return Edge(grad_accumulator(t), 0);
}

void collect_next_edges(Node& node, std::initializer_list<const Tensor*> inputs) {
  auto& edges = node.mutable_next_edges();
  edges.reserve(inputs.size());
  for (const Tensor* t : inputs) edges.push_back(t ? gradient_edge(*t) : Edge());
}

void collect_next_edges(Node& node, const std::vector<Tensor>& inputs) {
  auto& edges = node.mutable_next_edges();
  edges.reserve(inputs.size());
  for (const Tensor& t : inputs) edges.push_back(gradient_edge(t));
}

void set_history(const Tensor& out, const std::shared_ptr<Node>& node) {
  if (!out.defined()) return;
  const uint32_t nr = node->add_input_metadata(out);
  AutogradMeta& meta = out.impl()->ensure_autograd_meta();
  meta.requires_grad = true;
  meta.grad_fn = node;
  meta.output_nr = nr;
  if (out.impl()->view_base()) meta.attr_version = out._version();
  if (AnomalyMode::is_enabled() && AnomalyMode::should_check_nan()) check_forward_output(out, *node);
}

void check_forward_output(const Tensor& out, const Node& node) {
  if (!out.is_floating_point() || !guards::is_enabled(guards::Guard::NonFiniteLoss) ||
      guards::detail::nonfinite_origin_known()) {
    return;
  }
  bool finite = true;
  {
    NoGradGuard no_grad;
    finite = out.isfinite().all().item<bool>();
  }
  if (finite) return;
  const char* op = OpScope::outermost();
  std::string what = "'";
  what += op ? op : node.name().c_str();
  what += "' (backward node ";
  what += node.name();
  what += ")";
  if (!node.forward_trace().empty()) {
    what += ", called from:\n";
    what += node.forward_trace();
  }
  guards::detail::record_nonfinite_origin(std::move(what));
}

void inference_inplace_error(const char* op) {
  EMBER_ERROR("[", op, "] Inplace update to inference tensor outside InferenceMode is not allowed; "
              "make a clone() outside InferenceMode to get a normal tensor");
}

void check_inplace(const Tensor& self, const char* op) {
  check_inplace_cheap(self, op);
  AutogradMeta* meta = self.impl()->autograd_meta();
  if (meta && !meta->view_forbids_inplace.empty() && GradMode::is_enabled()) {
    EMBER_ERROR("[", op, "] this tensor is a view made by ", meta->view_forbids_inplace,
                "; modifying in place a view made by an op which does not have a derivative implemented is "
                "forbidden. Modify a clone() of it, or register an Autograd kernel for ", meta->view_forbids_inplace);
  }
  if (meta && meta->requires_grad && !meta->grad_fn && GradMode::is_enabled()) {
    if (self.impl()->view_base()) {
      // A view with requires_grad but no history was taken under NoGradGuard or InferenceMode.
      const char* mode = meta->made_in_inference_mode ? "inference mode" : "no_grad mode";
      EMBER_ERROR("[", op, "] A view was created in ", mode, " and is being modified inplace with grad mode "
                  "enabled; whether that change should be tracked is ambiguous, so it is refused. Take the view "
                  "and modify it both with grad mode off (not tracked) or both with it on (tracked)");
    }
    EMBER_ERROR("[", op, "] a leaf Variable that requires grad is being used in an in-place operation; "
                "do it under NoGradGuard (e.g. for initialisation), or on a clone()");
  }
  if (GradMode::is_enabled() && self.impl()->view_base()) {
    Tensor base(self.impl()->view_base_ptr());
    AutogradMeta* bm = base.impl()->autograd_meta();
    if (bm && bm->requires_grad && !bm->grad_fn) {
      EMBER_ERROR("[", op, "] a view of a leaf Variable that requires grad is being used in an in-place "
                  "operation; do it under NoGradGuard, or on a clone()");
    }
  }
}

namespace {
// After an in-place op gave self a new grad_fn, retain_grad() follows it: grad() then
// holds the gradient of the tensor's current value, as in libtorch. Hooks registered
// before the op stay on the old node (they see the gradient of the old value).
void move_retained_grad(const Tensor& self, const std::shared_ptr<Node>& old_fn) {
  AutogradMeta& meta = self.impl()->ensure_autograd_meta();
  if (!meta.retains_grad) return;
  if (old_fn && meta.retain_hook_id >= 0) old_fn->remove_pre_hook(meta.retain_hook_id);
  meta.retains_grad = false;
  meta.retain_hook_id = -1;
  self.retain_grad();
}
}  // namespace

void rebase_history(const Tensor& self, const std::shared_ptr<Node>& node) {
  TensorImpl* base_impl = self.impl()->view_base();
  if (!base_impl) {
    node->add_input_metadata(self);
    AutogradMeta& meta = self.impl()->ensure_autograd_meta();
    std::shared_ptr<Node> old_fn = std::move(meta.grad_fn);
    meta.requires_grad = true;
    meta.grad_fn = node;
    meta.output_nr = 0;
    move_retained_grad(self, old_fn);
    return;
  }
  Tensor base(self.impl()->view_base_ptr());
  node->add_input_metadata(self);
  // fn's first input is the view's old value; CopySlices routes its gradient into the
  // base's old history instead.
  Edge base_edge = gradient_edge(base);
  node->mutable_next_edges()[0] = base_edge;
  auto copy_slices = std::make_shared<CopySlices>(base, self, node);
  auto& edges = copy_slices->mutable_next_edges();
  edges = node->next_edges();
  edges[0] = base_edge;
  maybe_record_anomaly(*copy_slices);
  copy_slices->add_input_metadata(base);
  AutogradMeta& bm = base.impl()->ensure_autograd_meta();
  bm.requires_grad = true;
  bm.grad_fn = copy_slices;
  bm.output_nr = 0;
  // The view: as_strided of the base's new value.
  auto view_node = std::make_shared<ViewOfBaseBackward>(base, self);
  view_node->mutable_next_edges().push_back(Edge(copy_slices, 0));
  view_node->add_input_metadata(self);
  AutogradMeta& vm = self.impl()->ensure_autograd_meta();
  std::shared_ptr<Node> old_fn = std::move(vm.grad_fn);
  vm.requires_grad = true;
  vm.grad_fn = view_node;
  vm.output_nr = 0;
  vm.attr_version = self._version();
  move_retained_grad(self, old_fn);
}

namespace detail {
const Node* running_node();  // engine.cpp
}  // namespace detail

void maybe_record_anomaly(Node& node) {
  if (!AnomalyMode::is_enabled()) return;
  void* frames[32];
  const int n = backtrace(frames, 32);
  char** symbols = backtrace_symbols(frames, n);
  std::string trace;
  for (int i = 1; symbols && i < n; ++i) {
    std::string line = symbols[i];
    // "lib(mangled+0x12) [0x...]": demangle the function name when there is one.
    const size_t open = line.find('('), plus = line.find('+', open == std::string::npos ? 0 : open);
    if (open != std::string::npos && plus != std::string::npos && plus > open + 1) {
      const std::string mangled = line.substr(open + 1, plus - open - 1);
      int status = 0;
      char* dem = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
      if (status == 0 && dem) line = line.substr(0, open + 1) + dem + line.substr(plus);
      std::free(dem);
    }
    trace += "  " + line + "\n";
  }
  std::free(symbols);
  node.set_forward_trace(std::move(trace), detail::running_node());
}

Tensor sum_to(const Tensor& grad, IntArrayRef sizes) {
  if (grad.sizes() == sizes) return grad;
  const int64_t lead = grad.dim() - static_cast<int64_t>(sizes.size());
  DimVector dims;
  for (int64_t d = 0; d < grad.dim(); ++d) {
    if (d < lead) {
      dims.push_back(d);
    } else if (sizes[d - lead] == 1 && grad.size(d) != 1) {
      dims.push_back(d);
    }
  }
  Tensor r = dims.empty() ? grad : grad.sum(dims, /*keepdim=*/true);
  if (lead > 0 || r.sizes() != sizes) r = r.reshape(sizes);
  return r;
}

}  // namespace ember::autograd
