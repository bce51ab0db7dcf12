// Quantization-aware training: the fake-quantize ops (values and straight-through gradients
// worked out by hand; tests/quant/torch_parity.cpp checks them against libtorch), FakeQuantize,
// prepare_qat's fusions, a short training run, and convert to the static int8 model.

#include <ember/ember.h>
#include <ember/quant/qat.h>
#include <ember/quant/static_quant.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "test_util.h"

namespace ember {
namespace quant_qat_test {

using ember::testing::ExpectError;
using ember::testing::Floats;
using ember::testing::Sizes;
using I64 = std::vector<int64_t>;
using F32 = std::vector<float>;

TEST(FakeQuantize, PerTensorValuesAndGradient) {
  // scale 0.5, zero point 3, codes 0..10: the grid is {-1.5, -1, ..., 3.5}.
  Tensor x = tensor({-2.0f, -1.6f, -1.25f, 0.2f, 0.25f, 0.75f, 3.4f, 3.75f, 9.0f}).requires_grad_();
  Tensor y = quant::fake_quantize_per_tensor_affine(x, 0.5, 3, 0, 10);
  // -1.25 / 0.5 = -2.5 rounds to -2 (half to even), 0.25 -> 0.5 -> 0, 0.75 -> 1.5 -> 2.
  EXPECT_EQ(Floats(y), (F32{-1.5f, -1.5f, -1.0f, 0.0f, 0.0f, 1.0f, 3.5f, 3.5f, 3.5f}));
  y.backward(tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f}));
  // The gradient passes where round(x / scale) + zero_point lies in [0, 10]: -1.6 -> -3 + 3 = 0
  // in, -2 -> -1 out, 3.75 -> 8 + 3 = 11 out.
  EXPECT_EQ(Floats(x.grad()), (F32{0.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 0.f, 0.f}));
  // No gradient needed: the result carries none.
  EXPECT_FALSE(quant::fake_quantize_per_tensor_affine(x.detach(), 0.5, 3, 0, 10).requires_grad());
}

TEST(FakeQuantize, PerChannelNonContiguous) {
  manual_seed(40);
  // axis 1 of a transposed view: each column its own grid.
  Tensor x = (randn({3, 5}) * 2.0).detach().requires_grad_();  // [3, 5]
  Tensor xt = x.t();                                             // [5, 3], non-contiguous
  ASSERT_FALSE(xt.is_contiguous());
  const Tensor scale = tensor({0.1f, 0.5f, 1.0f});
  const Tensor zp = tensor({0.f, 64.f, 127.f}).to(kInt32);
  Tensor y = quant::fake_quantize_per_channel_affine(xt, scale, zp, 1, 0, 127);
  const F32 xs = Floats(xt.contiguous()), ys = Floats(y);
  const F32 sc{0.1f, 0.5f, 1.0f};
  const float z[] = {0.f, 64.f, 127.f};
  F32 mask(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    const size_t c = i % 3;
    const float r = std::nearbyint(xs[i] * (1.0f / sc[c])) + z[c];
    mask[i] = r >= 0.f && r <= 127.f ? 1.f : 0.f;
    EXPECT_FLOAT_EQ(ys[i], (std::clamp(r, 0.f, 127.f) - z[c]) * sc[c]) << i;
  }
  y.sum().backward();
  // x.grad is [3, 5]: the transpose of the mask.
  EXPECT_EQ(Floats(x.grad().t().contiguous()), mask);
  double clipped = 0;
  for (float m : mask) clipped += 1.0 - m;
  EXPECT_GT(clipped, 0) << "some values fall outside the grids (channel 0 keeps only [0, 12.7])";
}

