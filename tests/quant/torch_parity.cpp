// Parity of quant::DynamicQuantizedLinear with PyTorch 1.13's dynamic quantized Linear: the
// weight codes and scales PyTorch's per-channel symmetric observer computes, and the output
// of quantized::linear_dynamic (what torch.nn.quantized.dynamic.Linear calls, reduce_range
// on) on the same weights and inputs, with this libtorch's default quantized engine and
// every other it has (Debian's 1.13: onednn and qnnpack; no fbgemm).

#include <ATen/core/dispatch/Dispatcher.h>
#include <ember/ember.h>
#include <ember/quant/quant.h>
#include <ember/quant/qat.h>
#include <ember/quant/quantized_ops.h>
#include <ember/quant/static_quant.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cfloat>
#include <cstdio>
#include <string>
#include <vector>

#include "parity/torch_bridge.h"

namespace {

using parity::to_ember;
using parity::to_torch;

// torch's per-channel symmetric qint8 weight, as PerChannelMinMaxObserver computes it.
torch::Tensor torch_quantized_weight(const torch::Tensor& w) {
  const torch::Tensor amax = w.abs().amax(1);
  const torch::Tensor scales = (amax / 127.5).clamp_min(FLT_EPSILON).to(torch::kDouble);
  const torch::Tensor zps = torch::zeros({w.size(0)}, torch::kLong);
  return at::quantize_per_channel(w, scales, zps, 0, torch::kQInt8);
}

torch::Tensor torch_linear_dynamic(const torch::Tensor& qweight, const torch::Tensor& bias, const torch::Tensor& x) {
  static const auto prepack = c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_prepack", "");
  static const auto dynamic = c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_dynamic", "");
  torch::jit::Stack stack{qweight, c10::optional<at::Tensor>(bias)};
  prepack.callBoxed(&stack);
  c10::IValue packed = stack.at(0);
  stack = {x, packed, c10::IValue(true)};  // reduce_range, as nn.quantized.dynamic.Linear passes
  dynamic.callBoxed(&stack);
  return stack.at(0).toTensor();
}

struct Case {
  int64_t batch, in, out;
};

TEST(QuantParity, WeightCodesAndScalesMatchTorch) {
  ember::manual_seed(0);
  ember::nn::Linear lin(300, 70);
  const ember::quant::PerChannelWeight q = ember::quant::quantize_weight_per_channel(lin->weight);
  const torch::Tensor tq = torch_quantized_weight(to_torch(lin->weight.detach()));
  EXPECT_TRUE(torch::equal(to_torch(q.qweight), tq.int_repr())) << "int8 codes differ";
  EXPECT_TRUE(torch::allclose(to_torch(q.scales).to(torch::kDouble), tq.q_per_channel_scales(), 1e-7, 0));
}

TEST(QuantParity, LinearDynamicMatchesTorch) {
  const auto engines = at::globalContext().supportedQEngines();
  const at::QEngine saved = at::globalContext().qEngine();
  int engines_run = 0;
  for (at::QEngine engine : engines) {
    if (engine == at::QEngine::NoQEngine) continue;
    at::globalContext().setQEngine(engine);
    ++engines_run;
    const std::string name = c10::toString(engine);
    for (const Case c : {Case{1, 784, 512}, Case{64, 784, 512}, Case{7, 100, 33}, Case{3, 16, 10}}) {
      ember::manual_seed(c.in * 7 + c.batch);
      ember::nn::Linear lin(c.in, c.out);
      ember::quant::DynamicQuantizedLinear q(*lin);
      const ember::Tensor x = ember::randn({c.batch, c.in}) * 1.5 + 0.3;
      const torch::Tensor want = torch_linear_dynamic(torch_quantized_weight(to_torch(lin->weight.detach())),
                                                      to_torch(lin->bias.detach()), to_torch(x));
      const torch::Tensor got = to_torch(q(x));
      const torch::Tensor fp = to_torch(lin(x).detach());
      ASSERT_EQ(got.sizes(), want.sizes());
      // Same scheme, same codes: the outputs agree up to float rounding (5e-7 measured; an
      // activation code on the other side of a .5 would move an output by ~scale_x * scale_w
      // * |code|), far below the quantization error itself, which is compared too.
      const double diff = (got - want).abs().max().item<double>();
      const double qerr = (want - fp).abs().max().item<double>();
      const double range = fp.abs().max().item<double>();
      if (engine == at::QEngine::QNNPACK) {
        // QNNPACK ignores reduce_range (8-bit activations, 0..255; it warns so): another
        // scheme, about twice as fine as ember's 7 bits, so only the error against float is
        // compared (ember's within 3x of QNNPACK's).
        EXPECT_LE((got - fp).abs().max().item<double>(), 3 * qerr + 1e-6) << name << " batch " << c.batch;
        continue;
      }
      EXPECT_LE(diff, 1e-5 * range + 1e-6)
          << name << " batch " << c.batch << " " << c.in << "->" << c.out << ": ember vs "
          << "torch " << diff << ", torch vs float " << qerr;
      EXPECT_LT(diff, 0.25 * qerr + 1e-6) << name << " batch " << c.batch;
      std::printf("%s batch %lld %lld->%lld: max |ember - torch| %.3g, max |torch - float| %.3g\n", name.c_str(),
                  static_cast<long long>(c.batch), static_cast<long long>(c.in), static_cast<long long>(c.out), diff,
                  qerr);
    }
  }
  at::globalContext().setQEngine(saved);
  EXPECT_GT(engines_run, 0);
}

}  // namespace

