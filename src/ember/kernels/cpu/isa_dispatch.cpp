// The public kernel entry points of the per-ISA kernel files: each calls the copy
// compiled for the level isa_level() chose (Note [CPU dispatch] in isa.h).

#include "ember/kernels/cpu/attention.h"
#include "ember/kernels/cpu/conv.h"
#include "ember/kernels/cpu/isa.h"
#include "ember/kernels/cpu/kernels.h"
#include "ember/kernels/cpu/norm.h"
#include "ember/kernels/cpu/optim.h"
#include "ember/kernels/cpu/pointwise.h"
#include "ember/kernels/cpu/pool.h"
#include "ember/kernels/cpu/qgemm.h"
#include "ember/kernels/cpu/reduce.h"

namespace ember::kernels::cpu {

// Declares name in each level's namespace and defines the entry point that picks one.
// Hidden: the per-level copies are not exported from libember.so (ELF keeps the most
// constraining visibility of all objects), so these calls are direct, not through the PLT.
#define EMBER_ISA_HIDDEN __attribute__((visibility("hidden")))
#define EMBER_ISA_DISPATCH(name, params, args)      \
  namespace baseline {                              \
  EMBER_ISA_HIDDEN void name params;                \
  }                                                 \
  namespace avx2 {                                  \
  EMBER_ISA_HIDDEN void name params;                \
  }                                                 \
  namespace avx512 {                                \
  EMBER_ISA_HIDDEN void name params;                \
  }                                                 \
  void name params {                                \
    switch (isa_level()) {                          \
      case 2: return avx512::name args;             \
      case 1: return avx2::name args;               \
      case 0: return baseline::name args;           \
      default: isa_level_error();                   \
    }                                               \
  }

// pointwise.h (unary.cpp, binary.cpp)
EMBER_ISA_DISPATCH(unary, (UnaryOp op, const Tensor& out, const Tensor& in, const UnaryParams& p), (op, out, in, p))
EMBER_ISA_DISPATCH(binary, (BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha),
                   (op, out, a, b, alpha))
EMBER_ISA_DISPATCH(clamp, (const Tensor& out, const Tensor& in, const Scalar* lo, const Scalar* hi),
                   (out, in, lo, hi))
EMBER_ISA_DISPATCH(clamp_tensor, (const Tensor& out, const Tensor& in, const Tensor& lo, const Tensor& hi),
                   (out, in, lo, hi))
EMBER_ISA_DISPATCH(nan_to_num, (const Tensor& out, const Tensor& in, double nan, double posinf, double neginf),
                   (out, in, nan, posinf, neginf))
EMBER_ISA_DISPATCH(threshold_backward,
                   (const Tensor& out, const Tensor& grad, const Tensor& self, const Scalar& threshold),
                   (out, grad, self, threshold))
EMBER_ISA_DISPATCH(gelu_backward, (const Tensor& out, const Tensor& grad, const Tensor& self, bool tanh),
                   (out, grad, self, tanh))
EMBER_ISA_DISPATCH(where, (const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b),
                   (out, cond, a, b))
EMBER_ISA_DISPATCH(lerp, (const Tensor& out, const Tensor& start, const Tensor& end, const Tensor& weight),
                   (out, start, end, weight))
EMBER_ISA_DISPATCH(isclose,
                   (const Tensor& out, const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan),
                   (out, a, b, rtol, atol, equal_nan))

// qgemm.h (quant.cpp)
EMBER_ISA_DISPATCH(qminmax, (const float* x, int64_t n, float* lo, float* hi, bool* has_nan), (x, n, lo, hi, has_nan))
EMBER_ISA_DISPATCH(qquantize_u8,
                   (const float* x, int64_t n, float inv_scale, float zero_point, float qmin, float qmax, uint8_t* out),
                   (x, n, inv_scale, zero_point, qmin, qmax, out))
EMBER_ISA_DISPATCH(qdequantize_rows,
                   (float* y, int64_t r0, int64_t r1, int64_t N, const int32_t* corr, const float* scale,
                    const float* bias),
                   (y, r0, r1, N, corr, scale, bias))
EMBER_ISA_DISPATCH(qrequantize_rows,
                   (const int32_t* acc, int64_t rows, int64_t N, const int32_t* corr, const float* scale,
                    const float* bias, float inv_out, float zp_out, float qmin, float qmax, uint8_t* codes,
                    float* values, float out_scale),
                   (acc, rows, N, corr, scale, bias, inv_out, zp_out, qmin, qmax, codes, values, out_scale))
EMBER_ISA_DISPATCH(qgemv_u8s8s32,
                   (int64_t M, int64_t n0, int64_t n1, int64_t N, int64_t K, const uint8_t* a, const int8_t* b,
                    int32_t* c),
                   (M, n0, n1, N, K, a, b, c))

// reduce.h (reduce.cpp)
EMBER_ISA_DISPATCH(reduce, (ReduceOp op, const Tensor& out, const Tensor& in, ReduceShape s, double p),
                   (op, out, in, s, p))
EMBER_ISA_DISPATCH(var_mean, (const Tensor& var, const Tensor& mean, const Tensor& in, ReduceShape s,
                              int64_t correction),
                   (var, mean, in, s, correction))
EMBER_ISA_DISPATCH(arg_reduce, (bool is_max, const Tensor& values, const Tensor& indices, const Tensor& in,
                                ReduceShape s),
                   (is_max, values, indices, in, s))
EMBER_ISA_DISPATCH(logsumexp, (const Tensor& out, const Tensor& in, ReduceShape s), (out, in, s))
EMBER_ISA_DISPATCH(cumulative, (bool is_prod, const Tensor& out, const Tensor& in, ReduceShape s),
                   (is_prod, out, in, s))
EMBER_ISA_DISPATCH(softmax, (bool log, const Tensor& out, const Tensor& in, ReduceShape s), (log, out, in, s))
EMBER_ISA_DISPATCH(cross_entropy_forward,
                   (const Tensor& loss, const Tensor& lse, const Tensor& logits, const Tensor& target,
                    int64_t ignore_index),
                   (loss, lse, logits, target, ignore_index))
EMBER_ISA_DISPATCH(cross_entropy_backward,
                   (const Tensor& grad_logits, const Tensor& logits, const Tensor& lse, const Tensor& target,
                    const Tensor& scale, int64_t ignore_index),
                   (grad_logits, logits, lse, target, scale, ignore_index))

// conv.h (conv_small.cpp)
EMBER_ISA_DISPATCH(conv_few_taps_forward,
                   (float* y, const float* col, const float* w, const float* b, int64_t O, int64_t K, int64_t P),
                   (y, col, w, b, O, K, P))
EMBER_ISA_DISPATCH(conv_few_taps_weight_grad,
                   (float* dw, const float* dy, const float* col, int64_t O, int64_t K, int64_t P, bool accumulate),
                   (dw, dy, col, O, K, P, accumulate))

// norm.h (norm.cpp)
EMBER_ISA_DISPATCH(batch_norm_train_forward,
                   (const Tensor& out, const Tensor& mean, const Tensor& var, const Tensor& invstd,
                    const Tensor& input, const Tensor& weight, const Tensor& bias, double eps, BatchNormShape s),
                   (out, mean, var, invstd, input, weight, bias, eps, s))
EMBER_ISA_DISPATCH(batch_norm_apply,
                   (const Tensor& out, const Tensor& input, const Tensor& mean, const Tensor& invstd,
                    const Tensor& weight, const Tensor& bias, BatchNormShape s),
                   (out, input, mean, invstd, weight, bias, s))
EMBER_ISA_DISPATCH(batch_norm_backward,
                   (const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                    const Tensor& grad_out, const Tensor& input, const Tensor& mean, const Tensor& invstd,
                    const Tensor& weight, bool training, BatchNormShape s),
                   (grad_input, grad_weight, grad_bias, grad_out, input, mean, invstd, weight, training, s))
EMBER_ISA_DISPATCH(layer_norm_forward,
                   (const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& input,
                    const Tensor& weight, const Tensor& bias, double eps, int64_t rows, int64_t cols),
                   (out, mean, rstd, input, weight, bias, eps, rows, cols))
EMBER_ISA_DISPATCH(layer_norm_backward,
                   (const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                    const Tensor& grad_out, const Tensor& input, const Tensor& mean, const Tensor& rstd,
                    const Tensor& weight, int64_t rows, int64_t cols),
                   (grad_input, grad_weight, grad_bias, grad_out, input, mean, rstd, weight, rows, cols))

// pool.h (pool.cpp)
EMBER_ISA_DISPATCH(max_pool2d_forward,
                   (const Tensor& out, const Tensor& indices, const Tensor& input, const PoolGeometry& g),
                   (out, indices, input, g))
EMBER_ISA_DISPATCH(max_pool2d_planes,
                   (float* y, uint8_t* offsets, const float* x, const PoolGeometry& g, int64_t planes),
                   (y, offsets, x, g, planes))
EMBER_ISA_DISPATCH(max_pool2d_backward_planes,
                   (float* dx, const float* dy, const uint8_t* offsets, const PoolGeometry& g, int64_t planes),
                   (dx, dy, offsets, g, planes))
EMBER_ISA_DISPATCH(max_pool2d_backward,
                   (const Tensor& grad_input, const Tensor& grad_out, const Tensor& indices, const PoolGeometry& g),
                   (grad_input, grad_out, indices, g))
EMBER_ISA_DISPATCH(avg_pool2d_forward,
                   (const Tensor& out, const Tensor& input, const PoolGeometry& g, bool count_include_pad,
                    int64_t divisor_override),
                   (out, input, g, count_include_pad, divisor_override))
EMBER_ISA_DISPATCH(avg_pool2d_backward,
                   (const Tensor& grad_input, const Tensor& grad_out, const PoolGeometry& g, bool count_include_pad,
                    int64_t divisor_override),
                   (grad_input, grad_out, g, count_include_pad, divisor_override))
EMBER_ISA_DISPATCH(adaptive_avg_pool2d_forward, (const Tensor& out, const Tensor& input, const PoolGeometry& g),
                   (out, input, g))
EMBER_ISA_DISPATCH(adaptive_avg_pool2d_backward,
                   (const Tensor& grad_input, const Tensor& grad_out, const PoolGeometry& g),
                   (grad_input, grad_out, g))

// optim.h (optim.cpp)
EMBER_ISA_DISPATCH(adam_step,
                   (const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                    const Tensor& max_exp_avg_sq, const AdamStep& s),
                   (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, s))
EMBER_ISA_DISPATCH(sgd_step, (const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, const SgdStep& s),
                   (param, grad, momentum_buffer, s))
EMBER_ISA_DISPATCH(rmsprop_step,
                   (const Tensor& param, const Tensor& grad, const Tensor& square_avg, const Tensor& grad_avg,
                    const Tensor& momentum_buffer, const RmspropStep& s),
                   (param, grad, square_avg, grad_avg, momentum_buffer, s))
EMBER_ISA_DISPATCH(adagrad_step, (const Tensor& param, const Tensor& grad, const Tensor& sum, const AdagradStep& s),
                   (param, grad, sum, s))

// kernels.h (copy.cpp)
EMBER_ISA_DISPATCH(copy, (const Tensor& dst, const Tensor& src), (dst, src))

// attention.h (attention.cpp)
EMBER_ISA_DISPATCH(attention_forward,
                   (const Tensor& out, const Tensor& probs, const Tensor& q, const Tensor& k, const Tensor& v,
                    const Tensor& mask, const AttentionShape& s),
                   (out, probs, q, k, v, mask, s))
EMBER_ISA_DISPATCH(attention_backward,
                   (const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout, const Tensor& probs,
                    const Tensor& q, const Tensor& k, const Tensor& v, const AttentionShape& s),
                   (dq, dk, dv, dout, probs, q, k, v, s))
EMBER_ISA_DISPATCH(fill, (const Tensor& dst, const Scalar& value), (dst, value))

// The GCC 12 constant-store check (isa_selftest.cpp), one per level.
namespace baseline {
std::vector<int64_t> isa_selftest_constants();
}
namespace avx2 {
std::vector<int64_t> isa_selftest_constants();
}
namespace avx512 {
std::vector<int64_t> isa_selftest_constants();
}
std::vector<int64_t> isa_selftest_constants(int level) {
  switch (level) {
    case 2: return avx512::isa_selftest_constants();
    case 1: return avx2::isa_selftest_constants();
    default: return baseline::isa_selftest_constants();
  }
}

#undef EMBER_ISA_DISPATCH

}  // namespace ember::kernels::cpu
