#pragma once
// Internal: reduction kernels over a contiguous input viewed as (outer, len, inner); the
// reduced axis is `len`, and the output is a contiguous (outer, inner) tensor. Note
// [Deterministic reductions]: every output element is accumulated in an order fixed by
// the shape and a constant chunk size, never by the number of threads.

#include <cstdint>

#include "ember/core/tensor.h"

namespace ember::kernels::cpu {

struct ReduceShape {
  int64_t outer, len, inner;
};

enum class ReduceOp : uint8_t { Sum, Prod, Max, Min, NormL1, NormL2Sq, NormInf, NormNegInf, NormP, NormL0,
                                All, Any, CountNonzero };

// out[o, i] = reduce(in[o, :, i]); out has its own dtype (the accumulation is in double for
// floating inputs, int64 for integer ones). p is used by NormP.
void reduce(ReduceOp op, const Tensor& out, const Tensor& in, ReduceShape s, double p = 0);
// Mean and variance in one call (either output may be undefined).
void var_mean(const Tensor& var, const Tensor& mean, const Tensor& in, ReduceShape s, int64_t correction);
// Values and int64 indices of the max (or min); the first occurrence wins, NaN counts as
// the largest (or smallest) value and propagates.
void arg_reduce(bool is_max, const Tensor& values, const Tensor& indices, const Tensor& in, ReduceShape s);
void logsumexp(const Tensor& out, const Tensor& in, ReduceShape s);
// Inclusive scans along len (out may have a wider dtype than in).
void cumulative(bool is_prod, const Tensor& out, const Tensor& in, ReduceShape s);
// out = softmax or log_softmax of in along len (same dtype).
void softmax(bool log, const Tensor& out, const Tensor& in, ReduceShape s);

// Cross entropy of contiguous [rows, classes] float/double logits with int64 class
// indices `target` [rows] (already checked to lie in [0, classes) or equal ignore_index),
// Note [Fused cross entropy] in reduce.cpp: lse[r] = logsumexp of row r, loss[r] = lse[r] -
// logits[r, target[r]] (0 for an ignored row); both [rows], the logits' dtype.
void cross_entropy_forward(const Tensor& loss, const Tensor& lse, const Tensor& logits, const Tensor& target,
                           int64_t ignore_index);
// grad_logits[r, j] = scale[r] * (exp(logits[r, j] - lse[r]) - (j == target[r])).
void cross_entropy_backward(const Tensor& grad_logits, const Tensor& logits, const Tensor& lse, const Tensor& target,
                            const Tensor& scale, int64_t ignore_index);

}  // namespace ember::kernels::cpu
