// The command line of every benchmark program (bench/harness.h), built once per
// library.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "harness.h"

#if !BENCH_TORCH
#include <ember/core/cpu_capability.h>
#endif

namespace bench {

namespace {

volatile double g_sink = 0;

const char *limit_name(Limit l) {
  switch (l) {
    case Limit::Read:
      return "read";
    case Limit::Copy:
      return "copy";
    case Limit::Gemm:
      return "gemm";
    default:
      return "-";
  }
}

std::string library_name() {
#if BENCH_TORCH
  return std::string("libtorch ") + TORCH_VERSION;
#else
  return "ember (CPU kernels: " + ember::cpu_capability_name() + ")";
#endif
}

}  // namespace

void keep(const Tensor &t) {
  if (t.defined()) g_sink = g_sink + static_cast<double>(t.numel());
}

int main_with_cases(int argc, char **argv, const std::vector<Case> &cases) {
  int threads = 2, reps = 0;
  std::string only;
  bool list = false, cpu_clock = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--list"))
      list = true;
    else if (!std::strcmp(argv[i], "--case") && i + 1 < argc)
      only = argv[++i];
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--cpu-clock"))
      cpu_clock = true;
    else {
      std::fprintf(stderr, "usage: %s --list | --case NAME [--threads N] [--reps N] [--cpu-clock]\n", argv[0]);
      return 2;
    }
  }
  if (list) {
    for (const Case &c : cases) {
      std::printf("case\t%s\t%.0f\t%.0f\t%s\n", c.name.c_str(), c.bytes, c.flops, limit_name(c.limit));
    }
    return 0;
  }
  const auto it = std::find_if(cases.begin(), cases.end(), [&](const Case &c) { return c.name == only; });
  if (it == cases.end()) {
    std::fprintf(stderr, "%s: no case named '%s' (--list shows them)\n", argv[0], only.c_str());
    return 2;
  }
  lib::set_num_threads(threads);
  lib::manual_seed(0);
  const Case &c = *it;
  const std::function<void()> work = c.setup();
  const int n = reps > 0 ? reps : c.reps;
  using clock = std::chrono::steady_clock;
  // Warm-up: at least two samples and at least 0.2 s, so that caches,
  // allocators and thread pools reach their steady state before the timed
  // samples.
  const auto warm_until = clock::now() + std::chrono::milliseconds(200);
  for (int w = 0; w < 2 || clock::now() < warm_until; ++w) {
    for (int i = 0; i < c.inner; ++i) work();
  }
  // --cpu-clock times the process's CPU time instead of the wall clock: with --threads 1
  // it stays meaningful on a machine busy with other work (development comparisons only;
  // bench/run.py uses the wall clock).
  auto cpu_ms = [] {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
  };
  std::vector<double> ms;
  for (int r = 0; r < n; ++r) {
    const auto a = clock::now();
    const double ca = cpu_clock ? cpu_ms() : 0.0;
    for (int i = 0; i < c.inner; ++i) work();
    ms.push_back(cpu_clock ? (cpu_ms() - ca) / c.inner
                           : std::chrono::duration<double, std::milli>(clock::now() - a).count() / c.inner);
  }
  std::sort(ms.begin(), ms.end());
  std::printf("library: %s, %d threads\n", library_name().c_str(), threads);
  std::printf("summary: ms=%.6g min=%.6g max=%.6g reps=%d inner=%d\n", ms[ms.size() / 2], ms.front(), ms.back(), n,
              c.inner);
  return 0;
}

}  // namespace bench
