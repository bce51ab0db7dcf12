#pragma once
// nn::functional: the stateless forms of the layers (torch.nn.functional). Module
// classes call these; users can too: `namespace F = ember::nn::functional;`.

#include <optional>
#include <string>

#include "ember/core/tensor.h"
#include "ember/ops/conv.h"
#include "ember/ops/pool.h"

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

// ---- normalisation, embedding, bilinear (nn/functional_norm.cpp) ----
// Batch norm over dim 1 of an [N, C, *] input. training: normalise with the batch's mean
// and biased variance, and update running_mean/running_var (if given) in place under
// no-grad: running = (1 - momentum) * running + momentum * batch, with the unbiased
// variance. Otherwise normalise with the running statistics (which must be given).
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = {}, const Tensor& bias = {}, bool training = false,
                  double momentum = 0.1, double eps = 1e-5);
// Normalises over the trailing dims named by normalized_shape; weight/bias have that shape.
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
// Normalises each group of C / num_groups channels of an [N, C, *] input; weight/bias: [C].
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5);
// Rows of weight [num, dim] picked by integer indices: output sizes input.sizes() + [dim].
// The row padding_idx gets no gradient. With max_norm, the rows read whose norm_type-norm
// exceeds max_norm are first rescaled to max_norm in place (as PyTorch).
Tensor embedding(const Tensor& input, const Tensor& weight, std::optional<int64_t> padding_idx = std::nullopt,
                 std::optional<double> max_norm = std::nullopt, double norm_type = 2.0);
// y = x1^T W[o] x2 + b[o] over the last dims: x1 [*, in1], x2 [*, in2], W [out, in1, in2].
Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight, const Tensor& bias = {});

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
// ---- convolution and pooling (ops/conv.h, ops/pool.h): the same functions as ember:: ----
using ember::adaptive_avg_pool2d;
using ember::avg_pool1d;
using ember::avg_pool2d;
using ember::conv1d;
using ember::conv2d;
using ember::conv_transpose1d;
using ember::conv_transpose2d;
using ember::max_pool1d;
using ember::max_pool2d;
using ember::max_pool2d_with_indices;

}  // namespace ember::nn::functional
