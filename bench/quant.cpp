// bench_quant: int8 quantization against float32 in ember, one mode per process (issue 15;
// bench/quant.py runs it against bench/quant_torch.py, each library in its own process).
//
//   bench_quant --model mlp|cnn|resnet|lstm --batch N --mode fp32|int8|static [--reps N] [--threads 2]
//
// lstm: a 2-layer nn::LSTM, input and hidden 256, over 50 time steps ([50, N, 256]; its
// output sequence is the result); int8 quantizes it with {Linear, LSTM}; no static mode.
// The model is built with manual_seed(0) (the MLP 784-512-256-10, the Fashion-MNIST CNN and
// the residual CNN of examples/fashion_mnist, eval mode), the input drawn with manual_seed(1). int8 (dynamic):
// quant::quantize_dynamic(model, {Linear}) (the CNN's convolutions stay float32). static:
// quant::prepare (min/max observers, Conv2d+ReLU and Linear+ReLU fused), calibration on 4
// batches of 64 random inputs drawn with manual_seed(2), quant::convert (int8 convolutions and
// Linear layers, uint8 codes between them). All modes run under InferenceMode. Warm-up: 2 calls and at least 0.2 s, then --reps timed
// calls (0: as many as fit in ~1 s, 20 to 5000); prints
//   summary: ms=<median> min=.. max=.. reps=.. bytes=<state_dict bytes>
// and a check line: int8's largest difference from float32 relative to float32's largest
// output (fails, exit 1, above 5%; 25% for static: the grids are fixed by calibration, and the
// randomly initialised CNN's logits are small, so a few steps are a large share of them).

#include <ember/core/cpu_capability.h>
#include <ember/ember.h>
#include <ember/quant/quant.h>
#include <ember/quant/static_quant.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;
namespace nn = ember::nn;
using ember::Tensor;

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

[[noreturn]] void usage(const char* prog) {
  std::fprintf(stderr, "usage: %s --model mlp|cnn|resnet|lstm --batch N --mode fp32|int8|static [--reps N] [--threads N]\n",
               prog);
  std::exit(2);
}

// examples/fashion_mnist's residual block: conv-bn-relu-conv-bn, plus the input, then ReLU.
class ResidualBlockImpl : public nn::Cloneable<ResidualBlockImpl> {
 public:
  explicit ResidualBlockImpl(int64_t channels) : Cloneable("ResidualBlock"), channels(channels) { reset(); }
  void reset() override {
    auto conv = [&] { return nn::Conv2d(nn::Conv2dOptions(channels, channels, 3).padding(1).bias(false)); };
    body = register_module("body", nn::Sequential(conv(), nn::BatchNorm2d(channels), nn::ReLU(), conv(),
                                                  nn::BatchNorm2d(channels)));
    skip = register_module("skip", ember::quant::FloatFunctional());
  }
  Tensor forward(const Tensor& x) override { return skip->add_relu(body->forward(x), x); }
  int64_t channels;
  nn::Sequential body{nullptr};
  ember::quant::FloatFunctional skip{nullptr};
};
EMBER_MODULE(ResidualBlock);

// A 2-layer LSTM whose output sequence is the result; it calls its child through the module
// tree, so that after quantize_dynamic the DynamicQuantizedLSTM that replaced it runs.
class SequenceModelImpl : public nn::Module {
 public:
  SequenceModelImpl() : Module("SequenceModel") {
    register_module("lstm", nn::LSTM(nn::LSTMOptions(256, 256).num_layers(2)));
  }
  Tensor forward(const Tensor& x) override {
    const std::shared_ptr<nn::Module> lstm = named_children()["lstm"];
    if (auto* q = lstm->as<ember::quant::DynamicQuantizedLSTMImpl>()) return std::get<0>(q->forward(x));
    return std::get<0>(lstm->as<nn::LSTMImpl>()->forward(x));
  }
};
EMBER_MODULE(SequenceModel);

