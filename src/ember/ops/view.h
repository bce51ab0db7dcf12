#pragma once
// Free-function forms of the view and shape ops (methods live on Tensor), and the
// shape arithmetic they share.

#include <vector>

#include "ember/core/tensor.h"

namespace ember {

// The broadcast of two or more shapes (PyTorch's rules); throws naming both sizes.
DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b);
DimVector broadcast_shapes(const std::vector<DimVector>& shapes);
// Views of every tensor expanded to their common shape.
std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& tensors);

// Replaces a single -1 in shape so the product equals numel; `op` names the caller.
DimVector infer_size(IntArrayRef shape, int64_t numel, const char* op);
// Strides that let a tensor of (sizes, strides) be viewed as new_sizes without copying,
// or false when no such strides exist (ATen's computeStride rule).
bool compute_view_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef new_sizes,
                          DimVector& new_strides);

inline Tensor reshape(const Tensor& t, IntArrayRef sizes) { return t.reshape(sizes); }
inline Tensor transpose(const Tensor& t, int64_t d0, int64_t d1) { return t.transpose(d0, d1); }
inline Tensor permute(const Tensor& t, IntArrayRef dims) { return t.permute(dims); }
inline Tensor movedim(const Tensor& t, int64_t src, int64_t dst) { return t.movedim(src, dst); }
inline Tensor squeeze(const Tensor& t) { return t.squeeze(); }
inline Tensor squeeze(const Tensor& t, int64_t dim) { return t.squeeze(dim); }
inline Tensor unsqueeze(const Tensor& t, int64_t dim) { return t.unsqueeze(dim); }
inline Tensor flatten(const Tensor& t, int64_t start = 0, int64_t end = -1) {
  return t.flatten(start, end);
}
inline Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length) {
  return t.narrow(dim, start, length);
}
inline Tensor select(const Tensor& t, int64_t dim, int64_t index) { return t.select(dim, index); }
inline Tensor broadcast_to(const Tensor& t, IntArrayRef sizes) { return t.expand(sizes); }
inline Tensor as_strided(const Tensor& t, IntArrayRef sizes, IntArrayRef strides,
                         std::optional<int64_t> offset = std::nullopt) {
  return t.as_strided(sizes, strides, offset);
}
inline Tensor diagonal(const Tensor& t, int64_t offset = 0, int64_t d1 = 0, int64_t d2 = 1) {
  return t.diagonal(offset, d1, d2);
}
inline std::vector<Tensor> split(const Tensor& t, int64_t size, int64_t dim = 0) {
  return t.split(size, dim);
}
inline std::vector<Tensor> chunk(const Tensor& t, int64_t chunks, int64_t dim = 0) {
  return t.chunk(chunks, dim);
}
inline std::vector<Tensor> unbind(const Tensor& t, int64_t dim = 0) { return t.unbind(dim); }

}  // namespace ember
