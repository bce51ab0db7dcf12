#include "ember/kernels/cpu/norm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ember/core/check.h"
#include "ember/core/parallel.h"
#include "ember/kernels/cpu/plane_sum.h"

namespace ember::kernels::cpu::EMBER_CPU_NS {  // compiled per ISA level (kernels/cpu/isa.h)

namespace {

template <typename T>
const T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}
template <typename T>
T* mutable_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

// Sixteen independent double accumulators: the loops vectorise (float -> double widening)
// without depending on one long add chain, and the combination order is fixed.
constexpr int kAcc = 16;

double combine(const double* a) {
  double s[kAcc / 2];
  for (int k = 0; k < kAcc / 2; ++k) s[k] = a[k] + a[k + kAcc / 2];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

// Sum of p[0, n).
template <typename T>
double sum_run(const T* p, int64_t n) {
  double a[kAcc] = {};
  int64_t i = 0;
  for (; i + kAcc <= n; i += kAcc) {
    for (int k = 0; k < kAcc; ++k) a[k] += static_cast<double>(p[i + k]);
  }
  for (int k = 0; i < n; ++i, ++k) a[k] += static_cast<double>(p[i]);
  return combine(a);
}

// Sum of (p - mean)^2 over p[0, n).
template <typename T>
double sqdev_run(const T* p, int64_t n, double mean) {
  double a[kAcc] = {};
  int64_t i = 0;
  for (; i + kAcc <= n; i += kAcc) {
    for (int k = 0; k < kAcc; ++k) {
      const double d = static_cast<double>(p[i + k]) - mean;
      a[k] += d * d;
    }
  }
  for (int k = 0; i < n; ++i, ++k) {
    const double d = static_cast<double>(p[i]) - mean;
    a[k] += d * d;
  }
  return combine(a);
}

// Adds sum(g) and sum(g * (x - mean)) over [0, n) to sg and sgx.
template <typename T>
void grad_sums_run(const T* g, const T* x, int64_t n, double mean, double& sg, double& sgx) {
  double a[kAcc] = {}, b[kAcc] = {};
  int64_t i = 0;
  for (; i + kAcc <= n; i += kAcc) {
    for (int k = 0; k < kAcc; ++k) {
      const double gv = static_cast<double>(g[i + k]);
      a[k] += gv;
      b[k] += gv * (static_cast<double>(x[i + k]) - mean);
    }
  }
  for (int k = 0; i < n; ++i, ++k) {
    const double gv = static_cast<double>(g[i]);
    a[k] += gv;
    b[k] += gv * (static_cast<double>(x[i]) - mean);
  }
  sg += combine(a);
  sgx += combine(b);
}

// Note [Layer norm in float lanes]: a layer-norm row is short and stays in L1, so its
// statistics cost arithmetic, not memory, and widening every value to double halves the
// vector width. For float rows the sums below run in 32 float lanes over blocks of 256
// values, and only each block's sum is added in double (as reduce.cpp's float sums do):
// the float rounding stays at a few ulps of a block sum. Lanes and blocks are fixed by the
// position in the row, so the result is the same at every ISA level and thread count
// (-ffp-contract=off keeps a * b + c unfused at every level).
constexpr int64_t kLaneBlock = 256, kLanes = 32;

// A block's kLanes float lanes added in a fixed tree (plane::fold_lanes), as a double.
double fold_lanes(const plane::VecF* acc) { return static_cast<double>(plane::fold_lanes(acc)); }

// The same for lanes in an array (a row's last < kLanes values are added lane by lane).
double fold_lanes(const float* acc) {
  plane::VecF v[plane::kVecs];
  std::memcpy(v, acc, sizeof v);
  return fold_lanes(v);
}

// The sum of term(0), ..., term(n - 1) in kLanes float lanes over blocks of kLaneBlock values,
// each block's lanes folded (fold_lanes) and added in double. The lanes are held in vector
// types (Note [Lanes as vector types], plane_sum.h): vterm(i) gives term(i), ...,
// term(i + plane::kVecF - 1) as one vector; lane k adds the terms at positions k mod kLanes
// of its block, in order, at every ISA level. (As `float acc[kLanes]` arrays GCC kept the
// lanes in memory and cleared them with `rep stos` every block.)
template <typename VTerm, typename Term>
double float_lane_sum(int64_t n, VTerm vterm, Term term) {
  static_assert(kLanes == plane::kLanes, "norm.cpp's lanes are plane_sum.h's");
  double total = 0;
  float lanes[kLanes];
  int64_t i = 0;
  for (; i + kLaneBlock <= n; i += kLaneBlock) {
    plane::VecF acc[plane::kVecs] = {};
    for (int64_t j = i; j < i + kLaneBlock; j += kLanes) {
      for (int v = 0; v < plane::kVecs; ++v) acc[v] += vterm(j + v * plane::kVecF);
    }
    total += fold_lanes(acc);
  }
  if (i < n) {
    plane::VecF acc[plane::kVecs] = {};
    for (; i + kLanes <= n; i += kLanes) {
      for (int v = 0; v < plane::kVecs; ++v) acc[v] += vterm(i + v * plane::kVecF);
    }
    std::memcpy(lanes, acc, sizeof lanes);
    for (int64_t k = 0; i < n; ++i, ++k) lanes[k] += term(i);
    total += fold_lanes(lanes);
  }
  return total;
}

// Layer norm's row statistics: float rows in float lanes, double rows in double.
template <typename T>
void row_moments(const T* x, int64_t n, double& mean, double& var) {
  if (n == 0) {
    mean = var = 0;
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    mean = float_lane_sum(
               n, [x](int64_t i) { return plane::load(x + i); }, [x](int64_t i) { return x[i]; }) /
           static_cast<double>(n);
    const float m = static_cast<float>(mean);
    var = float_lane_sum(
              n,
              [x, m](int64_t i) {
                const plane::VecF d = plane::load(x + i) - m;
                return d * d;
              },
              [x, m](int64_t i) {
                const float d = x[i] - m;
                return d * d;
              }) /
          static_cast<double>(n);
  } else {
    mean = sum_run(x, n) / static_cast<double>(n);
    var = sqdev_run(x, n, mean) / static_cast<double>(n);
  }
}

// y = x * scale + shift over [0, n).
template <typename T>
void affine_run(T* y, const T* x, int64_t n, T scale, T shift) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale + shift;
}

// ---------------------------------------------------------------------------------------
// batch norm

template <typename T>
void bn_train_forward(const Tensor& out, const Tensor& mean_t, const Tensor& var_t, const Tensor& invstd_t,
                      const Tensor& input, const Tensor& weight, const Tensor& bias, double eps, BatchNormShape s) {
  const T* x = input.data_ptr<T>();
  T* y = out.data_ptr<T>();
  const T* w = data_or_null<T>(weight);
  const T* b = data_or_null<T>(bias);
  T* mean_p = mean_t.data_ptr<T>();
  T* var_p = var_t.data_ptr<T>();
  T* invstd_p = invstd_t.data_ptr<T>();
  const int64_t plane = s.c * s.s;
  const double count = static_cast<double>(s.n * s.s);
  // One channel per chunk: its statistics and its output are computed while its values
  // are still in cache.
  parallel_for(0, s.c, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double sum = 0;
      for (int64_t i = 0; i < s.n; ++i) sum += sum_run(x + i * plane + c * s.s, s.s);
      const double mean = sum / count;
      double sq = 0;
      for (int64_t i = 0; i < s.n; ++i) sq += sqdev_run(x + i * plane + c * s.s, s.s, mean);
      const double var = sq / count;
      const double invstd = 1.0 / std::sqrt(var + eps);
      mean_p[c] = static_cast<T>(mean);
      var_p[c] = static_cast<T>(var);
      invstd_p[c] = static_cast<T>(invstd);
      const double scale = (w ? static_cast<double>(w[c]) : 1.0) * invstd;
      const double shift = (b ? static_cast<double>(b[c]) : 0.0) - mean * scale;
      for (int64_t i = 0; i < s.n; ++i) {
        const int64_t off = i * plane + c * s.s;
        affine_run(y + off, x + off, s.s, static_cast<T>(scale), static_cast<T>(shift));
      }
    }
  });
}

