// Static post-training quantization: observers (torch 1.13's formulas, worked out by hand
// here; tests/quant/torch_parity.cpp checks them against libtorch), quantize -> dequantize
// error, StaticQuantizedLinear against an integer reference, prepare (ReLU fusion) ->
// calibrate -> convert, thread-count independence, state_dict round trips and errors.

#include <ember/ember.h>
#include <ember/quant/quant.h>
#include <ember/quant/static_quant.h>
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "test_util.h"

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace quant_static_test {

using ember::testing::ExpectError;
using ember::testing::Floats;
using ember::testing::Sizes;
using I64 = std::vector<int64_t>;

TEST(QuantObservers, MinMaxQParamsFollowTorch) {
  quant::MinMaxObserver obs;  // quint8, reduce_range: codes 0..127
  EXPECT_FALSE(obs.calibrated());
  obs.observe(tensor({-1.0f, 0.5f, 2.0f}));
  obs.observe(tensor({0.0f, 3.0f}));
  EXPECT_EQ(obs.range(), std::make_pair(-1.0f, 3.0f));
  quant::QParams q = obs.calculate_qparams();
  // torch: scale = (3 - -1) / 127; zero_point = 0 - round(-1 / scale) = round(31.75) = 32.
  EXPECT_EQ(q.scale, 4.0f / 127.0f);
  EXPECT_EQ(q.zero_point, 32);
  // Only positive values: the range is widened to 0, zero point 0.
  quant::MinMaxObserver pos;
  pos.observe(tensor({0.5f, 2.0f}));
  q = pos.calculate_qparams();
  EXPECT_EQ(q.scale, 2.0f / 127.0f);
  EXPECT_EQ(q.zero_point, 0);
  // Only negative values: zero point at the top code.
  quant::MinMaxObserver neg(0, 255);
  neg.observe(tensor({-6.0f, -2.0f}));
  q = neg.calculate_qparams();
  EXPECT_EQ(q.scale, 6.0f / 255.0f);
  EXPECT_EQ(q.zero_point, 255);
  // All zeros: scale eps (torch.finfo(float32).eps), zero point 0.
  quant::MinMaxObserver zero;
  zero.observe(zeros({3}));
  q = zero.calculate_qparams();
  EXPECT_EQ(q.scale, FLT_EPSILON);
  EXPECT_EQ(q.zero_point, 0);
  // torch's zero point is qmin - round(lo / scale), not the dynamic path's nudged choice:
  // [-0.3, 2.2] gives scale 2.5/127, -0.3 / scale = -15.24 -> 15.
  quant::MinMaxObserver mixed;
  mixed.observe(tensor({-0.3f, 2.2f}));
  q = mixed.calculate_qparams();
  const float scale = (2.2f - -0.3f) / 127.0f;
  EXPECT_EQ(q.scale, scale);
  EXPECT_EQ(q.zero_point, static_cast<int32_t>(-std::nearbyint(-0.3f / scale)));
  EXPECT_EQ(q.zero_point, 15);
}

TEST(QuantObservers, MovingAverageFollowsTorch) {
  quant::MovingAverageMinMaxObserver obs;  // averaging_constant 0.01
  EXPECT_EQ(obs.averaging_constant(), 0.01f);
  obs.observe(tensor({-1.0f, 2.0f}));
  EXPECT_EQ(obs.range(), std::make_pair(-1.0f, 2.0f));  // the first batch sets the range
  obs.observe(tensor({-3.0f, 0.0f, 4.0f}));
  const float c = 0.01f;
  const float want_min = -1.0f + c * (-3.0f - -1.0f), want_max = 2.0f + c * (4.0f - 2.0f);
  EXPECT_EQ(obs.range(), std::make_pair(want_min, want_max));
  EXPECT_NEAR(want_min, -1.02f, 1e-6f);
  const quant::QParams q = obs.calculate_qparams();
  EXPECT_EQ(q.scale, (want_max - want_min) / 127.0f);
  EXPECT_EQ(q.zero_point, static_cast<int32_t>(-std::nearbyint(want_min / q.scale)));
  ExpectError([] { quant::MovingAverageMinMaxObserver bad(0.0f); },
              {"[quant::MovingAverageMinMaxObserver]", "averaging_constant"});
}

TEST(QuantObservers, PercentileClipsOutliersAndIgnoresBatching) {
  manual_seed(3);
  const Tensor x = rand({20000}) * 2.0 - 1.0;  // uniform in [-1, 1)
  Tensor with_outlier = cat({x, tensor({100.0f})});
  quant::PercentileObserver one(99.99);
  one.observe(with_outlier);
  const auto [lo, hi] = one.range();
  // The 99.99th percentile of 20001 values ignores the single outlier: hi within one bin
  // (256 / 2048: the histogram spans [-128, 128]) of 1.
  EXPECT_LE(hi, 1.0f + 0.13f);
  EXPECT_GE(hi, 0.99f);
  EXPECT_GE(lo, -1.0f - 1e-6f);
  EXPECT_LE(lo, -0.87f);
  // The same values in another order and batching give the same range: small values first
  // (a fine histogram, merged 16 times when the outlier arrives) or last (binned directly).
  const Tensor small = x.narrow(0, 0, 7000) * 0.001;
  quant::PercentileObserver small_first(99.9);
  small_first.observe(small);
  small_first.observe(small);
  small_first.observe(with_outlier);
  quant::PercentileObserver small_last(99.9);
  small_last.observe(with_outlier);
  small_last.observe(cat({small, small}));
  EXPECT_EQ(small_first.range(), small_last.range());
  EXPECT_EQ(small_first.calculate_qparams().scale, small_last.calculate_qparams().scale);
  // MinMax would take the outlier.
  quant::MinMaxObserver mm;
  mm.observe(with_outlier);
  EXPECT_EQ(mm.range().second, 100.0f);
}

TEST(QuantObservers, Errors) {
  quant::MinMaxObserver obs;
  ExpectError([&] { obs.calculate_qparams(); },
              {"[quant::MinMaxObserver::calculate_qparams]", "seen no data", "calibration data"});
  ExpectError([&] { obs.observe(tensor({1.0f, NAN})); }, {"[quant::MinMaxObserver]", "inf or NaN"});
  ExpectError([&] { obs.observe(ones({2}, TensorOptions(kFloat64))); }, {"[quant::MinMaxObserver]", "float32"});
  ExpectError([] { quant::MinMaxObserver bad(0, 300); }, {"[quant::Observer]", "[0, 255]"});
}

// Within the calibrated range, quantize -> dequantize moves a value by at most scale / 2;
// outside it, values clamp to the range's ends.
TEST(QuantObservers, QuantizeDequantizeErrorBound) {
  manual_seed(4);
  const Tensor x = randn({5000}) * 3.0 + 0.7;
  quant::MinMaxObserver obs;
  obs.observe(x);
  const quant::QParams q = obs.calculate_qparams();
  const std::vector<int64_t> codes = quant::quantize_per_tensor_uint8(x, q, 0, 127).to(kInt64).to_vector<int64_t>();
  const std::vector<float> xs = Floats(x);
  double worst = 0.0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double back = static_cast<double>(q.scale) * static_cast<double>(codes[i] - q.zero_point);
    worst = std::max(worst, std::abs(back - static_cast<double>(xs[i])));
  }
  EXPECT_LE(worst, 0.5 * q.scale * (1.0 + 1e-5));
  EXPECT_GT(worst, 0.3 * q.scale);  // the bound is nearly reached: the test can tell
  // Outside the range: clamped to the last code.
  const quant::QParams narrow{0.01f, 10};
  EXPECT_EQ(quant::quantize_per_tensor_uint8(tensor({5.0f, -5.0f}), narrow, 0, 127).to(kInt64).to_vector<int64_t>(),
            (I64{127, 0}));
}

