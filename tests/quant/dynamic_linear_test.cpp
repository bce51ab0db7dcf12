// quant::quantize_dynamic and DynamicQuantizedLinear: the quantization parameters, the
// exact int8 arithmetic against a reference computed here (int64 sums), the error against
// float32, module swapping, state_dict round trips, and the errors users get.

#include <ember/ember.h>
#include <ember/quant/quant.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cfloat>
#include <cmath>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace quant_dynamic_linear_test {

using ember::testing::ExpectError;
using ember::testing::Floats;
using ember::testing::Sizes;
using I64 = std::vector<int64_t>;

// y = dequantize(int64 sum of the codes), written out step by step from the scheme in
// quant.h (Note [Dynamic quantization scheme]) with the module's own int8 weights.
std::vector<float> Reference(const quant::DynamicQuantizedLinearImpl& q, const Tensor& x2d) {
  const int64_t M = x2d.size(0), K = x2d.size(1), N = q.out_features();
  const std::vector<float> xs = Floats(x2d.contiguous());
  float lo = xs.empty() ? 0.0f : xs[0], hi = lo;
  for (float v : xs) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  const quant::QParams qp = quant::choose_qparams(lo, hi, 0, 127);
  const std::vector<int64_t> qx = quant::quantize_per_tensor_uint8(x2d, qp, 0, 127).to(kInt64).to_vector<int64_t>();
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
      const float scale = qp.scale * ws[n];
      y[m * N + n] = static_cast<float>(acc - qp.zero_point * rowsum) * scale + b[n];
    }
  }
  return y;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << "at " << i;
}

TEST(QuantParams, ChooseQParams) {
  // [-1, 3] onto 0..127: scale 4/127; -1/scale = -31.75 -> zero point 32.
  quant::QParams q = quant::choose_qparams(-1.0f, 3.0f, 0, 127);
  EXPECT_FLOAT_EQ(q.scale, 4.0f / 127.0f);
  EXPECT_EQ(q.zero_point, 32);
  // The range is widened to hold 0.
  q = quant::choose_qparams(2.0f, 5.0f, 0, 127);
  EXPECT_FLOAT_EQ(q.scale, 5.0f / 127.0f);
  EXPECT_EQ(q.zero_point, 0);
  q = quant::choose_qparams(-6.0f, -2.0f, 0, 255);
  EXPECT_FLOAT_EQ(q.scale, 6.0f / 255.0f);
  EXPECT_EQ(q.zero_point, 255);
  // An all-zero input still gets a usable scale.
  q = quant::choose_qparams(0.0f, 0.0f, 0, 127);
  EXPECT_FLOAT_EQ(q.scale, 0.1f);
  EXPECT_EQ(q.zero_point, 0);
  ExpectError([] { quant::choose_qparams(-INFINITY, 1.0f, 0, 127); }, {"[quant::choose_qparams]", "not finite"});
}

TEST(QuantParams, WeightPerRowSymmetric) {
  const Tensor w = tensor({0.5f, -1.0f, 0.25f, 0.0f, 0.0f, 0.0f, 2.0f, 1.0f, -0.5f}).reshape({3, 3});
  const quant::PerChannelWeight q = quant::quantize_weight_per_channel(w);
  EXPECT_EQ(q.qweight.dtype(), kInt8);
  EXPECT_EQ(Sizes(q.qweight), (I64{3, 3}));
  // Row 0: scale 1/127.5 (0.007843138f); 0.5 -> 63.75 -> 64, -1 -> -127.49999 -> -127 (the float scale
  // rounds up), 0.25 -> 31.875 -> 32. Row 1: zeros, scale FLT_EPSILON. Row 2: scale 2/127.5; 2 -> 127
  // (clamped), 1 -> 64, -0.5 -> -32. PyTorch 1.13's PerChannelMinMaxObserver + quantize_per_channel
  // give the same codes and scales.
  EXPECT_EQ(q.qweight.to(kInt64).to_vector<int64_t>(), (I64{64, -127, 32, 0, 0, 0, 127, 64, -32}));
  EXPECT_EQ(Floats(q.scales), (std::vector<float>{1.0f / 127.5f, FLT_EPSILON, 2.0f / 127.5f}));
  ExpectError([] { quant::quantize_weight_per_channel(ones({4})); },
              {"[quant::quantize_weight_per_channel]", "[out_features, in_features]", "[4]"});
}

