// The quantized ops of static int8 inference (quantized_ops.h): quantize / dequantize,
// convolution (channels-last im2col + the int8 GEMM of kernels/cpu/qgemm.h), linear and
// max pooling of uint8 codes.
//
// Note [Quantized convolution]: the input codes are read channels-last ([N, H, W, C]), so the
// im2col row of one output pixel is KH * KW runs of Cg contiguous channel codes (the input's
// zero point where the window leaves the image, which is real 0, torch's zero padding); the
// weights are packed once to the same (kh, kw, c) order. Rows of output pixels are processed
// in chunks, in parallel: im2col of the chunk, the int8 GEMM (oneDNN runs single-threaded
// inside a parallel region), then requantization of the int32 sums straight into the
// channels-last output. Integer sums are exact and every output element is requantized by
// the same float operations, so results are bit-identical for any chunking, thread count
// and CPU level.

#include "ember/quant/quantized_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>

#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/core/parallel.h"
#include "ember/jit/trace_hook.h"
#include "ember/kernels/cpu/qgemm.h"
#include "ember/ops/creation.h"
#include "ember/quant/qkernels.h"

namespace ember::quant {

namespace detail {

namespace {

// Largest K whose int32 sums cannot overflow: K * 127 * 128 < 2^31.
constexpr int64_t kMaxK = 131072;

// "int8 of sizes [2, 3]" or "an undefined tensor", for messages.
std::string describe(const Tensor& t) {
  if (!t.defined()) return "an undefined tensor";
  std::ostringstream os;
  os << t.dtype() << " of sizes " << t.sizes();
  return os.str();
}

int64_t pick(IntArrayRef v, size_t i) { return v.size() == 1 ? v[0] : v[i]; }

void check_two(const char* op, IntArrayRef v, const char* what, bool allow_empty) {
  EMBER_CHECK((allow_empty && v.empty()) || v.size() == 1 || v.size() == 2, op, " ", what,
              " must have one or two values, got ", v.size());
}

// The input as channels-last codes: a contiguous uint8 [N, H, W, C] (the tensor itself when it
// already is one, seen through a permute).
Tensor nhwc_codes(const char* op, const Tensor& x4, QParams in) {
  if (x4.dtype() == kUInt8) {
    Tensor nhwc = x4.permute({0, 2, 3, 1}).contiguous();
    // Codes above 127 would saturate the 16-bit pair sums of CPUs without VNNI.
    const uint8_t* p = nhwc.data_ptr<uint8_t>();
    const int64_t n = nhwc.numel();
    uint8_t hi = 0;
    for (int64_t i = 0; i < n; ++i) hi = std::max(hi, p[i]);
    EMBER_CHECK(hi <= kActCodeMax, op, " uint8 input holds code ", static_cast<int>(hi),
                ", outside the activation codes [0, 127]; pass float32 values, or codes made by a quantized layer");
    return nhwc;
  }
  // float32: quantize in the input's own order (vectorized), then transpose the bytes.
  const Tensor xc = x4.contiguous();
  Tensor codes = empty(xc.sizes(), TensorOptions(kUInt8));
  const float* xp = xc.data_ptr<float>();
  uint8_t* cp = codes.data_ptr<uint8_t>();
  const float inv = 1.0f / in.scale, zp = static_cast<float>(in.zero_point);
  const int64_t n = xc.numel();
  parallel_for(0, n, 65536, [&](int64_t i0, int64_t i1) {
    kernels::cpu::qquantize_u8(xp + i0, i1 - i0, inv, zp, static_cast<float>(kActCodeMin),
                               static_cast<float>(kActCodeMax), cp + i0);
  });
  return codes.permute({0, 2, 3, 1}).contiguous();
}

int64_t conv_out_size(const char* op, int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil) {
  const int64_t span = dil * (k - 1) + 1;
  const int64_t padded = in + 2 * pad;
  EMBER_CHECK(padded >= span, op, " the input (", in, " plus padding ", pad, " on each side) is smaller than the ",
              "dilated kernel (", span, ")");
  return (padded - span) / stride + 1;
}

// The im2col rows [m0, m1) of output pixels (row m: (n, oh, ow)), K = KH * KW * Cg bytes each in
// (kh, kw, c) order, from channels-last codes x [N, H, W, C] (channels c0 .. c0 + Cg); pad where a
// tap leaves the image. Whole output rows at a time, so each tap's interior run needs no bounds
// checks.
void im2col_rows(const uint8_t* x, int64_t H, int64_t W, int64_t C, int64_t c0, int64_t Cg, int64_t OH, int64_t OW,
                 int64_t KH, int64_t KW, const ConvGeometry& g, uint8_t pad, int64_t m0, int64_t m1,
                 uint8_t* cols) {
  const int64_t K = KH * KW * Cg;
  for (int64_t m = m0; m < m1;) {
    const int64_t n = m / (OH * OW), p = m % (OH * OW), oh = p / OW, ow0 = p % OW;
    const int64_t ow1 = std::min(OW, ow0 + (m1 - m));
    uint8_t* base = cols + (m - m0) * K;
    for (int64_t kh = 0; kh < KH; ++kh) {
      const int64_t ih = oh * g.stride_h - g.pad_h + kh * g.dil_h;
      const bool row_in = ih >= 0 && ih < H;
      const uint8_t* src = row_in ? x + ((n * H + ih) * W) * C + c0 : nullptr;
      for (int64_t kw = 0; kw < KW; ++kw) {
        uint8_t* dst = base + (kh * KW + kw) * Cg;
        const int64_t off = kw * g.dil_w - g.pad_w;  // iw = ow * stride_w + off
        // Interior: the output columns [lo, hi) within [ow0, ow1) whose tap lies inside the row.
        int64_t lo = ow0, hi = ow0;
        if (row_in) {
          lo = std::min(ow1, std::max(ow0, off >= 0 ? int64_t{0} : (-off + g.stride_w - 1) / g.stride_w));
          hi = std::min(ow1, W - off > 0 ? (W - off - 1) / g.stride_w + 1 : int64_t{0});
          hi = std::max(hi, lo);
        }
        for (int64_t ow = ow0; ow < lo; ++ow) std::memset(dst + (ow - ow0) * K, pad, static_cast<size_t>(Cg));
        if (Cg == 1) {
          for (int64_t ow = lo; ow < hi; ++ow) dst[(ow - ow0) * K] = src[(ow * g.stride_w + off) * C];
        } else {
          for (int64_t ow = lo; ow < hi; ++ow) {
            std::memcpy(dst + (ow - ow0) * K, src + (ow * g.stride_w + off) * C, static_cast<size_t>(Cg));
          }
        }
        for (int64_t ow = std::max(hi, lo); ow < ow1; ++ow) {
          std::memset(dst + (ow - ow0) * K, pad, static_cast<size_t>(Cg));
        }
      }
    }
    m += ow1 - ow0;
  }
}

// o[c] = max(o[c], s[c]).
void max_into(uint8_t* __restrict o, const uint8_t* __restrict s, int64_t C) {
  for (int64_t c = 0; c < C; ++c) o[c] = o[c] > s[c] ? o[c] : s[c];
}

}  // namespace

ConvGeometry conv_geometry(const char* op, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                           int64_t groups) {
  check_two(op, stride, "stride", false);
  check_two(op, padding, "padding", false);
  check_two(op, dilation, "dilation", false);
  ConvGeometry g;
  g.stride_h = pick(stride, 0), g.stride_w = pick(stride, 1);
  g.pad_h = pick(padding, 0), g.pad_w = pick(padding, 1);
  g.dil_h = pick(dilation, 0), g.dil_w = pick(dilation, 1);
  g.groups = groups;
  constexpr int64_t kBig = int64_t{1} << 31;
  EMBER_CHECK(g.stride_h > 0 && g.stride_w > 0 && g.stride_h < kBig && g.stride_w < kBig, op,
              " stride must be positive, got ", stride);
  EMBER_CHECK(g.dil_h > 0 && g.dil_w > 0 && g.dil_h < kBig && g.dil_w < kBig, op, " dilation must be positive, got ",
              dilation);
  EMBER_CHECK(g.pad_h >= 0 && g.pad_w >= 0 && g.pad_h < kBig && g.pad_w < kBig, op,
              " padding must be non-negative, got ", padding);
  EMBER_CHECK(groups > 0 && groups < kBig, op, " groups must be positive, got ", groups);
  return g;
}

void check_scales_bias(const char* op, const Tensor& scales, const Tensor& bias, int64_t n) {
  EMBER_CHECK(scales.defined() && scales.dtype() == kFloat32 && scales.dim() == 1 && scales.size(0) == n, op,
              " weight scales must be a float32 tensor of sizes [", n, "], got ", describe(scales));
  const Tensor s = scales.contiguous();
  const float* sp = s.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) {
    EMBER_CHECK(sp[i] > 0.0f && std::isfinite(sp[i]), op, " weight scale ", i, " is ", sp[i],
                "; scales must be positive and finite");
  }
  EMBER_CHECK(!bias.defined() || (bias.dtype() == kFloat32 && bias.dim() == 1 && bias.size(0) == n), op,
              " bias must be undefined or a float32 tensor of sizes [", n, "], got ", describe(bias));
}

QParams act_qparams(const char* op, const char* which, double scale, int64_t zero_point) {
  const float s = static_cast<float>(scale);
  EMBER_CHECK(s > 0.0f && std::isfinite(s), op, " ", which, "_scale must be positive and finite (as float32), got ",
              scale);
  EMBER_CHECK(zero_point >= kActCodeMin && zero_point <= kActCodeMax, op, " ", which, "_zero_point ", zero_point,
              " is outside the activation codes [0, 127]");
  return QParams{s, static_cast<int32_t>(zero_point)};
}

std::vector<int32_t> row_sums(const Tensor& qweight) {
  const int64_t N = qweight.size(0), K = qweight.numel() / std::max<int64_t>(N, 1);
  std::vector<int32_t> sums(static_cast<size_t>(N), 0);
  const int8_t* q = qweight.data_ptr<int8_t>();
  for (int64_t n = 0; n < N; ++n) {
    int32_t s = 0;
    for (int64_t k = 0; k < K; ++k) s += q[n * K + k];
    sums[static_cast<size_t>(n)] = s;
  }
  return sums;
}

PackedConv pack_conv_weight(const char* op, const Tensor& qweight, int64_t groups) {
  EMBER_CHECK(qweight.defined() && qweight.dtype() == kInt8 && qweight.dim() == 4, op,
              " qweight must be an int8 tensor of sizes [out_channels, in_channels / groups, kH, kW], got ",
              describe(qweight));
  PackedConv p;
  p.out_channels = qweight.size(0);
  p.group_channels = qweight.size(1);
  p.kernel_h = qweight.size(2);
  p.kernel_w = qweight.size(3);
  EMBER_CHECK(p.out_channels > 0 && p.group_channels > 0 && p.kernel_h > 0 && p.kernel_w > 0, op,
              " qweight of sizes ", qweight.sizes(), " has an empty dim");
  EMBER_CHECK(p.out_channels % groups == 0, op, " out_channels ", p.out_channels, " is not divisible by groups ",
              groups);
  EMBER_CHECK(p.k() <= kMaxK, op, " in_channels / groups * kH * kW = ", p.k(), " exceeds ", kMaxK,
              ", the most an int32 sum of int8 products holds");
  p.packed = qweight.permute({0, 2, 3, 1}).contiguous().reshape({p.out_channels, p.k()});
  p.row_sums = row_sums(p.packed);
  return p;
}

Tensor conv2d(const char* op, const Tensor& input, const PackedConv& w, const Tensor& scales, const Tensor& bias,
              const ConvGeometry& g, QParams in, QParams out, bool relu, bool codes_out) {
  EMBER_CHECK(input.defined(), op, " called with an undefined tensor");
  EMBER_CHECK(input.dtype() == kFloat32 || input.dtype() == kUInt8, op, " expects float32 values or uint8 codes, got ",
              input.dtype(), " of sizes ", input.sizes(), "; convert it with .to(ember::kFloat32)");
  EMBER_CHECK(input.dim() == 4 || input.dim() == 3, op, " expects an input of sizes [N, C, H, W] or [C, H, W], got ",
              input.sizes());
  const bool batched = input.dim() == 4;
  const Tensor x4 = batched ? input : input.unsqueeze(0);
  const int64_t N = x4.size(0), C = x4.size(1), H = x4.size(2), W = x4.size(3);
  const int64_t OC = w.out_channels, Cg = w.group_channels, KH = w.kernel_h, KW = w.kernel_w;
  EMBER_CHECK(C == Cg * g.groups, op, " input of sizes ", input.sizes(), " has ", C, " channels; the weights expect ",
              Cg * g.groups, " (in_channels / groups = ", Cg, ", groups = ", g.groups, ")");
  EMBER_CHECK(OC % g.groups == 0, op, " out_channels ", OC, " is not divisible by groups ", g.groups);
  check_scales_bias(op, scales, bias, OC);
  const int64_t OH = conv_out_size(op, H, KH, g.pad_h, g.stride_h, g.dil_h);
  const int64_t OW = conv_out_size(op, W, KW, g.pad_w, g.stride_w, g.dil_w);
  EMBER_CHECK(static_cast<double>(N) * static_cast<double>(OH) * static_cast<double>(OW) *
                      static_cast<double>(std::max(OC, C)) < 0x1p50,
              op, " the output of sizes [", N, ", ", OC, ", ", OH, ", ", OW, "] is too large");
  const int64_t M = N * OH * OW, K = w.k(), G = g.groups, OCg = OC / G;

  Tensor result = empty({N, OH, OW, OC}, TensorOptions(codes_out ? kUInt8 : kFloat32));
  if (M > 0) {
    const Tensor x = nhwc_codes(op, x4, in);
    const uint8_t* xp = x.data_ptr<uint8_t>();
    const int8_t* wp = w.packed.data_ptr<int8_t>();
    const Tensor sc = scales.contiguous();
    const Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
    std::vector<float> col_scale(static_cast<size_t>(OC));
    std::vector<int32_t> corr(static_cast<size_t>(OC));
    for (int64_t n = 0; n < OC; ++n) {
      col_scale[static_cast<size_t>(n)] = in.scale * sc.data_ptr<float>()[n];
      corr[static_cast<size_t>(n)] = in.zero_point * w.row_sums[static_cast<size_t>(n)];
    }
    const float* bp = bc.defined() ? bc.data_ptr<float>() : nullptr;
    const float inv_out = 1.0f / out.scale, zp_out = static_cast<float>(out.zero_point);
    const float qmin = relu ? zp_out : static_cast<float>(kActCodeMin), qmax = static_cast<float>(kActCodeMax);
    uint8_t* codes = codes_out ? result.data_ptr<uint8_t>() : nullptr;
    float* values = codes_out ? nullptr : result.data_ptr<float>();
    const bool direct = KH == 1 && KW == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 && g.pad_w == 0 &&
                        G == 1;  // 1x1: the input rows are the columns
    const uint8_t pad_code = static_cast<uint8_t>(in.zero_point);
    // Chunks of output pixels whose columns and int32 sums (about 256 KB each) stay in
    // the core's caches between the im2col, the GEMM and the requantization; at least two chunks
    // per thread when there are enough rows. Any chunking gives the same bits (Note [Quantized
    // convolution]).
    const int64_t threads = std::max<int64_t>(1, get_num_threads());
    int64_t rows = std::min((int64_t{1} << 18) / std::max<int64_t>(K, 1), (int64_t{1} << 16) / std::max<int64_t>(OCg, 1));
    rows = std::max<int64_t>(16, std::min(rows, (M + 2 * threads - 1) / (2 * threads)));
    parallel_for(0, M, rows, [&](int64_t m0, int64_t m1) {
      const int64_t R = m1 - m0;
      thread_local std::vector<uint8_t> cols_buf;
      thread_local std::vector<int32_t> acc_buf;
      thread_local std::vector<uint8_t> code_buf;
      thread_local std::vector<float> value_buf;
      acc_buf.resize(static_cast<size_t>(R * OCg));
      for (int64_t gi = 0; gi < G; ++gi) {
        const uint8_t* a = nullptr;
        if (direct) {
          a = xp + m0 * C;
        } else {
          cols_buf.resize(static_cast<size_t>(R * K));
          im2col_rows(xp, H, W, C, gi * Cg, Cg, OH, OW, KH, KW, g, pad_code, m0, m1, cols_buf.data());
          a = cols_buf.data();
        }
        const int64_t n0 = gi * OCg;
        kernels::cpu::gemm_u8s8s32(R, OCg, K, a, wp + n0 * K, acc_buf.data());
        const float* gb = bp != nullptr ? bp + n0 : nullptr;
        if (G == 1) {
          kernels::cpu::qrequantize_rows(acc_buf.data(), R, OC, corr.data(), col_scale.data(), gb, inv_out, zp_out,
                                         qmin, qmax, codes ? codes + m0 * OC : nullptr,
                                         values ? values + m0 * OC : nullptr, out.scale);
          continue;
        }
        // Groups: requantize this group's channels, then place them in the output rows.
        if (codes) code_buf.resize(static_cast<size_t>(R * OCg));
        if (values) value_buf.resize(static_cast<size_t>(R * OCg));
        kernels::cpu::qrequantize_rows(acc_buf.data(), R, OCg, corr.data() + n0, col_scale.data() + n0, gb, inv_out,
                                       zp_out, qmin, qmax, codes ? code_buf.data() : nullptr,
                                       values ? value_buf.data() : nullptr, out.scale);
        for (int64_t r = 0; r < R; ++r) {
          if (codes) std::memcpy(codes + (m0 + r) * OC + n0, code_buf.data() + r * OCg, static_cast<size_t>(OCg));
          if (values) {
            std::memcpy(values + (m0 + r) * OC + n0, value_buf.data() + r * OCg, static_cast<size_t>(OCg) * 4);
          }
        }
      }
    });
  }
  Tensor y = result.permute({0, 3, 1, 2});  // [N, OC, OH, OW], channels-last strides
  if (!codes_out) y = y.contiguous();
  return batched ? y : y.squeeze(0);
}

Tensor linear(const char* op, const Tensor& input, const Tensor& qweight, const int32_t* sums, const Tensor& scales,
              const Tensor& bias, QParams in, QParams out, bool relu, bool codes_out) {
  const int64_t N = qweight.size(0), K = qweight.size(1);
  EMBER_CHECK(input.defined(), op, " called with an undefined tensor");
  EMBER_CHECK(input.dtype() == kFloat32 || input.dtype() == kUInt8, op, " expects float32 values or uint8 codes, got ",
              input.dtype(), " of sizes ", input.sizes(), "; convert it with .to(ember::kFloat32)");
  EMBER_CHECK(input.dim() >= 1 && input.size(-1) == K, op, " input of sizes ", input.sizes(),
              " does not end in in_features=", K, " (expected [..., ", K, "])");
  EMBER_CHECK(K <= kMaxK, op, " in_features ", K, " exceeds ", kMaxK, ", the most an int32 sum of int8 products holds");
  std::vector<int64_t> out_sizes = input.sizes().vec();
  out_sizes.back() = N;
  Tensor result = empty(out_sizes, TensorOptions(codes_out ? kUInt8 : kFloat32));
  const int64_t M = K > 0 ? input.numel() / K : result.numel() / std::max<int64_t>(N, 1);
  if (M == 0 || N == 0) return result;

  const Tensor x = input.contiguous();
  Tensor qx_owner;
  const uint8_t* qx = nullptr;
  if (x.dtype() == kUInt8) {
    qx = x.data_ptr<uint8_t>();
    uint8_t hi = 0;
    for (int64_t i = 0; i < M * K; ++i) hi = std::max(hi, qx[i]);
    EMBER_CHECK(hi <= kActCodeMax, op, " uint8 input holds code ", static_cast<int>(hi),
                ", outside the activation codes [0, 127]; pass float32 values, or codes made by a quantized layer");
  } else {
    qx_owner = empty({M, K}, TensorOptions(kUInt8));
    uint8_t* q = qx_owner.data_ptr<uint8_t>();
    const float* xp = x.data_ptr<float>();
    const float inv_in = 1.0f / in.scale, zp_in = static_cast<float>(in.zero_point);
    const int64_t rows = std::max<int64_t>(1, 16384 / std::max<int64_t>(K, 1));
    parallel_for(0, M, rows, [&](int64_t r0, int64_t r1) {
      kernels::cpu::qquantize_u8(xp + r0 * K, (r1 - r0) * K, inv_in, zp_in, static_cast<float>(kActCodeMin),
                                 static_cast<float>(kActCodeMax), q + r0 * K);
    });
    qx = q;
  }
  thread_local std::vector<int32_t> acc_buf;
  acc_buf.resize(static_cast<size_t>(M * N));
  int32_t* acc = acc_buf.data();
  if (K > 0) {
    kernels::cpu::gemm_u8s8s32(M, N, K, qx, qweight.data_ptr<int8_t>(), acc);
  } else {
    std::fill(acc, acc + M * N, 0);
  }
  const Tensor sc = scales.contiguous();
  const float* ws = sc.data_ptr<float>();
  std::vector<float> col_scale(static_cast<size_t>(N));
  std::vector<int32_t> corr(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    col_scale[static_cast<size_t>(n)] = in.scale * ws[n];
    corr[static_cast<size_t>(n)] = in.zero_point * sums[n];
  }
  const Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
  const float* b = bc.defined() ? bc.data_ptr<float>() : nullptr;
  const float inv_out = 1.0f / out.scale, zp_out = static_cast<float>(out.zero_point);
  const float qmin = relu ? zp_out : static_cast<float>(kActCodeMin), qmax = static_cast<float>(kActCodeMax);
  uint8_t* codes = codes_out ? result.data_ptr<uint8_t>() : nullptr;
  float* values = codes_out ? nullptr : result.data_ptr<float>();
  const int64_t rows = std::max<int64_t>(1, 16384 / N);
  parallel_for(0, M, rows, [&](int64_t r0, int64_t r1) {
    kernels::cpu::qrequantize_rows(acc + r0 * N, r1 - r0, N, corr.data(), col_scale.data(), b, inv_out, zp_out, qmin,
                                   qmax, codes ? codes + r0 * N : nullptr, values ? values + r0 * N : nullptr,
                                   out.scale);
  });
  return result;
}

Tensor max_pool2d(const char* op, const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  EMBER_CHECK(input.defined(), op, " called with an undefined tensor");
  EMBER_CHECK(input.dtype() == kUInt8, op, " expects uint8 codes (from a quantized layer), got ", input.dtype(),
              " of sizes ", input.sizes(), "; use ember::max_pool2d for float tensors");
  EMBER_CHECK(input.dim() == 4 || input.dim() == 3, op, " expects an input of sizes [N, C, H, W] or [C, H, W], got ",
              input.sizes());
  check_two(op, kernel_size, "kernel_size", false);
  check_two(op, stride, "stride", true);
  check_two(op, padding, "padding", false);
  check_two(op, dilation, "dilation", false);
  const int64_t kh = pick(kernel_size, 0), kw = pick(kernel_size, 1);
  const int64_t sh = stride.empty() ? kh : pick(stride, 0), sw = stride.empty() ? kw : pick(stride, 1);
  const int64_t ph = pick(padding, 0), pw = pick(padding, 1), dh = pick(dilation, 0), dw = pick(dilation, 1);
  constexpr int64_t kBig = int64_t{1} << 31;
  EMBER_CHECK(kh > 0 && kw > 0 && kh < kBig && kw < kBig, op, " kernel_size must be positive, got ", kernel_size);
  EMBER_CHECK(sh > 0 && sw > 0 && sh < kBig && sw < kBig, op, " stride must be positive, got ", stride);
  EMBER_CHECK(dh > 0 && dw > 0 && dh < kBig && dw < kBig, op, " dilation must be positive, got ", dilation);
  EMBER_CHECK(ph >= 0 && pw >= 0 && ph <= kh / 2 && pw <= kw / 2, op,
              " padding must be non-negative and at most half the kernel size, got padding ", padding,
              " for kernel_size ", kernel_size);
  const bool batched = input.dim() == 4;
  const Tensor x4 = batched ? input : input.unsqueeze(0);
  const int64_t N = x4.size(0), C = x4.size(1), H = x4.size(2), W = x4.size(3);
  // PyTorch's pooling output size: with ceil_mode the last window must start inside the
  // input or the left padding.
  auto out_size = [&](int64_t in, int64_t k, int64_t p, int64_t s, int64_t d) {
    const int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
    if (ceil_mode && (o - 1) * s >= in + p) --o;
    return o;
  };
  const int64_t OH = out_size(H, kh, ph, sh, dh), OW = out_size(W, kw, pw, sw, dw);
  EMBER_CHECK(OH > 0 && OW > 0, op, " input of sizes ", input.sizes(), " is too small for kernel_size ", kernel_size,
              " (output ", OH, "x", OW, ")");
  Tensor result = empty({N, OH, OW, C}, TensorOptions(kUInt8));
  if (result.numel() > 0) {
    const Tensor x = x4.permute({0, 2, 3, 1}).contiguous();
    const uint8_t* xp = x.data_ptr<uint8_t>();
    uint8_t* yp = result.data_ptr<uint8_t>();
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(OW * C, 1));
    parallel_for(0, N * OH, grain, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / OH, oh = r % OH;
        for (int64_t ow = 0; ow < OW; ++ow) {
          uint8_t* o = yp + ((n * OH + oh) * OW + ow) * C;
          bool first = true;
          for (int64_t i = 0; i < kh; ++i) {
            const int64_t ih = oh * sh - ph + i * dh;
            if (ih < 0 || ih >= H) continue;
            for (int64_t j = 0; j < kw; ++j) {
              const int64_t iw = ow * sw - pw + j * dw;
              if (iw < 0 || iw >= W) continue;
              const uint8_t* s = xp + ((n * H + ih) * W + iw) * C;
              if (first) {
                std::memcpy(o, s, static_cast<size_t>(C));
                first = false;
              } else {
                max_into(o, s, C);
              }
            }
          }
          if (first) std::memset(o, 0, static_cast<size_t>(C));  // a window with no input element
        }
      }
    });
  }
  Tensor y = result.permute({0, 3, 1, 2});
  return batched ? y : y.squeeze(0);
}

}  // namespace detail

