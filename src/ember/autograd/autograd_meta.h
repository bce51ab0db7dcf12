#pragma once
// Per-tensor autograd state. Only tensors that take part in autograd carry one, so plain
// tensors pay a null pointer. The autograd issue extends this with grad, grad_fn, hooks.

namespace ember::autograd {

struct AutogradMeta {
  bool requires_grad = false;
};

}  // namespace ember::autograd
