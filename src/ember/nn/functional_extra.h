#pragma once
// nn::functional, continued: the functional forms with libtorch's option structs
// (F::conv2d(x, w, F::Conv2dFuncOptions().stride(2)), F::pad(x, F::PadFuncOptions({1, 1})
// .mode(torch::kReflect)), ...) and the functions libtorch has beyond the core ones:
// 3-D convolution and pooling, adaptive/LP/fractional pooling, padding modes, fold/unfold,
// interpolation, more activations, distances and losses. They are built from ember's
// differentiable ops, so their gradients come from autograd.

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ember/nn/functional_options.h"
#include "ember/nn/loss.h"
#include "ember/nn/modules/pooling.h"

namespace ember::nn::functional {

// ---- option structs under their functional names ----
template <size_t D>
struct ConvFuncOptions {
  EMBER_NN_ARG(Tensor, bias);
  EMBER_NN_ARG(ExpandingArray<D>, stride) = 1;
  EMBER_NN_ARG(ExpandingArray<D>, dilation) = 1;
  EMBER_NN_ARG(int64_t, groups) = 1;

 public:
  ConvFuncOptions& padding(ExpandingArray<D> p) {
    padding_ = p;
    padding_str_.clear();
    return *this;
  }
  ConvFuncOptions& padding(int64_t p) { return padding(ExpandingArray<D>(p)); }
  ConvFuncOptions& padding(std::initializer_list<int64_t> p) { return padding(ExpandingArray<D>(p)); }
  // "same" or "valid" (also the tags torch::kSame / kValid where a header defines them).
  ConvFuncOptions& padding(const std::string& mode) {
    padding_str_ = mode;
    padding_ = ExpandingArray<D>(0);
    return *this;
  }
  ConvFuncOptions& padding(const char* mode) { return padding(std::string(mode)); }
  const ExpandingArray<D>& padding() const { return padding_; }
  const std::string& padding_str() const { return padding_str_; }

