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
