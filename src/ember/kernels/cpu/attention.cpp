// Note [Fused attention]: scaled_dot_product_attention as written out (scale, q @ k^T, mask,
// softmax, @ v) runs five ops, each a pass over the [batch, L, S] scores, and its inputs
// are usually views of one projection ([B, T, 3, H, hd] seen as [B, H, T, hd]), which the
// batched products first copy into contiguous per-head matrices. Here one task computes one
// batch matrix from start to end on one thread: BLAS reads q, k, v where they are (any row
// stride), the softmax runs on the rows while they are in cache, and the weights are kept
// for the backward. With `causal` the rows are taken in blocks of kRowBlock and each block
// stops at the last key it can see, which skips the masked upper triangle in all products
// (~40% of the work at L = S = 128). The backward reads the saved weights: dv = P^T dO,
// dP = dO v^T, dS = P * (dP - rowsum(P * dP)) * scale, dq = dS k, dk = dS^T q, block by block
// in a fixed order. Blocks and tasks depend only on the shapes, so the results do not depend
// on the thread count.

#include "ember/kernels/cpu/attention.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "ember/core/check.h"
#include "ember/core/parallel.h"
#include "ember/kernels/cpu/dispatch.h"
#include "ember/kernels/cpu/one_thread.h"
#include "ember/kernels/cpu/vec.h"

