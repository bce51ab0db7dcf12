#pragma once
// Internal: fused scaled dot-product attention on the CPU (float32, float64), forward and
// backward, for nn::functional::scaled_dot_product_attention (Note [Fused attention] in
// attention.cpp). Callers have checked shapes and dtypes.

#include <cstdint>

#include "ember/core/tensor.h"

namespace ember::kernels::cpu {

struct AttentionShape {
  int64_t L = 0, S = 0, E = 0, Ev = 0;  // query length, key length, q/k feature size, v feature size
  double scale = 1;
  bool causal = false;  // query i sees keys 0..i (top-left aligned, as ones(L, S).triu(1) masks)
};

// Each matrix argument is [batch..., rows, cols] with the same batch sizes (stride-0 batch
// dims allowed), its last stride 1 and a row stride of at least cols: q [.., L, E], k [.., S,
// E], v [.., S, Ev], out [.., L, Ev] (written). mask: undefined, or an additive float mask
// [.., L, S] of q's dtype with any strides. probs: undefined, or a contiguous [batch, L, S]
// that receives the attention weights (zero where masked by `causal`) for the backward.
void attention_forward(const Tensor& out, const Tensor& probs, const Tensor& q, const Tensor& k, const Tensor& v,
                       const Tensor& mask, const AttentionShape& s);

// The gradients of attention_forward from its probs: dq [.., L, E], dk [.., S, E], dv [.., S,
// Ev] (each written; undefined: not wanted), with the layout rules above; dout [.., L, Ev].
void attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout, const Tensor& probs,
                        const Tensor& q, const Tensor& k, const Tensor& v, const AttentionShape& s);

}  // namespace ember::kernels::cpu