// ---- static quantization ----

namespace {

// torch 1.13's affine per-tensor _calculate_qparams (torch/ao/quantization/observer.py),
// evaluated with torch's own float32 tensor arithmetic.
std::pair<double, int64_t> torch_qparams(const torch::Tensor& min_val, const torch::Tensor& max_val, int64_t qmin,
                                         int64_t qmax) {
  const torch::Tensor lo = torch::min(min_val, torch::zeros_like(min_val));
  const torch::Tensor hi = torch::max(max_val, torch::zeros_like(max_val));
  torch::Tensor scale = (hi - lo) / static_cast<double>(qmax - qmin);
  scale = torch::max(scale, torch::full_like(scale, FLT_EPSILON));
  torch::Tensor zp = qmin - torch::round(lo / scale).to(torch::kInt);
  zp = torch::clamp(zp, qmin, qmax);
  return {scale.item<double>(), zp.item<int64_t>()};
}

}  // namespace

TEST(QuantParity, ObserversMatchTorchFormulas) {
  ember::manual_seed(21);
  ember::quant::MinMaxObserver mm;
  ember::quant::MovingAverageMinMaxObserver ma;  // averaging_constant 0.01, as torch's
  torch::Tensor t_min, t_max, r_min, r_max;
  for (int i = 0; i < 20; ++i) {
    const ember::Tensor x = ember::randn({37, 11}) * (0.5 + 0.1 * i) + (i % 3 - 1) * 0.7;
    mm.observe(x);
    ma.observe(x);
    const torch::Tensor tx = to_torch(x);
    const torch::Tensor cur_min = tx.min(), cur_max = tx.max();
    if (i == 0) {
      t_min = cur_min, t_max = cur_max, r_min = cur_min, r_max = cur_max;
    } else {
      t_min = torch::min(t_min, cur_min);
      t_max = torch::max(t_max, cur_max);
      // MovingAverageMinMaxObserver.forward: min_val + averaging_constant * (min_val_cur - min_val)
      r_min = r_min + 0.01 * (cur_min - r_min);
      r_max = r_max + 0.01 * (cur_max - r_max);
    }
    EXPECT_EQ(ma.range().first, r_min.item<float>()) << "batch " << i;
    EXPECT_EQ(ma.range().second, r_max.item<float>()) << "batch " << i;
  }
  for (auto [obs, lo, hi] : {std::make_tuple(static_cast<ember::quant::Observer*>(&mm), t_min, t_max),
                             std::make_tuple(static_cast<ember::quant::Observer*>(&ma), r_min, r_max)}) {
    for (auto [qmin, qmax] : {std::make_pair(0, 127)}) {
      const auto [scale, zp] = torch_qparams(lo, hi, qmin, qmax);
      const ember::quant::QParams q = obs->calculate_qparams();
      EXPECT_EQ(static_cast<double>(q.scale), scale) << obs->name();
      EXPECT_EQ(q.zero_point, zp) << obs->name();
    }
  }
  // Full 8-bit codes (reduce_range off) and a range that does not hold 0.
  ember::quant::MinMaxObserver full(0, 255);
  full.observe(ember::tensor({0.37f, 5.1f}));
  const auto [scale, zp] = torch_qparams(torch::tensor(0.37f), torch::tensor(5.1f), 0, 255);
  EXPECT_EQ(static_cast<double>(full.calculate_qparams().scale), scale);
  EXPECT_EQ(full.calculate_qparams().zero_point, zp);
}

// StaticQuantizedLinear against torch's static quantized::linear / linear_relu (what
// torch.nn.quantized.Linear and nn.intrinsic.quantized.LinearReLU call) with the same weights
// and quantization parameters: the output codes agree, up to one code where a product lands
// within rounding of a .5.
TEST(QuantParity, StaticLinearMatchesTorch) {
  static const auto prepack = c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_prepack", "");
  static const auto linear = c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear", "");
  static const auto linear_relu = c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_relu", "");
  const at::QEngine saved = at::globalContext().qEngine();
  int engines_run = 0;
  for (at::QEngine engine : at::globalContext().supportedQEngines()) {
    if (engine == at::QEngine::NoQEngine) continue;
    at::globalContext().setQEngine(engine);
    ++engines_run;
    for (bool relu : {false, true}) {
      ember::manual_seed(31 + relu);
      ember::nn::Linear lin(200, 48);
      const ember::Tensor x = ember::randn({16, 200}) * 1.3 + 0.2;
      ember::quant::MinMaxObserver in_obs, out_obs;
      in_obs.observe(x);
      ember::Tensor fp = lin(x).detach();
      if (relu) fp = fp.relu();
      out_obs.observe(fp);
      const ember::quant::QParams qin = in_obs.calculate_qparams(), qout = out_obs.calculate_qparams();
      ember::quant::StaticQuantizedLinear q(*lin, qin, qout, relu);
      const torch::Tensor got = to_torch(q(x));

      const torch::Tensor tx = at::quantize_per_tensor(to_torch(x), qin.scale, qin.zero_point, torch::kQUInt8);
      torch::jit::Stack stack{torch_quantized_weight(to_torch(lin->weight.detach())),
                              c10::optional<at::Tensor>(to_torch(lin->bias.detach()))};
      prepack.callBoxed(&stack);
      c10::IValue packed = stack.at(0);
      stack = {tx, packed, c10::IValue(static_cast<double>(qout.scale)), c10::IValue(int64_t{qout.zero_point})};
      (relu ? linear_relu : linear).callBoxed(&stack);
      const torch::Tensor want = stack.at(0).toTensor().dequantize();
      const double diff = (got - want).abs().max().item<double>();
      const double mismatched = (got != want).sum().item<double>() / static_cast<double>(got.numel());
      EXPECT_LE(diff, qout.scale * 1.001) << c10::toString(engine) << " relu " << relu;
      EXPECT_LE(mismatched, 0.01) << c10::toString(engine) << " relu " << relu;
      std::printf("%s static linear%s: max |ember - torch| %.3g (output step %.3g), %.4f%% of outputs differ\n",
                  c10::toString(engine).c_str(), relu ? "_relu" : "", diff, static_cast<double>(qout.scale),
                  100.0 * mismatched);
    }
  }
  at::globalContext().setQEngine(saved);
  EXPECT_GT(engines_run, 0);
}