namespace ember::kernels::cpu::EMBER_CPU_NS {  // compiled per ISA level (kernels/cpu/isa.h)

namespace {

constexpr int64_t kRowBlock = 32;

// A [batch..., rows, cols] operand: base pointer, per-batch element offsets, row stride.
template <typename T>
struct Operand {
  T* data = nullptr;
  std::vector<int64_t> offsets;
  int64_t ld = 0;
  T* at(int64_t b) const { return data + offsets[static_cast<size_t>(b)]; }
};

std::vector<int64_t> batch_offsets(const Tensor& t, int64_t batches) {
  const int64_t nbatch = t.dim() - 2;
  std::vector<int64_t> offsets(static_cast<size_t>(batches), 0);
  const IntArrayRef sizes = t.sizes(), strides = t.strides();
  for (int64_t i = 0; i < batches; ++i) {
    int64_t index = i, off = 0;
    for (int64_t d = nbatch - 1; d >= 0; --d) {
      off += (index % sizes[d]) * strides[d];
      index /= sizes[d];
    }
    offsets[static_cast<size_t>(i)] = off;
  }
  return offsets;
}

template <typename T>
Operand<T> operand(const Tensor& t, int64_t batches) {
  if (!t.defined()) return {};
  const int64_t cols = t.size(-1);
  const int64_t ld = t.size(-2) <= 1 ? std::max<int64_t>(1, cols) : t.stride(-2);
  return {t.data_ptr<T>(), batch_offsets(t, batches), ld};
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

// Keys that query row i can see: all S, or 0..i with `causal`.
int64_t visible(const AttentionShape& s, int64_t i) { return s.causal ? std::min(s.S, i + 1) : s.S; }

// Softmax of x[0, n) in place (NaN, +inf and all -inf rows come out NaN, as softmax's).
template <typename T>
void softmax_row(T* x, int64_t n) {
  int64_t j = 0;
  T mx = -std::numeric_limits<T>::infinity();
  T sum = 0;
#if EMBER_HAVE_VEC
  if constexpr (std::is_same_v<T, float>) {
    constexpr int kL = vec::kLanes;
    alignas(64) float lanes[kL];
    if (n >= kL) {
      vec::VecF m = vec::load(x);
      for (j = kL; j + kL <= n; j += kL) m = vec::max(m, vec::load(x + j));
      vec::store(lanes, m);
      for (int l = 0; l < kL; ++l) mx = lanes[l] > mx ? lanes[l] : mx;
    }
    for (; j < n; ++j) mx = x[j] > mx ? x[j] : mx;
    if (mx != mx) mx = -std::numeric_limits<T>::infinity();  // the sum carries the NaN
    const vec::VecF vm = vec::set1(mx);
    vec::VecF acc = vec::set1(0.0f);
    for (j = 0; j + kL <= n; j += kL) {
      const vec::VecF e = vec::exp(vec::sub(vec::load(x + j), vm));
      vec::store(x + j, e);
      acc = vec::add(acc, e);
    }
    if (j < n) {  // the tail through the same code, padded with -inf (exp: 0)
      alignas(64) float pad[kL];
      for (int l = 0; l < kL; ++l) pad[l] = j + l < n ? x[j + l] : -std::numeric_limits<float>::infinity();
      const vec::VecF e = vec::exp(vec::sub(vec::load(pad), vm));
      vec::store(pad, e);
      acc = vec::add(acc, e);
      std::memcpy(x + j, pad, static_cast<size_t>(n - j) * sizeof(float));
    }
    vec::store(lanes, acc);
    for (int l = 0; l < kL; ++l) sum += lanes[l];
    const float inv = 1.0f / sum;
    const vec::VecF vi = vec::set1(inv);
    for (j = 0; j + kL <= n; j += kL) vec::store(x + j, vec::mul(vec::load(x + j), vi));
    for (; j < n; ++j) x[j] *= inv;
    return;
  }
#endif
  for (j = 0; j < n; ++j) mx = x[j] > mx ? x[j] : mx;
  if (mx != mx) mx = -std::numeric_limits<T>::infinity();
  for (j = 0; j < n; ++j) {
    x[j] = std::exp(x[j] - mx);
    sum += x[j];
  }
  const T inv = T(1) / sum;
  for (j = 0; j < n; ++j) x[j] *= inv;
}

// ds[j] = p[j] * (dp[j] - sum_j p[j] dp[j]) * scale over [0, n), written over dp.
template <typename T>
void softmax_grad_row(const T* p, T* dp, int64_t n, T scale) {
  int64_t j = 0;
  T dot = 0;
#if EMBER_HAVE_VEC
  if constexpr (std::is_same_v<T, float>) {
    constexpr int kL = vec::kLanes;
    vec::VecF acc = vec::set1(0.0f);
    for (; j + kL <= n; j += kL) acc = vec::fmadd(vec::load(p + j), vec::load(dp + j), acc);
    alignas(64) float lanes[kL];
    vec::store(lanes, acc);
    for (int l = 0; l < kL; ++l) dot += lanes[l];
    for (; j < n; ++j) dot += p[j] * dp[j];
    const vec::VecF vd = vec::set1(dot), vs = vec::set1(scale);
    for (j = 0; j + kL <= n; j += kL) {
      vec::store(dp + j, vec::mul(vec::mul(vec::load(p + j), vec::sub(vec::load(dp + j), vd)), vs));
    }
    for (; j < n; ++j) dp[j] = p[j] * (dp[j] - dot) * scale;
    return;
  }
#endif
  for (j = 0; j < n; ++j) dot += p[j] * dp[j];
  for (j = 0; j < n; ++j) dp[j] = p[j] * (dp[j] - dot) * scale;
}

template <typename T>
void forward(const Tensor& out_t, const Tensor& probs_t, const Tensor& q_t, const Tensor& k_t, const Tensor& v_t,
             const Tensor& mask_t, const AttentionShape& s) {
  const int64_t batches = s.L ? out_t.numel() / (s.L * s.Ev) : 0;
  const Operand<T> q = operand<T>(q_t, batches), k = operand<T>(k_t, batches), v = operand<T>(v_t, batches);
  const Operand<T> out = operand<T>(out_t, batches);
  const std::vector<int64_t> mask_off = mask_t.defined() ? batch_offsets(mask_t, batches) : std::vector<int64_t>();
  const T* mask = mask_t.defined() ? mask_t.data_ptr<T>() : nullptr;
  const int64_t mrs = mask ? mask_t.stride(-2) : 0, mcs = mask ? mask_t.stride(-1) : 0;
  T* probs = probs_t.defined() ? probs_t.data_ptr<T>() : nullptr;
  const int64_t block = s.causal ? kRowBlock : std::max<int64_t>(1, s.L);
  const T scale = static_cast<T>(s.scale);
  parallel_for(0, batches, 1, [&](int64_t begin, int64_t end) {
    OneOmpThread single_thread;
    std::vector<T> scratch(probs ? 0 : static_cast<size_t>(s.L * s.S));
    for (int64_t b = begin; b < end; ++b) {
      T* p = probs ? probs + b * s.L * s.S : scratch.data();
      const T *qb = q.at(b), *kb = k.at(b), *vb = v.at(b);
      T* ob = out.at(b);
      for (int64_t i0 = 0; i0 < s.L; i0 += block) {
        const int64_t rows = std::min(block, s.L - i0), cols = visible(s, i0 + rows - 1);
        T* pb = p + i0 * s.S;
        gemm(false, true, rows, cols, s.E, scale, qb + i0 * q.ld, q.ld, kb, k.ld, T(0), pb, s.S);
        for (int64_t i = i0; i < i0 + rows; ++i) {
          T* row = p + i * s.S;
          const int64_t n = visible(s, i);
          if (mask) {
            const T* m = mask + mask_off[static_cast<size_t>(b)] + i * mrs;
            for (int64_t j = 0; j < n; ++j) row[j] += m[j * mcs];
          }
          softmax_row(row, n);
          std::fill(row + n, row + s.S, T(0));
        }
        gemm(false, false, rows, s.Ev, cols, T(1), pb, s.S, vb, v.ld, T(0), ob + i0 * out.ld, out.ld);
      }
    }
  });
}

template <typename T>
void zero_rows(T* p, int64_t ld, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) std::fill(p + r * ld, p + r * ld + cols, T(0));
}

template <typename T>
void backward(const Tensor& dq_t, const Tensor& dk_t, const Tensor& dv_t, const Tensor& dout_t, const Tensor& probs_t,
              const Tensor& q_t, const Tensor& k_t, const Tensor& v_t, const AttentionShape& s) {
  const int64_t batches = s.L ? dout_t.numel() / (s.L * s.Ev) : 0;
  const Operand<T> q = operand<T>(q_t, batches), k = operand<T>(k_t, batches), v = operand<T>(v_t, batches);
  const Operand<T> dout = operand<T>(dout_t, batches);
  const Operand<T> dq = operand<T>(dq_t, batches), dk = operand<T>(dk_t, batches), dv = operand<T>(dv_t, batches);
  const T* probs = probs_t.data_ptr<T>();
  const int64_t block = s.causal ? kRowBlock : std::max<int64_t>(1, s.L);
  const T scale = static_cast<T>(s.scale);
  const bool want_qk = dq.data || dk.data;
  parallel_for(0, batches, 1, [&](int64_t begin, int64_t end) {
    OneOmpThread single_thread;
    std::vector<T> scratch(want_qk ? static_cast<size_t>(block * s.S) : 0);
    for (int64_t b = begin; b < end; ++b) {
      const T* p = probs + b * s.L * s.S;
      const T *qb = q.at(b), *kb = k.at(b), *vb = v.at(b), *gb = dout.at(b);
      if (dk.data) zero_rows(dk.at(b), dk.ld, s.S, s.E);
      if (dv.data) zero_rows(dv.at(b), dv.ld, s.S, s.Ev);
      for (int64_t i0 = 0; i0 < s.L; i0 += block) {
        const int64_t rows = std::min(block, s.L - i0), cols = visible(s, i0 + rows - 1);
        const T* pb = p + i0 * s.S;
        const T* gi = gb + i0 * dout.ld;
        // dv[0:cols] += P[rows, 0:cols]^T dO[rows]
        if (dv.data) gemm(true, false, cols, s.Ev, rows, T(1), pb, s.S, gi, dout.ld, T(1), dv.at(b), dv.ld);
        if (!want_qk) continue;
        T* ds = scratch.data();
        gemm(false, true, rows, cols, s.Ev, T(1), gi, dout.ld, vb, v.ld, T(0), ds, s.S);
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t n = visible(s, i0 + r);
          softmax_grad_row(pb + r * s.S, ds + r * s.S, n, scale);
          std::fill(ds + r * s.S + n, ds + r * s.S + cols, T(0));
        }
        if (dq.data) gemm(false, false, rows, s.E, cols, T(1), ds, s.S, kb, k.ld, T(0), dq.at(b) + i0 * dq.ld, dq.ld);
        if (dk.data) gemm(true, false, cols, s.E, rows, T(1), ds, s.S, qb + i0 * q.ld, q.ld, T(1), dk.at(b), dk.ld);
      }
    }
  });
}

}  // namespace

void attention_forward(const Tensor& out, const Tensor& probs, const Tensor& q, const Tensor& k, const Tensor& v,
                       const Tensor& mask, const AttentionShape& s) {
  dispatch_floating(q.dtype(), "scaled_dot_product_attention", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      forward<T>(out, probs, q, k, v, mask, s);
    } else {
      EMBER_ERROR("[scaled_dot_product_attention] fused kernel not implemented for '", q.dtype(), "' (internal)");
    }
  });
}

void attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout, const Tensor& probs,
                        const Tensor& q, const Tensor& k, const Tensor& v, const AttentionShape& s) {
  dispatch_floating(q.dtype(), "scaled_dot_product_attention", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      backward<T>(dq, dk, dv, dout, probs, q, k, v, s);
    } else {
      EMBER_ERROR("[scaled_dot_product_attention] fused kernel not implemented for '", q.dtype(), "' (internal)");
    }
  });
}

}  // namespace ember::kernels::cpu::EMBER_CPU_NS