TEST(QuantParams, QuantizeActivations) {
  const Tensor x = tensor({-1.0f, 0.0f, 3.0f, 1.0f, 100.0f});
  const quant::QParams q = quant::choose_qparams(-1.0f, 3.0f, 0, 127);
  const Tensor qx = quant::quantize_per_tensor_uint8(x, q, 0, 127);
  EXPECT_EQ(qx.dtype(), kUInt8);
  // 0.0 is exactly the zero point; 100 clamps to 127.
  EXPECT_EQ(qx.to(kInt64).to_vector<int64_t>(), (I64{0, 32, 127, 64, 127}));
}

TEST(DynamicQuantizedLinear, MatchesIntegerReference) {
  manual_seed(0);
  nn::Linear lin(37, 19);
  quant::DynamicQuantizedLinear q(*lin);
  for (int64_t batch : {1, 5, 64}) {
    const Tensor x = randn({batch, 37}) * 2.0 + 0.5;
    const Tensor y = q(x);
    EXPECT_EQ(Sizes(y), (I64{batch, 19}));
    EXPECT_EQ(y.dtype(), kFloat32);
    ExpectNear(Floats(y), Reference(*q, x));
  }
}

TEST(DynamicQuantizedLinear, NoBiasAndLeadingDims) {
  manual_seed(1);
  nn::Linear lin(nn::LinearOptions(16, 8).bias(false));
  quant::DynamicQuantizedLinear q(*lin);
  EXPECT_FALSE(q->bias.defined());
  const Tensor x = randn({2, 3, 16});
  const Tensor y = q(x);
  EXPECT_EQ(Sizes(y), (I64{2, 3, 8}));
  ExpectNear(Floats(y), Reference(*q, x.reshape({6, 16})));
  // A 1-D input is one row.
  EXPECT_EQ(Sizes(q(randn({16}))), (I64{8}));
}

TEST(DynamicQuantizedLinear, NonContiguousInput) {
  manual_seed(2);
  nn::Linear lin(24, 10);
  quant::DynamicQuantizedLinear q(*lin);
  const Tensor base = randn({24, 7});
  const Tensor x = base.t();  // [7, 24] with strides [1, 7]
  ASSERT_FALSE(x.is_contiguous());
  EXPECT_EQ(Floats(q(x)), Floats(q(x.contiguous())));
  ExpectNear(Floats(q(x)), Reference(*q, x));
}

TEST(DynamicQuantizedLinear, ExtremeCodesDoNotSaturate) {
  // Every activation code 127 against weight codes of -127 and 127 (a row's largest |w| maps
  // to 127.49999, so +-127): pair sums of +-32258, close to the int16 limit a vpmaddubsw
  // intermediate has (Note [int8 GEMM]). Must still equal the int64 reference.
  const int64_t K = 1024;
  Tensor w = full({4, K}, -1.0);
  w[1].fill_(1.0);
  nn::Linear lin(K, 4);
  {
    NoGradGuard g;
    lin->weight.copy_(w);
    lin->bias.zero_();
  }
  quant::DynamicQuantizedLinear q(*lin);
  EXPECT_EQ(q->qweight.to(kInt64).amin().item<int64_t>(), -127);
  EXPECT_EQ(q->qweight.to(kInt64).amax().item<int64_t>(), 127);
  const Tensor x = full({3, K}, 5.0);
  ExpectNear(Floats(q(x)), Reference(*q, x));
  // Each output ~ +-5 * K with a small quantization error.
  const std::vector<float> y = Floats(q(x));
  EXPECT_NEAR(y[0], -5.0 * K, 0.01 * 5 * K);
  EXPECT_NEAR(y[1], 5.0 * K, 0.01 * 5 * K);
}

