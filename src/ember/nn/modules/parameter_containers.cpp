#include "ember/nn/modules/parameter_containers.h"

#include <ostream>

#include "ember/core/check.h"

namespace ember::nn {
namespace {

// libtorch's names of the dtypes, as its parameter containers print them.
const char* libtorch_dtype_name(DType t) {
  switch (t) {
    case kFloat32: return "Float";
    case kFloat64: return "Double";
    case kFloat16: return "Half";
    case kBFloat16: return "BFloat16";
    case kInt64: return "Long";
    case kInt32: return "Int";
    case kInt16: return "Short";
    case kInt8: return "Char";
    case kUInt8: return "Byte";
    case kBool: return "Bool";
    default: return "Unknown";
  }
}

void print_entries(std::ostream& os, const char* name, const OrderedDict<std::string, Tensor>& params) {
  os << "torch::nn::" << name << "(\n";
  for (const auto& item : params) {
    os << "(" << item.key() << "): Parameter containing: [" << libtorch_dtype_name(item.value().dtype())
       << " of size " << item.value().sizes() << "]\n";
  }
  os << ")";
}

}  // namespace

ParameterDictImpl::ParameterDictImpl(const OrderedDict<std::string, Tensor>& params) : Cloneable("ParameterDict") {
  for (const auto& item : params) insert(item.key(), item.value());
}

void ParameterDictImpl::pretty_print(std::ostream& stream) const {
  print_entries(stream, "ParameterDict", parameters_dict());
}

Tensor& ParameterDictImpl::insert(const std::string& key, const Tensor& param) {
  if (contains(key)) return parameters_dict()[key] = param;
  return register_parameter(key, param, param.requires_grad());
}

Tensor ParameterDictImpl::pop(const std::string& key) {
  Tensor v = parameters_dict()[key];
  parameters_dict().erase(key);
  return v;
}

void ParameterDictImpl::update(const ParameterDictImpl& other) {
  for (const auto& item : other) insert(item.key(), item.value());
}

void ParameterListImpl::pretty_print(std::ostream& stream) const {
  print_entries(stream, "ParameterList", parameters_dict());
}

void ParameterListImpl::append(const Tensor& param) {
  register_parameter(std::to_string(size()), param, param.requires_grad());
}

Tensor& ParameterListImpl::at(size_t idx) {
  EMBER_CHECK(idx < size(), "[nn.ParameterList] Index out of range: ", idx, " in a list of ", size(), " parameters");
  return parameters_dict()[idx].value();
}

const Tensor& ParameterListImpl::at(size_t idx) const {
  EMBER_CHECK(idx < size(), "[nn.ParameterList] Index out of range: ", idx, " in a list of ", size(), " parameters");
  return parameters_dict()[idx].value();
}

}  // namespace ember::nn
