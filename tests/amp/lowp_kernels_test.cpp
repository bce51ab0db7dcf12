// bf16/fp16 matrix products and convolutions (Note [Low-precision GEMM]): results against a
// float32 computation on the same rounded inputs, within the low precision's rounding of
// the result, on both implementations (oneDNN where it takes the case, float32 fallback),
// and backward in the low precision. tests/CMakeLists.txt runs this area at every CPU
// capability level the machine has (isa.<level>.amp).
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>
#include <tuple>
#include <vector>

#include "ember/kernels/cpu/conv_dnnl.h"
#include "ember/kernels/cpu/gemm_lowp.h"
#include "test_util.h"

namespace lowp_kernels_test {

using namespace ember;
using kernels::cpu::LowpGemmImpl;

// Relative tolerance of one rounding to dt (plus float32 summation noise).
double tol(DType dt) { return dt == kBFloat16 ? 1.0 / 128 : 1.0 / 1024; }

// max |got - want| <= rtol * max|want| (+ a small absolute floor).
void expect_close(const Tensor& got, const Tensor& want, double rtol) {
  ASSERT_EQ(got.sizes(), want.sizes());
  const Tensor g = got.to(kFloat64), w = want.to(kFloat64);
  const double scale = std::max(1.0, w.abs().max().item<double>());
  const double err = (g - w).abs().max().item<double>();
  EXPECT_LE(err, rtol * scale) << "max error " << err << " for a result of magnitude " << scale;
}

class LowpGemm : public ::testing::TestWithParam<std::tuple<DType, LowpGemmImpl>> {
 protected:
  void SetUp() override {
    kernels::cpu::set_lowp_gemm_impl(std::get<1>(GetParam()));
    std::printf("low-precision GEMM path: %s\n", amp::low_precision_gemm_path(std::get<0>(GetParam())).c_str());
  }
  void TearDown() override { kernels::cpu::set_lowp_gemm_impl(LowpGemmImpl::Auto); }
  DType dt() const { return std::get<0>(GetParam()); }
  // Random values already representable in dt, so the float32 reference sees the same inputs.
  Tensor r(IntArrayRef s) const { return randn(s).to(dt()); }
};

TEST_P(LowpGemm, MatmulShapesAgainstFloat32) {
  manual_seed(10);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{7, 5}, {5, 3}},            // tiny
      {{64, 300}, {300, 70}},      // one block
      {{515, 129}, {129, 33}},     // several row blocks and a ragged tail
      {{3, 17, 40}, {3, 40, 9}},   // batched
      {{4, 1, 8, 16}, {3, 16, 5}}  // broadcast batch dims
  };
  for (const auto& [sa, sb] : cases) {
    SCOPED_TRACE(::testing::PrintToString(sa) + " x " + ::testing::PrintToString(sb));
    const Tensor a = r(sa), b = r(sb);
    const Tensor got = matmul(a, b);
    EXPECT_EQ(got.dtype(), dt());
    expect_close(got, matmul(a.to(kFloat32), b.to(kFloat32)), tol(dt()));
  }
}

TEST_P(LowpGemm, TransposedOperandsAndAddmm) {
  manual_seed(11);
  const Tensor x = r({33, 48}), w = r({20, 48}), bias = r({20});
  // linear reads the weight transposed (strides (1, 48)).
  expect_close(nn::functional::linear(x, w, bias),
               nn::functional::linear(x.to(kFloat32), w.to(kFloat32), bias.to(kFloat32)), tol(dt()));
  const Tensor c = r({33, 20});
  expect_close(addmm(c, x, w.t(), 0.5, 2.0), addmm(c.to(kFloat32), x.to(kFloat32), w.t().to(kFloat32), 0.5, 2.0),
               tol(dt()));
  const Tensor in = r({2, 6, 5}), b1 = r({2, 6, 7}), b2 = r({2, 7, 5});
  expect_close(baddbmm(in, b1, b2, 1.0, -1.0),
               baddbmm(in.to(kFloat32), b1.to(kFloat32), b2.to(kFloat32), 1.0, -1.0), tol(dt()));
}

