#pragma once
// Internal: the autograd record of the fused scaled_dot_product_attention (Note [Fused
// attention] in kernels/cpu/attention.cpp). The op computes its output and the attention
// weights with the fused kernel, then calls this when autograd::needs_grad(q, k, v) holds.

#include "ember/core/tensor.h"
#include "ember/kernels/cpu/attention.h"

namespace ember::autograd::fn {

// t ([..., rows, cols]) expanded to batch sizes `batch` and laid out as the fused kernel
// reads it (last stride 1, a valid row stride): a view when it can be, else a copy.
Tensor attention_operand(const Tensor& t, IntArrayRef batch);

// A tensor of `sizes` laid out as the fused kernel's outputs are: 4-d [B, H, L, E] is stored
// as [B, L, H, E] (so the usual transpose(1, 2).reshape(B, L, H * E) after attention, and
// its backward, are views); other ranks contiguous.
Tensor empty_attention_output(IntArrayRef sizes, DType dtype);

// ScaledDotProductAttentionBackward0 for out = attention(query, key, value) computed by the
// fused kernel on the inputs expanded to the batch sizes `batch`; mask: the additive float
// mask it added (undefined: none); probs [batch, L, S]: the weights it saved. Gradients
// flow to query, key and value (summed over broadcast dims).
void scaled_dot_product_attention(const Tensor& out, const Tensor& query, const Tensor& key, const Tensor& value,
                                  IntArrayRef batch, const Tensor& mask, const Tensor& probs,
                                  const kernels::cpu::AttentionShape& shape);

}  // namespace ember::autograd::fn
