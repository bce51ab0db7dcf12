// bench/amp: mixed precision in ember, one mode per process; bench/amp.py runs it against
// PyTorch 1.13 (amp_torch.py).
//
//   bench_amp --what step --mode fp32|bf16 [--steps 40] [--threads 2]
//       the main job's training step (Fashion-MNIST CNN, batch 64, Adam), the forward pass
//       and loss under amp::AutocastGuard(kBFloat16) for bf16
//   bench_amp --what gemm --mode fp32|bf16 [--size 1024] [--threads 2]
//       a size^3 matrix product in that dtype
// prints `summary: ms=<median> gflops=<..> path=<where bf16 products run>`.
#include <ember/ember.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

using namespace ember;

namespace {

double median_ms(int reps, const std::function<void()>& fn) {
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string what = "step", mode = "fp32";
  int steps = 40, threads = 2;
  int64_t size = 1024;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--what") what = argv[i + 1];
    else if (k == "--mode") mode = argv[i + 1];
    else if (k == "--steps") steps = std::stoi(argv[i + 1]);
    else if (k == "--threads") threads = std::stoi(argv[i + 1]);
    else if (k == "--size") size = std::stoll(argv[i + 1]);
  }
  if ((mode != "fp32" && mode != "bf16") || (what != "step" && what != "gemm")) {
    std::fprintf(stderr, "--what step|gemm, --mode fp32|bf16\n");
    return 2;
  }
  set_num_threads(threads);
  manual_seed(0);
  const bool bf16 = mode == "bf16";
  const std::string path = amp::low_precision_gemm_path(kBFloat16);
  if (what == "gemm") {
    const DType dt = bf16 ? kBFloat16 : kFloat32;
    const Tensor a = randn({size, size}).to(dt), b = randn({size, size}).to(dt);
    for (int i = 0; i < 2; ++i) matmul(a, b);
    const double ms = median_ms(std::max(3, steps / 4), [&] { matmul(a, b); });
    std::printf("summary: ms=%.4f gflops=%.2f path=%s\n", ms, 2.0 * double(size) * double(size) * double(size) / ms / 1e6,
                path.c_str());
    return 0;
  }
  nn::Sequential model(nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)), nn::ReLU(),
                       nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)),
                       nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Flatten(), nn::Linear(3136, 128),
                       nn::ReLU(), nn::Linear(128, 10));
  optim::Adam opt(model->parameters(), optim::AdamOptions(1e-3));
  const Tensor x = randn({64, 1, 28, 28});
  const Tensor y = randint(0, 10, {64});
  auto step = [&] {
    opt.zero_grad();
    Tensor loss;
    {
      amp::AutocastGuard autocast(kBFloat16, bf16);
      loss = nn::functional::cross_entropy(model->forward(x), y);
    }
    loss.backward();
    opt.step();
  };
  for (int i = 0; i < 5; ++i) step();  // warm-up
  const double ms = median_ms(steps, step);
  std::printf("summary: ms=%.4f gflops=0 path=%s\n", ms, path.c_str());
  return 0;
}
