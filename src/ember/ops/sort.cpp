// Sorting and selection: sort, argsort, topk, kthvalue, unique, searchsorted.
//
// Every op orders NaN above every other value (PyTorch's rule) and breaks ties by the
// original position, so sort is always stable and topk/kthvalue pick the first of equal
// elements; the results never depend on the thread count. Slices along the sorted dim
// are independent and run in parallel.

#include "ember/ops/sort.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/autograd/functions_index.h"
#include "ember/autograd/record.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/core/parallel.h"
#include "ember/kernels/cpu/dispatch.h"
#include "ember/ops/creation.h"
#include "ember/ops/index.h"
#include "ember/ops/type_promotion.h"
#include "ember/jit/trace_hook.h"

namespace ember {

namespace {

using kernels::convert;

constexpr int64_t kGrain = 32768;

int64_t grain_for(int64_t inner) {
  return std::max<int64_t>(1, kGrain / std::max<int64_t>(inner, 1));
}

// Sort keys: 16-bit floats compare as float (exact), everything else as itself.
template <typename T>
using KeyOf = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

// a < b with NaN greater than everything (all NaNs equivalent).
template <typename K>
bool key_less(K a, K b) {
  if constexpr (std::is_floating_point_v<K>) {
    if (std::isnan(b)) return !std::isnan(a);
    return a < b;
  } else {
    return a < b;
  }
}

template <typename K>
struct Entry {
  K key;
  int64_t index;
};

// Orders entries by key (ascending or descending), then by original position.
template <typename K>
struct EntryOrder {
  bool descending;
  bool operator()(const Entry<K>& a, const Entry<K>& b) const {
    if (descending ? key_less(b.key, a.key) : key_less(a.key, b.key)) return true;
    if (descending ? key_less(a.key, b.key) : key_less(b.key, a.key)) return false;
    return a.index < b.index;
  }
};

// A tensor moved so `dim` is last and made contiguous: rows of `len` elements.
struct Rows {
  Tensor data;  // contiguous, dim moved last
  int64_t rows = 0;
  int64_t len = 0;
};

Rows as_rows(const Tensor& t, int64_t dim) {
  Rows r;
  r.data = (t.dim() == 0 ? t.view({1}) : t.movedim(dim, -1)).contiguous();
  r.len = r.data.dim() == 0 ? 1 : r.data.sizes()[r.data.dim() - 1];
  r.rows = r.len == 0 ? 0 : r.data.numel() / r.len;
  return r;
}

// Sorts (or partially selects) every row. For each row, fills values/indices (rows of
// `out_len`) with the first out_len entries in order. mode: 0 sort, 1 partial (topk),
// 2 kth (only entry out_len - 1 is placed, written at position 0).
enum class Select { Sort, TopK, Kth };

void select_rows(const Rows& in, int64_t out_len, bool descending, Select mode, Tensor& values,
                 Tensor& indices, const char* op) {
  const int64_t len = in.len;
  kernels::dispatch_all(in.data.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using K = KeyOf<T>;
    const T* src = static_cast<const T*>(in.data.data_ptr());
    T* vo = static_cast<T*>(values.data_ptr());
    int64_t* io = indices.data_ptr<int64_t>();
    const int64_t stride_out = mode == Select::Kth ? 1 : out_len;
    parallel_for(0, in.rows, grain_for(len), [&](int64_t r0, int64_t r1) {
      std::vector<Entry<K>> buf(static_cast<size_t>(len));
      const EntryOrder<K> order{descending};
      for (int64_t r = r0; r < r1; ++r) {
        const T* row = src + r * len;
        for (int64_t i = 0; i < len; ++i) buf[i] = {static_cast<K>(row[i]), i};
        if (mode == Select::Sort) {
          // Ties are ordered by position, so this is a stable sort.
          std::sort(buf.begin(), buf.end(), order);
        } else if (mode == Select::TopK) {
          std::partial_sort(buf.begin(), buf.begin() + out_len, buf.end(), order);
        } else {
          std::nth_element(buf.begin(), buf.begin() + (out_len - 1), buf.end(), order);
        }
        const int64_t first = mode == Select::Kth ? out_len - 1 : 0;
        for (int64_t i = 0; i < stride_out; ++i) {
          const int64_t pos = buf[first + i].index;
          vo[r * stride_out + i] = row[pos];
          io[r * stride_out + i] = pos;
        }
      }
    });
  });
}

// Undoes as_rows: a contiguous tensor shaped like t (dim last, `len` long) back to t's
// dim order.
Tensor from_rows(const Tensor& rows, const Tensor& t, int64_t dim) {
  if (t.dim() == 0) return rows.view({});
  return rows.movedim(-1, dim).contiguous();
}

DimVector rows_shape(const Tensor& t, int64_t dim, int64_t len) {
  DimVector shape;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d != dim) shape.push_back(t.sizes()[d]);
  }
  shape.push_back(len);
  return shape;
}