 private:
  ExpandingArray<D> padding_ = 0;
  std::string padding_str_;
};
template <size_t D>
struct ConvTransposeFuncOptions {
  EMBER_NN_ARG(Tensor, bias);
  EMBER_NN_ARG(ExpandingArray<D>, stride) = 1;
  EMBER_NN_ARG(ExpandingArray<D>, padding) = 0;
  EMBER_NN_ARG(ExpandingArray<D>, output_padding) = 0;
  EMBER_NN_ARG(int64_t, groups) = 1;
  EMBER_NN_ARG(ExpandingArray<D>, dilation) = 1;
};
using Conv1dFuncOptions = ConvFuncOptions<1>;
using Conv2dFuncOptions = ConvFuncOptions<2>;
using Conv3dFuncOptions = ConvFuncOptions<3>;
using ConvTranspose1dFuncOptions = ConvTransposeFuncOptions<1>;
using ConvTranspose2dFuncOptions = ConvTransposeFuncOptions<2>;
using ConvTranspose3dFuncOptions = ConvTransposeFuncOptions<3>;

using MaxPool1dFuncOptions = MaxPoolOptions;
using MaxPool2dFuncOptions = MaxPoolOptions;
using MaxPool3dFuncOptions = MaxPoolOptions;
using AvgPool1dFuncOptions = AvgPoolOptions;
using AvgPool2dFuncOptions = AvgPoolOptions;
using AvgPool3dFuncOptions = AvgPoolOptions;
using AdaptiveMaxPool1dFuncOptions = AdaptivePoolOptions;
using AdaptiveMaxPool2dFuncOptions = AdaptivePoolOptions;
using AdaptiveMaxPool3dFuncOptions = AdaptivePoolOptions;
using AdaptiveAvgPool1dFuncOptions = AdaptivePoolOptions;
using AdaptiveAvgPool2dFuncOptions = AdaptivePoolOptions;
using AdaptiveAvgPool3dFuncOptions = AdaptivePoolOptions;
using LPPool1dFuncOptions = LPPool1dOptions;
using LPPool2dFuncOptions = LPPool2dOptions;
using FractionalMaxPool2dFuncOptions = FractionalMaxPool2dOptions;
using FractionalMaxPool3dFuncOptions = FractionalMaxPool3dOptions;
template <size_t D>
struct MaxUnpoolFuncOptions {
  MaxUnpoolFuncOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  EMBER_NN_ARG(ExpandingArray<D>, kernel_size);
  EMBER_NN_ARG(ExpandingArray<D>, stride);
  EMBER_NN_ARG(ExpandingArray<D>, padding) = 0;
  EMBER_NN_ARG(std::optional<std::vector<int64_t>>, output_size) = std::nullopt;
};
using MaxUnpool1dFuncOptions = MaxUnpoolFuncOptions<1>;
using MaxUnpool2dFuncOptions = MaxUnpoolFuncOptions<2>;
using MaxUnpool3dFuncOptions = MaxUnpoolFuncOptions<3>;

using ELUFuncOptions = ELUOptions;
using SELUFuncOptions = SELUOptions;
using CELUFuncOptions = CELUOptions;
using GLUFuncOptions = GLUOptions;
using GELUFuncOptions = GELUOptions;
using HardshrinkFuncOptions = HardshrinkOptions;
using SoftshrinkFuncOptions = SoftshrinkOptions;
using HardtanhFuncOptions = HardtanhOptions;
using LeakyReLUFuncOptions = LeakyReLUOptions;
using ReLUFuncOptions = ReLUOptions;
using ReLU6FuncOptions = ReLU6Options;
struct RReLUFuncOptions {
  EMBER_NN_ARG(double, lower) = 1.0 / 8.0;
  EMBER_NN_ARG(double, upper) = 1.0 / 3.0;
  EMBER_NN_ARG(bool, training) = false;
  EMBER_NN_ARG(bool, inplace) = false;
};
using SoftplusFuncOptions = SoftplusOptions;
using ThresholdFuncOptions = ThresholdOptions;
struct SoftmaxFuncOptions {
  SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  EMBER_NN_ARG(int64_t, dim);
  EMBER_NN_ARG(std::optional<DType>, dtype) = std::nullopt;
};
using SoftminFuncOptions = SoftmaxFuncOptions;
using LogSoftmaxFuncOptions = SoftmaxFuncOptions;
struct GumbelSoftmaxFuncOptions {
  EMBER_NN_ARG(double, tau) = 1.0;
  EMBER_NN_ARG(bool, hard) = false;
  EMBER_NN_ARG(int, dim) = -1;
};
struct DropoutFuncOptions {
  EMBER_NN_ARG(double, p) = 0.5;
  EMBER_NN_ARG(bool, training) = true;
  EMBER_NN_ARG(bool, inplace) = false;
};
using Dropout2dFuncOptions = DropoutFuncOptions;
using Dropout3dFuncOptions = DropoutFuncOptions;
struct AlphaDropoutFuncOptions {
  EMBER_NN_ARG(double, p) = 0.5;
  EMBER_NN_ARG(bool, training) = false;
  EMBER_NN_ARG(bool, inplace) = false;
};
using FeatureAlphaDropoutFuncOptions = AlphaDropoutFuncOptions;

using CosineSimilarityFuncOptions = CosineSimilarityOptions;
using PairwiseDistanceFuncOptions = PairwiseDistanceOptions;

using L1LossFuncOptions = L1LossOptions;
using MSELossFuncOptions = MSELossOptions;
using SoftMarginLossFuncOptions = SoftMarginLossOptions;
using MultilabelMarginLossFuncOptions = MultiLabelMarginLossOptions;
using MultiLabelMarginLossFuncOptions = MultiLabelMarginLossOptions;
using BinaryCrossEntropyFuncOptions = BCELossOptions;
using BinaryCrossEntropyWithLogitsFuncOptions = BCEWithLogitsLossOptions;
using KLDivFuncOptions = KLDivLossOptions;
using SmoothL1LossFuncOptions = SmoothL1LossOptions;
using HuberLossFuncOptions = HuberLossOptions;
using HingeEmbeddingLossFuncOptions = HingeEmbeddingLossOptions;
using MultiMarginLossFuncOptions = MultiMarginLossOptions;
using CosineEmbeddingLossFuncOptions = CosineEmbeddingLossOptions;
using MultilabelSoftMarginLossFuncOptions = MultiLabelSoftMarginLossOptions;
using MultiLabelSoftMarginLossFuncOptions = MultiLabelSoftMarginLossOptions;
using TripletMarginLossFuncOptions = TripletMarginLossOptions;
using TripletMarginWithDistanceLossFuncOptions = TripletMarginWithDistanceLossOptions;
using PoissonNLLLossFuncOptions = PoissonNLLLossOptions;
using CTCLossFuncOptions = CTCLossOptions;
using MarginRankingLossFuncOptions = MarginRankingLossOptions;
using NLLLossFuncOptions = NLLLossOptions;
struct CrossEntropyFuncOptions {
  CrossEntropyFuncOptions() = default;
  EMBER_NN_ARG(Tensor, weight);
  EMBER_NN_ARG(int64_t, ignore_index) = -100;
  EMBER_NN_ARG(Reduction, reduction) = Reduction::Mean;
  EMBER_NN_ARG(double, label_smoothing) = 0.0;
};

struct BatchNormFuncOptions {
  EMBER_NN_ARG(Tensor, weight);
  EMBER_NN_ARG(Tensor, bias);
  EMBER_NN_ARG(bool, training) = false;
  EMBER_NN_ARG(std::optional<double>, momentum) = 0.1;
  EMBER_NN_ARG(double, eps) = 1e-5;
};
struct InstanceNormFuncOptions {
  EMBER_NN_ARG(Tensor, running_mean);
  EMBER_NN_ARG(Tensor, running_var);
  EMBER_NN_ARG(Tensor, weight);
  EMBER_NN_ARG(Tensor, bias);
  EMBER_NN_ARG(bool, use_input_stats) = true;
  EMBER_NN_ARG(double, momentum) = 0.1;
  EMBER_NN_ARG(double, eps) = 1e-5;
};
struct LayerNormFuncOptions {
  LayerNormFuncOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}  // NOLINT
  EMBER_NN_ARG(std::vector<int64_t>, normalized_shape);
  EMBER_NN_ARG(Tensor, weight);
  EMBER_NN_ARG(Tensor, bias);
  EMBER_NN_ARG(double, eps) = 1e-5;
};
struct GroupNormFuncOptions {
  GroupNormFuncOptions(int64_t num_groups) : num_groups_(num_groups) {}  // NOLINT
  EMBER_NN_ARG(int64_t, num_groups);
  EMBER_NN_ARG(Tensor, weight);
  EMBER_NN_ARG(Tensor, bias);
  EMBER_NN_ARG(double, eps) = 1e-5;
};
using LocalResponseNormFuncOptions = LocalResponseNormOptions;
using NormalizeFuncOptions = NormalizeOptions;
struct EmbeddingFuncOptions {
  EMBER_NN_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  EMBER_NN_ARG(std::optional<double>, max_norm) = std::nullopt;
  EMBER_NN_ARG(double, norm_type) = 2.0;
  EMBER_NN_ARG(bool, scale_grad_by_freq) = false;
  EMBER_NN_ARG(bool, sparse) = false;
};
struct EmbeddingBagFuncOptions {
  EMBER_NN_ARG(Tensor, offsets);
  EMBER_NN_ARG(std::optional<double>, max_norm) = std::nullopt;
  EMBER_NN_ARG(double, norm_type) = 2.0;
  EMBER_NN_ARG(bool, scale_grad_by_freq) = false;
  EMBER_NN_ARG(std::string, mode) = "mean";
  EMBER_NN_ARG(bool, sparse) = false;
  EMBER_NN_ARG(Tensor, per_sample_weights);
  EMBER_NN_ARG(bool, include_last_offset) = false;
  EMBER_NN_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};
