#pragma once
// Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d, with libtorch-like options:
//   nn::Conv2d conv(nn::Conv2dOptions(1, 32, 3).padding(1));
// PyTorch's default init: weight kaiming_uniform_(a = sqrt(5)), bias U(-1/sqrt(fan_in),
// 1/sqrt(fan_in)) with fan_in = weight.size(1) * prod(kernel_size).

#include <string>

#include "ember/nn/module.h"

namespace ember::nn {

// Options of a D-dimensional (transposed) convolution. Sizes given as one value apply to
// every spatial dim. padding is numbers or "same"/"valid" (convolutions only).
template <size_t D>
struct ConvOptions {
  ConvOptions(int64_t in_channels, int64_t out_channels, IntArrayRef kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(expand(kernel_size)) {}
  ConvOptions& stride(IntArrayRef v) {
    stride_ = expand(v);
    return *this;
  }
  ConvOptions& padding(IntArrayRef v) {
    padding_ = expand(v);
    padding_str_.clear();
    return *this;
  }
  ConvOptions& padding(int v) {
    const int64_t p = v;
    return padding(IntArrayRef(p));
  }
  ConvOptions& padding(const std::string& mode) {
    padding_str_ = mode;
    padding_ = expand(0);
    return *this;
  }
  ConvOptions& padding(const char* mode) { return padding(std::string(mode)); }
  ConvOptions& output_padding(IntArrayRef v) {
    output_padding_ = expand(v);
    return *this;
  }
  ConvOptions& dilation(IntArrayRef v) {
    dilation_ = expand(v);
    return *this;
  }
  ConvOptions& groups(int64_t g) {
    groups_ = g;
    return *this;
  }
  ConvOptions& bias(bool b) {
    bias_ = b;
    return *this;
  }
  // Only "zeros" is supported.
  ConvOptions& padding_mode(const std::string& mode) {
    padding_mode_ = mode;
    return *this;
  }
  int64_t in_channels() const { return in_channels_; }
  int64_t out_channels() const { return out_channels_; }
  const DimVector& kernel_size() const { return kernel_size_; }
  const DimVector& stride() const { return stride_; }
  const DimVector& padding() const { return padding_; }
  // "same", "valid", or empty when padding is numeric.
  const std::string& padding_str() const { return padding_str_; }
  const DimVector& output_padding() const { return output_padding_; }
  const DimVector& dilation() const { return dilation_; }
  int64_t groups() const { return groups_; }
  bool bias() const { return bias_; }
  const std::string& padding_mode() const { return padding_mode_; }

 private:
  static DimVector expand(IntArrayRef v) {
    DimVector out(D, v.empty() ? 0 : v[0]);
    if (v.size() == D) out = DimVector(v);
    return out;
  }
  int64_t in_channels_, out_channels_;
  DimVector kernel_size_;
  DimVector stride_ = expand(1), padding_ = expand(0), output_padding_ = expand(0), dilation_ = expand(1);
  std::string padding_str_;
  int64_t groups_ = 1;
  bool bias_ = true;
  std::string padding_mode_ = "zeros";
};

using Conv1dOptions = ConvOptions<1>;
using Conv2dOptions = ConvOptions<2>;
using ConvTranspose1dOptions = ConvOptions<1>;
using ConvTranspose2dOptions = ConvOptions<2>;
using Conv3dOptions = ConvOptions<3>;
using ConvTranspose3dOptions = ConvOptions<3>;

#define EMBER_CONV_MODULE(Name, D)                                                             \
  class Name##Impl : public Cloneable<Name##Impl> {                                           \
   public:                                                                                    \
    Name##Impl(int64_t in_channels, int64_t out_channels, IntArrayRef kernel_size)            \
        : Name##Impl(ConvOptions<D>(in_channels, out_channels, kernel_size)) {}               \
    explicit Name##Impl(const ConvOptions<D>& options);                                       \
    void reset() override;                                                                    \
    void reset_parameters();                                                                  \
    Tensor forward(const Tensor& input) override;                                             \
    std::string extra_repr() const override;                                                  \
    void pretty_print(std::ostream& stream) const override;                                   \
    ConvOptions<D> options;                                                                   \
    Tensor weight, bias;                                                                      \
  };                                                                                          \
  EMBER_MODULE(Name)

// weight: [out, in / groups, k...], bias: [out].
EMBER_CONV_MODULE(Conv1d, 1);
EMBER_CONV_MODULE(Conv2d, 2);
// weight: [in, out / groups, k...], bias: [out]; options.output_padding applies.
EMBER_CONV_MODULE(ConvTranspose1d, 1);
EMBER_CONV_MODULE(ConvTranspose2d, 2);
// 3-D: weight [out, in / groups, kD, kH, kW] (transposed: [in, out / groups, kD, kH, kW]).
EMBER_CONV_MODULE(Conv3d, 3);
EMBER_CONV_MODULE(ConvTranspose3d, 3);

#undef EMBER_CONV_MODULE

}  // namespace ember::nn
