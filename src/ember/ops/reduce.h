#pragma once
// Reductions, scans and softmax as free functions (the same ops are methods on Tensor).

#include <optional>
#include <tuple>

#include "ember/core/tensor.h"

namespace ember {

Tensor sum(const Tensor& t, IntArrayRef dims = {}, bool keepdim = false,
           std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& t, IntArrayRef dims = {}, bool keepdim = false,
            std::optional<DType> dtype = std::nullopt);
Tensor amax(const Tensor& t, IntArrayRef dims = {}, bool keepdim = false);
Tensor amin(const Tensor& t, IntArrayRef dims = {}, bool keepdim = false);
Tensor var(const Tensor& t, IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false);
Tensor std(const Tensor& t, IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false);
// (var, mean) and (std, mean) over the same dims.
std::tuple<Tensor, Tensor> var_mean(const Tensor& t, IntArrayRef dims = {}, int64_t correction = 1,
                                    bool keepdim = false);
std::tuple<Tensor, Tensor> std_mean(const Tensor& t, IntArrayRef dims = {}, int64_t correction = 1,
                                    bool keepdim = false);
Tensor logsumexp(const Tensor& t, IntArrayRef dims, bool keepdim = false);
Tensor softmax(const Tensor& t, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& t, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor cumsum(const Tensor& t, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor cumprod(const Tensor& t, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor norm(const Tensor& t, const Scalar& p = 2, IntArrayRef dims = {}, bool keepdim = false);

}  // namespace ember