template <typename T>
void bn_apply(const Tensor& out, const Tensor& input, const Tensor& mean_t, const Tensor& invstd_t,
              const Tensor& weight, const Tensor& bias, BatchNormShape s) {
  const T* x = input.data_ptr<T>();
  T* y = out.data_ptr<T>();
  const T* w = data_or_null<T>(weight);
  const T* b = data_or_null<T>(bias);
  const T* mean_p = mean_t.data_ptr<T>();
  const T* invstd_p = invstd_t.data_ptr<T>();
  const int64_t plane = s.c * s.s;
  // Rows of s elements (one (n, c) pair each); a grain of whole rows keeps small planes
  // from becoming one-element chunks.
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, s.s));
  parallel_for(0, s.n * s.c, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t i = r / s.c, c = r % s.c;
      const double invstd = static_cast<double>(invstd_p[c]);
      const double scale = (w ? static_cast<double>(w[c]) : 1.0) * invstd;
      const double shift = (b ? static_cast<double>(b[c]) : 0.0) - static_cast<double>(mean_p[c]) * scale;
      const int64_t off = i * plane + c * s.s;
      affine_run(y + off, x + off, s.s, static_cast<T>(scale), static_cast<T>(shift));
    }
  });
}

template <typename T>
void bn_backward(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias, const Tensor& grad_out,
                 const Tensor& input, const Tensor& mean_t, const Tensor& invstd_t, const Tensor& weight, bool training,
                 BatchNormShape s) {
  const T* g = grad_out.data_ptr<T>();
  const T* x = input.data_ptr<T>();
  const T* w = data_or_null<T>(weight);
  const T* mean_p = mean_t.data_ptr<T>();
  const T* invstd_p = invstd_t.data_ptr<T>();
  T* dx = mutable_or_null<T>(grad_input);
  T* dw = mutable_or_null<T>(grad_weight);
  T* db = mutable_or_null<T>(grad_bias);
  const int64_t plane = s.c * s.s;
  const double count = static_cast<double>(s.n * s.s);
  const bool need_sums = dw || db || (dx && training);
  parallel_for(0, s.c, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const double mean = static_cast<double>(mean_p[c]);
      const double invstd = static_cast<double>(invstd_p[c]);
      const double wc = w ? static_cast<double>(w[c]) : 1.0;
      double sg = 0, sgx = 0;
      if (need_sums) {
        for (int64_t i = 0; i < s.n; ++i) {
          const int64_t off = i * plane + c * s.s;
          grad_sums_run(g + off, x + off, s.s, mean, sg, sgx);
        }
      }
      if (db) db[c] = static_cast<T>(sg);
      if (dw) dw[c] = static_cast<T>(sgx * invstd);
      if (!dx) continue;
      // dx = w*invstd * (g - mean(g) - xhat * mean(g*xhat)), written as g*a + x*bx + k.
      const double a = wc * invstd;
      double bx = 0, k = 0;
      if (training) {
        const double proj = invstd * invstd * sgx / count;
        bx = -a * proj;
        k = a * (proj * mean - sg / count);
      }
      const T ta = static_cast<T>(a), tb = static_cast<T>(bx), tk = static_cast<T>(k);
      for (int64_t i = 0; i < s.n; ++i) {
        const int64_t off = i * plane + c * s.s;
        const T* gp = g + off;
        const T* xp = x + off;
        T* dp = dx + off;
        if (training) {
          for (int64_t j = 0; j < s.s; ++j) dp[j] = gp[j] * ta + xp[j] * tb + tk;
        } else {
          for (int64_t j = 0; j < s.s; ++j) dp[j] = gp[j] * ta;
        }
      }
    }
  });
}

