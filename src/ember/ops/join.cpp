// Joining ops: cat (and concat), stack, hstack, vstack. They move elements without
// arithmetic, so same-dtype contiguous inputs are copied with memcpy, one slab per outer
// index; everything else (other dtypes, strided or expanded inputs) goes through the copy
// kernel into a narrowed view of the output.

#include "ember/ops/join.h"

#include <algorithm>
#include <cstring>

#include "ember/autograd/functions.h"
#include "ember/autograd/record.h"
#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/core/parallel.h"
#include "ember/kernels/cpu/kernels.h"
#include "ember/ops/creation.h"
#include "ember/jit/trace_hook.h"

namespace ember {

namespace {

// Below this many bytes a copy stays on the calling thread.
constexpr int64_t kParallelCopyBytes = int64_t{1} << 18;

// Copies `rows` runs of row_bytes bytes from src (runs src_step apart) to dst (runs
// dst_step apart). Big copies are split into chunks of about kParallelCopyBytes, by rows
// or, for a single run, by bytes.
void copy_rows(char* dst, int64_t dst_step, const char* src, int64_t src_step, int64_t rows,
               int64_t row_bytes) {
  if (rows == 0 || row_bytes == 0) return;
  if (rows * row_bytes < kParallelCopyBytes) {
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(dst + r * dst_step, src + r * src_step, static_cast<size_t>(row_bytes));
    }
    return;
  }
  if (rows == 1) {
    parallel_for(0, row_bytes, kParallelCopyBytes, [&](int64_t b, int64_t e) {
      std::memcpy(dst + b, src + b, static_cast<size_t>(e - b));
    });
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kParallelCopyBytes / row_bytes);
  parallel_for(0, rows, grain, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      std::memcpy(dst + r * dst_step, src + r * src_step, static_cast<size_t>(row_bytes));
    }
  });
}

// PyTorch's legacy rule: 1-D tensors with no elements take no part in the shape checks.
bool skipped_in_cat(const Tensor& t) { return t.dim() == 1 && t.numel() == 0; }

void check_list(const std::vector<Tensor>& tensors, const char* op) {
  EMBER_CHECK(!tensors.empty(), "[", op, "] expected a non-empty list of tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    EMBER_CHECK(tensors[i].defined(), "[", op, "] tensor number ", i, " in the list is undefined");
  }
}

// cat without the OpScope, so stack/hstack/vstack report under their own names.
Tensor cat_impl(const std::vector<Tensor>& tensors, int64_t dim, const char* op) {
  check_list(tensors, op);
  if (autograd::needs_grad_list(tensors)) {
    return autograd::fn::cat(tensors, dim, [&] { return cat_impl(tensors, dim, op); });
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    EMBER_CHECK(tensors[i].dim() > 0, "[", op, "] zero-dimensional tensor (at position ", i,
                ") cannot be concatenated; unsqueeze it or use stack()");
  }
  DType out_dtype = tensors[0].dtype();
  for (const auto& t : tensors) out_dtype = promote_types(out_dtype, t.dtype());

  size_t valid = tensors.size();
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!skipped_in_cat(tensors[i])) {
      valid = i;
      break;
    }
  }
  // Only empty 1-D tensors: the result is one as well, whatever dim says.
  if (valid == tensors.size()) return empty({0}, TensorOptions(out_dtype));

  const Tensor& ref = tensors[valid];
  const int64_t nd = ref.dim();
  dim = wrap_dim(dim, nd, op);
  int64_t cat_size = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (skipped_in_cat(t)) continue;
    EMBER_CHECK(t.dim() == nd, "[", op, "] tensors must have same number of dimensions: got ", nd,
                " and ", t.dim(), " (tensor number ", i, " has sizes ", t.sizes(),
                ", tensor number ", valid, " has sizes ", ref.sizes(), ")");
    for (int64_t d = 0; d < nd; ++d) {
      if (d == dim) continue;
      EMBER_CHECK(t.sizes()[d] == ref.sizes()[d], "[", op,
                  "] Sizes of tensors must match except in dimension ", dim, ". Expected size ",
                  ref.sizes()[d], " but got size ", t.sizes()[d], " for tensor number ", i,
                  " in the list.");
    }
    cat_size += t.sizes()[dim];
  }

  DimVector out_sizes(ref.sizes());
  out_sizes[dim] = cat_size;
  Tensor out = empty(out_sizes, TensorOptions(out_dtype));
  if (out.numel() == 0) return out;

  int64_t outer = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= out_sizes[d];
  int64_t inner = 1;  // elements per index of dim, below dim
  for (int64_t d = dim + 1; d < nd; ++d) inner *= out_sizes[d];
  const int64_t es = static_cast<int64_t>(out.element_size());
  char* out_base = static_cast<char*>(out.data_ptr());
  const int64_t out_step = cat_size * inner * es;

  int64_t offset = 0;
  for (const auto& t : tensors) {
    if (skipped_in_cat(t)) continue;
    const int64_t n = t.sizes()[dim];
    if (t.numel() > 0) {
      if (t.dtype() == out_dtype && t.is_contiguous()) {
        const int64_t slab = n * inner * es;
        copy_rows(out_base + offset * inner * es, out_step, static_cast<const char*>(t.data_ptr()),
                  slab, outer, slab);
      } else {
        kernels::cpu::copy(out.narrow(dim, offset, n), t);
      }
    }
    offset += n;
  }
  return out;
}

