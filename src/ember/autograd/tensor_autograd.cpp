// Tensor's autograd methods (declared in core/tensor.h).

#include <memory>

#include "ember/autograd/autograd.h"
#include "ember/autograd/autograd_meta.h"
#include "ember/autograd/record.h"
#include "ember/core/check.h"
#include "ember/core/warning.h"

namespace ember {

using autograd::AutogradMeta;

namespace {
const std::shared_ptr<autograd::Node> kNoNode;
const Tensor kNoTensor;

void check_defined(const Tensor& t, const char* op) {
  EMBER_CHECK(t.defined(), "[", op, "] called on an undefined tensor");
}
}  // namespace

bool Tensor::requires_grad() const {
  check_defined(*this, "requires_grad");
  return impl_->requires_grad();
}

Tensor& Tensor::requires_grad_(bool requires_grad) const {
  check_defined(self_mut(), "requires_grad_");
  EMBER_CHECK(!requires_grad || is_floating_point(),
              "[requires_grad_] Only Tensors of floating point and complex dtype can require gradients (ember has "
              "no complex dtypes), got ", dtype(), "; convert it with .to(ember::kFloat32) first");
  AutogradMeta* meta = impl_->autograd_meta();
  if (meta && meta->grad_fn) {
    EMBER_CHECK(requires_grad, "[requires_grad_] you can only change requires_grad flags of leaf variables. If "
                "you want to use a computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().");
    return self_mut();
  }
  EMBER_CHECK(!requires_grad || !impl_->is_inference() || InferenceMode::is_enabled(),
              "[requires_grad_] Setting requires_grad=True on inference tensor outside InferenceMode is not allowed. "
              "clone() it outside InferenceMode first");
  if (requires_grad || meta) impl_->ensure_autograd_meta().requires_grad = requires_grad;
  return self_mut();
}

bool Tensor::is_leaf() const {
  check_defined(*this, "is_leaf");
  const AutogradMeta* meta = impl_->autograd_meta();
  return !meta || !meta->grad_fn;
}

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  check_defined(*this, "grad_fn");
  AutogradMeta* meta = impl_->autograd_meta();
  if (meta && !meta->grad_fn && impl_->view_base()) autograd::check_mode_view_not_stale(*this);
  if (!meta || !meta->grad_fn) return kNoNode;
  if (impl_->view_base()) (void)autograd::gradient_edge(*this);  // refreshes a stale view history
  return meta->grad_fn;
}

uint32_t Tensor::output_nr() const {
  check_defined(*this, "output_nr");
  const AutogradMeta* meta = impl_->autograd_meta();
  return meta ? meta->output_nr : 0;
}

const Tensor& Tensor::grad() const {
  check_defined(*this, "grad");
  const AutogradMeta* meta = impl_->autograd_meta();
  if (meta && meta->grad_fn && !meta->retains_grad && !meta->grad.defined()) {
    // A silent failure PyTorch also names: backward never fills a non-leaf's grad().
    warn("[grad] The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
         "attribute won't be populated during backward(). Call .retain_grad() on the non-leaf Tensor if you want "
         "its gradient, or read the leaf's .grad() instead");
  }
  return meta ? meta->grad : kNoTensor;
}

Tensor& Tensor::mutable_grad() const {
  check_defined(self_mut(), "mutable_grad");
  return impl_->ensure_autograd_meta().grad;
}

void Tensor::set_grad(const Tensor& grad) {
  check_defined(*this, "set_grad");
  if (grad.defined()) {
    EMBER_CHECK(grad.sizes() == sizes() && grad.dtype() == dtype(), "[set_grad] assigned grad has shape/dtype ",
                grad.sizes(), " ", grad.dtype(), " but the tensor has ", sizes(), " ", dtype());
  }
  impl_->ensure_autograd_meta().grad = grad;
}

void Tensor::retain_grad() const {
  check_defined(*this, "retain_grad");
  EMBER_CHECK(requires_grad(), "[retain_grad] can't retain_grad on Tensor that has requires_grad=false");
  AutogradMeta& meta = impl_->ensure_autograd_meta();
  if (!meta.grad_fn || meta.retains_grad) return;  // leaves keep their grad anyway
  meta.retains_grad = true;
  // The hook must not keep this tensor alive (the tensor owns grad_fn, which owns the
  // hook), so it finds the tensor through the meta's back pointer.
  TensorImpl* self = impl_.get();
  auto alive = std::make_shared<bool>(true);
  meta.retain_alive = alive;
  std::weak_ptr<bool> weak = alive;
  meta.retain_hook_id = meta.grad_fn->add_pre_hook(meta.output_nr, [self, weak](const Tensor& g) -> Tensor {
    if (weak.expired()) return Tensor();
    AutogradMeta& m = self->ensure_autograd_meta();
    if (!m.grad.defined()) {
      m.grad = GradMode::is_enabled() ? g.clone() : g.detach().clone();
    } else if (GradMode::is_enabled()) {
      m.grad = m.grad + g;
    } else {
      m.grad.add_(g);
    }
    return Tensor();
  });
}

