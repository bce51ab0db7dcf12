// The ONNX int8 operators (qlinear.h, Note [ONNX int8 arithmetic]).
//
// Note [Full-range codes through the int8 GEMM]: ember's int8 GEMM (kernels/cpu/qgemm.h) takes
// activation codes up to 127 only (16-bit pair sums of CPUs without VNNI), while ONNX's uint8
// values reach 255. A code q is 128 * h + l with h in {0, 1} and l < 128, so sum q * w =
// sum l * w + 128 * sum h * w: two GEMMs of 7-bit codes, both exact; the second runs only when
// some code is above 127. int8 activations are moved to uint8 by adding 128 to the codes and
// to their zero point (their differences do not change), and uint8 weights to int8 by
// subtracting 128 from both; nonzero weight zero points are corrected with the sums of each
// im2col row.

#include "ember/quant/qlinear.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/core/parallel.h"
#include "ember/jit/trace_hook.h"
#include "ember/kernels/cpu/qgemm.h"
#include "ember/ops/creation.h"
#include "ember/ops/join.h"
#include "ember/ops/view.h"

namespace ember::quant {

namespace {

// Largest K for which the two-part int32 sums cannot overflow: K * (127 + 128) * 128 < 2^31.
constexpr int64_t kMaxK = 65536;

// A grid: scale(s) and zero point(s) as numbers, and the code range of the zero point's dtype.
struct Grid {
  std::vector<float> scale;
  std::vector<int32_t> zp;
  DType dtype = kUInt8;
  int32_t lo = 0, hi = 255;
  float s(int64_t i) const { return scale[scale.size() == 1 ? 0 : static_cast<size_t>(i)]; }
  int32_t z(int64_t i) const { return zp[zp.size() == 1 ? 0 : static_cast<size_t>(i)]; }
};

void set_range(Grid& g) {
  g.lo = g.dtype == kInt8 ? -128 : g.dtype == kInt32 ? INT32_MIN : 0;
  g.hi = g.dtype == kInt8 ? 127 : g.dtype == kInt32 ? INT32_MAX : 255;
}

// Reads a grid; `n`: how many values a per-channel grid has (0: one value only).
Grid read_grid(const char* op, const char* which, const Tensor& scale, const Tensor& zero_point, int64_t n,
               bool allow_int32 = false) {
  Grid g;
  EMBER_CHECK(scale.defined() && scale.dtype() == kFloat32, op, " ", which,
              "_scale must be a float32 tensor, got ", scale.defined() ? scale.dtype() : kFloat32,
              scale.defined() ? "" : " (undefined)");
  const int64_t ns = scale.numel();
  EMBER_CHECK(scale.dim() <= 1 && (ns == 1 || (n > 0 && ns == n)), op, " ", which, "_scale of sizes ", scale.sizes(),
              " must hold one value", n > 0 ? " or one per channel (" + std::to_string(n) + ")" : std::string());
  const Tensor sc = scale.contiguous();
  for (int64_t i = 0; i < ns; ++i) {
    const float v = sc.data_ptr<float>()[i];
    EMBER_CHECK(v > 0.0f && std::isfinite(v), op, " ", which, "_scale must be positive and finite, got ", v);
    g.scale.push_back(v);
  }
  if (!zero_point.defined()) {
    g.zp.assign(1, 0);
  } else {
    const DType dt = zero_point.dtype();
    EMBER_CHECK(dt == kUInt8 || dt == kInt8 || (allow_int32 && dt == kInt32), op, " ", which,
                "_zero_point must be uint8 or int8", allow_int32 ? " (or int32)" : "", ", got ", dt);
    EMBER_CHECK(zero_point.dim() <= 1 && zero_point.numel() == ns, op, " ", which, "_zero_point of sizes ",
                zero_point.sizes(), " must hold as many values as ", which, "_scale (", ns, ")");
    g.dtype = dt;
    const Tensor z = zero_point.to(kInt32).contiguous();
    for (int64_t i = 0; i < ns; ++i) g.zp.push_back(z.data_ptr<int32_t>()[i]);
    if (dt == kInt32) {
      for (int32_t v : g.zp) EMBER_CHECK(v == 0, op, " int32 codes need zero point 0, got ", v);
    }
  }
  set_range(g);
  return g;
}

void check_codes(const char* op, const char* which, const Tensor& x, const Grid& g) {
  EMBER_CHECK(x.defined(), op, " ", which, " is an undefined tensor");
  EMBER_CHECK(x.dtype() == g.dtype, op, " ", which, " holds ", x.dtype(), " codes but its zero point is ", g.dtype,
              "; they must be of one dtype");
}

// float -> code: saturate(rint(v) + zp) in float32 arithmetic.
inline int32_t to_code(float scaled, float zp, int32_t lo, int32_t hi) {
  const float q = std::nearbyint(scaled) + zp;
  if (!(q >= static_cast<float>(lo))) return lo;  // NaN saturates low
  if (q >= static_cast<float>(hi)) return hi;
  return static_cast<int32_t>(q);
}

void store(void* out, DType dt, int64_t i, int32_t v) {
  if (dt == kUInt8)
    static_cast<uint8_t*>(out)[i] = static_cast<uint8_t>(v);
  else
    static_cast<int8_t*>(out)[i] = static_cast<int8_t>(v);
}

// Codes as int32 (contiguous).
Tensor as_int32(const Tensor& x) { return x.to(kInt32).contiguous(); }

// The dim a per-axis grid runs along, or -1 for one scale (the axis is then not read, as in ONNX).
int64_t per_axis(const char* op, const Tensor& scale, int64_t axis, int64_t rank) {
  if (!scale.defined() || scale.numel() == 1) return -1;
  EMBER_CHECK(axis >= -rank && axis < rank, op, " axis ", axis, " of a per-axis scale is out of range for rank ",
              rank);
  return axis < 0 ? axis + rank : axis;
}

// Index of each element's channel along `axis` of a contiguous tensor of `sizes`.
struct AxisIndex {
  int64_t inner = 1, size = 1;
  int64_t operator()(int64_t i) const { return (i / inner) % size; }
};
AxisIndex axis_index(IntArrayRef sizes, int64_t axis) {
  AxisIndex a;
  if (sizes.empty()) return a;
  a.size = sizes[static_cast<size_t>(axis)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < sizes.size(); ++d) a.inner *= sizes[d];
  return a;
}

// uint8 codes from uint8 or int8 ones (Note [Full-range codes through the int8 GEMM]).
Tensor to_u8(const Tensor& x) {
  if (x.dtype() == kUInt8) return x.contiguous();
  const Tensor c = x.contiguous();
  Tensor u = empty(c.sizes(), TensorOptions(kUInt8));
  const int8_t* p = c.data_ptr<int8_t>();
  uint8_t* q = u.data_ptr<uint8_t>();
  for (int64_t i = 0; i < c.numel(); ++i) q[i] = static_cast<uint8_t>(static_cast<int32_t>(p[i]) + 128);
  return u;
}
// int8 weights from int8 or uint8 ones.
Tensor to_s8(const Tensor& w) {
  if (w.dtype() == kInt8) return w.contiguous();
  const Tensor c = w.contiguous();
  Tensor s = empty(c.sizes(), TensorOptions(kInt8));
  const uint8_t* p = c.data_ptr<uint8_t>();
  int8_t* q = s.data_ptr<int8_t>();
  for (int64_t i = 0; i < c.numel(); ++i) q[i] = static_cast<int8_t>(static_cast<int32_t>(p[i]) - 128);
  return s;
}

// c [M, N] = a [M, K] (uint8, any code) x b [N, K]^T (int8), exact.
void gemm_full(int64_t M, int64_t N, int64_t K, const uint8_t* a, const int8_t* b, int32_t* c) {
  if (K == 0) {
    std::fill(c, c + M * N, 0);
    return;
  }
  bool high = false;
  for (int64_t i = 0; i < M * K && !high; ++i) high = a[i] > 127;
  if (!high) {
    kernels::cpu::gemm_u8s8s32(M, N, K, a, b, c);
    return;
  }
  std::vector<uint8_t> lo(static_cast<size_t>(M * K)), hi(static_cast<size_t>(M * K));
  for (int64_t i = 0; i < M * K; ++i) {
    lo[static_cast<size_t>(i)] = a[i] & 127;
    hi[static_cast<size_t>(i)] = a[i] >> 7;
  }
  std::vector<int32_t> c2(static_cast<size_t>(M * N));
  kernels::cpu::gemm_u8s8s32(M, N, K, lo.data(), b, c);
  kernels::cpu::gemm_u8s8s32(M, N, K, hi.data(), b, c2.data());
  for (int64_t i = 0; i < M * N; ++i) c[i] += 128 * c2[static_cast<size_t>(i)];
}

// The integer product of rows a [M, K] (uint8, zero point az) and weight rows b [N, K] (int8,
// zero points bz per row), plus bias, requantized: out[m * ldo + n * stride_n] (Note [ONNX int8
// arithmetic]). b_zp_index: the weight zero point / scale of row n is at n + col0.
void product_requantize(int64_t M, int64_t N, int64_t K, const uint8_t* a, int32_t az, const int8_t* b,
                        const Grid& bg, int64_t col0, const int32_t* bias, const Grid& ag, const Grid& yg, void* out,
                        int64_t ldo, int64_t out_col0) {
  std::vector<int32_t> acc(static_cast<size_t>(M * N));
  gemm_full(M, N, K, a, b, acc.data());
  std::vector<int64_t> row_sum(static_cast<size_t>(N), 0);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t k = 0; k < K; ++k) row_sum[static_cast<size_t>(n)] += b[n * K + k];
  }
  bool any_bz = false;
  for (int64_t n = 0; n < N; ++n) any_bz = any_bz || bg.z(n + col0) != 0;
  std::vector<int64_t> col_sum(static_cast<size_t>(M), 0);
  if (any_bz) {
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t k = 0; k < K; ++k) col_sum[static_cast<size_t>(m)] += a[m * K + k];
    }
  }
  std::vector<float> mult(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) mult[static_cast<size_t>(n)] = (ag.s(0) * bg.s(n + col0)) / yg.s(0);
  const float yz = static_cast<float>(yg.z(0));
  parallel_for(0, M, std::max<int64_t>(1, 16384 / std::max<int64_t>(N, 1)), [&](int64_t m0, int64_t m1) {
    for (int64_t m = m0; m < m1; ++m) {
      for (int64_t n = 0; n < N; ++n) {
        const int64_t bz = bg.z(n + col0);
        int64_t t = static_cast<int64_t>(acc[static_cast<size_t>(m * N + n)]) -
                    static_cast<int64_t>(az) * row_sum[static_cast<size_t>(n)] - bz * col_sum[static_cast<size_t>(m)] +
                    K * static_cast<int64_t>(az) * bz;
        if (bias != nullptr) t += bias[n + col0];
        const float v = static_cast<float>(t) * mult[static_cast<size_t>(n)];
        store(out, yg.dtype, m * ldo + out_col0 + n, to_code(v, yz, yg.lo, yg.hi));
      }
    }
  });
}