// ---- static int8 convolution ----

namespace {

// torch's per-channel qint8 weight of any rank (PerChannelMinMaxObserver, symmetric).
torch::Tensor torch_quantized_weight_nd(const torch::Tensor& w) {
  const torch::Tensor amax = w.abs().reshape({w.size(0), -1}).amax(1);
  const torch::Tensor scales = (amax / 127.5).clamp_min(FLT_EPSILON).to(torch::kDouble);
  return at::quantize_per_channel(w, scales, torch::zeros({w.size(0)}, torch::kLong), 0, torch::kQInt8);
}

c10::IValue torch_conv_prepack(const torch::Tensor& qw, const torch::Tensor& bias, std::vector<int64_t> stride,
                               std::vector<int64_t> padding, std::vector<int64_t> dilation, int64_t groups) {
  static const auto prepack = c10::Dispatcher::singleton().findSchemaOrThrow("quantized::conv2d_prepack", "");
  torch::jit::Stack stack{qw,
                          bias.defined() ? c10::optional<at::Tensor>(bias) : c10::optional<at::Tensor>(),
                          c10::IValue(stride),
                          c10::IValue(padding),
                          c10::IValue(dilation),
                          c10::IValue(groups)};
  prepack.callBoxed(&stack);
  return stack.at(0);
}

torch::Tensor torch_conv(const torch::Tensor& qx, const c10::IValue& packed, double scale, int64_t zp, bool relu) {
  static const auto conv = c10::Dispatcher::singleton().findSchemaOrThrow("quantized::conv2d", "new");
  static const auto conv_relu = c10::Dispatcher::singleton().findSchemaOrThrow("quantized::conv2d_relu", "new");
  torch::jit::Stack stack{qx, packed, c10::IValue(scale), c10::IValue(zp)};
  (relu ? conv_relu : conv).callBoxed(&stack);
  return stack.at(0).toTensor();
}

torch::Tensor torch_linear(const torch::Tensor& qx, const torch::Tensor& w, const torch::Tensor& bias, double scale,
                           int64_t zp, bool relu) {
  static const auto prepack = c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_prepack", "");
  static const auto linear = c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear", "");
  static const auto linear_relu = c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_relu", "");
  torch::jit::Stack stack{torch_quantized_weight(w), c10::optional<at::Tensor>(bias)};
  prepack.callBoxed(&stack);
  c10::IValue packed = stack.at(0);
  stack = {qx, packed, c10::IValue(scale), c10::IValue(zp)};
  (relu ? linear_relu : linear).callBoxed(&stack);
  return stack.at(0).toTensor();
}

struct ConvParityCase {
  int64_t in, out, k, stride, pad, dil, groups;
};

}  // namespace

