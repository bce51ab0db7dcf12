// View ops: new TensorImpls over the same storage. None of these copies data; reshape,
// flatten and contiguous copy only when no view can express the result.

#include "ember/ops/view.h"

#include <algorithm>

#include "ember/autograd/functions.h"
#include "ember/autograd/autograd_meta.h"
#include "ember/autograd/grad_mode.h"
#include "ember/autograd/record.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/core/op_name_scope.h"
#include "ember/jit/trace_hook.h"

namespace ember {

namespace {

// split, chunk and unbind return one tensor per piece; a list this long costs gigabytes of
// tensor headers (and minutes), so it is refused up front rather than failing in std::vector.
constexpr int64_t kMaxPieces = int64_t{1} << 24;

void check_piece_count(int64_t n, const char* op) {
  EMBER_CHECK(n <= kMaxPieces, "[", op, "] would return ", n, " tensors; at most ", kMaxPieces,
              " are supported");
}

// Every view remembers its base (the tensor that is not itself a view), so autograd can
// rewrite the base's history when the view is modified in place (Note [In-place on a view]).
Tensor make_view(const Tensor& self, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  Tensor v(IntrusivePtr<TensorImpl>::make(self.storage(), self.dtype(), sizes, strides, offset));
  if (self.is_inference()) {
    // Inference tensors never enter autograd, so their views keep no base and never
    // require grad (as libtorch's, which are not views).
    v.impl()->set_inference(true);
    return v;
  }
  v.impl()->set_inference(false);  // a normal tensor's views are normal, even inside InferenceMode
  TensorImpl* base = self.impl()->view_base();
  v.impl()->set_view_base(base ? self.impl()->view_base_ptr() : self.impl_ptr());
  // A view taken with grad mode off records no history but still requires grad when its
  // base does (a leaf, as in libtorch); in grad mode the view's backward node sets it. The
  // version it was taken at shows later whether its base changed (record.cpp).
  if (!GradMode::is_enabled() && self.requires_grad()) {
    autograd::AutogradMeta& meta = v.impl()->ensure_autograd_meta();
    meta.requires_grad = true;
    meta.attr_version = v._version();
    const autograd::AutogradMeta* sm = self.impl()->autograd_meta();
    meta.made_in_inference_mode = InferenceMode::is_enabled() || (sm && sm->made_in_inference_mode);
  }
  return v;
}

void check_defined(const Tensor& t, const char* op) {
  EMBER_CHECK(t.defined(), "[", op, "] called on an undefined tensor");
}

}  // namespace

DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b) {
  const size_t n = std::max(a.size(), b.size());
  DimVector out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    EMBER_CHECK(da == db || da == 1 || db == 1, "[broadcast] the size of tensor a (", da,
                ") must match the size of tensor b (", db, ") at non-singleton dimension ", i,
                " (shapes ", a, " and ", b, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

DimVector broadcast_shapes(const std::vector<DimVector>& shapes) {
  DimVector out;
  for (const auto& s : shapes) out = broadcast_shapes(out, s);
  return out;
}

std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& tensors) {
  DimVector shape;
  for (const auto& t : tensors) shape = broadcast_shapes(shape, t.sizes());
  std::vector<Tensor> out;
  out.reserve(tensors.size());
  for (const auto& t : tensors) out.push_back(t.expand(shape));
  return out;
}

DimVector infer_size(IntArrayRef shape, int64_t numel, const char* op) {
  DimVector out(shape);
  int64_t known = 1;
  int64_t infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      EMBER_CHECK(infer < 0, "[", op, "] only one dimension can be inferred, got shape ", shape);
      infer = static_cast<int64_t>(i);
    } else {
      EMBER_CHECK(shape[i] >= 0, "[", op, "] invalid shape dimension ", shape[i], " in shape ", shape);
      EMBER_CHECK(shape[i] == 0 || known <= INT64_MAX / shape[i], "[", op, "] shape ", shape,
                  " has too many elements (int64 overflow)");
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    EMBER_CHECK(known != 0 && numel % known == 0, "[", op, "] shape ", shape,
                " is invalid for input of size ", numel);
    out[infer] = numel / known;
  } else {
    EMBER_CHECK(known == numel, "[", op, "] shape ", shape, " is invalid for input of size ", numel);
  }
  return out;
}