void check_output_grid(const char* op, const Grid& y) {
  EMBER_CHECK(y.dtype == kUInt8 || y.dtype == kInt8, op, " y_zero_point must be uint8 or int8, got ", y.dtype);
}

}  // namespace

Tensor quantize_linear(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis) {
  constexpr const char* op = "[quant::quantize_linear]";
  OpScope scope("quant::quantize_linear");
  jit::detail::TraceOp trace("quantize_linear");
  EMBER_CHECK(x.defined(), op, " called with an undefined tensor");
  EMBER_CHECK(x.dtype() == kFloat32, op, " expects float32 values, got ", x.dtype(), " of sizes ", x.sizes(),
              "; convert it with .to(ember::kFloat32)");
  const int64_t ax = per_axis(op, scale, axis, x.dim());
  const Grid g = read_grid(op, "y", scale, zero_point, ax < 0 ? 0 : x.size(ax));
  EMBER_CHECK(g.dtype != kInt32, op, " y_zero_point must be uint8 or int8");
  const Tensor xc = x.detach().contiguous();
  Tensor out = empty(xc.sizes(), TensorOptions(g.dtype));
  const AxisIndex idx = axis_index(xc.sizes(), std::max<int64_t>(ax, 0));
  const float* xp = xc.data_ptr<float>();
  void* op_ = out.data_ptr();
  const bool per_channel = g.scale.size() > 1;
  parallel_for(0, xc.numel(), 65536, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t c = per_channel ? idx(i) : 0;
      store(op_, g.dtype, i, to_code(xp[i] / g.s(c), static_cast<float>(g.z(c)), g.lo, g.hi));
    }
  });
  if (trace.recording()) trace.record({x, scale, zero_point}, {{"axis", Value(axis)}}, out);
  return out;
}

