#pragma once
// Indexing ops as free functions (the same ops are methods on Tensor).

#include <vector>

#include "ember/core/tensor.h"

namespace ember {

Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& t, int64_t dim, const Tensor& index);
Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src);
Tensor masked_fill(const Tensor& t, const Tensor& mask, const Scalar& value);
// With a 0-d tensor value (which may require grad).
Tensor masked_fill(const Tensor& t, const Tensor& mask, const Tensor& value);
Tensor& masked_fill_(Tensor& t, const Tensor& mask, const Tensor& value);
Tensor index_fill(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& value);
Tensor& index_fill_(Tensor& t, int64_t dim, const Tensor& index, const Tensor& value);
Tensor masked_select(const Tensor& t, const Tensor& mask);
Tensor nonzero(const Tensor& t);
Tensor bincount(const Tensor& t, const Tensor& weights = {}, int64_t minlength = 0);
// Indices where `values` would be inserted into the sorted last dim of sorted_sequence.
// right=false: first suitable position (bisect_left); out_int32 gives int32 indices.
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32 = false,
                    bool right = false);

}  // namespace ember
