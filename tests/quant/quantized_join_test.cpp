// Quantized addition, concatenation and average pooling (quant/quantized_ops.h) against
// references written from their definitions, quant::FloatFunctional, and prepare -> calibrate
// -> convert of models that are not a plain Sequential: a residual block and a two-branch
// concatenation (thread-count independence, clone, state_dict, tracing, artifacts, errors).
// tests/quant/torch_parity.cpp compares the ops with libtorch's quantized::add / add_relu /
// cat / avg_pool2d / adaptive_avg_pool2d.

#include <ember/ember.h>
#include <ember/jit/jit.h>
#include <ember/quant/quantized_ops.h>
#include <ember/quant/static_quant.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "quant/quant_models.h"
#include "test_util.h"

namespace ember {
namespace quant_join_test {

using ember::testing::ExpectError;
using ember::testing::Floats;
using ember::testing::Sizes;
using ember::testing::Strides;
using I64 = std::vector<int64_t>;

Tensor RandomCodes(I64 sizes, int64_t hi = 128) { return randint(0, hi, sizes).to(kUInt8); }

// Note [Requantizing joins], one element at a time.
uint8_t Requant(float v, quant::QParams out, bool relu) {
  const float c = std::nearbyint(v * (1.0f / out.scale)) + static_cast<float>(out.zero_point);
  const float lo = relu ? static_cast<float>(out.zero_point) : 0.0f;
  return static_cast<uint8_t>(std::min(std::max(c, lo), 127.0f));
}
float Value(uint8_t q, quant::QParams g) { return (static_cast<float>(q) - static_cast<float>(g.zero_point)) * g.scale; }

TEST(QuantizedAdd, MatchesDefinition) {
  manual_seed(1);
  const quant::QParams ga{0.031f, 17}, gb{0.058f, 90}, go{0.07f, 40};
  for (bool relu : {false, true}) {
    // Same sizes; a broadcast [1, 3, 1, 5]; a non-contiguous (transposed) view.
    const Tensor a = RandomCodes({2, 3, 4, 5});
    for (const Tensor& b : {RandomCodes({2, 3, 4, 5}), RandomCodes({1, 3, 1, 5}), RandomCodes({2, 3, 5, 4}).transpose(2, 3)}) {
      const Tensor y = quant::quantized_add(a, ga.scale, ga.zero_point, b, gb.scale, gb.zero_point, go.scale,
                                            go.zero_point, relu);
      ASSERT_EQ(y.dtype(), kUInt8);
      ASSERT_EQ(Sizes(y), (I64{2, 3, 4, 5}));
      const Tensor be = b.expand({2, 3, 4, 5}).contiguous();
      const auto av = a.contiguous().to_vector<uint8_t>(), bv = be.to_vector<uint8_t>();
      const auto yv = y.contiguous().to_vector<uint8_t>();
      int64_t clamped = 0;
      for (size_t i = 0; i < av.size(); ++i) {
        const uint8_t want = Requant(Value(av[i], ga) + Value(bv[i], gb), go, relu);
        ASSERT_EQ(yv[i], want) << "element " << i << " relu " << relu;
        clamped += want == 127 || (relu && want == go.zero_point);
      }
      EXPECT_LT(clamped, static_cast<int64_t>(av.size()));
      // float32 output: the values of the same codes.
      const Tensor yf = quant::quantized_add(a, ga.scale, ga.zero_point, b, gb.scale, gb.zero_point, go.scale,
                                             go.zero_point, relu, kFloat32);
      EXPECT_EQ(Floats(yf), Floats(quant::dequantize_per_tensor(y, go.scale, go.zero_point)));
    }
  }
  // float32 inputs are quantized with their own grids first.
  const Tensor xa = randn({3, 8}), xb = randn({3, 8});
  const Tensor want = quant::quantized_add(quant::quantize_per_tensor(xa, 0.03, 60), 0.03, 60,
                                           quant::quantize_per_tensor(xb, 0.05, 50), 0.05, 50, 0.08, 64);
  EXPECT_TRUE(equal(quant::quantized_add(xa, 0.03, 60, xb, 0.05, 50, 0.08, 64), want));
}

TEST(QuantizedAdd, KeepsChannelsLastAndThreadCount) {
  manual_seed(2);
  // Two conv outputs: channels-last codes of the same sizes keep their layout.
  const Tensor a = RandomCodes({4, 16, 40, 40}).permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  const Tensor b = RandomCodes({4, 16, 40, 40}).permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  const int saved = get_num_threads();
  set_num_threads(1);
  const Tensor y1 = quant::quantized_add(a, 0.02, 10, b, 0.03, 64, 0.05, 30, true);
  set_num_threads(2);
  const Tensor y2 = quant::quantized_add(a, 0.02, 10, b, 0.03, 64, 0.05, 30, true);
  set_num_threads(saved);
  EXPECT_EQ(Strides(y1), Strides(a));
  EXPECT_TRUE(equal(y1, y2));
  EXPECT_TRUE(equal(y1, quant::quantized_add(a.contiguous(), 0.02, 10, b.contiguous(), 0.03, 64, 0.05, 30, true)));
}

TEST(QuantizedCat, MatchesDefinition) {
  manual_seed(3);
  const std::vector<quant::QParams> g{{0.02f, 10}, {0.05f, 64}, {0.04f, 30}};
  const quant::QParams go{0.04f, 30};  // the third input is already on the output grid
  const std::vector<Tensor> xs{RandomCodes({2, 3, 4}), RandomCodes({2, 1, 4}), RandomCodes({2, 4, 2}).transpose(1, 2)};
  for (int64_t dim : {int64_t{1}, int64_t{-2}}) {
    const Tensor y = quant::quantized_cat(xs, {g[0].scale, g[1].scale, g[2].scale},
                                          {g[0].zero_point, g[1].zero_point, g[2].zero_point}, dim, go.scale,
                                          go.zero_point);
    ASSERT_EQ(Sizes(y), (I64{2, 6, 4}));
    int64_t offset = 0;
    for (size_t k = 0; k < xs.size(); ++k) {
      const int64_t n = xs[k].size(1);
      const auto got = y.narrow(1, offset, n).contiguous().to_vector<uint8_t>();
      const auto in = xs[k].contiguous().to_vector<uint8_t>();
      for (size_t i = 0; i < in.size(); ++i) {
        ASSERT_EQ(got[i], Requant(Value(in[i], g[k]), go, false)) << "input " << k << " element " << i;
      }
      if (k == 2) {
        EXPECT_EQ(got, in) << "same grid: a copy";
      }
      offset += n;
    }
    const Tensor yf = quant::quantized_cat(xs, {g[0].scale, g[1].scale, g[2].scale},
                                           {g[0].zero_point, g[1].zero_point, g[2].zero_point}, dim, go.scale,
                                           go.zero_point, kFloat32);
    EXPECT_EQ(Floats(yf), Floats(quant::dequantize_per_tensor(y, go.scale, go.zero_point)));
  }
  // A float input is quantized with its grid first.
  const Tensor x = randn({2, 3});
  EXPECT_TRUE(equal(quant::quantized_cat({x, xs[0].select(2, 0)}, {0.05, 0.02}, {64, 10}, 0, 0.1, 20),
                    quant::quantized_cat({quant::quantize_per_tensor(x, 0.05, 64), xs[0].select(2, 0)}, {0.05, 0.02},
                                         {64, 10}, 0, 0.1, 20)));
}

// Average pooling of codes written out: exact sums of (q - zp), then round(S * (1 / n)) + zp.
std::vector<uint8_t> AvgReference(const Tensor& codes, int64_t zp, int64_t k, int64_t s, int64_t p, bool ceil_mode,
                                  bool count_include_pad, int64_t divisor, int64_t OH, int64_t OW) {
  const auto x = codes.contiguous().to_vector<uint8_t>();
  const int64_t N = codes.size(0), C = codes.size(1), H = codes.size(2), W = codes.size(3);
  (void)ceil_mode;
  std::vector<uint8_t> y;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < C; ++c) {
      for (int64_t oh = 0; oh < OH; ++oh) {
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t h0 = oh * s - p, w0 = ow * s - p;
          const int64_t h1 = std::min(h0 + k, H + p), w1 = std::min(w0 + k, W + p);
          int64_t sum = 0, inside = 0;
          for (int64_t h = std::max<int64_t>(h0, 0); h < std::min(h1, H); ++h) {
            for (int64_t w = std::max<int64_t>(w0, 0); w < std::min(w1, W); ++w) {
              sum += x[static_cast<size_t>(((n * C + c) * H + h) * W + w)] - zp;
              ++inside;
            }
          }
          const int64_t count = divisor > 0 ? divisor : (count_include_pad ? (h1 - h0) * (w1 - w0) : inside);
          const float v = std::nearbyint(static_cast<float>(sum) * (1.0f / static_cast<float>(count))) +
                          static_cast<float>(zp);
          y.push_back(static_cast<uint8_t>(std::min(std::max(v, 0.0f), 127.0f)));
        }
      }
    }
  }
  return y;
}

