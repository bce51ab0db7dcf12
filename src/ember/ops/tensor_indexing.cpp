// libtorch-style index lists (Tensor::index / index_put_ with TensorIndex items), and
// the two in-place metadata ops libtorch code relies on: resize_ and set_data.

#include "ember/ops/tensor_indexing.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "ember/core/check.h"
#include "ember/core/op_name_scope.h"
#include "ember/core/storage.h"
#include "ember/core/warning.h"
#include "ember/ops/creation.h"

namespace ember {
namespace indexing {

Slice::Slice(std::optional<int64_t> start, std::optional<int64_t> stop, std::optional<int64_t> step) {
  step_ = step.value_or(1);
  EMBER_CHECK(step_ != 0, "[Slice] slice step cannot be zero");
  start_ = start.value_or(step_ < 0 ? INDEX_MAX : 0);
  stop_ = stop.value_or(step_ < 0 ? INDEX_MIN : INDEX_MAX);
}

std::ostream& operator<<(std::ostream& os, const Slice& s) {
  return os << s.start() << ":" << s.stop() << ":" << s.step();
}

TensorIndex::TensorIndex(const char* str) : type_(TensorIndexType::Ellipsis) {
  EMBER_CHECK(str != nullptr && std::strcmp(str, "...") == 0,
              "[TensorIndex] Expected \"...\" to represent an ellipsis index, but got \"", str ? str : "(null)",
              "\"");
}

std::ostream& operator<<(std::ostream& os, const TensorIndex& index) {
  switch (index.type()) {
    case TensorIndexType::None: return os << "None";
    case TensorIndexType::Ellipsis: return os << "...";
    case TensorIndexType::Integer: return os << index.integer();
    case TensorIndexType::Boolean: return os << (index.boolean() ? "true" : "false");
    case TensorIndexType::Slice: return os << index.slice();
    case TensorIndexType::Tensor: return os << index.tensor();
  }
  return os;
}

std::ostream& operator<<(std::ostream& os, const std::vector<TensorIndex>& indices) {
  os << "(";
  for (size_t i = 0; i < indices.size(); ++i) {
    if (i > 0) os << ", ";
    os << indices[i];
  }
  return os << ")";
}

}  // namespace indexing

namespace {

using indexing::TensorIndex;
using indexing::TensorIndexType;

// Note [Tensor indices]: an index list is applied as Python applies x[...]. Integers,
// slices, None, ellipses and bools build a view of self (basic indexing); integer and
// bool tensors are collected per dim of that view and gathered afterwards by the
// tensor-list Tensor::index (advanced indexing), so nothing is copied before the gather.
struct Indexed {
  Tensor view;
  std::vector<Tensor> advanced;  // per dim of view; undefined = the whole dim
};

Indexed apply_indices(const Tensor& self, const TensorIndex* items, size_t count, const char* op) {
  EMBER_CHECK(self.defined(), "[", op, "] called on an undefined tensor");
  EMBER_CHECK(count > 0, "[", op, "] Passing an empty index list to Tensor::", op == std::string("index") ? "index" : "index_put_",
              "() is not valid syntax; index with a Slice() to take every element");
  // Dims of self the items consume (None, ..., bools consume none; a bool tensor its ndim).
  int64_t consumed = 0;
  int ellipses = 0;
  for (size_t i = 0; i < count; ++i) {
    const TensorIndex& it = items[i];
    if (it.is_none() || it.is_boolean()) continue;
    if (it.is_ellipsis()) {
      ++ellipses;
      continue;
    }
    if (it.is_tensor() && it.tensor().defined() &&
        (it.tensor().dtype() == kBool || it.tensor().dtype() == kUInt8)) {
      consumed += it.tensor().dim();  // a 0-dim mask acts like a bool
      continue;
    }
    ++consumed;
  }
  EMBER_CHECK(ellipses <= 1, "[", op, "] an index can only have a single ellipsis ('...')");
  EMBER_CHECK(self.dim() > 0 || consumed == 0, "[", op, "] too many indices for tensor of dimension 0: invalid index ",
              "of a 0-dim tensor; use item<T>() to read its value, or index it with None, ... or a bool");
  EMBER_CHECK(consumed <= self.dim(), "[", op, "] too many indices for tensor of dimension ", self.dim(),
              " (got ", consumed, ")");

  Indexed r;
  r.view = self;
  int64_t dim = 0;      // the dim of r.view the next item applies to
  int64_t src_dim = 0;  // the same dim counted in self (for messages)
  std::vector<std::pair<int64_t, Tensor>> adv;
  for (size_t i = 0; i < count; ++i) {
    const TensorIndex& it = items[i];
    switch (it.type()) {
      case TensorIndexType::Integer: {
        EMBER_CHECK(r.view.dim() > 0, "[", op, "] invalid index of a 0-dim tensor; use item() to read its value");
        const int64_t n = r.view.size(dim), k = it.integer();
        EMBER_CHECK(k >= -n && k < n, "[", op, "] index ", k, " is out of bounds for dimension ", src_dim,
                    " with size ", n);
        r.view = r.view.select(dim, k);
        ++src_dim;
        break;
      }
      case TensorIndexType::Slice: {
        const indexing::Slice& s = it.slice();
        EMBER_CHECK(s.step() > 0, "[", op, "] step must be greater than zero, got ", s.step());
        EMBER_CHECK(r.view.dim() > 0, "[", op, "] cannot slice a 0-dim tensor");
        const int64_t n = r.view.size(dim);
        if (!(s.start() == 0 && s.stop() >= n && s.step() == 1)) {
          r.view = r.view.slice(dim, std::clamp<int64_t>(s.start(), -n - 1, n),
                                std::clamp<int64_t>(s.stop(), -n - 1, n), s.step());
        }
        ++dim;
        ++src_dim;
        break;
      }
      case TensorIndexType::None:
        r.view = r.view.unsqueeze(dim);
        ++dim;
        break;
      case TensorIndexType::Ellipsis:
        dim += self.dim() - consumed;
        src_dim += self.dim() - consumed;
        break;
      case TensorIndexType::Boolean:
        // x[True] / x[False]: a new dim indexed by [0] or by nothing, an advanced index
        // like any other (so x[True, True] adds one dim, not two, as in Python).
        r.view = r.view.unsqueeze(dim);
        adv.emplace_back(dim, it.boolean() ? zeros({1}, TensorOptions(kInt64)) : empty({0}, TensorOptions(kInt64)));
        ++dim;
        break;
      case TensorIndexType::Tensor: {
        const Tensor& t = it.tensor();
        if (!t.defined()) {  // an undefined tensor stands for the whole dim
          ++dim;
          ++src_dim;
          break;
        }
        if (t.dim() == 0 && t.dtype() != kBool && t.dtype() != kUInt8 && !is_floating_point(t.dtype())) {
          // A 0-dim integer tensor selects, as an integer does (so the result is a view).
          EMBER_CHECK(r.view.dim() > 0, "[", op, "] invalid index of a 0-dim tensor; use item() to read its value");
          const int64_t n = r.view.size(dim), k = t.item<int64_t>();
          EMBER_CHECK(k >= -n && k < n, "[", op, "] index ", k, " is out of bounds for dimension ", src_dim,
                      " with size ", n);
          r.view = r.view.select(dim, k);
          ++src_dim;
          break;
        }
        if (t.dtype() == kUInt8) {
          warn(std::string("[") + op + "] indexing with dtype torch.uint8 is now deprecated, please use a dtype "
               "torch.bool instead.");
        }
        if (t.dtype() == kBool || t.dtype() == kUInt8) {
          if (t.dim() == 0) {
            // A 0-dim mask acts like a bool.
            r.view = r.view.unsqueeze(dim);
            adv.emplace_back(dim, t.to(kBool).item<bool>() ? zeros({1}, TensorOptions(kInt64))
                                                            : empty({0}, TensorOptions(kInt64)));
            ++dim;
            break;
          }
          for (int64_t k = 0; k < t.dim(); ++k) {
            EMBER_CHECK(t.size(k) == r.view.size(dim + k), "[", op, "] The shape of the mask ", t.sizes(),
                        " at index ", k, " does not match the shape of the indexed tensor ", r.view.sizes(),
                        " at index ", dim + k);
          }
          const Tensor mask = t.dtype() == kBool ? t : t.to(kBool);
          if (mask.dim() == 1) {
            adv.emplace_back(dim, mask);
          } else {
            const Tensor nz = mask.nonzero();  // [count, ndim]
            for (int64_t k = 0; k < mask.dim(); ++k) adv.emplace_back(dim + k, nz.select(1, k));
          }
          dim += t.dim();
          src_dim += t.dim();
          break;
        }
        EMBER_CHECK(!t.is_floating_point(), "[", op,
                    "] tensors used as indices must be long, int, byte or bool tensors, got ", t.dtype(),
                    "; convert the index with .to(kInt64)");
        adv.emplace_back(dim, t);
        ++dim;
        ++src_dim;
        break;
      }
    }
  }
  if (!adv.empty()) {
    r.advanced.resize(static_cast<size_t>(adv.back().first + 1));
    for (auto& [d, t] : adv) r.advanced[static_cast<size_t>(d)] = t;
  }
  return r;
}

Tensor index_list(const Tensor& self, const TensorIndex* items, size_t count) {
  detail::OpNameScope scope("index");
  Indexed r = apply_indices(self, items, count, "index");
  if (r.advanced.empty()) return r.view.is_same(self) ? self.alias() : r.view;
  return r.view.index(r.advanced);
}

void index_put_list(Tensor& self, const TensorIndex* items, size_t count, const Tensor& values_in) {
  detail::OpNameScope scope("index_put_");
  EMBER_CHECK(values_in.defined(), "[index_put_] values is an undefined tensor");
  // The value's leading size-1 dims are dropped first, as libtorch's indexing API does
  // (x.index_put_({0}, v) with v [1, 1, n] writes a row of n).
  Tensor values = values_in;
  while (values.dim() > 0 && values.size(0) == 1) values = values.squeeze(0);
  Indexed r = apply_indices(self, items, count, "index_put_");
  if (!r.advanced.empty()) {
    r.view.index_put_(r.advanced, values);  // refuses a values dtype other than self's, as libtorch
    return;
  }
  r.view.copy_(values);
}

}  // namespace

Tensor Tensor::index(std::initializer_list<indexing::TensorIndex> indices) const {
  return index_list(*this, indices.begin(), indices.size());
}

Tensor Tensor::index(const std::vector<indexing::TensorIndex>& indices) const {
  return index_list(*this, indices.data(), indices.size());
}

Tensor& Tensor::index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& values) const {
  index_put_list(self_mut(), indices.begin(), indices.size(), values);
  return self_mut();
}

