// ONNX's int8 operators (quant/qlinear.h, Note [ONNX int8 arithmetic]): rounding half to even,
// saturation at the code range of the zero point's dtype, full-range uint8 codes (0..255) through
// the int8 GEMM (Note [Full-range codes through the int8 GEMM]), checked against plain integer
// loops written here.

#include <ember/ember.h>
#include <ember/quant/qlinear.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "test_util.h"

namespace ember {
namespace qlinear_test {

using ember::testing::ExpectError;

Tensor U8(const std::vector<int64_t>& sizes, int lo = 0, int hi = 256) { return randint(lo, hi, sizes).to(kUInt8); }
Tensor S8(const std::vector<int64_t>& sizes) { return randint(-128, 128, sizes).to(kInt8); }
Tensor F(std::vector<float> v) { return tensor(v); }
Tensor Sc(float v) { return tensor({v}).reshape({}); }
Tensor Zp(int v, DType dt = kUInt8) { return tensor({v}).to(dt).reshape({}); }

std::vector<int64_t> Ints(const Tensor& t) {
  const Tensor c = t.to(kInt64).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

int64_t Requant(int64_t acc, float m, int64_t zp, int64_t lo, int64_t hi) {
  const float q = std::nearbyint(static_cast<float>(acc) * m) + static_cast<float>(zp);
  return std::min<int64_t>(hi, std::max<int64_t>(lo, static_cast<int64_t>(q)));
}

TEST(QuantQLinear, QuantizeRoundsHalfToEvenAndSaturates) {
  const Tensor x = F({0.5f, 1.5f, 2.5f, -0.5f, 300.0f, -5.0f, 127.5f, 3.49f});
  EXPECT_EQ(Ints(quant::quantize_linear(x, Sc(1.0f), Zp(0))), (std::vector<int64_t>{0, 2, 2, 0, 255, 0, 128, 3}));
  EXPECT_EQ(Ints(quant::quantize_linear(x, Sc(1.0f), Zp(0, kInt8))),
            (std::vector<int64_t>{0, 2, 2, 0, 127, -5, 127, 3}));
  EXPECT_EQ(quant::quantize_linear(x, Sc(1.0f), Zp(0, kInt8)).dtype(), kInt8);
  // x / scale then + zero point: 1.0 / 0.4 = 2.5 rounds to 2, plus 10.
  EXPECT_EQ(Ints(quant::quantize_linear(F({1.0f}), Sc(0.4f), Zp(10))), (std::vector<int64_t>{12}));
  // No zero point: uint8 0.
  EXPECT_EQ(Ints(quant::quantize_linear(F({-1.0f, 7.0f}), Sc(2.0f), Tensor())), (std::vector<int64_t>{0, 4}));
  // Per axis: rows of [2, 3] along axis 0.
  const Tensor m = tensor({1.0f, 2.0f, 3.0f, 1.0f, 2.0f, 3.0f}).reshape({2, 3});
  const Tensor q = quant::quantize_linear(m, F({1.0f, 0.5f}), tensor({0, 100}).to(kUInt8), 0);
  EXPECT_EQ(Ints(q), (std::vector<int64_t>{1, 2, 3, 102, 104, 106}));
  EXPECT_EQ(ember::testing::Floats(quant::dequantize_linear(q, F({1.0f, 0.5f}), tensor({0, 100}).to(kUInt8), 0)),
            ember::testing::Floats(m));
  EXPECT_EQ(ember::testing::Floats(quant::dequantize_linear(tensor({-3, 5}).to(kInt32), Sc(0.25f), Tensor())),
            (std::vector<float>{-0.75f, 1.25f}));
  ExpectError([&] { quant::quantize_linear(x, Sc(0.0f), Zp(0)); }, {"[quant::quantize_linear]", "positive"});
  ExpectError([&] { quant::quantize_linear(m, F({1.0f, 2.0f, 3.0f}), tensor({0, 0, 0}).to(kUInt8), 0); },
              {"[quant::quantize_linear]", "one per channel (2)"});
  ExpectError([&] { quant::dequantize_linear(U8({3}), Sc(1.0f), Zp(0, kInt8)); },
              {"[quant::dequantize_linear]", "must be of one dtype"});
}

// QLinearMatMul against int64 loops: codes above 127 (both GEMM halves), per-column weight scales
// and zero points, int8 activations, saturation at both ends.
TEST(QuantQLinear, MatMulMatchesIntegerReference) {
  manual_seed(70);
  for (DType adt : {kUInt8, kInt8}) {
    const int64_t M = 9, K = 37, N = 6;  // M > 8: oneDNN's GEMM; the 1-row case: ember's own kernel
    for (int64_t rows : {M, int64_t{1}}) {
      const Tensor a = adt == kUInt8 ? U8({rows, K}) : S8({rows, K});
      const Tensor b = S8({K, N});
      const Tensor bs = rand({N}) * 0.02 + 0.001;
      const Tensor bz = randint(-3, 4, {N}).to(kInt8);
      const int az = adt == kUInt8 ? 131 : -7;
      const float as = 0.05f, ys = 0.3f;
      const int yz = adt == kUInt8 ? 120 : 3;
      const Tensor y = quant::qlinear_matmul(a, Sc(as), Zp(az, adt), b, bs, bz, Sc(ys), Zp(yz, adt));
      ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{rows, N}));
      const std::vector<int64_t> qa = Ints(a), qb = Ints(b), zb = Ints(bz), got = Ints(y);
      const Tensor bsc = bs.contiguous();
      const int64_t lo = adt == kUInt8 ? 0 : -128, hi = adt == kUInt8 ? 255 : 127;
      int saturated = 0;
      for (int64_t m = 0; m < rows; ++m) {
        for (int64_t n = 0; n < N; ++n) {
          int64_t acc = 0;
          for (int64_t k = 0; k < K; ++k) acc += (qa[m * K + k] - az) * (qb[k * N + n] - zb[n]);
          const float mult = (as * bsc.data_ptr<float>()[n]) / ys;
          const int64_t want = Requant(acc, mult, yz, lo, hi);
          saturated += want == lo || want == hi;
          ASSERT_EQ(got[m * N + n], want) << "m " << m << " n " << n << " dtype " << adt;
        }
      }
      if (rows == M) {
        EXPECT_GT(saturated, 0) << "the test reaches the ends of the code range";
      }
    }
  }
  ExpectError([] { quant::qlinear_matmul(U8({2, 3}), Sc(1), Zp(0), S8({4, 2}), Sc(1), Zp(0, kInt8), Sc(1), Zp(0)); },
              {"[quant::qlinear_matmul]", "does not end in K = 4"});
}

// QLinearConv against loops: padding (the input's zero point), stride, dilation, groups, int32
// bias, codes above 127, uint8 weights.
TEST(QuantQLinear, ConvMatchesIntegerReference) {
  manual_seed(71);
  const int64_t N = 2, C = 4, H = 7, W = 6, OC = 6, G = 2, KH = 3, KW = 2;
  const int64_t sh = 2, sw = 1, ph = 1, pw = 1, dh = 1, dw = 2;
  for (DType wdt : {kInt8, kUInt8}) {
    const Tensor x = U8({N, C, H, W});
    const Tensor w = wdt == kInt8 ? S8({OC, C / G, KH, KW}) : U8({OC, C / G, KH, KW});
    const Tensor ws = rand({OC}) * 0.01 + 0.001;
    const Tensor wz = wdt == kInt8 ? zeros({OC}, TensorOptions(kInt8)) : full({OC}, 128, TensorOptions(kUInt8));
    const Tensor bias = randint(-2000, 2000, {OC}).to(kInt32);
    const float xs = 0.02f, ys = 0.05f;
    const int xz = 140, yz = 128;
    const Tensor y = quant::qlinear_conv2d(x, Sc(xs), Zp(xz), w, ws, wz, Sc(ys), Zp(yz), bias, {sh, sw},
                                           {ph, pw}, {dh, dw}, G);
    const int64_t OH = (H + 2 * ph - dh * (KH - 1) - 1) / sh + 1, OW = (W + 2 * pw - dw * (KW - 1) - 1) / sw + 1;
    ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{N, OC, OH, OW}));
    const std::vector<int64_t> qx = Ints(x), qw = Ints(w), zw = Ints(wz), qb = Ints(bias);
    const Tensor y_ = y.contiguous();
    const std::vector<int64_t> got = Ints(y_);
    const Tensor wsc = ws.contiguous();
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t o = 0; o < OC; ++o) {
        const int64_t g = o / (OC / G);
        for (int64_t oh = 0; oh < OH; ++oh) {
          for (int64_t ow = 0; ow < OW; ++ow) {
            int64_t acc = qb[o];
            for (int64_t c = 0; c < C / G; ++c) {
              for (int64_t kh = 0; kh < KH; ++kh) {
                for (int64_t kw = 0; kw < KW; ++kw) {
                  const int64_t ih = oh * sh - ph + kh * dh, iw = ow * sw - pw + kw * dw;
                  const int64_t code =
                      ih < 0 || ih >= H || iw < 0 || iw >= W ? xz : qx[((n * C + g * (C / G) + c) * H + ih) * W + iw];
                  acc += (code - xz) * (qw[((o * (C / G) + c) * KH + kh) * KW + kw] - zw[o]);
                }
              }
            }
            const float mult = (xs * wsc.data_ptr<float>()[o]) / ys;
            ASSERT_EQ(got[((n * OC + o) * OH + oh) * OW + ow], Requant(acc, mult, yz, 0, 255))
                << "n " << n << " o " << o << " oh " << oh << " ow " << ow;
          }
        }
      }
    }
  }
  ExpectError([] { quant::qlinear_conv2d(U8({1, 3, 4, 4}), Sc(1), Zp(0), S8({2, 2, 1, 1}), Sc(1), Zp(0, kInt8),
                                         Sc(1), Zp(0), Tensor(), {1}, {0}, {1}, 1); },
              {"[quant::qlinear_conv2d]", "groups"});
}