// The converted layer's output, written out step by step from Note [Static quantization
// scheme] with exact integer sums.
std::vector<float> Reference(const quant::StaticQuantizedLinearImpl& q, const Tensor& x2d) {
  const int64_t M = x2d.size(0), K = x2d.size(1), N = q.out_features();
  const quant::QParams qin = q.input_qparams(), qout = q.output_qparams();
  const std::vector<int64_t> qx = quant::quantize_per_tensor_uint8(x2d, qin, 0, 127).to(kInt64).to_vector<int64_t>();
  const std::vector<int64_t> qw = q.qweight.to(kInt64).to_vector<int64_t>();
  const std::vector<float> ws = Floats(q.scales);
  const std::vector<float> b = q.bias.defined() ? Floats(q.bias) : std::vector<float>(N, 0.0f);
  std::vector<float> y(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      int64_t acc = 0, rowsum = 0;
      for (int64_t k = 0; k < K; ++k) {
        acc += qx[m * K + k] * qw[n * K + k];
        rowsum += qw[n * K + k];
      }
      float v = static_cast<float>(acc - qin.zero_point * rowsum) * (qin.scale * ws[n]) + b[n];
      if (q.relu()) v = std::max(v, 0.0f);
      const float code =
          std::clamp(std::nearbyint(v * (1.0f / qout.scale)) + static_cast<float>(qout.zero_point), 0.0f, 127.0f);
      y[m * N + n] = (code - static_cast<float>(qout.zero_point)) * qout.scale;
    }
  }
  return y;
}

