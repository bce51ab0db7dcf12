#pragma once
// Sorting and selection as free functions.

#include <tuple>

#include "ember/core/tensor.h"

namespace ember {

std::tuple<Tensor, Tensor> sort(const Tensor& t, int64_t dim = -1, bool descending = false,
                                bool stable = false);
Tensor argsort(const Tensor& t, int64_t dim = -1, bool descending = false, bool stable = false);
std::tuple<Tensor, Tensor> topk(const Tensor& t, int64_t k, int64_t dim = -1, bool largest = true,
                                bool sorted = true);
std::tuple<Tensor, Tensor> kthvalue(const Tensor& t, int64_t k, int64_t dim = -1,
                                    bool keepdim = false);
// Unique values of the flattened tensor (sorted ascending when sorted is true; ember
// always sorts, as PyTorch's CPU kernel does). Returns (values, inverse indices, counts);
// inverse/counts are undefined tensors unless requested.
std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& t, bool sorted = true,
                                          bool return_inverse = false, bool return_counts = false);

}  // namespace ember