void check_not_bool(const Tensor& t, const char* op) {
  EMBER_CHECK(t.dtype() != kBool, "[", op, "] is not implemented for bool tensors (as in PyTorch)",
              "; convert with .to(ember::kUInt8) first");
}

std::tuple<Tensor, Tensor> sort_impl(const Tensor& t, int64_t dim, bool descending,
                                     const char* op) {
  EMBER_CHECK(t.defined(), "[", op, "] self is an undefined tensor");
  dim = wrap_dim(dim, t.dim(), op);
  const Rows in = as_rows(t, dim);
  const DimVector rshape = t.dim() == 0 ? DimVector{1} : rows_shape(t, dim, in.len);
  Tensor values = empty(rshape, t.options());
  Tensor indices = empty(rshape, TensorOptions(kInt64));
  if (t.numel() > 0) select_rows(in, in.len, descending, Select::Sort, values, indices, op);
  return {from_rows(values, t, dim), from_rows(indices, t, dim)};
}

}  // namespace

// `stable` is accepted for PyTorch's signature: ember's sort is always stable.
std::tuple<Tensor, Tensor> sort(const Tensor& t, int64_t dim, bool descending, bool /*stable*/) {
  OpScope scope("sort", {&t});
  if (autograd::needs_grad(t) && is_floating_point(t.dtype())) {
    return autograd::fn::select_values("SortBackward0", t, dim, /*keepdim=*/true,
                                       [&] { return sort_impl(t, dim, descending, "sort"); });
  }
  return sort_impl(t, dim, descending, "sort");
}

Tensor argsort(const Tensor& t, int64_t dim, bool descending, bool /*stable*/) {
  OpScope scope("argsort", {&t});
  AutoGradMode no_grad(false);  // not differentiable: record nothing
  return std::get<1>(sort_impl(t, dim, descending, "argsort"));
}

