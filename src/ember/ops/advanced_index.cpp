// Boolean-mask and advanced indexing: masked_fill / masked_select / masked_scatter,
// nonzero, and Tensor::index / Tensor::index_put_ (x[i0, :, i2] in Python).
//
// The masked ops and nonzero work in row-major order of the (broadcast) shape: a first
// parallel pass counts the set elements per chunk, and the prefix sums of those counts
// tell every chunk where its output starts, so the result does not depend on threads.
//
// index and index_put_ are planned the same way. Bool masks become one int64 index per
// masked dim (their nonzero() columns), a 0-dim bool inserts a size-1 dim indexed by [0]
// or [] as Python does, and the integer indices broadcast to one shape B. When the
// indexed dims are not adjacent, self is permuted so they come first (NumPy's rule: the
// indexed dims then lead the result). Every position b of B then selects one element
// offset in the indexed dims, so the result is self's leading dims, then B, then self's
// trailing dims. index_put_ visits B serially for each destination slice (Note [Index
// order] in index.cpp), so duplicate indices accumulate in index order and the last one
// wins when not accumulating, whatever the thread count.

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/autograd/functions_index.h"
#include "ember/autograd/record.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/core/parallel.h"
#include "ember/core/warning.h"
#include "ember/kernels/cpu/dispatch.h"
#include "ember/kernels/cpu/iter.h"
#include "ember/kernels/cpu/kernels.h"
#include "ember/ops/creation.h"
#include "ember/ops/index.h"
#include "ember/ops/view.h"
#include "ember/jit/trace_hook.h"
#include "ember/ops/pointwise_nodes.h"