Tensor dequantize_linear(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis) {
  constexpr const char* op = "[quant::dequantize_linear]";
  OpScope scope("quant::dequantize_linear");
  jit::detail::TraceOp trace("dequantize_linear");
  EMBER_CHECK(x.defined(), op, " called with an undefined tensor");
  EMBER_CHECK(x.dtype() == kUInt8 || x.dtype() == kInt8 || x.dtype() == kInt32, op,
              " expects uint8, int8 or int32 codes, got ", x.dtype(), " of sizes ", x.sizes());
  const int64_t ax = per_axis(op, scale, axis, x.dim());
  Grid g = read_grid(op, "x", scale, zero_point, ax < 0 ? 0 : x.size(ax), /*allow_int32=*/true);
  if (!zero_point.defined()) g.dtype = x.dtype();
  check_codes(op, "x", x, g);
  const Tensor q = as_int32(x.detach());
  Tensor out = empty(q.sizes(), TensorOptions(kFloat32));
  const AxisIndex idx = axis_index(q.sizes(), std::max<int64_t>(ax, 0));
  const int32_t* qp = q.data_ptr<int32_t>();
  float* yp = out.data_ptr<float>();
  const bool per_channel = g.scale.size() > 1;
  parallel_for(0, q.numel(), 65536, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t c = per_channel ? idx(i) : 0;
      yp[i] = static_cast<float>(static_cast<int64_t>(qp[i]) - g.z(c)) * g.s(c);
    }
  });
  if (trace.recording()) trace.record({x, scale, zero_point}, {{"axis", Value(axis)}}, out);
  return out;
}

