// Average pooling of uint8 activation codes (quantized_ops.h): the output stays on the input's
// grid, so only codes are summed. Each output element is round_half_even(float(S) * (1 / n)) +
// zero_point with S the exact int32 sum of (q - zero_point) over the window and n its divisor:
// torch 1.13's quantized avg_pool2d / adaptive_avg_pool2d with equal input and output
// parameters compute the same (tests/quant/torch_parity.cpp compares them code for code).
// Codes are read channels-last, one window row of C contiguous channels at a time; rows of
// output pixels run in parallel and each element is computed the same way whatever the
// chunking, so results do not depend on the thread count.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/core/parallel.h"
#include "ember/jit/trace_hook.h"
#include "ember/ops/creation.h"
#include "ember/quant/quantized_ops.h"

namespace ember::quant {

namespace {

int64_t pick(IntArrayRef v, size_t i) { return v.size() == 1 ? v[0] : v[i]; }

void check_two(const char* op, IntArrayRef v, const char* what, bool allow_empty) {
  EMBER_CHECK((allow_empty && v.empty()) || v.size() == 1 || v.size() == 2, op, " ", what,
              " must have one or two values, got ", v.size());
}

// The input as a contiguous uint8 [N, H, W, C] and its 4-D sizes; errors name op.
struct CodesNhwc {
  Tensor x;
  int64_t N, C, H, W;
  bool batched;
};

CodesNhwc codes_nhwc(const char* op, const Tensor& input, const char* float_fix) {
  EMBER_CHECK(input.defined(), op, " called with an undefined tensor");
  EMBER_CHECK(input.dtype() == kUInt8, op, " expects uint8 codes (from a quantized layer), got ", input.dtype(),
              " of sizes ", input.sizes(), "; use ", float_fix, " for float tensors");
  EMBER_CHECK(input.dim() == 4 || input.dim() == 3, op, " expects an input of sizes [N, C, H, W] or [C, H, W], got ",
              input.sizes());
  const bool batched = input.dim() == 4;
  const Tensor x4 = batched ? input : input.unsqueeze(0);
  return {x4.permute({0, 2, 3, 1}).contiguous(), x4.size(0), x4.size(1), x4.size(2), x4.size(3), batched};
}

// [N, OH, OW, C] codes -> [N, C, OH, OW] with channels-last strides (squeezed when unbatched).
Tensor nchw_view(const Tensor& nhwc, bool batched) {
  Tensor y = nhwc.permute({0, 3, 1, 2});
  return batched ? y : y.squeeze(0);
}

// One output pixel: sums (q - zp) over rows [h0, h1) x columns [w0, w1) of channels-last codes
// into acc (C sums; int64, so that no window is too large), then writes round_half_even(acc * inv) + zp clamped to the codes.
void pool_pixel(const uint8_t* img, int64_t W, int64_t C, int64_t h0, int64_t h1, int64_t w0, int64_t w1, int32_t zp,
                float inv, int64_t* acc, uint8_t* out) {
  std::fill(acc, acc + C, 0);
  for (int64_t h = h0; h < h1; ++h) {
    for (int64_t w = w0; w < w1; ++w) {
      const uint8_t* s = img + (h * W + w) * C;
      for (int64_t c = 0; c < C; ++c) acc[c] += s[c];
    }
  }
  const int64_t shift = zp * (h1 - h0) * (w1 - w0);
  for (int64_t c = 0; c < C; ++c) {
    const float v = std::nearbyint(static_cast<float>(acc[c] - shift) * inv) + static_cast<float>(zp);
    out[c] = static_cast<uint8_t>(std::min(std::max(v, static_cast<float>(kActCodeMin)), static_cast<float>(kActCodeMax)));
  }
}

Tensor avg_pool_impl(const char* op, const Tensor& input, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                     int64_t pw, bool ceil_mode, bool count_include_pad, int64_t divisor, int32_t zp) {
  const CodesNhwc in = codes_nhwc(op, input, "ember::avg_pool2d");
  auto out_size = [&](int64_t size, int64_t k, int64_t p, int64_t s) {
    const int64_t num = size + 2 * p - k + (ceil_mode ? s - 1 : 0);
    int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
    if (ceil_mode && (o - 1) * s >= size + p) --o;
    return o;
  };
  const int64_t OH = out_size(in.H, kh, ph, sh), OW = out_size(in.W, kw, pw, sw);
  EMBER_CHECK(OH > 0 && OW > 0, op, " input of sizes ", input.sizes(), " is too small for kernel_size [", kh, ", ", kw,
              "] (output ", OH, "x", OW, ")");
  Tensor result = empty({in.N, OH, OW, in.C}, TensorOptions(kUInt8));
  if (result.numel() == 0) return nchw_view(result, in.batched);
  const uint8_t* xp = in.x.data_ptr<uint8_t>();
  uint8_t* yp = result.data_ptr<uint8_t>();
  const int64_t H = in.H, W = in.W, C = in.C;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(OW * C, 1));
  parallel_for(0, in.N * OH, grain, [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> acc(static_cast<size_t>(C));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / OH, oh = r % OH;
      const int64_t h0 = oh * sh - ph, h1 = std::min(h0 + kh, H + ph);
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t w0 = ow * sw - pw, w1 = std::min(w0 + kw, W + pw);
        const int64_t hc0 = std::max<int64_t>(h0, 0), hc1 = std::min(h1, H);
        const int64_t wc0 = std::max<int64_t>(w0, 0), wc1 = std::min(w1, W);
        int64_t count = divisor;
        if (count == 0) count = count_include_pad ? (h1 - h0) * (w1 - w0) : (hc1 - hc0) * (wc1 - wc0);
        uint8_t* o = yp + ((n * OH + oh) * OW + ow) * C;
        if (count == 0 || hc0 >= hc1 || wc0 >= wc1) {
          std::memset(o, static_cast<int>(zp), static_cast<size_t>(C));  // a window of padding only: real 0
          continue;
        }
        pool_pixel(xp + n * H * W * C, W, C, hc0, hc1, wc0, wc1, zp, 1.0f / static_cast<float>(count), acc.data(), o);
      }
    }
  });
  return nchw_view(result, in.batched);
}

