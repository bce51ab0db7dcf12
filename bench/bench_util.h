#pragma once
// Helpers shared by the benchmarks that run ember and libtorch side by side: copying an
// ember tensor into libtorch, and the median wall time of repeated runs.

#include <torch/torch.h>

#include <ember/ember.h>
#include <ember/core/cpu_capability.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace bench {

// A contiguous libtorch copy of t (float32, float64 and int64 keep their dtype).
inline torch::Tensor to_torch(const ember::Tensor& t) {
  ember::Tensor c = t.contiguous();
  torch::Dtype dt = c.dtype() == ember::kInt64 ? torch::kInt64 : c.dtype() == ember::kFloat64 ? torch::kFloat64
                                                                                              : torch::kFloat32;
  if (c.dtype() != ember::kInt64 && c.dtype() != ember::kFloat64) c = c.to(ember::kFloat32);
  torch::Tensor out = torch::empty(c.sizes().vec(), torch::TensorOptions().dtype(dt));
  if (c.nbytes()) std::memcpy(out.data_ptr(), c.data_ptr(), c.nbytes());
  return out;
}

// Median wall time in milliseconds of `reps` runs of fn after `warmup` untimed runs.
inline double median_ms(const std::function<void()>& fn, int reps, int warmup) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto a = std::chrono::steady_clock::now();
    fn();
    auto b = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double, std::milli>(b - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// One benchmark case: the same work in both libraries, timed `reps` times each.
struct Case {
  std::string name;
  std::function<void()> ember_fn, torch_fn;
  int reps;
};

// Command-line options common to the side-by-side benchmarks.
struct Options {
  int threads = 2;
  std::string only;  // run only the cases whose name contains this
};

// Reads --threads N and --only SUBSTRING, sets both libraries' thread counts and seeds
// ember's generator.
inline Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) o.threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) o.only = argv[++i];
  }
  ember::set_num_threads(o.threads);
  torch::set_num_threads(o.threads);
  ember::manual_seed(0);
  return o;
}

// Runs the cases, interleaving the two libraries (two rounds each, the better one kept) so
// that machine noise hits both alike, and prints one table row per case with the ratio
// ember / torch. Returns the number of cases where ember is slower.
inline int run_cases(const char* title, const std::vector<Case>& cases, const Options& o, int warmup = 2,
                     int decimals = 3) {
  size_t width = 4;
  for (const Case& c : cases) width = std::max(width, c.name.size());
  const int w = static_cast<int>(width);
  std::printf("%s: ember (CPU kernels: %s) vs libtorch %s, %d threads, median of N runs\n", title,
              ember::cpu_capability_name().c_str(), TORCH_VERSION, o.threads);
  std::printf("%-*s %10s %10s %7s\n", w, "case", "ember ms", "torch ms", "ratio");
  int slower = 0;
  for (const Case& c : cases) {
    if (!o.only.empty() && c.name.find(o.only) == std::string::npos) continue;
    const double e1 = median_ms(c.ember_fn, c.reps, warmup), t1 = median_ms(c.torch_fn, c.reps, warmup);
    const double e2 = median_ms(c.ember_fn, c.reps, 0), t2 = median_ms(c.torch_fn, c.reps, 0);
    const double e = std::min(e1, e2), t = std::min(t1, t2);
    std::printf("%-*s %10.*f %10.*f %7.2f\n", w, c.name.c_str(), decimals, e, decimals, t, e / t);
    if (e > t) ++slower;
  }
  std::printf("cases where ember is slower than torch: %d\n", slower);
  return slower;
}

}  // namespace bench
