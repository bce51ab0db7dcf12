#pragma once
// Internal: ElementwiseIter walks several same-shaped (after broadcasting) strided
// operands together. Operand 0 is the output. It reorders dims so the innermost loop
// runs over the smallest strides, merges dims that are contiguous in every operand, and
// hands the kernel 1-D runs: loop(data, strides, n) where data[k] points at operand k's
// first element of the run and strides[k] is its step in bytes.

#include <cstdint>
#include <initializer_list>

#include "ember/core/function_ref.h"
#include "ember/core/shape.h"
#include "ember/core/tensor.h"

namespace ember::kernels {

using LoopFn = FunctionRef<void(char** data, const int64_t* strides, int64_t n)>;

class ElementwiseIter {
 public:
  static constexpr int kMaxOperands = 8;

  // shape: the common (broadcast) shape. Operands are added with add(); each must be
  // broadcastable to shape (its missing or size-1 dims get stride 0).
  explicit ElementwiseIter(IntArrayRef shape);
  void add(const Tensor& t);
  // Adds raw strided data: element strides per dim of `shape`.
  void add_raw(void* data, DType dtype, IntArrayRef elem_strides);
  // Reorders and coalesces dims; call once after the last add().
  void build();

  int64_t numel() const { return numel_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int num_operands() const { return nops_; }
  DType dtype(int k) const { return dtypes_[k]; }
  // True when every operand is contiguous (or a broadcast scalar) along one flat run.
  bool is_contiguous_run() const { return ndim() <= 1; }

  // Runs loop over the elements [begin, end) of the iteration order.
  void serial_for_each(LoopFn loop, int64_t begin, int64_t end) const;
  // Elements per parallel chunk of for_each, unless told otherwise.
  static constexpr int64_t kGrain = 32768;
  // Runs loop over everything, in parallel chunks of `grain` elements.
  void for_each(LoopFn loop, int64_t grain = kGrain) const;

 private:
  void add_operand(void* data, DType dtype);

  DimVector shape_;               // innermost first after build()
  DimVector strides_[kMaxOperands];  // bytes, innermost first after build()
  char* data_[kMaxOperands] = {};
  DType dtypes_[kMaxOperands] = {};
  // Operands added as contiguous tensors of exactly `shape`, whose strides are filled in
  // only if build() needs them (Note [Flat operands]).
  bool flat_[kMaxOperands] = {};
  int nops_ = 0;
  int64_t numel_ = 1;
};

// Note [Small flat float32 operands] (kernels/cpu/binary.cpp): whether out and every input are
// float32, contiguous and of out's shape, with no more elements than one parallel chunk, so
// that a plain loop over the elements does an element-wise op's work without the iterator.
inline bool small_flat_float32(const Tensor& out, std::initializer_list<const Tensor*> inputs) {
  if (out.numel() > ElementwiseIter::kGrain || out.dtype() != kFloat32 || !out.is_contiguous()) return false;
  for (const Tensor* t : inputs) {
    if (t->dtype() != kFloat32 || !t->is_contiguous() || t->sizes() != out.sizes()) return false;
  }
  return true;
}

}  // namespace ember::kernels
