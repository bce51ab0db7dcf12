#pragma once
// TensorOptions: dtype, device and requires_grad for factory functions. Converts
// implicitly from a DType or a Device, so ember::zeros({2, 3}, ember::kInt64) works
// as in libtorch.

#include <optional>

#include "ember/core/device.h"
#include "ember/core/dtype.h"

namespace ember {

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

  // The dtype given, or the default dtype.
  DType dtype() const { return dtype_ ? *dtype_ : get_default_dtype(); }
  // The dtype given, or fallback.
  DType dtype_or(DType fallback) const { return dtype_ ? *dtype_ : fallback; }
  bool has_dtype() const { return dtype_.has_value(); }
  Device device() const { return device_; }
  bool requires_grad() const { return requires_grad_; }

 private:
  std::optional<DType> dtype_;
  Device device_{kCPU};
  bool requires_grad_ = false;
};

inline TensorOptions dtype(DType d) { return TensorOptions().dtype(d); }
inline TensorOptions device(Device d) { return TensorOptions().device(d); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }

}  // namespace ember