namespace ember {

namespace {

using kernels::convert;
using kernels::ElementwiseIter;
using kernels::TypeTag;

constexpr int64_t kGrain = 32768;

void check_defined(const Tensor& t, const char* op, const char* what) {
  EMBER_CHECK(t.defined(), "[", op, "] ", what, " is an undefined tensor");
}

template <typename T>
T scalar_as(const Scalar& v) {
  if (v.is_floating_point()) return convert<T>(v.to_double());
  if (v.is_boolean()) return convert<T>(v.to_bool());
  return convert<T>(v.to_long());
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

// Calls body(data, strides, m, b0, b1) for runs of m positions of `it` and the positions
// [b0, b1) of B. Chunks split the positions of `it`, each taking all of B in order;
// when B has more positions and they are independent (parallel_b), chunks split B.
template <typename Body>
void for_each_slice(const ElementwiseIter& it, int64_t nb, bool parallel_b, Body&& body) {
  const int64_t r = it.numel();
  if (r == 0 || nb == 0) return;
  if (parallel_b && nb > r) {
    parallel_for(0, nb, std::max<int64_t>(1, kGrain / r), [&](int64_t b0, int64_t b1) {
      it.serial_for_each(
          [&](char** data, const int64_t* st, int64_t m) { body(data, st, m, b0, b1); }, 0, r);
    });
  } else {
    it.for_each([&](char** data, const int64_t* st, int64_t m) { body(data, st, m, 0, nb); },
                std::max<int64_t>(kGrain / nb, 16));
  }
}

// Loops e in [0, m) and b in [b0, b1), b innermost when b_inner; each e sees b in order.
template <typename F>
inline void loop_2d(int64_t m, int64_t b0, int64_t b1, bool b_inner, F&& f) {
  if (b_inner) {
    for (int64_t e = 0; e < m; ++e) {
      for (int64_t b = b0; b < b1; ++b) f(e, b);
    }
  } else {
    for (int64_t b = b0; b < b1; ++b) {
      for (int64_t e = 0; e < m; ++e) f(e, b);
    }
  }
}

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

// index_put_ accumulation: bool "or", wrapping integers, 16-bit floats rounded per step.
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

int64_t product(IntArrayRef v) {
  int64_t p = 1;
  for (int64_t s : v) p *= s;
  return p;
}

std::string shapes_list(const std::vector<Tensor>& ts) {
  std::string out;
  for (const auto& t : ts) {
    if (!t.defined()) continue;
    if (!out.empty()) out += ", ";
    out += detail::str_cat(t.sizes());
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// masked ops

void check_mask(const Tensor& mask, const char* op) {
  check_defined(mask, op, "mask");
  EMBER_CHECK(mask.dtype() == kBool || mask.dtype() == kUInt8, "[", op,
              "] expected a bool (or uint8) mask, got ", mask.dtype(),
              "; build one with a comparison or .to(ember::kBool)");
}

// mask must broadcast to self's shape without changing it (in-place ops).
void check_mask_broadcasts_to(const Tensor& mask, const Tensor& self, const char* op) {
  bool ok = mask.dim() <= self.dim();
  for (int64_t i = 0; ok && i < mask.dim(); ++i) {
    const int64_t m = mask.sizes()[i], s = self.sizes()[self.dim() - mask.dim() + i];
    ok = m == s || m == 1;
  }
  EMBER_CHECK(ok, "[", op, "] mask of shape ", mask.sizes(),
              " cannot be broadcast to the shape of self ", self.sizes(),
              " (an in-place op cannot change self's shape)");
}

void masked_fill_into(const Tensor& self, const Tensor& mask, const Scalar& value, const char* op) {
  if (self.numel() == 0) return;
  ElementwiseIter it(self.sizes());
  it.add(self);
  it.add(mask);
  it.build();
  kernels::dispatch_all(self.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = scalar_as<T>(value);
    it.for_each([&](char** data, const int64_t* st, int64_t m) {
      for (int64_t e = 0; e < m; ++e) {
        if (*reinterpret_cast<const uint8_t*>(data[1] + e * st[1])) {
          *reinterpret_cast<T*>(data[0] + e * st[0]) = v;
        }
      }
    });
  });
}

// Row-major chunk counts of nonzero bytes in a contiguous byte mask, and their prefix sums
// (offsets[c] = trues before chunk c; offsets.back() = total).
std::vector<int64_t> mask_chunk_offsets(const uint8_t* m, int64_t n, int64_t grain) {
  const int64_t chunks = (n + grain - 1) / grain;
  std::vector<int64_t> offsets(static_cast<size_t>(chunks) + 1, 0);
  parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      int64_t cnt = 0;
      for (int64_t i = c * grain, e = std::min(n, (c + 1) * grain); i < e; ++i) cnt += m[i] != 0;
      offsets[c + 1] = cnt;
    }
  });
  for (int64_t c = 0; c < chunks; ++c) offsets[c + 1] += offsets[c];
  return offsets;
}

// self (contiguous) gets source's elements in order where the mask (contiguous bytes,
// same numel) is set.
void masked_scatter_contiguous(Tensor& self, const Tensor& mask, const Tensor& source,
                               const char* op) {
  const int64_t n = self.numel();
  const uint8_t* m = static_cast<const uint8_t*>(mask.data_ptr());
  const std::vector<int64_t> offsets = mask_chunk_offsets(m, n, kGrain);
  EMBER_CHECK(source.numel() >= offsets.back(), "[", op, "] number of elements of source (",
              source.numel(), ") < number of ones in mask (", offsets.back(), ")");
  const Tensor src = source.contiguous();
  const size_t es = self.element_size();
  char* out = static_cast<char*>(self.data_ptr());
  const char* in = static_cast<const char*>(src.data_ptr());
  parallel_for(0, static_cast<int64_t>(offsets.size()) - 1, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      int64_t k = offsets[c];
      for (int64_t i = c * kGrain, e = std::min(n, (c + 1) * kGrain); i < e; ++i) {
        if (m[i]) std::memcpy(out + i * es, in + (k++) * es, es);
      }
    }
  });
}