// Adds leading size-1 dims until t has at least `n` dims (atleast_1d / atleast_2d).
Tensor at_least(const Tensor& t, int64_t n) {
  if (t.dim() >= n) return t;
  if (t.dim() == 0) return n == 1 ? t.reshape({1}) : t.reshape({1, 1});
  return t.unsqueeze(0);  // 1-D to 2-D
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  jit::detail::TraceOp trace("cat");
  Tensor out = [&]() -> Tensor {
  OpScope scope("cat", {}, tensors.data(), tensors.size());
  return cat_impl(tensors, dim, "cat");
}();
  if (trace.recording()) trace.record(tensors, {{"dim", Value(dim)}}, out);
  return out;
}

Tensor concat(const std::vector<Tensor>& tensors, int64_t dim) {
  OpScope scope("concat", {}, tensors.data(), tensors.size());
  return cat_impl(tensors, dim, "concat");
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  jit::detail::TraceOp trace("stack");
  Tensor out = [&]() -> Tensor {
  OpScope scope("stack", {}, tensors.data(), tensors.size());
  check_list(tensors, "stack");
  const Tensor& first = tensors[0];
  for (size_t i = 1; i < tensors.size(); ++i) {
    EMBER_CHECK(tensors[i].sizes() == first.sizes(),
                "[stack] stack expects each tensor to be equal size, but got ", first.sizes(),
                " at entry 0 and ", tensors[i].sizes(), " at entry ", i);
  }
  dim = wrap_dim(dim, first.dim() + 1, "stack");
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (const auto& t : tensors) parts.push_back(t.unsqueeze(dim));
  return cat_impl(parts, dim, "stack");
}();
  if (trace.recording()) trace.record(tensors, {{"dim", Value(dim)}}, out);
  return out;
}

Tensor hstack(const std::vector<Tensor>& tensors) {
  OpScope scope("hstack", {}, tensors.data(), tensors.size());
  check_list(tensors, "hstack");
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (const auto& t : tensors) parts.push_back(at_least(t, 1));
  return cat_impl(parts, parts[0].dim() == 1 ? 0 : 1, "hstack");
}

Tensor vstack(const std::vector<Tensor>& tensors) {
  OpScope scope("vstack", {}, tensors.data(), tensors.size());
  check_list(tensors, "vstack");
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (const auto& t : tensors) parts.push_back(at_least(t, 2));
  return cat_impl(parts, 0, "vstack");
}

}  // namespace ember
