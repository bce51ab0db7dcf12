#include "ember/nn/modules/extra.h"

#include "ember/nn/enum_name.h"

#include <cmath>
#include <ostream>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/nn/init.h"
#include "ember/ops/creation.h"

namespace ember::nn {

namespace F = functional;

namespace {
const char* b(bool v) { return v ? "true" : "false"; }
void list(std::ostream& os, IntArrayRef v, bool scalar_if_one = true) {
  if (scalar_if_one && v.size() == 1) {
    os << v[0];
    return;
  }
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) {
    os << (i ? ", " : "");
    if (v[i] < 0) {
      os << "None";
    } else {
      os << v[i];
    }
  }
  os << "]";
}
}  // namespace

namespace detail {
// "kNearest" for "nearest", as libtorch prints its enum options.
std::string enum_name(const std::string& s) {
  std::string out = "k";
  bool up = true;
  for (char c : s) {
    if (c == '_' || c == '-') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return out;
}
}  // namespace detail
using detail::enum_name;

#define EMBER_PRINT(Name) void Name##Impl::pretty_print(std::ostream& os) const
#define EMBER_FORWARD(Name) Tensor Name##Impl::forward(const Tensor& input)

// ---- activations ----
EMBER_FORWARD(ELU) { return F::elu(input, options); }
EMBER_PRINT(ELU) {
  os << "torch::nn::ELU(alpha=" << options.alpha();
  if (options.inplace()) os << ", inplace=true";
  os << ")";
}
EMBER_FORWARD(SELU) { return F::selu(input, options); }
EMBER_PRINT(SELU) { os << "torch::nn::SELU(" << (options.inplace() ? "inplace=true" : "") << ")"; }
EMBER_FORWARD(CELU) { return F::celu(input, options); }
EMBER_PRINT(CELU) {
  os << "torch::nn::CELU(alpha=" << options.alpha();
  if (options.inplace()) os << ", inplace=true";
  os << ")";
}
EMBER_FORWARD(GLU) { return F::glu(input, options); }
EMBER_PRINT(GLU) { os << "torch::nn::GLU(dim=" << options.dim() << ")"; }
EMBER_FORWARD(Hardshrink) { return F::hardshrink(input, options); }
EMBER_PRINT(Hardshrink) { os << "torch::nn::Hardshrink(" << options.lambda() << ")"; }
EMBER_FORWARD(Softshrink) { return F::softshrink(input, options); }
EMBER_PRINT(Softshrink) { os << "torch::nn::Softshrink(" << options.lambda() << ")"; }
namespace detail {
void check_layer_options(const HardtanhOptions& options) {
  EMBER_CHECK(options.max_val() > options.min_val(), "[nn.Hardtanh] max_val must be greater than min_val, got min_val=",
              options.min_val(), " and max_val=", options.max_val());
}
}  // namespace detail

EMBER_FORWARD(Hardtanh) { return F::hardtanh(input, options); }
EMBER_PRINT(Hardtanh) {
  os << "torch::nn::Hardtanh(min_val=" << options.min_val() << ", max_val=" << options.max_val();
  if (options.inplace()) os << ", inplace=true";
  os << ")";
}
EMBER_FORWARD(ReLU6) { return F::relu6(input, options); }
EMBER_PRINT(ReLU6) { os << "torch::nn::ReLU6(" << (options.inplace() ? "inplace=true" : "") << ")"; }
EMBER_FORWARD(RReLU) {
  return F::rrelu(input, F::RReLUFuncOptions()
                             .lower(options.lower())
                             .upper(options.upper())
                             .inplace(options.inplace())
                             .training(is_training()));
}
EMBER_PRINT(RReLU) {
  os << "torch::nn::RReLU(lower=" << options.lower() << ", upper=" << options.upper();
  if (options.inplace()) os << ", inplace=true";
  os << ")";
}
EMBER_FORWARD(Softplus) { return F::softplus(input, options); }
EMBER_PRINT(Softplus) {
  os << "torch::nn::Softplus(beta=" << options.beta() << ", threshold=" << options.threshold() << ")";
}
EMBER_FORWARD(Threshold) { return F::threshold(input, options); }
EMBER_PRINT(Threshold) {
  os << "torch::nn::Threshold(threshold=" << options.threshold() << ", value=" << options.value();
  if (options.inplace()) os << ", inplace=true";
  os << ")";
}
EMBER_FORWARD(Softmin) { return F::softmin(input, options.dim()); }
EMBER_PRINT(Softmin) { os << "torch::nn::Softmin(dim=" << options.dim() << ")"; }
EMBER_FORWARD(Softsign) { return F::softsign(input); }
EMBER_PRINT(Softsign) { os << "torch::nn::Softsign()"; }
EMBER_FORWARD(Tanhshrink) { return F::tanhshrink(input); }
EMBER_PRINT(Tanhshrink) { os << "torch::nn::Tanhshrink()"; }
EMBER_FORWARD(LogSigmoid) { return F::logsigmoid(input); }
EMBER_PRINT(LogSigmoid) { os << "torch::nn::LogSigmoid()"; }
EMBER_FORWARD(Mish) { return F::mish(input); }
EMBER_PRINT(Mish) { os << "torch::nn::Mish()"; }
EMBER_FORWARD(Hardswish) { return F::hardswish(input); }
EMBER_PRINT(Hardswish) { os << "torch::nn::Hardswish()"; }
EMBER_FORWARD(Hardsigmoid) { return F::hardsigmoid(input); }
EMBER_PRINT(Hardsigmoid) { os << "torch::nn::Hardsigmoid()"; }
EMBER_FORWARD(Softmax2d) {
  EMBER_CHECK(input.dim() == 3 || input.dim() == 4, "[nn.Softmax2d] expected a 3-D or 4-D input, got ",
              input.sizes());
  return input.softmax(-3);
}
EMBER_PRINT(Softmax2d) { os << "torch::nn::Softmax2d()"; }

// ---- dropout ----
#define EMBER_DROPOUT(Name, fn, Func)                                                                   \
  EMBER_FORWARD(Name) {                                                                               \
    return F::fn(input, F::Func().p(options.p()).inplace(options.inplace()).training(is_training())); \
  }                                                                                                   \
  EMBER_PRINT(Name) { os << "torch::nn::" #Name "(p=" << options.p() << ", inplace=" << b(options.inplace()) << ")"; }
EMBER_DROPOUT(Dropout2d, dropout2d, Dropout2dFuncOptions)
EMBER_DROPOUT(Dropout3d, dropout3d, Dropout3dFuncOptions)
EMBER_DROPOUT(AlphaDropout, alpha_dropout, AlphaDropoutFuncOptions)
EMBER_DROPOUT(FeatureAlphaDropout, feature_alpha_dropout, FeatureAlphaDropoutFuncOptions)
#undef EMBER_DROPOUT

// ---- padding ----
#define EMBER_PAD(Name, padmode)                                                              \
  EMBER_FORWARD(Name) { return F::pad(input, F::PadFuncOptions(options.padding().vec()).mode(padmode)); } \
  EMBER_PRINT(Name) {                                                                       \
    os << "torch::nn::" #Name "(padding=";                                                  \
    list(os, options.padding(), false);                                                     \
    os << ")";                                                                              \
  }
EMBER_PAD(ReflectionPad1d, "reflect")
EMBER_PAD(ReflectionPad2d, "reflect")
EMBER_PAD(ReflectionPad3d, "reflect")
EMBER_PAD(ReplicationPad1d, "replicate")
EMBER_PAD(ReplicationPad2d, "replicate")
EMBER_PAD(ReplicationPad3d, "replicate")
EMBER_PAD(ZeroPad2d, "constant")
#undef EMBER_PAD
#define EMBER_CPAD(Name)                                                                      \
  EMBER_FORWARD(Name) {                                                                     \
    return F::pad(input, F::PadFuncOptions(options.padding().vec()).value(options.value()));  \
  }                                                                                         \
  EMBER_PRINT(Name) {                                                                       \
    os << "torch::nn::" #Name "(padding=";                                                  \
    list(os, options.padding(), false);                                                     \
    os << ", value=" << options.value() << ")";                                             \
  }
EMBER_CPAD(ConstantPad1d)
EMBER_CPAD(ConstantPad2d)
EMBER_CPAD(ConstantPad3d)
#undef EMBER_CPAD

// ---- pooling ----
namespace {
DimVector expand_to(IntArrayRef v, size_t d) { return v.size() == d ? DimVector(v) : DimVector(d, v.empty() ? 0 : v[0]); }
}  // namespace
EMBER_FORWARD(MaxPool3d) { return F::max_pool3d(input, options); }
std::tuple<Tensor, Tensor> MaxPool3dImpl::forward_with_indices(const Tensor& input) {
  return F::max_pool3d_with_indices(input, options);
}
EMBER_PRINT(MaxPool3d) {
  const auto& o = options;
  os << "torch::nn::MaxPool3d(kernel_size=";
  list(os, expand_to(o.kernel_size(), 3));
  os << ", stride=";
  list(os, expand_to(o.stride().empty() ? o.kernel_size() : o.stride(), 3));
  os << ", padding=";
  list(os, expand_to(o.padding(), 3));
  os << ", dilation=";
  list(os, expand_to(o.dilation(), 3));
  os << ", ceil_mode=" << b(o.ceil_mode()) << ")";
}
EMBER_FORWARD(AvgPool3d) { return F::avg_pool3d(input, options); }
EMBER_PRINT(AvgPool3d) {
  const auto& o = options;
  os << "torch::nn::AvgPool3d(kernel_size=";
  list(os, expand_to(o.kernel_size(), 3));
  os << ", stride=";
  list(os, expand_to(o.stride().empty() ? o.kernel_size() : o.stride(), 3));
  os << ", padding=";
  list(os, expand_to(o.padding(), 3));
  os << ")";
}
#define EMBER_ADAPTIVE(Name, fn, D)                                          \
  EMBER_PRINT(Name) {                                                      \
    os << "torch::nn::" #Name "(output_size=";                             \
    list(os, expand_to(options.output_size(), D));                         \
    os << ")";                                                             \
  }
EMBER_FORWARD(AdaptiveAvgPool1d) { return F::adaptive_avg_pool1d(input, options); }
EMBER_FORWARD(AdaptiveAvgPool3d) { return F::adaptive_avg_pool3d(input, options); }
EMBER_ADAPTIVE(AdaptiveAvgPool1d, adaptive_avg_pool1d, 1)
EMBER_ADAPTIVE(AdaptiveAvgPool3d, adaptive_avg_pool3d, 3)
EMBER_ADAPTIVE(AdaptiveMaxPool1d, adaptive_max_pool1d, 1)
EMBER_ADAPTIVE(AdaptiveMaxPool2d, adaptive_max_pool2d, 2)
EMBER_ADAPTIVE(AdaptiveMaxPool3d, adaptive_max_pool3d, 3)
#undef EMBER_ADAPTIVE
EMBER_FORWARD(AdaptiveMaxPool1d) { return F::adaptive_max_pool1d(input, options); }
EMBER_FORWARD(AdaptiveMaxPool2d) { return F::adaptive_max_pool2d(input, options); }
EMBER_FORWARD(AdaptiveMaxPool3d) { return F::adaptive_max_pool3d(input, options); }
std::tuple<Tensor, Tensor> AdaptiveMaxPool1dImpl::forward_with_indices(const Tensor& input) {
  return F::adaptive_max_pool1d_with_indices(input, options);
}
std::tuple<Tensor, Tensor> AdaptiveMaxPool2dImpl::forward_with_indices(const Tensor& input) {
  return F::adaptive_max_pool2d_with_indices(input, options);
}
std::tuple<Tensor, Tensor> AdaptiveMaxPool3dImpl::forward_with_indices(const Tensor& input) {
  return F::adaptive_max_pool3d_with_indices(input, options);
}
#define EMBER_FRACTIONAL(Name, fn)                                                  \
  EMBER_FORWARD(Name) { return F::fn(input, options); }                            \
  std::tuple<Tensor, Tensor> Name##Impl::forward_with_indices(const Tensor& input) { \
    return F::fn##_with_indices(input, options);                                   \
  }                                                                                \
  EMBER_PRINT(Name) { os << "torch::nn::" #Name "()"; }
EMBER_FRACTIONAL(FractionalMaxPool2d, fractional_max_pool2d)
EMBER_FRACTIONAL(FractionalMaxPool3d, fractional_max_pool3d)
#undef EMBER_FRACTIONAL
EMBER_FORWARD(LPPool1d) { return F::lp_pool1d(input, options); }
EMBER_PRINT(LPPool1d) {
  os << "torch::nn::LPPool1d(norm_type=" << options.norm_type() << ", kernel_size=";
  list(os, options.kernel_size());
  os << ", stride=";
  list(os, options.stride());
  os << ", ceil_mode=" << b(options.ceil_mode()) << ")";
}
EMBER_FORWARD(LPPool2d) { return F::lp_pool2d(input, options); }
EMBER_PRINT(LPPool2d) {
  os << "torch::nn::LPPool2d(norm_type=" << options.norm_type() << ", kernel_size=";
  list(os, options.kernel_size());
  os << ", stride=";
  list(os, options.stride());
  os << ", ceil_mode=" << b(options.ceil_mode()) << ")";
}
#define EMBER_UNPOOL(Name, fn, D)                                                                      \
  Tensor Name##Impl::forward(const Tensor& input, const Tensor& indices,                              \
                             const std::optional<std::vector<int64_t>>& output_size) {                \
    auto fo = F::MaxUnpoolFuncOptions<D>(options.kernel_size()).stride(options.stride()).padding(options.padding()); \
    fo.output_size(output_size);                                                                      \
    return F::fn(input, indices, fo);                                                                 \
  }                                                                                                   \
  EMBER_PRINT(Name) {                                                                                 \
    os << "torch::nn::" #Name "(kernel_size=";                                                        \
    list(os, options.kernel_size());                                                                  \
    os << ", stride=";                                                                                \
    list(os, options.stride());                                                                       \
    os << ", padding=";                                                                               \
    list(os, options.padding());                                                                      \
    os << ")";                                                                                        \
  }
EMBER_UNPOOL(MaxUnpool1d, max_unpool1d, 1)
EMBER_UNPOOL(MaxUnpool2d, max_unpool2d, 2)
EMBER_UNPOOL(MaxUnpool3d, max_unpool3d, 3)
#undef EMBER_UNPOOL

// ---- fold, shuffle, upsample, local response norm ----
EMBER_FORWARD(Unfold) { return F::unfold(input, options); }
EMBER_PRINT(Unfold) {
  os << "torch::nn::Unfold(kernel_size=";
  list(os, options.kernel_size());
  os << ", dilation=";
  list(os, options.dilation());
  os << ", padding=";
  list(os, options.padding());
  os << ", stride=";
  list(os, options.stride());
  os << ")";
}
EMBER_FORWARD(Fold) { return F::fold(input, options); }
EMBER_PRINT(Fold) {
  os << "torch::nn::Fold(output_size=";
  list(os, options.output_size());
  os << ", kernel_size=";
  list(os, options.kernel_size());
  os << ", dilation=";
  list(os, options.dilation());
  os << ", padding=";
  list(os, options.padding());
  os << ", stride=";
  list(os, options.stride());
  os << ")";
}
EMBER_FORWARD(PixelShuffle) { return F::pixel_shuffle(input, options.upscale_factor()); }
EMBER_PRINT(PixelShuffle) { os << "torch::nn::PixelShuffle(upscale_factor=" << options.upscale_factor() << ")"; }
EMBER_FORWARD(PixelUnshuffle) { return F::pixel_unshuffle(input, options.downscale_factor()); }
EMBER_PRINT(PixelUnshuffle) {
  os << "torch::nn::PixelUnshuffle(downscale_factor=" << options.downscale_factor() << ")";
}
EMBER_FORWARD(Upsample) {
  return F::interpolate(input, F::InterpolateFuncOptions()
                                   .size(options.size())
                                   .scale_factor(options.scale_factor())
                                   .mode(options.mode())
                                   .align_corners(options.align_corners()));
}
EMBER_PRINT(Upsample) {
  os << "torch::nn::Upsample(";
  if (options.scale_factor()) {
    os << "scale_factor=[";
    const auto& v = *options.scale_factor();
    for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
    os << "]";
  } else if (options.size()) {
    os << "size=";
    list(os, *options.size(), false);
  }
  os << ", mode=" << enum_name(options.mode()) << ")";
}
EMBER_FORWARD(LocalResponseNorm) { return F::local_response_norm(input, options); }
EMBER_PRINT(LocalResponseNorm) {
  os << "torch::nn::LocalResponseNorm(" << options.size() << ", alpha=" << options.alpha()
     << ", beta=" << options.beta() << ", k=" << options.k() << ")";
}
EMBER_FORWARD(CrossMapLRN2d) {
  EMBER_CHECK(input.dim() == 4, "[nn.CrossMapLRN2d] expected a 4-D input [N, C, H, W], got ", input.sizes());
  return F::local_response_norm(input, options);
}
EMBER_PRINT(CrossMapLRN2d) {
  os << "torch::nn::CrossMapLRN2d(" << options.size() << ", alpha=" << options.alpha() << ", beta=" << options.beta()
     << ", k=" << options.k() << ")";
}

// ---- PReLU ----
PReLUImpl::PReLUImpl(const PReLUOptions& options_) : Cloneable("PReLU"), options(options_) { reset(); }
void PReLUImpl::reset() {
  weight = register_parameter("weight", full({options.num_parameters()}, options.init()));
}
EMBER_FORWARD(PReLU) { return F::prelu(input, weight); }
EMBER_PRINT(PReLU) { os << "torch::nn::PReLU(num_parameters=" << options.num_parameters() << ")"; }

// ---- instance norm ----
template <size_t D>
InstanceNormImpl<D>::InstanceNormImpl(const InstanceNormOptions& options_)
    : Cloneable<InstanceNormImpl<D>>("InstanceNorm" + std::to_string(D) + "d"), options(options_) {
  reset();
}
template <size_t D>
void InstanceNormImpl<D>::reset() {
  const int64_t c = options.num_features();
  if (options.affine()) {
    weight = this->register_parameter("weight", empty({c}));
    bias = this->register_parameter("bias", empty({c}));
  } else {
    weight = this->register_parameter("weight", Tensor(), false);
    bias = this->register_parameter("bias", Tensor(), false);
  }
  if (options.track_running_stats()) {
    running_mean = this->register_buffer("running_mean", zeros({c}));
    running_var = this->register_buffer("running_var", ones({c}));
    num_batches_tracked = this->register_buffer("num_batches_tracked", zeros(IntArrayRef(), TensorOptions(kInt64)));
  } else {
    running_mean = this->register_buffer("running_mean", Tensor());
    running_var = this->register_buffer("running_var", Tensor());
    num_batches_tracked = this->register_buffer("num_batches_tracked", Tensor());
  }
  reset_parameters();
}
template <size_t D>
void InstanceNormImpl<D>::reset_running_stats() {
  NoGradGuard no_grad;
  if (running_mean.defined()) running_mean.zero_();
  if (running_var.defined()) running_var.fill_(1);
  if (num_batches_tracked.defined()) num_batches_tracked.zero_();
}
template <size_t D>
void InstanceNormImpl<D>::reset_parameters() {
  reset_running_stats();
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}
template <size_t D>
Tensor InstanceNormImpl<D>::forward(const Tensor& input) {
  const int64_t want = static_cast<int64_t>(D) + 2;
  EMBER_CHECK(input.dim() == want || input.dim() == want - 1, "[nn.", this->name(), "] expected a ", want - 1,
              "-D (unbatched) or ", want, "-D input, got ", input.sizes());
  const bool unb = input.dim() == want - 1;
  Tensor x = unb ? input.unsqueeze(0) : input;
  const bool use_input_stats = this->is_training() || !options.track_running_stats();
  if (this->is_training() && options.track_running_stats() && num_batches_tracked.defined()) {
    NoGradGuard no_grad;
    num_batches_tracked.add_(1);
  }
  Tensor out = F::instance_norm(x, F::InstanceNormFuncOptions()
                                       .running_mean(running_mean)
                                       .running_var(running_var)
                                       .weight(weight)
                                       .bias(bias)
                                       .use_input_stats(use_input_stats)
                                       .momentum(options.momentum())
                                       .eps(options.eps()));
  return unb ? out.squeeze(0) : out;
}
template <size_t D>
void InstanceNormImpl<D>::pretty_print(std::ostream& os) const {
  os << "torch::nn::InstanceNorm" << D << "d(" << options.num_features() << ", eps=" << options.eps()
     << ", momentum=" << options.momentum() << ", affine=" << b(options.affine())
     << ", track_running_stats=" << b(options.track_running_stats()) << ")";
}
template class InstanceNormImpl<1>;
template class InstanceNormImpl<2>;
template class InstanceNormImpl<3>;

// ---- distances ----
Tensor CosineSimilarityImpl::forward(const Tensor& x1, const Tensor& x2) { return F::cosine_similarity(x1, x2, options); }
EMBER_PRINT(CosineSimilarity) {
  os << "torch::nn::CosineSimilarity(dim=" << options.dim() << ", eps=" << options.eps() << ")";
}
Tensor PairwiseDistanceImpl::forward(const Tensor& x1, const Tensor& x2) { return F::pairwise_distance(x1, x2, options); }
EMBER_PRINT(PairwiseDistance) {
  os << "torch::nn::PairwiseDistance(p=" << options.p() << ", eps=" << options.eps()
     << ", keepdim=" << b(options.keepdim()) << ")";
}

// ---- Functional ----
FunctionalImpl::FunctionalImpl(Function function) : Module("Functional"), function_(std::move(function)) {}
EMBER_PRINT(Functional) { os << "torch::nn::Functional()"; }

// ---- EmbeddingBag ----
EmbeddingBagImpl::EmbeddingBagImpl(const EmbeddingBagOptions& options_) : Cloneable("EmbeddingBag"), options(options_) {
  reset();
}
void EmbeddingBagImpl::reset() {
  if (options._weight().defined()) {
    EMBER_CHECK(options._weight().dim() == 2 && options._weight().size(0) == options.num_embeddings() &&
                    options._weight().size(1) == options.embedding_dim(),
                "[nn.EmbeddingBag] _weight must be [num_embeddings, embedding_dim]");
    weight = register_parameter("weight", options._weight());
  } else {
    weight = register_parameter("weight", empty({options.num_embeddings(), options.embedding_dim()}));
    reset_parameters();
  }
}
void EmbeddingBagImpl::reset_parameters() {
  init::normal_(weight);
  if (options.padding_idx()) {
    NoGradGuard no_grad;
    weight.select(0, *options.padding_idx()).fill_(0);
  }
}
Tensor EmbeddingBagImpl::forward(const Tensor& input, const Tensor& offsets, const Tensor& per_sample_weights) {
  return F::embedding_bag(input, weight, F::EmbeddingBagFuncOptions()
                                            .offsets(offsets)
                                            .max_norm(options.max_norm())
                                            .norm_type(options.norm_type())
                                            .mode(options.mode())
                                            .per_sample_weights(per_sample_weights)
                                            .include_last_offset(options.include_last_offset())
                                            .padding_idx(options.padding_idx()));
}
EMBER_PRINT(EmbeddingBag) {
  const auto& o = options;
  os << "torch::nn::EmbeddingBag(num_embeddings=" << o.num_embeddings() << ", embedding_dim=" << o.embedding_dim();
  if (o.max_norm()) os << ", max_norm=" << *o.max_norm();
  if (o.norm_type() != 2) os << ", norm_type=" << o.norm_type();
  if (o.scale_grad_by_freq()) os << ", scale_grad_by_freq=true";
  if (o.sparse()) os << ", sparse=true";
  if (o.mode() != "mean") os << ", mode=" << enum_name(o.mode());
  if (o.include_last_offset()) os << ", include_last_offset=true";
  if (o.padding_idx()) os << ", padding_idx=" << *o.padding_idx();
  os << ")";
}
EmbeddingBag EmbeddingBag::from_pretrained(const Tensor& embeddings, bool freeze) {
  EMBER_CHECK(embeddings.dim() == 2, "[nn.EmbeddingBag] from_pretrained expects a 2-D tensor, got ",
              embeddings.sizes());
  EmbeddingBag bag(EmbeddingBagOptions(embeddings.size(0), embeddings.size(1)));
  {
    NoGradGuard no_grad;
    bag->weight.copy_(embeddings);
  }
  bag->weight.requires_grad_(!freeze);
  return bag;
}

// ---- losses ----
namespace {
void print_reduction_free(std::ostream& os, const char* name) { os << "torch::nn::" << name << "()"; }
}  // namespace
Tensor HingeEmbeddingLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::hinge_embedding_loss(input, target, options);
}
EMBER_PRINT(HingeEmbeddingLoss) { os << "torch::nn::HingeEmbeddingLoss(margin=" << options.margin() << ")"; }
Tensor MultiMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::multi_margin_loss(input, target, options);
}
EMBER_PRINT(MultiMarginLoss) {
  os << "torch::nn::MultiMarginLoss(p=" << options.p() << ", margin=" << options.margin() << ", weight=";
  if (options.weight().defined()) {
    os << options.weight();
  } else {
    os << "{}";
  }
  os << ", reduction=" << enum_name(reduction_name(options.reduction())) << ")";
}
Tensor MultiLabelMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::multilabel_margin_loss(input, target, options);
}
EMBER_PRINT(MultiLabelMarginLoss) { print_reduction_free(os, "MultiLabelMarginLoss"); }
Tensor SoftMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::soft_margin_loss(input, target, options);
}
EMBER_PRINT(SoftMarginLoss) { print_reduction_free(os, "SoftMarginLoss"); }
Tensor MultiLabelSoftMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::multilabel_soft_margin_loss(input, target, options);
}
EMBER_PRINT(MultiLabelSoftMarginLoss) { print_reduction_free(os, "MultiLabelSoftMarginLoss"); }
Tensor PoissonNLLLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::poisson_nll_loss(input, target, options);
}
EMBER_PRINT(PoissonNLLLoss) { print_reduction_free(os, "PoissonNLLLoss"); }
Tensor CosineEmbeddingLossImpl::forward(const Tensor& a, const Tensor& b2, const Tensor& c) {
  return F::cosine_embedding_loss(a, b2, c, options);
}
EMBER_PRINT(CosineEmbeddingLoss) { os << "torch::nn::CosineEmbeddingLoss(margin=" << options.margin() << ")"; }
Tensor TripletMarginLossImpl::forward(const Tensor& a, const Tensor& b2, const Tensor& c) {
  return F::triplet_margin_loss(a, b2, c, options);
}
EMBER_PRINT(TripletMarginLoss) {
  os << "torch::nn::TripletMarginLoss(margin=" << options.margin() << ", p=" << options.p() << ", eps=" << options.eps()
     << ", swap=" << b(options.swap()) << ")";
}
Tensor TripletMarginWithDistanceLossImpl::forward(const Tensor& a, const Tensor& b2, const Tensor& c) {
  return F::triplet_margin_with_distance_loss(a, b2, c, options);
}
EMBER_PRINT(TripletMarginWithDistanceLoss) {
  os << "torch::nn::TripletMarginWithDistanceLoss(margin=" << options.margin() << ", swap=" << b(options.swap())
     << ")";
}
Tensor MarginRankingLossImpl::forward(const Tensor& a, const Tensor& b2, const Tensor& c) {
  return F::margin_ranking_loss(a, b2, c, options);
}
EMBER_PRINT(MarginRankingLoss) { print_reduction_free(os, "MarginRankingLoss"); }

}  // namespace ember::nn
