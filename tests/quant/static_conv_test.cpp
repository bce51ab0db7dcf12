// Static int8 CNNs: QuantizedConv2d against an integer reference (groups, stride, padding,
// dilation, ReLU; float, uint8 and non-contiguous inputs), quantized max pooling, Conv2d +
// BatchNorm2d folding, prepare -> calibrate -> convert of a CNN with the uint8 hand-off between
// layers, thread-count independence, state_dict round trips, tracing and errors.
// tests/quant/torch_parity.cpp compares the kernels with libtorch's quantized::conv2d.

#include <ember/ember.h>
#include <ember/jit/jit.h>
#include <ember/quant/quantized_ops.h>
#include <ember/quant/static_quant.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "test_util.h"

namespace ember {
namespace quant_static_conv_test {

using ember::testing::ExpectError;
using ember::testing::Floats;
using ember::testing::Sizes;
using ember::testing::Strides;
using I64 = std::vector<int64_t>;

// The converted convolution written out from Note [Static quantization scheme]: exact integer
// sums over the zero-point-padded input codes, then the same float steps.
std::vector<float> Reference(const quant::QuantizedConv2dImpl& q, const Tensor& x) {
  const quant::QParams qin = q.input_qparams(), qout = q.output_qparams();
  const Tensor codes = quant::quantize_per_tensor(x.contiguous(), qin.scale, qin.zero_point).to(kInt64);
  const std::vector<int64_t> qx = codes.to_vector<int64_t>();
  const std::vector<int64_t> qw = q.qweight.to(kInt64).to_vector<int64_t>();
  const std::vector<float> ws = Floats(q.scales);
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t OC = q.qweight.size(0), Cg = q.qweight.size(1), KH = q.qweight.size(2), KW = q.qweight.size(3);
  const auto& o = q.options();
  const int64_t sh = o.stride()[0], sw = o.stride()[1], dh = o.dilation()[0], dw = o.dilation()[1];
  const int64_t ph = q.padding()[0], pw = q.padding()[1], G = o.groups();
  const int64_t OH = (H + 2 * ph - dh * (KH - 1) - 1) / sh + 1, OW = (W + 2 * pw - dw * (KW - 1) - 1) / sw + 1;
  const std::vector<float> b = q.bias.defined() ? Floats(q.bias) : std::vector<float>(static_cast<size_t>(OC), 0.f);
  std::vector<float> y(static_cast<size_t>(N * OC * OH * OW));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t oc = 0; oc < OC; ++oc) {
      const int64_t g = oc / (OC / G);
      for (int64_t oh = 0; oh < OH; ++oh) {
        for (int64_t ow = 0; ow < OW; ++ow) {
          int64_t acc = 0;
          for (int64_t c = 0; c < Cg; ++c) {
            for (int64_t i = 0; i < KH; ++i) {
              for (int64_t j = 0; j < KW; ++j) {
                const int64_t ih = oh * sh - ph + i * dh, iw = ow * sw - pw + j * dw;
                const int64_t code = (ih < 0 || ih >= H || iw < 0 || iw >= W)
                                         ? qin.zero_point
                                         : qx[static_cast<size_t>(((n * C + g * Cg + c) * H + ih) * W + iw)];
                acc += (code - qin.zero_point) * qw[static_cast<size_t>(((oc * Cg + c) * KH + i) * KW + j)];
              }
            }
          }
          float v = static_cast<float>(acc) * (qin.scale * ws[static_cast<size_t>(oc)]) + b[static_cast<size_t>(oc)];
          if (q.relu()) v = std::max(v, 0.0f);
          const float code =
              std::clamp(std::nearbyint(v * (1.0f / qout.scale)) + static_cast<float>(qout.zero_point), 0.0f, 127.0f);
          y[static_cast<size_t>(((n * OC + oc) * OH + oh) * OW + ow)] =
              (code - static_cast<float>(qout.zero_point)) * qout.scale;
        }
      }
    }
  }
  return y;
}

struct ConvCase {
  int64_t in, out, k, stride, pad, dil, groups;
  bool bias;
};