// QuantizedConv2d against torch's quantized::conv2d / conv2d_relu (what torch.ao.nn.quantized.Conv2d
// and intrinsic ConvReLU2d call) on the same int8 weights, bias and quantization parameters, on
// each engine this libtorch has; the input is a non-contiguous view. Same codes, up to one code
// where a value lands within float rounding of a .5.
TEST(QuantParity, Conv2dMatchesTorch) {
  const at::QEngine saved = at::globalContext().qEngine();
  int engines_run = 0;
  for (at::QEngine engine : at::globalContext().supportedQEngines()) {
    if (engine == at::QEngine::NoQEngine) continue;
    at::globalContext().setQEngine(engine);
    const std::string name = c10::toString(engine);
    int64_t total = 0, differ = 0;
    double worst_steps = 0;
    bool ran = false;
    for (const ConvParityCase c : {ConvParityCase{1, 16, 3, 1, 1, 1, 1}, ConvParityCase{16, 32, 3, 1, 1, 1, 1},
                                   ConvParityCase{8, 12, 3, 2, 1, 1, 2}, ConvParityCase{6, 8, 3, 1, 2, 2, 1},
                                   ConvParityCase{12, 20, 1, 1, 0, 1, 1}}) {
      for (bool relu : {false, true}) {
        ember::manual_seed(100 + c.in * 3 + relu);
        ember::nn::Conv2d conv(ember::nn::Conv2dOptions(c.in, c.out, c.k)
                                   .stride(c.stride)
                                   .padding(c.pad)
                                   .dilation(c.dil)
                                   .groups(c.groups));
        // [N, C, W, H] transposed: a non-contiguous [N, C, H, W] view.
        const ember::Tensor x = (ember::randn({4, c.in, 15, 13}) * 1.2 + 0.3).transpose(2, 3);
        ember::quant::MinMaxObserver in_obs, out_obs;
        in_obs.observe(x);
        ember::Tensor fp = conv(x).detach();
        if (relu) fp = fp.relu();
        out_obs.observe(fp);
        const ember::quant::QParams qin = in_obs.calculate_qparams(), qout = out_obs.calculate_qparams();
        ember::quant::QuantizedConv2d q(*conv, qin, qout, relu);
        const torch::Tensor got = to_torch(q(x));

        const torch::Tensor tx = at::quantize_per_tensor(to_torch(x), qin.scale, qin.zero_point, torch::kQUInt8);
        torch::Tensor want;
        try {
          const c10::IValue packed = torch_conv_prepack(
              torch_quantized_weight_nd(to_torch(conv->weight.detach())), to_torch(conv->bias.detach()),
              {c.stride, c.stride}, {c.pad, c.pad}, {c.dil, c.dil}, c.groups);
          want = torch_conv(tx, packed, qout.scale, qout.zero_point, relu).dequantize();
        } catch (const c10::Error& e) {
          std::printf("%s: quantized::conv2d refuses case in=%lld groups=%lld: %.120s\n", name.c_str(),
                      static_cast<long long>(c.in), static_cast<long long>(c.groups), e.what());
          continue;
        }
        ran = true;
        ASSERT_EQ(got.sizes(), want.sizes());
        const double diff = (got - want).abs().max().item<double>();
        EXPECT_LE(diff, qout.scale * 1.001) << name << " in=" << c.in << " relu " << relu;
        worst_steps = std::max(worst_steps, diff / qout.scale);
        total += got.numel();
        differ += (got != want).sum().item<int64_t>();
      }
    }
    if (!ran) continue;
    ++engines_run;
    const double frac = static_cast<double>(differ) / static_cast<double>(std::max<int64_t>(total, 1));
    EXPECT_LE(frac, 0.01) << name;
    std::printf("%s quantized conv2d: %lld outputs, %.4f%% one step off (max %.2f steps)\n", name.c_str(),
                static_cast<long long>(total), 100.0 * frac, worst_steps);
  }
  at::globalContext().setQEngine(saved);
  EXPECT_GT(engines_run, 0);
}

TEST(QuantParity, MaxPoolOfCodesMatchesTorch) {
  ember::manual_seed(120);
  const ember::Tensor x = ember::randn({2, 6, 11, 10});
  const torch::Tensor tq = at::quantize_per_tensor(to_torch(x), 0.05, 60, torch::kQUInt8);
  const ember::Tensor codes = ember::quant::quantize_per_tensor(x, 0.05, 60);
  EXPECT_TRUE(torch::equal(to_torch(codes), tq.int_repr().clamp_max(127))) << "quantize_per_tensor";
  const ember::Tensor c127 = to_ember(tq.int_repr().clamp_max(127));
  const torch::Tensor tq127 = at::_make_per_tensor_quantized_tensor(tq.int_repr().clamp_max(127), 0.05, 60);
  const torch::Tensor want = at::max_pool2d(tq127, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true).int_repr();
  const ember::Tensor got = ember::quant::quantized_max_pool2d(c127, {3}, {2}, {1}, {1}, true);
  EXPECT_TRUE(torch::equal(to_torch(got), want));
}

// The whole converted CNN against the same network assembled from torch's quantized ops with
// ember's calibrated parameters: quantize_per_tensor, conv2d_relu, max_pool2d, flatten,
// linear_relu, linear, dequantize (what torch's FX static quantization produces for this model).
TEST(QuantParity, StaticCnnMatchesTorchQuantizedOps) {
  using namespace ember;
  const at::QEngine saved = at::globalContext().qEngine();
  at::globalContext().setQEngine(at::QEngine::ONEDNN);
  manual_seed(121);
  nn::Sequential model(nn::Conv2d(nn::Conv2dOptions(1, 16, 3).padding(1)), nn::ReLU(), nn::MaxPool2d(2),
                       nn::Conv2d(nn::Conv2dOptions(16, 32, 3).padding(1)), nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(),
                       nn::Linear(32 * 7 * 7, 64), nn::ReLU(), nn::Linear(64, 10));
  // The float layers, kept before convert replaces them.
  auto c0 = model->ptr<nn::Conv2dImpl>(0), c3 = model->ptr<nn::Conv2dImpl>(3);
  auto l7 = model->ptr<nn::LinearImpl>(7), l9 = model->ptr<nn::LinearImpl>(9);
  model->eval();
  quant::prepare(*model);
  const Tensor x = randn({32, 1, 28, 28});
  {
    // Calibrated on data that includes x: no value leaves its calibrated range, where torch's
    // quint8 ops would go on to codes above 127 and ember's clamp at 127.
    NoGradGuard no_grad;
    model(x);
    for (int i = 0; i < 3; ++i) model(randn({50, 1, 28, 28}));
  }
  quant::convert(*model);
  auto q0 = model->ptr<quant::QuantizedConv2dImpl>(0), q3 = model->ptr<quant::QuantizedConv2dImpl>(3);
  auto q7 = model->ptr<quant::StaticQuantizedLinearImpl>(7), q9 = model->ptr<quant::StaticQuantizedLinearImpl>(9);
  const torch::Tensor got = to_torch(model(x));

  auto conv = [&](const torch::Tensor& q, const nn::Conv2dImpl& f, const quant::QParams out) {
    const c10::IValue packed = torch_conv_prepack(torch_quantized_weight_nd(to_torch(f.weight.detach())),
                                                  to_torch(f.bias.detach()), {1, 1}, {1, 1}, {1, 1}, 1);
    return torch_conv(q, packed, out.scale, out.zero_point, true);
  };
  const quant::QParams in = q0->input_qparams();
  torch::Tensor t = at::quantize_per_tensor(to_torch(x), in.scale, in.zero_point, torch::kQUInt8);
  t = at::max_pool2d(conv(t, *c0, q0->output_qparams()), {2, 2}, {2, 2}, {0, 0}, {1, 1}, false);
  t = at::max_pool2d(conv(t, *c3, q3->output_qparams()), {2, 2}, {2, 2}, {0, 0}, {1, 1}, false);
  t = t.contiguous().reshape({32, -1});
  t = torch_linear(t, to_torch(l7->weight.detach()), to_torch(l7->bias.detach()), q7->output_qparams().scale,
                   q7->output_qparams().zero_point, true);
  t = torch_linear(t, to_torch(l9->weight.detach()), to_torch(l9->bias.detach()), q9->output_qparams().scale,
                   q9->output_qparams().zero_point, false);
  const torch::Tensor want = t.dequantize();
  const double step = q9->output_qparams().scale;
  const double diff = (got - want).abs().max().item<double>();
  const double frac = (got != want).sum().item<double>() / static_cast<double>(got.numel());
  const double agree = (got.argmax(1) == want.argmax(1)).to(torch::kDouble).mean().item<double>();
  std::printf("int8 CNN vs torch quantized ops (onednn): max diff %.3g (%.2f output steps), %.2f%% of logits "
              "differ, argmax agreement %.3f\n",
              diff, diff / step, 100.0 * frac, agree);
  // Same codes through the whole network (measured: identical logits); one code off in an early
  // layer could move a logit by a step or two.
  EXPECT_LE(diff, 2.01 * step);
  EXPECT_LE(frac, 0.05);
  EXPECT_GE(agree, 0.99);
  at::globalContext().setQEngine(saved);
}

