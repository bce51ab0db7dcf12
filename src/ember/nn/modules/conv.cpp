#include "ember/nn/modules/conv.h"

#include <ostream>

#include "ember/nn/functional_extra.h"

#include <cmath>
#include <sstream>

#include "ember/core/check.h"
#include "ember/nn/init.h"
#include "ember/ops/conv.h"
#include "ember/ops/creation.h"

namespace ember::nn {

namespace {

// "(3, 3)" / "(3,)", as Python prints tuples.
std::string tuple_str(const DimVector& v) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << (v.size() == 1 ? ",)" : ")");
  return os.str();
}

bool all_equal(const DimVector& v, int64_t x) {
  for (int64_t e : v) {
    if (e != x) return false;
  }
  return true;
}

template <size_t D>
void check_options(const char* name, const ConvOptions<D>& o, bool transposed) {
  EMBER_CHECK(o.in_channels() > 0 && o.out_channels() > 0, "[nn.", name,
              "] in_channels and out_channels must be positive, got ", o.in_channels(), " and ", o.out_channels());
  EMBER_CHECK(o.groups() > 0, "[nn.", name, "] groups must be positive, got ", o.groups());
  EMBER_CHECK(o.in_channels() % o.groups() == 0, "[nn.", name, "] in_channels (", o.in_channels(),
              ") must be divisible by groups (", o.groups(), ")");
  EMBER_CHECK(o.out_channels() % o.groups() == 0, "[nn.", name, "] out_channels (", o.out_channels(),
              ") must be divisible by groups (", o.groups(), ")");
  const std::string& mode = o.padding_mode();
  EMBER_CHECK(mode == "zeros" || mode == "reflect" || mode == "replicate" || mode == "circular", "[nn.", name,
              "] padding_mode must be zeros, reflect, replicate or circular, got '", mode, "'");
  EMBER_CHECK(mode == "zeros" || o.padding_str() != "same", "[nn.", name, "] padding='same' needs padding_mode zeros, got '",
              mode, "'; give the padding as numbers");
  EMBER_CHECK(!transposed || o.padding_str().empty(), "[nn.", name, "] padding must be numbers for ", name);
  EMBER_CHECK(o.padding_str().empty() || o.padding_str() == "same" || o.padding_str() == "valid", "[nn.", name,
              "] padding must be \"same\", \"valid\" or numbers, got \"", o.padding_str(), "\"");
  EMBER_CHECK(o.padding_str() != "same" || all_equal(o.stride(), 1), "[nn.", name,
              "] padding='same' is not supported for strided convolutions");
}

template <size_t D>
void make_parameters(Module& m, const ConvOptions<D>& o, bool transposed, Tensor& weight, Tensor& bias) {
  DimVector shape = transposed ? DimVector{o.in_channels(), o.out_channels() / o.groups()}
                               : DimVector{o.out_channels(), o.in_channels() / o.groups()};
  for (int64_t k : o.kernel_size()) shape.push_back(k);
  weight = m.register_parameter("weight", empty(shape));
  bias = m.register_parameter("bias", o.bias() ? empty({o.out_channels()}) : Tensor(), o.bias());
}

void init_parameters(Tensor& weight, Tensor& bias) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

// PyTorch's _ConvNd.extra_repr.
template <size_t D>
std::string conv_repr(const ConvOptions<D>& o, bool transposed) {
  std::ostringstream os;
  os << o.in_channels() << ", " << o.out_channels() << ", kernel_size=" << tuple_str(o.kernel_size())
     << ", stride=" << tuple_str(o.stride());
  if (!o.padding_str().empty()) {
    os << ", padding=" << o.padding_str();
  } else if (!all_equal(o.padding(), 0)) {
    os << ", padding=" << tuple_str(o.padding());
  }
  if (!all_equal(o.dilation(), 1)) os << ", dilation=" << tuple_str(o.dilation());
  if (transposed && !all_equal(o.output_padding(), 0)) os << ", output_padding=" << tuple_str(o.output_padding());
  if (o.groups() != 1) os << ", groups=" << o.groups();
  if (!o.bias()) os << ", bias=False";
  if (o.padding_mode() != "zeros") os << ", padding_mode=" << o.padding_mode();
  return os.str();
}

// libtorch's format: sizes as [a, b] lists (a single value for 1-D), options only when set.
void list_print(std::ostream& os, IntArrayRef v) {
  if (v.size() == 1) {
    os << v[0];
    return;
  }
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
}

template <size_t D>
void conv_print(std::ostream& os, const char* name, const ConvOptions<D>& o, bool transposed) {
  os << "torch::nn::" << name << "(" << o.in_channels() << ", " << o.out_channels() << ", kernel_size=";
  list_print(os, o.kernel_size());
  os << ", stride=";
  list_print(os, o.stride());
  if (!o.padding_str().empty()) {
    os << ", padding=k" << (o.padding_str() == "same" ? "Same" : "Valid");
  } else if (!all_equal(o.padding(), 0)) {
    os << ", padding=";
    list_print(os, o.padding());
  }
  if (!all_equal(o.dilation(), 1)) {
    os << ", dilation=";
    list_print(os, o.dilation());
  }
  if (transposed && !all_equal(o.output_padding(), 0)) {
    os << ", output_padding=";
    list_print(os, o.output_padding());
  }
  if (o.groups() != 1) os << ", groups=" << o.groups();
  if (!o.bias()) os << ", bias=false";
  if (o.padding_mode() != "zeros") os << ", padding_mode=k" << (o.padding_mode() == "reflect" ? "Reflect" : o.padding_mode() == "replicate" ? "Replicate" : "Circular");
  os << ")";
}

}  // namespace