TEST(QuantQLinear, AddConcatAndPoolsFollowTheirDefinitions) {
  // add: (0.5 * (200 - 100) + 0.25 * (10 - 0)) / 0.5 = 105 -> + 3 = 108; saturates at 255.
  const Tensor a = tensor({200, 255}).to(kUInt8), b = tensor({10, 255}).to(kUInt8);
  EXPECT_EQ(Ints(quant::qlinear_add(a, Sc(0.5f), Zp(100), b, Sc(0.25f), Tensor(), Sc(0.5f), Zp(3))),
            (std::vector<int64_t>{108, 255}));
  // broadcasting: [2, 1] + [3]
  const Tensor s = quant::qlinear_add(tensor({1, 2}).to(kUInt8).reshape({2, 1}), Sc(1), Zp(0),
                                      tensor({0, 1, 2}).to(kUInt8), Sc(1), Zp(0), Sc(1), Zp(0));
  EXPECT_EQ(Ints(s), (std::vector<int64_t>{1, 2, 3, 2, 3, 4}));
  // concat: 1.0 * (3 - 1) / 2 = 1 rounds to 1 (+0); 0.5 * 5 / 2 = 1.25 -> 1; 0.5 * 7 / 2 = 1.75 -> 2.
  const Tensor c = quant::qlinear_concat({tensor({3}).to(kUInt8), tensor({5, 7}).to(kUInt8)},
                                         {Sc(1.0f), Sc(0.5f)}, {Zp(1), Zp(0)}, Sc(2.0f), Zp(0), 0);
  EXPECT_EQ(Ints(c), (std::vector<int64_t>{1, 1, 2}));
  // pools: codes 0..15 of one 4x4 plane, zero point 1, grid kept.
  const Tensor x = arange(0, 16).to(kUInt8).reshape({1, 1, 4, 4});
  // 2x2 windows: means of codes 2.5, 4.5, 10.5, 12.5 -> minus 1: 1.5, 3.5, 9.5, 11.5 -> 2, 4, 10, 12 -> +1.
  EXPECT_EQ(Ints(quant::qlinear_avg_pool2d(x, Sc(1), Zp(1), Sc(1), Zp(1), {2, 2}, {2, 2})),
            (std::vector<int64_t>{3, 5, 11, 13}));
  // padding 1, 3x3, stride 2, count_include_pad off: the corner window holds codes 0, 1, 4, 5.
  const Tensor p = quant::qlinear_avg_pool2d(x, Sc(1), Zp(0), Sc(1), Zp(0), {3, 3}, {2, 2}, {1, 1}, false,
                                             false);
  EXPECT_EQ(Ints(p)[0], 2);  // 10 / 4 = 2.5 -> 2
  const Tensor pi = quant::qlinear_avg_pool2d(x, Sc(1), Zp(0), Sc(1), Zp(0), {3, 3}, {2, 2}, {1, 1}, false,
                                              true);
  EXPECT_EQ(Ints(pi)[0], 1);  // 10 / 9
  // global: mean of codes 7.5 -> 8 (half to even)
  EXPECT_EQ(Ints(quant::qlinear_global_avg_pool2d(x, Sc(1), Zp(0), Sc(1), Zp(0))), (std::vector<int64_t>{8}));
  ExpectError([&] { quant::qlinear_avg_pool2d(x, Sc(1), Zp(0), Sc(1), Zp(0), {2, 2}, {}, {0}, true, true); },
              {"[quant::qlinear_avg_pool2d]", "ceil_mode with count_include_pad"});
  ExpectError([&] { quant::qlinear_add(a, Sc(1), Zp(0, kInt8), b, Sc(1), Zp(0), Sc(1), Zp(0)); },
              {"[quant::qlinear_add]", "must be of one dtype"});
}

}  // namespace qlinear_test
}  // namespace ember