namespace {

std::tuple<Tensor, Tensor> topk_impl(const Tensor& t, int64_t k, int64_t dim, bool largest) {
  EMBER_CHECK(t.defined(), "[topk] self is an undefined tensor");
  check_not_bool(t, "topk");
  dim = wrap_dim(dim, t.dim(), "topk");
  const int64_t size = t.dim() == 0 ? 1 : t.sizes()[dim];
  EMBER_CHECK(k >= 0 && k <= size, "[topk] selected index k out of range: k = ", k,
              " must be in [0, ", size, "] for dimension ", dim, " of size ", size);
  if (t.dim() == 0) {
    // PyTorch returns the element itself for k = 0 or 1.
    return {t.clone(), zeros({}, TensorOptions(kInt64))};
  }
  const Rows in = as_rows(t, dim);
  const DimVector rshape = rows_shape(t, dim, k);
  Tensor values = empty(rshape, t.options());
  Tensor indices = empty(rshape, TensorOptions(kInt64));
  if (values.numel() > 0) select_rows(in, k, largest, Select::TopK, values, indices, "topk");
  return {from_rows(values, t, dim), from_rows(indices, t, dim)};
}

std::tuple<Tensor, Tensor> kthvalue_impl(const Tensor& t, int64_t k, int64_t dim, bool keepdim) {
  EMBER_CHECK(t.defined(), "[kthvalue] self is an undefined tensor");
  check_not_bool(t, "kthvalue");
  dim = wrap_dim(dim, t.dim(), "kthvalue");
  const int64_t size = t.dim() == 0 ? 1 : t.sizes()[dim];
  EMBER_CHECK(k >= 1 && k <= size, "[kthvalue] selected number k out of range for dimension ", dim,
              ": k = ", k, " must be in [1, ", size, "] (k is 1-based)");
  if (t.dim() == 0) return {t.clone(), zeros({}, TensorOptions(kInt64))};
  const Rows in = as_rows(t, dim);
  const DimVector rshape = rows_shape(t, dim, 1);
  Tensor values = empty(rshape, t.options());
  Tensor indices = empty(rshape, TensorOptions(kInt64));
  if (values.numel() > 0) select_rows(in, k, false, Select::Kth, values, indices, "kthvalue");
  Tensor v = from_rows(values, t, dim), i = from_rows(indices, t, dim);
  if (!keepdim) {
    v = v.squeeze(dim);
    i = i.squeeze(dim);
  }
  return {v, i};
}

}  // namespace

std::tuple<Tensor, Tensor> topk(const Tensor& t, int64_t k, int64_t dim, bool largest,
                                bool sorted) {
  OpScope scope("topk", {&t});
  (void)sorted;  // results always come in sorted order, which sorted=false also allows
  if (autograd::needs_grad(t) && is_floating_point(t.dtype())) {
    return autograd::fn::select_values("TopkBackward0", t, dim, /*keepdim=*/true,
                                       [&] { return topk_impl(t, k, dim, largest); });
  }
  return topk_impl(t, k, dim, largest);
}

std::tuple<Tensor, Tensor> kthvalue(const Tensor& t, int64_t k, int64_t dim, bool keepdim) {
  OpScope scope("kthvalue", {&t});
  if (autograd::needs_grad(t) && is_floating_point(t.dtype())) {
    return autograd::fn::select_values("KthvalueBackward0", t, dim, keepdim,
                                       [&] { return kthvalue_impl(t, k, dim, keepdim); });
  }
  return kthvalue_impl(t, k, dim, keepdim);
}