TEST(QuantizedAvgPool, MatchesIntegerReference) {
  manual_seed(4);
  struct P {
    int64_t k, s, p;
    bool ceil, include_pad;
    int64_t divisor;
  };
  const Tensor x = RandomCodes({2, 5, 11, 10});
  for (const P c : {P{2, 2, 0, false, true, 0}, P{3, 2, 1, false, true, 0}, P{3, 2, 1, true, false, 0},
                    P{3, 1, 1, false, true, 5}, P{2, 2, 1, false, false, 0}}) {
    for (int64_t zp : {int64_t{0}, int64_t{33}, int64_t{64}}) {
      const Tensor y = quant::quantized_avg_pool2d(x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2}), zp,
                                                   {c.k}, {c.s}, {c.p}, c.ceil, c.include_pad,
                                                   c.divisor ? std::optional<int64_t>(c.divisor) : std::nullopt);
      const Tensor fl = avg_pool2d(x.to(kFloat32), {c.k}, {c.s}, {c.p}, c.ceil, c.include_pad);
      ASSERT_EQ(Sizes(y), Sizes(fl)) << "same output size as ember::avg_pool2d";
      EXPECT_EQ(y.contiguous().to_vector<uint8_t>(),
                AvgReference(x, zp, c.k, c.s, c.p, c.ceil, c.include_pad, c.divisor, y.size(2), y.size(3)))
          << "k " << c.k << " s " << c.s << " p " << c.p << " zp " << zp;
    }
  }
  // Adaptive: torch's windows [floor(o * I / O), ceil((o + 1) * I / O)).
  for (const I64& out : {I64{1, 1}, I64{3, 4}, I64{11, 10}, I64{5}}) {
    const Tensor y = quant::quantized_adaptive_avg_pool2d(x, 20, out);
    const int64_t OH = out[0], OW = out.size() > 1 ? out[1] : out[0];
    ASSERT_EQ(Sizes(y), (I64{2, 5, OH, OW}));
    const auto xv = x.contiguous().to_vector<uint8_t>();
    const auto yv = y.contiguous().to_vector<uint8_t>();
    size_t i = 0;
    for (int64_t nc = 0; nc < 10; ++nc) {
      for (int64_t oh = 0; oh < OH; ++oh) {
        for (int64_t ow = 0; ow < OW; ++ow, ++i) {
          const int64_t h0 = oh * 11 / OH, h1 = ((oh + 1) * 11 + OH - 1) / OH;
          const int64_t w0 = ow * 10 / OW, w1 = ((ow + 1) * 10 + OW - 1) / OW;
          int64_t sum = 0;
          for (int64_t h = h0; h < h1; ++h) {
            for (int64_t w = w0; w < w1; ++w) sum += xv[static_cast<size_t>((nc * 11 + h) * 10 + w)] - 20;
          }
          const float v = std::nearbyint(static_cast<float>(sum) * (1.0f / static_cast<float>((h1 - h0) * (w1 - w0)))) + 20.0f;
          ASSERT_EQ(yv[i], static_cast<uint8_t>(v)) << "output " << OH << "x" << OW << " at " << i;
        }
      }
    }
  }
  // Unbatched input, and a tie that the zero point decides (as in torch): codes 0 and 1 average
  // to 0.5 around zero point 0 (-> 0) and to 0.5 + 0 around zero point 1 (-0.5 -> -0 -> code 1).
  const Tensor tie = tensor({0, 1}).to(kUInt8).reshape({1, 1, 2});
  EXPECT_EQ(quant::quantized_avg_pool2d(tie, 0, {1, 2}).to_vector<uint8_t>(), std::vector<uint8_t>{0});
  EXPECT_EQ(quant::quantized_avg_pool2d(tie, 1, {1, 2}).to_vector<uint8_t>(), std::vector<uint8_t>{1});
}