TEST(DynamicQuantizedLinear, ErrorAgainstFloatWithinQuantizationBound) {
  manual_seed(3);
  nn::Linear lin(128, 32);
  quant::DynamicQuantizedLinear q(*lin);
  const Tensor x = randn({16, 128});
  const std::vector<float> got = Floats(q(x));
  const std::vector<float> fp = Floats(lin(x).detach());
  // |x.w - x^.w^| <= sum_k |x_k| |w_k - w^_k| + |w^_k| |x_k - x^_k| <= sum_k |x_k| sw/2 + |w^_k| sx/2.
  const std::vector<float> xs = Floats(x), wq = Floats(q->qweight.to(kFloat32)), ws = Floats(q->scales);
  float lo = 0, hi = 0;
  for (float v : xs) lo = std::min(lo, v), hi = std::max(hi, v);
  const float sx = quant::choose_qparams(lo, hi, 0, 127).scale;
  double err2 = 0, ref2 = 0;
  for (int64_t m = 0; m < 16; ++m) {
    for (int64_t n = 0; n < 32; ++n) {
      double bound = 0;
      for (int64_t k = 0; k < 128; ++k) {
        bound += std::abs(xs[m * 128 + k]) * ws[n] / 2 + std::abs(wq[n * 128 + k] * ws[n]) * sx / 2;
      }
      const double d = got[m * 32 + n] - fp[m * 32 + n];
      EXPECT_LE(std::abs(d), bound * 1.001 + 1e-5) << "at " << m << ", " << n;
      err2 += d * d;
      ref2 += static_cast<double>(fp[m * 32 + n]) * fp[m * 32 + n];
    }
  }
  // And in practice far below the worst case: a relative RMS error of a few percent at most.
  EXPECT_LT(std::sqrt(err2 / ref2), 0.03);
}

TEST(DynamicQuantizedLinear, SameBitsWithOneOrTwoThreads) {
  manual_seed(4);
  nn::Linear lin(300, 200);
  quant::DynamicQuantizedLinear q(*lin);
  const Tensor x = randn({257, 300});
  const int saved = get_num_threads();
  set_num_threads(1);
  const std::vector<float> one = Floats(q(x));
  set_num_threads(2);
  const std::vector<float> two = Floats(q(x));
  set_num_threads(saved);
  EXPECT_EQ(one, two);
}

