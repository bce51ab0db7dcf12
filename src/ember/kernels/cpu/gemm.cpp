// Batched matrix products: OpenBLAS for float32/float64, an ikj loop for integer dtypes.

#include "ember/kernels/cpu/gemm.h"
#include "ember/kernels/cpu/one_thread.h"

#include <cblas.h>
#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "ember/core/check.h"
#include "ember/core/parallel.h"
#include "ember/kernels/cpu/dispatch.h"
#include "ember/kernels/cpu/isa.h"

namespace ember::kernels::cpu {

namespace {

// Multiply-adds below which a task is not worth handing to another thread (OpenBLAS
// 0.3.21 uses the same threshold for its own threading).
constexpr int64_t kSmallGemm = int64_t{1} << 18;
// Elements per chunk for the loops that are not BLAS calls.
constexpr int64_t kGrain = 32768;

struct BlasLayout {
  bool ok = false;
  bool transposed = false;
  int64_t ld = 0;
};

// BLAS wants a leading dimension >= max(1, columns of the stored matrix); the stride of a
// size-1 dim is arbitrary, so such dims take the smallest valid value instead.
BlasLayout blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  const int64_t min_row_ld = std::max<int64_t>(1, cols);
  if ((cs == 1 || cols <= 1) && (rows <= 1 || rs >= min_row_ld)) {
    const int64_t ld = rows <= 1 ? min_row_ld : rs;
    if (ld <= INT_MAX) return {true, false, ld};
  }
  const int64_t min_col_ld = std::max<int64_t>(1, rows);
  if ((rs == 1 || rows <= 1) && (cols <= 1 || cs >= min_col_ld)) {
    const int64_t ld = cols <= 1 ? min_col_ld : cs;
    if (ld <= INT_MAX) return {true, true, ld};
  }
  return {};
}

// Element offsets of every batch matrix of t, whose leading `nbatch` dims are batch dims
// (in row-major batch order).
std::vector<int64_t> batch_offsets(const Tensor& t, int64_t nbatch, int64_t batches) {
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

int64_t scalar_to_int(const Scalar& s) {
  return s.is_floating_point() ? convert<int64_t>(s.to_double()) : s.to_long();
}

// Integer arithmetic wraps modulo 2^64; truncating to the element type afterwards gives
// the same value as wrapping in the narrow type throughout.
template <typename T>
uint64_t to_u64(T v) {
  return static_cast<uint64_t>(static_cast<int64_t>(v));
}

template <typename T>
T from_u64(uint64_t v) {
  return static_cast<T>(static_cast<int64_t>(v));
}

// Note [oneDNN sgemm]: float32 tiles (Note [Deterministic gemm]) go to oneDNN's sgemm
// (its JIT GEMM kernels, row-major), which on one thread is faster than OpenBLAS 0.3.21's for
// the shapes training runs: measured on a Zen 4 core pair, each library in its own process,
// the main job's head (64 x 3136 x 128 linear forward and backward) 0.88-1.01 ms against
// 1.09-1.13, matmul 256 0.154 against 0.191 ms, matmul 1024 10.3-10.6 against 11.0-11.5 ms.
// Each tile still runs on the calling thread (OneOmpThread) with a plan that depends only on
// the tile's shape, so results do not depend on the thread count. EMBER_GEMM_IMPL=openblas
// keeps OpenBLAS (float64 always uses it); a call oneDNN rejects falls back to it too, and so
// does every call at ember's baseline CPU level (no AVX2: oneDNN's sgemm would run its
// reference C loops there, while OpenBLAS has kernels for older CPUs).
bool use_dnnl_sgemm() {
  static const bool wanted = [] {
    const char* v = std::getenv("EMBER_GEMM_IMPL");
    return !(v && std::strcmp(v, "openblas") == 0);
  }();
  return wanted && isa_level() >= 1;
}

void blas_gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
               const float* b, int ldb, float beta, float* c, int ldc) {
  if (use_dnnl_sgemm() &&
      dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) == dnnl_success) {
    return;
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void blas_gemm(bool ta, bool tb, int m, int n, int k, double alpha, const double* a, int lda,
               const double* b, int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// out = beta * out, where beta == 0 writes zeros without reading out.
template <typename T, typename Mul>
void scale(const Tensor& out, bool beta_zero, bool beta_one, Mul mul) {
  if (beta_one) return;
  T* p = out.data_ptr<T>();
  parallel_for(0, out.numel(), kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) p[i] = beta_zero ? T(0) : mul(p[i]);
  });
}

// Note [Deterministic gemm]: OpenBLAS 0.3.21 splits a product over its threads by rows and
// columns of the result, and where a split falls changes which micro-kernel computes an
// element and so its rounding: with 1 and 2 threads about 5% of a 512x512 float32
// product differ in the last bits. ember therefore cuts the result into tiles whose
// sizes depend only on (m, n, k), runs the tiles through parallel_for, and has the BLAS
// (oneDNN's sgemm for float32, Note [oneDNN sgemm]; OpenBLAS for float64) compute each tile on
// one thread.
struct Tiling {
  int64_t tile_m, tile_n, tiles_m, tiles_n;
  int64_t count() const { return tiles_m * tiles_n; }
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

Tiling plan_tiles(int64_t m, int64_t n, int64_t k) {
  // Enough tiles to keep 8 to 16 threads busy; each tile repacks its rows of a and columns
  // of b, so more (smaller) tiles cost single-thread speed.
  constexpr int64_t kMaxTiles = 16;
  constexpr int64_t kMinTileDim = 64;
  // Multiple of the register-block sizes of the OpenBLAS kernels, so interior tiles
  // have no ragged edges.
  constexpr int64_t kAlign = 16;
  constexpr double kMinTileWork = double(int64_t{1} << 21);
  auto half = [](int64_t d) { return ceil_div(ceil_div(d, 2), kAlign) * kAlign; };
  int64_t tm = m, tn = n;
  while (ceil_div(m, tm) * ceil_div(n, tn) < kMaxTiles &&
         static_cast<double>(tm) * static_cast<double>(tn) * static_cast<double>(k) >=
             2 * kMinTileWork) {
    if (tm >= tn && tm >= 2 * kMinTileDim) {
      tm = half(tm);
    } else if (tn >= 2 * kMinTileDim) {
      tn = half(tn);
    } else if (tm >= 2 * kMinTileDim) {
      tm = half(tm);
    } else {
      break;
    }
  }
  // A product too small for the rule above but worth two threads (a linear layer on a few
  // rows: 32 x 384 x 128 at batch 1 of a transformer layer) still gets two tiles.
  if (tm == m && tn == n && static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) >=
                                static_cast<double>(2 * kSmallGemm)) {
    if (n >= 2 * kAlign && n >= m) tn = half(n);
    else if (m >= 2 * kAlign) tm = half(m);
  }
  return {tm, tn, ceil_div(m, tm), ceil_div(n, tn)};
}

void blas_gemv(bool row_major_b, int rows, int cols, float alpha, const float* a, int lda, const float* x, int incx,
               float beta, float* y) {
  cblas_sgemv(CblasRowMajor, row_major_b ? CblasNoTrans : CblasTrans, rows, cols, alpha, a, lda, x, incx, beta, y, 1);
}

void blas_gemv(bool row_major_b, int rows, int cols, double alpha, const double* a, int lda, const double* x,
               int incx, double beta, double* y) {
  cblas_dgemv(CblasRowMajor, row_major_b ? CblasNoTrans : CblasTrans, rows, cols, alpha, a, lda, x, incx, beta, y, 1);
}

// Note [Single-row products]: a product with one row per batch matrix (a linear layer on
// one sample) is a matrix-vector product. sgemm packs all of b for that one row and runs
// ~6x slower than sgemv (784 x 256: 72 vs 12 us). Each output element is one dot product
// over k; the output columns are cut into chunks whose size depends only on (n, k), each
// chunk is one sgemv on one thread, so results do not depend on the thread count.
template <typename T>
void gemv_rows(const Tensor& out, const T* ap, const BlasLayout& la, const std::vector<int64_t>& a_off, const T* bp,
               const BlasLayout& lb, const std::vector<int64_t>& b_off, int64_t n, int64_t k, T alpha, T beta) {
  constexpr int64_t kAlign = 16;
  const int64_t batches = out.numel() / n;
  // Chunks of ~kSmallGemm / 4 multiply-adds, a multiple of 16 columns.
  const int64_t chunks_wanted = std::max<int64_t>(1, n * k / (kSmallGemm / 4));
  const int64_t chunk = std::min(n, ceil_div(ceil_div(n, chunks_wanted), kAlign) * kAlign);
  const int64_t chunks = ceil_div(n, chunk);
  T* cp = out.data_ptr<T>();
  const int incx = la.transposed ? static_cast<int>(la.ld) : 1;
  parallel_for(0, batches * chunks, 1, [&](int64_t begin, int64_t end) {
    OneOmpThread single_thread;
    for (int64_t task = begin; task < end; ++task) {
      const size_t bi = static_cast<size_t>(task / chunks);
      const int64_t j0 = (task % chunks) * chunk;
      const int64_t cols = std::min(chunk, n - j0);
      T* y = cp + static_cast<int64_t>(bi) * n + j0;
      // beta == 0 must not read out (it may be uninitialised): zero it, then add.
      if (beta == T(0)) std::fill(y, y + cols, T(0));
      const T* x = ap + a_off[bi];
      if (lb.transposed) {  // b(p, j) at j * ld + p: rows of the stored matrix are output columns
        blas_gemv(true, static_cast<int>(cols), static_cast<int>(k), alpha, bp + b_off[bi] + j0 * lb.ld,
                  static_cast<int>(lb.ld), x, incx, beta, y);
      } else {  // b(p, j) at p * ld + j
        blas_gemv(false, static_cast<int>(k), static_cast<int>(cols), alpha, bp + b_off[bi] + j0,
                  static_cast<int>(lb.ld), x, incx, beta, y);
      }
    }
  });
}

// Offset of element (i, j) of a matrix stored with layout l.
int64_t element_offset(const BlasLayout& l, int64_t i, int64_t j) {
  return l.transposed ? j * l.ld + i : i * l.ld + j;
}

// Note [Long-k products]: a weight gradient (x^T g over 4096 rows: 384 x 128 x 4096) has a
// small result and a long inner dim. Cut into the result tiles above (96 x 64), OpenBLAS
// 0.3.21 ran each tile at 40% of the speed of the whole product (1 thread), while cutting k
// loses nothing. Such a product is split into k-chunks of kKChunk (sizes from k only), each
// chunk's product computed on one thread into its own buffer, and the buffers summed in
// chunk order, so results do not depend on the thread count. The chunks are of equal length
// (a multiple of 16 near k / ceil(k / kKChunk)): the main job's 64 x 128 x 3136 linear layer
// was cut 1024 + 1024 + 1024 + 64, which gave one of two threads twice the other's work.
constexpr int64_t kKChunk = 1024;

int64_t k_chunk_len(int64_t k) {
  const int64_t chunks = (k + kKChunk - 1) / kKChunk;
  return ((k + chunks - 1) / chunks + 15) / 16 * 16;
}

bool use_k_split(int64_t batches, int64_t m, int64_t n, int64_t k) {
  return batches == 1 && m > 1 && n > 1 && k >= 2 * kKChunk && k >= 4 * std::max(m, n);
}

template <typename T>
void gemm_k_split(const Tensor& out, const T* ap, const BlasLayout& la, const T* bp, const BlasLayout& lb, int64_t m,
                  int64_t n, int64_t k, T alpha, T beta) {
  const int64_t chunk = k_chunk_len(k), chunks = ceil_div(k, chunk);
  std::unique_ptr<T[]> partial(new T[static_cast<size_t>(chunks * m * n)]);  // each chunk writes its whole block
  parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    OneOmpThread single_thread;
    for (int64_t c = begin; c < end; ++c) {
      const int64_t p0 = c * chunk, len = std::min(chunk, k - p0);
      blas_gemm(la.transposed, lb.transposed, static_cast<int>(m), static_cast<int>(n), static_cast<int>(len), alpha,
                ap + element_offset(la, 0, p0), static_cast<int>(la.ld), bp + element_offset(lb, p0, 0),
                static_cast<int>(lb.ld), T(0), partial.get() + c * m * n, static_cast<int>(n));
    }
  });
  T* cp = out.data_ptr<T>();
  const T* pp = partial.get();
  parallel_for(0, m * n, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T v = pp[i];
      for (int64_t c = 1; c < chunks; ++c) v += pp[c * m * n + i];
      cp[i] = beta == T(0) ? v : beta * cp[i] + v;
    }
  });
}