Tensor qlinear_conv2d(const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point, const Tensor& w,
                      const Tensor& w_scale, const Tensor& w_zero_point, const Tensor& y_scale,
                      const Tensor& y_zero_point, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
                      IntArrayRef dilation, int64_t groups) {
  constexpr const char* op = "[quant::qlinear_conv2d]";
  OpScope scope("quant::qlinear_conv2d");
  jit::detail::TraceOp trace("qlinear_conv2d");
  EMBER_CHECK(x.defined() && x.dim() == 4, op, " expects x of sizes [N, C, H, W], got ",
              x.defined() ? x.sizes() : IntArrayRef{});
  EMBER_CHECK(w.defined() && w.dim() == 4 && (w.dtype() == kInt8 || w.dtype() == kUInt8), op,
              " expects int8 or uint8 weights of sizes [OC, C / groups, KH, KW]");
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t OC = w.size(0), Cg = w.size(1), KH = w.size(2), KW = w.size(3);
  const Grid xg = read_grid(op, "x", x_scale, x_zero_point, 0);
  const Grid wg = read_grid(op, "w", w_scale, w_zero_point, OC);
  const Grid yg = read_grid(op, "y", y_scale, y_zero_point, 0);
  check_codes(op, "x", x, xg);
  check_codes(op, "w", w, wg);
  check_output_grid(op, yg);
  auto two = [&](IntArrayRef v, const char* what, int64_t lo) {
    EMBER_CHECK(v.size() == 1 || v.size() == 2, op, " ", what, " must have one or two values, got ", v.size());
    std::vector<int64_t> r{v[0], v.size() == 1 ? v[0] : v[1]};
    for (int64_t e : r) EMBER_CHECK(e >= lo && e < (int64_t{1} << 31), op, " ", what, " ", v, " is out of range");
    return r;
  };
  const std::vector<int64_t> s = two(stride, "stride", 1), p = two(padding, "padding", 0),
                             d = two(dilation, "dilation", 1);
  EMBER_CHECK(groups > 0 && OC > 0 && Cg > 0 && KH > 0 && KW > 0 && OC % groups == 0 && C == Cg * groups, op,
              " x has ", C, " channels and w sizes ", w.sizes(), " with groups ", groups,
              ": channels must be w.size(1) * groups and out channels a multiple of groups");
  const int64_t K = KH * KW * Cg;
  EMBER_CHECK(K <= kMaxK, op, " C / groups * KH * KW = ", K, " exceeds ", kMaxK,
              ", the most the int32 sums of full-range codes hold");
  EMBER_CHECK(!bias.defined() || (bias.dtype() == kInt32 && bias.dim() == 1 && bias.size(0) == OC), op,
              " bias must be int32 of sizes [", OC, "]");
  auto out_size = [&](int64_t in, int64_t k, int64_t pad, int64_t st, int64_t dil) {
    const int64_t span = dil * (k - 1) + 1;
    EMBER_CHECK(in + 2 * pad >= span, op, " the input (", in, " plus padding ", pad,
                " on each side) is smaller than the dilated kernel (", span, ")");
    return (in + 2 * pad - span) / st + 1;
  };
  const int64_t OH = out_size(H, KH, p[0], s[0], d[0]), OW = out_size(W, KW, p[1], s[1], d[1]);
  EMBER_CHECK(static_cast<double>(N) * OH * OW * static_cast<double>(std::max(OC, K)) < 0x1p31, op,
              " the output of sizes [", N, ", ", OC, ", ", OH, ", ", OW, "] (or its im2col rows of ", K,
              " codes) is too large");
  Tensor out = empty({N, OH, OW, OC}, TensorOptions(yg.dtype));  // channels-last, permuted at the end
  const int64_t M = N * OH * OW, G = groups, OCg = OC / G;
  if (M > 0) {
    const Tensor xu = to_u8(x.detach()).permute({0, 2, 3, 1}).contiguous();
    const int32_t az = xg.z(0) + (x.dtype() == kInt8 ? 128 : 0);
    Grid wgs = wg;  // weights moved to int8
    if (w.dtype() == kUInt8) {
      for (int32_t& z : wgs.zp) z -= 128;
    }
    // Weight rows [OC, K] in (kh, kw, c) order, the order of the im2col rows.
    const Tensor wp = to_s8(w.detach()).permute({0, 2, 3, 1}).contiguous();
    const Tensor bc = bias.defined() ? bias.detach().contiguous() : Tensor();
    const uint8_t* xp = xu.data_ptr<uint8_t>();
    std::vector<uint8_t> cols(static_cast<size_t>(M * K));
    for (int64_t gi = 0; gi < G; ++gi) {
      parallel_for(0, M, std::max<int64_t>(1, 4096 / std::max<int64_t>(K, 1)), [&](int64_t m0, int64_t m1) {
        for (int64_t m = m0; m < m1; ++m) {
          const int64_t n = m / (OH * OW), oh = (m / OW) % OH, ow = m % OW;
          uint8_t* row = cols.data() + m * K;
          for (int64_t kh = 0; kh < KH; ++kh) {
            const int64_t ih = oh * s[0] - p[0] + kh * d[0];
            for (int64_t kw = 0; kw < KW; ++kw) {
              const int64_t iw = ow * s[1] - p[1] + kw * d[1];
              uint8_t* dst = row + (kh * KW + kw) * Cg;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
                std::memset(dst, az, static_cast<size_t>(Cg));
              } else {
                std::memcpy(dst, xp + ((n * H + ih) * W + iw) * C + gi * Cg, static_cast<size_t>(Cg));
              }
            }
          }
        }
      });
      product_requantize(M, OCg, K, cols.data(), az, wp.data_ptr<int8_t>() + gi * OCg * K, wgs, gi * OCg,
                         bc.defined() ? bc.data_ptr<int32_t>() : nullptr, xg, yg, out.data_ptr(), OC, gi * OCg);
    }
  }
  Tensor y = out.permute({0, 3, 1, 2});
  if (trace.recording()) {
    trace.record({x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, bias},
                 {{"stride", jit::detail::ints(stride)},
                  {"padding", jit::detail::ints(padding)},
                  {"dilation", jit::detail::ints(dilation)},
                  {"groups", Value(groups)}},
                 y);
  }
  return y;
}

