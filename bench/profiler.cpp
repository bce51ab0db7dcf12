// bench/profiler: the cost of ember::profiler on the main job's training step (the
// Fashion-MNIST CNN, batch 64, Adam), one mode per process; bench/profiler.py runs it
// against torch.profiler (profiler_torch.py).
//
//   bench_profiler --mode off|on|shapes [--steps 60] [--threads 2] [--guards on|off]
// prints `summary: ms=<median step> min=.. max=.. events=..`. --guards off turns every
// training guard off (docs/guards.md); bench/guards.py measures their cost this way.
#include <ember/ember.h>
#include <ember/profiler/profiler.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

using namespace ember;

int main(int argc, char** argv) {
  std::string mode = "off";
  std::string guards_mode = "on";
  int steps = 60, threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--mode") mode = argv[i + 1];
    else if (k == "--steps") steps = std::stoi(argv[i + 1]);
    else if (k == "--threads") threads = std::stoi(argv[i + 1]);
    else if (k == "--guards") guards_mode = argv[i + 1];
  }
  if (mode != "off" && mode != "on" && mode != "shapes") {
    std::fprintf(stderr, "--mode is off, on or shapes\n");
    return 2;
  }
  guards::set_all_enabled(guards_mode != "off");
  set_num_threads(threads);
  manual_seed(0);
  nn::Sequential model(nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)), nn::ReLU(),
                       nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)),
                       nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Flatten(), nn::Linear(3136, 128),
                       nn::ReLU(), nn::Linear(128, 10));
  optim::Adam opt(model->parameters(), optim::AdamOptions(1e-3));
  const Tensor x = randn({64, 1, 28, 28});
  const Tensor y = randint(0, 10, {64});
  auto step = [&] {
    opt.zero_grad();
    Tensor loss = nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    opt.step();
  };
  for (int i = 0; i < 5; ++i) step();  // warm-up
  std::unique_ptr<profiler::Profile> prof;
  if (mode != "off") {
    profiler::ProfileOptions o;
    o.record_shapes = mode == "shapes";
    prof = std::make_unique<profiler::Profile>(o);
  }
  std::vector<double> ms;
  for (int i = 0; i < steps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  size_t events = 0;
  if (prof) {
    prof->stop();
    events = prof->events().size();
  }
  std::sort(ms.begin(), ms.end());
  std::printf("summary: ms=%.4f min=%.4f max=%.4f events=%zu\n", ms[ms.size() / 2], ms.front(), ms.back(), events);
  return 0;
}
