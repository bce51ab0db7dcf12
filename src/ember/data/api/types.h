#pragma once
// libtorch-style data API (torch::data), part 1: the vocabulary types. See
// ember/data/torch_data.h for the overview and docs/data.md ("libtorch-style data API").
//
// Everything lives in ember::data::api, not in ember::data itself: ember's own data API
// already has a non-template ember::data::Example, DataLoaderOptions and
// transforms::Normalize, which libtorch spells as templates/other classes. A libtorch
// compatibility header maps the namespace: namespace torch { namespace data = ember::data::api; }

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/ember.h"

namespace ember::data::api {

// A non-owning view of contiguous elements (c10::ArrayRef): built from a vector, an
// initializer list (valid for the full-expression), a pointer and length, or one element.
template <typename T>
class ArrayRef {
 public:
  using value_type = T;
  using iterator = const T*;
  using const_iterator = const T*;
  using size_type = size_t;

  constexpr ArrayRef() = default;
  constexpr ArrayRef(const T& one) : data_(&one), size_(1) {}  // NOLINT: implicit like c10
  constexpr ArrayRef(const T* data, size_t size) : data_(data), size_(size) {}
  constexpr ArrayRef(const T* begin, const T* end) : data_(begin), size_(static_cast<size_t>(end - begin)) {}
  template <typename A>
  ArrayRef(const std::vector<T, A>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  // The list's array lives until the end of the full-expression (a call's argument).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  constexpr ArrayRef(const std::initializer_list<T>& list)  // NOLINT
      : data_(list.begin() == list.end() ? nullptr : list.begin()), size_(list.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

  constexpr const T* begin() const { return data_; }
  constexpr const T* end() const { return data_ + size_; }
  constexpr const T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  const T& front() const {
    EMBER_CHECK(size_ > 0, "[ArrayRef] front() of an empty ArrayRef");
    return data_[0];
  }
  const T& back() const {
    EMBER_CHECK(size_ > 0, "[ArrayRef] back() of an empty ArrayRef");
    return data_[size_ - 1];
  }
  constexpr const T& operator[](size_t i) const { return data_[i]; }
  const T& at(size_t i) const {
    EMBER_CHECK(i < size_, "[ArrayRef] index ", i, " out of range for size ", size_);
    return data_[i];
  }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }
  // Where ember takes a std::vector (tensor lists) or an IntArrayRef (sizes).
  operator std::vector<T>() const { return vec(); }  // NOLINT: implicit like c10
  operator IntArrayRef() const  // NOLINT
    requires std::is_same_v<T, int64_t>
  {
    return IntArrayRef(data_, size_);
  }
  bool equals(ArrayRef other) const {
    if (size_ != other.size_) return false;
    for (size_t i = 0; i < size_; ++i)
      if (!(data_[i] == other.data_[i])) return false;
    return true;
  }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

template <typename T>
bool operator==(ArrayRef<T> a, ArrayRef<T> b) {
  return a.equals(b);
}

namespace example {
// The target type of an unlabeled example (TensorExample).
using NoTarget = void;
}  // namespace example

// One example: data and target (torch::data::Example). Example<> is a pair of tensors.
template <typename Data = Tensor, typename Target = Tensor>
struct Example {
  using DataType = Data;
  using TargetType = Target;

  Example() = default;
  Example(Data data, Target target) : data(std::move(data)), target(std::move(target)) {}

  Data data;
  Target target;
};

// An example with data only (Example<Data, NoTarget>).
template <typename Data>
struct Example<Data, example::NoTarget> {
  using DataType = Data;
  using TargetType = example::NoTarget;

  Example() = default;
  /* implicit */ Example(Data data) : data(std::move(data)) {}  // NOLINT

  // Lets an Example<Data, NoTarget> stand in for its data.
  operator Data&() { return data; }
  operator const Data&() const { return data; }

  Data data;
};

using TensorExample = Example<Tensor, example::NoTarget>;

namespace detail {

template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};

// optional<T> when the condition holds, else T.
template <bool Cond, typename T>
using optional_if_t = std::conditional_t<Cond, std::optional<T>, T>;

// Throws ember::Error (a std::runtime_error) with the message.
template <typename... Args>
inline void check(bool cond, const Args&... args) {
  if (!cond) ::ember::detail::throw_error(args...);
}

}  // namespace detail
}  // namespace ember::data::api
