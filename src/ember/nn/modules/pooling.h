#pragma once
// MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, MaxPool1d, AvgPool1d with libtorch-like options:
//   nn::MaxPool2d pool(nn::MaxPool2dOptions(2).stride(2));
// An unset stride means stride = kernel_size, as in PyTorch.

#include <optional>
#include <string>
#include <tuple>

#include "ember/nn/module.h"

namespace ember::nn {

struct MaxPoolOptions {
  MaxPoolOptions(IntArrayRef kernel_size) : kernel_size_(kernel_size) {}  // NOLINT: implicit like libtorch
  MaxPoolOptions(int64_t kernel_size) : kernel_size_{kernel_size} {}      // NOLINT
  MaxPoolOptions& stride(IntArrayRef v) {
    stride_ = DimVector(v);
    return *this;
  }
  MaxPoolOptions& padding(IntArrayRef v) {
    padding_ = DimVector(v);
    return *this;
  }
  MaxPoolOptions& dilation(IntArrayRef v) {
    dilation_ = DimVector(v);
    return *this;
  }
  MaxPoolOptions& ceil_mode(bool b) {
    ceil_mode_ = b;
    return *this;
  }
  const DimVector& kernel_size() const { return kernel_size_; }
  // Empty: the kernel size.
  const DimVector& stride() const { return stride_; }
  const DimVector& padding() const { return padding_; }
  const DimVector& dilation() const { return dilation_; }
  bool ceil_mode() const { return ceil_mode_; }

 private:
  DimVector kernel_size_, stride_, padding_{0}, dilation_{1};
  bool ceil_mode_ = false;
};

struct AvgPoolOptions {
  AvgPoolOptions(IntArrayRef kernel_size) : kernel_size_(kernel_size) {}  // NOLINT: implicit like libtorch
  AvgPoolOptions(int64_t kernel_size) : kernel_size_{kernel_size} {}      // NOLINT
  AvgPoolOptions& stride(IntArrayRef v) {
    stride_ = DimVector(v);
    return *this;
  }
  AvgPoolOptions& padding(IntArrayRef v) {
    padding_ = DimVector(v);
    return *this;
  }
  AvgPoolOptions& ceil_mode(bool b) {
    ceil_mode_ = b;
    return *this;
  }
  AvgPoolOptions& count_include_pad(bool b) {
    count_include_pad_ = b;
    return *this;
  }
  AvgPoolOptions& divisor_override(std::optional<int64_t> d) {
    divisor_override_ = d;
    return *this;
  }
  const DimVector& kernel_size() const { return kernel_size_; }
  const DimVector& stride() const { return stride_; }
  const DimVector& padding() const { return padding_; }
  bool ceil_mode() const { return ceil_mode_; }
  bool count_include_pad() const { return count_include_pad_; }
  std::optional<int64_t> divisor_override() const { return divisor_override_; }

 private:
  DimVector kernel_size_, stride_, padding_{0};
  bool ceil_mode_ = false, count_include_pad_ = true;
  std::optional<int64_t> divisor_override_;
};

using MaxPool1dOptions = MaxPoolOptions;
using MaxPool2dOptions = MaxPoolOptions;
using AvgPool1dOptions = AvgPoolOptions;
using AvgPool2dOptions = AvgPoolOptions;
using MaxPool3dOptions = MaxPoolOptions;
using AvgPool3dOptions = AvgPoolOptions;

struct AdaptiveAvgPool2dOptions {
  AdaptiveAvgPool2dOptions(IntArrayRef output_size) : output_size_(output_size) {}  // NOLINT
  AdaptiveAvgPool2dOptions(int64_t output_size) : output_size_{output_size} {}      // NOLINT
  AdaptiveAvgPool2dOptions(std::initializer_list<int64_t> s) : output_size_(IntArrayRef(s)) {}  // NOLINT
  // {5, nullopt}: an empty entry keeps that input dimension's size (stored as -1).
  AdaptiveAvgPool2dOptions(std::initializer_list<std::optional<int64_t>> s) {  // NOLINT
    for (const auto& v : s) output_size_.push_back(v ? *v : -1);
  }
  const DimVector& output_size() const { return output_size_; }

 private:
  DimVector output_size_;
};

class MaxPool2dImpl : public Cloneable<MaxPool2dImpl> {
 public:
  explicit MaxPool2dImpl(const MaxPool2dOptions& options) : Cloneable("MaxPool2d"), options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input) override;
  // The maxima and their flat indices within each plane (for MaxUnpool-style uses).
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  std::string extra_repr() const override;
  MaxPool2dOptions options;
};
EMBER_MODULE(MaxPool2d);

class MaxPool1dImpl : public Cloneable<MaxPool1dImpl> {
 public:
  explicit MaxPool1dImpl(const MaxPool1dOptions& options) : Cloneable("MaxPool1d"), options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input) override;
  // The maxima and their indices along the length.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  std::string extra_repr() const override;
  MaxPool1dOptions options;
};
EMBER_MODULE(MaxPool1d);

class AvgPool2dImpl : public Cloneable<AvgPool2dImpl> {
 public:
  explicit AvgPool2dImpl(const AvgPool2dOptions& options) : Cloneable("AvgPool2d"), options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  AvgPool2dOptions options;
};
EMBER_MODULE(AvgPool2d);

class AvgPool1dImpl : public Cloneable<AvgPool1dImpl> {
 public:
  explicit AvgPool1dImpl(const AvgPool1dOptions& options) : Cloneable("AvgPool1d"), options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  AvgPool1dOptions options;
};
EMBER_MODULE(AvgPool1d);

class AdaptiveAvgPool2dImpl : public Cloneable<AdaptiveAvgPool2dImpl> {
 public:
  explicit AdaptiveAvgPool2dImpl(const AdaptiveAvgPool2dOptions& options)
      : Cloneable("AdaptiveAvgPool2d"), options(options) {}
  void reset() override {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  AdaptiveAvgPool2dOptions options;
};
EMBER_MODULE(AdaptiveAvgPool2d);

}  // namespace ember::nn
