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

// Tensors from C++ values (copies). Floating values give the default dtype, integers
// int64, bools bool, unless options name a dtype.
Tensor tensor(std::initializer_list<double> values, const TensorOptions& options = {});
Tensor tensor(std::initializer_list<float> values, const TensorOptions& options = {});
Tensor tensor(std::initializer_list<int> values, const TensorOptions& options = {});
Tensor tensor(std::initializer_list<int64_t> values, const TensorOptions& options = {});
Tensor tensor(std::initializer_list<bool> values, const TensorOptions& options = {});
Tensor tensor(std::initializer_list<std::initializer_list<double>> rows,
              const TensorOptions& options = {});
Tensor tensor(std::initializer_list<std::initializer_list<int>> rows,
              const TensorOptions& options = {});
Tensor tensor(const std::vector<double>& values, const TensorOptions& options = {});
Tensor tensor(const std::vector<float>& values, const TensorOptions& options = {});
Tensor tensor(const std::vector<int64_t>& values, const TensorOptions& options = {});
Tensor tensor(const std::vector<int32_t>& values, const TensorOptions& options = {});
Tensor tensor(const std::vector<uint8_t>& values, const TensorOptions& options = {});
Tensor tensor(const std::vector<bool>& values, const TensorOptions& options = {});
// A 0-dim tensor (libtorch's torch::tensor(3.5)).
Tensor tensor(double value, const TensorOptions& options = {});
Tensor tensor(int64_t value, const TensorOptions& options = {});
Tensor tensor(int value, const TensorOptions& options = {});
Tensor tensor(bool value, const TensorOptions& options = {});

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
