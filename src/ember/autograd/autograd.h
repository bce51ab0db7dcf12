#pragma once
// The autograd API: backward and grad over the recorded graph, modes, custom functions,
// gradcheck, checkpointing. See docs/autograd.md.

#include <optional>
#include <vector>

#include "ember/autograd/anomaly_mode.h"
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

}  // namespace ember::autograd
