#pragma once
// Per-tensor autograd state. Only tensors that take part in autograd carry one, so plain
// tensors pay a null pointer.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/core/tensor.h"

namespace ember::autograd {

class Node;

struct AutogradMeta {
  // For a leaf: the user's flag. For a non-leaf: true (it has a grad_fn).
  bool requires_grad = false;
  bool retains_grad = false;
  uint32_t output_nr = 0;
  // The accumulated gradient of a leaf (or of a non-leaf with retain_grad()).
  Tensor grad;
  // The node that produced this tensor; null for leaves.
  std::shared_ptr<Node> grad_fn;
  // A leaf's AccumulateGrad node, shared by every graph that uses the leaf while one
  // is alive.
  std::weak_ptr<Node> grad_accumulator;
  // Hooks registered on a leaf (run by AccumulateGrad before accumulating), and
  // post-accumulate-grad hooks (run after); removed hooks leave an empty slot.
  std::vector<std::function<Tensor(const Tensor&)>> leaf_hooks;
  std::vector<std::function<void(const Tensor&)>> post_accumulate_hooks;
  // What removes each hook register_hook added, by registration position (libtorch's
  // remove_hook(unsigned)); a removed one is empty.
  std::vector<std::function<void()>> hook_removers;
  // retain_grad's hook id on grad_fn (-1: none). Hooks that refer back to this tensor
  // hold weak references to these flags, which die with the tensor.
  int retain_hook_id = -1;
  std::shared_ptr<bool> retain_alive;
  std::shared_ptr<bool> hooks_alive;
  // For a view: the version of the shared storage when grad_fn was last set (or, for a
  // view taken with grad mode off, when it was taken); an in-place change through another
  // alias makes it stale.
  uint32_t attr_version = 0;
  // A view taken with grad mode off of a tensor requiring grad (it has requires_grad but no
  // grad_fn): whether InferenceMode was on, for the error that names the mode when the view
  // is later modified in place, or its base is, in grad mode (libtorch's CreationMeta).
  bool made_in_inference_mode = false;
  // For a view made by a custom op without a derivative (compat/library.h): the op's name.
  // Modifying such a view in place, or its base (which would rewrite the view's history),
  // is refused: no backward could route gradients through the op.
  std::string view_forbids_inplace;
  // Backward passes accumulated into grad since it was created or cleared, and grad's
  // version after the last one (Note [Counting accumulations], node.cpp).
  uint32_t grad_accumulations = 0;
  uint32_t grad_version = 0;
};

}  // namespace ember::autograd