#define EMBER_CONV_MODULE_IMPL(Name, D, transposed)                                         \
  Name##Impl::Name##Impl(const ConvOptions<D>& options_) : Cloneable(#Name), options(options_) { \
    check_options(#Name, options, transposed);                                            \
    reset();                                                                              \
  }                                                                                       \
  void Name##Impl::reset() {                                                              \
    make_parameters(*this, options, transposed, weight, bias);                           \
    reset_parameters();                                                                   \
  }                                                                                       \
  void Name##Impl::reset_parameters() { init_parameters(weight, bias); }                  \
  std::string Name##Impl::extra_repr() const { return conv_repr(options, transposed); }  \
  void Name##Impl::pretty_print(std::ostream& stream) const { conv_print(stream, #Name, options, transposed); }

EMBER_CONV_MODULE_IMPL(Conv1d, 1, false)
EMBER_CONV_MODULE_IMPL(Conv2d, 2, false)
EMBER_CONV_MODULE_IMPL(ConvTranspose1d, 1, true)
EMBER_CONV_MODULE_IMPL(ConvTranspose2d, 2, true)
EMBER_CONV_MODULE_IMPL(Conv3d, 3, false)
EMBER_CONV_MODULE_IMPL(ConvTranspose3d, 3, true)

#undef EMBER_CONV_MODULE_IMPL

namespace {
// padding_mode reflect / replicate / circular: the input padded by that mode (the
// convolution then runs with no padding), as PyTorch's _ConvNd does.
template <size_t D>
Tensor mode_padded(const Tensor& input, const ConvOptions<D>& o) {
  std::vector<int64_t> pads;
  if (o.padding_str().empty()) {
    for (size_t d = D; d-- > 0;) {
      pads.push_back(o.padding()[d]);
      pads.push_back(o.padding()[d]);
    }
  } else {
    pads.assign(2 * D, 0);  // 'valid'
  }
  return functional::pad(input, functional::PadFuncOptions(pads).mode(o.padding_mode()));
}
template <size_t D>
void check_transposed_mode(const char* name, const ConvOptions<D>& o) {
  EMBER_CHECK(o.padding_mode() == "zeros", "[nn.", name, "] Only `zeros` padding mode is supported for ", name,
              ", got '", o.padding_mode(), "'");
}
}  // namespace

Tensor Conv1dImpl::forward(const Tensor& input) {
  const auto& o = options;
  if (o.padding_mode() != "zeros") {
    return conv1d(mode_padded(input, o), weight, bias, o.stride(), IntArrayRef(0), o.dilation(), o.groups());
  }
  if (!o.padding_str().empty()) {
    return conv1d(input, weight, bias, o.stride(), o.padding_str().c_str(), o.dilation(), o.groups());
  }
  return conv1d(input, weight, bias, o.stride(), IntArrayRef(o.padding()), o.dilation(), o.groups());
}

Tensor Conv2dImpl::forward(const Tensor& input) {
  const auto& o = options;
  if (o.padding_mode() != "zeros") {
    return conv2d(mode_padded(input, o), weight, bias, o.stride(), IntArrayRef({0, 0}), o.dilation(), o.groups());
  }
  if (!o.padding_str().empty()) {
    return conv2d(input, weight, bias, o.stride(), o.padding_str().c_str(), o.dilation(), o.groups());
  }
  return conv2d(input, weight, bias, o.stride(), IntArrayRef(o.padding()), o.dilation(), o.groups());
}

Tensor ConvTranspose1dImpl::forward(const Tensor& input) {
  const auto& o = options;
  check_transposed_mode("ConvTranspose1d", o);
  return conv_transpose1d(input, weight, bias, o.stride(), o.padding(), o.output_padding(), o.groups(),
                          o.dilation());
}

Tensor ConvTranspose2dImpl::forward(const Tensor& input) {
  const auto& o = options;
  check_transposed_mode("ConvTranspose2d", o);
  return conv_transpose2d(input, weight, bias, o.stride(), o.padding(), o.output_padding(), o.groups(),
                          o.dilation());
}

Tensor Conv3dImpl::forward(const Tensor& input) {
  const auto& o = options;
  auto fo = functional::Conv3dFuncOptions().bias(bias).stride(IntArrayRef(o.stride())).dilation(IntArrayRef(o.dilation())).groups(o.groups());
  if (o.padding_mode() != "zeros") {
    fo.padding(ExpandingArray<3>(0));
    return functional::conv3d(mode_padded(input, o), weight, fo);
  }
  if (!o.padding_str().empty()) {
    fo.padding(o.padding_str());
  } else {
    fo.padding(ExpandingArray<3>(IntArrayRef(o.padding())));
  }
  return functional::conv3d(input, weight, fo);
}

Tensor ConvTranspose3dImpl::forward(const Tensor& input) {
  const auto& o = options;
  check_transposed_mode("ConvTranspose3d", o);
  return functional::conv_transpose3d(input, weight, bias, o.stride(), o.padding(), o.output_padding(), o.groups(),
                                      o.dilation());
}

}  // namespace ember::nn