void masked_scatter_into(Tensor& self, const Tensor& mask, const Tensor& source, const char* op) {
  check_defined(source, op, "source");
  EMBER_CHECK(source.dtype() == self.dtype(), "[", op,
              "] expected self and source to have the same dtype, got ", self.dtype(), " and ",
              source.dtype());
  const Tensor m = mask.expand(self.sizes()).contiguous();
  const Tensor src = unaliased(source, self);
  if (self.is_contiguous()) {
    masked_scatter_contiguous(self, m, src, op);
  } else {
    Tensor tmp = self.contiguous();
    masked_scatter_contiguous(tmp, m, src, op);
    kernels::cpu::copy(self, tmp);
  }
}

// ---------------------------------------------------------------------------------------
// Advanced indexing

// The columns of mask.nonzero() (row-major order), one int64 tensor per mask dim.
std::vector<Tensor> mask_to_indices(const Tensor& mask) {
  const Tensor m = mask.contiguous();
  const uint8_t* p = static_cast<const uint8_t*>(m.data_ptr());
  const int64_t n = m.numel(), k = m.dim();
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) count += p[i] != 0;
  std::vector<Tensor> cols;
  std::vector<int64_t*> ptrs;
  for (int64_t d = 0; d < k; ++d) {
    cols.push_back(empty({count}, TensorOptions(kInt64)));
    ptrs.push_back(cols.back().data_ptr<int64_t>());
  }
  int64_t j = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!p[i]) continue;
    int64_t rem = i;
    for (int64_t d = k - 1; d >= 0; --d) {
      ptrs[d][j] = rem % m.sizes()[d];
      rem /= m.sizes()[d];
    }
    ++j;
  }
  return cols;
}

struct IndexPlan {
  Tensor view;                   // self, maybe with inserted dims and permuted
  int64_t first = 0;             // first indexed dim of view
  int64_t count = 0;             // number of indexed dims of view
  DimVector bshape;              // the broadcast shape of the indices
  std::vector<int64_t> offsets;  // element offset in view for each position of bshape
  DimVector result_shape;        // view's leading dims + bshape + view's trailing dims
};

