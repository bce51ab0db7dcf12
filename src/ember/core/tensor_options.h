#pragma once
// TensorOptions: dtype, device and requires_grad for factory functions. Converts
// implicitly from a DType or a Device, so ember::zeros({2, 3}, ember::kInt64) works
// as in libtorch.

#include <optional>

#include "ember/core/device.h"
#include "ember/core/dtype.h"

namespace ember {

// Memory layouts, named as in libtorch. ember's tensors are all strided; the others are
// recorded in options (so code that spells them compiles) and refused by factories.
enum class Layout : int8_t { Strided, Sparse, SparseCsr, Mkldnn };
inline constexpr Layout kStrided = Layout::Strided;
inline constexpr Layout kSparse = Layout::Sparse;
inline constexpr Layout kSparseCsr = Layout::SparseCsr;
inline constexpr Layout kMkldnn = Layout::Mkldnn;

class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(DType dtype) : dtype_(dtype) {}
  TensorOptions(Device device) : device_(device) {}
  TensorOptions(DeviceType device) : device_(Device(device)) {}

  TensorOptions dtype(DType d) const {
    TensorOptions o = *this;
    o.dtype_ = d;
    return o;
  }
  TensorOptions device(Device d) const {
    TensorOptions o = *this;
    o.device_ = d;
    return o;
  }
  TensorOptions requires_grad(bool r) const {
    TensorOptions o = *this;
    o.requires_grad_ = r;
    return o;
  }

  TensorOptions layout(Layout l) const {
    TensorOptions o = *this;
    o.layout_ = l;
    return o;
  }

  // The dtype given, or the default dtype.
  DType dtype() const { return dtype_ ? *dtype_ : get_default_dtype(); }
  // The dtype given, or fallback.
  DType dtype_or(DType fallback) const { return dtype_ ? *dtype_ : fallback; }
  bool has_dtype() const { return dtype_.has_value(); }
  Device device() const { return device_; }
  bool requires_grad() const { return requires_grad_; }
  Layout layout() const { return layout_; }

 private:
  std::optional<DType> dtype_;
  Device device_{kCPU};
  bool requires_grad_ = false;
  Layout layout_ = Layout::Strided;
};

inline TensorOptions dtype(DType d) { return TensorOptions().dtype(d); }
inline TensorOptions device(Device d) { return TensorOptions().device(d); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }
inline TensorOptions layout(Layout l) { return TensorOptions().layout(l); }

}  // namespace ember
