// Indexing along one dim (index_select, gather, the scatter family, index_add/copy/fill),
// and bincount. Boolean-mask and advanced indexing (masked_*, nonzero, index, index_put_)
// live in advanced_index.cpp.
//
// Note [Index order]: every op that writes through an index (scatter*, index_add/copy,
// index_put_) visits the index in its own order for each destination slice and only
// runs independent slices in parallel. Duplicate indices therefore accumulate (or
// overwrite, last one wins) in index order, and the result is bit-identical for any
// thread count. Indices are validated in a serial pass before anything is written, so a
// bad index never leaves an in-place op half done and always names the same value.

#include "ember/ops/index.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ember/autograd/functions_index.h"
#include "ember/autograd/record.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/core/parallel.h"
#include "ember/kernels/cpu/dispatch.h"
#include "ember/kernels/cpu/iter.h"
#include "ember/ops/creation.h"

namespace ember {

namespace {

using kernels::convert;
using kernels::ElementwiseIter;
using kernels::TypeTag;

constexpr int64_t kGrain = 32768;

// Chunks of about kGrain elements when each visited position does `inner` elements of work.

void check_defined(const Tensor& t, const char* op, const char* what) {
  EMBER_CHECK(t.defined(), "[", op, "] ", what, " is an undefined tensor");
}

// Ops that only move elements work on same-sized unsigned integers.
template <typename F>
decltype(auto) dispatch_by_size(size_t element_size, F&& f) {
  switch (element_size) {
    case 1:
      return f(TypeTag<uint8_t>{});
    case 2:
      return f(TypeTag<uint16_t>{});
    case 4:
      return f(TypeTag<uint32_t>{});
    default:
      return f(TypeTag<uint64_t>{});
  }
}

template <typename T>
T scalar_as(const Scalar& v) {
  if (v.is_floating_point()) return convert<T>(v.to_double());
  if (v.is_boolean()) return convert<T>(v.to_bool());
  return convert<T>(v.to_long());
}

template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return std::isnan(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(v);
  } else {
    (void)v;
    return false;
  }
}

// Arithmetic with PyTorch's semantics per dtype: bool sum is "or" and product "and",
// integers wrap, 16-bit floats round after every step.
template <typename T>
T add_values(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a || b;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else {
    return a + b;
  }
}

template <typename T>
T mul_values(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a && b;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
    return a * b;
  }
}

void check_no_internal_overlap(const Tensor& t, const char* op) {
  for (int64_t i = 0; i < t.dim(); ++i) {
    EMBER_CHECK(t.sizes()[i] <= 1 || t.strides()[i] != 0, "[", op,
                "] unsupported operation: more than one element of the written-to tensor refers "
                "to a single memory location (sizes ",
                t.sizes(), ", strides ", t.strides(), "); clone() the tensor first");
  }
}

// A source that shares memory with the tensor being written is read from a copy.
Tensor unaliased(const Tensor& src, const Tensor& dst) {
  return src.defined() && src.numel() > 0 && src.is_alias_of(dst) ? src.clone() : src;
}

DimVector without_dim(IntArrayRef v, int64_t dim) {
  DimVector out;
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    if (i != dim) out.push_back(v[i]);
  }
  return out;
}

// 0-dim tensors take part as 1-element vectors (PyTorch's ensure_nonempty_dim).
Tensor as_1d(const Tensor& t) { return t.dim() == 0 ? t.view({1}) : t; }
int64_t nonempty_dim(const Tensor& t) { return std::max<int64_t>(t.dim(), 1); }

// An int64 contiguous copy (or t itself); int32 only where the op allows it.
Tensor index_as_long(const Tensor& index, const char* op, bool allow_int32) {
  check_defined(index, op, "index");
  const DType dt = index.dtype();
  if (allow_int32) {
    EMBER_CHECK(dt == kInt64 || dt == kInt32, "[", op,
                "] expected dtype int32 or int64 for index, got ", dt);
  } else {
    EMBER_CHECK(dt == kInt64, "[", op, "] expected dtype int64 for index, got ", dt,
                dt == kInt32 ? "; convert it with .to(ember::kInt64)" : "");
  }
  return index.to(kInt64).contiguous();
}

// Throws for the first index (in row-major order) outside [0, size), or [-size, size)
// when negative indices count from the end. `index` is int64 and contiguous.
void check_index_range(const Tensor& index, int64_t size, int64_t dim, bool allow_negative,
                       const char* op) {
  const int64_t* p = index.data_ptr<int64_t>();
  const int64_t n = index.numel();
  const int64_t lo = allow_negative ? -size : 0;
  for (int64_t i = 0; i < n; ++i) {
    EMBER_CHECK(p[i] >= lo && p[i] < size, "[", op, "] index ", p[i],
                " is out of bounds for dimension ", dim, " with size ", size);
  }
}

