#pragma once
// Options of the layers added for libtorch parity (activations, distances, losses,
// padding, pooling, folding, interpolation, dropout variants), with libtorch's names and
// defaults. The functional forms take the same structs under their libtorch names in
// nn::functional (F::ELUFuncOptions is nn::ELUOptions, ...).

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/core/check.h"
#include "ember/core/tensor.h"
#include "ember/nn/options.h"

namespace ember::nn {

// A size with one value per spatial dim; a single value applies to all D (libtorch's
// ExpandingArray): `MaxPool3dOptions(3)` is a 3x3x3 window.
template <size_t D>
class ExpandingArray {
 public:
  ExpandingArray(int64_t v) : v_(D, v) {}  // NOLINT: implicit like libtorch
  ExpandingArray(std::initializer_list<int64_t> l) : ExpandingArray(IntArrayRef(l)) {}
  ExpandingArray(const std::vector<int64_t>& l) : ExpandingArray(IntArrayRef(l)) {}
  ExpandingArray(IntArrayRef l) : v_(l) {
    EMBER_CHECK(l.size() == D || l.size() == 1, "[nn] expected ", D, " values (or one for all), got ", l.size());
    if (l.size() == 1 && D != 1) v_ = DimVector(D, l[0]);
  }
  operator IntArrayRef() const { return v_.ref(); }
  IntArrayRef operator*() const { return v_.ref(); }
  int64_t operator[](size_t i) const { return v_[i]; }
  size_t size() const { return D; }
  std::vector<int64_t> vec() const { return v_.vec(); }

 private:
  DimVector v_;
};

// ---- activations ----
struct ELUOptions {
  EMBER_NN_ARG(double, alpha) = 1.0;
  EMBER_NN_ARG(bool, inplace) = false;
};
struct SELUOptions {
  SELUOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT
  EMBER_NN_ARG(bool, inplace);
};
struct CELUOptions {
  EMBER_NN_ARG(double, alpha) = 1.0;
  EMBER_NN_ARG(bool, inplace) = false;
};
struct GLUOptions {
  GLUOptions(int64_t dim = -1) : dim_(dim) {}  // NOLINT
  EMBER_NN_ARG(int64_t, dim);
};
struct GELUOptions {
  EMBER_NN_ARG(std::string, approximate) = "none";
};
struct HardshrinkOptions {
  HardshrinkOptions(double lambda = 0.5) : lambda_(lambda) {}  // NOLINT
  EMBER_NN_ARG(double, lambda);
};
struct SoftshrinkOptions {
  SoftshrinkOptions(double lambda = 0.5) : lambda_(lambda) {}  // NOLINT
  EMBER_NN_ARG(double, lambda);
};
struct HardtanhOptions {
  EMBER_NN_ARG(double, min_val) = -1.0;
  EMBER_NN_ARG(double, max_val) = 1.0;
  EMBER_NN_ARG(bool, inplace) = false;
};
struct LeakyReLUOptions {
  EMBER_NN_ARG(double, negative_slope) = 1e-2;
  EMBER_NN_ARG(bool, inplace) = false;
};
struct ReLUOptions {
  ReLUOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT
  EMBER_NN_ARG(bool, inplace);
};
struct ReLU6Options {
  ReLU6Options(bool inplace = false) : inplace_(inplace) {}  // NOLINT
  EMBER_NN_ARG(bool, inplace);
};
struct RReLUOptions {
  EMBER_NN_ARG(double, lower) = 1.0 / 8.0;
  EMBER_NN_ARG(double, upper) = 1.0 / 3.0;
  EMBER_NN_ARG(bool, inplace) = false;
};
struct SoftplusOptions {
  EMBER_NN_ARG(double, beta) = 1.0;
  EMBER_NN_ARG(double, threshold) = 20.0;
};
struct ThresholdOptions {
  ThresholdOptions(double threshold, double value) : threshold_(threshold), value_(value) {}
  EMBER_NN_ARG(double, threshold);
  EMBER_NN_ARG(double, value);
  EMBER_NN_ARG(bool, inplace) = false;
};
struct SoftmaxOptions {
  SoftmaxOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  EMBER_NN_ARG(int64_t, dim);
};
using SoftminOptions = SoftmaxOptions;
using LogSoftmaxOptions = SoftmaxOptions;
struct PReLUOptions {
  EMBER_NN_ARG(int64_t, num_parameters) = 1;
  EMBER_NN_ARG(double, init) = 0.25;
};

// ---- dropout ----
struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}  // NOLINT
  EMBER_NN_ARG(double, p);
  EMBER_NN_ARG(bool, inplace) = false;
};
using Dropout2dOptions = DropoutOptions;
using Dropout3dOptions = DropoutOptions;
using AlphaDropoutOptions = DropoutOptions;
using FeatureAlphaDropoutOptions = DropoutOptions;

