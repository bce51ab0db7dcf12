#include "ember/nn/modules/pooling.h"

#include <sstream>

#include "ember/nn/functional_extra.h"
#include "ember/ops/pool.h"

namespace ember::nn {

namespace {

// One value as "2", several as "(2, 3)", like PyTorch's repr of what was passed.
std::string value_str(const DimVector& v) {
  if (v.size() == 1) return std::to_string(v[0]);
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << ")";
  return os.str();
}

const DimVector& stride_or_kernel(const DimVector& stride, const DimVector& kernel) {
  return stride.empty() ? kernel : stride;
}

const char* py_bool(bool b) { return b ? "True" : "False"; }

}  // namespace

Tensor MaxPool2dImpl::forward(const Tensor& input) {
  const auto& o = options;
  return max_pool2d(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}

std::tuple<Tensor, Tensor> MaxPool2dImpl::forward_with_indices(const Tensor& input) {
  const auto& o = options;
  return max_pool2d_with_indices(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}

std::string MaxPool2dImpl::extra_repr() const {
  const auto& o = options;
  std::ostringstream os;
  os << "kernel_size=" << value_str(o.kernel_size()) << ", stride=" << value_str(stride_or_kernel(o.stride(), o.kernel_size()))
     << ", padding=" << value_str(o.padding()) << ", dilation=" << value_str(o.dilation())
     << ", ceil_mode=" << py_bool(o.ceil_mode());
  return os.str();
}

std::tuple<Tensor, Tensor> MaxPool1dImpl::forward_with_indices(const Tensor& input) {
  return functional::max_pool1d_with_indices(input, options);
}

Tensor MaxPool1dImpl::forward(const Tensor& input) {
  const auto& o = options;
  return max_pool1d(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}

std::string MaxPool1dImpl::extra_repr() const {
  const auto& o = options;
  std::ostringstream os;
  os << "kernel_size=" << value_str(o.kernel_size()) << ", stride=" << value_str(stride_or_kernel(o.stride(), o.kernel_size()))
     << ", padding=" << value_str(o.padding()) << ", dilation=" << value_str(o.dilation())
     << ", ceil_mode=" << py_bool(o.ceil_mode());
  return os.str();
}

Tensor AvgPool2dImpl::forward(const Tensor& input) {
  const auto& o = options;
  return avg_pool2d(input, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(), o.count_include_pad(),
                    o.divisor_override());
}

std::string AvgPool2dImpl::extra_repr() const {
  const auto& o = options;
  std::ostringstream os;
  os << "kernel_size=" << value_str(o.kernel_size()) << ", stride=" << value_str(stride_or_kernel(o.stride(), o.kernel_size()))
     << ", padding=" << value_str(o.padding());
  return os.str();
}

Tensor AvgPool1dImpl::forward(const Tensor& input) {
  const auto& o = options;
  return avg_pool1d(input, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(), o.count_include_pad());
}

std::string AvgPool1dImpl::extra_repr() const {
  const auto& o = options;
  std::ostringstream os;
  os << "kernel_size=" << value_str(o.kernel_size()) << ", stride=" << value_str(stride_or_kernel(o.stride(), o.kernel_size()))
     << ", padding=" << value_str(o.padding());
  return os.str();
}

Tensor AdaptiveAvgPool2dImpl::forward(const Tensor& input) {
  DimVector size = options.output_size();
  for (size_t i = 0; i < size.size(); ++i) {
    // A None entry keeps the input's size in that dimension.
    if (size[i] < 0 && input.dim() >= 2) size[i] = input.size(input.dim() - static_cast<int64_t>(size.size()) + static_cast<int64_t>(i));
  }
  return adaptive_avg_pool2d(input, size);
}

std::string AdaptiveAvgPool2dImpl::extra_repr() const { return "output_size=" + value_str(options.output_size()); }

}  // namespace ember::nn