// ---------------------------------------------------------------------------------------
// Visiting index positions. The ops below walk every position off `dim` with an
// ElementwiseIter (`it`, r positions) and loop over the n steps along `dim` themselves.

// Calls body(data, strides, m, j0, j1) for runs of m positions of `it` and the steps
// [j0, j1) along dim. Chunks split the positions, each chunk taking every step in order;
// ops whose steps are independent (parallel_steps) may instead split the steps when
// there are more of them. Chunks of at least 16 positions keep runs contiguous.
template <typename Body>
void for_each_slice(const ElementwiseIter& it, int64_t n, bool parallel_steps, Body&& body) {
  const int64_t r = it.numel();
  if (r == 0 || n == 0) return;
  if (parallel_steps && n > r) {
    parallel_for(0, n, std::max<int64_t>(1, kGrain / r), [&](int64_t j0, int64_t j1) {
      it.serial_for_each(
          [&](char** data, const int64_t* st, int64_t m) { body(data, st, m, j0, j1); }, 0, r);
    });
  } else {
    it.for_each([&](char** data, const int64_t* st, int64_t m) { body(data, st, m, 0, n); },
                std::max<int64_t>(kGrain / n, 16));
  }
}

// Loops e in [0, m) and j in [j0, j1), with j innermost when a step along dim is shorter
// (in bytes) than a step between positions. Either way each e sees j in increasing order.
template <typename F>
inline void loop_2d(int64_t m, int64_t j0, int64_t j1, bool j_inner, F&& f) {
  if (j_inner) {
    for (int64_t e = 0; e < m; ++e) {
      for (int64_t j = j0; j < j1; ++j) f(e, j);
    }
  } else {
    for (int64_t j = j0; j < j1; ++j) {
      for (int64_t e = 0; e < m; ++e) f(e, j);
    }
  }
}

bool steps_are_shorter(int64_t dim_stride_bytes, int64_t run_stride_bytes) {
  return std::abs(dim_stride_bytes) < std::abs(run_stride_bytes);
}

// Adds t's data with the strides of every dim but `dim` (shape of the walk may be smaller
// than t's sizes; only the strides matter).
void add_without_dim(ElementwiseIter& it, const Tensor& t, int64_t dim) {
  it.add_raw(t.data_ptr(), t.dtype(), without_dim(t.strides(), dim));
}

// ---------------------------------------------------------------------------------------
// gather / scatter

void check_scatter_gather_dims(const Tensor& self, int64_t dim, const Tensor& index,
                               const Tensor* src, const char* op, bool is_scatter) {
  if (index.numel() == 0) return;  // PyTorch checks nothing for an empty index
  EMBER_CHECK(nonempty_dim(index) == nonempty_dim(self), "[", op,
              "] index tensor must have the same number of dimensions as self tensor (index ",
              index.sizes(), ", self ", self.sizes(), ")");
  if (src) {
    EMBER_CHECK(nonempty_dim(index) == nonempty_dim(*src), "[", op,
                "] index tensor must have the same number of dimensions as src tensor (index ",
                index.sizes(), ", src ", src->sizes(), ")");
  }
  const Tensor s = as_1d(self), ix = as_1d(index);
  for (int64_t d = 0; d < ix.dim(); ++d) {
    const bool ok_self = d == dim || ix.size(d) <= s.size(d);
    const bool ok_src = !src || ix.size(d) <= as_1d(*src).size(d);
    if (is_scatter) {
      EMBER_CHECK(ok_self && ok_src, "[", op, "] expected index ", index.sizes(),
                  " to be smaller than self ", self.sizes(), " apart from dimension ", dim,
                  src ? " and to be smaller size than src " : "",
                  src ? detail::str_cat(src->sizes()) : std::string(), " (dimension ", d, ")");
    } else {
      EMBER_CHECK(ok_self, "[", op, "] size does not match at dimension ", d, ": expected index ",
                  index.sizes(), " to be smaller than self ", self.sizes(),
                  " apart from dimension ", dim);
    }
  }
}