Tensor qlinear_matmul(const Tensor& a, const Tensor& a_scale, const Tensor& a_zero_point, const Tensor& b,
                      const Tensor& b_scale, const Tensor& b_zero_point, const Tensor& y_scale,
                      const Tensor& y_zero_point) {
  constexpr const char* op = "[quant::qlinear_matmul]";
  OpScope scope("quant::qlinear_matmul");
  jit::detail::TraceOp trace("qlinear_matmul");
  EMBER_CHECK(a.defined() && a.dim() >= 1, op, " expects a of sizes [..., M, K] or [K]");
  EMBER_CHECK(b.defined() && b.dim() == 2 && (b.dtype() == kInt8 || b.dtype() == kUInt8), op,
              " expects b as int8 or uint8 of sizes [K, N] (ember reads a 2-D b only), got ",
              b.defined() ? b.sizes() : IntArrayRef{});
  const int64_t K = b.size(0), N = b.size(1);
  EMBER_CHECK(a.size(-1) == K, op, " a of sizes ", a.sizes(), " does not end in K = ", K, " (b of sizes ", b.sizes(),
              ")");
  EMBER_CHECK(K <= kMaxK, op, " K = ", K, " exceeds ", kMaxK, ", the most the int32 sums of full-range codes hold");
  const Grid ag = read_grid(op, "a", a_scale, a_zero_point, 0);
  const Grid bg = read_grid(op, "b", b_scale, b_zero_point, N);
  const Grid yg = read_grid(op, "y", y_scale, y_zero_point, 0);
  check_codes(op, "a", a, ag);
  check_codes(op, "b", b, bg);
  check_output_grid(op, yg);
  std::vector<int64_t> sizes = a.sizes().vec();
  sizes.back() = N;
  Tensor out = empty(sizes, TensorOptions(yg.dtype));
  const int64_t M = K > 0 ? a.numel() / K : out.numel() / std::max<int64_t>(N, 1);
  if (M > 0 && N > 0) {
    const Tensor au = to_u8(a.detach());
    const int32_t az = ag.z(0) + (a.dtype() == kInt8 ? 128 : 0);
    Grid bgs = bg;
    if (b.dtype() == kUInt8) {
      for (int32_t& z : bgs.zp) z -= 128;
    }
    const Tensor bt = to_s8(b.detach()).t().contiguous();  // [N, K]
    product_requantize(M, N, K, au.data_ptr<uint8_t>(), az, bt.data_ptr<int8_t>(), bgs, 0, nullptr, ag, yg,
                       out.data_ptr(), N, 0);
  }
  if (trace.recording()) {
    trace.record({a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point}, {}, out);
  }
  return out;
}