TEST(FakeQuantize, Errors) {
  const Tensor x = randn({2, 3});
  ExpectError([&] { quant::fake_quantize_per_tensor_affine(x, 0.1, 200, 0, 127); },
              {"[quant::fake_quantize_per_tensor_affine]", "zero_point 200", "quant_min", "quant_max"});
  ExpectError([&] { quant::fake_quantize_per_tensor_affine(x, 0.1, 0, 10, 5); },
              {"[quant::fake_quantize_per_tensor_affine]", "less than or equal"});
  ExpectError([&] { quant::fake_quantize_per_tensor_affine(x, 0.0, 0, 0, 127); },
              {"[quant::fake_quantize_per_tensor_affine]", "scale", "positive"});
  ExpectError([&] { quant::fake_quantize_per_tensor_affine(x.to(kFloat64), 0.1, 0, 0, 127); },
              {"[quant::fake_quantize_per_tensor_affine]", "float32", "float64"});
  ExpectError([&] { quant::fake_quantize_per_channel_affine(x, ones({2}), zeros({2}, TensorOptions(kInt32)), 1, 0, 9); },
              {"[quant::fake_quantize_per_channel_affine]", "scale", "[3]"});
  ExpectError([&] { quant::fake_quantize_per_channel_affine(x, ones({3}), zeros({3}), 1, 0, 9); },
              {"[quant::fake_quantize_per_channel_affine]", "zero_point", "int32"});
  ExpectError([&] { quant::fake_quantize_per_channel_affine(x, ones({3}), zeros({3}, TensorOptions(kInt32)), 2, 0, 9); },
              {"[quant::fake_quantize_per_channel_affine]", "axis 2"});
}

TEST(FakeQuantize, ModuleObservesInTrainingOnly) {
  quant::FakeQuantize fq;  // MinMax by default QConfig; 0..127
  const Tensor x = tensor({-1.0f, 0.3f, 3.0f});
  fq->eval();
  EXPECT_EQ(Floats(fq(x)), Floats(x)) << "no data seen yet: passes through";
  EXPECT_FALSE(fq->observer().calibrated());
  fq->train();
  const Tensor y = fq(x);
  EXPECT_TRUE(fq->observer().calibrated());
  const quant::QParams q = fq->calculate_qparams();
  EXPECT_EQ(Floats(y), Floats(quant::fake_quantize_per_tensor_affine(x, q.scale, q.zero_point, 0, 127)));
  fq->eval();
  fq(tensor({-10.0f, 10.0f}));
  EXPECT_EQ(fq->observer().range(), std::make_pair(-1.0f, 3.0f)) << "eval mode does not move the range";
  fq->enable_fake_quant(false);
  EXPECT_EQ(Floats(fq(x)), Floats(x));
}

TEST(FakeQuantize, WeightMatchesConvertScheme) {
  manual_seed(41);
  const Tensor w = randn({6, 10});
  const quant::PerChannelWeight q = quant::quantize_weight_per_channel(w);
  const Tensor deq = q.qweight.to(kFloat32) * q.scales.reshape({6, 1});
  EXPECT_EQ(Floats(quant::fake_quantize_weight(w)), Floats(deq));
}

nn::Sequential QatCnn() {
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 6, 3).padding(1)), nn::BatchNorm2d(6), nn::ReLU(),
                        nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Conv2d(nn::Conv2dOptions(6, 8, 3).padding(1)),
                        nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Flatten(), nn::Linear(8 * 4 * 4, 16),
                        nn::ReLU(), nn::Linear(16, 4));
}

