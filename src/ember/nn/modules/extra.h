#pragma once
// The layers added for libtorch parity: more activations, dropout variants, distances,
// padding, 3-D / adaptive / LP pooling, unpooling, fold / unfold, pixel shuffle, upsampling,
// local response and instance normalisation, embedding bags, nn::Functional, and the loss
// modules of libtorch. Each takes its libtorch options struct (nn/functional_options.h) and
// prints itself as libtorch does (`torch::nn::ELU(alpha=1)`); forward calls the functional
// form in nn/functional_extra.h.

#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/nn/functional_extra.h"
#include "ember/nn/module.h"
#include "ember/nn/modules/any.h"
#include "ember/nn/modules/container.h"
#include "ember/nn/modules/linear.h"

namespace ember::nn {

namespace detail {
// Options checked when the layer is built (libtorch's reset() checks): a no-op unless an
// overload for the options exists.
template <typename Options>
void check_layer_options(const Options&) {}
void check_layer_options(const HardtanhOptions& options);
}  // namespace detail

// A stateless layer with options: Name##Impl(options), forward(input), libtorch printing.
#define EMBER_OPTIONS_LAYER(Name, Options)                                      \
  class Name##Impl : public Cloneable<Name##Impl> {                            \
   public:                                                                     \
    explicit Name##Impl(const Options& options_ = {}) : Cloneable(#Name), options(options_) { \
      detail::check_layer_options(options);                                   \
    }                                                                          \
    /* Threshold(0.1, 20), Unfold({2, 3}): the options' constructor arguments directly. */ \
    template <typename A0, typename... A,                                      \
              typename = std::enable_if_t<(sizeof...(A) > 0 || !std::is_convertible_v<A0, const Options&>) && \
                                          std::is_constructible_v<Options, A0, A...>>> \
    explicit Name##Impl(A0&& a0, A&&... a)                                     \
        : Name##Impl(Options(std::forward<A0>(a0), std::forward<A>(a)...)) {}      \
    /* Re-checks options changed after construction (libtorch's reset()). */   \
    void reset() override { detail::check_layer_options(options); }           \
    Tensor forward(const Tensor& input) override;                              \
    void pretty_print(std::ostream& stream) const override;                    \
    Options options;                                                           \
  };                                                                           \
  EMBER_MODULE(Name)
// The same for options without a default.
#define EMBER_OPTIONS_LAYER_REQ(Name, Options)                                  \
  class Name##Impl : public Cloneable<Name##Impl> {                            \
   public:                                                                     \
    explicit Name##Impl(const Options& options_) : Cloneable(#Name), options(options_) {} \
    /* Threshold(0.1, 20), Unfold({2, 3}): the options' constructor arguments directly. */ \
    template <typename A0, typename... A,                                      \
              typename = std::enable_if_t<(sizeof...(A) > 0 || !std::is_convertible_v<A0, const Options&>) && \
                                          std::is_constructible_v<Options, A0, A...>>> \
    explicit Name##Impl(A0&& a0, A&&... a)                                     \
        : Name##Impl(Options(std::forward<A0>(a0), std::forward<A>(a)...)) {}      \
    void reset() override {}                                                   \
    Tensor forward(const Tensor& input) override;                              \
    void pretty_print(std::ostream& stream) const override;                    \
    Options options;                                                           \
  };                                                                           \
  EMBER_MODULE(Name)
// A layer without options.
#define EMBER_PLAIN_LAYER(Name)                                                 \
  class Name##Impl : public Cloneable<Name##Impl> {                            \
   public:                                                                     \
    struct Options {};                                                         \
    explicit Name##Impl(const Options& = {}) : Cloneable(#Name) {}             \
    void reset() override {}                                                   \
    Tensor forward(const Tensor& input) override;                              \
    void pretty_print(std::ostream& stream) const override;                    \
    Options options;                                                           \
  };                                                                           \
  EMBER_MODULE(Name)