Tensor qlinear_add(const Tensor& a, const Tensor& a_scale, const Tensor& a_zero_point, const Tensor& b,
                   const Tensor& b_scale, const Tensor& b_zero_point, const Tensor& y_scale,
                   const Tensor& y_zero_point) {
  constexpr const char* op = "[quant::qlinear_add]";
  OpScope scope("quant::qlinear_add");
  jit::detail::TraceOp trace("qlinear_add");
  const Grid ag = read_grid(op, "a", a_scale, a_zero_point, 0);
  const Grid bg = read_grid(op, "b", b_scale, b_zero_point, 0);
  const Grid yg = read_grid(op, "y", y_scale, y_zero_point, 0);
  check_codes(op, "a", a, ag);
  check_codes(op, "b", b, bg);
  check_output_grid(op, yg);
  const DimVector shape = broadcast_shapes(a.sizes(), b.sizes());
  const Tensor qa = as_int32(a.detach().expand(shape)), qb = as_int32(b.detach().expand(shape));
  Tensor out = empty(shape, TensorOptions(yg.dtype));
  const int32_t* pa = qa.data_ptr<int32_t>();
  const int32_t* pb = qb.data_ptr<int32_t>();
  void* po = out.data_ptr();
  const float as = ag.s(0), bs = bg.s(0), ys = yg.s(0), yz = static_cast<float>(yg.z(0));
  parallel_for(0, out.numel(), 65536, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const float v = as * static_cast<float>(pa[i] - ag.z(0)) + bs * static_cast<float>(pb[i] - bg.z(0));
      store(po, yg.dtype, i, to_code(v / ys, yz, yg.lo, yg.hi));
    }
  });
  if (trace.recording()) {
    trace.record({a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point}, {}, out);
  }
  return out;
}