TEST(QuantizedConv2d, MatchesIntegerReference) {
  manual_seed(20);
  for (const ConvCase c : {ConvCase{1, 8, 3, 1, 1, 1, 1, true}, ConvCase{6, 4, 3, 2, 1, 1, 2, true},
                           ConvCase{5, 7, 3, 1, 2, 2, 1, false}, ConvCase{16, 24, 1, 1, 0, 1, 1, true},
                           ConvCase{4, 6, 2, 2, 0, 1, 1, true},
                           // padding wider than the kernel: whole output rows and columns of padding
                           ConvCase{3, 5, 3, 2, 6, 1, 1, true}}) {
    nn::Conv2d conv(nn::Conv2dOptions(c.in, c.out, c.k)
                        .stride(c.stride)
                        .padding(c.pad)
                        .dilation(c.dil)
                        .groups(c.groups)
                        .bias(c.bias));
    for (bool relu : {false, true}) {
      quant::QuantizedConv2d q(*conv, quant::QParams{0.03f, 50}, quant::QParams{0.02f, relu ? 0 : 64}, relu);
      // Partly outside the input range (clamps); the sizes are odd so windows leave the image.
      const Tensor x = randn({3, c.in, 9, 11}) * 1.5 + 0.2;
      const Tensor y = q(x);
      const std::vector<float> got = Floats(y), want = Reference(*q, x);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_FLOAT_EQ(got[i], want[i]) << "case in=" << c.in << " groups=" << c.groups << " relu " << relu << " at "
                                         << i;
      }
      EXPECT_TRUE(y.is_contiguous());
      // Codes out: uint8, channels-last, the same values once dequantized.
      q->output_codes = true;
      const Tensor codes = q(x);
      q->output_codes = false;
      EXPECT_EQ(codes.dtype(), kUInt8);
      EXPECT_EQ(Sizes(codes), Sizes(y));
      const int64_t C = codes.size(1), H = codes.size(2), W = codes.size(3);
      EXPECT_EQ(Strides(codes), (I64{H * W * C, 1, W * C, C}));
      const quant::QParams qo = q->output_qparams();
      EXPECT_EQ(Floats(quant::dequantize_per_tensor(codes, qo.scale, qo.zero_point)), got);
      // Codes in: the quantized input gives the same result as the float one.
      const quant::QParams qi = q->input_qparams();
      EXPECT_EQ(Floats(q(quant::quantize_per_tensor(x, qi.scale, qi.zero_point))), got);
      // A non-contiguous input (a transposed view of a [N, C, W, H] tensor).
      const Tensor xt = x.transpose(2, 3).contiguous().transpose(2, 3);
      ASSERT_FALSE(xt.is_contiguous());
      EXPECT_EQ(Floats(q(xt)), got);
      // The functional op computes the same.
      const auto& o = q->options();
      const Tensor f = quant::quantized_conv2d(x, q->qweight, q->scales, q->bias, o.stride(), q->padding(),
                                               o.dilation(), o.groups(), qi.scale, qi.zero_point, qo.scale,
                                               qo.zero_point, relu, kFloat32);
      EXPECT_EQ(Floats(f), got);
    }
  }
  // Unbatched input.
  nn::Conv2d conv(nn::Conv2dOptions(2, 3, 3).padding(1));
  quant::QuantizedConv2d q(*conv, quant::QParams{0.05f, 60}, quant::QParams{0.05f, 60});
  const Tensor x = randn({2, 5, 5});
  EXPECT_EQ(Sizes(q(x)), (I64{3, 5, 5}));
  EXPECT_EQ(Floats(q(x)), Floats(q(x.unsqueeze(0)).squeeze(0)));
}

// The max of codes is the code of the max: pooling codes equals pooling their values.
TEST(QuantizedConv2d, MaxPoolOfCodes) {
  manual_seed(21);
  const Tensor codes = randint(0, 128, {2, 5, 9, 8}).to(kUInt8);
  const Tensor values = quant::dequantize_per_tensor(codes, 0.1, 30);
  struct P {
    I64 k, s, p, d;
    bool ceil;
  };
  for (const P& p : {P{{2}, {}, {0}, {1}, false}, P{{3}, {2}, {1}, {1}, true}, P{{3, 2}, {1, 2}, {1, 0}, {2, 1}, false},
                     P{{2}, {2}, {0}, {1}, true}}) {
    const Tensor got = quant::quantized_max_pool2d(codes, p.k, p.s, p.p, p.d, p.ceil);
    const Tensor want = max_pool2d(values, p.k, p.s, p.p, p.d, p.ceil);
    EXPECT_EQ(got.dtype(), kUInt8);
    EXPECT_EQ(Sizes(got), Sizes(want));
    EXPECT_EQ(Floats(quant::dequantize_per_tensor(got, 0.1, 30)), Floats(want));
  }
  // A non-contiguous (channels-last) input, and the module on codes and on floats.
  const Tensor cl = codes.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  quant::QuantizedMaxPool2d pool(nn::MaxPool2dOptions(2));
  EXPECT_EQ(Floats(quant::dequantize_per_tensor(pool(cl), 0.1, 30)), Floats(max_pool2d(values, {2})));
  EXPECT_EQ(Floats(pool(values)), Floats(max_pool2d(values, {2})));
}