// ---- the public ops ----

namespace {

Value dtype_attr(DType dt) { return jit::detail::dtype_value(dt); }

void check_output_dtype(const char* op, DType dt) {
  EMBER_CHECK(dt == kUInt8 || dt == kFloat32, op, " output_dtype must be ember::kUInt8 (codes) or ember::kFloat32 ",
              "(their values), got ", dt);
}

}  // namespace

Tensor quantize_per_tensor(const Tensor& input, double scale, int64_t zero_point, int64_t quant_min,
                           int64_t quant_max) {
  constexpr const char* op = "[quant::quantize_per_tensor]";
  OpScope scope("quant::quantize_per_tensor", {&input});
  jit::detail::TraceOp trace("quantize_per_tensor");
  EMBER_CHECK(input.defined(), op, " called with an undefined tensor");
  EMBER_CHECK(input.dtype() == kFloat32, op, " expects a float32 tensor, got ", input.dtype(), " of sizes ",
              input.sizes(), "; convert it with .to(ember::kFloat32)");
  EMBER_CHECK(0 <= quant_min && quant_min <= zero_point && zero_point <= quant_max && quant_max <= 255, op,
              " needs 0 <= quant_min <= zero_point <= quant_max <= 255, got quant_min ", quant_min, ", zero_point ",
              zero_point, ", quant_max ", quant_max);
  const float s = static_cast<float>(scale);
  EMBER_CHECK(s > 0.0f && std::isfinite(s), op, " scale must be positive and finite (as float32), got ", scale);
  const Tensor x = input.detach().contiguous();
  Tensor out = empty(x.sizes(), TensorOptions(kUInt8));
  const float* xp = x.data_ptr<float>();
  uint8_t* op_ = out.data_ptr<uint8_t>();
  const float inv = 1.0f / s, zp = static_cast<float>(zero_point);
  parallel_for(0, x.numel(), 65536, [&](int64_t i0, int64_t i1) {
    kernels::cpu::qquantize_u8(xp + i0, i1 - i0, inv, zp, static_cast<float>(quant_min),
                               static_cast<float>(quant_max), op_ + i0);
  });
  if (trace.recording()) {
    trace.record({input},
                 {{"scale", Value(scale)},
                  {"zero_point", Value(zero_point)},
                  {"quant_min", Value(quant_min)},
                  {"quant_max", Value(quant_max)}},
                 out);
  }
  return out;
}