// ---- fake quantization ----

TEST(QuantParity, FakeQuantizeMatchesTorch) {
  ember::manual_seed(130);
  // Random values over several grids' ranges, some exactly on .5 boundaries; a non-contiguous view.
  const ember::Tensor base = ember::cat({ember::randn({7, 40}) * 3.0, ember::arange(-20, 20).reshape({1, 40}) * 0.25});
  for (const bool transpose : {false, true}) {
    const ember::Tensor ex = transpose ? base.t() : base;  // [40, 8] non-contiguous or [8, 40]
    ember::Tensor ex_leaf = ex.detach().requires_grad_();
    torch::Tensor tx = to_torch(ex).requires_grad_();
    const ember::Tensor g = ember::randn(ex.sizes().vec());
    const torch::Tensor tg = to_torch(g);
    struct PT {
      double scale;
      int64_t zp, qmin, qmax;
    };
    for (const PT p : {PT{0.1, 0, 0, 127}, PT{0.5, 3, 0, 10}, PT{0.037, 64, 0, 255}, PT{0.02, 0, -128, 127}}) {
      ember::Tensor ey = ember::quant::fake_quantize_per_tensor_affine(ex_leaf, p.scale, p.zp, p.qmin, p.qmax);
      torch::Tensor ty = torch::fake_quantize_per_tensor_affine(tx, p.scale, p.zp, p.qmin, p.qmax);
      EXPECT_TRUE(torch::equal(to_torch(ey), ty)) << "forward scale " << p.scale << " transpose " << transpose;
      ey.backward(g);
      ty.backward(tg);
      EXPECT_TRUE(torch::equal(to_torch(ex_leaf.grad()), tx.grad())) << "backward scale " << p.scale;
      ex_leaf.mutable_grad() = ember::Tensor();
      tx.mutable_grad().reset();
    }
    // Per channel along each axis.
    for (int64_t axis : {int64_t{0}, int64_t{1}}) {
      const int64_t C = ex.size(axis);
      const ember::Tensor scale = ember::rand({C}) * 0.2 + 0.01;
      const ember::Tensor zp = ember::randint(0, 128, {C}).to(ember::kInt32);
      ember::Tensor ey = ember::quant::fake_quantize_per_channel_affine(ex_leaf, scale, zp, axis, 0, 127);
      torch::Tensor ty = torch::fake_quantize_per_channel_affine(tx, to_torch(scale), to_torch(zp), axis, 0, 127);
      EXPECT_TRUE(torch::equal(to_torch(ey), ty)) << "per-channel forward axis " << axis;
      ey.backward(g);
      ty.backward(tg);
      EXPECT_TRUE(torch::equal(to_torch(ex_leaf.grad()), tx.grad())) << "per-channel backward axis " << axis;
      ex_leaf.mutable_grad() = ember::Tensor();
      tx.mutable_grad().reset();
    }
  }
}

// ---- quantized add, cat and average pooling ----