IndexPlan make_plan(const Tensor& self, const std::vector<Tensor>& indices, const char* op) {
  check_defined(self, op, "self");
  IndexPlan plan;
  Tensor view = self;
  std::vector<Tensor> per_dim;  // one entry per dim of view; undefined means a full slice
  std::vector<int64_t> orig;    // the dim of self each view dim came from (-1: inserted)
  int64_t consumed = 0;
  int64_t got = 0;  // self dims the indices name, for the error message
  for (const Tensor& e : indices) {
    got += !e.defined() ? 1 : (e.dtype() == kBool || e.dtype() == kUInt8) ? e.dim() : 1;
  }
  EMBER_CHECK(got <= self.dim(), "[", op, "] too many indices for tensor of dimension ", self.dim(),
              " (got ", got, ")");
  for (const Tensor& e : indices) {
    const int64_t pos = static_cast<int64_t>(per_dim.size());
    if (!e.defined()) {
      per_dim.emplace_back();
      orig.push_back(consumed++);
      continue;
    }
    const DType dt = e.dtype();
    if (dt == kUInt8) {
      warn(std::string("[") + op + "] indexing with dtype torch.uint8 is now deprecated, please use a dtype "
           "torch.bool instead.");
    }
    if (dt == kBool || dt == kUInt8) {
      if (e.dim() == 0) {
        // x[True] adds a size-1 dim and takes all of it, x[False] takes none of it.
        const bool keep = e.item<int64_t>() != 0;
        view = view.unsqueeze(pos);
        per_dim.push_back(zeros({keep ? 1 : 0}, TensorOptions(kInt64)));
        orig.push_back(-1);
        continue;
      }
      for (int64_t i = 0; i < e.dim(); ++i) {
        EMBER_CHECK(e.sizes()[i] == view.sizes()[pos + i], "[", op, "] the shape of the mask ",
                    e.sizes(), " at index ", i, " does not match the shape of the indexed tensor ",
                    self.sizes(), " at index ", consumed + i);
      }
      for (Tensor& col : mask_to_indices(e)) {
        per_dim.push_back(std::move(col));
        orig.push_back(consumed++);
      }
      continue;
    }
    EMBER_CHECK(dt == kInt64 || dt == kInt32, "[", op,
                "] tensors used as indices must be int64, int32, bool or uint8 tensors, got ", dt);
    per_dim.push_back(e.to(kInt64));
    orig.push_back(consumed++);
  }
  while (static_cast<int64_t>(per_dim.size()) < view.dim()) {
    per_dim.emplace_back();
    orig.push_back(consumed++);
  }

  // Broadcast the indices (own loop for PyTorch's error message).
  std::vector<int64_t> adv;
  for (int64_t d = 0; d < view.dim(); ++d) {
    if (!per_dim[d].defined()) continue;
    adv.push_back(d);
    const IntArrayRef s = per_dim[d].sizes();
    const size_t n = std::max(plan.bshape.size(), s.size());
    DimVector out(n);
    for (size_t i = 0; i < n; ++i) {
      const size_t ob = n - plan.bshape.size(), os = n - s.size();
      const int64_t a = i < ob ? 1 : plan.bshape[i - ob];
      const int64_t b = i < os ? 1 : s[i - os];
      EMBER_CHECK(a == b || a == 1 || b == 1, "[", op,
                  "] shape mismatch: indexing tensors could not be broadcast together with shapes ",
                  shapes_list(per_dim));
      out[i] = a == 1 ? b : a;
    }
    plan.bshape = out;
  }

  const bool adjacent =
      adv.empty() || adv.back() - adv.front() + 1 == static_cast<int64_t>(adv.size());
  if (!adjacent) {
    // Indexed dims first, the others after them, each group in order.
    DimVector perm;
    std::vector<Tensor> pd;
    std::vector<int64_t> od;
    for (int64_t d : adv) perm.push_back(d);
    for (int64_t d = 0; d < view.dim(); ++d) {
      if (!per_dim[d].defined()) perm.push_back(d);
    }
    for (int64_t d : perm) {
      pd.push_back(per_dim[d]);
      od.push_back(orig[d]);
    }
    view = view.permute(perm);
    per_dim = std::move(pd);
    orig = std::move(od);
    plan.first = 0;
  } else {
    plan.first = adv.empty() ? 0 : adv.front();
  }
  plan.count = static_cast<int64_t>(adv.size());

  // Element offsets for every position of bshape, checked and wrapped.
  const int64_t nb = product(plan.bshape);
  plan.offsets.assign(static_cast<size_t>(nb), 0);
  for (int64_t k = 0; k < plan.count; ++k) {
    const int64_t d = plan.first + k;
    const Tensor ix = per_dim[d].expand(plan.bshape).contiguous();
    const int64_t* p = ix.data_ptr<int64_t>();
    const int64_t size = view.sizes()[d], stride = view.strides()[d];
    for (int64_t b = 0; b < nb; ++b) {
      int64_t v = p[b];
      EMBER_CHECK(v >= -size && v < size, "[", op, "] index ", v,
                  " is out of bounds for dimension ", orig[d] < 0 ? 0 : orig[d], " with size ", size,
                  size == 0 ? " (index is out of bounds for dimension with size 0)" : "");
      if (v < 0) v += size;
      plan.offsets[b] += v * stride;
    }
  }
  for (int64_t d = 0; d < plan.first; ++d) plan.result_shape.push_back(view.sizes()[d]);
  for (int64_t s : plan.bshape) plan.result_shape.push_back(s);
  for (int64_t d = plan.first + plan.count; d < view.dim(); ++d) {
    plan.result_shape.push_back(view.sizes()[d]);
  }
  plan.view = view;
  return plan;
}