Tensor dequantize_per_tensor(const Tensor& codes, double scale, int64_t zero_point) {
  constexpr const char* op = "[quant::dequantize_per_tensor]";
  OpScope scope("quant::dequantize_per_tensor", {&codes});
  jit::detail::TraceOp trace("dequantize_per_tensor");
  EMBER_CHECK(codes.defined(), op, " called with an undefined tensor");
  EMBER_CHECK(codes.dtype() == kUInt8, op, " expects uint8 codes, got ", codes.dtype(), " of sizes ", codes.sizes());
  EMBER_CHECK(zero_point >= 0 && zero_point <= 255, op, " zero_point ", zero_point, " is outside [0, 255]");
  const float s = static_cast<float>(scale);
  EMBER_CHECK(s > 0.0f && std::isfinite(s), op, " scale must be positive and finite (as float32), got ", scale);
  const Tensor q = codes.contiguous();
  Tensor out = empty(q.sizes(), TensorOptions(kFloat32));
  const uint8_t* qp = q.data_ptr<uint8_t>();
  float* yp = out.data_ptr<float>();
  const float zp = static_cast<float>(zero_point);
  parallel_for(0, q.numel(), 65536, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) yp[i] = (static_cast<float>(qp[i]) - zp) * s;
  });
  if (trace.recording()) {
    trace.record({codes}, {{"scale", Value(scale)}, {"zero_point", Value(zero_point)}}, out);
  }
  return out;
}

