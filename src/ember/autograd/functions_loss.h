#pragma once
// Internal: the autograd record of the fused cross entropy (Note [Fused cross entropy] in
// kernels/cpu/reduce.cpp), called by nn::functional::cross_entropy. Not installed API.

#include <cstdint>

#include "ember/core/tensor.h"

namespace ember::autograd::fn {

// CrossEntropyLossBackward0: loss[r] = lse[r] - logits[r, target[r]] per row (0 where
// target is ignore_index), logits [rows, classes], target int64 [rows], lse [rows].
void cross_entropy(const Tensor& loss, const Tensor& logits, const Tensor& target, const Tensor& lse,
                   int64_t ignore_index);

}  // namespace ember::autograd::fn