Tensor gather_impl(const Tensor& self, int64_t dim, const Tensor& index) {
  constexpr const char* op = "gather";
  check_defined(self, op, "self");
  Tensor ix = index_as_long(index, op, false);
  dim = wrap_dim(dim, self.dim(), op);
  check_scatter_gather_dims(self, dim, ix, nullptr, op, false);
  Tensor out = empty(ix.sizes(), self.options());
  if (ix.numel() == 0) return out;
  const Tensor s = as_1d(self);
  check_index_range(ix, s.size(dim), dim, false, op);
  const Tensor ix1 = as_1d(ix), out1 = as_1d(out);
  const int64_t n = ix1.size(dim);
  const int64_t es = static_cast<int64_t>(self.element_size());
  const int64_t os = out1.stride(dim) * es, ss = s.stride(dim) * es;
  const int64_t is = ix1.stride(dim) * 8;
  ElementwiseIter it(without_dim(ix1.sizes(), dim));
  add_without_dim(it, out1, dim);
  add_without_dim(it, s, dim);
  add_without_dim(it, ix1, dim);
  it.build();
  dispatch_by_size(self.element_size(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    for_each_slice(
        it, n, true, [&](char** data, const int64_t* st, int64_t m, int64_t j0, int64_t j1) {
          loop_2d(m, j0, j1, steps_are_shorter(os, st[0]), [&](int64_t e, int64_t j) {
            const int64_t k = *reinterpret_cast<const int64_t*>(data[2] + e * st[2] + j * is);
            *reinterpret_cast<E*>(data[0] + e * st[0] + j * os) =
                *reinterpret_cast<const E*>(data[1] + e * st[1] + k * ss);
          });
        });
  });
  return out;
}

// Calls f(dst_element, src_element_or_null) for every element of `index`, the destination
// element being the one of `dst` the index value selects along dim. dst, index (int64,
// checked) and src are at least 1-d.
template <typename F>
void scatter_visit(const Tensor& dst, int64_t dim, const Tensor& ix, const Tensor* src, F&& f) {
  if (ix.numel() == 0) return;
  const int64_t n = ix.size(dim);
  const int64_t ds = dst.stride(dim) * static_cast<int64_t>(dst.element_size());
  const int64_t is = ix.stride(dim) * 8;
  const int64_t ss = src ? src->stride(dim) * static_cast<int64_t>(src->element_size()) : 0;
  ElementwiseIter it(without_dim(ix.sizes(), dim));
  add_without_dim(it, dst, dim);
  add_without_dim(it, ix, dim);
  if (src) add_without_dim(it, *src, dim);
  it.build();
  for_each_slice(
      it, n, false, [&](char** data, const int64_t* st, int64_t m, int64_t j0, int64_t j1) {
        const int64_t step = src ? ss : is;
        loop_2d(m, j0, j1, steps_are_shorter(step, src ? st[2] : st[1]), [&](int64_t e, int64_t j) {
          const int64_t k = *reinterpret_cast<const int64_t*>(data[1] + e * st[1] + j * is);
          f(data[0] + e * st[0] + k * ds, src ? data[2] + e * st[2] + j * ss : nullptr);
        });
      });
}

enum class Reduce { None, Sum, Prod, Mean, Amax, Amin };

Reduce parse_reduce(std::string_view reduce, const char* op) {
  if (reduce == "sum") return Reduce::Sum;
  if (reduce == "prod") return Reduce::Prod;
  if (reduce == "mean") return Reduce::Mean;
  if (reduce == "amax") return Reduce::Amax;
  if (reduce == "amin") return Reduce::Amin;
  EMBER_ERROR("[", op, "] reduce argument must be one of sum, prod, mean, amax or amin, got '",
              reduce, "'");
}

template <typename T>
T reduce_values(Reduce r, T a, T b) {
  switch (r) {
    case Reduce::Sum:
    case Reduce::Mean:
      return add_values(a, b);
    case Reduce::Prod:
      return mul_values(a, b);
    case Reduce::Amax:
      if (is_nan(b)) return b;
      if (is_nan(a)) return a;
      return b > a ? b : a;
    case Reduce::Amin:
      if (is_nan(b)) return b;
      if (is_nan(a)) return a;
      return b < a ? b : a;
    case Reduce::None:
      break;
  }
  return b;
}

template <typename T>
T reduce_identity(Reduce r) {
  switch (r) {
    case Reduce::Prod:
      return convert<T>(1);
    case Reduce::Amax:
      if constexpr (std::is_integral_v<T>)
        return std::numeric_limits<T>::lowest();
      else
        return convert<T>(-std::numeric_limits<float>::infinity());
    case Reduce::Amin:
      if constexpr (std::is_integral_v<T>)
        return std::numeric_limits<T>::max();
      else
        return convert<T>(std::numeric_limits<float>::infinity());
    default:
      return convert<T>(0);
  }
}

