// bench/rnn: LSTM(256, 256) on batch 64 (one step and 32 steps) and
// MultiheadAttention(256, 8) on 32 sequences of 128, forward (no grad) and
// forward + backward (bench/harness.h; run by bench/run.py).

#include <cstdint>
#include <memory>

#include "harness.h"

namespace {

using bench::Case;
using bench::keep;
using bench::Limit;
using bench::Tensor;

Case lstm(std::string name, int64_t steps, bool backward) {
  return {std::move(name),
          [=] {
            auto m = std::make_shared<lib::nn::LSTM>(256, 256);
            auto x = std::make_shared<Tensor>(lib::randn({steps, 64, 256}));
            return std::function<void()>([m, x, backward] {
              if (!backward) {
                lib::NoGradGuard g;
                keep(std::get<0>((*m)->forward(*x)));
                return;
              }
              (*m)->zero_grad();
              auto [out, state] = (*m)->forward(*x);
              (out.sum() + std::get<1>(state).sum()).backward();
            });
          },
          steps == 1 ? 100 : 15,
          1,
          0,
          2.0 * steps * 64 * 4 * 256 * 512 * (backward ? 3 : 1),
          Limit::Gemm};
}

// libtorch 1.13's C++ MultiheadAttention takes [L, N, E]; ember's is built
// batch_first and takes [N, L, E]: the same 32 x 128 x 256 values in each
// library's own layout.
Case mha(std::string name, bool backward) {
  return {std::move(name),
          [=] {
#if BENCH_TORCH
            auto m = std::make_shared<torch::nn::MultiheadAttention>(torch::nn::MultiheadAttentionOptions(256, 8));
            auto x = std::make_shared<Tensor>(torch::randn({128, 32, 256}));
#else
            auto m = std::make_shared<ember::nn::MultiheadAttention>(
                ember::nn::MultiheadAttentionOptions(256, 8).batch_first(true));
            auto x = std::make_shared<Tensor>(ember::randn({32, 128, 256}));
#endif
            return std::function<void()>([m, x, backward] {
              if (!backward) {
                lib::NoGradGuard g;
                keep(std::get<0>((*m)->forward(*x, *x, *x)));
                return;
              }
              (*m)->zero_grad();
              std::get<0>((*m)->forward(*x, *x, *x)).sum().backward();
            });
          },
          backward ? 10 : 15};
}

std::vector<Case> cases() {
  return {
      lstm("LSTM(256,256) 1 step, batch 64, forward", 1, false),
      lstm("LSTM(256,256) 1 step, batch 64, fwd+bwd", 1, true),
      lstm("LSTM(256,256) 32 steps, batch 64, forward", 32, false),
      lstm("LSTM(256,256) 32 steps, batch 64, fwd+bwd", 32, true),
      mha("MHA(256,8) (32,128,256) forward", false),
      mha("MHA(256,8) (32,128,256) fwd+bwd", true),
  };
}

}  // namespace

int main(int argc, char **argv) { return bench::main_with_cases(argc, argv, cases()); }
