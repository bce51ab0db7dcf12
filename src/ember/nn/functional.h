#pragma once
// nn::functional: the stateless forms of the layers (torch.nn.functional). Module
// classes call these; users can too: `namespace F = ember::nn::functional;`.

#include <optional>
#include <string>

#include "ember/core/tensor.h"

namespace ember::nn::functional {

// y = x W^T + b over the last dim of x (W: [out, in]; b optional).
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});
Tensor relu(const Tensor& input);
Tensor leaky_relu(const Tensor& input, double negative_slope = 0.01);
Tensor gelu(const Tensor& input, const std::string& approximate = "none");
Tensor silu(const Tensor& input);
Tensor tanh(const Tensor& input);
Tensor sigmoid(const Tensor& input);
Tensor softmax(const Tensor& input, int64_t dim);
Tensor log_softmax(const Tensor& input, int64_t dim);
// Zeroes elements with probability p and scales the rest by 1/(1-p) when training;
// the identity otherwise.
Tensor dropout(const Tensor& input, double p = 0.5, bool training = true);

}  // namespace ember::nn::functional

// ---- attention (nn/modules/attention.cpp) ----
namespace ember::nn::functional {
// softmax(q k^T / sqrt(E) + mask) v over the last two dims: query [..., L, E], key
// [..., S, E], value [..., S, Ev] -> [..., L, Ev]; batch dims broadcast. As PyTorch 2.x:
// a bool attn_mask marks the positions that TAKE PART (true = attend; the opposite of
// MultiheadAttention's masks), a float mask is added; is_causal masks keys j > i (do not
// pass both). dropout_p applies to the attention weights.
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask = {}, double dropout_p = 0.0, bool is_causal = false);
}  // namespace ember::nn::functional