struct PadFuncOptions {
  PadFuncOptions(std::vector<int64_t> pad) : pad_(std::move(pad)) {}  // NOLINT
  EMBER_NN_ARG(std::vector<int64_t>, pad);
  EMBER_NN_ARG(std::string, mode) = "constant";
  EMBER_NN_ARG(double, value) = 0;
};
using FoldFuncOptions = FoldOptions;
using UnfoldFuncOptions = UnfoldOptions;
using PixelShuffleFuncOptions = PixelShuffleOptions;
using PixelUnshuffleFuncOptions = PixelUnshuffleOptions;
struct InterpolateFuncOptions {
  EMBER_NN_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  EMBER_NN_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  EMBER_NN_ARG(std::string, mode) = "nearest";
  EMBER_NN_ARG(std::optional<bool>, align_corners) = std::nullopt;
  EMBER_NN_ARG(std::optional<bool>, recompute_scale_factor) = std::nullopt;
  EMBER_NN_ARG(bool, antialias) = false;
};
struct AffineGridFuncOptions {};
// grid_sample's options: mode bilinear | nearest | bicubic, padding_mode zeros | border |
// reflection, align_corners (false when unset, as PyTorch after warning).
struct GridSampleFuncOptions {
  EMBER_NN_ARG(std::string, mode) = "bilinear";
  EMBER_NN_ARG(std::string, padding_mode) = "zeros";
  EMBER_NN_ARG(std::optional<bool>, align_corners) = std::nullopt;
};

