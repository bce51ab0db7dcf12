#pragma once
// libtorch's free functions that have no counterpart of the same shape in ember's own
// namespace (at::max(a, b), at::layer_norm(input, shape, weight, bias, eps), ...). They are
// reached only through ember/torch.h's torch:: and at:: namespaces, so that ember's own
// namespace keeps std::max/std::min visible to unqualified calls.
#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include "ember/core/tensor.h"

namespace ember::aten {

// Elementwise maximum / minimum of two tensors (broadcast), as torch::max(a, b).
Tensor max(const Tensor& a, const Tensor& b);
Tensor min(const Tensor& a, const Tensor& b);
// The largest / smallest element, and the (values, indices) form along a dim.
Tensor max(const Tensor& t);
Tensor min(const Tensor& t);
std::tuple<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim = false);

Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5, bool cudnn_enable = true);
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5, bool cudnn_enabled = true);
// at::embedding takes the weight first; padding_idx -1 means none.
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx = -1,
                 bool scale_grad_by_freq = false, bool sparse = false);
// at::embedding_bag: mode 0 sum, 1 mean, 2 max. Returns (output, offset2bag, bag_size,
// max_indices); only the output is computed here, the other three are empty tensors.
std::tuple<Tensor, Tensor, Tensor, Tensor> embedding_bag(
    const Tensor& weight, const Tensor& indices, const Tensor& offsets, bool scale_grad_by_freq = false,
    int64_t mode = 0, bool sparse = false, const Tensor& per_sample_weights = {},
    bool include_last_offset = false, std::optional<int64_t> padding_idx = std::nullopt);
// scale * (x > 0 ? x : alpha * (exp(x * input_scale) - 1)).
Tensor elu(const Tensor& input, const Scalar& alpha = 1, const Scalar& scale = 1, const Scalar& input_scale = 1);
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p = 2, double eps = 1e-6, bool keepdim = false);

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1, double eps = 1e-8);
// Method forms as functions: at::t(x), at::clone(x), at::index(x, {i}), at::index_put_(x, {i}, v).
Tensor t(const Tensor& self);
Tensor clone(const Tensor& self);
Tensor index(const Tensor& self, const std::vector<Tensor>& indices);
Tensor& index_put_(const Tensor& self, const std::vector<Tensor>& indices, const Tensor& values,
                   bool accumulate = false);
// A view with the given sizes and strides over self's storage (from its storage offset), as
// libtorch's private at::_reshape_alias; differentiable like as_strided.
Tensor _reshape_alias(const Tensor& self, IntArrayRef size, IntArrayRef stride);
// out = a * b, written into out (resized when its shape differs).
Tensor& mul_out(Tensor& out, const Tensor& a, const Tensor& b);

namespace native {
// True when the one-element tensor is not zero (at::native::is_nonzero).
bool is_nonzero(const Tensor& t);
// F::interpolate(input, mode kNearestExact) for a 4-D input, given output sizes or scale factors
// (exactly one of them), as at::native::_upsample_nearest_exact2d.
Tensor _upsample_nearest_exact2d(const Tensor& input, std::optional<std::vector<int64_t>> output_size,
                                 std::optional<std::vector<double>> scale_factors);
// interpolate(mode bilinear / bicubic, antialias) with output_size or scale_factors, as
// at::native::_upsample_bilinear2d_aa and _upsample_bicubic2d_aa.
Tensor _upsample_bilinear2d_aa(const Tensor& input, std::optional<std::vector<int64_t>> output_size,
                               bool align_corners, std::optional<std::vector<double>> scale_factors);
Tensor _upsample_bicubic2d_aa(const Tensor& input, std::optional<std::vector<int64_t>> output_size,
                              bool align_corners, std::optional<std::vector<double>> scale_factors);
}  // namespace native

}  // namespace ember::aten