// Writes into `out` (already holding self's values). src undefined means `value`.
void scatter_into(Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                  const Scalar& value, Reduce reduce, bool include_self, const char* op) {
  Tensor ix = index_as_long(index, op, false);
  dim = wrap_dim(dim, out.dim(), op);
  if (src.defined()) {
    EMBER_CHECK(src.dtype() == out.dtype(), "[", op, "] expected self.dtype to be equal to ",
                "src.dtype, got ", out.dtype(), " and ", src.dtype());
  }
  check_scatter_gather_dims(out, dim, ix, src.defined() ? &src : nullptr, op, true);
  if (reduce == Reduce::Mean) {
    EMBER_CHECK(out.dtype() != kBool, "[", op, "] reduce='mean' is not supported for bool tensors");
  }
  if (ix.numel() == 0) return;
  const Tensor o = as_1d(out), i1 = as_1d(ix);
  check_index_range(ix, o.size(dim), dim, false, op);
  const Tensor s1 = src.defined() ? as_1d(unaliased(src, out)) : Tensor();
  const Tensor* sp = src.defined() ? &s1 : nullptr;
  kernels::dispatch_all(out.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (reduce == Reduce::None) {
      const T v = src.defined() ? T() : scalar_as<T>(value);
      scatter_visit(o, dim, i1, sp, [&](char* d, const char* s) {
        *reinterpret_cast<T*>(d) = s ? *reinterpret_cast<const T*>(s) : v;
      });
      return;
    }
    if (!include_self) {
      const T id = reduce_identity<T>(reduce);
      scatter_visit(o, dim, i1, nullptr,
                    [&](char* d, const char*) { *reinterpret_cast<T*>(d) = id; });
    }
    scatter_visit(o, dim, i1, sp, [&](char* d, const char* s) {
      T& dv = *reinterpret_cast<T*>(d);
      dv = reduce_values(reduce, dv, *reinterpret_cast<const T*>(s));
    });
    if (reduce != Reduce::Mean) return;
    // The count is kept in T and incremented in T, as PyTorch does with scatter_add of ones.
    Tensor count = full(o.sizes(), include_self ? 1 : 0, TensorOptions(out.dtype()));
    const T one = convert<T>(1);
    scatter_visit(count, dim, i1, nullptr, [&](char* d, const char*) {
      T& c = *reinterpret_cast<T*>(d);
      c = add_values(c, one);
    });
    ElementwiseIter it(o.sizes());
    it.add(o);
    it.add(count);
    it.build();
    it.for_each([&](char** data, const int64_t* st, int64_t m) {
      for (int64_t e = 0; e < m; ++e) {
        T& dv = *reinterpret_cast<T*>(data[0] + e * st[0]);
        T c = *reinterpret_cast<const T*>(data[1] + e * st[1]);
        if constexpr (std::is_same_v<T, bool>) {
          (void)c;  // mean is rejected for bool before getting here
        } else if constexpr (std::is_integral_v<T>) {
          if (c == 0) c = 1;
          // Floor division, as div_(count, "floor") for integer tensors.
          T q = static_cast<T>(dv / c);
          if ((dv % c != 0) && ((dv < 0) != (c < 0))) q = static_cast<T>(q - 1);
          dv = q;
        } else {
          if (static_cast<float>(c) == 0.0f) c = convert<T>(1);
          dv = dv / c;
        }
      }
    });
  });
}

// ---------------------------------------------------------------------------------------
// index_add / index_copy / index_fill / index_select: a 1-d index along dim.

enum class IndexOp { Add, Copy, Fill };

// Validates and returns the int64 index for the index_* family (a vector or a scalar).
Tensor vector_index(const Tensor& index, const char* op, bool allow_int32) {
  Tensor ix = index_as_long(index, op, allow_int32);
  EMBER_CHECK(ix.dim() <= 1, "[", op, "] index is supposed to be a vector (or a scalar), got ",
              ix.dim(), " dims with sizes ", ix.sizes());
  return ix;
}