// The walk over view's non-indexed dims: their sizes, and the element strides of a tensor
// whose dims are laid out as (leading, B..., trailing) with nbd dims for B.
DimVector rest_sizes(const IndexPlan& plan) {
  DimVector out;
  for (int64_t d = 0; d < plan.view.dim(); ++d) {
    if (d < plan.first || d >= plan.first + plan.count) out.push_back(plan.view.sizes()[d]);
  }
  return out;
}

DimVector rest_strides(const IndexPlan& plan, IntArrayRef strides) {
  const int64_t nbd = static_cast<int64_t>(plan.bshape.size());
  DimVector out;
  for (int64_t d = 0; d < static_cast<int64_t>(strides.size()); ++d) {
    if (d < plan.first || d >= plan.first + nbd) out.push_back(strides[d]);
  }
  return out;
}

DimVector view_rest_strides(const IndexPlan& plan) {
  DimVector out;
  for (int64_t d = 0; d < plan.view.dim(); ++d) {
    if (d < plan.first || d >= plan.first + plan.count) out.push_back(plan.view.strides()[d]);
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// masked_fill / masked_select / masked_scatter

namespace {

Tensor masked_fill_copy(const Tensor& t, const Tensor& mask, const Scalar& value) {
  // Out of place, self broadcasts with the mask (PyTorch's rule).
  const DimVector shape = broadcast_shapes(t.sizes(), mask.sizes());
  Tensor out = t.expand(shape).clone();
  masked_fill_into(out, mask, value, "masked_fill");
  return out;
}

// value_tensor: the 0-d value tensor of the tensor form (its value is in `value`).
Tensor masked_fill_op(const Tensor& t, const Tensor& mask, const Scalar& value,
                      const Tensor& value_tensor) {
  check_defined(t, "masked_fill", "self");
  check_mask(mask, "masked_fill");
  if (autograd::needs_grad(t, value_tensor)) {
    return autograd::fn::masked_fill(t, mask, value_tensor,
                                     [&] { return masked_fill_copy(t, mask, value); });
  }
  return masked_fill_copy(t, mask, value);
}

void masked_fill_op_(Tensor& self, const Tensor& mask, const Scalar& value,
                     const Tensor& value_tensor) {
  check_defined(self, "masked_fill_", "self");
  check_mask(mask, "masked_fill_");
  check_mask_broadcasts_to(mask, self, "masked_fill_");
  check_no_internal_overlap(self, "masked_fill_");
  auto run = [&] {
    masked_fill_into(self, unaliased(mask, self), value, "masked_fill_");
    self.bump_version();
  };
  if (autograd::needs_grad(self, value_tensor)) {
    autograd::fn::masked_fill_(self, mask, value_tensor, run);
    return;
  }
  autograd::check_inplace_cheap(self, "masked_fill_");
  run();
}

Scalar fill_value(const Tensor& value, const char* op) {
  check_defined(value, op, "value");
  EMBER_CHECK(value.dim() == 0, "[", op,
              "] only supports a 0-dimensional value tensor, but got a tensor with ", value.dim(),
              " dimension(s)");
  return value.item();
}

Tensor masked_select_impl(const Tensor& t, const Tensor& mask) {
  const DimVector shape = broadcast_shapes(t.sizes(), mask.sizes());
  const Tensor src = t.expand(shape).contiguous();
  const Tensor m = mask.expand(shape).contiguous();
  const int64_t n = src.numel();
  const uint8_t* mp = static_cast<const uint8_t*>(m.data_ptr());
  const std::vector<int64_t> offsets = mask_chunk_offsets(mp, n, kGrain);
  Tensor out = empty({offsets.back()}, t.options());
  const size_t es = t.element_size();
  const char* in = static_cast<const char*>(src.data_ptr());
  char* o = static_cast<char*>(out.data_ptr());
  parallel_for(0, static_cast<int64_t>(offsets.size()) - 1, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      int64_t k = offsets[c];
      for (int64_t i = c * kGrain, e = std::min(n, (c + 1) * kGrain); i < e; ++i) {
        if (mp[i]) std::memcpy(o + (k++) * es, in + i * es, es);
      }
    }
  });
  return out;
}

Tensor masked_scatter_copy(const Tensor& t, const Tensor& mask, const Tensor& source) {
  const DimVector shape = broadcast_shapes(t.sizes(), mask.sizes());
  Tensor out = t.expand(shape).clone();
  masked_scatter_into(out, mask, source, "masked_scatter");
  return out;
}

}  // namespace

