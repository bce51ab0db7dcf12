#pragma once
// Conversions between ember and libtorch objects for the parity tests.

#include <torch/torch.h>

#include <ember/ember.h>

#include <cstring>
#include <stdexcept>

namespace parity {

inline torch::Dtype to_torch(ember::DType t) {
  switch (t) {
    case ember::kUInt8: return torch::kUInt8;
    case ember::kInt8: return torch::kInt8;
    case ember::kInt16: return torch::kInt16;
    case ember::kInt32: return torch::kInt32;
    case ember::kInt64: return torch::kInt64;
    case ember::kFloat16: return torch::kFloat16;
    case ember::kFloat32: return torch::kFloat32;
    case ember::kFloat64: return torch::kFloat64;
    case ember::kBool: return torch::kBool;
    case ember::kBFloat16: return torch::kBFloat16;
    default: throw std::runtime_error("no torch dtype");
  }
}

inline ember::DType to_ember(torch::Dtype t) {
  for (int i = 0; i < ember::kNumDTypes; ++i) {
    if (to_torch(static_cast<ember::DType>(i)) == t) return static_cast<ember::DType>(i);
  }
  throw std::runtime_error("no ember dtype");
}

// A torch tensor with the same sizes, strides and bytes as t (copies the storage span).
inline torch::Tensor to_torch(const ember::Tensor& t) {
  ember::Tensor c = t.contiguous();
  torch::Tensor out = torch::empty(c.sizes().vec(), torch::TensorOptions().dtype(to_torch(t.dtype())));
  if (c.nbytes()) std::memcpy(out.data_ptr(), c.data_ptr(), c.nbytes());
  return out;
}

// An ember tensor with t's sizes and values (contiguous copy).
inline ember::Tensor to_ember(const torch::Tensor& t) {
  torch::Tensor c = t.contiguous();
  ember::Tensor out = ember::empty(c.sizes().vec(), to_ember(c.scalar_type()));
  if (out.nbytes()) std::memcpy(out.data_ptr(), c.data_ptr(), out.nbytes());
  return out;
}

}  // namespace parity
