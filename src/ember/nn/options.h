#pragma once
// Shared pieces of the nn options, spelled as libtorch spells them:
//   - EMBER_NN_ARG(T, name): a `name(v)` setter returning *this and a `name()` getter
//     (libtorch's TORCH_ARG);
//   - nn::Reduction and the enum tags torch::kMean, torch::kSum, torch::kReflect, ... as
//     ember::kMean, ...: each tag converts to the option it names (a Reduction for the
//     reduction tags, the mode's name as a string for the others), so that
//     `MSELossOptions().reduction(kSum)` and `PadFuncOptions({1, 1}).mode(kReflect)` work.

#include <string>

#define EMBER_NN_ARG(T, name)                        \
 public:                                             \
  auto& name(const T& new_##name) {                  \
    this->name##_ = new_##name;                      \
    return *this;                                    \
  }                                                  \
  const T& name() const noexcept { return name##_; } \
  T& name() noexcept { return name##_; }             \
                                                     \
 private:                                            \
  T name##_

namespace ember::nn {
enum class Reduction { None, Mean, Sum, BatchMean };
// "none", "mean", "sum", "batchmean".
const char* reduction_name(Reduction r);
}  // namespace ember::nn

namespace ember::enumtype {

#define EMBER_ENUM_TAG(Tag, str)                          \
  struct Tag {                                            \
    operator std::string() const { return str; }         \
    static constexpr const char* name() { return str; }   \
  }
#define EMBER_REDUCTION_TAG(Tag, str, value)                                  \
  struct Tag {                                                               \
    operator std::string() const { return str; }                            \
    constexpr operator nn::Reduction() const { return nn::Reduction::value; } \
    static constexpr const char* name() { return str; }                      \
  }

EMBER_REDUCTION_TAG(kNone, "none", None);
EMBER_REDUCTION_TAG(kMean, "mean", Mean);
EMBER_REDUCTION_TAG(kSum, "sum", Sum);
EMBER_REDUCTION_TAG(kBatchMean, "batchmean", BatchMean);
EMBER_ENUM_TAG(kMax, "max");
EMBER_ENUM_TAG(kLinear, "linear");
EMBER_ENUM_TAG(kConv1D, "conv1d");
EMBER_ENUM_TAG(kConv2D, "conv2d");
EMBER_ENUM_TAG(kConv3D, "conv3d");
EMBER_ENUM_TAG(kConvTranspose1D, "conv_transpose1d");
EMBER_ENUM_TAG(kConvTranspose2D, "conv_transpose2d");
EMBER_ENUM_TAG(kConvTranspose3D, "conv_transpose3d");
EMBER_ENUM_TAG(kSigmoid, "sigmoid");
EMBER_ENUM_TAG(kTanh, "tanh");
EMBER_ENUM_TAG(kReLU, "relu");
EMBER_ENUM_TAG(kGELU, "gelu");
EMBER_ENUM_TAG(kSiLU, "silu");
EMBER_ENUM_TAG(kMish, "mish");
EMBER_ENUM_TAG(kLeakyReLU, "leaky_relu");
EMBER_ENUM_TAG(kFanIn, "fan_in");
EMBER_ENUM_TAG(kFanOut, "fan_out");
EMBER_ENUM_TAG(kConstant, "constant");
EMBER_ENUM_TAG(kReflect, "reflect");
EMBER_ENUM_TAG(kReplicate, "replicate");
EMBER_ENUM_TAG(kCircular, "circular");
EMBER_ENUM_TAG(kNearest, "nearest");
EMBER_ENUM_TAG(kNearestExact, "nearest-exact");
EMBER_ENUM_TAG(kBilinear, "bilinear");
EMBER_ENUM_TAG(kBicubic, "bicubic");
EMBER_ENUM_TAG(kTrilinear, "trilinear");
EMBER_ENUM_TAG(kArea, "area");
EMBER_ENUM_TAG(kZeros, "zeros");
EMBER_ENUM_TAG(kBorder, "border");
EMBER_ENUM_TAG(kReflection, "reflection");
EMBER_ENUM_TAG(kRNN_TANH, "RNN_TANH");
EMBER_ENUM_TAG(kRNN_RELU, "RNN_RELU");
EMBER_ENUM_TAG(kLSTM, "LSTM");
EMBER_ENUM_TAG(kGRU, "GRU");
EMBER_ENUM_TAG(kSame, "same");
EMBER_ENUM_TAG(kValid, "valid");
#undef EMBER_ENUM_TAG
#undef EMBER_REDUCTION_TAG

}  // namespace ember::enumtype

namespace ember {
inline constexpr enumtype::kNone kNone{};
inline constexpr enumtype::kMean kMean{};
inline constexpr enumtype::kSum kSum{};
inline constexpr enumtype::kBatchMean kBatchMean{};
inline constexpr enumtype::kMax kMax{};
inline constexpr enumtype::kLinear kLinear{};
inline constexpr enumtype::kConv1D kConv1D{};
inline constexpr enumtype::kConv2D kConv2D{};
inline constexpr enumtype::kConv3D kConv3D{};
inline constexpr enumtype::kConvTranspose1D kConvTranspose1D{};
inline constexpr enumtype::kConvTranspose2D kConvTranspose2D{};
inline constexpr enumtype::kConvTranspose3D kConvTranspose3D{};
inline constexpr enumtype::kSigmoid kSigmoid{};
inline constexpr enumtype::kTanh kTanh{};
inline constexpr enumtype::kReLU kReLU{};
inline constexpr enumtype::kGELU kGELU{};
inline constexpr enumtype::kSiLU kSiLU{};
inline constexpr enumtype::kMish kMish{};
inline constexpr enumtype::kLeakyReLU kLeakyReLU{};
inline constexpr enumtype::kFanIn kFanIn{};
inline constexpr enumtype::kFanOut kFanOut{};
inline constexpr enumtype::kConstant kConstant{};
inline constexpr enumtype::kReflect kReflect{};
inline constexpr enumtype::kReplicate kReplicate{};
inline constexpr enumtype::kCircular kCircular{};
inline constexpr enumtype::kNearest kNearest{};
inline constexpr enumtype::kNearestExact kNearestExact{};
inline constexpr enumtype::kBilinear kBilinear{};
inline constexpr enumtype::kBicubic kBicubic{};
inline constexpr enumtype::kTrilinear kTrilinear{};
inline constexpr enumtype::kArea kArea{};
inline constexpr enumtype::kZeros kZeros{};
inline constexpr enumtype::kBorder kBorder{};
inline constexpr enumtype::kReflection kReflection{};
inline constexpr enumtype::kRNN_TANH kRNN_TANH{};
inline constexpr enumtype::kRNN_RELU kRNN_RELU{};
inline constexpr enumtype::kLSTM kLSTM{};
inline constexpr enumtype::kGRU kGRU{};
inline constexpr enumtype::kSame kSame{};
inline constexpr enumtype::kValid kValid{};
}  // namespace ember
