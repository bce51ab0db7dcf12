// Parity of quant::DynamicQuantizedLinear with PyTorch 1.13's dynamic quantized Linear: the
// weight codes and scales PyTorch's per-channel symmetric observer computes, and the output
// of quantized::linear_dynamic (what torch.nn.quantized.dynamic.Linear calls, reduce_range
// on) on the same weights and inputs, with this libtorch's default quantized engine and
// every other it has (Debian's 1.13: onednn and qnnpack; no fbgemm).

#include <ATen/core/dispatch/Dispatcher.h>
#include <ember/ember.h>
#include <ember/quant/quant.h>
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