Tensor qlinear_concat(const std::vector<Tensor>& inputs, const std::vector<Tensor>& scales,
                      const std::vector<Tensor>& zero_points, const Tensor& y_scale, const Tensor& y_zero_point,
                      int64_t dim) {
  constexpr const char* op = "[quant::qlinear_concat]";
  OpScope scope("quant::qlinear_concat");
  jit::detail::TraceOp trace("qlinear_concat");
  EMBER_CHECK(!inputs.empty() && scales.size() == inputs.size() && zero_points.size() == inputs.size(), op,
              " needs one scale and one zero point per input (", inputs.size(), " inputs, ", scales.size(),
              " scales, ", zero_points.size(), " zero points)");
  const Grid yg = read_grid(op, "y", y_scale, y_zero_point, 0);
  check_output_grid(op, yg);
  std::vector<Tensor> moved;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Grid g = read_grid(op, "input", scales[k], zero_points[k], 0);
    check_codes(op, "input", inputs[k], g);
    const Tensor q = as_int32(inputs[k].detach());
    Tensor r = empty(q.sizes(), TensorOptions(yg.dtype));
    const int32_t* qp = q.data_ptr<int32_t>();
    for (int64_t i = 0; i < q.numel(); ++i) {
      const float v = g.s(0) * static_cast<float>(qp[i] - g.z(0));
      store(r.data_ptr(), yg.dtype, i, to_code(v / yg.s(0), static_cast<float>(yg.z(0)), yg.lo, yg.hi));
    }
    moved.push_back(r);
  }
  Tensor out = cat(moved, dim);
  if (trace.recording()) {
    std::vector<Tensor> ins{y_scale, y_zero_point};
    for (size_t k = 0; k < inputs.size(); ++k) {
      ins.push_back(inputs[k]);
      ins.push_back(scales[k]);
      ins.push_back(zero_points[k]);
    }
    trace.record(ins, {{"dim", Value(dim)}}, out);
  }
  return out;
}

namespace {

// y = saturate(rint((x_scale * float(S)) / float(n) / y_scale) + y_zp) for window sums S and
// divisors n (Note [ONNX int8 arithmetic]).
Tensor requantize_means(const std::vector<int64_t>& sums, const std::vector<int64_t>& counts, IntArrayRef sizes,
                        const Grid& xg, const Grid& yg) {
  Tensor out = empty(sizes, TensorOptions(yg.dtype));
  for (size_t i = 0; i < sums.size(); ++i) {
    const float mean = (xg.s(0) * static_cast<float>(sums[i])) / static_cast<float>(counts[i]);
    store(out.data_ptr(), yg.dtype, static_cast<int64_t>(i),
          to_code(mean / yg.s(0), static_cast<float>(yg.z(0)), yg.lo, yg.hi));
  }
  return out;
}

}  // namespace