// ---- convolution ----
Tensor conv1d(const Tensor& input, const Tensor& weight, const Conv1dFuncOptions& options);
Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& options);
// 3-D convolution: input [N, C, D, H, W] (or unbatched), weight [out, in / groups, kD, kH, kW].
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
              IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1);
Tensor conv3d(const Tensor& input, const Tensor& weight, const Conv3dFuncOptions& options);
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const ConvTranspose1dFuncOptions& options);
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const ConvTranspose2dFuncOptions& options);
// weight [in, out / groups, kD, kH, kW].
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
                        IntArrayRef padding = 0, IntArrayRef output_padding = 0, int64_t groups = 1,
                        IntArrayRef dilation = 1);
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const ConvTranspose3dFuncOptions& options);

// ---- pooling ----
Tensor max_pool1d(const Tensor& input, const MaxPool1dFuncOptions& options);
Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& options);
Tensor max_pool3d(const Tensor& input, const MaxPool3dFuncOptions& options);
// The maxima and their flat indices within each plane (as PyTorch's return_indices).
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, const MaxPool1dFuncOptions& options);
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const MaxPool2dFuncOptions& options);
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, const MaxPool3dFuncOptions& options);
Tensor avg_pool1d(const Tensor& input, const AvgPool1dFuncOptions& options);
Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& options);
Tensor avg_pool3d(const Tensor& input, const AvgPool3dFuncOptions& options);
Tensor adaptive_avg_pool1d(const Tensor& input, const AdaptiveAvgPool1dFuncOptions& options);
Tensor adaptive_avg_pool2d(const Tensor& input, const AdaptiveAvgPool2dFuncOptions& options);
Tensor adaptive_avg_pool3d(const Tensor& input, const AdaptiveAvgPool3dFuncOptions& options);
Tensor adaptive_max_pool1d(const Tensor& input, const AdaptiveMaxPool1dFuncOptions& options);
Tensor adaptive_max_pool2d(const Tensor& input, const AdaptiveMaxPool2dFuncOptions& options);
Tensor adaptive_max_pool3d(const Tensor& input, const AdaptiveMaxPool3dFuncOptions& options);
std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool1dFuncOptions& options);
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool2dFuncOptions& options);
std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool3dFuncOptions& options);
// Fractional max pooling: windows of kernel_size at pseudo-random, increasing starts that
// give output_size (or floor(input * output_ratio)) outputs per dim. The random draw
// (_random_samples, [N, C, D] in [0, 1), or uniform) is taken from its first plane and
// shared by every plane.
Tensor fractional_max_pool2d(const Tensor& input, const FractionalMaxPool2dFuncOptions& options);
Tensor fractional_max_pool3d(const Tensor& input, const FractionalMaxPool3dFuncOptions& options);
std::tuple<Tensor, Tensor> fractional_max_pool2d_with_indices(const Tensor& input,
                                                               const FractionalMaxPool2dFuncOptions& options);