namespace {

// ember codes (0..127) as a torch quint8 tensor on the grid (scale, zero_point), same layout.
torch::Tensor torch_codes(const ember::Tensor& codes, double scale, int64_t zero_point) {
  return at::_make_per_tensor_quantized_tensor(to_torch(codes.contiguous()), scale, zero_point);
}

// The share of codes that differ and the largest difference (in codes) between ember's uint8
// result and torch's quint8 one.
std::pair<double, int64_t> code_diff(const ember::Tensor& got, const torch::Tensor& want) {
  const torch::Tensor g = to_torch(got.contiguous()).to(torch::kInt), w = want.int_repr().contiguous().to(torch::kInt);
  EXPECT_EQ(g.sizes(), w.sizes());
  const double frac = (g != w).sum().item<double>() / static_cast<double>(std::max<int64_t>(g.numel(), 1));
  return {frac, (g - w).abs().max().item<int64_t>()};
}

}  // namespace

// torch.ops.quantized.add / add_relu (what FloatFunctional's QFunctional calls) on the same
// codes and parameters, with both of libtorch's engines (qnnpack has its own add kernel). The
// output grids are calibrated on the float sums, so no code passes 127 (where ember clamps and
// torch goes on to 255).
TEST(QuantParity, AddMatchesTorch) {
  static const auto add = c10::Dispatcher::singleton().findSchemaOrThrow("quantized::add", "");
  static const auto add_relu = c10::Dispatcher::singleton().findSchemaOrThrow("quantized::add_relu", "");
  const at::QEngine saved = at::globalContext().qEngine();
  for (at::QEngine engine : at::globalContext().supportedQEngines()) {
    if (engine == at::QEngine::NoQEngine) continue;
    at::globalContext().setQEngine(engine);
    int64_t total = 0;
    double off = 0;
    int64_t worst = 0;
    for (bool relu : {false, true}) {
      for (int trial = 0; trial < 4; ++trial) {
        ember::manual_seed(140 + trial + 10 * relu);
        // A non-contiguous view for b (transposed), different grids for a, b and the output.
        const ember::Tensor xa = ember::randn({4, 8, 13, 11}) * 1.5 + 0.4;
        const ember::Tensor xb = (ember::randn({4, 8, 11, 13}) * 0.8 - 0.2).transpose(2, 3);
        ember::quant::MinMaxObserver oa, ob, oo;
        oa.observe(xa);
        ob.observe(xb);
        const ember::quant::QParams qa = oa.calculate_qparams(), qb = ob.calculate_qparams();
        const ember::Tensor ca = ember::quant::quantize_per_tensor(xa, qa.scale, qa.zero_point);
        const ember::Tensor cb = ember::quant::quantize_per_tensor(xb, qb.scale, qb.zero_point);
        ember::Tensor sum = ember::quant::dequantize_per_tensor(ca, qa.scale, qa.zero_point) +
                            ember::quant::dequantize_per_tensor(cb, qb.scale, qb.zero_point);
        if (relu) sum = sum.relu();
        oo.observe(sum);
        const ember::quant::QParams qo = oo.calculate_qparams();
        const ember::Tensor got = ember::quant::quantized_add(ca, qa.scale, qa.zero_point, cb, qb.scale, qb.zero_point,
                                                              qo.scale, qo.zero_point, relu);
        torch::jit::Stack stack{torch_codes(ca, qa.scale, qa.zero_point), torch_codes(cb, qb.scale, qb.zero_point),
                                c10::IValue(static_cast<double>(qo.scale)), c10::IValue(int64_t{qo.zero_point})};
        (relu ? add_relu : add).callBoxed(&stack);
        const auto [frac, steps] = code_diff(got, stack.at(0).toTensor());
        EXPECT_LE(steps, 1) << c10::toString(engine) << " relu " << relu;
        off += frac * static_cast<double>(got.numel());
        total += got.numel();
        worst = std::max(worst, steps);
      }
    }
    const double frac = off / static_cast<double>(total);
    EXPECT_LE(frac, 0.01) << c10::toString(engine);
    std::printf("%s quantized add / add_relu: %lld outputs, %.4f%% one code off (max %lld)\n",
                c10::toString(engine).c_str(), static_cast<long long>(total), 100.0 * frac,
                static_cast<long long>(worst));
  }
  at::globalContext().setQEngine(saved);
}

TEST(QuantParity, CatMatchesTorch) {
  static const auto qcat = c10::Dispatcher::singleton().findSchemaOrThrow("quantized::cat", "");
  ember::manual_seed(150);
  const ember::Tensor x0 = ember::randn({3, 5, 7, 6}), x1 = ember::randn({3, 2, 7, 6}) * 2.0 + 1.0;
  const ember::Tensor x2 = (ember::randn({3, 6, 7, 4}) * 0.5).transpose(1, 3);  // [3, 4, 7, 6], not contiguous
  std::vector<ember::Tensor> codes;
  std::vector<double> scales;
  std::vector<int64_t> zps;
  ember::quant::MinMaxObserver out_obs;
  for (const ember::Tensor& x : {x0, x1, x2}) {
    ember::quant::MinMaxObserver o;
    o.observe(x);
    out_obs.observe(x);
    const ember::quant::QParams q = o.calculate_qparams();
    codes.push_back(ember::quant::quantize_per_tensor(x, q.scale, q.zero_point));
    scales.push_back(q.scale);
    zps.push_back(q.zero_point);
  }
  const ember::quant::QParams qo = out_obs.calculate_qparams();
  int64_t total = 0;
  double off = 0;
  for (int64_t dim : {int64_t{1}, int64_t{-3}}) {
    const ember::Tensor got = ember::quant::quantized_cat(codes, scales, zps, dim, qo.scale, qo.zero_point);
    c10::List<at::Tensor> list;
    for (size_t i = 0; i < codes.size(); ++i) list.push_back(torch_codes(codes[i], scales[i], zps[i]));
    torch::jit::Stack stack{list, c10::IValue(dim), c10::IValue(static_cast<double>(qo.scale)),
                            c10::IValue(int64_t{qo.zero_point})};
    qcat.callBoxed(&stack);
    const auto [frac, steps] = code_diff(got, stack.at(0).toTensor());
    EXPECT_LE(steps, 1);
    off += frac * static_cast<double>(got.numel());
    total += got.numel();
  }
  const double frac = off / static_cast<double>(total);
  EXPECT_LE(frac, 0.01);
  std::printf("quantized cat: %lld outputs, %.4f%% one code off\n", static_cast<long long>(total), 100.0 * frac);
}