Tensor qlinear_avg_pool2d(const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                          const Tensor& y_scale, const Tensor& y_zero_point, IntArrayRef kernel_size,
                          IntArrayRef stride, IntArrayRef padding, bool ceil_mode, bool count_include_pad) {
  constexpr const char* op = "[quant::qlinear_avg_pool2d]";
  OpScope scope("quant::qlinear_avg_pool2d");
  jit::detail::TraceOp trace("qlinear_avg_pool2d");
  EMBER_CHECK(x.defined() && x.dim() == 4, op, " expects codes of sizes [N, C, H, W]");
  const Grid xg = read_grid(op, "x", x_scale, x_zero_point, 0);
  const Grid yg = read_grid(op, "y", y_scale, y_zero_point, 0);
  check_codes(op, "x", x, xg);
  check_output_grid(op, yg);
  EMBER_CHECK(!(ceil_mode && count_include_pad), op,
              " ceil_mode with count_include_pad is not read: runtimes disagree on the divisor of a window that "
              "leaves the padding");
  auto two = [&](IntArrayRef v, const char* what, int64_t lo) {
    EMBER_CHECK(v.size() == 1 || v.size() == 2, op, " ", what, " must have one or two values, got ", v.size());
    std::vector<int64_t> r{v[0], v.size() == 1 ? v[0] : v[1]};
    for (int64_t e : r) EMBER_CHECK(e >= lo && e < (int64_t{1} << 31), op, " ", what, " ", v, " is out of range");
    return r;
  };
  const std::vector<int64_t> k = two(kernel_size, "kernel_size", 1);
  const std::vector<int64_t> s = stride.empty() ? k : two(stride, "stride", 1);
  const std::vector<int64_t> p = two(padding, "padding", 0);
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  EMBER_CHECK(p[0] <= k[0] / 2 && p[1] <= k[1] / 2, op, " padding ", padding,
              " must be at most half the kernel size ", kernel_size);
  auto out_size = [&](int64_t in, int64_t kk, int64_t pad, int64_t st) {
    EMBER_CHECK(in + 2 * pad >= kk, op, " the input (", in, " plus padding ", pad, ") is smaller than the kernel (",
                kk, ")");
    int64_t o = (in + 2 * pad - kk + (ceil_mode ? st - 1 : 0)) / st + 1;
    if (ceil_mode && (o - 1) * st >= in + pad) --o;  // the last window starts inside the input or left padding
    return o;
  };
  const int64_t OH = out_size(H, k[0], p[0], s[0]), OW = out_size(W, k[1], p[1], s[1]);
  EMBER_CHECK(static_cast<double>(N) * C * OH * OW * static_cast<double>(std::min(k[0], H)) *
                      static_cast<double>(std::min(k[1], W)) < 0x1p33,
              op, " the pooling of sizes ", x.sizes(), " with kernel ", kernel_size, " is too large");
  const Tensor q = as_int32(x.detach());
  const int32_t* qp = q.data_ptr<int32_t>();
  std::vector<int64_t> sums(static_cast<size_t>(N * C * OH * OW)), counts(sums.size());
  for (int64_t nc = 0; nc < N * C; ++nc) {
    for (int64_t oh = 0; oh < OH; ++oh) {
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t h0 = oh * s[0] - p[0], w0 = ow * s[1] - p[1];
        int64_t sum = 0, n = 0;
        for (int64_t ih = std::max<int64_t>(h0, 0); ih < std::min(h0 + k[0], H); ++ih) {
          for (int64_t iw = std::max<int64_t>(w0, 0); iw < std::min(w0 + k[1], W); ++iw) {
            sum += qp[(nc * H + ih) * W + iw] - xg.z(0);
            ++n;
          }
        }
        const size_t at = static_cast<size_t>((nc * OH + oh) * OW + ow);
        sums[at] = sum;
        counts[at] = count_include_pad ? k[0] * k[1] : std::max<int64_t>(n, 1);
      }
    }
  }
  Tensor out = requantize_means(sums, counts, {N, C, OH, OW}, xg, yg);
  if (trace.recording()) {
    trace.record({x, x_scale, x_zero_point, y_scale, y_zero_point},
                 {{"kernel_size", jit::detail::ints(kernel_size)},
                  {"stride", jit::detail::ints(stride)},
                  {"padding", jit::detail::ints(padding)},
                  {"ceil_mode", Value(ceil_mode)},
                  {"count_include_pad", Value(count_include_pad)}},
                 out);
  }
  return out;
}

Tensor qlinear_global_avg_pool2d(const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                                 const Tensor& y_scale, const Tensor& y_zero_point) {
  constexpr const char* op = "[quant::qlinear_global_avg_pool2d]";
  OpScope scope("quant::qlinear_global_avg_pool2d");
  jit::detail::TraceOp trace("qlinear_global_avg_pool2d");
  EMBER_CHECK(x.defined() && x.dim() == 4, op, " expects codes of sizes [N, C, H, W]");
  const Grid xg = read_grid(op, "x", x_scale, x_zero_point, 0);
  const Grid yg = read_grid(op, "y", y_scale, y_zero_point, 0);
  check_codes(op, "x", x, xg);
  check_output_grid(op, yg);
  const int64_t N = x.size(0), C = x.size(1), HW = x.size(2) * x.size(3);
  EMBER_CHECK(HW > 0, op, " the planes of x (sizes ", x.sizes(), ") are empty");
  const Tensor q = as_int32(x.detach());
  const int32_t* qp = q.data_ptr<int32_t>();
  std::vector<int64_t> sums(static_cast<size_t>(N * C), 0), counts(sums.size(), HW);
  for (int64_t nc = 0; nc < N * C; ++nc) {
    for (int64_t i = 0; i < HW; ++i) sums[static_cast<size_t>(nc)] += qp[nc * HW + i] - xg.z(0);
  }
  Tensor out = requantize_means(sums, counts, {N, C, 1, 1}, xg, yg);
  if (trace.recording()) trace.record({x, x_scale, x_zero_point, y_scale, y_zero_point}, {}, out);
  return out;
}

}  // namespace ember::quant