TEST(QuantStaticConv, FuseConvBatchNorm) {
  manual_seed(22);
  for (bool bias : {true, false}) {
    nn::Conv2d conv(nn::Conv2dOptions(3, 6, 3).padding(1).bias(bias));
    nn::BatchNorm2d bn(nn::BatchNorm2dOptions(6));
    testing::RandomizeNormStats(*bn);
    conv->eval();
    bn->eval();
    const Tensor x = randn({2, 3, 7, 7});
    const Tensor want = bn(conv(x)).detach();
    const std::shared_ptr<nn::Conv2dImpl> fused = quant::fuse_conv_bn(*conv, *bn);
    EXPECT_TRUE(fused->bias.defined());
    const Tensor got = fused->forward(x).detach();
    EXPECT_LT((got - want).abs().amax().item<float>(), 1e-4f * (1.0f + want.abs().amax().item<float>()));
    EXPECT_GT((conv(x) - want).abs().amax().item<float>(), 1e-2f) << "the BatchNorm does something";
  }
  // In a Sequential: the BatchNorm becomes an Identity.
  nn::Sequential seq(nn::Conv2d(nn::Conv2dOptions(2, 4, 3)), nn::BatchNorm2d(4), nn::ReLU());
  seq->eval();
  EXPECT_EQ(quant::fuse_modules(*seq), (std::vector<std::string>{"0"}));
  EXPECT_NE(std::dynamic_pointer_cast<nn::IdentityImpl>(seq->ptr(1)), nullptr);
  seq->train();
  ExpectError([&] { quant::fuse_modules(*seq); }, {"[quant::fuse_modules]", "training mode", "model->eval()"});
}

// The Fashion-MNIST CNN's structure, with a BatchNorm after the first convolution.
nn::Sequential Cnn() {
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 8, 3).padding(1)), nn::BatchNorm2d(8), nn::ReLU(),
                        nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Conv2d(nn::Conv2dOptions(8, 16, 3).padding(1)),
                        nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Flatten(), nn::Linear(16 * 7 * 7, 32),
                        nn::ReLU(), nn::Linear(32, 10));
}

nn::Sequential CalibratedCnn(const Tensor& calibration) {
  nn::Sequential model = Cnn();
  testing::RandomizeNormStats(*model->ptr(1));
  model->eval();
  quant::prepare(*model);
  {
    NoGradGuard no_grad;
    for (int64_t i = 0; i < calibration.size(0); i += 50) model(calibration.narrow(0, i, 50));
  }
  quant::convert(*model);
  return model;
}