Tensor quantized_conv2d(const Tensor& input, const Tensor& qweight, const Tensor& weight_scales, const Tensor& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups,
                        double input_scale, int64_t input_zero_point, double output_scale,
                        int64_t output_zero_point, bool relu, DType output_dtype) {
  constexpr const char* op = "[quant::quantized_conv2d]";
  OpScope scope("quant::quantized_conv2d", {&input, &qweight, &weight_scales, &bias});
  jit::detail::TraceOp trace("quantized_conv2d");
  check_output_dtype(op, output_dtype);
  const detail::ConvGeometry g = detail::conv_geometry(op, stride, padding, dilation, groups);
  const QParams in = detail::act_qparams(op, "input", input_scale, input_zero_point);
  const QParams out = detail::act_qparams(op, "output", output_scale, output_zero_point);
  const detail::PackedConv w = detail::pack_conv_weight(op, qweight, groups);
  Tensor y = detail::conv2d(op, input.detach(), w, weight_scales, bias, g, in, out, relu, output_dtype == kUInt8);
  if (trace.recording()) {
    trace.record({input, qweight, weight_scales, bias},
                 {{"stride", jit::detail::ints(stride)},
                  {"padding", jit::detail::ints(padding)},
                  {"dilation", jit::detail::ints(dilation)},
                  {"groups", Value(groups)},
                  {"input_scale", Value(input_scale)},
                  {"input_zero_point", Value(input_zero_point)},
                  {"output_scale", Value(output_scale)},
                  {"output_zero_point", Value(output_zero_point)},
                  {"relu", Value(relu)},
                  {"output_dtype", dtype_attr(output_dtype)}},
                 y);
  }
  return y;
}