TEST(StaticQuantizedLinear, MatchesIntegerReference) {
  manual_seed(5);
  nn::Linear lin(37, 19);
  for (bool relu : {false, true}) {
    quant::StaticQuantizedLinear q(*lin, quant::QParams{0.05f, 40}, quant::QParams{0.02f, relu ? 0 : 60}, relu);
    for (int64_t batch : {1, 5, 64}) {
      const Tensor x = randn({batch, 37}) * 2.0 + 0.5;  // partly outside the input range: clamps
      const Tensor y = q(x);
      EXPECT_EQ(Sizes(y), (I64{batch, 19}));
      const std::vector<float> got = Floats(y), want = Reference(*q, x);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << "relu " << relu << " at " << i;
    }
  }
}

nn::Sequential Mlp() {
  return nn::Sequential(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 64), nn::ReLU(), nn::Linear(64, 10));
}

TEST(QuantStatic, PrepareFusesReLUCalibrateConvert) {
  manual_seed(6);
  nn::Sequential model = Mlp();
  model->eval();
  const Tensor test = randn({200, 64});
  const Tensor fp = model(test).detach();
  const std::vector<std::string> observed = quant::prepare(*model);
  EXPECT_EQ(observed, (std::vector<std::string>{"0", "2", "4"}));
  auto o0 = model->ptr<quant::ObservedLinearImpl>(0);
  EXPECT_TRUE(o0->relu);
  EXPECT_TRUE(model->ptr<quant::ObservedLinearImpl>(2)->relu);
  EXPECT_FALSE(model->ptr<quant::ObservedLinearImpl>(4)->relu);
  EXPECT_NE(std::dynamic_pointer_cast<nn::IdentityImpl>(model->ptr(1)), nullptr) << "the fused ReLU is gone";
  EXPECT_NE(std::dynamic_pointer_cast<nn::IdentityImpl>(model->ptr(3)), nullptr);
  // The prepared model computes what the float one does.
  {
    NoGradGuard no_grad;
    EXPECT_EQ(Floats(model(test)), Floats(fp));
    for (int i = 0; i < 10; ++i) model(randn({100, 64}));  // calibration
  }
  EXPECT_EQ(o0->input_observer->batches_seen(), 11);
  EXPECT_GE(o0->output_observer->range().first, 0.0f) << "the output observer sees the fused ReLU's output";
  const std::vector<std::string> converted = quant::convert(*model);
  EXPECT_EQ(converted, observed);
  auto q0 = model->ptr<quant::StaticQuantizedLinearImpl>(0);
  EXPECT_TRUE(q0->relu());
  EXPECT_FALSE(model->ptr<quant::StaticQuantizedLinearImpl>(4)->relu());
  EXPECT_EQ(q0->output_qparams().zero_point, 0);
  EXPECT_EQ(model->parameters().size(), 0u);
  const Tensor int8 = model(test);
  // Bound: each layer adds about half an activation step (range / 127 / 2) at its input
  // and output; over three layers the logits move by under 5% of their range here
  // (measured 2.5%).
  const float range = fp.abs().amax().item<float>();
  const float err = (int8 - fp).abs().amax().item<float>();
  EXPECT_LT(err, 0.05f * range) << "max |int8 - fp32| = " << err << " of " << range;
  std::printf("max |int8 - fp32| = %g of a range of %g (%.2f%%)\n", err, range, 100.0 * err / range);
  EXPECT_GT(err, 0.0f);
  // The predictions nearly all agree.
  const double agree = int8.argmax(1).eq(fp.argmax(1)).to(kFloat64).mean().item<double>();
  EXPECT_GE(agree, 0.95);
  const std::string repr = model->repr();
  EXPECT_NE(repr.find("StaticQuantizedLinearReLU(in_features=64, out_features=128, relu=True"), std::string::npos)
      << repr;
}