template <typename T>
void gemm_blas(const Tensor& out, Tensor a, Tensor b, T alpha, T beta, const char* op) {
  const int64_t nbatch = out.dim() - 2;
  const int64_t m = out.size(-2), n = out.size(-1), k = a.size(-1);
  EMBER_CHECK(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX, "[", op,
              "] matrix sizes above 2^31 - 1 are not supported (BLAS indices are 32-bit), got (", m,
              "x", k, ") @ (", k, "x", n, ")");
  BlasLayout la = blas_layout(m, k, a.stride(-2), a.stride(-1));
  if (!la.ok) {
    a = a.contiguous();
    la = blas_layout(m, k, a.stride(-2), a.stride(-1));
  }
  BlasLayout lb = blas_layout(k, n, b.stride(-2), b.stride(-1));
  if (!lb.ok) {
    b = b.contiguous();
    lb = blas_layout(k, n, b.stride(-2), b.stride(-1));
  }
  const int64_t batches = out.numel() / (m * n);
  const std::vector<int64_t> a_off = batch_offsets(a, nbatch, batches);
  const std::vector<int64_t> b_off = batch_offsets(b, nbatch, batches);
  const T* ap = a.data_ptr<T>();
  const T* bp = b.data_ptr<T>();
  if (m == 1 && n > 1) {
    gemv_rows<T>(out, ap, la, a_off, bp, lb, b_off, n, k, alpha, beta);
    return;
  }
  if (use_k_split(batches, m, n, k)) {
    gemm_k_split<T>(out, ap + a_off[0], la, bp + b_off[0], lb, m, n, k, alpha, beta);
    return;
  }
  T* cp = out.data_ptr<T>();
  const Tiling tiling = plan_tiles(m, n, k);
  const int64_t tiles = tiling.count();
  // One task is one tile of one batch; tasks too small to be worth a thread are grouped.
  const double tile_work = static_cast<double>(std::min(tiling.tile_m, m)) *
                           static_cast<double>(std::min(tiling.tile_n, n)) * static_cast<double>(k);
  const int64_t grain =
      tile_work >= static_cast<double>(kSmallGemm)
          ? 1
          : std::max<int64_t>(1,
                              kSmallGemm / std::max<int64_t>(1, static_cast<int64_t>(tile_work)));
  parallel_for(0, batches * tiles, grain, [&](int64_t begin, int64_t end) {
    OneOmpThread single_thread;
    for (int64_t task = begin; task < end; ++task) {
      const size_t bi = static_cast<size_t>(task / tiles);
      const int64_t tile = task % tiles;
      const int64_t i0 = (tile / tiling.tiles_n) * tiling.tile_m;
      const int64_t j0 = (tile % tiling.tiles_n) * tiling.tile_n;
      const int64_t rows = std::min(tiling.tile_m, m - i0);
      const int64_t cols = std::min(tiling.tile_n, n - j0);
      blas_gemm(la.transposed, lb.transposed, static_cast<int>(rows), static_cast<int>(cols),
                static_cast<int>(k), alpha, ap + a_off[bi] + element_offset(la, i0, 0),
                static_cast<int>(la.ld), bp + b_off[bi] + element_offset(lb, 0, j0),
                static_cast<int>(lb.ld), beta, cp + static_cast<int64_t>(bi) * m * n + i0 * n + j0,
                static_cast<int>(n));
    }
  });
}