Tensor quantized_linear(const Tensor& input, const Tensor& qweight, const Tensor& weight_scales, const Tensor& bias,
                        double input_scale, int64_t input_zero_point, double output_scale, int64_t output_zero_point,
                        bool relu, DType output_dtype) {
  constexpr const char* op = "[quant::quantized_linear]";
  OpScope scope("quant::quantized_linear", {&input, &qweight, &weight_scales, &bias});
  jit::detail::TraceOp trace("quantized_linear");
  check_output_dtype(op, output_dtype);
  EMBER_CHECK(qweight.defined() && qweight.dtype() == kInt8 && qweight.dim() == 2, op,
              " qweight must be an int8 tensor of sizes [out_features, in_features], got ",
              detail::describe(qweight));
  detail::check_scales_bias(op, weight_scales, bias, qweight.size(0));
  const QParams in = detail::act_qparams(op, "input", input_scale, input_zero_point);
  const QParams out = detail::act_qparams(op, "output", output_scale, output_zero_point);
  const Tensor w = qweight.contiguous();
  const std::vector<int32_t> sums = detail::row_sums(w);
  Tensor y = detail::linear(op, input.detach(), w, sums.data(), weight_scales, bias, in, out, relu,
                            output_dtype == kUInt8);
  if (trace.recording()) {
    trace.record({input, qweight, weight_scales, bias},
                 {{"input_scale", Value(input_scale)},
                  {"input_zero_point", Value(input_zero_point)},
                  {"output_scale", Value(output_scale)},
                  {"output_zero_point", Value(output_zero_point)},
                  {"relu", Value(relu)},
                  {"output_dtype", dtype_attr(output_dtype)}},
                 y);
  }
  return y;
}

Tensor quantized_max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                            IntArrayRef dilation, bool ceil_mode) {
  OpScope scope("quant::quantized_max_pool2d", {&input});
  jit::detail::TraceOp trace("quantized_max_pool2d");
  Tensor y = detail::max_pool2d("[quant::quantized_max_pool2d]", input, kernel_size, stride, padding, dilation,
                                ceil_mode);
  if (trace.recording()) {
    trace.record({input},
                 {{"kernel_size", jit::detail::ints(kernel_size)},
                  {"stride", jit::detail::ints(stride)},
                  {"padding", jit::detail::ints(padding)},
                  {"dilation", jit::detail::ints(dilation)},
                  {"ceil_mode", Value(ceil_mode)}},
                 y);
  }
  return y;
}

}  // namespace ember::quant