void index_func_into(Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                     const Scalar& value, IndexOp kind, const char* op) {
  check_defined(self, op, "self");
  dim = wrap_dim(dim, self.dim(), op);
  Tensor ix = vector_index(index, op, kind == IndexOp::Add);
  const Tensor s = as_1d(self);
  const int64_t n = ix.numel();
  Tensor src;
  if (kind != IndexOp::Fill) {
    check_defined(source, op, "source");
    EMBER_CHECK(source.dtype() == self.dtype(), "[", op, "] self (", self.dtype(), ") and source (",
                source.dtype(), ") must have the same dtype");
    EMBER_CHECK(nonempty_dim(source) == nonempty_dim(self), "[", op,
                "] source and self must have the same number of dimensions, got source ",
                source.sizes(), " and self ", self.sizes());
    src = as_1d(unaliased(source, self));
    EMBER_CHECK(src.size(dim) == n, "[", op, "] number of indices (", n,
                ") should be equal to source.size(dim) (", src.size(dim), ") for dim ", dim);
    for (int64_t d = 0; d < s.dim(); ++d) {
      EMBER_CHECK(d == dim || src.size(d) == s.size(d), "[", op,
                  "] source and self must have the same size in every dimension but ", dim,
                  ", got source ", source.sizes(), " and self ", self.sizes(), " (dimension ", d,
                  ")");
    }
  }
  // index_fill wraps negative indices, as PyTorch's does; the others refuse them.
  check_index_range(ix, s.size(dim), dim, kind == IndexOp::Fill, op);
  if (n == 0 || self.numel() == 0) return;
  const int64_t* idx = ix.data_ptr<int64_t>();
  const int64_t size = s.size(dim);
  const int64_t ds = s.stride(dim) * static_cast<int64_t>(self.element_size());
  const int64_t ss = src.defined() ? src.stride(dim) * static_cast<int64_t>(src.element_size()) : 0;
  ElementwiseIter it(without_dim(s.sizes(), dim));
  add_without_dim(it, s, dim);
  if (src.defined()) add_without_dim(it, src, dim);
  it.build();
  kernels::dispatch_all(self.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = kind == IndexOp::Fill ? scalar_as<T>(value) : T();
    // alpha is converted to T and every step rounds to T, as PyTorch's add kernel does
    // (so 16-bit floats round the product, then the sum).
    const T alpha = kind == IndexOp::Add ? scalar_as<T>(value) : T();
    const bool unit_alpha = kind == IndexOp::Add && static_cast<float>(alpha) == 1.0f;
    for_each_slice(it, n, false,
                   [&](char** data, const int64_t* st, int64_t m, int64_t j0, int64_t j1) {
                     const bool j_inner = steps_are_shorter(src.defined() ? ss : ds, st[0]);
                     loop_2d(m, j0, j1, j_inner, [&](int64_t e, int64_t j) {
                       const int64_t k = idx[j] < 0 ? idx[j] + size : idx[j];
                       T& d = *reinterpret_cast<T*>(data[0] + k * ds + e * st[0]);
                       if (kind == IndexOp::Fill) {
                         d = v;
                         return;
                       }
                       const T sv = *reinterpret_cast<const T*>(data[1] + e * st[1] + j * ss);
                       if (kind == IndexOp::Copy) {
                         d = sv;
                       } else if (unit_alpha) {
                         d = add_values(d, sv);
                       } else if constexpr (std::is_floating_point_v<T>) {
                         // PyTorch rounds the product before adding; volatile keeps the compiler
                         // from fusing the two into one FMA (GCC contracts by default).
                         volatile T scaled = sv * alpha;
                         d = d + scaled;
                       } else {
                         d = add_values(d, mul_values(sv, alpha));
                       }
                     });
                   });
  });
}

}  // namespace

// ---------------------------------------------------------------------------------------
// index_select

namespace {

Tensor index_select_impl(const Tensor& t, int64_t dim, const Tensor& index) {
  constexpr const char* op = "index_select";
  check_defined(t, op, "self");
  dim = wrap_dim(dim, t.dim(), op);
  Tensor ix = vector_index(index, op, true);
  const Tensor s = as_1d(t);
  check_index_range(ix, s.size(dim), dim, false, op);
  const int64_t n = ix.numel();
  DimVector shape(s.sizes());
  shape[dim] = n;
  if (t.dim() == 0) {
    // A 0-dim self stays 0-dim whatever the number of (zero) indices, as in PyTorch.
    return t.clone();
  }
  Tensor out = empty(shape, t.options());
  if (out.numel() == 0) return out;
  const int64_t* idx = ix.data_ptr<int64_t>();
  const int64_t es = static_cast<int64_t>(t.element_size());
  const int64_t os = out.stride(dim) * es, ss = s.stride(dim) * es;
  ElementwiseIter it(without_dim(s.sizes(), dim));
  add_without_dim(it, out, dim);
  add_without_dim(it, s, dim);
  it.build();
  dispatch_by_size(t.element_size(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    for_each_slice(
        it, n, true, [&](char** data, const int64_t* st, int64_t m, int64_t j0, int64_t j1) {
          if (st[0] == es && st[1] == es) {
            for (int64_t j = j0; j < j1; ++j) {
              std::memcpy(data[0] + j * os, data[1] + idx[j] * ss, static_cast<size_t>(m * es));
            }
            return;
          }
          loop_2d(m, j0, j1, steps_are_shorter(os, st[0]), [&](int64_t e, int64_t j) {
            *reinterpret_cast<E*>(data[0] + j * os + e * st[0]) =
                *reinterpret_cast<const E*>(data[1] + idx[j] * ss + e * st[1]);
          });
        });
  });
  return out;
}

}  // namespace

Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index) {
  OpScope scope("index_select", {&t, &index});
  if (autograd::needs_grad(t)) {
    return autograd::fn::index_select(t, dim, index, [&] { return index_select_impl(t, dim, index); });
  }
  return index_select_impl(t, dim, index);
}

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const {
  return ember::index_select(*this, dim, index);
}