EMBER_OPTIONS_LAYER(ELU, ELUOptions);
EMBER_OPTIONS_LAYER(SELU, SELUOptions);
EMBER_OPTIONS_LAYER(CELU, CELUOptions);
EMBER_OPTIONS_LAYER(GLU, GLUOptions);
EMBER_OPTIONS_LAYER(Hardshrink, HardshrinkOptions);
EMBER_OPTIONS_LAYER(Softshrink, SoftshrinkOptions);
EMBER_OPTIONS_LAYER(Hardtanh, HardtanhOptions);
EMBER_OPTIONS_LAYER(ReLU6, ReLU6Options);
EMBER_OPTIONS_LAYER(RReLU, RReLUOptions);
EMBER_OPTIONS_LAYER(Softplus, SoftplusOptions);
EMBER_OPTIONS_LAYER_REQ(Threshold, ThresholdOptions);
EMBER_OPTIONS_LAYER_REQ(Softmin, SoftminOptions);
EMBER_PLAIN_LAYER(Softsign);
EMBER_PLAIN_LAYER(Tanhshrink);
EMBER_PLAIN_LAYER(LogSigmoid);
EMBER_PLAIN_LAYER(Mish);
EMBER_PLAIN_LAYER(Hardswish);
EMBER_PLAIN_LAYER(Hardsigmoid);
// Softmax over the channels (dim -3) of [C, H, W] / [N, C, H, W].
EMBER_PLAIN_LAYER(Softmax2d);

EMBER_OPTIONS_LAYER(Dropout2d, Dropout2dOptions);
EMBER_OPTIONS_LAYER(Dropout3d, Dropout3dOptions);
EMBER_OPTIONS_LAYER(AlphaDropout, AlphaDropoutOptions);
EMBER_OPTIONS_LAYER(FeatureAlphaDropout, FeatureAlphaDropoutOptions);

EMBER_OPTIONS_LAYER_REQ(ReflectionPad1d, ReflectionPad1dOptions);
EMBER_OPTIONS_LAYER_REQ(ReflectionPad2d, ReflectionPad2dOptions);
EMBER_OPTIONS_LAYER_REQ(ReflectionPad3d, ReflectionPad3dOptions);
EMBER_OPTIONS_LAYER_REQ(ReplicationPad1d, ReplicationPad1dOptions);
EMBER_OPTIONS_LAYER_REQ(ReplicationPad2d, ReplicationPad2dOptions);
EMBER_OPTIONS_LAYER_REQ(ReplicationPad3d, ReplicationPad3dOptions);
EMBER_OPTIONS_LAYER_REQ(ZeroPad2d, ZeroPad2dOptions);
EMBER_OPTIONS_LAYER_REQ(ConstantPad1d, ConstantPad1dOptions);
EMBER_OPTIONS_LAYER_REQ(ConstantPad2d, ConstantPad2dOptions);
EMBER_OPTIONS_LAYER_REQ(ConstantPad3d, ConstantPad3dOptions);

class MaxPool3dImpl : public Cloneable<MaxPool3dImpl> {
 public:
  explicit MaxPool3dImpl(const MaxPoolOptions& options_) : Cloneable("MaxPool3d"), options(options_) {}
  void reset() override {}
  Tensor forward(const Tensor& input) override;
  // The maxima and their flat indices within each [D, H, W] volume.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  MaxPoolOptions options;
};
EMBER_MODULE(MaxPool3d);
EMBER_OPTIONS_LAYER_REQ(AvgPool3d, AvgPoolOptions);
EMBER_OPTIONS_LAYER_REQ(AdaptiveAvgPool1d, AdaptiveAvgPool1dOptions);
EMBER_OPTIONS_LAYER_REQ(AdaptiveAvgPool3d, AdaptiveAvgPool3dOptions);
EMBER_OPTIONS_LAYER_REQ(LPPool1d, LPPool1dOptions);
EMBER_OPTIONS_LAYER_REQ(LPPool2d, LPPool2dOptions);
EMBER_OPTIONS_LAYER_REQ(Unfold, UnfoldOptions);
EMBER_OPTIONS_LAYER_REQ(Fold, FoldOptions);
EMBER_OPTIONS_LAYER_REQ(PixelShuffle, PixelShuffleOptions);
EMBER_OPTIONS_LAYER_REQ(PixelUnshuffle, PixelUnshuffleOptions);
EMBER_OPTIONS_LAYER(Upsample, UpsampleOptions);
EMBER_OPTIONS_LAYER_REQ(LocalResponseNorm, LocalResponseNormOptions);
EMBER_OPTIONS_LAYER_REQ(CrossMapLRN2d, CrossMapLRN2dOptions);

#define EMBER_ADAPTIVE_MAX(Name)                                                               \
  class Name##Impl : public Cloneable<Name##Impl> {                                           \
   public:                                                                                    \
    explicit Name##Impl(const AdaptivePoolOptions& options_) : Cloneable(#Name), options(options_) {} \
    void reset() override {}                                                                  \
    Tensor forward(const Tensor& input) override;                                             \
    std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);                    \
    void pretty_print(std::ostream& stream) const override;                                   \
    AdaptivePoolOptions options;                                                              \
  };                                                                                          \
  EMBER_MODULE(Name)
