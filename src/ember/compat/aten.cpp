#include "ember/compat/aten.h"

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/nn/functional.h"
#include "ember/nn/functional_extra.h"
#include "ember/ops/pointwise.h"

namespace ember::aten {
namespace F = ::ember::nn::functional;

Tensor max(const Tensor& a, const Tensor& b) { return a.maximum(b); }
Tensor min(const Tensor& a, const Tensor& b) { return a.minimum(b); }
Tensor max(const Tensor& t) { return t.max(); }
Tensor min(const Tensor& t) { return t.min(); }
std::tuple<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim) { return t.max(dim, keepdim); }
std::tuple<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim) { return t.min(dim, keepdim); }

Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps, bool /*cudnn_enable*/) {
  return F::layer_norm(input, normalized_shape, weight, bias, eps);
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps,
                  bool /*cudnn_enabled*/) {
  return F::group_norm(input, num_groups, weight, bias, eps);
}

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx, bool scale_grad_by_freq,
                 bool sparse) {
  F::EmbeddingFuncOptions options;
  if (padding_idx != -1) options.padding_idx(padding_idx);
  options.scale_grad_by_freq(scale_grad_by_freq).sparse(sparse);
  return F::embedding(indices, weight, options);
}

std::tuple<Tensor, Tensor, Tensor, Tensor> embedding_bag(const Tensor& weight, const Tensor& indices,
                                                         const Tensor& offsets, bool scale_grad_by_freq,
                                                         int64_t mode, bool sparse,
                                                         const Tensor& per_sample_weights,
                                                         bool include_last_offset,
                                                         std::optional<int64_t> padding_idx) {
  EMBER_CHECK(mode >= 0 && mode <= 2, "[embedding_bag] mode must be 0 (sum), 1 (mean) or 2 (max), got ", mode);
  static const char* const names[] = {"sum", "mean", "max"};
  F::EmbeddingBagFuncOptions options;
  options.offsets(offsets)
      .scale_grad_by_freq(scale_grad_by_freq)
      .mode(names[mode])
      .sparse(sparse)
      .per_sample_weights(per_sample_weights)
      .include_last_offset(include_last_offset)
      .padding_idx(padding_idx);
  return {F::embedding_bag(indices, weight, options), Tensor(), Tensor(), Tensor()};
}

Tensor elu(const Tensor& input, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
  const double a = alpha.toDouble(), s = scale.toDouble(), is = input_scale.toDouble();
  if (s == 1.0 && is == 1.0) return F::elu(input, F::ELUFuncOptions().alpha(a));
  const Tensor negative = ((input * is).exp() - 1) * a;
  return where(input > 0, input, negative) * s;
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
  return F::pairwise_distance(x1, x2, F::PairwiseDistanceFuncOptions().p(p).eps(eps).keepdim(keepdim));
}

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps) {
  return F::cosine_similarity(x1, x2, F::CosineSimilarityFuncOptions().dim(dim).eps(eps));
}
Tensor t(const Tensor& self) { return self.t(); }
Tensor clone(const Tensor& self) { return self.clone(); }
Tensor index(const Tensor& self, const std::vector<Tensor>& indices) { return self.index(indices); }
Tensor& index_put_(const Tensor& self, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) {
  return self.index_put_(indices, values, accumulate);
}
Tensor& mul_out(Tensor& out, const Tensor& a, const Tensor& b) {
  // As libtorch: an out= form records no graph, so it refuses inputs that would need one.
  EMBER_CHECK(!is_grad_enabled() || !(a.requires_grad() || b.requires_grad() || out.requires_grad()),
              "[mul_out] out=... arguments don't support automatic differentiation, but one of the arguments "
              "requires grad; use mul(a, b) (it records the graph), or call mul_out under NoGradGuard");
  const Tensor result = a.mul(b);
  if (out.sizes() != result.sizes()) out.resize_(result.sizes());
  return out.copy_(result);
}

Tensor _reshape_alias(const Tensor& self, IntArrayRef size, IntArrayRef stride) {
  EMBER_CHECK(size.size() == stride.size(), "[_reshape_alias] sizes ", size, " and strides ", stride,
              " must have the same length");
  return self.as_strided(size, stride, self.storage_offset());
}

namespace native {
Tensor _upsample_nearest_exact2d(const Tensor& input, std::optional<std::vector<int64_t>> output_size,
                                 std::optional<std::vector<double>> scale_factors) {
  EMBER_CHECK(input.dim() == 4, "[_upsample_nearest_exact2d] expected a 4-D [N, C, H, W] input, got ",
              input.sizes());
  EMBER_CHECK(output_size.has_value() != scale_factors.has_value(),
              "[_upsample_nearest_exact2d] give exactly one of output_size and scale_factors");
  F::InterpolateFuncOptions o;
  o.mode("nearest-exact");
  if (output_size) o.size(*output_size);
  if (scale_factors) o.scale_factor(*scale_factors);
  return F::interpolate(input, o);
}

namespace {
Tensor upsample_2d_aa(const char* op, const std::string& mode, const Tensor& input,
                      std::optional<std::vector<int64_t>> output_size, bool align_corners,
                      std::optional<std::vector<double>> scale_factors) {
  EMBER_CHECK(input.dim() == 4, "[", op, "] expected a 4-D [N, C, H, W] input, got ", input.sizes());
  EMBER_CHECK(output_size.has_value() != scale_factors.has_value(),
              "[", op, "] give exactly one of output_size and scale_factors");
  F::InterpolateFuncOptions o;
  o.mode(mode).align_corners(align_corners).antialias(true);
  if (output_size) o.size(*output_size);
  if (scale_factors) o.scale_factor(*scale_factors);
  return F::interpolate(input, o);
}
}  // namespace

Tensor _upsample_bilinear2d_aa(const Tensor& input, std::optional<std::vector<int64_t>> output_size,
                               bool align_corners, std::optional<std::vector<double>> scale_factors) {
  return upsample_2d_aa("_upsample_bilinear2d_aa", "bilinear", input, std::move(output_size), align_corners,
                        std::move(scale_factors));
}

Tensor _upsample_bicubic2d_aa(const Tensor& input, std::optional<std::vector<int64_t>> output_size,
                              bool align_corners, std::optional<std::vector<double>> scale_factors) {
  return upsample_2d_aa("_upsample_bicubic2d_aa", "bicubic", input, std::move(output_size), align_corners,
                        std::move(scale_factors));
}

bool is_nonzero(const Tensor& t) {
  EMBER_CHECK(t.numel() == 1, "[is_nonzero] expected a tensor with one element, got ", t.numel(),
              " elements; reduce it first (e.g. .any() or .sum())");
  return t.item().toDouble() != 0.0;
}
}  // namespace native

}  // namespace ember::aten