std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& t, bool sorted, bool return_inverse,
                                          bool return_counts) {
  OpScope scope("unique", {&t});
  jit::detail::value_read("unique", t);  // its shape depends on the data
  AutoGradMode no_grad(false);  // not differentiable: record nothing
  (void)sorted;  // always sorted
  EMBER_CHECK(t.defined(), "[unique] self is an undefined tensor");
  const Tensor flat = t.contiguous();
  const int64_t n = flat.numel();
  Tensor values, inverse, counts;
  kernels::dispatch_all(t.dtype(), "unique", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using K = KeyOf<T>;
    const T* p = static_cast<const T*>(flat.data_ptr());
    std::vector<Entry<K>> buf(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) buf[i] = {static_cast<K>(p[i]), i};
    std::sort(buf.begin(), buf.end(), EntryOrder<K>{false});
    // Groups of equal keys; NaN equals nothing, so every NaN is its own group. Each group
    // keeps its first occurrence's value (telling -0.0 from 0.0 as PyTorch does).
    std::vector<int64_t> starts;
    std::vector<int64_t> inv(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      if (i == 0 || !(buf[i].key == buf[i - 1].key)) starts.push_back(i);
      inv[buf[i].index] = static_cast<int64_t>(starts.size()) - 1;
    }
    const int64_t groups = static_cast<int64_t>(starts.size());
    values = empty({groups}, t.options());
    T* vo = static_cast<T*>(values.data_ptr());
    for (int64_t g = 0; g < groups; ++g) vo[g] = p[buf[starts[g]].index];
    if (return_inverse) {
      inverse = empty(t.sizes(), TensorOptions(kInt64));
      if (n > 0) std::copy(inv.begin(), inv.end(), inverse.data_ptr<int64_t>());
    }
    if (return_counts) {
      counts = empty({groups}, TensorOptions(kInt64));
      int64_t* co = counts.data_ptr<int64_t>();
      for (int64_t g = 0; g < groups; ++g) co[g] = (g + 1 < groups ? starts[g + 1] : n) - starts[g];
    }
  });
  return {values, inverse, counts};
}

Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32,
                    bool right) {
  OpScope scope("searchsorted", {&sorted_sequence, &values});
  AutoGradMode no_grad(false);  // not differentiable: record nothing
  constexpr const char* op = "searchsorted";
  EMBER_CHECK(sorted_sequence.defined() && values.defined(), "[", op,
              "] called with an undefined tensor");
  const Tensor& seq = sorted_sequence;
  EMBER_CHECK(seq.dim() > 0, "[", op,
              "] boundaries tensor should have positive dimension, but got 0 dimension");
  if (seq.dim() > 1) {
    bool ok = seq.dim() == values.dim();
    for (int64_t d = 0; ok && d + 1 < seq.dim(); ++d) ok = seq.sizes()[d] == values.sizes()[d];
    EMBER_CHECK(ok, "[", op,
                "] boundaries tensor should be 1 dimension or the first N-1 dimensions of "
                "boundaries tensor and input value tensor must match, but got boundaries tensor ",
                seq.sizes(), " and input value tensor ", values.sizes());
  }
  EMBER_CHECK(seq.dtype() != kBool && values.dtype() != kBool, "[", op,
              "] is not implemented for bool tensors (as in PyTorch)");
  const DType common = result_type(seq, values);
  const Tensor s = seq.to(common).contiguous();
  const Tensor v = values.to(common).contiguous();
  Tensor out = empty(values.sizes(), TensorOptions(out_int32 ? kInt32 : kInt64));
  const int64_t n = v.numel();
  if (n == 0) return out;
  const int64_t len = s.sizes()[s.dim() - 1];
  // Values per row of seq: everything for a 1-d sequence, else the last dim of values.
  const int64_t per_row =
      seq.dim() == 1 ? n : (values.dim() == 0 ? 1 : values.sizes()[values.dim() - 1]);
  kernels::dispatch_all(common, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using K = KeyOf<T>;
    const T* sp = static_cast<const T*>(s.data_ptr());
    const T* vp = static_cast<const T*>(v.data_ptr());
    int32_t* o32 = out_int32 ? out.data_ptr<int32_t>() : nullptr;
    int64_t* o64 = out_int32 ? nullptr : out.data_ptr<int64_t>();
    parallel_for(0, n, grain_for(1 + len / 64), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T* row = sp + (seq.dim() == 1 ? 0 : (i / per_row) * len);
        const K val = static_cast<K>(vp[i]);
        int64_t lo = 0, hi = len;
        // !(mid >= val) moves right past NaNs in the sequence, as PyTorch's search does.
        while (lo < hi) {
          const int64_t mid = lo + ((hi - lo) >> 1);
          const K m = static_cast<K>(row[mid]);
          const bool go_right = right ? !(m > val) : !(m >= val);
          if (go_right) {
            lo = mid + 1;
          } else {
            hi = mid;
          }
        }
        if (out_int32) {
          o32[i] = static_cast<int32_t>(lo);
        } else {
          o64[i] = lo;
        }
      }
    });
  });
  return out;
}

// ---- methods ----

std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending, bool stable) const {
  return ember::sort(*this, dim, descending, stable);
}

Tensor Tensor::argsort(int64_t dim, bool descending, bool stable) const {
  return ember::argsort(*this, dim, descending, stable);
}

std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  return ember::topk(*this, k, dim, largest, sorted);
}

std::tuple<Tensor, Tensor> Tensor::kthvalue(int64_t k, int64_t dim, bool keepdim) const {
  return ember::kthvalue(*this, k, dim, keepdim);
}

}  // namespace ember
