#pragma once
// Factory functions. Options default to float32 (the default dtype) on cpu; integer
// factories (arange with integer bounds, randint, randperm, full with an integer value)
// default to int64 as in PyTorch's Python API.

#include <functional>
#include <initializer_list>
#include <vector>

#include "ember/core/tensor.h"

namespace ember {

// Uninitialised memory.
Tensor empty(IntArrayRef sizes, const TensorOptions& options = {});
// Uninitialised memory with the given strides (sized to hold every addressed element).
Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, const TensorOptions& options = {});
Tensor zeros(IntArrayRef sizes, const TensorOptions& options = {});
Tensor ones(IntArrayRef sizes, const TensorOptions& options = {});
// Without a dtype, the value's kind decides: bool, int64 or the default float dtype.
Tensor full(IntArrayRef sizes, const Scalar& value, const TensorOptions& options = {});
// A 0-dim tensor holding value.
Tensor scalar_tensor(const Scalar& value, const TensorOptions& options = {});

// Same shape as t, t's dtype unless options give one.
Tensor empty_like(const Tensor& t, const TensorOptions& options = {});
Tensor zeros_like(const Tensor& t, const TensorOptions& options = {});
Tensor ones_like(const Tensor& t, const TensorOptions& options = {});
Tensor full_like(const Tensor& t, const Scalar& value, const TensorOptions& options = {});

// [start, end) in steps of step. int64 when all bounds are integers, else the default dtype.
Tensor arange(const Scalar& end, const TensorOptions& options = {});
Tensor arange(const Scalar& start, const Scalar& end, const TensorOptions& options = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step,
              const TensorOptions& options = {});
// `steps` evenly spaced values from start to end inclusive.
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps,
                const TensorOptions& options = {});
// n x m identity (m defaults to n).
Tensor eye(int64_t n, const TensorOptions& options = {});
Tensor eye(int64_t n, int64_t m, const TensorOptions& options = {});

namespace detail {
// What ember::tensor(...) is made from (libtorch's torch::detail::TensorDataContainer):
// a scalar, a braced list of them nested to any depth ({{1, 2}, {3, 4}}), or a
// std::vector of scalars. Every element of a list must have the same C++ scalar type and
// every sub-list the same sizes; the error names the first one that differs.
class TensorDataContainer {
 public:
  // {}: an empty list (a dim of size 0).
  TensorDataContainer();
  TensorDataContainer(bool v);
  TensorDataContainer(uint8_t v);
  TensorDataContainer(int8_t v);
  TensorDataContainer(int16_t v);
  TensorDataContainer(int v);
  TensorDataContainer(long v);
  TensorDataContainer(long long v);
  TensorDataContainer(float v);
  TensorDataContainer(double v);
  TensorDataContainer(Half v);
  TensorDataContainer(BFloat16 v);
  TensorDataContainer(std::initializer_list<TensorDataContainer> list);
  TensorDataContainer(const std::vector<bool>& v);
  TensorDataContainer(const std::vector<uint8_t>& v);
  TensorDataContainer(const std::vector<int8_t>& v);
  TensorDataContainer(const std::vector<int16_t>& v);
  TensorDataContainer(const std::vector<int32_t>& v);
  TensorDataContainer(const std::vector<int64_t>& v);
  TensorDataContainer(const std::vector<float>& v);
  TensorDataContainer(const std::vector<double>& v);
  // A 1-D tensor's values (ember::tensor copies them).
  explicit TensorDataContainer(Tensor values);

  bool is_scalar() const { return kind_ == Kind::Scalar; }
  bool is_init_list() const { return kind_ == Kind::List; }
  bool is_tensor() const { return kind_ == Kind::Tensor; }
  const std::vector<int64_t>& sizes() const { return sizes_; }
  // The C++ type of the elements (int -> int32, double -> float64 ...).
  DType scalar_type() const { return scalar_type_; }
  // Each accessor is an error on a container of another kind.
  const Scalar& scalar() const;
  const std::vector<TensorDataContainer>& init_list() const;
  const Tensor& tensor() const;
  // The tensor: options' dtype if given, otherwise int64 for integers, the default dtype
  // for floating values, bool for bools.
  Tensor convert(const TensorOptions& options) const;

 private:
  enum class Kind : uint8_t { Scalar, List, Tensor };
  std::vector<int64_t> sizes_;
  DType scalar_type_;
  Kind kind_;
  Scalar scalar_;
  std::vector<TensorDataContainer> list_;
  Tensor tensor_;
};

// {1.1, 2.2} / {{1, 2}, {3, 4}} / 1.1, as libtorch prints a container.
std::ostream& operator<<(std::ostream& os, const TensorDataContainer& c);
}  // namespace detail

// A tensor from C++ values (copied): ember::tensor(3.5), ember::tensor({1, 2, 3}),
// ember::tensor({{1.f, 2.f}, {3.f, 4.f}}, kFloat64), ember::tensor(std::vector<int64_t>{...}).
// Floating values give the default dtype, integers int64, bools bool, unless options
// name a dtype. A scalar gives a 0-dim tensor.
Tensor tensor(detail::TensorDataContainer data, const TensorOptions& options = {});

// Wraps memory the caller owns without copying. The tensor never frees it unless a
// deleter is given, which runs when the last view of the storage goes away.
// options.dtype() says how to read the bytes (default float32).
Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& options = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides,
                 const TensorOptions& options = {});
Tensor from_blob(void* data, IntArrayRef sizes, std::function<void(void*)> deleter,
                 const TensorOptions& options = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides,
                 std::function<void(void*)> deleter, const TensorOptions& options = {});

// ---- random (Philox; see Note [Deterministic random streams]) ----
// Uniform in [0, 1).
Tensor rand(IntArrayRef sizes, const TensorOptions& options = {});
Tensor rand(IntArrayRef sizes, Generator gen, const TensorOptions& options = {});
// Standard normal.
Tensor randn(IntArrayRef sizes, const TensorOptions& options = {});
Tensor randn(IntArrayRef sizes, Generator gen, const TensorOptions& options = {});
// Integers uniform in [low, high) (low defaults to 0); int64 by default.
Tensor randint(int64_t high, IntArrayRef sizes, const TensorOptions& options = {});
Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, const TensorOptions& options = {});
Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, Generator gen,
               const TensorOptions& options = {});
// A random permutation of 0..n-1; int64 by default.
Tensor randperm(int64_t n, const TensorOptions& options = {});
Tensor randperm(int64_t n, Generator gen, const TensorOptions& options = {});
// Normal with the given mean and std.
Tensor normal(double mean, double std, IntArrayRef sizes, Generator gen = {},
              const TensorOptions& options = {});

}  // namespace ember