// ---- FloatFunctional and models that are not a plain Sequential ----

using quant_models::Block;
using quant_models::BlockImpl;
using quant_models::ResidualNet;

TEST(QuantFloatFunctional, FloatModeIsThePlainOps) {
  manual_seed(5);
  quant::FloatFunctional ff;
  const Tensor a = randn({2, 3}), b = randn({2, 3});
  EXPECT_EQ(ff->mode(), quant::FloatFunctionalImpl::Mode::Float);
  EXPECT_TRUE(equal(ff->add(a, b), a + b));
  EXPECT_TRUE(equal(ff->add_relu(a, b), (a + b).relu()));
  EXPECT_TRUE(equal(ff->cat({a, b}, 1), cat({a, b}, 1)));
  ExpectError([&] { ff->forward(a); }, {"[quant::FloatFunctional]", "add(a, b)"});
}

TEST(QuantResidual, PrepareCalibrateConvert) {
  manual_seed(6);
  nn::Sequential model = ResidualNet();
  nn::Sequential reference(std::dynamic_pointer_cast<nn::SequentialImpl>(model->clone()));
  std::vector<std::string> warnings;
  auto saved_handler = set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  const std::vector<std::string> observed = quant::prepare(*model);
  set_warning_handler(saved_handler);
  EXPECT_TRUE(warnings.empty()) << "layers held only by the model tree: " << warnings.at(0);
  EXPECT_EQ(observed, (std::vector<std::string>{"0", "3.body.0", "3.body.3", "3.skip", "4.left.0", "4.right.0",
                                                "4.join", "5", "9"}));
  auto block = model->ptr<BlockImpl>(3);
  EXPECT_EQ(block->skip->mode(), quant::FloatFunctionalImpl::Mode::Observing);
  const Tensor calib = randn({64, 1, 12, 12});
  {
    NoGradGuard no_grad;
    for (int i = 0; i < 4; ++i) model(calib.narrow(0, 16 * i, 16));
  }
  const std::vector<std::string> converted = quant::convert(*model);
  EXPECT_EQ(converted.size(), observed.size());
  EXPECT_EQ(block->skip->mode(), quant::FloatFunctionalImpl::Mode::Quantized);
  EXPECT_EQ(block->skip->observed_op(), "add_relu");
  EXPECT_NE(dynamic_cast<quant::QuantizedAdaptiveAvgPool2dImpl*>(model[7].get()), nullptr)
      << "the pool between conv 5 and linear 9 pools codes";
  EXPECT_TRUE(model->ptr<quant::QuantizedConv2dImpl>(5)->output_codes);
  // The skip addition's input grids: the block input's (from conv 0's output observer) and the
  // body's last conv's, computed from the same values.
  EXPECT_EQ(block->skip->input_qparams(1).scale, model->ptr<quant::QuantizedConv2dImpl>(0)->output_qparams().scale);
  auto body_out = block->body->ptr<quant::QuantizedConv2dImpl>(3)->output_qparams();
  EXPECT_EQ(block->skip->input_qparams(0).scale, body_out.scale);
  EXPECT_EQ(block->skip->input_qparams(0).zero_point, body_out.zero_point);

  const Tensor x = calib.narrow(0, 0, 16);
  const Tensor fp = reference(x).detach(), q = model(x);
  const double range = fp.abs().max().item<double>(), err = (q - fp).abs().max().item<double>();
  std::printf("residual net: max |int8 - fp32| = %.4g of a logit range %.4g\n", err, range);
  EXPECT_LT(err, 0.05 * range);
  EXPECT_GT(err, 0.0) << "the int8 model computes something else than the float one";

  // 1 and 2 threads, clone, state_dict.
  const int saved = get_num_threads();
  set_num_threads(1);
  const Tensor q1 = model(x);
  set_num_threads(2);
  const Tensor q2 = model(x);
  set_num_threads(saved);
  EXPECT_TRUE(equal(q1, q2));
  auto copy = std::dynamic_pointer_cast<nn::SequentialImpl>(model->clone());
  EXPECT_TRUE(equal(copy->forward(x), q1));
  const auto state = model->state_dict();
  EXPECT_TRUE(state.contains("3.skip.input_scales"));
  EXPECT_TRUE(state.contains("4.join.output_zero_point"));
  EXPECT_EQ(state["3.skip.input_scales"].numel(), 2);
  EXPECT_EQ(state["4.join.input_zero_points"].dtype(), kInt32);

  // Traced: the joins are graph nodes; the graph and its artifact compute the same.
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  jit::GraphModule g = jit::trace(*model, x, opt);
  const auto hist = g.graph().op_histogram();
  EXPECT_EQ(hist.at("quantized_add"), 1);
  EXPECT_EQ(hist.at("quantized_cat"), 1);
  EXPECT_EQ(hist.at("quantized_adaptive_avg_pool2d"), 1);
  EXPECT_TRUE(equal(g.forward(x), q1));
  const std::string path = (std::filesystem::temp_directory_path() / "ember_quant_residual_test.ember").string();
  jit::save(jit::freeze(g), path);
  EXPECT_TRUE(equal(jit::load(path).forward(x), q1));
  std::filesystem::remove(path);
}