// ---------------------------------------------------------------------------------------
// layer norm

template <typename T>
void ln_forward(const Tensor& out, const Tensor& mean_t, const Tensor& rstd_t, const Tensor& input,
                const Tensor& weight, const Tensor& bias, double eps, int64_t rows, int64_t cols) {
  const T* x = input.data_ptr<T>();
  T* y = out.data_ptr<T>();
  const T* w = data_or_null<T>(weight);
  const T* b = data_or_null<T>(bias);
  T* mean_p = mean_t.data_ptr<T>();
  T* rstd_p = rstd_t.data_ptr<T>();
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cols));
  parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * cols;
      T* yr = y + r * cols;
      double mean, var;
      row_moments(xr, cols, mean, var);
      const double rstd = 1.0 / std::sqrt(var + eps);
      mean_p[r] = static_cast<T>(mean);
      rstd_p[r] = static_cast<T>(rstd);
      const T scale = static_cast<T>(rstd), shift = static_cast<T>(-mean * rstd);
      if (w && b) {
        for (int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] * scale + shift) * w[j] + b[j];
      } else if (w) {
        for (int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] * scale + shift) * w[j];
      } else if (b) {
        for (int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] * scale + shift) + b[j];
      } else {
        affine_run(yr, xr, cols, scale, shift);
      }
    }
  });
}

