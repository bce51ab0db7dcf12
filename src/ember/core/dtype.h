#pragma once
// Element types and PyTorch's type-promotion lattice.

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string_view>

namespace ember {

// The element types a tensor can hold. The order is ember's own; do not persist the
// numeric values (files store names).
enum class DType : int8_t {
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  Float32,
  Float64,
  Bool,
  BFloat16,
  Undefined,
};
constexpr int kNumDTypes = static_cast<int>(DType::Undefined);
using ScalarType = DType;  // libtorch's name for the same thing

inline constexpr DType kUInt8 = DType::UInt8;
inline constexpr DType kByte = DType::UInt8;
inline constexpr DType kInt8 = DType::Int8;
inline constexpr DType kChar = DType::Int8;
inline constexpr DType kInt16 = DType::Int16;
inline constexpr DType kShort = DType::Int16;
inline constexpr DType kInt32 = DType::Int32;
inline constexpr DType kInt = DType::Int32;
inline constexpr DType kInt64 = DType::Int64;
inline constexpr DType kLong = DType::Int64;
inline constexpr DType kFloat16 = DType::Float16;
inline constexpr DType kHalf = DType::Float16;
inline constexpr DType kFloat32 = DType::Float32;
inline constexpr DType kFloat = DType::Float32;
inline constexpr DType kFloat64 = DType::Float64;
inline constexpr DType kDouble = DType::Float64;
inline constexpr DType kBool = DType::Bool;
inline constexpr DType kBFloat16 = DType::BFloat16;

// Bytes per element.
size_t element_size(DType t);
// "float32", "int64", "bool", ...
std::string_view dtype_name(DType t);
std::ostream& operator<<(std::ostream& os, DType t);

constexpr bool is_floating_point(DType t) {
  return t == DType::Float16 || t == DType::Float32 || t == DType::Float64 || t == DType::BFloat16;
}
// Integer types; bool counts only when include_bool is set (as in c10::isIntegralType).
constexpr bool is_integral(DType t, bool include_bool) {
  return (t >= DType::UInt8 && t <= DType::Int64) || (include_bool && t == DType::Bool);
}
constexpr bool is_signed(DType t) { return t != DType::UInt8 && t != DType::Bool; }

// PyTorch's promote_types: the smallest type both a and b convert to without losing
// their category (bool < integer < floating). uint8 with int8 gives int16; float16
// with bfloat16 gives float32.
DType promote_types(DType a, DType b);

// The dtype tensors get when none is given (float32 unless changed).
DType get_default_dtype();
// Only floating types are accepted, as in torch.set_default_dtype.
void set_default_dtype(DType t);

}  // namespace ember