TEST(QuantParity, AvgPoolOfCodesMatchesTorch) {
  // libtorch 1.13 has two kernels that round ties differently: the channels-last one (what
  // ember's layout, the quantized convolutions' output, selects) computes round_half_even(S / n)
  // + zero_point, as ember does; the NCHW one round_half_even(S / n + zero_point), which differs
  // at a tie when the zero point is odd. So: channels-last codes for every zero point, NCHW for
  // even ones, and with the odd one NCHW differs by at most one code at ties only.
  ember::manual_seed(160);
  const ember::Tensor x = ember::randn({2, 6, 11, 10});
  const double scale = 0.05;
  struct P {
    int64_t k, s, p;
    bool ceil, include_pad;
    c10::optional<int64_t> divisor;
  };
  int64_t checked = 0, nchw_odd = 0;
  double nchw_odd_off = 0;
  for (int64_t zp : {int64_t{0}, int64_t{37}, int64_t{64}}) {
    const ember::Tensor codes = ember::quant::quantize_per_tensor(x, scale, zp);
    for (bool channels_last : {false, true}) {
      torch::Tensor tq = torch_codes(codes, scale, zp);
      if (channels_last) tq = tq.contiguous(at::MemoryFormat::ChannelsLast);
      const bool exact = channels_last || zp % 2 == 0;
      auto check = [&](const ember::Tensor& got, const torch::Tensor& want, const std::string& what) {
        const auto [frac, steps] = code_diff(got, want);
        if (exact) {
          EXPECT_EQ(frac, 0.0) << what << " zp " << zp << (channels_last ? " channels-last" : " nchw");
          checked += got.numel();
        } else {
          EXPECT_LE(steps, 1) << what << " zp " << zp;
          nchw_odd_off += frac * static_cast<double>(got.numel());
          nchw_odd += got.numel();
        }
      };
      for (const P c : {P{2, 2, 0, false, true, {}}, P{3, 2, 1, false, true, {}}, P{3, 2, 1, true, false, {}},
                        P{3, 1, 1, false, true, 5}, P{4, 3, 2, true, true, {}}}) {
        const ember::Tensor got = ember::quant::quantized_avg_pool2d(
            codes, zp, {c.k}, {c.s}, {c.p}, c.ceil, c.include_pad,
            c.divisor ? std::optional<int64_t>(*c.divisor) : std::nullopt);
        const torch::Tensor want = at::avg_pool2d(tq, {c.k, c.k}, {c.s, c.s}, {c.p, c.p}, c.ceil, c.include_pad, c.divisor);
        check(got, want, "k " + std::to_string(c.k) + " p " + std::to_string(c.p));
      }
      for (const std::vector<int64_t>& size : {std::vector<int64_t>{1, 1}, {3, 4}, {7, 7}}) {
        const ember::Tensor got = ember::quant::quantized_adaptive_avg_pool2d(codes, zp, size);
        const torch::Tensor want = at::adaptive_avg_pool2d(tq, size);
        check(got, want, "adaptive " + std::to_string(size[0]) + "x" + std::to_string(size[1]));
      }
    }
  }
  const double odd_frac = nchw_odd_off / static_cast<double>(std::max<int64_t>(nchw_odd, 1));
  EXPECT_GT(odd_frac, 0.0) << "torch's NCHW kernel was expected to round ties with the zero point";
  EXPECT_LE(odd_frac, 0.3);
  std::printf("quantized avg_pool2d / adaptive_avg_pool2d: %lld outputs equal to torch's; against torch's NCHW "
              "kernel with odd zero point 37, %.2f%% of %lld outputs one code off (ties)\n",
              static_cast<long long>(checked), 100.0 * odd_frac, static_cast<long long>(nchw_odd));
}

// ---- dynamic LSTM ----