// Note [Fused layer-norm backward]: a float row's backward used to pass over the row six
// times (the weight and bias partials, g * w, sum(g * w), sum(g * w * (x - mean)), dx);
// each pass is cheap while the row sits in L1, but together they cost twice the forward.
// One pass now reads g and x once, updates both partials, stores g * w for the dx pass and
// accumulates the two sums in float_lane_sum's lanes and blocks (the same positions, the
// same order), so the results are the bits the separate passes gave; the second pass
// writes dx. The flags are template parameters so every variant vectorises.
// Adds the last count (< kLanes) values of a row's fused backward to the lanes a1/a2.
template <bool kW, bool kPW, bool kPB>
inline void ln_row_sums_tail(const float* __restrict g, const float* __restrict x, const float* __restrict w,
                             float* __restrict gw, float* __restrict pw, float* __restrict pb, int64_t count, float m,
                             float tr, float tshift, float* __restrict a1, float* __restrict a2) {
  for (int64_t k = 0; k < count; ++k) {
    const float gv = g[k];
    const float xv = x[k];
    if constexpr (kPW) pw[k] += gv * (xv * tr + tshift);
    if constexpr (kPB) pb[k] += gv;
    float gwv = gv;
    if constexpr (kW) {
      gwv = gv * w[k];
      gw[k] = gwv;
    }
    a1[k] += gwv;
    a2[k] += gwv * (xv - m);
  }
}

// One run of kLanes values of the fused backward, the lanes a1/a2 in vector types (Note [Lanes
// as vector types], plane_sum.h): the operations of ln_row_sums_tail on each value, in the
// same order.
template <bool kW, bool kPW, bool kPB>
inline void ln_row_sums_vec(const float* g, const float* x, const float* w, float* gw, float* pw, float* pb, float m,
                            float tr, float tshift, plane::VecF* a1, plane::VecF* a2) {
  for (int v = 0; v < plane::kVecs; ++v) {
    const int64_t o = v * plane::kVecF;
    const plane::VecF gv = plane::load(g + o), xv = plane::load(x + o);
    if constexpr (kPW) plane::store(pw + o, plane::load(pw + o) + gv * (xv * tr + tshift));
    if constexpr (kPB) plane::store(pb + o, plane::load(pb + o) + gv);
    plane::VecF gwv = gv;
    if constexpr (kW) {
      gwv = gv * plane::load(w + o);
      plane::store(gw + o, gwv);
    }
    a1[v] += gwv;
    a2[v] += gwv * (xv - m);
  }
}