Tensor masked_fill(const Tensor& t, const Tensor& mask, const Scalar& value) {
  jit::detail::TraceOp trace("masked_fill");
  Tensor out = [&]() -> Tensor {
  OpScope scope("masked_fill", {&t, &mask});
  return masked_fill_op(t, mask, value, Tensor());
}();
  if (trace.recording()) trace.record({t, mask}, {{"value", detail::value_from_scalar(value)}}, out);
  return out;
}

Tensor masked_fill(const Tensor& t, const Tensor& mask, const Tensor& value) {
  jit::detail::TraceOp trace("masked_fill");
  Tensor out = [&]() -> Tensor {
  OpScope scope("masked_fill", {&t, &mask, &value});
  const Scalar v = fill_value(value, "masked_fill");
  return masked_fill_op(t, mask, v, value);
}();
  if (trace.recording()) trace.record({t, mask, value}, {}, out);
  return out;
}

Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value) const {
  return ember::masked_fill(*this, mask, value);
}

Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) const {
  OpScope scope("masked_fill_", {this, &mask});
  masked_fill_op_(self_mut(), mask, value, Tensor());
  return self_mut();
}

Tensor& masked_fill_(Tensor& t, const Tensor& mask, const Tensor& value) {
  OpScope scope("masked_fill_", {&t, &mask, &value});
  const Scalar v = fill_value(value, "masked_fill_");
  masked_fill_op_(t, mask, v, value);
  return t;
}

Tensor masked_select(const Tensor& t, const Tensor& mask) {
  OpScope scope("masked_select", {&t, &mask});
  jit::detail::value_read("masked_select", mask);  // its shape depends on the data
  check_defined(t, "masked_select", "self");
  check_mask(mask, "masked_select");
  if (autograd::needs_grad(t)) {
    return autograd::fn::masked_select(t, mask, [&] { return masked_select_impl(t, mask); });
  }
  return masked_select_impl(t, mask);
}

Tensor Tensor::masked_select(const Tensor& mask) const { return ember::masked_select(*this, mask); }

Tensor Tensor::masked_scatter(const Tensor& mask, const Tensor& source) const {
  OpScope scope("masked_scatter", {this, &mask, &source});
  check_defined(*this, "masked_scatter", "self");
  check_mask(mask, "masked_scatter");
  if (autograd::needs_grad(*this, source)) {
    return autograd::fn::masked_scatter(*this, mask, source,
                                        [&] { return masked_scatter_copy(*this, mask, source); });
  }
  return masked_scatter_copy(*this, mask, source);
}

Tensor& Tensor::masked_scatter_(const Tensor& mask, const Tensor& source) const {
  OpScope scope("masked_scatter_", {this, &mask, &source});
  check_defined(self_mut(), "masked_scatter_", "self");
  check_mask(mask, "masked_scatter_");
  check_mask_broadcasts_to(mask, self_mut(), "masked_scatter_");
  check_no_internal_overlap(self_mut(), "masked_scatter_");
  auto run = [&] {
    masked_scatter_into(self_mut(), mask, source, "masked_scatter_");
    bump_version();
  };
  if (autograd::needs_grad(self_mut(), source)) {
    autograd::fn::masked_scatter_(self_mut(), mask, source, run);
    return self_mut();
  }
  autograd::check_inplace_cheap(self_mut(), "masked_scatter_");
  run();
  return self_mut();
}