std::tuple<Tensor, Tensor> fractional_max_pool3d_with_indices(const Tensor& input,
                                                               const FractionalMaxPool3dFuncOptions& options);
// (sum over the window of x^p)^(1/p).
Tensor lp_pool1d(const Tensor& input, const LPPool1dFuncOptions& options);
Tensor lp_pool2d(const Tensor& input, const LPPool2dFuncOptions& options);
// Places each value at its index (from max_pool*_with_indices) in a zero output.
Tensor max_unpool1d(const Tensor& input, const Tensor& indices, const MaxUnpool1dFuncOptions& options);
Tensor max_unpool2d(const Tensor& input, const Tensor& indices, const MaxUnpool2dFuncOptions& options);
Tensor max_unpool3d(const Tensor& input, const Tensor& indices, const MaxUnpool3dFuncOptions& options);

// ---- padding, folding, shuffling, resampling ----
// modes: constant, reflect, replicate, circular.
Tensor pad(const Tensor& input, const PadFuncOptions& options);
// im2col: [N, C, H, W] -> [N, C * kH * kW, L].
Tensor unfold(const Tensor& input, const UnfoldFuncOptions& options);
// col2im, the adjoint of unfold (overlapping values are summed).
Tensor fold(const Tensor& input, const FoldFuncOptions& options);
Tensor pixel_shuffle(const Tensor& input, int64_t upscale_factor);
Tensor pixel_unshuffle(const Tensor& input, int64_t downscale_factor);
Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& options = {});
// theta [N, 2, 3] (or [N, 3, 4]) -> sampling grid [N, H, W, 2] (or [N, D, H, W, 3]).
Tensor affine_grid(const Tensor& theta, IntArrayRef size, bool align_corners = false);
// Samples input [N, C, H, W] at grid [N, Ho, Wo, 2] (x, y in [-1, 1]; -1 is the left/top
// edge) -> [N, C, Ho, Wo]; differentiable in both input and grid (not for nearest in grid).
Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleFuncOptions& options = {});

// ---- activations ----
Tensor elu(const Tensor& input, const ELUFuncOptions& options = {});
Tensor selu(const Tensor& input, const SELUFuncOptions& options = {});
Tensor celu(const Tensor& input, const CELUFuncOptions& options = {});
Tensor glu(const Tensor& input, const GLUFuncOptions& options = {});
Tensor gelu(const Tensor& input, const GELUFuncOptions& options);
Tensor hardshrink(const Tensor& input, const HardshrinkFuncOptions& options = {});
Tensor softshrink(const Tensor& input, const SoftshrinkFuncOptions& options = {});
Tensor hardtanh(const Tensor& input, const HardtanhFuncOptions& options = {});
Tensor leaky_relu(const Tensor& input, const LeakyReLUFuncOptions& options);
Tensor relu(const Tensor& input, const ReLUFuncOptions& options);
Tensor relu6(const Tensor& input, const ReLU6FuncOptions& options = {});
Tensor rrelu(const Tensor& input, const RReLUFuncOptions& options = {});
Tensor softplus(const Tensor& input, const SoftplusFuncOptions& options = {});
Tensor threshold(const Tensor& input, const ThresholdFuncOptions& options);
Tensor softsign(const Tensor& input);
Tensor tanhshrink(const Tensor& input);
Tensor logsigmoid(const Tensor& input);
Tensor mish(const Tensor& input);
Tensor hardsigmoid(const Tensor& input);
Tensor hardswish(const Tensor& input);
Tensor softmax(const Tensor& input, const SoftmaxFuncOptions& options);
Tensor softmin(const Tensor& input, const SoftminFuncOptions& options);
Tensor log_softmax(const Tensor& input, const LogSoftmaxFuncOptions& options);
Tensor prelu(const Tensor& input, const Tensor& weight);
Tensor gumbel_softmax(const Tensor& logits, const GumbelSoftmaxFuncOptions& options = {});
Tensor one_hot(const Tensor& tensor, int64_t num_classes = -1);