template <bool kW, bool kPW, bool kPB>
void ln_row_sums_f32(const float* g, const float* x, const float* w, float* gw, float* pw, float* pb, int64_t n,
                     float m, float tr, float tshift, double& s1, double& s2) {
  constexpr int64_t kBlock = kLaneBlock;
  // Offsets into the optional arrays stay null when the array is absent (known at compile
  // time, so the inner loop tests nothing).
  auto at = [](auto* p, int64_t i, auto present) {
    if constexpr (decltype(present)::value)
      return p + i;
    else
      return p;
  };
  using HasW = std::bool_constant<kW>;
  using HasPW = std::bool_constant<kPW>;
  using HasPB = std::bool_constant<kPB>;
  double t1 = 0, t2 = 0;
  int64_t i = 0;
  float a1[kLanes], a2[kLanes];
  for (; i + kBlock <= n; i += kBlock) {
    plane::VecF v1[plane::kVecs] = {}, v2[plane::kVecs] = {};
    for (int64_t j = i; j < i + kBlock; j += kLanes) {
      ln_row_sums_vec<kW, kPW, kPB>(g + j, x + j, at(w, j, HasW{}), at(gw, j, HasW{}), at(pw, j, HasPW{}),
                                    at(pb, j, HasPB{}), m, tr, tshift, v1, v2);
    }
    t1 += fold_lanes(v1);
    t2 += fold_lanes(v2);
  }
  if (i < n) {
    plane::VecF v1[plane::kVecs] = {}, v2[plane::kVecs] = {};
    for (; i + kLanes <= n; i += kLanes) {
      ln_row_sums_vec<kW, kPW, kPB>(g + i, x + i, at(w, i, HasW{}), at(gw, i, HasW{}), at(pw, i, HasPW{}),
                                    at(pb, i, HasPB{}), m, tr, tshift, v1, v2);
    }
    std::memcpy(a1, v1, sizeof a1);
    std::memcpy(a2, v2, sizeof a2);
    ln_row_sums_tail<kW, kPW, kPB>(g + i, x + i, at(w, i, HasW{}), at(gw, i, HasW{}), at(pw, i, HasPW{}),
                                   at(pb, i, HasPB{}), n - i, m, tr, tshift, a1, a2);
    t1 += fold_lanes(a1);
    t2 += fold_lanes(a2);
  }
  s1 = t1;
  s2 = t2;
}

using LnRowSumsF32 = void (*)(const float*, const float*, const float*, float*, float*, float*, int64_t, float, float,
                              float, double&, double&);

LnRowSumsF32 pick_ln_row_sums(bool has_w, bool has_pw, bool has_pb) {
  static constexpr LnRowSumsF32 table[8] = {ln_row_sums_f32<false, false, false>, ln_row_sums_f32<false, false, true>,
                                            ln_row_sums_f32<false, true, false>,  ln_row_sums_f32<false, true, true>,
                                            ln_row_sums_f32<true, false, false>,  ln_row_sums_f32<true, false, true>,
                                            ln_row_sums_f32<true, true, false>,   ln_row_sums_f32<true, true, true>};
  return table[(has_w ? 4 : 0) + (has_pw ? 2 : 0) + (has_pb ? 1 : 0)];
}

template <typename T>
void ln_backward(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias, const Tensor& grad_out,
                 const Tensor& input, const Tensor& mean_t, const Tensor& rstd_t, const Tensor& weight, int64_t rows,
                 int64_t cols) {
  const T* g = grad_out.data_ptr<T>();
  const T* x = input.data_ptr<T>();
  const T* w = data_or_null<T>(weight);
  const T* mean_p = mean_t.data_ptr<T>();
  const T* rstd_p = rstd_t.data_ptr<T>();
  T* dx = mutable_or_null<T>(grad_input);
  T* dw = mutable_or_null<T>(grad_weight);
  T* db = mutable_or_null<T>(grad_bias);
  // Note [Deterministic reductions] applies to dw/db: rows are cut into chunks fixed by
  // the shape, each chunk sums its rows into its own partial, and the partials are added
  // in chunk order afterwards.
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, cols));
  const int64_t chunks = rows ? (rows + grain - 1) / grain : 0;
  const bool want_params = dw || db;
  std::vector<T> part_w(want_params && dw ? static_cast<size_t>(chunks * cols) : 0);
  std::vector<T> part_b(want_params && db ? static_cast<size_t>(chunks * cols) : 0);
  parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) {
    const int64_t chunk = r0 / grain;
    T* pw = dw ? part_w.data() + chunk * cols : nullptr;
    T* pb = db ? part_b.data() + chunk * cols : nullptr;
    std::vector<T> gw(w ? static_cast<size_t>(cols) : 0);
    // Note [Fused layer-norm backward]: the float row pass for the operands present.
    [[maybe_unused]] const LnRowSumsF32 row_sums =
        std::is_same_v<T, float> ? pick_ln_row_sums(w != nullptr, pw != nullptr, pb != nullptr) : nullptr;
    for (int64_t r = r0; r < r1; ++r) {
      const T* gr = g + r * cols;
      const T* xr = x + r * cols;
      const double mean = static_cast<double>(mean_p[r]);
      const double rstd = static_cast<double>(rstd_p[r]);
      const T tr = static_cast<T>(rstd), tshift = static_cast<T>(-mean * rstd);
      const T* gwr = w ? gw.data() : gr;
      double s1 = 0, s2 = 0;
      if constexpr (std::is_same_v<T, float>) {
        if (!dx && !pw && !pb) continue;
        row_sums(gr, xr, w, gw.data(), pw, pb, cols, static_cast<float>(mean), tr, tshift, s1, s2);
        if (!dx) continue;
      } else {
        if (pw) {
          for (int64_t j = 0; j < cols; ++j) pw[j] += gr[j] * (xr[j] * tr + tshift);
        }
        if (pb) {
          for (int64_t j = 0; j < cols; ++j) pb[j] += gr[j];
        }
        if (!dx) continue;
        if (w) {
          for (int64_t j = 0; j < cols; ++j) gw[static_cast<size_t>(j)] = gr[j] * w[j];
        }
        grad_sums_run(gwr, xr, cols, mean, s1, s2);
      }
      // dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)) = gw*rstd + x*bx + k.
      const double n = static_cast<double>(cols);
      const double bx = -rstd * rstd * rstd * s2 / n;
      const double k = -bx * mean - rstd * s1 / n;
      const T tbx = static_cast<T>(bx), tk = static_cast<T>(k);
      T* dr = dx + r * cols;
      for (int64_t j = 0; j < cols; ++j) dr[j] = gwr[j] * tr + xr[j] * tbx + tk;
    }
  });
  if (!want_params) return;
  parallel_for(0, cols, 256, [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      double sw = 0, sb = 0;
      for (int64_t k = 0; k < chunks; ++k) {
        if (dw) sw += static_cast<double>(part_w[static_cast<size_t>(k * cols + j)]);
        if (db) sb += static_cast<double>(part_b[static_cast<size_t>(k * cols + j)]);
      }
      if (dw) dw[j] = static_cast<T>(sw);
      if (db) db[j] = static_cast<T>(sb);
    }
  });
}