TEST_P(LowpGemm, BackwardRunsInTheLowPrecision) {
  manual_seed(12);
  const Tensor a = r({9, 12}).requires_grad_(), b = r({12, 4}).requires_grad_();
  const Tensor g = r({9, 4});
  matmul(a, b).backward(g);
  EXPECT_EQ(a.grad().dtype(), dt());
  EXPECT_EQ(b.grad().dtype(), dt());
  const Tensor a32 = a.detach().to(kFloat32).requires_grad_(), b32 = b.detach().to(kFloat32).requires_grad_();
  matmul(a32, b32).backward(g.to(kFloat32));
  expect_close(a.grad(), a32.grad(), tol(dt()));
  expect_close(b.grad(), b32.grad(), tol(dt()));
}

INSTANTIATE_TEST_SUITE_P(Impls, LowpGemm,
                         ::testing::Combine(::testing::Values(kBFloat16, kFloat16),
                                            ::testing::Values(LowpGemmImpl::Auto, LowpGemmImpl::OneDnn,
                                                              LowpGemmImpl::Float32)));

TEST(LowpGemm, ReportsItsPath) {
  const std::string path = amp::low_precision_gemm_path(kBFloat16);
  std::printf("bf16 GEMM: %s; oneDNN ISA %s; ember CPU level %s\n", path.c_str(),
              kernels::cpu::onednn_isa_name().c_str(), cpu_capability_name().c_str());
  EXPECT_FALSE(path.empty());
  // oneDNN only where it has native bf16 and ember's level is avx512 (unless forced).
  if (!kernels::cpu::onednn_has_native(kBFloat16)) {
    EXPECT_EQ(kernels::cpu::lowp_gemm_impl(kBFloat16), LowpGemmImpl::Float32);
  }
  EXPECT_EQ(kernels::cpu::lowp_gemm_impl(kFloat16), LowpGemmImpl::Float32);
}

// Products running at once (the row blocks or batch matrices of one product on ember's threads,
// products of two caller threads) must not share a scratchpad: with oneDNN's library
// scratchpad they wrote into each other's packed panels on a Zen 4 with AVX512-BF16 (errors of
// 10-28 on results of magnitude 12-22, a few runs in 40 of MatmulShapesAgainstFloat32).
TEST(LowpGemm, ConcurrentProductsKeepTheirOwnScratchpads) {
  if (!kernels::cpu::onednn_has_native(kBFloat16)) GTEST_SKIP() << "oneDNN has no native bf16 on this CPU";
  kernels::cpu::set_lowp_gemm_impl(LowpGemmImpl::OneDnn);
  manual_seed(14);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{3, 17, 40}, {3, 40, 9}}, {{8, 64, 300}, {300, 70}}, {{515, 129}, {129, 33}}, {{4, 1, 8, 16}, {3, 16, 5}}};
  std::vector<std::tuple<Tensor, Tensor, Tensor>> cases;
  for (const auto& [sa, sb] : shapes) {
    const Tensor a = randn(sa).to(kBFloat16), b = randn(sb).to(kBFloat16);
    cases.emplace_back(a, b, matmul(a.to(kFloat32), b.to(kFloat32)));
  }
  std::atomic<int> bad{0};
  auto worker = [&](size_t first) {
    for (int i = 0; i < 40; ++i) {
      const auto& [a, b, want] = cases[(first + static_cast<size_t>(i)) % cases.size()];
      const Tensor got = matmul(a, b).to(kFloat32);
      if ((got - want).abs().max().item<double>() > tol(kBFloat16) * std::max(1.0, want.abs().max().item<double>())) {
        bad.fetch_add(1);
      }
    }
  };
  worker(0);  // products on ember's own threads
  std::thread t1(worker, 0), t2(worker, 1);
  t1.join();
  t2.join();
  kernels::cpu::set_lowp_gemm_impl(LowpGemmImpl::Auto);
  EXPECT_EQ(bad.load(), 0);
}

class LowpConv : public ::testing::TestWithParam<DType> {};