// A custom module that calls a typed holder member directly: prepare cannot reach that call,
// so it warns, and convert then names the layer that saw no data.
class DirectImpl : public nn::Module {
 public:
  DirectImpl() : Module("Direct") { conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(1, 2, 3))); }
  Tensor forward(const Tensor& x) override { return conv(x); }
  nn::Conv2d conv{nullptr};
};

TEST(QuantResidual, Errors) {
  manual_seed(7);
  auto direct = std::make_shared<DirectImpl>();
  direct->eval();
  std::vector<std::string> warnings;
  auto saved = set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  quant::prepare(*direct);
  set_warning_handler(saved);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("'conv' (Conv2d) was replaced in the module tree, but the float layer is still held"),
            std::string::npos)
      << warnings[0];
  direct->forward(randn({1, 1, 5, 5}));
  ExpectError([&] { quant::convert(*direct); }, {"[quant::convert]", "'conv'", "not been calibrated"});

  // An uncalibrated FloatFunctional, and one used in two ways.
  nn::Sequential model = ResidualNet();
  quant::prepare(*model);
  ExpectError([&] { quant::convert(*model); }, {"[quant::convert]", "not been calibrated"});
  ExpectError([&] { quant::prepare(*model); }, {"[quant::prepare]", "already prepared"});
  auto block = model->ptr<BlockImpl>(3);
  {
    NoGradGuard no_grad;
    model(randn({2, 1, 8, 8}));
  }
  ExpectError([&] { block->skip->cat({randn({1, 8, 8, 8}), randn({1, 8, 8, 8})}, 1); },
              {"[quant::FloatFunctional]", "observing add_relu", "called as cat"});
  quant::convert(*model);
  ExpectError([&] { block->skip->add(randn({1, 8, 4, 4}), randn({1, 8, 4, 4})); },
              {"[quant::FloatFunctional]", "calibrated on add_relu", "called as add"});

  // The functional ops.
  const Tensor c = RandomCodes({2, 3});
  ExpectError([&] { quant::quantized_add(c, 0.1, 0, c.to(kFloat64), 0.1, 0, 0.1, 0); },
              {"[quant::quantized_add]", "b must be float32 values or uint8 codes", "float64"});
  ExpectError([&] { quant::quantized_add(c, 0.1, 0, full({2, 3}, 200, TensorOptions(kUInt8)), 0.1, 0, 0.1, 0); },
              {"[quant::quantized_add]", "code 200", "[0, 127]"});
  ExpectError([&] { quant::quantized_add(c, 0.1, 0, RandomCodes({4}), 0.1, 0, 0.1, 0); },
              {"[quant::quantized_add]", "[2, 3]", "[4]"});
  ExpectError([&] { quant::quantized_add(c, -0.1, 0, c, 0.1, 0, 0.1, 0); }, {"[quant::quantized_add]", "a_scale"});
  ExpectError([&] { quant::quantized_add(c, 0.1, 0, c, 0.1, 0, 0.1, 300); },
              {"[quant::quantized_add]", "output_zero_point 300"});
  ExpectError([&] { quant::quantized_cat({c, c}, {0.1}, {0}, 0, 0.1, 0); },
              {"[quant::quantized_cat]", "2 tensors", "1 scales"});
  ExpectError([&] { quant::quantized_cat({c, RandomCodes({2, 4})}, {0.1, 0.1}, {0, 0}, 0, 0.1, 0); },
              {"[quant::quantized_cat]"});
  ExpectError([&] { quant::quantized_cat({}, {}, {}, 0, 0.1, 0); }, {"[quant::quantized_cat]", "at least one"});
  ExpectError([&] { quant::quantized_avg_pool2d(randn({1, 2, 4, 4}), 0, {2}); },
              {"[quant::quantized_avg_pool2d]", "uint8", "ember::avg_pool2d"});
  ExpectError([&] { quant::quantized_avg_pool2d(RandomCodes({1, 2, 4, 4}), 0, {2}, {2}, {2}); },
              {"[quant::quantized_avg_pool2d]", "padding"});
  ExpectError([&] { quant::quantized_adaptive_avg_pool2d(RandomCodes({1, 2, 4, 4}), 200, {1}); },
              {"[quant::quantized_adaptive_avg_pool2d]", "zero_point 200"});
}

}  // namespace quant_join_test
}  // namespace ember