bool Tensor::retains_grad() const {
  check_defined(*this, "retains_grad");
  const AutogradMeta* meta = impl_->autograd_meta();
  return meta && meta->retains_grad;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                      const std::optional<std::vector<Tensor>>& inputs) const {
  check_defined(*this, "backward");
  EMBER_CHECK(!inputs || !inputs->empty(), "[backward] 'inputs' argument to backward() cannot be empty; "
              "leave it out to accumulate into every leaf, or name the tensors to accumulate into");
  autograd::backward({*this}, {gradient}, retain_graph, create_graph, inputs ? *inputs : std::vector<Tensor>{});
}

RemovableHandle Tensor::register_hook_impl(std::function<Tensor(const Tensor&)> hook) const {
  check_defined(*this, "register_hook");
  EMBER_CHECK(requires_grad(), "[register_hook] cannot register a hook on a tensor that doesn't require gradient");
  AutogradMeta& meta = impl_->ensure_autograd_meta();
  std::function<void()> remover;
  if (!meta.grad_fn) {
    meta.leaf_hooks.push_back(std::move(hook));
    const size_t slot = meta.leaf_hooks.size() - 1;
    TensorImpl* self = impl_.get();
    auto alive = meta.hooks_alive ? meta.hooks_alive : (meta.hooks_alive = std::make_shared<bool>(true));
    std::weak_ptr<bool> weak = alive;
    remover = [self, weak, slot] {
      if (weak.expired()) return;
      AutogradMeta* m = self->autograd_meta();
      if (m && slot < m->leaf_hooks.size()) m->leaf_hooks[slot] = nullptr;
    };
  } else {
    std::shared_ptr<autograd::Node> fn = grad_fn();
    const int id = fn->add_pre_hook(meta.output_nr, std::move(hook));
    std::weak_ptr<autograd::Node> weak = fn;
    remover = [weak, id] {
      if (auto n = weak.lock()) n->remove_pre_hook(id);
    };
  }
  meta.hook_removers.push_back(remover);
  return RemovableHandle(std::move(remover));
}

void Tensor::remove_hook(unsigned position) const {
  check_defined(*this, "remove_hook");
  AutogradMeta* meta = impl_->autograd_meta();
  EMBER_CHECK(meta && position < meta->hook_removers.size() && meta->hook_removers[position],
              "[remove_hook] Invalid index: this tensor has no hook at position ", position, " (",
              meta ? meta->hook_removers.size() : 0,
              " registered by register_hook, in order from 0; a removed hook's position stays empty)");
  std::exchange(meta->hook_removers[position], nullptr)();
}

RemovableHandle Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const {
  check_defined(*this, "register_post_accumulate_grad_hook");
  EMBER_CHECK(requires_grad() && is_leaf(),
              "[register_post_accumulate_grad_hook] post accumulate grad hooks can only be registered on leaf "
              "tensors that require grad");
  AutogradMeta& meta = impl_->ensure_autograd_meta();
  meta.post_accumulate_hooks.push_back(std::move(hook));
  const size_t slot = meta.post_accumulate_hooks.size() - 1;
  TensorImpl* self = impl_.get();
  auto alive = meta.hooks_alive ? meta.hooks_alive : (meta.hooks_alive = std::make_shared<bool>(true));
  std::weak_ptr<bool> weak = alive;
  return RemovableHandle([self, weak, slot] {
    if (weak.expired()) return;
    AutogradMeta* m = self->autograd_meta();
    if (m && slot < m->post_accumulate_hooks.size()) m->post_accumulate_hooks[slot] = nullptr;
  });
}

Tensor& Tensor::detach_() const {
  check_defined(self_mut(), "detach_");
  AutogradMeta* meta = impl_->autograd_meta();
  if (meta) {
    meta->grad_fn.reset();
    meta->requires_grad = false;
    meta->output_nr = 0;
  }
  impl_->set_view_base(IntrusivePtr<TensorImpl>());
  return self_mut();
}

}  // namespace ember