EMBER_ADAPTIVE_MAX(AdaptiveMaxPool1d);
EMBER_ADAPTIVE_MAX(AdaptiveMaxPool2d);
EMBER_ADAPTIVE_MAX(AdaptiveMaxPool3d);
#undef EMBER_ADAPTIVE_MAX

#define EMBER_FRACTIONAL(Name, D)                                                              \
  class Name##Impl : public Cloneable<Name##Impl> {                                           \
   public:                                                                                    \
    explicit Name##Impl(const FractionalMaxPoolOptions<D>& options_) : Cloneable(#Name), options(options_) {} \
    void reset() override {}                                                                  \
    Tensor forward(const Tensor& input) override;                                             \
    std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);                    \
    void pretty_print(std::ostream& stream) const override;                                   \
    FractionalMaxPoolOptions<D> options;                                                      \
  };                                                                                          \
  EMBER_MODULE(Name)
EMBER_FRACTIONAL(FractionalMaxPool2d, 2);
EMBER_FRACTIONAL(FractionalMaxPool3d, 3);
#undef EMBER_FRACTIONAL

#define EMBER_MAX_UNPOOL(Name, D)                                                              \
  class Name##Impl : public Cloneable<Name##Impl> {                                           \
   public:                                                                                    \
    explicit Name##Impl(const MaxUnpoolOptions<D>& options_) : Cloneable(#Name), options(options_) {} \
    /* Threshold(0.1, 20), Unfold({2, 3}): the options' constructor arguments directly. */ \
    template <typename A0, typename... A,                                      \
              typename = std::enable_if_t<(sizeof...(A) > 0 || !std::is_convertible_v<A0, const MaxUnpoolOptions<D>&>) && \
                                          std::is_constructible_v<MaxUnpoolOptions<D>, A0, A...>>> \
    explicit Name##Impl(A0&& a0, A&&... a)                                     \
        : Name##Impl(MaxUnpoolOptions<D>(std::forward<A0>(a0), std::forward<A>(a)...)) {}      \
    void reset() override {}                                                                  \
    Tensor forward(const Tensor& input, const Tensor& indices,                                \
                   const std::optional<std::vector<int64_t>>& output_size = std::nullopt);    \
    Tensor operator()(const Tensor& input, const Tensor& indices,                             \
                      const std::optional<std::vector<int64_t>>& output_size = std::nullopt) { \
      return forward(input, indices, output_size);                                            \
    }                                                                                         \
    EMBER_FORWARD_HAS_DEFAULT_ARGS({2, AnyValue::make_default<std::optional<std::vector<int64_t>>>()}) \
   public:                                                                                    \
    void pretty_print(std::ostream& stream) const override;                                   \
    MaxUnpoolOptions<D> options;                                                              \
  };                                                                                          \
  EMBER_MODULE(Name)
EMBER_MAX_UNPOOL(MaxUnpool1d, 1);
EMBER_MAX_UNPOOL(MaxUnpool2d, 2);
EMBER_MAX_UNPOOL(MaxUnpool3d, 3);
#undef EMBER_MAX_UNPOOL


// PReLU: a learnt negative slope, one or num_parameters (one per channel), init 0.25.
class PReLUImpl : public Cloneable<PReLUImpl> {
 public:
  explicit PReLUImpl(const PReLUOptions& options_ = {});
  void reset() override;
  Tensor forward(const Tensor& input) override;
  void pretty_print(std::ostream& stream) const override;
  PReLUOptions options;
  Tensor weight;
};
EMBER_MODULE(PReLU);

// Instance normalisation over the spatial dims of [N, C, *] (running statistics and the
// affine parameters optional, as libtorch's defaults: affine=false, track_running_stats=false).
template <size_t D>
class InstanceNormImpl : public Cloneable<InstanceNormImpl<D>> {
 public:
  explicit InstanceNormImpl(const InstanceNormOptions& options_);
  InstanceNormImpl(int64_t num_features) : InstanceNormImpl(InstanceNormOptions(num_features)) {}  // NOLINT
  void reset() override;
  void reset_running_stats();
  void reset_parameters();
  Tensor forward(const Tensor& input) override;
  void pretty_print(std::ostream& stream) const override;
  InstanceNormOptions options;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;
};
using InstanceNorm1dImpl = InstanceNormImpl<1>;
using InstanceNorm2dImpl = InstanceNormImpl<2>;
using InstanceNorm3dImpl = InstanceNormImpl<3>;
EMBER_MODULE(InstanceNorm1d);
EMBER_MODULE(InstanceNorm2d);
EMBER_MODULE(InstanceNorm3d);

