// bench_infer: inference latency of three models in ember, one mode per process (issue 14;
// bench/infer.py runs it against bench/infer_torch.py, each library in its own process).
//
//   bench_infer --model cnn|mlp|transformer --batch N --mode eager|artifact|compiled
//               [--reps N] [--threads 2] [--cold] [--artifact PATH]
//   bench_infer --model M --mode export --artifact PATH     writes the artifact and exits
//
// Modes (the model is built with manual_seed(0), the input drawn with manual_seed(1), so
// every process of one model sees the same weights and inputs):
//   eager     model->forward(x) under InferenceMode.
//   artifact  jit::trace (dynamic batch) + jit::freeze + jit::save, then jit::load, and
//             GraphModule::forward(x) timed. With --artifact PATH the file written by an
//             earlier `--mode export` process is loaded instead (what --cold measures: a
//             process that never saw the model's source).
//   compiled  jit::compile(model) called as fast(x); the first call traces and freezes.
// Warm runs: 2 calls and at least 0.2 s of warm-up, then --reps timed calls (0: as many as
// fit in ~1 s, 20 to 5000), one call per sample; prints
//   summary: ms=<median> min=.. max=.. reps=..
// --cold: one call in a fresh process, timed from before the first ember call that mode
// makes on the model (artifact: jit::load + first forward; compiled: first call, tracing
// and freezing included; eager: first forward); prints summary: cold_ms=.. ms=.. (same).
// Every mode then checks its output against eager (max abs diff <= 1e-4; eager mode: a
// second call equals the first) and fails (exit 1) otherwise.

#include <ember/core/cpu_capability.h>
#include <ember/ember.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

using clock_type = std::chrono::steady_clock;
namespace nn = ember::nn;
namespace jit = ember::jit;
using ember::Tensor;

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

[[noreturn]] void usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s --model cnn|mlp|transformer --batch N --mode eager|artifact|compiled|export "
               "[--reps N] [--threads N] [--cold] [--artifact PATH]\n",
               prog);
  std::exit(2);
}

// The three models, as bench/infer_torch.py builds them (same architecture, eval mode).
std::shared_ptr<nn::Module> make_model(const std::string& name) {
  ember::manual_seed(0);
  std::shared_ptr<nn::Module> m;
  if (name == "cnn") {
    // examples/fashion_mnist/main.cpp make_model().
    m = nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)), nn::ReLU(),
                       nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)),
                       nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Flatten(), nn::Linear(3136, 128),
                       nn::ReLU(), nn::Linear(128, 10))
            .ptr();
  } else if (name == "mlp") {
    m = nn::Sequential(nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 256), nn::ReLU(), nn::Linear(256, 10))
            .ptr();
  } else if (name == "transformer") {
    m = nn::TransformerEncoderLayer(
            nn::TransformerEncoderLayerOptions(128, 4).dim_feedforward(512).dropout(0.1).batch_first(true))
            .ptr();
  } else {
    return nullptr;
  }
  m->eval();
  return m;
}

std::vector<int64_t> input_shape(const std::string& model, int64_t batch) {
  if (model == "cnn") return {batch, 1, 28, 28};
  if (model == "mlp") return {batch, 784};
  return {batch, 32, 128};
}

Tensor make_input(const std::string& model, int64_t batch) {
  ember::manual_seed(1);
  return ember::randn(input_shape(model, batch));
}

Tensor eager_forward(nn::Module& m, const Tensor& x) {
  ember::InferenceMode guard;
  return m.forward(x);
}

// Traces (dynamic batch, example batch 8), freezes and saves the model to path.
void export_artifact(nn::Module& m, const std::string& model, const std::string& path) {
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  jit::GraphModule g = jit::freeze(jit::trace(m, make_input(model, 8), opt));
  ember::Value meta = ember::Value::dict();
  meta["model_name"] = model;
  jit::save(g, path, meta);
}