void check_zero_point(const char* op, int64_t zero_point) {
  EMBER_CHECK(zero_point >= kActCodeMin && zero_point <= kActCodeMax, op, " zero_point ", zero_point,
              " is outside the activation codes [0, 127]");
}

}  // namespace

Tensor quantized_avg_pool2d(const Tensor& input, int64_t zero_point, IntArrayRef kernel_size, IntArrayRef stride,
                            IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                            std::optional<int64_t> divisor_override) {
  constexpr const char* op = "[quant::quantized_avg_pool2d]";
  OpScope scope("quant::quantized_avg_pool2d", {&input});
  jit::detail::TraceOp trace("quantized_avg_pool2d");
  check_zero_point(op, zero_point);
  check_two(op, kernel_size, "kernel_size", false);
  check_two(op, stride, "stride", true);
  check_two(op, padding, "padding", false);
  const int64_t kh = pick(kernel_size, 0), kw = pick(kernel_size, 1);
  const int64_t sh = stride.empty() ? kh : pick(stride, 0), sw = stride.empty() ? kw : pick(stride, 1);
  const int64_t ph = pick(padding, 0), pw = pick(padding, 1);
  constexpr int64_t kBig = int64_t{1} << 31;
  EMBER_CHECK(kh > 0 && kw > 0 && kh < kBig && kw < kBig, op, " kernel_size must be positive, got ", kernel_size);
  EMBER_CHECK(sh > 0 && sw > 0 && sh < kBig && sw < kBig, op, " stride must be positive, got ", stride);
  EMBER_CHECK(ph >= 0 && pw >= 0 && ph <= kh / 2 && pw <= kw / 2, op,
              " padding must be non-negative and at most half the kernel size, got padding ", padding,
              " for kernel_size ", kernel_size);
  EMBER_CHECK(!divisor_override || (*divisor_override > 0 && *divisor_override < kBig), op,
              " divisor_override must be positive, got ", divisor_override.value_or(0));
  Tensor y = avg_pool_impl(op, input, kh, kw, sh, sw, ph, pw, ceil_mode, count_include_pad,
                           divisor_override.value_or(0), static_cast<int32_t>(zero_point));
  if (trace.recording()) {
    trace.record({input},
                 {{"zero_point", Value(zero_point)},
                  {"kernel_size", jit::detail::ints(kernel_size)},
                  {"stride", jit::detail::ints(stride)},
                  {"padding", jit::detail::ints(padding)},
                  {"ceil_mode", Value(ceil_mode)},
                  {"count_include_pad", Value(count_include_pad)},
                  {"divisor_override", jit::detail::opt_int(divisor_override)}},
                 y);
  }
  return y;
}

Tensor quantized_adaptive_avg_pool2d(const Tensor& input, int64_t zero_point, IntArrayRef output_size) {
  constexpr const char* op = "[quant::quantized_adaptive_avg_pool2d]";
  OpScope scope("quant::quantized_adaptive_avg_pool2d", {&input});
  jit::detail::TraceOp trace("quantized_adaptive_avg_pool2d");
  check_zero_point(op, zero_point);
  check_two(op, output_size, "output_size", false);
  const int64_t OH = pick(output_size, 0), OW = pick(output_size, 1);
  EMBER_CHECK(OH >= 0 && OW >= 0 && OH < (int64_t{1} << 31) && OW < (int64_t{1} << 31), op,
              " output_size must be non-negative, got ", output_size);
  const CodesNhwc in = codes_nhwc(op, input, "ember::adaptive_avg_pool2d");
  EMBER_CHECK((in.H > 0 && in.W > 0) || in.N * in.C == 0 || OH * OW == 0, op, " input of sizes ", input.sizes(),
              " has an empty spatial dim; there is nothing to average");
  Tensor result = empty({in.N, OH, OW, in.C}, TensorOptions(kUInt8));
  if (result.numel() > 0) {
    const uint8_t* xp = in.x.data_ptr<uint8_t>();
    uint8_t* yp = result.data_ptr<uint8_t>();
    const int64_t H = in.H, W = in.W, C = in.C;
    const int32_t zp = static_cast<int32_t>(zero_point);
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(OW * C, 1));
    parallel_for(0, in.N * OH, grain, [&](int64_t r0, int64_t r1) {
      std::vector<int64_t> acc(static_cast<size_t>(C));
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / OH, oh = r % OH;
        // torch's adaptive windows: [floor(o * I / O), ceil((o + 1) * I / O)).
        const int64_t h0 = oh * H / OH, h1 = ((oh + 1) * H + OH - 1) / OH;
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t w0 = ow * W / OW, w1 = ((ow + 1) * W + OW - 1) / OW;
          pool_pixel(xp + n * H * W * C, W, C, h0, h1, w0, w1, zp,
                     1.0f / static_cast<float>((h1 - h0) * (w1 - w0)), acc.data(),
                     yp + ((n * OH + oh) * OW + ow) * C);
        }
      }
    });
  }
  Tensor y = nchw_view(result, in.batched);
  if (trace.recording()) {
    trace.record({input}, {{"zero_point", Value(zero_point)}, {"output_size", jit::detail::ints(output_size)}}, y);
  }
  return y;
}

}  // namespace ember::quant