// ---------------------------------------------------------------------------------------
// nonzero / bincount

Tensor nonzero(const Tensor& t) {
  OpScope scope("nonzero", {&t});
  jit::detail::value_read("nonzero", t);  // its shape depends on the data
  check_defined(t, "nonzero", "self");
  AutoGradMode no_grad(false);  // not differentiable: record nothing
  const Tensor c = t.contiguous();
  const int64_t n = c.numel();
  const int64_t nd = c.dim();
  // A byte per element: is it nonzero (NaN counts, -0.0 does not).
  std::vector<uint8_t> flags(static_cast<size_t>(n));
  kernels::dispatch_all(c.dtype(), "nonzero", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = static_cast<const T*>(c.data_ptr());
    parallel_for(0, n, kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) flags[i] = convert<bool>(p[i]) ? 1 : 0;
    });
  });
  const std::vector<int64_t> offsets = mask_chunk_offsets(flags.data(), n, kGrain);
  Tensor out = empty({offsets.back(), nd}, TensorOptions(kInt64));
  int64_t* o = out.data_ptr<int64_t>();
  const IntArrayRef sizes = c.sizes();
  parallel_for(0, static_cast<int64_t>(offsets.size()) - 1, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t ch = cb; ch < ce; ++ch) {
      int64_t k = offsets[ch];
      for (int64_t i = ch * kGrain, e = std::min(n, (ch + 1) * kGrain); i < e; ++i) {
        if (!flags[i]) continue;
        int64_t rem = i;
        for (int64_t d = nd - 1; d >= 0; --d) {
          o[k * nd + d] = rem % sizes[d];
          rem /= sizes[d];
        }
        ++k;
      }
    }
  });
  return out;
}

Tensor Tensor::nonzero() const { return ember::nonzero(*this); }

// ---------------------------------------------------------------------------------------
// index / index_put_

namespace {

Tensor index_impl(const Tensor& self, const std::vector<Tensor>& indices) {
  const IndexPlan plan = make_plan(self, indices, "index");
  const DType dtype = self.dtype();
  const size_t element_size = self.element_size();
  Tensor out = empty(plan.result_shape, self.options());
  if (out.numel() == 0) return out;
  const DimVector rshape = rest_sizes(plan);
  const int64_t nb = static_cast<int64_t>(plan.offsets.size());
  const int64_t es = static_cast<int64_t>(element_size);
  // Each position of B writes one contiguous block of the trailing dims.
  int64_t trailing = 1;
  for (int64_t d = plan.first + plan.count; d < plan.view.dim(); ++d)
    trailing *= plan.view.sizes()[d];
  ElementwiseIter it(rshape);
  it.add_raw(out.data_ptr(), dtype, rest_strides(plan, out.strides()));
  it.add_raw(plan.view.data_ptr(), dtype, view_rest_strides(plan));
  it.build();
  const int64_t* off = plan.offsets.data();
  dispatch_by_size(element_size, [&](auto tag) {
    using E = typename decltype(tag)::type;
    for_each_slice(it, nb, true,
                   [&](char** data, const int64_t* st, int64_t m, int64_t b0, int64_t b1) {
                     loop_2d(m, b0, b1, trailing * es < std::abs(st[0]), [&](int64_t e, int64_t b) {
                       *reinterpret_cast<E*>(data[0] + b * trailing * es + e * st[0]) =
                           *reinterpret_cast<const E*>(data[1] + off[b] * es + e * st[1]);
                     });
                   });
  });
  return out;
}

}  // namespace