nn::Sequential make_model(const std::string& name) {
  ember::manual_seed(0);
  nn::Sequential m{nullptr};
  if (name == "lstm") {
    m = nn::Sequential(SequenceModel());
  } else if (name == "resnet") {
    auto stem = [](int64_t in, int64_t out, int64_t k) {
      return nn::Conv2d(nn::Conv2dOptions(in, out, k).padding(k / 2).bias(false));
    };
    m = nn::Sequential(stem(1, 16, 3), nn::BatchNorm2d(16), nn::ReLU(), ResidualBlock(16),
                       nn::MaxPool2d(nn::MaxPool2dOptions(2)), stem(16, 32, 3), nn::BatchNorm2d(32), nn::ReLU(),
                       ResidualBlock(32), nn::MaxPool2d(nn::MaxPool2dOptions(2)), stem(32, 64, 1), nn::BatchNorm2d(64),
                       nn::ReLU(), nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions(1)), nn::Flatten(),
                       nn::Linear(64, 10));
  } else if (name == "mlp") {
    m = nn::Sequential(nn::Linear(784, 512), nn::ReLU(), nn::Linear(512, 256), nn::ReLU(), nn::Linear(256, 10));
  } else {
    m = nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)), nn::ReLU(),
                       nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)),
                       nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Flatten(), nn::Linear(3136, 128),
                       nn::ReLU(), nn::Linear(128, 10));
  }
  m->eval();
  return m;
}

Tensor make_input(const std::string& model, int64_t batch) {
  ember::manual_seed(1);
  if (model == "lstm") return ember::randn({50, batch, 256});
  return model == "mlp" ? ember::randn({batch, 784}) : ember::randn({batch, 1, 28, 28});
}

// Random inputs shaped like x with `batch` rows (calibration data).
Tensor make_input_like(const Tensor& x, int64_t batch) {
  std::vector<int64_t> sizes = x.sizes().vec();
  sizes[0] = batch;
  return ember::randn(sizes);
}

Tensor run(nn::Sequential& m, const Tensor& x) {
  ember::InferenceMode guard;
  return m->forward(x);
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, mode;
  int64_t batch = 1;
  int reps = 0, threads = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) usage(argv[0]);
    if (k == "--model")
      model = argv[++i];
    else if (k == "--batch")
      batch = std::atoll(argv[++i]);
    else if (k == "--mode")
      mode = argv[++i];
    else if (k == "--reps")
      reps = std::atoi(argv[++i]);
    else if (k == "--threads")
      threads = std::atoi(argv[++i]);
    else
      usage(argv[0]);
  }
  if ((model != "mlp" && model != "cnn" && model != "resnet" && model != "lstm") ||
      (mode != "fp32" && mode != "int8" && mode != "static") || (model == "lstm" && mode == "static") || batch < 1 ||
      threads < 1) {
    usage(argv[0]);
  }
  try {
    ember::set_num_threads(threads);
    nn::Sequential m = make_model(model);
    const Tensor x = make_input(model, batch);
    const Tensor fp = run(m, x);
    if (mode == "int8") {
      ember::quant::quantize_dynamic(*m, {ember::quant::ModuleKind::Linear, ember::quant::ModuleKind::LSTM});
    }
    if (mode == "static") {
      ember::quant::prepare(*m);
      ember::manual_seed(2);
      for (int i = 0; i < 4; ++i) run(m, make_input_like(x, 64));
      ember::quant::convert(*m);
    }
    const Tensor y = run(m, x);
    const double scale = fp.abs().amax().item().to_double();
    const double rel = (y - fp).abs().amax().item().to_double() / std::max(scale, 1e-12);
    std::printf("library: ember (CPU kernels: %s), %d threads\n", ember::cpu_capability_name().c_str(), threads);
    std::printf("check: %s %s batch %lld: max |out - fp32| / max |fp32| = %.3g\n", model.c_str(), mode.c_str(),
                static_cast<long long>(batch), rel);
    if (!(rel <= (mode == "static" ? 0.25 : 0.05))) {
      std::fprintf(stderr, "check failed: the output is %.3g (relative) away from float32's\n", rel);
      return 1;
    }
    const auto warm0 = clock_type::now();
    int warm = 0;
    while (warm < 2 || ms_since(warm0) < 200) {
      Tensor out = run(m, x);
      ++warm;
    }
    const double per_call = ms_since(warm0) / warm;
    const int n = reps > 0 ? reps : static_cast<int>(std::clamp(1000.0 / per_call, 20.0, 5000.0));
    std::vector<double> ms;
    ms.reserve(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
      const auto t0 = clock_type::now();
      Tensor out = run(m, x);
      ms.push_back(ms_since(t0));
    }
    std::sort(ms.begin(), ms.end());
    std::printf("summary: ms=%.6g min=%.6g max=%.6g reps=%d bytes=%lld\n", ms[ms.size() / 2], ms.front(), ms.back(), n,
                static_cast<long long>(ember::quant::state_dict_bytes(*m)));
  } catch (const ember::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
