// bench/char_lm: ember's side of the char_lm benchmark (examples/char_lm's model), one
// measurement per process; bench/char_lm.py runs it against PyTorch 1.13 (char_lm_torch.py).
//
//   bench_char_lm --what train|generate [--steps 10] [--threads 2] [--profile N]
// train: one optimizer step (forward, backward, clip_grad_norm_, AdamW) on a batch of 32
// sequences of 128 tokens; prints `summary: ms=<median step>`. generate: 112 new tokens
// after an 8-token prompt with the KV cache (top-k 20 sampling); prints
// `summary: tokens_per_s=<median>`. --profile N (train): after the timed steps, profiles N
// more with ember::profiler and prints its table (self time per op and backward node).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "char_lm/model.h"
#include "ember/profiler/profiler.h"

using namespace ember;

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  std::string what = "train";
  int steps = 10, threads = 2, profile_steps = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    // clang-format off
    if (k == "--what") what = argv[i + 1];
    else if (k == "--steps") steps = std::stoi(argv[i + 1]);
    else if (k == "--threads") threads = std::stoi(argv[i + 1]);
    else if (k == "--profile") profile_steps = std::stoi(argv[i + 1]);
    // clang-format on
  }
  if (what != "train" && what != "generate") {
    std::fprintf(stderr, "--what is train or generate\n");
    return 2;
  }
  set_num_threads(threads);
  manual_seed(0);
  char_lm::Config cfg;
  cfg.vocab = 114;  // the fortunes vocabulary
  char_lm::Transformer model(cfg);
  std::vector<double> samples;
  if (what == "train") {
    optim::AdamW opt(char_lm::adamw_groups(*model, 0.1), optim::AdamWOptions(1e-3).betas({0.9, 0.99}));
    const Tensor x = randint(0, cfg.vocab, {32, cfg.block});
    const Tensor y = randint(0, cfg.vocab, {32, cfg.block});
    auto step = [&] {
      opt.zero_grad();
      char_lm::lm_loss(model, x, y).backward();
      nn::utils::clip_grad_norm_(model->parameters(), 1.0);
      opt.step();
    };
    for (int i = 0; i < 3; ++i) step();  // warm-up
    for (int i = 0; i < steps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      step();
      samples.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf("summary: ms=%.3f\n", median(samples));
    if (profile_steps > 0) {
      profiler::ProfileOptions popt;
      popt.record_shapes = true;
      profiler::Profile prof(popt);
      for (int i = 0; i < profile_steps; ++i) {
        EMBER_RECORD("train step");
        step();
      }
      prof.stop();
      std::printf("%s", prof.table("self_cpu_time_total", 45).c_str());
    }
    return 0;
  }
  const std::vector<int64_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8};
  const int64_t n = 112;
  std::mt19937_64 rng(0);
  char_lm::generate(model, prompt, n, 0.8, 20, rng);  // warm-up
  for (int i = 0; i < steps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    char_lm::generate(model, prompt, n, 0.8, 20, rng);
    samples.push_back(static_cast<double>(n) /
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("summary: tokens_per_s=%.1f\n", median(samples));
  return 0;
}
