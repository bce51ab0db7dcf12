#pragma once
// Scalar: a number that is not a tensor (a Python float/int/bool in torch's terms).
// Scalars take part in type promotion only by category: adding 2.5 to an int tensor
// gives the default float dtype, adding 2 to a float16 tensor stays float16.

#include <cstdint>
#include <iosfwd>
#include <type_traits>

#include "ember/core/dtype.h"
#include "ember/core/half.h"

namespace ember {

class Scalar {
 public:
  enum class Kind : uint8_t { Floating, Integral, Boolean };

  Scalar() : Scalar(int64_t(0)) {}
  Scalar(bool v) : kind_(Kind::Boolean) { i_ = v; }
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(Kind::Integral) {
    i_ = static_cast<int64_t>(v);
  }
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : kind_(Kind::Floating) {
    d_ = static_cast<double>(v);
  }
  Scalar(Half v) : Scalar(static_cast<float>(v)) {}
  Scalar(BFloat16 v) : Scalar(static_cast<float>(v)) {}

  Kind kind() const { return kind_; }
  bool is_floating_point() const { return kind_ == Kind::Floating; }
  bool is_integral() const { return kind_ == Kind::Integral; }
  bool is_boolean() const { return kind_ == Kind::Boolean; }
  // float64, int64 or bool: the dtype of the wrapped value before category rules apply.
  DType dtype() const {
    return kind_ == Kind::Floating ? kFloat64 : kind_ == Kind::Integral ? kInt64 : kBool;
  }

  double to_double() const { return kind_ == Kind::Floating ? d_ : static_cast<double>(i_); }
  int64_t to_long() const { return kind_ == Kind::Floating ? static_cast<int64_t>(d_) : i_; }
  bool to_bool() const { return kind_ == Kind::Floating ? d_ != 0.0 : i_ != 0; }
  // libtorch's spellings (c10::Scalar::toDouble() ...).
  double toDouble() const { return to_double(); }
  float toFloat() const { return static_cast<float>(to_double()); }
  int64_t toLong() const { return to_long(); }
  int toInt() const { return static_cast<int>(to_long()); }
  bool toBool() const { return to_bool(); }
  bool isFloatingPoint() const { return is_floating_point(); }
  bool isIntegral(bool include_bool) const { return is_integral() || (include_bool && is_boolean()); }
  bool isBoolean() const { return is_boolean(); }
  DType type() const { return dtype(); }

  // Converts with C++ semantics (float to int truncates).
  template <typename T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) {
      return to_bool();
    } else if constexpr (std::is_integral_v<T>) {
      return kind_ == Kind::Floating ? static_cast<T>(d_) : static_cast<T>(i_);
    } else {
      return static_cast<T>(static_cast<float>(to_double()));
    }
  }

 private:
  Kind kind_;
  union {
    double d_;
    int64_t i_;
  };
};

template <>
inline double Scalar::to<double>() const {
  return to_double();
}

std::ostream& operator<<(std::ostream& os, const Scalar& s);

}  // namespace ember