// ---- distances ----
struct CosineSimilarityOptions {
  EMBER_NN_ARG(int64_t, dim) = 1;
  EMBER_NN_ARG(double, eps) = 1e-8;
};
struct PairwiseDistanceOptions {
  EMBER_NN_ARG(double, p) = 2.0;
  EMBER_NN_ARG(double, eps) = 1e-6;
  EMBER_NN_ARG(bool, keepdim) = false;
};

// ---- losses (reduction defaults to mean) ----
#define EMBER_REDUCTION_OPTIONS(Name)                                  \
  using reduction_t = Reduction;                                       \
  Name() = default;                                                    \
  Name(Reduction reduction) : reduction_(reduction) {} /* NOLINT */   \
  template <typename Tag, typename = std::enable_if_t<std::is_class_v<Tag> && std::is_convertible_v<Tag, Reduction>>> \
  Name(Tag tag) : reduction_(Reduction(tag)) {} /* NOLINT */           \
  EMBER_NN_ARG(Reduction, reduction) = Reduction::Mean

struct L1LossOptions {
  EMBER_REDUCTION_OPTIONS(L1LossOptions);
};
struct MSELossOptions {
  EMBER_REDUCTION_OPTIONS(MSELossOptions);
};
struct SoftMarginLossOptions {
  EMBER_REDUCTION_OPTIONS(SoftMarginLossOptions);
};
struct MultiLabelMarginLossOptions {
  EMBER_REDUCTION_OPTIONS(MultiLabelMarginLossOptions);
};
struct BCELossOptions {
  EMBER_REDUCTION_OPTIONS(BCELossOptions);
  EMBER_NN_ARG(Tensor, weight);
};
struct BCEWithLogitsLossOptions {
  EMBER_REDUCTION_OPTIONS(BCEWithLogitsLossOptions);
  EMBER_NN_ARG(Tensor, weight);
  EMBER_NN_ARG(Tensor, pos_weight);
};
struct KLDivLossOptions {
  EMBER_REDUCTION_OPTIONS(KLDivLossOptions);
  EMBER_NN_ARG(bool, log_target) = false;
};
struct SmoothL1LossOptions {
  EMBER_REDUCTION_OPTIONS(SmoothL1LossOptions);
  EMBER_NN_ARG(double, beta) = 1.0;
};
struct HuberLossOptions {
  EMBER_REDUCTION_OPTIONS(HuberLossOptions);
  EMBER_NN_ARG(double, delta) = 1.0;
};
struct HingeEmbeddingLossOptions {
  EMBER_REDUCTION_OPTIONS(HingeEmbeddingLossOptions);
  EMBER_NN_ARG(double, margin) = 1.0;
};
struct MultiMarginLossOptions {
  EMBER_REDUCTION_OPTIONS(MultiMarginLossOptions);
  EMBER_NN_ARG(int64_t, p) = 1;
  EMBER_NN_ARG(double, margin) = 1.0;
  EMBER_NN_ARG(Tensor, weight);
};
struct CosineEmbeddingLossOptions {
  EMBER_REDUCTION_OPTIONS(CosineEmbeddingLossOptions);
  EMBER_NN_ARG(double, margin) = 0.0;
};
struct MultiLabelSoftMarginLossOptions {
  EMBER_REDUCTION_OPTIONS(MultiLabelSoftMarginLossOptions);
  EMBER_NN_ARG(Tensor, weight);
};
struct TripletMarginLossOptions {
  EMBER_REDUCTION_OPTIONS(TripletMarginLossOptions);
  EMBER_NN_ARG(double, margin) = 1.0;
  EMBER_NN_ARG(double, p) = 2.0;
  EMBER_NN_ARG(double, eps) = 1e-6;
  EMBER_NN_ARG(bool, swap) = false;
};
struct TripletMarginWithDistanceLossOptions {
  using distance_function_t = std::function<Tensor(const Tensor&, const Tensor&)>;
  EMBER_REDUCTION_OPTIONS(TripletMarginWithDistanceLossOptions);
  EMBER_NN_ARG(std::optional<distance_function_t>, distance_function) = std::nullopt;
  EMBER_NN_ARG(double, margin) = 1.0;
  EMBER_NN_ARG(bool, swap) = false;
};
// Connectionist temporal classification: blank's class index, and whether an infinite
// loss (an input too short for its target) and its gradient become zero.
struct CTCLossOptions {
  EMBER_REDUCTION_OPTIONS(CTCLossOptions);
  EMBER_NN_ARG(int64_t, blank) = 0;
  EMBER_NN_ARG(bool, zero_infinity) = false;
};
struct PoissonNLLLossOptions {
  EMBER_REDUCTION_OPTIONS(PoissonNLLLossOptions);
  EMBER_NN_ARG(bool, log_input) = true;
  EMBER_NN_ARG(bool, full) = false;
  EMBER_NN_ARG(double, eps) = 1e-8;
};
struct MarginRankingLossOptions {
  EMBER_REDUCTION_OPTIONS(MarginRankingLossOptions);
  EMBER_NN_ARG(double, margin) = 0.0;
};
struct NLLLossOptions {
  EMBER_REDUCTION_OPTIONS(NLLLossOptions);
  EMBER_NN_ARG(Tensor, weight);
  EMBER_NN_ARG(int64_t, ignore_index) = -100;
};
#undef EMBER_REDUCTION_OPTIONS