// ---------------------------------------------------------------------------------------
// gather / scatter

Tensor gather(const Tensor& t, int64_t dim, const Tensor& index) {
  OpScope scope("gather", {&t, &index});
  if (autograd::needs_grad(t)) {
    return autograd::fn::gather(t, dim, index, [&] { return gather_impl(t, dim, index); });
  }
  return gather_impl(t, dim, index);
}

Tensor Tensor::gather(int64_t dim, const Tensor& index) const {
  return ember::gather(*this, dim, index);
}

namespace {

using autograd::fn::IndexKind;
using autograd::fn::ScatterKind;

// Out of place: a copy of t written by scatter_into.
Tensor scatter_copy(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src,
                    const Scalar& value, Reduce reduce, bool include_self, const char* op) {
  Tensor out = t.clone();
  scatter_into(out, dim, index, src, value, reduce, include_self, op);
  return out;
}

// The scatter family's out-of-place ops (src undefined: `value`).
Tensor scatter_op(ScatterKind kind, const Tensor& t, int64_t dim, const Tensor& index,
                  const Tensor& src, const Scalar& value, std::string_view reduce,
                  bool include_self, const char* op) {
  check_defined(t, op, "self");
  if (kind != ScatterKind::Value) check_defined(src, op, "src");
  const Reduce r = kind == ScatterKind::Reduce ? parse_reduce(reduce, op)
                   : kind == ScatterKind::Add  ? Reduce::Sum
                                               : Reduce::None;
  if (autograd::needs_grad(t, src)) {
    return autograd::fn::scatter(kind, t, dim, index, src, reduce, include_self, [&] {
      return scatter_copy(t, dim, index, src, value, r, include_self, op);
    });
  }
  return scatter_copy(t, dim, index, src, value, r, include_self, op);
}

// The scatter family's in-place ops.
void scatter_op_(ScatterKind kind, Tensor& self, int64_t dim, const Tensor& index,
                 const Tensor& src, const Scalar& value, std::string_view reduce,
                 bool include_self, const char* op) {
  check_defined(self, op, "self");
  if (kind != ScatterKind::Value) check_defined(src, op, "src");
  const Reduce r = kind == ScatterKind::Reduce ? parse_reduce(reduce, op)
                   : kind == ScatterKind::Add  ? Reduce::Sum
                                               : Reduce::None;
  check_no_internal_overlap(self, op);
  auto run = [&] {
    scatter_into(self, dim, index, src, value, r, include_self, op);
    self.bump_version();
  };
  if (autograd::needs_grad(self, src)) {
    autograd::fn::scatter_(kind, op, self, dim, index, src, reduce, include_self, run);
    return;
  }
  autograd::check_inplace_cheap(self, op);
  run();
}

Tensor index_func_copy(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& source,
                       const Scalar& value, IndexOp kind, const char* op) {
  Tensor out = t.clone();
  index_func_into(out, dim, index, source, value, kind, op);
  return out;
}

IndexKind index_kind(IndexOp kind, bool tensor_value) {
  switch (kind) {
    case IndexOp::Add:
      return IndexKind::Add;
    case IndexOp::Copy:
      return IndexKind::Copy;
    case IndexOp::Fill:
      break;
  }
  return tensor_value ? IndexKind::FillTensor : IndexKind::Fill;
}

// index_add / index_copy / index_fill out of place. `tensor_value` is the 0-d value
// tensor of index_fill's tensor form (its value is already in `value`).
Tensor index_func_op(IndexOp kind, const Tensor& t, int64_t dim, const Tensor& index,
                     const Tensor& source, const Scalar& value, const Tensor& tensor_value,
                     const char* op) {
  check_defined(t, op, "self");
  const Tensor& grad_input = kind == IndexOp::Fill ? tensor_value : source;
  if (autograd::needs_grad(t, grad_input)) {
    return autograd::fn::index_func(index_kind(kind, tensor_value.defined()), t, dim, index,
                                    grad_input, value, [&] {
                                      return index_func_copy(t, dim, index, source, value, kind, op);
                                    });
  }
  return index_func_copy(t, dim, index, source, value, kind, op);
}

void index_func_op_(IndexOp kind, Tensor& self, int64_t dim, const Tensor& index,
                    const Tensor& source, const Scalar& value, const Tensor& tensor_value,
                    const char* op) {
  check_defined(self, op, "self");
  check_no_internal_overlap(self, op);
  const Tensor& grad_input = kind == IndexOp::Fill ? tensor_value : source;
  auto run = [&] {
    index_func_into(self, dim, index, source, value, kind, op);
    self.bump_version();
  };
  if (autograd::needs_grad(self, grad_input)) {
    autograd::fn::index_func_(index_kind(kind, tensor_value.defined()), op, self, dim, index,
                              grad_input, value, run);
    return;
  }
  autograd::check_inplace_cheap(self, op);
  run();
}

Scalar fill_value(const Tensor& value, const char* op) {
  check_defined(value, op, "value");
  EMBER_CHECK(value.dim() == 0, "[", op,
              "] only supports a 0-dimensional value tensor, but got a tensor with ", value.dim(),
              " dimension(s)");
  return value.item();
}

}  // namespace

Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src) {
  OpScope scope("scatter", {&t, &index, &src});
  return scatter_op(ScatterKind::Src, t, dim, index, src, Scalar(), "", true, "scatter");
}

Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  return ember::scatter(*this, dim, index, src);
}

Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value) const {
  OpScope scope("scatter", {this, &index});
  return scatter_op(ScatterKind::Value, *this, dim, index, Tensor(), value, "", true, "scatter");
}