Tensor& Tensor::index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values) const {
  index_put_list(self_mut(), indices.data(), indices.size(), values);
  return self_mut();
}

Tensor& Tensor::index_put_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& value) const {
  EMBER_CHECK(defined(), "[index_put_] called on an undefined tensor");
  index_put_list(self_mut(), indices.begin(), indices.size(), scalar_tensor(value, TensorOptions(dtype())));
  return self_mut();
}

Tensor& Tensor::index_put_(const std::vector<indexing::TensorIndex>& indices, const Scalar& value) const {
  EMBER_CHECK(defined(), "[index_put_] called on an undefined tensor");
  index_put_list(self_mut(), indices.data(), indices.size(), scalar_tensor(value, TensorOptions(dtype())));
  return self_mut();
}

Tensor& Tensor::resize_(IntArrayRef new_sizes) const {
  detail::OpNameScope scope("resize_");
  EMBER_CHECK(defined(), "[resize_] called on an undefined tensor");
  EMBER_CHECK(!requires_grad(), "[resize_] cannot resize a tensor that requires grad (sizes ", sizes(), " -> ",
              new_sizes, "); resize a detached copy, or build the new tensor with an op");
  int64_t n = 1;
  for (int64_t s : new_sizes) {
    EMBER_CHECK(s >= 0, "[resize_] sizes must be non-negative, got ", new_sizes);
    EMBER_CHECK(!__builtin_mul_overflow(n, s, &n), "[resize_] sizes ", new_sizes, " hold more elements than int64");
  }
  const size_t es = element_size();
  int64_t span = 0;
  EMBER_CHECK(!__builtin_add_overflow(storage_offset(), n, &span) &&
                  static_cast<uint64_t>(span) <= SIZE_MAX / es,
              "[resize_] sizes ", new_sizes, " need more bytes than this machine can address");
  const size_t needed = static_cast<size_t>(span) * es;
  const Storage& st = storage();
  if (n > 0 && st->nbytes() < needed) {
    // Grow in place: a bigger buffer with the old bytes at its start, swapped into the
    // storage so that every view of it sees the new buffer.
    Storage bigger = make_storage(needed, device());
    if (st->nbytes() > 0) std::memcpy(bigger->data(), st->data(), st->nbytes());
    st->swap_data(*bigger);
  }
  impl()->set_sizes_and_strides(new_sizes, contiguous_strides(new_sizes), storage_offset());
  bump_version();
  return self_mut();
}

void Tensor::set_data(const Tensor& new_data) const {
  EMBER_CHECK(defined(), "[set_data] called on an undefined tensor");
  EMBER_CHECK(new_data.defined(), "[set_data] new_data is an undefined tensor");
  EMBER_CHECK(!requires_grad() || ember::is_floating_point(new_data.dtype()), "[set_data] this tensor requires grad, ",
              "so its new data must be floating point, got ", new_data.dtype());
  impl()->set_data(*new_data.impl());
}

}  // namespace ember