TEST(DynamicQuantizedLinear, ConcurrentCallsAgree) {
  // A server calls one model from several threads; the first calls race to set up the
  // zero-point sums, and both GEMM paths (few rows: ember's kernel, more: oneDNN) run.
  manual_seed(11);
  nn::Linear lin(64, 32);
  quant::DynamicQuantizedLinear q(*lin);
  const Tensor small = randn({2, 64}), large = randn({16, 64});
  quant::DynamicQuantizedLinear fresh(*lin);
  const std::vector<float> want_small = Floats(fresh(small)), want_large = Floats(fresh(large));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        if (Floats(q(small)) != want_small || Floats(q(large)) != want_large) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(DynamicQuantizedLinear, ZeroSizedInputs) {
  manual_seed(5);
  nn::Linear lin(8, 3);
  quant::DynamicQuantizedLinear q(*lin);
  EXPECT_EQ(Sizes(q(randn({0, 8}))), (I64{0, 3}));
  nn::Linear empty_in(0, 3);
  quant::DynamicQuantizedLinear qe(*empty_in);
  EXPECT_EQ(Floats(qe(randn({2, 0}))), Floats(empty_in->bias.detach().expand({2, 3}).contiguous()));
}

TEST(DynamicQuantizedLinear, Errors) {
  manual_seed(6);
  nn::Linear lin(8, 3);
  quant::DynamicQuantizedLinear q(*lin);
  ExpectError([&] { q(randn({2, 7})); }, {"[DynamicQuantizedLinear]", "[2, 7]", "in_features=8", "[..., 8]"});
  ExpectError(
      [&] {
        q(randn({2, 8}, TensorOptions(kFloat64)));
      },
      {"[DynamicQuantizedLinear]", "float32", "float64", ".to(ember::kFloat32)"});
  ExpectError([&] { q(Tensor()); }, {"[DynamicQuantizedLinear]", "undefined"});
  Tensor bad = randn({2, 8});
  bad[0][3].fill_(NAN);
  ExpectError([&] { q(bad); }, {"[DynamicQuantizedLinear]", "inf or NaN"});
  // A module whose weights were converted to float64 names the fix.
  q->to(kFloat64);
  ExpectError([&] { q(randn({2, 8})); }, {"[DynamicQuantizedLinear]", "scales", "float32", "float64"});
}

struct TwoLayerImpl : nn::Module {
  TwoLayerImpl() : Module("TwoLayer") {
    body = register_module("body", nn::Sequential(nn::Linear(12, 20), nn::ReLU(), nn::Linear(20, 6)));
    head = register_module("head", nn::Linear(6, 2));
  }
  Tensor forward(const Tensor& x) override { return head(body(x)); }
  nn::Sequential body{nullptr};
  nn::Linear head{nullptr};
};
EMBER_MODULE(TwoLayer);

TEST(QuantizeDynamic, ReplacesLinearsInSequential) {
  manual_seed(7);
  nn::Sequential model(nn::Linear(12, 20), nn::ReLU(), nn::Linear(20, 6));
  model->eval();
  const Tensor x = randn({4, 12});
  const Tensor fp = model(x).detach();
  const std::vector<std::string> names = quant::quantize_dynamic(*model, {quant::ModuleKind::Linear});
  EXPECT_EQ(names, (std::vector<std::string>{"0", "2"}));
  auto q0 = model->ptr<quant::DynamicQuantizedLinearImpl>(0);
  auto q2 = model->ptr<quant::DynamicQuantizedLinearImpl>(2);
  EXPECT_FALSE(q0->is_training());
  // The Sequential runs the quantized layers: its output is theirs.
  const Tensor want = (*q2)((*q0)(x).relu());
  EXPECT_EQ(Floats(model(x)), Floats(want));
  EXPECT_LT((model(x) - fp).abs().amax().item<float>(), 0.05f);
  const std::string repr = model->repr();
  EXPECT_NE(repr.find("(0): DynamicQuantizedLinear(in_features=12, out_features=20, dtype=qint8"), std::string::npos)
      << repr;
  EXPECT_EQ(model->parameters().size(), 0u);
  // Quantizing again finds nothing left to replace.
  EXPECT_TRUE(quant::quantize_dynamic(*model).empty());
}

TEST(QuantizeDynamic, NestedModulesAndHeldChildrenWarn) {
  manual_seed(8);
  TwoLayer model;
  std::vector<std::string> warnings;
  WarningHandler saved = set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  const std::vector<std::string> names = quant::quantize_dynamic(*model);
  set_warning_handler(saved);
  EXPECT_EQ(names, (std::vector<std::string>{"body.0", "body.2", "head"}));
  // `head` is also held by the TwoLayer's member holder, which forward calls: it stays float.
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("'head'"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("nn::Sequential"), std::string::npos) << warnings[0];
  EXPECT_TRUE(model->named_buffers().contains("body.0.qweight"));
  EXPECT_TRUE(model->named_buffers().contains("head.qweight"));
}

TEST(QuantizeDynamic, Errors) {
  nn::Sequential model(nn::Linear(4, 4));
  ExpectError([&] { quant::quantize_dynamic(*model, {quant::ModuleKind::Linear}, kFloat16); },
              {"[quant::quantize_dynamic]", "float16", "int8"});
  ExpectError([&] { quant::quantize_dynamic(*model, {}); }, {"[quant::quantize_dynamic]", "empty"});
  nn::Linear lin(4, 4);
  ExpectError([&] { quant::quantize_dynamic(*lin); },
              {"[quant::quantize_dynamic]", "itself is a Linear", "DynamicQuantizedLinear(*linear)"});
  nn::Sequential with_lstm(nn::Linear(4, 4));
  with_lstm->push_back(nn::LSTM(4, 4));
  // Only Linear asked: the LSTM stays as it is.
  EXPECT_EQ(quant::quantize_dynamic(*with_lstm, {quant::ModuleKind::Linear}), (std::vector<std::string>{"0"}));
  EXPECT_EQ((*with_lstm)[1]->name(), "LSTM");
  // LSTM asked too (tests/quant/dynamic_lstm_test.cpp has the rest).
  EXPECT_EQ(quant::quantize_dynamic(*with_lstm, {quant::ModuleKind::Linear, quant::ModuleKind::LSTM}),
            (std::vector<std::string>{"1"}));
  EXPECT_EQ((*with_lstm)[1]->name(), "DynamicQuantizedLSTM");
}

TEST(QuantizeDynamic, RefusesTracing) {
  nn::Sequential model(nn::Linear(4, 3));
  model->eval();
  quant::quantize_dynamic(*model);
  ExpectError([&] { jit::trace(*model, randn({2, 4})); }, {"DynamicQuantizedLinear", "cannot be traced"});
}

TEST(QuantizeDynamic, StateDictSaveLoadAndSize) {
  manual_seed(9);
  nn::Sequential model(nn::Linear(256, 128), nn::ReLU(), nn::Linear(128, 10));
  const auto dir = std::filesystem::temp_directory_path() / ("ember_quant_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string fp32_path = (dir / "fp32.safetensors").string(), int8_path = (dir / "int8.safetensors").string();
  save(model->state_dict(), fp32_path);
  const int64_t fp32_bytes = quant::state_dict_bytes(*model);
  quant::quantize_dynamic(*model);
  const auto sd = model->state_dict();
  EXPECT_EQ(sd.keys(),
            (std::vector<std::string>{"0.qweight", "0.scales", "0.bias", "2.qweight", "2.scales", "2.bias"}));
  EXPECT_EQ(sd["0.qweight"].dtype(), kInt8);
  EXPECT_EQ(sd["0.scales"].dtype(), kFloat32);
  save(sd, int8_path);
  const int64_t int8_bytes = quant::state_dict_bytes(*model);
  // Weights 4x smaller; scales and bias stay float32.
  EXPECT_EQ(int8_bytes, (256 * 128 + 128 * 10) * 1 + (128 + 10) * 4 * 2);
  EXPECT_EQ(fp32_bytes, (256 * 128 + 128 * 10 + 128 + 10) * 4);
  const auto fp32_file = std::filesystem::file_size(fp32_path), int8_file = std::filesystem::file_size(int8_path);
  EXPECT_GT(static_cast<double>(fp32_file) / static_cast<double>(int8_file), 3.5);

  // A fresh model (other weights), quantized, then loaded from the file: same outputs.
  manual_seed(10);
  nn::Sequential other(nn::Linear(256, 128), nn::ReLU(), nn::Linear(128, 10));
  quant::quantize_dynamic(*other);
  const Tensor x = randn({3, 256});
  EXPECT_NE(Floats(other(x)), Floats(model(x)));
  other->load_state_dict(load(int8_path).to_tensor_dict());
  EXPECT_EQ(Floats(other(x)), Floats(model(x)));
  // Built directly from sizes, then loaded.
  quant::DynamicQuantizedLinear direct(256, 128);
  OrderedDict<std::string, Tensor> first;
  for (const char* k : {"qweight", "scales", "bias"}) first.insert(k, sd[std::string("0.") + k]);
  direct->load_state_dict(first);
  EXPECT_EQ(Floats(direct(x)), Floats(model->ptr<quant::DynamicQuantizedLinearImpl>(0)->forward(x)));
  // A float32 state_dict does not load into the quantized model.
  ExpectError([&] { other->load_state_dict(load(fp32_path).to_tensor_dict()); }, {"0.weight", "0.qweight"});
  // clone() copies the int8 weights.
  auto copy = std::dynamic_pointer_cast<nn::SequentialImpl>(model->clone());
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(Floats(copy->forward(x)), Floats(model(x)));
  std::filesystem::remove_all(dir);
}

}  // namespace quant_dynamic_linear_test
}  // namespace ember
