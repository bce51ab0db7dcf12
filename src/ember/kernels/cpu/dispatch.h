#pragma once
// Internal (kernels only): from a runtime DType to a C++ element type.
//   dispatch_all(t, "op", [&](auto tag) { using T = typename decltype(tag)::type; ... });

#include <cstdint>

#include "ember/core/check.h"
#include "ember/core/dtype.h"
#include "ember/core/half.h"

namespace ember::kernels {

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) for the C++ type of t; every dtype is accepted.
template <typename F>
decltype(auto) dispatch_all(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::UInt8: return f(TypeTag<uint8_t>{});
    case DType::Int8: return f(TypeTag<int8_t>{});
    case DType::Int16: return f(TypeTag<int16_t>{});
    case DType::Int32: return f(TypeTag<int32_t>{});
    case DType::Int64: return f(TypeTag<int64_t>{});
    case DType::Float16: return f(TypeTag<Half>{});
    case DType::Float32: return f(TypeTag<float>{});
    case DType::Float64: return f(TypeTag<double>{});
    case DType::Bool: return f(TypeTag<bool>{});
    case DType::BFloat16: return f(TypeTag<BFloat16>{});
    case DType::Undefined: break;
  }
  EMBER_ERROR("[", op, "] dtype ", t, " is not supported");
}

// Floating types only.
template <typename F>
decltype(auto) dispatch_floating(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::Float16: return f(TypeTag<Half>{});
    case DType::Float32: return f(TypeTag<float>{});
    case DType::Float64: return f(TypeTag<double>{});
    case DType::BFloat16: return f(TypeTag<BFloat16>{});
    default: break;
  }
  EMBER_ERROR("[", op, "] expected a floating-point tensor, got dtype ", t);
}

// Converts between element types with PyTorch's semantics: to bool means != 0, and
// reduced-precision floats go through float.
template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return static_cast<float>(v) != 0.0f || (std::is_integral_v<From> && v != From(0));
  } else if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    return static_cast<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    // Float to integer: truncate through int64 (out-of-range values are unspecified in
    // PyTorch too; going through int64 avoids C++ UB for the common narrow types).
    if (!(v == v)) return To(0);
    if (v >= 9.2233720368547758e18 || v <= -9.2233720368547758e18) return To(0);
    return static_cast<To>(static_cast<int64_t>(v));
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace ember::kernels

namespace ember::kernels {

// The DType of a C++ element type.
template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, uint8_t>) return kUInt8;
  else if constexpr (std::is_same_v<T, int8_t>) return kInt8;
  else if constexpr (std::is_same_v<T, int16_t>) return kInt16;
  else if constexpr (std::is_same_v<T, int32_t>) return kInt32;
  else if constexpr (std::is_same_v<T, int64_t>) return kInt64;
  else if constexpr (std::is_same_v<T, Half>) return kFloat16;
  else if constexpr (std::is_same_v<T, float>) return kFloat32;
  else if constexpr (std::is_same_v<T, double>) return kFloat64;
  else if constexpr (std::is_same_v<T, bool>) return kBool;
  else if constexpr (std::is_same_v<T, BFloat16>) return kBFloat16;
  else return DType::Undefined;
}

}  // namespace ember::kernels