Tensor Tensor::index(const std::vector<Tensor>& indices) const {
  OpScope scope("index", {this}, indices.data(), indices.size());
  if (autograd::needs_grad(*this)) {
    return autograd::fn::index(*this, indices, [&] { return index_impl(*this, indices); });
  }
  return index_impl(*this, indices);
}

Tensor& Tensor::index_put_(const std::vector<Tensor>& indices, const Tensor& values,
                           bool accumulate) const {
  OpScope scope("index_put_", {this, &values}, indices.data(), indices.size());
  constexpr const char* op = "index_put_";
  EMBER_CHECK(defined(), "[", op, "] self is an undefined tensor");
  EMBER_CHECK(values.defined(), "[", op, "] values is an undefined tensor");
  EMBER_CHECK(values.dtype() == dtype(), "[", op,
              "] index put requires the source and destination dtypes match, got ", dtype(),
              " for the destination and ", values.dtype(), " for the source");
  check_no_internal_overlap(self_mut(), op);
  if (autograd::needs_grad(self_mut(), values)) {
    autograd::fn::index_put_(self_mut(), indices, values, accumulate,
                             [&] { index_put_(indices, values, accumulate); });
    return self_mut();
  }
  autograd::check_inplace_cheap(self_mut(), op);
  const IndexPlan plan = make_plan(self_mut(), indices, op);
  const IntArrayRef rs = plan.result_shape;
  const Tensor& vals = values;
  bool ok = vals.dim() <= static_cast<int64_t>(rs.size());
  for (int64_t i = 0; ok && i < vals.dim(); ++i) {
    const int64_t v = vals.sizes()[i], t = rs[rs.size() - vals.dim() + i];
    ok = v == t || v == 1;
  }
  EMBER_CHECK(ok, "[", op, "] shape mismatch: value tensor of shape ", values.sizes(),
              " cannot be broadcast to indexing result of shape ", rs);
  if (product(rs) > 0) {
    const Tensor src = unaliased(vals, self_mut()).expand(rs);
    const int64_t nb = static_cast<int64_t>(plan.offsets.size());
    const int64_t nbd = static_cast<int64_t>(plan.bshape.size());
    // Offsets of values for each position of B (row-major), from its strides there.
    std::vector<int64_t> voff(static_cast<size_t>(nb), 0);
    for (int64_t b = 0; b < nb; ++b) {
      int64_t rem = b, o = 0;
      for (int64_t d = nbd - 1; d >= 0; --d) {
        o += (rem % plan.bshape[d]) * src.strides()[plan.first + d];
        rem /= plan.bshape[d];
      }
      voff[b] = o;
    }
    const DimVector rshape = rest_sizes(plan);
    ElementwiseIter it(rshape);
    it.add_raw(plan.view.data_ptr(), dtype(), view_rest_strides(plan));
    it.add_raw(src.data_ptr(), dtype(), rest_strides(plan, src.strides()));
    it.build();
    const int64_t* off = plan.offsets.data();
    const int64_t es = static_cast<int64_t>(element_size());
    // The shortest step through the indexed dims decides whether B runs innermost.
    int64_t min_step = INT64_MAX;  // bytes
    for (int64_t d = plan.first; d < plan.first + plan.count; ++d) {
      if (plan.view.sizes()[d] > 1) {
        min_step = std::min(min_step, std::abs(plan.view.strides()[d]) * es);
      }
    }
    kernels::dispatch_all(dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      for_each_slice(
          it, nb, false, [&](char** data, const int64_t* st, int64_t m, int64_t b0, int64_t b1) {
            loop_2d(m, b0, b1, min_step < std::abs(st[0]), [&](int64_t e, int64_t b) {
              T& d = *reinterpret_cast<T*>(data[0] + off[b] * es + e * st[0]);
              const T v = *reinterpret_cast<const T*>(data[1] + voff[b] * es + e * st[1]);
              d = accumulate ? add_values(d, v) : v;
            });
          });
    });
  }
  bump_version();
  return self_mut();
}

}  // namespace ember