TEST_P(LowpConv, Conv2dForwardAndBackwardAgainstFloat32) {
  const DType dt = GetParam();
  manual_seed(13);
  // Small channels (im2col + GEMM) and 32 -> 64 channels (the oneDNN-eligible geometry).
  for (int64_t cin : {3, 32}) {
    SCOPED_TRACE(cin);
    const Tensor x = randn({2, cin, 9, 9}).to(dt).requires_grad_();
    const Tensor w = (randn({cin == 3 ? 4 : 64, cin, 3, 3}) * 0.2).to(dt).requires_grad_();
    const Tensor bias = randn({w.size(0)}).to(dt).requires_grad_();
    const Tensor y = conv2d(x, w, bias, 1, 1);
    EXPECT_EQ(y.dtype(), dt);
    const Tensor x32 = x.detach().to(kFloat32).requires_grad_(), w32 = w.detach().to(kFloat32).requires_grad_();
    const Tensor b32 = bias.detach().to(kFloat32).requires_grad_();
    const Tensor y32 = conv2d(x32, w32, b32, 1, 1);
    expect_close(y, y32, tol(dt));
    const Tensor g = randn(y.sizes());
    y.backward(g.to(dt));
    y32.backward(g.to(dt).to(kFloat32));
    EXPECT_EQ(w.grad().dtype(), dt);
    expect_close(x.grad(), x32.grad(), tol(dt));
    expect_close(w.grad(), w32.grad(), tol(dt));
    expect_close(bias.grad(), b32.grad(), tol(dt));
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LowpConv, ::testing::Values(kBFloat16, kFloat16));

// Note [bf16 convolution]: oneDNN's native bf16 kernels against the float32 fallback on the
// same bf16 inputs (both accumulate in float32 and round once, so they differ by summation
// order only), for geometries with several batch chunks, a ragged last chunk, stride,
// padding, dilation and 1-D; results must not depend on the thread count.
TEST(LowpConvNative, Bf16KernelsAgainstTheFallbackAndAcrossThreads) {
  kernels::cpu::ConvGeometry probe;
  probe.batch = 2, probe.in_channels = 32, probe.out_channels = 64, probe.in_h = probe.in_w = 8;
  probe.out_h = probe.out_w = 6, probe.kernel_h = probe.kernel_w = 3;
  if (!kernels::cpu::dnnl_conv_lowp_eligible(kBFloat16, probe)) {
    GTEST_SKIP() << "no native bf16 convolution here: " << amp::low_precision_gemm_path(kBFloat16);
  }
  manual_seed(21);
  struct Case {
    std::vector<int64_t> x, w;
    int64_t stride, padding, dilation;
  };
  const std::vector<Case> cases = {
      {{19, 32, 14, 14}, {64, 32, 3, 3}, 1, 1, 1},  // 7 chunks of 3 and a tail of 1
      {{5, 16, 11, 9}, {24, 16, 3, 3}, 2, 1, 1},   // stride 2, odd sizes
      {{4, 32, 12, 12}, {32, 32, 3, 3}, 1, 2, 2},  // dilation
      {{6, 48, 30}, {40, 48, 5}, 1, 2, 1},         // conv1d
  };
  auto run = [&](const Case& c, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& g) {
    const Tensor xr = x.detach().requires_grad_(), wr = w.detach().requires_grad_(),
                 br = b.detach().requires_grad_();
    const Tensor y = c.x.size() == 3 ? conv1d(xr, wr, br, c.stride, c.padding, c.dilation)
                                     : conv2d(xr, wr, br, c.stride, c.padding, c.dilation);
    y.backward(g);
    return std::vector<Tensor>{y, xr.grad(), wr.grad(), br.grad()};
  };
  const int threads = get_num_threads();
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.x) + " * " + ::testing::PrintToString(c.w));
    const Tensor x = randn(c.x).to(kBFloat16);
    const Tensor w = (randn(c.w) * 0.1).to(kBFloat16);
    const Tensor b = randn({c.w[0]}).to(kBFloat16);
    const Tensor y0 = c.x.size() == 3 ? conv1d(x, w, b, c.stride, c.padding, c.dilation)
                                      : conv2d(x, w, b, c.stride, c.padding, c.dilation);
    const Tensor g = randn(y0.sizes()).to(kBFloat16);
    set_num_threads(2);
    const std::vector<Tensor> native = run(c, x, w, b, g);
    set_num_threads(1);
    const std::vector<Tensor> native1 = run(c, x, w, b, g);
    kernels::cpu::set_lowp_gemm_impl(LowpGemmImpl::Float32);
    const std::vector<Tensor> fallback = run(c, x, w, b, g);
    kernels::cpu::set_lowp_gemm_impl(LowpGemmImpl::Auto);
    set_num_threads(threads);
    const char* names[] = {"output", "input gradient", "weight gradient", "bias gradient"};
    for (size_t i = 0; i < native.size(); ++i) {
      SCOPED_TRACE(names[i]);
      EXPECT_EQ(native[i].dtype(), kBFloat16);
      EXPECT_TRUE(equal(native[i], native1[i])) << "1 and 2 threads differ";
      expect_close(native[i], fallback[i], tol(kBFloat16));
    }
    // Against float64 arithmetic on the same inputs: within one bf16 rounding.
    const Tensor y64 = c.x.size() == 3 ? conv1d(x.to(kFloat64), w.to(kFloat64), b.to(kFloat64), c.stride,
                                                c.padding, c.dilation)
                                       : conv2d(x.to(kFloat64), w.to(kFloat64), b.to(kFloat64), c.stride,
                                                c.padding, c.dilation);
    expect_close(native[0], y64, tol(kBFloat16));
  }
}

}  // namespace lowp_kernels_test