TEST(QuantStatic, ObserverKinds) {
  for (quant::ObserverKind kind :
       {quant::ObserverKind::MinMax, quant::ObserverKind::MovingAverageMinMax, quant::ObserverKind::Percentile}) {
    manual_seed(9);
    nn::Sequential model = Mlp();
    model->eval();
    const Tensor test = randn({100, 64});
    const Tensor fp = model(test).detach();
    quant::QConfig config;
    config.activation = kind;
    quant::prepare(*model, config);
    {
      NoGradGuard no_grad;
      for (int i = 0; i < 5; ++i) model(randn({100, 64}));
    }
    quant::convert(*model);
    const float range = fp.abs().amax().item<float>();
    EXPECT_LT((model(test) - fp).abs().amax().item<float>(), 0.1f * range) << static_cast<int>(kind);
  }
}

// A module with a Linear and a ReLU registered side by side, but not in a Sequential: its
// forward decides the order, so nothing is fused.
struct LinearThenReLUImpl : nn::Module {
  LinearThenReLUImpl() : Module("LinearThenReLU") {
    register_module("fc", nn::Linear(4, 3));
    register_module("act", nn::ReLU());
  }
  Tensor forward(const Tensor& x) override {
    return named_children()["act"]->forward(named_children()["fc"]->forward(x));
  }
};

TEST(QuantStatic, NoFusionOutsideSequentialNorWithoutReLU) {
  auto custom = std::make_shared<LinearThenReLUImpl>();
  custom->eval();
  EXPECT_EQ(quant::prepare(*custom), (std::vector<std::string>{"fc"}));
  auto fc = std::dynamic_pointer_cast<quant::ObservedLinearImpl>(custom->named_children()["fc"]);
  ASSERT_NE(fc, nullptr);
  EXPECT_FALSE(fc->relu);
  EXPECT_NE(std::dynamic_pointer_cast<nn::ReLUImpl>(custom->named_children()["act"]), nullptr);
  // In a Sequential, only a ReLU right after the Linear is fused.
  nn::Sequential seq(nn::Linear(4, 4), nn::GELU(), nn::ReLU(), nn::Linear(4, 2), nn::ReLU());
  seq->eval();
  quant::prepare(*seq);
  EXPECT_FALSE(seq->at<quant::ObservedLinearImpl>(0).relu);
  EXPECT_NE(std::dynamic_pointer_cast<nn::ReLUImpl>(seq->ptr(2)), nullptr);
  EXPECT_TRUE(seq->at<quant::ObservedLinearImpl>(3).relu);
  EXPECT_NE(std::dynamic_pointer_cast<nn::IdentityImpl>(seq->ptr(4)), nullptr);
}

