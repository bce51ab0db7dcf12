#pragma once
// C++ indexing in libtorch's shape: x.index({Slice(1, None), None, "...", 0, mask}) is
// Python's x[1:, None, ..., 0, mask], and x.index_put_({...}, v) is x[...] = v.
//
//   using namespace ember::indexing;
//   Tensor row = x.index({0});                   // x[0]
//   Tensor odd = x.index({Slice(1, None, 2)});   // x[1::2]
//   x.index_put_({"...", Slice(None, 2)}, 0.0);  // x[..., :2] = 0
//
// Items are applied left to right as Python does (Note [Tensor indices] in
// tensor_indexing.cpp): integers select and drop a dim, slices narrow, None inserts a
// size-1 dim, an ellipsis stands for the dims no other item names, booleans insert a dim
// of size 1 (true) or 0 (false), and integer/bool tensors are advanced indices gathered
// by Tensor::index on the basic-indexed view.

#include <cstdint>
#include <iosfwd>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ember/core/tensor.h"

namespace ember::indexing {

inline constexpr int64_t INDEX_MAX = std::numeric_limits<int64_t>::max();
inline constexpr int64_t INDEX_MIN = std::numeric_limits<int64_t>::min();

// None in an index list: a new size-1 dim (Python's None / np.newaxis).
inline constexpr std::nullopt_t None = std::nullopt;

struct EllipsisIndexType final {
  EllipsisIndexType() = default;
};
inline constexpr EllipsisIndexType Ellipsis{};

// start:stop:step. A missing start is 0 (INDEX_MAX for a negative step), a missing stop
// INDEX_MAX (INDEX_MIN for a negative step), a missing step 1; tensors accept step > 0.
class Slice final {
 public:
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
        std::optional<int64_t> step = std::nullopt);
  int64_t start() const { return start_; }
  int64_t stop() const { return stop_; }
  int64_t step() const { return step_; }

 private:
  int64_t start_, stop_, step_;
};

std::ostream& operator<<(std::ostream& os, const Slice& s);

enum class TensorIndexType { None, Ellipsis, Integer, Boolean, Slice, Tensor };

// One item of an index list; implicitly made from None, Ellipsis or "...", an integer,
// a bool, a Slice or a Tensor.
class TensorIndex final {
 public:
  TensorIndex(std::nullopt_t) : type_(TensorIndexType::None) {}
  TensorIndex(EllipsisIndexType) : type_(TensorIndexType::Ellipsis) {}
  // Only "..." is accepted.
  TensorIndex(const char* str);
  TensorIndex(int64_t integer) : integer_(integer), type_(TensorIndexType::Integer) {}
  TensorIndex(int integer) : TensorIndex(static_cast<int64_t>(integer)) {}
  // Exactly bool (not anything that converts to it).
  template <class T, class = std::enable_if_t<std::is_same_v<T, bool>>>
  TensorIndex(T boolean) : boolean_(boolean), type_(TensorIndexType::Boolean) {}
  TensorIndex(Slice slice) : slice_(slice), type_(TensorIndexType::Slice) {}
  TensorIndex(Tensor tensor) : tensor_(std::move(tensor)), type_(TensorIndexType::Tensor) {}

  TensorIndexType type() const { return type_; }
  bool is_none() const { return type_ == TensorIndexType::None; }
  bool is_ellipsis() const { return type_ == TensorIndexType::Ellipsis; }
  bool is_integer() const { return type_ == TensorIndexType::Integer; }
  bool is_boolean() const { return type_ == TensorIndexType::Boolean; }
  bool is_slice() const { return type_ == TensorIndexType::Slice; }
  bool is_tensor() const { return type_ == TensorIndexType::Tensor; }
  int64_t integer() const { return integer_; }
  bool boolean() const { return boolean_; }
  const Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  int64_t integer_ = 0;
  bool boolean_ = false;
  Slice slice_;
  Tensor tensor_;
  TensorIndexType type_;
};

std::ostream& operator<<(std::ostream& os, const TensorIndex& index);
// "(i0, i1, ...)", as libtorch prints an index list.
std::ostream& operator<<(std::ostream& os, const std::vector<TensorIndex>& indices);

}  // namespace ember::indexing