// ---- dropout ----
Tensor dropout(const Tensor& input, const DropoutFuncOptions& options);
Tensor dropout2d(const Tensor& input, const Dropout2dFuncOptions& options = {});
Tensor dropout3d(const Tensor& input, const Dropout3dFuncOptions& options = {});
Tensor alpha_dropout(const Tensor& input, const AlphaDropoutFuncOptions& options = {});
Tensor feature_alpha_dropout(const Tensor& input, const FeatureAlphaDropoutFuncOptions& options = {});
// libtorch's positional forms (F::detail::alpha_dropout(input, p, training, inplace)).
namespace detail {
Tensor alpha_dropout(const Tensor& input, double p, bool training, bool inplace);
Tensor feature_alpha_dropout(const Tensor& input, double p, bool training, bool inplace);
}  // namespace detail

// ---- normalisation, embedding ----
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& options);
Tensor instance_norm(const Tensor& input, const InstanceNormFuncOptions& options = {});
Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& options);
Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& options);
Tensor local_response_norm(const Tensor& input, const LocalResponseNormFuncOptions& options);
Tensor normalize(const Tensor& input, NormalizeFuncOptions options = {});
Tensor embedding(const Tensor& input, const Tensor& weight, const EmbeddingFuncOptions& options);
Tensor embedding_bag(const Tensor& input, const Tensor& weight, const EmbeddingBagFuncOptions& options = {});

// ---- distances ----
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, const CosineSimilarityFuncOptions& options = {});
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, const PairwiseDistanceFuncOptions& options = {});
// Distances between the rows of an [N, M] input: the upper triangle, N (N - 1) / 2 values.
Tensor pdist(const Tensor& input, double p = 2.0);

// ---- losses ----
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options);
Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options);
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& options);
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options);
Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& options);
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& options);
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& options,
                      double beta);
Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& options);
// A reduction tag (torch::kSum, ...) where both a Reduction and an options struct would do.
template <typename Tag, typename = std::enable_if_t<std::is_class_v<Tag> && std::is_convertible_v<Tag, Reduction>>>
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Tag reduction, double beta = 1.0) {
  return smooth_l1_loss(input, target, Reduction(reduction), beta);
}
template <typename Tag, typename = std::enable_if_t<std::is_class_v<Tag> && std::is_convertible_v<Tag, Reduction>>>
Tensor huber_loss(const Tensor& input, const Tensor& target, Tag reduction, double delta = 1.0) {
  return huber_loss(input, target, Reduction(reduction), delta);
}
template <typename Tag, typename = std::enable_if_t<std::is_class_v<Tag> && std::is_convertible_v<Tag, Reduction>>>
Tensor mse_loss(const Tensor& input, const Tensor& target, Tag reduction) {
  return mse_loss(input, target, Reduction(reduction));
}
template <typename Tag, typename = std::enable_if_t<std::is_class_v<Tag> && std::is_convertible_v<Tag, Reduction>>>
Tensor l1_loss(const Tensor& input, const Tensor& target, Tag reduction) {
  return l1_loss(input, target, Reduction(reduction));
}
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options);
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& options);
Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target,
                            const HingeEmbeddingLossFuncOptions& options = {});
Tensor multi_margin_loss(const Tensor& input, const Tensor& target, const MultiMarginLossFuncOptions& options = {});
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             const CosineEmbeddingLossFuncOptions& options = {});
Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target,
                              const MultilabelMarginLossFuncOptions& options = {});
Tensor soft_margin_loss(const Tensor& input, const Tensor& target, const SoftMarginLossFuncOptions& options = {});
Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                   const MultilabelSoftMarginLossFuncOptions& options = {});
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           const TripletMarginLossFuncOptions& options = {});
Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                         const TripletMarginWithDistanceLossFuncOptions& options = {});
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, const PoissonNLLLossFuncOptions& options = {});
// CTC loss: log_probs [T, N, C] (or [T, C]) log-softmax outputs, targets [N, S] padded or
// 1-D concatenated (sum of target_lengths), input_lengths and target_lengths [N] integer
// tensors. reduction mean divides each loss by its target length (at least 1), then
// averages. The gradient is PyTorch's (as seen by the logits under log_softmax).
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, const CTCLossFuncOptions& options = {});
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           const MarginRankingLossFuncOptions& options = {});

}  // namespace ember::nn::functional