class CosineSimilarityImpl : public Cloneable<CosineSimilarityImpl> {
 public:
  explicit CosineSimilarityImpl(const CosineSimilarityOptions& options_ = {})
      : Cloneable("CosineSimilarity"), options(options_) {}
  void reset() override {}
  Tensor forward(const Tensor& x1, const Tensor& x2);
  Tensor operator()(const Tensor& x1, const Tensor& x2) { return forward(x1, x2); }
  void pretty_print(std::ostream& stream) const override;
  CosineSimilarityOptions options;
};
EMBER_MODULE(CosineSimilarity);

class PairwiseDistanceImpl : public Cloneable<PairwiseDistanceImpl> {
 public:
  explicit PairwiseDistanceImpl(const PairwiseDistanceOptions& options_ = {})
      : Cloneable("PairwiseDistance"), options(options_) {}
  void reset() override {}
  Tensor forward(const Tensor& x1, const Tensor& x2);
  Tensor operator()(const Tensor& x1, const Tensor& x2) { return forward(x1, x2); }
  void pretty_print(std::ostream& stream) const override;
  PairwiseDistanceOptions options;
};
EMBER_MODULE(PairwiseDistance);

// A function of one tensor as a module (libtorch's nn::Functional): Functional(torch::relu),
// Functional(F::elu, F::ELUFuncOptions()) binds the trailing arguments.
class FunctionalImpl : public Module {
 public:
  using Function = std::function<Tensor(Tensor)>;
  explicit FunctionalImpl(Function function);
  template <typename SomeFunction, typename... Args,
            typename = std::enable_if_t<(sizeof...(Args) > 0)>>
  explicit FunctionalImpl(SomeFunction original_function, Args&&... args)
      : FunctionalImpl(Function([f = std::move(original_function),
                                 bound = std::make_tuple(std::forward<Args>(args)...)](Tensor input) {
          return std::apply([&](const auto&... a) { return Tensor(f(input, a...)); }, bound);
        })) {}
  Tensor forward(const Tensor& input) override { return function_(input); }
  void pretty_print(std::ostream& stream) const override;
  std::shared_ptr<Module> clone(const std::optional<Device>& = std::nullopt) const override { return std::make_shared<FunctionalImpl>(function_); }

 private:
  Function function_;
};
EMBER_MODULE(Functional);

// Embedding bags: sums, means or maxima of embedding rows per bag.
class EmbeddingBagImpl : public Cloneable<EmbeddingBagImpl> {
 public:
  EmbeddingBagImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingBagImpl(EmbeddingBagOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingBagImpl(const EmbeddingBagOptions& options_);
  void reset() override;
  void reset_parameters();
  Tensor forward(const Tensor& input, const Tensor& offsets = {}, const Tensor& per_sample_weights = {});
  EMBER_FORWARD_HAS_DEFAULT_ARGS({1, AnyValue(Tensor())}, {2, AnyValue(Tensor())})
 public:
  Tensor operator()(const Tensor& input, const Tensor& offsets = {}, const Tensor& per_sample_weights = {}) {
    return forward(input, offsets, per_sample_weights);
  }
  void pretty_print(std::ostream& stream) const override;
  EmbeddingBagOptions options;
  Tensor weight;
};
class EmbeddingBag : public ModuleHolder<EmbeddingBagImpl> {
 public:
  using ModuleHolder<EmbeddingBagImpl>::ModuleHolder;
  // A bag layer around given weights (frozen unless freeze = false).
  static EmbeddingBag from_pretrained(const Tensor& embeddings, bool freeze = true);
};

// ---- losses with two or three inputs, libtorch options ----
#define EMBER_LOSS2(Name, Options)                                                       \
  class Name##Impl : public Cloneable<Name##Impl> {                                     \
   public:                                                                              \
    explicit Name##Impl(const Options& options_ = {}) : Cloneable(#Name), options(options_) {} \
    void reset() override {}                                                            \
    Tensor forward(const Tensor& input, const Tensor& target);                          \
    Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); } \
    void pretty_print(std::ostream& stream) const override;                             \
    Options options;                                                                    \
  };                                                                                    \
  EMBER_MODULE(Name)
#define EMBER_LOSS3(Name, Options)                                                       \
  class Name##Impl : public Cloneable<Name##Impl> {                                     \
   public:                                                                              \
    explicit Name##Impl(const Options& options_ = {}) : Cloneable(#Name), options(options_) {} \
    void reset() override {}                                                            \
    Tensor forward(const Tensor& a, const Tensor& b, const Tensor& c);                  \
    Tensor operator()(const Tensor& a, const Tensor& b, const Tensor& c) { return forward(a, b, c); } \
    void pretty_print(std::ostream& stream) const override;                             \
    Options options;                                                                    \
  };                                                                                    \
  EMBER_MODULE(Name)