TEST(QuantQat, PrepareTrainConvert) {
  manual_seed(42);
  nn::Sequential model = QatCnn();
  const std::vector<Tensor> params_before = model->parameters();
  const std::vector<std::string> replaced = quant::prepare_qat(*model);
  EXPECT_EQ(replaced, (std::vector<std::string>{"0", "4", "8", "10"}));
  auto c0 = model->ptr<quant::QATConv2dImpl>(0);
  ASSERT_NE(c0, nullptr);
  EXPECT_NE(c0->bn, nullptr);
  EXPECT_TRUE(c0->relu);
  EXPECT_NE(std::dynamic_pointer_cast<nn::IdentityImpl>(model->ptr(1)), nullptr);
  EXPECT_NE(std::dynamic_pointer_cast<nn::IdentityImpl>(model->ptr(2)), nullptr);
  EXPECT_TRUE(model->ptr<quant::QATLinearImpl>(8)->relu);
  // Only the first layer fake-quantizes its input; the others read their producers' grids.
  EXPECT_TRUE(c0->input_fake_quant->fake_quant_enabled());
  EXPECT_FALSE(model->ptr<quant::QATConv2dImpl>(4)->input_fake_quant->fake_quant_enabled());
  EXPECT_FALSE(model->ptr<quant::QATLinearImpl>(10)->input_fake_quant->fake_quant_enabled());
  // The same parameter tensors: an optimizer made before prepare_qat still trains them.
  const std::vector<Tensor> params_after = model->parameters();
  ASSERT_EQ(params_before.size(), params_after.size());
  for (size_t i = 0; i < params_before.size(); ++i) EXPECT_TRUE(params_before[i].is_same(params_after[i]));

  // A learnable toy task: the class is the quadrant with the brightest pixel sum.
  auto batch = [](int64_t n) {
    Tensor x = randn({n, 1, 16, 16});
    const Tensor q = stack({x.narrow(2, 0, 8).narrow(3, 0, 8).sum({1, 2, 3}), x.narrow(2, 0, 8).narrow(3, 8, 8).sum({1, 2, 3}),
                            x.narrow(2, 8, 8).narrow(3, 0, 8).sum({1, 2, 3}), x.narrow(2, 8, 8).narrow(3, 8, 8).sum({1, 2, 3})},
                           1);
    return std::make_pair(x, q.argmax(1));
  };
  optim::Adam opt(model->parameters(), optim::AdamOptions(3e-3));
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    auto [x, y] = batch(32);
    opt.zero_grad();
    Tensor loss = nn::functional::cross_entropy(model(x), y);
    loss.backward();
    for (const Tensor& p : model->parameters()) {
      ASSERT_TRUE(p.grad().defined());
    }
    opt.step();
    if (step < 5) first += loss.item<double>();
    if (step >= 55) last += loss.item<double>();
    if (step == 40) {
      EXPECT_EQ(quant::freeze_bn_stats(*model), 1);
    }
  }
  EXPECT_LT(last, first) << "the fake-quantized model trains";
  EXPECT_TRUE(c0->bn_frozen());
  EXPECT_FALSE(c0->bn->is_training()) << "frozen BatchNorm stays on its running statistics";

  model->eval();
  auto [test, labels] = batch(200);
  const Tensor qat = model(test).detach();
  quant::convert(*model);
  EXPECT_NE(model->ptr<quant::QuantizedConv2dImpl>(0), nullptr);
  EXPECT_TRUE(model->ptr<quant::QuantizedConv2dImpl>(0)->output_codes);
  const Tensor int8 = model(test);
  // The int8 model computes what the fake-quantized one simulated (Note [One grid per
  // activation] in qat.cpp): the same codes, but for float sums (the fake-quantized convolution)
  // against exact integer ones, which can move a value across a rounding boundary now and then
  // (measured: no difference at all here).
  const float step = model->ptr<quant::StaticQuantizedLinearImpl>(10)->output_qparams().scale;
  const float diff = (int8 - qat).abs().amax().item<float>();
  const double agree = int8.argmax(1).eq(qat.argmax(1)).to(kFloat64).mean().item<double>();
  std::printf("QAT vs int8: max diff %g (output step %g), argmax agreement %.3f\n", diff, step, agree);
  EXPECT_LE(diff, 2.01f * step);
  EXPECT_GE(agree, 0.99);
  // The consumers' inputs were not fake-quantized again: they read the producers' grids.
  EXPECT_EQ(model->ptr<quant::QuantizedConv2dImpl>(4)->input_qparams().scale,
            model->ptr<quant::QuantizedConv2dImpl>(0)->output_qparams().scale);
}

TEST(QuantQat, Errors) {
  nn::Sequential model = QatCnn();
  model->eval();
  ExpectError([&] { quant::prepare_qat(*model); }, {"[quant::prepare_qat]", "eval mode", "model->train()"});
  model->train();
  quant::prepare_qat(*model);
  ExpectError([&] { quant::prepare_qat(*model); }, {"[quant::prepare_qat]", "'0'", "already prepared"});
  model->eval();
  ExpectError([&] { quant::convert(*model); }, {"[quant::convert]", "'0'", "not been calibrated"});
  ExpectError([&] { quant::prepare(*model); }, {"[quant::prepare]", "'0'", "already prepared"});
}

}  // namespace quant_qat_test
}  // namespace ember
