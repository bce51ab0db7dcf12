#include "ember/kernels/cpu/iter.h"

#include <algorithm>

#include "ember/core/check.h"
#include "ember/core/parallel.h"

namespace ember::kernels {

namespace {
// IntArrayRef's == without the call and memcmp: shapes are a handful of values.
bool same_sizes(IntArrayRef a, IntArrayRef b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}
}  // namespace

ElementwiseIter::ElementwiseIter(IntArrayRef shape) : shape_(shape) {
  for (int64_t s : shape) numel_ *= s;
}

// Note [Flat operands]: most element-wise calls see operands that are all contiguous and
// of the output's shape; build() would drop their size-1 dims, keep the order and merge
// everything into one run of numel elements. Such operands are recorded without
// per-dim strides, and when every operand is flat build() writes that one-run result
// directly, which on tiny tensors is most of an op's cost. A flat operand that meets a
// non-flat one gets its row-major strides in build() and takes the general path.
void ElementwiseIter::add(const Tensor& t) {
  if (numel_ > 0 && t.is_contiguous() && same_sizes(t.sizes(), shape_)) {
    EMBER_CHECK(nops_ < kMaxOperands, "[ElementwiseIter] too many operands");
    flat_[nops_] = true;
    add_operand(t.data_ptr(), t.dtype());
    return;
  }
  const int64_t nd = static_cast<int64_t>(shape_.size());
  const int64_t td = t.dim();
  DimVector elem(shape_.size(), 0);
  for (int64_t i = 0; i < td; ++i) {
    int64_t d = nd - td + i;
    if (t.size(i) != 1) elem[d] = t.stride(i);
  }
  add_raw(t.data_ptr(), t.dtype(), elem);
}

void ElementwiseIter::add_raw(void* data, DType dtype, IntArrayRef elem_strides) {
  EMBER_CHECK(nops_ < kMaxOperands, "[ElementwiseIter] too many operands");
  const int64_t es = static_cast<int64_t>(element_size(dtype));
  DimVector& s = strides_[nops_];
  s.assign(elem_strides);
  for (auto& v : s) v *= es;
  add_operand(data, dtype);
}

void ElementwiseIter::add_operand(void* data, DType dtype) {
  data_[nops_] = static_cast<char*>(data);
  dtypes_[nops_] = dtype;
  ++nops_;
}

void ElementwiseIter::build() {
  bool all_flat = numel_ > 0;
  for (int k = 0; k < nops_; ++k) all_flat = all_flat && flat_[k];
  if (all_flat) {  // Note [Flat operands]
    shape_.clear();
    if (numel_ > 1) shape_.push_back(numel_);
    for (int k = 0; k < nops_; ++k) {
      strides_[k].clear();
      if (numel_ > 1) strides_[k].push_back(static_cast<int64_t>(element_size(dtypes_[k])));
    }
    return;
  }
  for (int k = 0; k < nops_; ++k) {
    if (!flat_[k]) continue;
    // Row-major strides; those of size-1 dims are never read (the dims are dropped below).
    strides_[k] = contiguous_strides(shape_);
    for (auto& v : strides_[k]) v *= static_cast<int64_t>(element_size(dtypes_[k]));
  }
  const size_t nd = shape_.size();
  // Innermost first, size-1 dims dropped (their strides never matter).
  DimVector shape;
  DimVector strides[kMaxOperands];
  for (size_t i = nd; i-- > 0;) {
    if (shape_[i] == 1) continue;
    shape.push_back(shape_[i]);
    for (int k = 0; k < nops_; ++k) strides[k].push_back(strides_[k][i]);
  }
  // Sort dims so that inner dims have the smaller strides, the output deciding first;
  // a broadcast (zero) stride gives no information. Insertion sort keeps it stable.
  const size_t n = shape.size();
  auto inner_before = [&](size_t a, size_t b) {  // should dim a be inside dim b?
    for (int k = 0; k < nops_; ++k) {
      int64_t sa = strides[k][a], sb = strides[k][b];
      if (sa == 0 || sb == 0) continue;
      if (sa != sb) return sa < sb;
    }
    return false;
  };
  DimVector perm(n);
  for (size_t i = 0; i < n; ++i) perm[i] = static_cast<int64_t>(i);
  for (size_t i = 1; i < n; ++i) {
    for (size_t j = i; j > 0 && inner_before(perm[j], perm[j - 1]); --j) {
      std::swap(perm[j], perm[j - 1]);
    }
  }
  shape_.clear();
  for (int k = 0; k < nops_; ++k) strides_[k].clear();
  for (size_t i = 0; i < n; ++i) {
    shape_.push_back(shape[perm[i]]);
    for (int k = 0; k < nops_; ++k) strides_[k].push_back(strides[k][perm[i]]);
  }
  // Merge dim i+1 into dim i when every operand steps through both as one run.
  if (shape_.size() > 1) {
    size_t out = 0;
    for (size_t i = 1; i < shape_.size(); ++i) {
      bool merge = true;
      for (int k = 0; k < nops_ && merge; ++k) {
        merge = strides_[k][i] == strides_[k][out] * shape_[out];
      }
      if (merge) {
        shape_[out] *= shape_[i];
      } else {
        ++out;
        shape_[out] = shape_[i];
        for (int k = 0; k < nops_; ++k) strides_[k][out] = strides_[k][i];
      }
    }
    shape_.resize(out + 1);
    for (int k = 0; k < nops_; ++k) strides_[k].resize(out + 1);
  }
}

void ElementwiseIter::serial_for_each(LoopFn loop, int64_t begin, int64_t end) const {
  if (begin >= end) return;
  char* ptrs[kMaxOperands];
  int64_t inner[kMaxOperands];
  const int nd = ndim();
  if (nd == 0) {  // a single element
    for (int k = 0; k < nops_; ++k) {
      ptrs[k] = data_[k];
      inner[k] = 0;
    }
    loop(ptrs, inner, 1);
    return;
  }
  for (int k = 0; k < nops_; ++k) inner[k] = strides_[k][0];
  if (nd == 1) {  // one run: the common case after merging
    for (int k = 0; k < nops_; ++k) ptrs[k] = data_[k] + begin * inner[k];
    loop(ptrs, inner, end - begin);
    return;
  }
  // Multi-index of `begin`, innermost first.
  DimVector idx(nd);
  int64_t rem = begin;
  for (int d = 0; d < nd; ++d) {
    idx[d] = rem % shape_[d];
    rem /= shape_[d];
  }
  int64_t pos = begin;
  while (pos < end) {
    int64_t run = std::min(shape_[0] - idx[0], end - pos);
    for (int k = 0; k < nops_; ++k) {
      char* p = data_[k];
      for (int d = 0; d < nd; ++d) p += idx[d] * strides_[k][d];
      ptrs[k] = p;
    }
    loop(ptrs, inner, run);
    pos += run;
    idx[0] += run;
    for (int d = 0; d < nd - 1 && idx[d] == shape_[d]; ++d) {
      idx[d] = 0;
      ++idx[d + 1];
    }
  }
}

void ElementwiseIter::for_each(LoopFn loop, int64_t grain) const {
  if (numel_ == 0) return;
  if (numel_ <= grain) {
    serial_for_each(loop, 0, numel_);
    return;
  }
  parallel_for(0, numel_, grain, [&](int64_t b, int64_t e) { serial_for_each(loop, b, e); });
}

}  // namespace ember::kernels