bool compute_view_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef new_sizes,
                          DimVector& new_strides) {
  new_strides.assign(new_sizes.size(), 1);
  // new_sizes must hold as many elements as sizes (infer_size makes sure for view/reshape;
  // checked here too, overflow included, since this function is public).
  int64_t numel = 1, new_numel = 1;
  for (int64_t s : sizes) numel *= s;
  for (int64_t s : new_sizes) {
    if (s < 0 || __builtin_mul_overflow(new_numel, s, &new_numel)) return false;
  }
  if (new_numel != numel) return false;
  if (sizes.empty()) return true;  // a 0-dim tensor views as any shape of one element
  if (numel == 0) {
    if (sizes.equals(new_sizes)) {
      new_strides.assign(strides);
      return true;
    }
    for (int64_t d = static_cast<int64_t>(new_sizes.size()) - 1; d >= 0; --d) {
      // An empty tensor never addresses memory through these strides, so their products
      // may wrap around (in unsigned arithmetic: no overflow UB), as PyTorch's do.
      new_strides[d] = d == static_cast<int64_t>(new_sizes.size()) - 1
                           ? 1
                           : static_cast<int64_t>(static_cast<uint64_t>(std::max<int64_t>(new_sizes[d + 1], 1)) *
                                                  static_cast<uint64_t>(new_strides[d + 1]));
    }
    return true;
  }
  // Walk the old dims from the innermost, grouping them into chunks that are contiguous
  // among themselves; each chunk must be covered exactly by a run of new dims.
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  int64_t chunk_base_stride = strides.back();
  int64_t tensor_numel = 1;
  int64_t view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(sizes.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= sizes[tensor_d];
    if (tensor_d == 0 || (sizes[tensor_d - 1] != 1 &&
                          strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        new_strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (tensor_d > 0) {
        chunk_base_stride = strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

Tensor Tensor::view(IntArrayRef sizes) const {
  jit::detail::TraceOp trace("view");
  Tensor out = [&]() -> Tensor {
  detail::OpNameScope scope("view");
  check_defined(*this, "view");
  DimVector shape = infer_size(sizes, numel(), "view");
  DimVector st;
  EMBER_CHECK(compute_view_strides(this->sizes(), strides(), shape, st), "[view] shape ", shape,
              " is not compatible with input sizes ", this->sizes(), " and strides ", strides(),
              " (at least one dimension spans across two contiguous subspaces); use reshape() "
              "instead, which copies when it must");
  Tensor out = make_view(*this, shape, st, storage_offset());
  if (autograd::needs_grad(*this)) autograd::fn::view_reshape("ViewBackward0", *this, out);
  return out;
}();
  if (trace.recording()) trace.record({*this}, {{"size", jit::detail::ints(sizes)}}, out);
  return out;
}

Tensor Tensor::reshape(IntArrayRef sizes) const {
  jit::detail::TraceOp trace("reshape");
  Tensor out = [&]() -> Tensor {
  detail::OpNameScope scope("reshape");
  check_defined(*this, "reshape");
  DimVector shape = infer_size(sizes, numel(), "reshape");
  DimVector st;
  if (compute_view_strides(this->sizes(), strides(), shape, st)) {
    Tensor out = make_view(*this, shape, st, storage_offset());
    if (autograd::needs_grad(*this)) autograd::fn::view_reshape("ViewBackward0", *this, out);
    return out;
  }
  return clone().view(shape);
}();
  if (trace.recording()) trace.record({*this}, {{"shape", jit::detail::ints(sizes)}}, out);
  return out;
}

Tensor Tensor::as_strided(IntArrayRef sizes, IntArrayRef strides,
                          std::optional<int64_t> storage_offset) const {
  detail::OpNameScope scope("as_strided");
  check_defined(*this, "as_strided");
  EMBER_CHECK(sizes.size() == strides.size(), "[as_strided] mismatch in length of strides and shape: sizes ",
              sizes, " has ", sizes.size(), " dims but strides ", strides, " has ", strides.size());
  const int64_t offset = storage_offset.value_or(this->storage_offset());
  EMBER_CHECK(offset >= 0, "[as_strided] storage offset must be non-negative, got ", offset);
  // Even an empty view (which may start anywhere, as in PyTorch) must have an address.
  int64_t offset_bytes = 0;
  EMBER_CHECK(!__builtin_mul_overflow(offset, static_cast<int64_t>(element_size()), &offset_bytes),
              "[as_strided] storage offset ", offset, " of ", dtype(), " elements is beyond any address");
  int64_t last = offset;  // highest element index reached
  bool empty = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    EMBER_CHECK(sizes[i] >= 0, "[as_strided] negative size ", sizes[i], " in sizes ", sizes);
    EMBER_CHECK(strides[i] >= 0, "[as_strided] negative strides are not supported, got strides ",
                strides);
    int64_t span = 0;
    if (sizes[i] == 0) empty = true;
    else
      EMBER_CHECK(!__builtin_mul_overflow(sizes[i] - 1, strides[i], &span) && !__builtin_add_overflow(last, span, &last),
                  "[as_strided] sizes ", sizes, ", strides ", strides, " and storage offset ", offset,
                  " reach past int64 elements");
  }
  const int64_t storage_elems =
      static_cast<int64_t>(this->storage()->nbytes() / element_size());
  EMBER_CHECK(empty || last < storage_elems, "[as_strided] sizes ", sizes, ", strides ", strides,
              " and storage offset ", offset, " need a storage of ", static_cast<uint64_t>(last) + 1,
              " elements, but the storage holds only ", storage_elems);
  Tensor out = make_view(*this, sizes, strides, offset);
  if (autograd::needs_grad(*this)) autograd::fn::view_strided("AsStridedBackward0", *this, out);
  return out;
}

Tensor Tensor::t() const {
  jit::detail::TraceOp trace("t");
  Tensor out = [&]() -> Tensor {
  check_defined(*this, "t");
  EMBER_CHECK(dim() <= 2, "[t] expects a tensor with <= 2 dimensions, but self is ", dim(),
              "D; use transpose(dim0, dim1) or permute() for more dimensions");
  if (dim() < 2) return alias();
  Tensor out = make_view(*this, {sizes()[1], sizes()[0]}, {strides()[1], strides()[0]}, storage_offset());
  if (autograd::needs_grad(*this)) autograd::fn::view_transpose("TBackward0", *this, out, 0, 1);
  return out;
}();
  if (trace.recording()) trace.record({*this}, {}, out);
  return out;
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  jit::detail::TraceOp trace("transpose");
  Tensor out = [&]() -> Tensor {
  check_defined(*this, "transpose");
  const int64_t n = dim();
  dim0 = wrap_dim(dim0, n, "transpose");
  dim1 = wrap_dim(dim1, n, "transpose");
  if (n == 0) return alias();
  DimVector sz(sizes()), st(strides());
  std::swap(sz[dim0], sz[dim1]);
  std::swap(st[dim0], st[dim1]);
  Tensor out = make_view(*this, sz, st, storage_offset());
  if (autograd::needs_grad(*this)) autograd::fn::view_transpose("TransposeBackward0", *this, out, dim0, dim1);
  return out;
}();
  if (trace.recording()) trace.record({*this}, {{"dim0", Value(dim0)}, {"dim1", Value(dim1)}}, out);
  return out;
}

Tensor Tensor::permute(IntArrayRef dims) const {
  jit::detail::TraceOp trace("permute");
  Tensor out = [&]() -> Tensor {
  check_defined(*this, "permute");
  const int64_t n = dim();
  EMBER_CHECK(static_cast<int64_t>(dims.size()) == n, "[permute] the number of dims in the permutation ",
              dims, " (", dims.size(), ") does not match the tensor's ", n, " dims (sizes ", sizes(), ")");
  DimVector sz(n), st(n);
  std::vector<bool> seen(n, false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = wrap_dim(dims[i], n, "permute");
    EMBER_CHECK(!seen[d], "[permute] repeated dim ", dims[i], " in permutation ", dims);
    seen[d] = true;
    sz[i] = sizes()[d];
    st[i] = strides()[d];
  }
  Tensor out = make_view(*this, sz, st, storage_offset());
  if (autograd::needs_grad(*this)) autograd::fn::view_permute(*this, out, dims);
  return out;
}();
  if (trace.recording()) trace.record({*this}, {{"dims", jit::detail::ints(dims)}}, out);
  return out;
}

Tensor Tensor::movedim(int64_t source, int64_t destination) const {
  check_defined(*this, "movedim");
  const int64_t n = dim();
  source = wrap_dim(source, n, "movedim");
  destination = wrap_dim(destination, n, "movedim");
  if (n == 0) return alias();
  std::vector<int64_t> order;
  for (int64_t d = 0; d < n; ++d) {
    if (d != source) order.push_back(d);
  }
  order.insert(order.begin() + destination, source);
  return permute(order);
}

Tensor Tensor::expand(IntArrayRef sizes) const {
  jit::detail::TraceOp trace("expand");
  Tensor out = [&]() -> Tensor {
  detail::OpNameScope scope("expand");
  check_defined(*this, "expand");
  const int64_t n = static_cast<int64_t>(sizes.size());
  const int64_t nd = dim();
  EMBER_CHECK(n >= nd, "[expand] the number of sizes provided (", n,
              ") must be greater or equal to the number of dimensions in the tensor (", nd,
              "); tensor sizes ", this->sizes(), ", target sizes ", sizes);
  DimVector sz(n), st(n);
  for (int64_t i = n - 1; i >= 0; --i) {
    const int64_t off = nd - n + i;  // matching dim of self, if any
    const int64_t want = sizes[i];
    if (off < 0) {
      EMBER_CHECK(want >= 0, "[expand] -1 is not allowed in a leading, non-existing dimension ", i,
                  " (target sizes ", sizes, ")");
      sz[i] = want;
      st[i] = 0;
      continue;
    }
    const int64_t have = this->sizes()[off];
    if (want == -1 || want == have) {
      sz[i] = have;
      st[i] = strides()[off];
    } else {
      EMBER_CHECK(have == 1, "[expand] the expanded size of the tensor (", want,
                  ") must match the existing size (", have, ") at non-singleton dimension ", i,
                  ". Target sizes: ", sizes, ". Tensor sizes: ", this->sizes());
      EMBER_CHECK(want >= 0, "[expand] invalid target size ", want, " in ", sizes);
      sz[i] = want;
      st[i] = 0;
    }
  }
  Tensor out = make_view(*this, sz, st, storage_offset());
  if (autograd::needs_grad(*this)) autograd::fn::view_expand(*this, out);
  return out;
}();
  if (trace.recording()) trace.record({*this}, {{"size", jit::detail::ints(sizes)}}, out);
  return out;
}

Tensor Tensor::squeeze() const {
  jit::detail::TraceOp trace("squeeze");
  Tensor out = [&]() -> Tensor {
  check_defined(*this, "squeeze");
  DimVector sz, st;
  for (int64_t i = 0; i < dim(); ++i) {
    if (sizes()[i] != 1) {
      sz.push_back(sizes()[i]);
      st.push_back(strides()[i]);
    }
  }
  Tensor out = make_view(*this, sz, st, storage_offset());
  if (autograd::needs_grad(*this)) autograd::fn::view_reshape("SqueezeBackward0", *this, out);
  return out;
}();
  if (trace.recording()) trace.record({*this}, {}, out);
  return out;
}

Tensor Tensor::squeeze(int64_t d) const {
  jit::detail::TraceOp trace("squeeze");
  Tensor out = [&]() -> Tensor {
  check_defined(*this, "squeeze");
  d = wrap_dim(d, dim(), "squeeze");
  if (dim() == 0 || sizes()[d] != 1) return alias();
  DimVector sz(sizes()), st(strides());
  sz.erase(d);
  st.erase(d);
  Tensor out = make_view(*this, sz, st, storage_offset());
  if (autograd::needs_grad(*this)) autograd::fn::view_reshape("SqueezeBackward1", *this, out);
  return out;
}();
  if (trace.recording()) trace.record({*this}, {{"dim", Value(d)}}, out);
  return out;
}

Tensor Tensor::unsqueeze(int64_t d) const {
  jit::detail::TraceOp trace("unsqueeze");
  Tensor out = [&]() -> Tensor {
  check_defined(*this, "unsqueeze");
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  DimVector sz(sizes()), st(strides());
  const int64_t s = d < dim() ? sz[d] * st[d] : 1;
  sz.insert(d, 1);
  st.insert(d, s);
  Tensor out = make_view(*this, sz, st, storage_offset());
  if (autograd::needs_grad(*this)) autograd::fn::view_reshape("UnsqueezeBackward0", *this, out);
  return out;
}();
  if (trace.recording()) trace.record({*this}, {{"dim", Value(d)}}, out);
  return out;
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  jit::detail::TraceOp trace("flatten");
  Tensor out = [&]() -> Tensor {
  check_defined(*this, "flatten");
  if (dim() == 0) return reshape({1});
  start_dim = wrap_dim(start_dim, dim(), "flatten");
  end_dim = wrap_dim(end_dim, dim(), "flatten");
  EMBER_CHECK(start_dim <= end_dim, "[flatten] start_dim (", start_dim,
              ") cannot come after end_dim (", end_dim, ")");
  if (start_dim == end_dim) return alias();
  DimVector shape;
  int64_t merged = 1;
  for (int64_t i = 0; i < dim(); ++i) {
    if (i < start_dim || i > end_dim) {
      shape.push_back(sizes()[i]);
    } else {
      merged *= sizes()[i];
      if (i == end_dim) shape.push_back(merged);
    }
  }
  return reshape(shape);
}();
  if (trace.recording()) trace.record({*this}, {{"start_dim", Value(start_dim)}, {"end_dim", Value(end_dim)}}, out);
  return out;
}

Tensor Tensor::unflatten(int64_t d, IntArrayRef sizes) const {
  jit::detail::TraceOp trace("unflatten");
  Tensor out = [&]() -> Tensor {
  check_defined(*this, "unflatten");
  d = wrap_dim(d, dim(), "unflatten");
  EMBER_CHECK(!sizes.empty(), "[unflatten] sizes must be non-empty");
  DimVector inner = infer_size(sizes, this->sizes()[d], "unflatten");
  DimVector shape;
  for (int64_t i = 0; i < dim(); ++i) {
    if (i == d) {
      for (int64_t s : inner) shape.push_back(s);
    } else {
      shape.push_back(this->sizes()[i]);
    }
  }
  return view(shape);
}();
  if (trace.recording()) trace.record({*this}, {{"dim", Value(d)}, {"sizes", jit::detail::ints(sizes)}}, out);
  return out;
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  jit::detail::TraceOp trace("narrow");
  Tensor out = [&]() -> Tensor {
  check_defined(*this, "narrow");
  EMBER_CHECK(dim() > 0, "[narrow] cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "narrow");
  const int64_t size = sizes()[d];
  EMBER_CHECK(start >= -size && start <= size, "[narrow] start (", start,
              ") is out of range for dimension ", d, " of size ", size);
  if (start < 0) start += size;
  EMBER_CHECK(length >= 0 && length <= size - start, "[narrow] start (", start, ") + length (",
              length, ") exceeds dimension size (", size, ")");
  return slice(d, start, start + length, 1);
}();
  if (trace.recording()) trace.record({*this}, {{"dim", Value(d)}, {"start", Value(start)}, {"length", Value(length)}}, out);
  return out;
}

Tensor Tensor::slice(int64_t d, std::optional<int64_t> start_opt, std::optional<int64_t> end_opt,
                     int64_t step) const {
  jit::detail::TraceOp trace("slice");
  Tensor out = [&]() -> Tensor {
  check_defined(*this, "slice");
  EMBER_CHECK(dim() > 0, "[slice] cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "slice");
  EMBER_CHECK(step > 0, "[slice] step must be positive, got ", step);
  const int64_t size = sizes()[d];
  int64_t start = start_opt.value_or(0);
  int64_t end = end_opt.value_or(size);
  // Python slicing: negative indices count from the end; out-of-range indices clamp.
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  DimVector sz(sizes()), st(strides());
  sz[d] = end == start ? 0 : (end - start - 1) / step + 1;  // no overflow for any step
  if (__builtin_mul_overflow(strides()[d], step, &st[d])) {
    // A dim of size 0 or 1 never uses its stride; a longer one cannot be addressed.
    EMBER_CHECK(sz[d] <= 1, "[slice] the stride ", strides()[d], " * step ", step, " overflows int64");
    st[d] = strides()[d];
  }
  Tensor out = make_view(*this, sz, st, storage_offset() + start * strides()[d]);
  if (autograd::needs_grad(*this)) autograd::fn::view_slice(*this, out, d, start, end, step);
  return out;
}();
  if (trace.recording()) trace.record({*this}, {{"dim", Value(d)}, {"start", jit::detail::opt_int(start_opt)}, {"end", jit::detail::opt_int(end_opt)}, {"step", Value(step)}}, out);
  return out;
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  jit::detail::TraceOp trace("select");
  Tensor out = [&]() -> Tensor {
  check_defined(*this, "select");
  EMBER_CHECK(dim() > 0, "[select] cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "select");
  const int64_t size = sizes()[d];
  EMBER_CHECK(index >= -size && index < size, "[select] index ", index,
              " out of range for tensor of size ", sizes(), " at dimension ", d);
  if (index < 0) index += size;
  DimVector sz(sizes()), st(strides());
  sz.erase(d);
  st.erase(d);
  Tensor out = make_view(*this, sz, st, storage_offset() + index * strides()[d]);
  if (autograd::needs_grad(*this)) autograd::fn::view_select(*this, out, d, index);
  return out;
}();
  if (trace.recording()) trace.record({*this}, {{"dim", Value(d)}, {"index", Value(index)}}, out);
  return out;
}

Tensor Tensor::unfold(int64_t d, int64_t size, int64_t step) const {
  check_defined(*this, "unfold");
  d = wrap_dim(d, dim(), "unfold");
  const int64_t have = dim() == 0 ? 1 : sizes()[d];
  EMBER_CHECK(size >= 0 && size <= have, "[unfold] maximum size for tensor at dimension ", d, " is ",
              have, " but size is ", size);
  EMBER_CHECK(step > 0, "[unfold] step must be positive, got ", step);
  DimVector sz(sizes()), st(strides());
  if (dim() == 0) {
    sz.push_back(size);
    st.push_back(1);
    Tensor out = make_view(*this, sz, st, storage_offset());
    if (autograd::needs_grad(*this)) autograd::fn::view_strided("UnfoldBackward0", *this, out);
    return out;
  }
  sz[d] = (have - size) / step + 1;
  if (__builtin_mul_overflow(strides()[d], step, &st[d])) {
    // One window never uses the stride between windows; more cannot be addressed.
    EMBER_CHECK(sz[d] <= 1, "[unfold] the window stride ", strides()[d], " * step ", step, " overflows int64");
    st[d] = strides()[d];
  }
  sz.push_back(size);
  st.push_back(strides()[d]);
  Tensor out = make_view(*this, sz, st, storage_offset());
  if (autograd::needs_grad(*this)) autograd::fn::view_strided("UnfoldBackward0", *this, out);
  return out;
}

Tensor Tensor::diagonal(int64_t offset, int64_t dim1, int64_t dim2) const {
  check_defined(*this, "diagonal");
  EMBER_CHECK(dim() >= 2, "[diagonal] needs a tensor with at least 2 dims, got sizes ", sizes());
  dim1 = wrap_dim(dim1, dim(), "diagonal");
  dim2 = wrap_dim(dim2, dim(), "diagonal");
  EMBER_CHECK(dim1 != dim2, "[diagonal] dimensions cannot be identical ", dim1, ", ", dim2);
  const int64_t s1 = sizes()[dim1], s2 = sizes()[dim2];
  int64_t len;
  int64_t off = storage_offset();
  if (offset >= 0) {
    len = std::max<int64_t>(std::min(s1, s2 - offset), 0);
    if (len > 0) off += offset * strides()[dim2];
  } else {
    len = std::max<int64_t>(std::min(s1 + offset, s2), 0);
    if (len > 0) off -= offset * strides()[dim1];
  }
  DimVector sz, st;
  for (int64_t i = 0; i < dim(); ++i) {
    if (i == dim1 || i == dim2) continue;
    sz.push_back(sizes()[i]);
    st.push_back(strides()[i]);
  }
  sz.push_back(len);
  st.push_back(strides()[dim1] + strides()[dim2]);
  Tensor out = make_view(*this, sz, st, off);
  if (autograd::needs_grad(*this)) autograd::fn::view_diagonal(*this, out, offset, dim1, dim2);
  return out;
}

std::vector<Tensor> Tensor::split(int64_t split_size, int64_t d) const {
  detail::OpNameScope scope("split");
  check_defined(*this, "split");
  EMBER_CHECK(dim() > 0, "[split] cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "split");
  const int64_t size = sizes()[d];
  EMBER_CHECK(split_size >= 0, "[split] split_size must be non-negative, got ", split_size);
  EMBER_CHECK(split_size > 0 || size == 0, "[split] split_size can only be 0 if dimension size is 0, but got dimension size ",
              size);
  const int64_t n = split_size == 0 ? 1 : std::max<int64_t>((size - 1) / split_size + 1, 1);
  check_piece_count(n, "split");
  const bool grad = autograd::needs_grad(*this);
  std::vector<Tensor> out;
  out.reserve(n);
  {
    AutoGradMode mode(!grad && GradMode::is_enabled());
    for (int64_t i = 0; i < n; ++i) {
      const int64_t start = i * split_size;
      out.push_back(slice(d, start, std::min(start + split_size, size), 1));
    }
  }
  if (grad) autograd::fn::view_split(*this, out, d);
  return out;
}

std::vector<Tensor> Tensor::split_with_sizes(IntArrayRef split_sizes, int64_t d) const {
  jit::detail::TraceOp trace("split");
  std::vector<Tensor> out = [&]() -> std::vector<Tensor> {
  detail::OpNameScope scope("split_with_sizes");
  check_defined(*this, "split_with_sizes");
  EMBER_CHECK(dim() > 0, "[split_with_sizes] cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "split_with_sizes");
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    EMBER_CHECK(s >= 0, "[split_with_sizes] split sizes must be non-negative, got ", split_sizes);
    EMBER_CHECK(!__builtin_add_overflow(total, s, &total), "[split_with_sizes] split sizes ", split_sizes,
                " sum to more than int64 can hold");
  }
  EMBER_CHECK(total == sizes()[d], "[split_with_sizes] split sizes ", split_sizes, " sum to ", total,
              " but dimension ", d, " has size ", sizes()[d]);
  const bool grad = autograd::needs_grad(*this);
  std::vector<Tensor> out;
  {
    AutoGradMode mode(!grad && GradMode::is_enabled());
    int64_t start = 0;
    for (int64_t s : split_sizes) {
      out.push_back(slice(d, start, start + s, 1));
      start += s;
    }
  }
  if (grad) autograd::fn::view_split(*this, out, d);
  return out;
}();
  if (trace.recording()) trace.record({*this}, {{"split_sizes", jit::detail::ints(split_sizes)}, {"dim", Value(d)}}, out);
  return out;
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t d) const {
  jit::detail::TraceOp trace("chunk");
  std::vector<Tensor> out = [&]() -> std::vector<Tensor> {
  detail::OpNameScope scope("chunk");
  check_defined(*this, "chunk");
  EMBER_CHECK(chunks > 0, "[chunk] number of chunks must be positive, got ", chunks);
  EMBER_CHECK(dim() > 0, "[chunk] cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "chunk");
  const int64_t size = sizes()[d];
  if (size == 0) {
    // Every chunk is empty: PyTorch returns `chunks` empty tensors.
    check_piece_count(chunks, "chunk");
    return split_with_sizes(std::vector<int64_t>(chunks, 0), d);
  }
  return split((size - 1) / chunks + 1, d);  // ceil(size / chunks), without overflow
}();
  if (trace.recording()) trace.record({*this}, {{"chunks", Value(chunks)}, {"dim", Value(d)}}, out);
  return out;
}

std::vector<Tensor> Tensor::unbind(int64_t d) const {
  jit::detail::TraceOp trace("unbind");
  std::vector<Tensor> out = [&]() -> std::vector<Tensor> {
  detail::OpNameScope scope("unbind");
  check_defined(*this, "unbind");
  EMBER_CHECK(dim() > 0, "[unbind] cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "unbind");
  const bool grad = autograd::needs_grad(*this);
  std::vector<Tensor> out;
  check_piece_count(sizes()[d], "unbind");
  out.reserve(sizes()[d]);
  {
    AutoGradMode mode(!grad && GradMode::is_enabled());
    for (int64_t i = 0; i < sizes()[d]; ++i) out.push_back(select(d, i));
  }
  if (grad) autograd::fn::view_unbind(*this, out, d);
  return out;
}();
  if (trace.recording()) trace.record({*this}, {{"dim", Value(d)}}, out);
  return out;
}

Tensor Tensor::_base() const {
  check_defined(*this, "_base");
  EMBER_CHECK(impl_->view_base() != nullptr, "[_base] Can't get the base of a non-view tensor; check is_view() first");
  return Tensor(impl_->view_base_ptr());
}

Tensor Tensor::alias() const {
  check_defined(*this, "alias");
  Tensor out = make_view(*this, sizes(), strides(), storage_offset());
  if (autograd::needs_grad(*this)) autograd::fn::view_alias(*this, out);
  return out;
}

Tensor Tensor::detach() const {
  check_defined(*this, "detach");
  // Shares storage (and so the version counter) but is not a differentiable view.
  Tensor out(IntrusivePtr<TensorImpl>::make(storage(), dtype(), sizes(), strides(), storage_offset()));
  out.impl()->set_inference(is_inference());
  return out;
}

}  // namespace ember