TEST(QuantStaticConv, PrepareCalibrateConvertCnn) {
  manual_seed(23);
  nn::Sequential model = Cnn();
  testing::RandomizeNormStats(*model->ptr(1));
  model->eval();
  const Tensor test = randn({64, 1, 28, 28});
  const Tensor fp = model(test).detach();
  const std::vector<std::string> observed = quant::prepare(*model);
  EXPECT_EQ(observed, (std::vector<std::string>{"0", "4", "8", "10"}));
  auto c0 = model->ptr<quant::ObservedConv2dImpl>(0);
  EXPECT_TRUE(c0->relu);
  EXPECT_TRUE(model->ptr<quant::ObservedConv2dImpl>(4)->relu);
  for (int64_t i : {1, 2, 5, 9}) {
    EXPECT_NE(std::dynamic_pointer_cast<nn::IdentityImpl>(model->ptr(i)), nullptr) << "child " << i << " is fused";
  }
  {
    NoGradGuard no_grad;
    // The prepared model (BatchNorm folded) computes what the float one does.
    EXPECT_LT((model(test) - fp).abs().amax().item<float>(), 1e-4f * (1.0f + fp.abs().amax().item<float>()));
    for (int i = 0; i < 8; ++i) model(randn({50, 1, 28, 28}));
  }
  EXPECT_EQ(quant::convert(*model), observed);
  auto q0 = model->ptr<quant::QuantizedConv2dImpl>(0);
  auto q4 = model->ptr<quant::QuantizedConv2dImpl>(4);
  auto l8 = model->ptr<quant::StaticQuantizedLinearImpl>(8);
  auto l10 = model->ptr<quant::StaticQuantizedLinearImpl>(10);
  // Codes flow from layer to layer; the last one returns floats.
  EXPECT_TRUE(q0->output_codes && q4->output_codes && l8->output_codes);
  EXPECT_FALSE(l10->output_codes);
  EXPECT_NE(model->ptr<quant::QuantizedMaxPool2dImpl>(3), nullptr);
  EXPECT_NE(model->ptr<quant::QuantizedMaxPool2dImpl>(6), nullptr);
  EXPECT_EQ(q4->input_qparams().scale, q0->output_qparams().scale);
  EXPECT_EQ(q4->input_qparams().zero_point, q0->output_qparams().zero_point);
  EXPECT_EQ(l10->input_qparams().scale, l8->output_qparams().scale);
  EXPECT_EQ(model->parameters().size(), 0u);

  const Tensor int8 = model(test);
  EXPECT_EQ(int8.dtype(), kFloat32);
  EXPECT_EQ(Sizes(int8), (I64{64, 10}));
  const float range = fp.abs().amax().item<float>();
  const float err = (int8 - fp).abs().amax().item<float>();
  EXPECT_LT(err, 0.06f * range) << "max |int8 - fp32| = " << err << " of " << range;
  EXPECT_GT(err, 0.0f);
  const double agree = int8.argmax(1).eq(fp.argmax(1)).to(kFloat64).mean().item<double>();
  EXPECT_GE(agree, 0.85);
  std::printf("CNN: max |int8 - fp32| = %g of %g (%.2f%%), argmax agreement %.3f\n", err, range, 100.0 * err / range,
              agree);

  // The uint8 hand-off computes exactly what float hand-offs on the same grids compute.
  for (auto* layer : {static_cast<quant::QuantizedLayer*>(q0.get()), static_cast<quant::QuantizedLayer*>(q4.get()),
                      static_cast<quant::QuantizedLayer*>(l8.get())}) {
    layer->output_codes = false;
  }
  EXPECT_EQ(Floats(model(test)), Floats(int8));
  const std::string repr = model->repr();
  EXPECT_NE(repr.find("QuantizedConvReLU2d(1, 8, kernel_size=[3, 3]"), std::string::npos) << repr;
  EXPECT_NE(repr.find("QuantizedMaxPool2d"), std::string::npos) << repr;
}

TEST(QuantStaticConv, SameBitsWithOneAndTwoThreadsAndRoundTrips) {
  manual_seed(24);
  nn::Sequential model = CalibratedCnn(randn({200, 1, 28, 28}));
  const int saved = get_num_threads();
  for (int64_t batch : {1, 3, 64}) {
    const Tensor x = randn({batch, 1, 28, 28});
    set_num_threads(1);
    const std::vector<float> one = Floats(model(x));
    set_num_threads(2);
    const std::vector<float> two = Floats(model(x));
    EXPECT_EQ(one, two) << "batch " << batch;
  }
  set_num_threads(saved);

  const Tensor x = randn({5, 1, 28, 28});
  const std::vector<float> want = Floats(model(x));
  // clone keeps the weights, grids and hand-offs.
  auto copy = std::dynamic_pointer_cast<nn::SequentialImpl>(model->clone());
  EXPECT_EQ(Floats(copy->forward(x)), want);
  EXPECT_TRUE(copy->ptr<quant::QuantizedConv2dImpl>(0)->output_codes);
  // state_dict into the same structure made by hand.
  const auto state = model->state_dict();
  EXPECT_TRUE(state.contains("0.qweight"));
  EXPECT_EQ(state["0.qweight"].dtype(), kInt8);
  EXPECT_TRUE(state.contains("4.output_zero_point"));
  nn::Sequential fresh(quant::QuantizedConv2d(nn::Conv2dOptions(1, 8, 3).padding(1), true), nn::Identity(),
                       nn::Identity(), quant::QuantizedMaxPool2d(nn::MaxPool2dOptions(2)),
                       quant::QuantizedConv2d(nn::Conv2dOptions(8, 16, 3).padding(1), true), nn::Identity(),
                       quant::QuantizedMaxPool2d(nn::MaxPool2dOptions(2)), nn::Flatten(),
                       quant::StaticQuantizedLinear(16 * 7 * 7, 32, true, true), nn::Identity(),
                       quant::StaticQuantizedLinear(32, 10));
  fresh->load_state_dict(state);
  EXPECT_EQ(Floats(fresh(x)), want) << "float hand-offs give the same result";
  // About 4x smaller than float32 (the conv layers are small, so the scales weigh a little).
  nn::Sequential fp = Cnn();
  const int64_t fp_bytes = quant::state_dict_bytes(*fp), int8_bytes = quant::state_dict_bytes(*model);
  EXPECT_LT(int8_bytes * 3, fp_bytes) << fp_bytes << " vs " << int8_bytes;
}