template <typename F>
void dispatch_norm(DType dt, const char* op, F&& f) {
  if (dt == kFloat32) return f(float{});
  if (dt == kFloat64) return f(double{});
  EMBER_ERROR("[", op, "] kernel supports float32 and float64, got ", dt);
}

}  // namespace

void batch_norm_train_forward(const Tensor& out, const Tensor& mean, const Tensor& var, const Tensor& invstd,
                              const Tensor& input, const Tensor& weight, const Tensor& bias, double eps,
                              BatchNormShape s) {
  dispatch_norm(input.dtype(), "batch_norm", [&](auto tag) {
    bn_train_forward<decltype(tag)>(out, mean, var, invstd, input, weight, bias, eps, s);
  });
}

void batch_norm_apply(const Tensor& out, const Tensor& input, const Tensor& mean, const Tensor& invstd,
                      const Tensor& weight, const Tensor& bias, BatchNormShape s) {
  dispatch_norm(input.dtype(), "batch_norm",
                [&](auto tag) { bn_apply<decltype(tag)>(out, input, mean, invstd, weight, bias, s); });
}

void batch_norm_backward(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                         const Tensor& grad_out, const Tensor& input, const Tensor& mean, const Tensor& invstd,
                         const Tensor& weight, bool training, BatchNormShape s) {
  dispatch_norm(input.dtype(), "batch_norm_backward", [&](auto tag) {
    bn_backward<decltype(tag)>(grad_input, grad_weight, grad_bias, grad_out, input, mean, invstd, weight, training, s);
  });
}

void layer_norm_forward(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& input,
                        const Tensor& weight, const Tensor& bias, double eps, int64_t rows, int64_t cols) {
  dispatch_norm(input.dtype(), "layer_norm",
                [&](auto tag) { ln_forward<decltype(tag)>(out, mean, rstd, input, weight, bias, eps, rows, cols); });
}

void layer_norm_backward(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                         const Tensor& grad_out, const Tensor& input, const Tensor& mean, const Tensor& rstd,
                         const Tensor& weight, int64_t rows, int64_t cols) {
  dispatch_norm(input.dtype(), "layer_norm_backward", [&](auto tag) {
    ln_backward<decltype(tag)>(grad_input, grad_weight, grad_bias, grad_out, input, mean, rstd, weight, rows, cols);
  });
}

}  // namespace ember::kernels::cpu::EMBER_CPU_NS