template <typename T>
void gemm_int(const Tensor& out, const Tensor& a, const Tensor& b, uint64_t alpha, uint64_t beta,
              bool beta_zero) {
  const int64_t nbatch = out.dim() - 2;
  const int64_t m = out.size(-2), n = out.size(-1), k = a.size(-1);
  const int64_t batches = out.numel() / (m * n);
  const std::vector<int64_t> a_off = batch_offsets(a, nbatch, batches);
  const std::vector<int64_t> b_off = batch_offsets(b, nbatch, batches);
  const int64_t a_rs = a.stride(-2), a_cs = a.stride(-1);
  const int64_t b_rs = b.stride(-2), b_cs = b.stride(-1);
  const T* ap = a.data_ptr<T>();
  const T* bp = b.data_ptr<T>();
  T* cp = out.data_ptr<T>();
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, n * k));
  parallel_for(0, batches * m, grain, [&](int64_t begin, int64_t end) {
    std::vector<uint64_t> acc(static_cast<size_t>(n));
    for (int64_t r = begin; r < end; ++r) {
      const size_t bi = static_cast<size_t>(r / m);
      const T* arow = ap + a_off[bi] + (r % m) * a_rs;
      const T* bmat = bp + b_off[bi];
      std::fill(acc.begin(), acc.end(), uint64_t{0});
      // ikj order: the inner loop walks a row of b and a row of the result.
      for (int64_t p = 0; p < k; ++p) {
        const uint64_t av = to_u64(arow[p * a_cs]);
        if (av == 0) continue;
        const T* brow = bmat + p * b_rs;
        for (int64_t j = 0; j < n; ++j) acc[static_cast<size_t>(j)] += av * to_u64(brow[j * b_cs]);
      }
      T* crow = cp + r * n;
      for (int64_t j = 0; j < n; ++j) {
        uint64_t v = alpha * acc[static_cast<size_t>(j)];
        if (!beta_zero) v += beta * to_u64(crow[j]);
        crow[j] = from_u64<T>(v);
      }
    }
  });
}

}  // namespace