Tensor scatter_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src) {
  OpScope scope("scatter_add", {&t, &index, &src});
  return scatter_op(ScatterKind::Add, t, dim, index, src, Scalar(), "", true, "scatter_add");
}

Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return ember::scatter_add(*this, dim, index, src);
}

Tensor Tensor::scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src,
                              std::string_view reduce, bool include_self) const {
  OpScope scope("scatter_reduce", {this, &index, &src});
  return scatter_op(ScatterKind::Reduce, *this, dim, index, src, Scalar(), reduce, include_self,
                    "scatter_reduce");
}

Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src) const {
  OpScope scope("scatter_", {this, &index, &src});
  scatter_op_(ScatterKind::Src, self_mut(), dim, index, src, Scalar(), "", true, "scatter_");
  return self_mut();
}

Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Scalar& value) const {
  OpScope scope("scatter_", {this, &index});
  scatter_op_(ScatterKind::Value, self_mut(), dim, index, Tensor(), value, "", true, "scatter_");
  return self_mut();
}

Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) const {
  OpScope scope("scatter_add_", {this, &index, &src});
  scatter_op_(ScatterKind::Add, self_mut(), dim, index, src, Scalar(), "", true, "scatter_add_");
  return self_mut();
}

Tensor& Tensor::scatter_reduce_(int64_t dim, const Tensor& index, const Tensor& src,
                                std::string_view reduce, bool include_self) const {
  OpScope scope("scatter_reduce_", {this, &index, &src});
  scatter_op_(ScatterKind::Reduce, self_mut(), dim, index, src, Scalar(), reduce, include_self,
              "scatter_reduce_");
  return self_mut();
}

// ---------------------------------------------------------------------------------------
// index_add / index_copy / index_fill

Tensor Tensor::index_add(int64_t dim, const Tensor& index, const Tensor& source,
                         const Scalar& alpha) const {
  OpScope scope("index_add", {this, &index, &source});
  return index_func_op(IndexOp::Add, *this, dim, index, source, alpha, Tensor(), "index_add");
}

Tensor Tensor::index_copy(int64_t dim, const Tensor& index, const Tensor& source) const {
  OpScope scope("index_copy", {this, &index, &source});
  return index_func_op(IndexOp::Copy, *this, dim, index, source, Scalar(), Tensor(),
                       "index_copy");
}

Tensor Tensor::index_fill(int64_t dim, const Tensor& index, const Scalar& value) const {
  OpScope scope("index_fill", {this, &index});
  return index_func_op(IndexOp::Fill, *this, dim, index, Tensor(), value, Tensor(),
                       "index_fill");
}