std::string temp_artifact(const std::string& model) {
  return (std::filesystem::temp_directory_path() /
          ("bench_infer_" + model + "_" + std::to_string(::getpid()) + ".ember"))
      .string();
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  if (a.sizes().vec() != b.sizes().vec()) return INFINITY;
  ember::InferenceMode guard;
  return (a - b).abs().amax().item().to_double();
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, mode, artifact;
  int64_t batch = 1;
  int reps = 0, threads = 2;
  bool cold = false;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--cold") {
      cold = true;
      continue;
    }
    if (i + 1 >= argc) usage(argv[0]);
    if (k == "--model") model = argv[++i];
    else if (k == "--batch") batch = std::atoll(argv[++i]);
    else if (k == "--mode") mode = argv[++i];
    else if (k == "--reps") reps = std::atoi(argv[++i]);
    else if (k == "--threads") threads = std::atoi(argv[++i]);
    else if (k == "--artifact") artifact = argv[++i];
    else usage(argv[0]);
  }
  if (input_shape(model, 1).empty() || (model != "cnn" && model != "mlp" && model != "transformer")) usage(argv[0]);
  if (mode != "eager" && mode != "artifact" && mode != "compiled" && mode != "export") usage(argv[0]);
  if (batch < 1 || threads < 1) usage(argv[0]);
  try {
    ember::set_num_threads(threads);
    if (mode == "export") {
      if (artifact.empty()) usage(argv[0]);
      auto m = make_model(model);
      export_artifact(*m, model, artifact);
      std::printf("exported %s to %s\n", model.c_str(), artifact.c_str());
      return 0;
    }
    const Tensor x = make_input(model, batch);
    std::shared_ptr<nn::Module> m;       // the model (eager, compiled; artifact: for the check)
    jit::GraphModule loaded;             // artifact mode
    std::unique_ptr<jit::CompiledModule> fast;  // compiled mode
    std::string tmp;                     // artifact written by this process, removed at exit
    double cold_ms = -1, load_ms = -1;
    Tensor first;
    if (mode == "artifact") {
      if (artifact.empty()) {
        // Self-contained: trace, freeze and save here, then load the file back.
        tmp = artifact = temp_artifact(model);
        m = make_model(model);
        export_artifact(*m, model, artifact);
      }
      const auto t0 = clock_type::now();
      loaded = jit::load(artifact);
      load_ms = ms_since(t0);
      first = loaded.forward(x);
      cold_ms = ms_since(t0);
      if (!tmp.empty()) std::filesystem::remove(tmp);
      if (!m) m = make_model(model);
    } else if (mode == "compiled") {
      m = make_model(model);
      fast = std::make_unique<jit::CompiledModule>(jit::compile(m));
      const auto t0 = clock_type::now();
      first = (*fast)(x);
      cold_ms = ms_since(t0);
    } else {
      m = make_model(model);
      const auto t0 = clock_type::now();
      first = eager_forward(*m, x);
      cold_ms = ms_since(t0);
    }
    std::function<Tensor()> call;
    if (mode == "artifact") call = [&] { return loaded.forward(x); };
    else if (mode == "compiled") call = [&] { return (*fast)(x); };
    else call = [&] { return eager_forward(*m, x); };

    // What is timed computes the model: the first and a later output equal eager's.
    const Tensor want = eager_forward(*m, x);
    const double diff_first = max_abs_diff(first, want), diff_again = max_abs_diff(call(), want);
    const double diff = std::max(diff_first, diff_again);
    std::printf("library: ember (CPU kernels: %s), %d threads\n", ember::cpu_capability_name().c_str(), threads);
    std::printf("check: %s %s batch %lld: max |%s - eager| = %.3g (first call %.3g)\n", model.c_str(), mode.c_str(),
                static_cast<long long>(batch), mode.c_str(), diff, diff_first);
    if (!(diff <= 1e-4)) {
      std::fprintf(stderr, "check failed: %s output differs from eager by %g (> 1e-4)\n", mode.c_str(), diff);
      return 1;
    }
    if (mode == "compiled" && (fast->graphs_compiled() != 1 || fast->eager_calls() != 0)) {
      std::fprintf(stderr, "check failed: compiled %d graphs, %d eager calls (want 1, 0)\n", fast->graphs_compiled(),
                   fast->eager_calls());
      return 1;
    }
    if (cold) {
      if (load_ms >= 0) std::printf("load_ms=%.6g\n", load_ms);
      std::printf("summary: cold_ms=%.6g ms=%.6g min=%.6g max=%.6g reps=1\n", cold_ms, cold_ms, cold_ms, cold_ms);
      return 0;
    }

    // Warm-up: at least 2 calls and 0.2 s; its mean sets the rep count when --reps is 0.
    const auto warm0 = clock_type::now();
    int warm = 0;
    while (warm < 2 || ms_since(warm0) < 200) {
      Tensor y = call();
      ++warm;
    }
    const double per_call = ms_since(warm0) / warm;
    const int n = reps > 0 ? reps : static_cast<int>(std::clamp(1000.0 / per_call, 20.0, 5000.0));
    std::vector<double> ms;
    ms.reserve(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
      const auto t0 = clock_type::now();
      Tensor y = call();
      ms.push_back(ms_since(t0));
    }
    std::sort(ms.begin(), ms.end());
    std::printf("summary: ms=%.6g min=%.6g max=%.6g reps=%d cold_ms=%.6g\n", ms[ms.size() / 2], ms.front(),
                ms.back(), n, cold_ms);
  } catch (const ember::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