// ---- normalisation ----
struct LocalResponseNormOptions {
  LocalResponseNormOptions(int64_t size) : size_(size) {}  // NOLINT
  EMBER_NN_ARG(int64_t, size);
  EMBER_NN_ARG(double, alpha) = 1e-4;
  EMBER_NN_ARG(double, beta) = 0.75;
  EMBER_NN_ARG(double, k) = 1.0;
};
using CrossMapLRN2dOptions = LocalResponseNormOptions;
struct NormalizeOptions {
  EMBER_NN_ARG(double, p) = 2.0;
  EMBER_NN_ARG(int64_t, dim) = 1;
  EMBER_NN_ARG(double, eps) = 1e-12;
  EMBER_NN_ARG(std::optional<Tensor>, out) = std::nullopt;
};
struct InstanceNormOptions {
  InstanceNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT
  EMBER_NN_ARG(int64_t, num_features);
  EMBER_NN_ARG(double, eps) = 1e-5;
  EMBER_NN_ARG(double, momentum) = 0.1;
  EMBER_NN_ARG(bool, affine) = false;
  EMBER_NN_ARG(bool, track_running_stats) = false;
};
using InstanceNorm1dOptions = InstanceNormOptions;
using InstanceNorm2dOptions = InstanceNormOptions;
using InstanceNorm3dOptions = InstanceNormOptions;

// ---- padding ----
// The amounts per side, (left, right) pairs from the last dim backwards.
template <size_t D>
struct ReflectionPadOptions {
  ReflectionPadOptions(ExpandingArray<D * 2> padding) : padding_(padding) {}  // NOLINT
  EMBER_NN_ARG(ExpandingArray<D * 2>, padding);
};
template <size_t D>
using ReplicationPadOptions = ReflectionPadOptions<D>;
template <size_t D>
struct ConstantPadOptions {
  ConstantPadOptions(ExpandingArray<D * 2> padding, double value) : padding_(padding), value_(value) {}
  EMBER_NN_ARG(ExpandingArray<D * 2>, padding);
  EMBER_NN_ARG(double, value);
};
using ReflectionPad1dOptions = ReflectionPadOptions<1>;
using ReflectionPad2dOptions = ReflectionPadOptions<2>;
using ReflectionPad3dOptions = ReflectionPadOptions<3>;
using ReplicationPad1dOptions = ReflectionPadOptions<1>;
using ReplicationPad2dOptions = ReflectionPadOptions<2>;
using ReplicationPad3dOptions = ReflectionPadOptions<3>;
using ZeroPad2dOptions = ReflectionPadOptions<2>;
using ConstantPad1dOptions = ConstantPadOptions<1>;
using ConstantPad2dOptions = ConstantPadOptions<2>;
using ConstantPad3dOptions = ConstantPadOptions<3>;

