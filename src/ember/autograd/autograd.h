#pragma once
// The autograd API: backward and grad over the recorded graph, modes, custom functions,
// gradcheck, checkpointing. See docs/autograd.md.

#include <functional>
#include <optional>
#include <vector>

#include "ember/autograd/anomaly_mode.h"
#include "ember/autograd/custom_function.h"
#include "ember/autograd/grad_mode.h"
#include "ember/autograd/gradcheck.h"
#include "ember/autograd/node.h"
#include "ember/core/tensor.h"

namespace ember::autograd {

// Accumulates d(sum of tensors * grad_tensors)/d(leaf) into every leaf's grad(). An
// omitted grad_tensors entry is ones for a one-element tensor (an error otherwise).
// retain_graph defaults to create_graph. With `inputs`, only those accumulate.
void backward(const variable_list& tensors, const variable_list& grad_tensors = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
              const variable_list& inputs = {});

// Returns d(outputs)/d(inputs) without touching any grad(). An input the outputs do not
// depend on is an error unless allow_unused (then its result is undefined).
variable_list grad(const variable_list& outputs, const variable_list& inputs,
                   const variable_list& grad_outputs = {}, std::optional<bool> retain_graph = std::nullopt,
                   bool create_graph = false, bool allow_unused = false);

// Activation checkpointing: runs fn(inputs) without recording a graph and keeps only the
// inputs; backward runs fn again (with the default generator's state as it was in the
// forward, so dropout makes the same mask) and back-propagates through that rerun.
// Trades compute for memory. Tensors fn uses that are not among `inputs` (e.g. module
// parameters) get their grad() accumulated by the rerun's backward, so use it with
// backward(); autograd::grad() sees only the gradients of `inputs`.
using CheckpointFn = std::function<variable_list(const variable_list&)>;
variable_list checkpoint(const CheckpointFn& fn, const variable_list& inputs, bool preserve_rng_state = true);

// libtorch spells these torch::autograd::AutoGradMode / GradMode too.
using ::ember::AutoGradMode;
// libtorch's argument ranges of a custom function ({begin, end}).
using IndexRange = std::pair<size_t, size_t>;
// A tensor sharing data's storage, without history, requiring grad as asked.
inline Tensor make_variable(const Tensor& data, bool requires_grad = false) {
  Tensor v = data.detach();
  if (requires_grad) v.requires_grad_(true);
  return v;
}

}  // namespace ember::autograd