namespace lowp_kernels_test {

// Note [Vectorised bfloat16 conversion]: the copy kernels' vector conversions give the scalar
// conversion's bits (core/half.h) for every bfloat16 value and for floats of every class:
// ties to even, values that round up into the next binade or to infinity, NaNs with their
// payload only in the low bits, subnormals, signed zeros. Run at every CPU level (isa.*.amp).
TEST(LowpConversions, VectorAndScalarBitsAgree) {
  std::vector<uint32_t> bits = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7F800001u, 0xFF800001u,
                                0x7FC00000u, 0x7F80FFFFu, 0x7FFFFFFFu, 0x00000001u, 0x807FFFFFu, 0x3F808000u,
                                0x3F818000u, 0x3F807FFFu, 0x3F808001u, 0x7F7FFFFFu, 0xFF7F8000u, 0x7F7F7FFFu};
  uint64_t state = 0x9E3779B97F4A7C15ull;
  while (bits.size() < 200003) {  // an odd length: the vector loops' tails run too
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const auto r = static_cast<uint32_t>(state >> 32);
    // Every fourth value sits exactly on a tie or one step beside it.
    bits.push_back(bits.size() % 4 == 0 ? (r & 0xFFFF0000u) | (0x8000u + (r & 3u) - 1u) : r);
  }
  std::vector<float> f(bits.size());
  std::memcpy(f.data(), bits.data(), bits.size() * sizeof(float));
  const Tensor t = from_blob(f.data(), {static_cast<int64_t>(f.size())}).clone();
  const Tensor b = t.to(kBFloat16);
  const BFloat16* got = b.data_ptr<BFloat16>();
  int64_t bad = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (got[i].x != BFloat16(f[i]).x && bad++ < 5) {
      ADD_FAILURE() << "float bits 0x" << std::hex << bits[i] << " -> bf16 0x" << got[i].x << ", expected 0x"
                    << BFloat16(f[i]).x;
    }
  }
  EXPECT_EQ(bad, 0);

  std::vector<BFloat16> all(65536 + 7);
  for (size_t i = 0; i < all.size(); ++i) all[i] = BFloat16::from_bits(static_cast<uint16_t>(i));
  const Tensor h = from_blob(all.data(), {static_cast<int64_t>(all.size())}, kBFloat16).clone();
  const Tensor w = h.to(kFloat32);
  const float* wf = w.data_ptr<float>();
  bad = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    uint32_t want = static_cast<uint32_t>(all[i].x) << 16, have = 0;
    std::memcpy(&have, wf + i, sizeof(have));
    if (have != want && bad++ < 5) ADD_FAILURE() << "bf16 0x" << std::hex << all[i].x << " -> 0x" << have;
  }
  EXPECT_EQ(bad, 0);
}

}  // namespace lowp_kernels_test