// ---- pooling ----
struct AdaptivePoolOptions {
  AdaptivePoolOptions(int64_t output_size) : output_size_{output_size} {}           // NOLINT
  AdaptivePoolOptions(IntArrayRef output_size) : output_size_(output_size) {}       // NOLINT
  AdaptivePoolOptions(std::initializer_list<int64_t> s) : output_size_(IntArrayRef(s)) {}  // NOLINT
  // {5, nullopt}: an empty entry keeps that input dimension's size (stored as -1).
  AdaptivePoolOptions(std::initializer_list<std::optional<int64_t>> s) {  // NOLINT
    for (const auto& v : s) output_size_.push_back(v ? *v : -1);
  }
  EMBER_NN_ARG(DimVector, output_size);
};
using AdaptiveMaxPool1dOptions = AdaptivePoolOptions;
using AdaptiveMaxPool2dOptions = AdaptivePoolOptions;
using AdaptiveMaxPool3dOptions = AdaptivePoolOptions;
using AdaptiveAvgPool1dOptions = AdaptivePoolOptions;
using AdaptiveAvgPool3dOptions = AdaptivePoolOptions;
template <size_t D>
struct LPPoolOptions {
  LPPoolOptions(double norm_type, ExpandingArray<D> kernel_size)
      : norm_type_(norm_type), kernel_size_(kernel_size), stride_(kernel_size) {}
  EMBER_NN_ARG(double, norm_type);
  EMBER_NN_ARG(ExpandingArray<D>, kernel_size);
  EMBER_NN_ARG(ExpandingArray<D>, stride);
  EMBER_NN_ARG(bool, ceil_mode) = false;
};
using LPPool1dOptions = LPPoolOptions<1>;
using LPPool2dOptions = LPPoolOptions<2>;
template <size_t D>
struct FractionalMaxPoolOptions {
  FractionalMaxPoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size) {}  // NOLINT
  EMBER_NN_ARG(ExpandingArray<D>, kernel_size);
  EMBER_NN_ARG(std::optional<ExpandingArray<D>>, output_size) = std::nullopt;
  EMBER_NN_ARG(std::optional<std::vector<double>>, output_ratio) = std::nullopt;
  EMBER_NN_ARG(Tensor, _random_samples);
};
using FractionalMaxPool2dOptions = FractionalMaxPoolOptions<2>;
using FractionalMaxPool3dOptions = FractionalMaxPoolOptions<3>;
template <size_t D>
struct MaxUnpoolOptions {
  MaxUnpoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  EMBER_NN_ARG(ExpandingArray<D>, kernel_size);
  EMBER_NN_ARG(ExpandingArray<D>, stride);
  EMBER_NN_ARG(ExpandingArray<D>, padding) = 0;
};
using MaxUnpool1dOptions = MaxUnpoolOptions<1>;
using MaxUnpool2dOptions = MaxUnpoolOptions<2>;
using MaxUnpool3dOptions = MaxUnpoolOptions<3>;

// ---- fold / unfold, pixel shuffle, upsampling ----
struct FoldOptions {
  FoldOptions(ExpandingArray<2> output_size, ExpandingArray<2> kernel_size)
      : output_size_(output_size), kernel_size_(kernel_size) {}
  EMBER_NN_ARG(ExpandingArray<2>, output_size);
  EMBER_NN_ARG(ExpandingArray<2>, kernel_size);
  EMBER_NN_ARG(ExpandingArray<2>, dilation) = 1;
  EMBER_NN_ARG(ExpandingArray<2>, padding) = 0;
  EMBER_NN_ARG(ExpandingArray<2>, stride) = 1;
};
struct UnfoldOptions {
  UnfoldOptions(ExpandingArray<2> kernel_size) : kernel_size_(kernel_size) {}  // NOLINT
  EMBER_NN_ARG(ExpandingArray<2>, kernel_size);
  EMBER_NN_ARG(ExpandingArray<2>, dilation) = 1;
  EMBER_NN_ARG(ExpandingArray<2>, padding) = 0;
  EMBER_NN_ARG(ExpandingArray<2>, stride) = 1;
};
struct PixelShuffleOptions {
  PixelShuffleOptions(int64_t upscale_factor) : upscale_factor_(upscale_factor) {}  // NOLINT
  EMBER_NN_ARG(int64_t, upscale_factor);
};
struct PixelUnshuffleOptions {
  PixelUnshuffleOptions(int64_t downscale_factor) : downscale_factor_(downscale_factor) {}  // NOLINT
  EMBER_NN_ARG(int64_t, downscale_factor);
};
// mode: "nearest", "linear", "bilinear", "trilinear" (bicubic and area are not supported).
struct UpsampleOptions {
  EMBER_NN_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  EMBER_NN_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  EMBER_NN_ARG(std::string, mode) = "nearest";
  EMBER_NN_ARG(std::optional<bool>, align_corners) = std::nullopt;
};

// ---- embedding bag ----
struct EmbeddingBagOptions {
  EmbeddingBagOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  EMBER_NN_ARG(int64_t, num_embeddings);
  EMBER_NN_ARG(int64_t, embedding_dim);
  EMBER_NN_ARG(std::optional<double>, max_norm) = std::nullopt;
  EMBER_NN_ARG(double, norm_type) = 2.0;
  EMBER_NN_ARG(bool, scale_grad_by_freq) = false;
  EMBER_NN_ARG(std::string, mode) = "mean";
  EMBER_NN_ARG(bool, sparse) = false;
  EMBER_NN_ARG(Tensor, _weight);
  EMBER_NN_ARG(bool, include_last_offset) = false;
  EMBER_NN_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

}  // namespace ember::nn