namespace {

// torch 1.13's dynamic quantized LSTM, called as torch.ao.nn.quantized.dynamic.LSTM calls it:
// per layer and direction a CellParamsBase from quantized::make_quantized_cell_params_dynamic
// (prepacked per-channel int8 weights with their biases, reduce_range on), then
// aten::quantized_lstm.input with dtype qint8.
std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> torch_quantized_lstm(const ember::nn::LSTMImpl& lstm,
                                                                            const torch::Tensor& x,
                                                                            const torch::Tensor& h0,
                                                                            const torch::Tensor& c0) {
  auto& dispatcher = c10::Dispatcher::singleton();
  static const auto prepack = dispatcher.findSchemaOrThrow("quantized::linear_prepack", "");
  static const auto make_cell = dispatcher.findSchemaOrThrow("quantized::make_quantized_cell_params_dynamic", "");
  static const auto qlstm = dispatcher.findSchemaOrThrow("aten::quantized_lstm", "input");
  const ember::nn::LSTMOptions& o = lstm.options;
  EXPECT_TRUE(o.bias());  // the cell parameters take biases
  const std::vector<ember::Tensor>& flat = lstm.flat_weights();
  std::vector<c10::IValue> cells;
  for (size_t i = 0; i < flat.size(); i += 4) {
    c10::IValue packed[2];
    for (size_t k = 0; k < 2; ++k) {
      torch::jit::Stack stack{torch_quantized_weight(to_torch(flat[i + k].detach())),
                              c10::optional<at::Tensor>(to_torch(flat[i + 2 + k].detach()))};
      prepack.callBoxed(&stack);
      packed[k] = stack.at(0);
    }
    torch::jit::Stack stack{packed[0], packed[1], to_torch(flat[i + 2].detach()), to_torch(flat[i + 3].detach()),
                            c10::IValue(true)};
    make_cell.callBoxed(&stack);
    cells.push_back(stack.at(0));
  }
  c10::impl::GenericList params(cells.at(0).type());
  for (const auto& c : cells) params.push_back(c);
  torch::jit::Stack stack{x,
                          c10::IValue(std::vector<at::Tensor>{h0, c0}),
                          c10::IValue(params),
                          c10::IValue(true),
                          c10::IValue(o.num_layers()),
                          c10::IValue(0.0),
                          c10::IValue(false),
                          c10::IValue(o.bidirectional()),
                          c10::IValue(o.batch_first()),
                          c10::IValue(c10::ScalarType::QInt8),
                          c10::IValue(false)};
  qlstm.callBoxed(&stack);
  return {stack.at(0).toTensor(), stack.at(1).toTensor(), stack.at(2).toTensor()};
}

struct LstmCase {
  int64_t layers;
  bool bidirectional, batch_first;
  int64_t seq, batch, in, hidden;
};

}  // namespace

TEST(QuantParity, DynamicLSTMMatchesTorch) {
  const auto engines = at::globalContext().supportedQEngines();
  const at::QEngine saved = at::globalContext().qEngine();
  int engines_run = 0;
  for (at::QEngine engine : engines) {
    if (engine == at::QEngine::NoQEngine) continue;
    at::globalContext().setQEngine(engine);
    ++engines_run;
    const std::string name = c10::toString(engine);
    for (const LstmCase c : {LstmCase{1, false, false, 9, 4, 20, 16}, LstmCase{2, true, true, 6, 3, 12, 24},
                             LstmCase{2, false, false, 20, 16, 64, 64}}) {
      ember::manual_seed(c.in * 3 + c.layers);
      ember::nn::LSTM lstm(ember::nn::LSTMOptions(c.in, c.hidden)
                               .num_layers(c.layers)
                               .bidirectional(c.bidirectional)
                               .batch_first(c.batch_first));
      ember::quant::DynamicQuantizedLSTM q(*lstm);
      const int64_t D = c.bidirectional ? 2 : 1;
      const ember::Tensor x = c.batch_first ? ember::randn({c.batch, c.seq, c.in}) : ember::randn({c.seq, c.batch, c.in});
      const ember::Tensor h0 = ember::randn({c.layers * D, c.batch, c.hidden}) * 0.5;
      const ember::Tensor c0 = ember::randn({c.layers * D, c.batch, c.hidden});
      auto [want, want_h, want_c] = torch_quantized_lstm(*lstm, to_torch(x), to_torch(h0), to_torch(c0));
      auto [out, st] = q(x, std::tuple<ember::Tensor, ember::Tensor>{h0, c0});
      ember::Tensor fp_out;
      {
        ember::NoGradGuard g;
        fp_out = std::get<0>(lstm(x, std::tuple<ember::Tensor, ember::Tensor>{h0, c0}));
      }
      const torch::Tensor got = to_torch(out), fp = to_torch(fp_out);
      ASSERT_EQ(got.sizes(), want.sizes());
      const double diff = (got - want).abs().max().item<double>();
      const double diff_c = (to_torch(std::get<1>(st)) - want_c).abs().max().item<double>();
      const double qerr = (want - fp).abs().max().item<double>();
      const double ember_err = (got - fp).abs().max().item<double>();
      std::printf("%s LSTM layers %lld%s%s L=%lld N=%lld %lld->%lld: max |ember - torch| output %.3g, c_n %.3g; "
                  "max |torch - float| %.3g, |ember - float| %.3g\n",
                  name.c_str(), static_cast<long long>(c.layers), c.bidirectional ? " bidirectional" : "",
                  c.batch_first ? " batch_first" : "", static_cast<long long>(c.seq), static_cast<long long>(c.batch),
                  static_cast<long long>(c.in), static_cast<long long>(c.hidden), diff, diff_c, qerr, ember_err);
      if (engine == at::QEngine::QNNPACK) {
        // 8-bit activations there (reduce_range ignored): only the errors against float compare.
        EXPECT_LE(ember_err, 3 * qerr + 1e-5) << name;
        continue;
      }
      // Same scheme, same codes: what differs is float rounding inside the products and the
      // gates, and now and then an activation code on the other side of a .5, which the
      // recurrence carries on; far below the quantization error itself.
      EXPECT_LE(diff, 1e-3) << name;
      EXPECT_LE(diff_c, 2e-3) << name;
      EXPECT_LT(diff, 0.25 * qerr + 1e-6) << name;
    }
  }
  at::globalContext().setQEngine(saved);
  EXPECT_GT(engines_run, 0);
}