TEST(QuantStaticConv, TracedGraphAndArtifact) {
  manual_seed(25);
  nn::Sequential model = CalibratedCnn(randn({100, 1, 28, 28}));
  const Tensor x = randn({4, 1, 28, 28});
  const Tensor want = model(x);
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  jit::GraphModule g = jit::trace(*model, x, opt);
  const auto hist = g.graph().op_histogram();
  EXPECT_EQ(hist.at("quantized_conv2d"), 2);
  EXPECT_EQ(hist.at("quantized_linear"), 2);
  EXPECT_EQ(hist.at("quantized_max_pool2d"), 2);
  EXPECT_EQ(Floats(g.forward(x)), Floats(want));
  const Tensor x7 = randn({7, 1, 28, 28});
  EXPECT_EQ(Floats(g.forward(x7)), Floats(model(x7))) << "another batch size";
  const std::string path = (std::filesystem::temp_directory_path() / "ember_quant_cnn_test.ember").string();
  jit::save(jit::freeze(g), path);
  jit::GraphModule loaded = jit::load(path);
  EXPECT_EQ(Floats(loaded.forward(x)), Floats(want));
  std::filesystem::remove(path);
}

TEST(QuantStaticConv, Errors) {
  manual_seed(26);
  nn::Sequential model = Cnn();
  model->eval();
  quant::prepare(*model);
  ExpectError([&] { quant::convert(*model); }, {"[quant::convert]", "'0'", "ObservedConvReLU2d", "not been calibrated"});
  {
    NoGradGuard no_grad;
    model(randn({4, 1, 28, 28}));
  }
  quant::convert(*model);
  ExpectError([&] { model(randn({2, 3, 28, 28})); }, {"[QuantizedConv2d]", "3 channels", "expect 1"});
  ExpectError([&] { model(randn({2, 1, 28, 28}).to(kFloat64)); }, {"[QuantizedConv2d]", "float32", "float64"});
  ExpectError([&] { model(randn({28, 28})); }, {"[QuantizedConv2d]", "[N, C, H, W]"});
  ExpectError([&] { model(full({1, 1, 28, 28}, 200, TensorOptions(kUInt8))); },
              {"[QuantizedConv2d]", "code 200", "[0, 127]"});
  ExpectError([&] { model(randn({1, 1, 2, 2})); }, {"[quant::quantized_max_pool2d]", "too small"});
  // The functional ops.
  const Tensor w = zeros({4, 2, 3, 3}, TensorOptions(kInt8)), s = ones({4});
  const Tensor x = randn({1, 2, 5, 5});
  ExpectError([&] { quant::quantized_conv2d(x, w.to(kFloat32), s, {}, {1}, {0}, {1}, 1, 0.1, 0, 0.1, 0); },
              {"[quant::quantized_conv2d]", "qweight", "int8"});
  ExpectError([&] { quant::quantized_conv2d(x, w, ones({3}), {}, {1}, {0}, {1}, 1, 0.1, 0, 0.1, 0); },
              {"[quant::quantized_conv2d]", "weight scales", "[4]"});
  ExpectError([&] { quant::quantized_conv2d(x, w, s, {}, {1}, {0}, {1}, 1, 0.1, 200, 0.1, 0); },
              {"[quant::quantized_conv2d]", "input_zero_point 200", "[0, 127]"});
  ExpectError([&] { quant::quantized_conv2d(x, w, s, {}, {0}, {0}, {1}, 1, 0.1, 0, 0.1, 0); },
              {"[quant::quantized_conv2d]", "stride must be positive"});
  ExpectError([&] { quant::quantized_conv2d(x, w, s, {}, {1}, {0}, {1}, 1, 0.1, 0, 0.1, 0, false, kInt32); },
              {"[quant::quantized_conv2d]", "output_dtype"});
  ExpectError([&] { quant::quantized_max_pool2d(x, {2}); }, {"[quant::quantized_max_pool2d]", "uint8", "float32"});
  ExpectError([&] { quant::quantize_per_tensor(x, -1.0, 0); }, {"[quant::quantize_per_tensor]", "scale"});
  // An unsupported padding mode stays float, with a warning.
  nn::Sequential reflect(nn::Conv2d(nn::Conv2dOptions(1, 2, 3).padding(1).padding_mode("reflect")), nn::ReLU());
  reflect->eval();
  std::vector<std::string> warnings;
  auto saved = set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  EXPECT_TRUE(quant::prepare(*reflect).empty());
  set_warning_handler(saved);
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings[0].find("'0' (Conv2d) stays float32: its padding_mode is 'reflect'"), std::string::npos)
      << warnings[0];
}

}  // namespace quant_static_conv_test
}  // namespace ember
