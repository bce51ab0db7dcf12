// bench/optim: one optimizer step over the main job's parameters (421k floats
// in 8 tensors) with random gradients (bench/harness.h; run by bench/run.py).

#include <cstdint>
#include <memory>

#include "harness.h"

namespace {

using bench::Case;
using bench::Limit;
using bench::Tensor;

std::vector<Tensor> main_job_parameters() {
  const std::vector<std::vector<int64_t>> shapes = {{32, 1, 3, 3}, {32},  {64, 32, 3, 3}, {64},
                                                    {128, 3136},   {128}, {10, 128},      {10}};
  std::vector<Tensor> ps;
  for (const auto &s : shapes) {
    Tensor p = lib::randn(s).requires_grad_();
    p.mutable_grad() = lib::randn(s);
    ps.push_back(p);
  }
  return ps;
}

constexpr double kParams = 421642;

// Adam/AdamW read the parameter, its gradient and two moments and write three of them
// (12 MB in all): that stays in the last-level cache between steps, so no memory limit
// applies and no "% of limit" is shown.
template <typename Optimizer, typename Options>
Case optimizer(std::string name, Options options, double tensors_touched) {
  return {std::move(name),
          [options] {
            auto opt = std::make_shared<Optimizer>(main_job_parameters(), options);
            return std::function<void()>([opt] { opt->step(); });
          },
          50,
          1,
          kParams * 4 * tensors_touched,
          0,
          Limit::None};
}

std::vector<Case> cases() {
  return {
      optimizer<lib::optim::Adam>("Adam step", lib::optim::AdamOptions(1e-3), 7),
      optimizer<lib::optim::AdamW>("AdamW step", lib::optim::AdamWOptions(1e-3), 7),
      optimizer<lib::optim::SGD>("SGD momentum 0.9 step", lib::optim::SGDOptions(1e-3).momentum(0.9), 5),
  };
}

}  // namespace

int main(int argc, char **argv) { return bench::main_with_cases(argc, argv, cases()); }
