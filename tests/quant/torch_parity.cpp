// Parity of quant::DynamicQuantizedLinear with PyTorch 1.13's dynamic quantized Linear: the
// weight codes and scales PyTorch's per-channel symmetric observer computes, and the output
// of quantized::linear_dynamic (what torch.nn.quantized.dynamic.Linear calls, reduce_range
// on) on the same weights and inputs, with this libtorch's default quantized engine and
// every other it has (Debian's 1.13: onednn and qnnpack; no fbgemm).

#include <ATen/core/dispatch/Dispatcher.h>
#include <ember/ember.h>
#include <ember/quant/quant.h>
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
