// bench/rnn: LSTM and MultiheadAttention, ember vs libtorch 1.13 on the same inputs and
// weights, in one process, both with the same number of threads (2 by default,
// --threads N). Forward cases run without autograd; forward+backward cases back-propagate
// a sum and clear the parameter gradients each round. Ratio = ember / torch.

#include <torch/torch.h>

#include <ember/ember.h>

#include "bench_util.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

using bench::median_ms;
using bench::to_torch;


void copy_params(const ember::nn::Module& e, torch::nn::Module& t) {
  torch::NoGradGuard ng;
  auto ep = e.named_parameters();
  for (auto& item : t.named_parameters()) item.value().copy_(to_torch(ep[item.key()]));
}



}  // namespace

int main(int argc, char** argv) {
  const bench::Options options = bench::parse_options(argc, argv);

  ember::nn::LSTM lstm(256, 256);
  torch::nn::LSTM tlstm(256, 256);
  copy_params(*lstm, *tlstm);
  ember::Tensor step = ember::randn({1, 64, 256}), seq = ember::randn({32, 64, 256});
  torch::Tensor tstep = to_torch(step), tseq = to_torch(seq);

  ember::nn::MultiheadAttention mha(ember::nn::MultiheadAttentionOptions(256, 8).batch_first(true));
  torch::nn::MultiheadAttention tmha(torch::nn::MultiheadAttentionOptions(256, 8));
  copy_params(*mha, *tmha);
  ember::Tensor x = ember::randn({32, 128, 256});
  // torch's C++ module is sequence-first: it gets a [L, N, E] view of the same data.
  torch::Tensor tx = to_torch(x).transpose(0, 1);

  auto lstm_fwd = [&](const ember::Tensor& in) {
    ember::NoGradGuard ng;
    auto r = lstm->forward(in);
  };
  auto tlstm_fwd = [&](const torch::Tensor& in) {
    torch::NoGradGuard ng;
    auto r = tlstm->forward(in);
  };
  auto lstm_bwd = [&](const ember::Tensor& in) {
    lstm->zero_grad();
    auto [out, st] = lstm->forward(in);
    (out.sum() + std::get<1>(st).sum()).backward();
  };
  auto tlstm_bwd = [&](const torch::Tensor& in) {
    tlstm->zero_grad();
    auto [out, st] = tlstm->forward(in);
    (out.sum() + std::get<1>(st).sum()).backward();
  };

  std::vector<bench::Case> cases = {
      {"LSTM(256,256) 1 step, batch 64, forward", [&] { lstm_fwd(step); }, [&] { tlstm_fwd(tstep); }, 200},
      {"LSTM(256,256) 1 step, batch 64, fwd+bwd", [&] { lstm_bwd(step); }, [&] { tlstm_bwd(tstep); }, 200},
      {"LSTM(256,256) 32 steps, batch 64, forward", [&] { lstm_fwd(seq); }, [&] { tlstm_fwd(tseq); }, 30},
      {"LSTM(256,256) 32 steps, batch 64, fwd+bwd", [&] { lstm_bwd(seq); }, [&] { tlstm_bwd(tseq); }, 20},
      {"MHA(256,8) (32,128,256) forward",
       [&] {
         ember::NoGradGuard ng;
         auto r = mha(x, x, x);
       },
       [&] {
         torch::NoGradGuard ng;
         auto r = tmha(tx, tx, tx);
       },
       15},
      {"MHA(256,8) (32,128,256) fwd+bwd",
       [&] {
         mha->zero_grad();
         auto [o, w] = mha(x, x, x);
         o.sum().backward();
       },
       [&] {
         tmha->zero_grad();
         auto [o, w] = tmha(tx, tx, tx);
         o.transpose(0, 1).sum().backward();
       },
       10},
  };

  bench::run_cases("bench/rnn", cases, options, 3, 3);
  return 0;
}