Tensor index_fill(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& value) {
  OpScope scope("index_fill", {&t, &index, &value});
  const Scalar v = fill_value(value, "index_fill");
  return index_func_op(IndexOp::Fill, t, dim, index, Tensor(), v, value, "index_fill");
}

Tensor& Tensor::index_add_(int64_t dim, const Tensor& index, const Tensor& source,
                           const Scalar& alpha) const {
  OpScope scope("index_add_", {this, &index, &source});
  index_func_op_(IndexOp::Add, self_mut(), dim, index, source, alpha, Tensor(), "index_add_");
  return self_mut();
}

Tensor& Tensor::index_copy_(int64_t dim, const Tensor& index, const Tensor& source) const {
  OpScope scope("index_copy_", {this, &index, &source});
  index_func_op_(IndexOp::Copy, self_mut(), dim, index, source, Scalar(), Tensor(), "index_copy_");
  return self_mut();
}

Tensor& Tensor::index_fill_(int64_t dim, const Tensor& index, const Scalar& value) const {
  OpScope scope("index_fill_", {this, &index});
  index_func_op_(IndexOp::Fill, self_mut(), dim, index, Tensor(), value, Tensor(), "index_fill_");
  return self_mut();
}

Tensor& index_fill_(Tensor& t, int64_t dim, const Tensor& index, const Tensor& value) {
  OpScope scope("index_fill_", {&t, &index, &value});
  const Scalar v = fill_value(value, "index_fill_");
  index_func_op_(IndexOp::Fill, t, dim, index, Tensor(), v, value, "index_fill_");
  return t;
}

Tensor bincount(const Tensor& t, const Tensor& weights, int64_t minlength) {
  OpScope scope("bincount", {&t, &weights});
  constexpr const char* op = "bincount";
  AutoGradMode no_grad(false);  // not differentiable: record nothing
  check_defined(t, op, "self");
  EMBER_CHECK(minlength >= 0, "[", op, "] minlength should be >= 0, got ", minlength);
  EMBER_CHECK(t.dim() == 1 && is_integral(t.dtype(), false), "[", op,
              "] only supports 1-d non-negative integral inputs, got a ", t.dim(),
              "-d tensor of dtype ", t.dtype());
  if (weights.defined()) {
    EMBER_CHECK(weights.dim() == 1 && weights.size(0) == t.size(0), "[", op,
                "] weights should be 1-d and have the same length as input, got weights ",
                weights.sizes(), " and input ", t.sizes());
  }
  // PyTorch returns int64 zeros for an empty input, even with weights.
  if (t.numel() == 0) return zeros({minlength}, TensorOptions(kInt64));
  const Tensor in = t.to(kInt64).contiguous();
  const int64_t* p = in.data_ptr<int64_t>();
  const int64_t n = in.numel();
  int64_t mx = -1;
  for (int64_t i = 0; i < n; ++i) {
    EMBER_CHECK(p[i] >= 0, "[", op, "] only supports 1-d non-negative integral inputs, got value ",
                p[i], " at position ", i);
    mx = std::max(mx, p[i]);
  }
  const int64_t nbins = std::max(mx + 1, minlength);
  if (!weights.defined()) {
    Tensor out = zeros({nbins}, TensorOptions(kInt64));
    int64_t* o = out.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) ++o[p[i]];
    return out;
  }
  // float32 weights accumulate in float32; every other dtype in float64 (as PyTorch).
  const DType wt = weights.dtype() == kFloat32 ? kFloat32 : kFloat64;
  const Tensor w = weights.to(wt).contiguous();
  Tensor out = zeros({nbins}, TensorOptions(wt));
  kernels::dispatch_floating(wt, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* wp = w.data_ptr<T>();
      T* o = out.data_ptr<T>();
      for (int64_t i = 0; i < n; ++i) o[p[i]] += wp[i];
    }
  });
  return out;
}

Tensor Tensor::bincount(const Tensor& weights, int64_t minlength) const {
  return ember::bincount(*this, weights, minlength);
}

}  // namespace ember

namespace ember {
Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& value) const { return ember::masked_fill(*this, mask, value); }
Tensor Tensor::index_fill(int64_t dim, const Tensor& index, const Tensor& value) const {
  return ember::index_fill(*this, dim, index, value);
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Tensor& value) const { return ember::masked_fill_(self_mut(), mask, value); }
Tensor& Tensor::index_fill_(int64_t dim, const Tensor& index, const Tensor& value) const {
  return ember::index_fill_(self_mut(), dim, index, value);
}
}  // namespace ember