EMBER_LOSS2(HingeEmbeddingLoss, HingeEmbeddingLossOptions);
EMBER_LOSS2(MultiMarginLoss, MultiMarginLossOptions);
EMBER_LOSS2(MultiLabelMarginLoss, MultiLabelMarginLossOptions);
EMBER_LOSS2(SoftMarginLoss, SoftMarginLossOptions);
EMBER_LOSS2(MultiLabelSoftMarginLoss, MultiLabelSoftMarginLossOptions);
EMBER_LOSS2(PoissonNLLLoss, PoissonNLLLossOptions);
EMBER_LOSS3(CosineEmbeddingLoss, CosineEmbeddingLossOptions);
EMBER_LOSS3(TripletMarginLoss, TripletMarginLossOptions);
EMBER_LOSS3(TripletMarginWithDistanceLoss, TripletMarginWithDistanceLossOptions);
EMBER_LOSS3(MarginRankingLoss, MarginRankingLossOptions);
#undef EMBER_LOSS2
#undef EMBER_LOSS3

class CTCLossImpl : public Cloneable<CTCLossImpl> {
 public:
  explicit CTCLossImpl(const CTCLossOptions& options_ = {}) : Cloneable("CTCLoss"), options(options_) {}
  void reset() override {}
  Tensor forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                 const Tensor& target_lengths);
  Tensor operator()(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                    const Tensor& target_lengths) {
    return forward(log_probs, targets, input_lengths, target_lengths);
  }
  void pretty_print(std::ostream& stream) const override;
  CTCLossOptions options;
};
EMBER_MODULE(CTCLoss);

// ---- adaptive softmax (Grave et al.): a head over the frequent classes and one cluster
// token per tail, each tail a low-rank projection (in -> in / div_value^(i+1) -> its classes).
struct AdaptiveLogSoftmaxWithLossOptions {
  AdaptiveLogSoftmaxWithLossOptions(int64_t in_features, int64_t n_classes, std::vector<int64_t> cutoffs)
      : in_features_(in_features), n_classes_(n_classes), cutoffs_(std::move(cutoffs)) {}
  EMBER_NN_ARG(int64_t, in_features);
  EMBER_NN_ARG(int64_t, n_classes);
  EMBER_NN_ARG(std::vector<int64_t>, cutoffs);
  EMBER_NN_ARG(double, div_value) = 4.0;
  EMBER_NN_ARG(bool, head_bias) = false;
};
// forward's result: each row's log-probability of its target, and the mean negative of it.
struct ASMoutput {
  ASMoutput(Tensor output_, double loss_) : output(std::move(output_)), loss(loss_) {}
  Tensor output;
  double loss;
};
class AdaptiveLogSoftmaxWithLossImpl : public Cloneable<AdaptiveLogSoftmaxWithLossImpl> {
 public:
  AdaptiveLogSoftmaxWithLossImpl(int64_t in_features, int64_t n_classes, std::vector<int64_t> cutoffs)
      : AdaptiveLogSoftmaxWithLossImpl(AdaptiveLogSoftmaxWithLossOptions(in_features, n_classes, std::move(cutoffs))) {}
  explicit AdaptiveLogSoftmaxWithLossImpl(AdaptiveLogSoftmaxWithLossOptions options_);
  // input [B, in_features] (or [in_features]), target [B] (or scalar) class indices.
  ASMoutput forward(const Tensor& input, const Tensor& target);
  ASMoutput operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  // Log-probabilities of every class [B, n_classes].
  Tensor log_prob(const Tensor& input);
  // The most likely class of each row [B].
  Tensor predict(const Tensor& input);
  void reset() override;
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  AdaptiveLogSoftmaxWithLossOptions options;
  std::vector<int64_t> cutoffs;  // the options' cutoffs followed by n_classes
  int64_t shortlist_size = 0, n_clusters = 0, head_size = 0;
  Linear head{nullptr};
  ModuleList tail{nullptr};

 private:
  Tensor full_log_prob(const Tensor& input, const Tensor& head_output);
};
EMBER_MODULE(AdaptiveLogSoftmaxWithLoss);

#undef EMBER_OPTIONS_LAYER
#undef EMBER_OPTIONS_LAYER_REQ
#undef EMBER_PLAIN_LAYER

}  // namespace ember::nn