TEST(QuantStatic, SameBitsWithOneAndTwoThreads) {
  manual_seed(10);
  nn::Sequential model(nn::Linear(300, 200), nn::ReLU(), nn::Linear(200, 10));
  model->eval();
  quant::prepare(*model);
  {
    NoGradGuard no_grad;
    model(randn({64, 300}));
  }
  quant::convert(*model);
  const int saved = get_num_threads();
  for (int64_t batch : {1, 7, 256}) {
    const Tensor x = randn({batch, 300});
    set_num_threads(1);
    const std::vector<float> one = Floats(model(x));
    set_num_threads(2);
    const std::vector<float> two = Floats(model(x));
    EXPECT_EQ(one, two) << "batch " << batch;
  }
  set_num_threads(saved);
}

TEST(QuantStatic, StateDictRoundTrip) {
  manual_seed(11);
  nn::Sequential model(nn::Linear(20, 30), nn::ReLU(), nn::Linear(30, 5));
  model->eval();
  quant::prepare(*model);
  {
    NoGradGuard no_grad;
    model(randn({32, 20}));
  }
  quant::convert(*model);
  const auto state = model->state_dict();
  EXPECT_TRUE(state.contains("0.input_scale"));
  EXPECT_TRUE(state.contains("2.output_zero_point"));
  nn::Sequential fresh(quant::StaticQuantizedLinear(20, 30, true, true), nn::Identity(),
                       quant::StaticQuantizedLinear(30, 5));
  fresh->load_state_dict(state);
  const Tensor x = randn({8, 20});
  EXPECT_EQ(Floats(fresh(x)), Floats(model(x)));
  auto copy = std::dynamic_pointer_cast<nn::SequentialImpl>(model->clone());
  EXPECT_EQ(Floats(copy->forward(x)), Floats(model(x)));
  EXPECT_LT(quant::state_dict_bytes(*model), 20 * 30 + 30 * 5 + 4 * (30 + 5) * 2 + 100);
}

TEST(QuantStatic, Errors) {
  manual_seed(12);
  nn::Sequential model = Mlp();
  ExpectError([&] { quant::prepare(*model); }, {"[quant::prepare]", "training mode", "model->eval()"});
  model->eval();
  ExpectError([&] { quant::convert(*model); }, {"[quant::convert]", "no prepared layer", "quant::prepare"});
  quant::prepare(*model);
  ExpectError([&] { quant::prepare(*model); }, {"[quant::prepare]", "'0'", "is already prepared"});
  // convert before calibration names the layer and the fix; nothing is replaced.
  ExpectError([&] { quant::convert(*model); },
              {"[quant::convert]", "'0'", "has not been calibrated", "between quant::prepare and quant::convert"});
  EXPECT_NE(model->ptr<quant::ObservedLinearImpl>(0).get(), nullptr);
  ExpectError(
      [&] {
        NoGradGuard no_grad;
        Tensor bad = randn({2, 64});
        bad[0][1].fill_(INFINITY);
        model(bad);
      },
      {"[quant::MinMaxObserver]", "inf or NaN", "calibration data"});
  {
    NoGradGuard no_grad;
    model(randn({4, 64}));
  }
  quant::convert(*model);
  ExpectError([&] { model(randn({2, 63})); }, {"[StaticQuantizedLinear]", "in_features=64"});
  ExpectError([&] { model(randn({2, 64}).to(kFloat64)); }, {"[StaticQuantizedLinear]", "float32", "float64"});
}

}  // namespace quant_static_test
}  // namespace ember