bool blas_compatible(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  return blas_layout(rows, cols, row_stride, col_stride).ok;
}

bool scalar_is_zero(DType dtype, const Scalar& value) {
  if (dtype == kFloat64) return value.to_double() == 0.0;
  if (is_floating_point(dtype)) return value.to<float>() == 0.0f;
  if (dtype == kBool) return !value.to_bool();
  return scalar_to_int(value) == 0;
}

void gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha,
          const Scalar& beta, const char* op) {
  if (out.numel() == 0) return;
  const DType dt = out.dtype();
  const int64_t k = a.size(-1);
  const bool beta_zero = scalar_is_zero(dt, beta);
  const bool skip_product = k == 0 || scalar_is_zero(dt, alpha);
  dispatch_all(dt, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T be = beta_zero ? T(0) : beta.to<T>();
      if (skip_product) {
        scale<T>(out, beta_zero, be == T(1), [be](T v) { return be * v; });
      } else {
        gemm_blas<T>(out, a, b, alpha.to<T>(), be, op);
      }
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const uint64_t be = static_cast<uint64_t>(scalar_to_int(beta));
      if (skip_product) {
        scale<T>(out, beta_zero, be == 1, [be](T v) { return from_u64<T>(be * to_u64(v)); });
      } else {
        gemm_int<T>(out, a, b, static_cast<uint64_t>(scalar_to_int(alpha)), be, beta_zero);
      }
    } else {
      EMBER_ERROR("[", op, "] not implemented for '", dt, "' (internal: the op should have ",
                  "converted it)");
    }
  });
}

}  // namespace ember::kernels::cpu
