// The command line of every benchmark program (bench/harness.h), built once per
// library.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <vector>

#include "harness.h"
#include "read_kernel.h"

#include <omp.h>

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

// Note [Bandwidth beside the case]: the VM this runs on gives a process anywhere from 17 to
// 56 GB/s of read bandwidth, changing within seconds, so a limit measured once at the start
// of `make bench` (bench_stream) says little about the bandwidth a case had minutes later. A
// memory-bound case therefore also times the bandwidth kernel itself, in its own process,
// right before and right after its samples: bench_stream's read kernel (read_kernel.h) over a
// buffer of the case's bytes, or memcpy of half of them into another buffer for a copy case,
// split in `threads` parts on OpenMP threads: both libraries run their own loops on libgomp's
// pool, so the kernel reuses the library's threads (a second pool would compete with the
// library's spinning workers on 2 cores). It prints the median and the best of those samples
// as bw_gbs and bw_best_gbs; bench/run.py divides each round's rate by its own bw_gbs.

// Runs fn(part) for part < parts, one part per OpenMP thread.
template <typename F>
void run_parts(int parts, F fn) {
#pragma omp parallel for num_threads(parts) schedule(static)
  for (int k = 0; k < parts; ++k) fn(k);
}

// The bandwidth samples of a case moving `bytes` (Note [Bandwidth beside the case]).
class BesideBandwidth {
 public:
  BesideBandwidth(Limit limit, double bytes, int threads) : limit_(limit), threads_(threads) {
    const size_t floats = static_cast<size_t>(bytes / sizeof(float) / (limit == Limit::Copy ? 2 : 1));
    // On 2 MiB pages (Note [Limits on huge pages], read_kernel.h); touched, no page faults when timed.
    a_ = std::make_unique<bench::HugeBuffer>(floats, 1.0f);
    if (limit == Limit::Copy) b_ = std::make_unique<bench::HugeBuffer>(floats, 2.0f);
  }
  void sample(int n) {
    for (int r = 0; r < n; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const size_t total = a_->size();
      std::vector<float> partial(static_cast<size_t>(threads_));
      run_parts(threads_, [&](int k) {
        const size_t b = total * k / threads_, e = total * (k + 1) / threads_;
        if (limit_ == Limit::Copy) {
          std::memcpy(b_->data() + b, a_->data() + b, (e - b) * sizeof(float));
        } else {
          partial[k] = read_sum(a_->data() + b, e - b);
        }
      });
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      for (float p : partial) g_sink = g_sink + p;
      // STREAM's counting: a copy moves each byte twice (read + write).
      gbs_.push_back(static_cast<double>(total * sizeof(float)) * (limit_ == Limit::Copy ? 2 : 1) / s / 1e9);
    }
  }
  double median() {
    std::sort(gbs_.begin(), gbs_.end());
    return gbs_[gbs_.size() / 2];
  }
  double best() const { return *std::max_element(gbs_.begin(), gbs_.end()); }

 private:
  Limit limit_;
  int threads_;
  std::unique_ptr<bench::HugeBuffer> a_, b_;
  std::vector<double> gbs_;
};

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
  std::unique_ptr<BesideBandwidth> beside;
  if ((c.limit == Limit::Read || c.limit == Limit::Copy) && c.bytes > 0) {
    beside = std::make_unique<BesideBandwidth>(c.limit, c.bytes, threads);
    beside->sample(5);
    for (int i = 0; i < c.inner; ++i) work();  // the case's data back in the caches it had
  }
  std::vector<double> ms;
  for (int r = 0; r < n; ++r) {
    const auto a = clock::now();
    const double ca = cpu_clock ? cpu_ms() : 0.0;
    for (int i = 0; i < c.inner; ++i) work();
    ms.push_back(cpu_clock ? (cpu_ms() - ca) / c.inner
                           : std::chrono::duration<double, std::milli>(clock::now() - a).count() / c.inner);
  }
  std::sort(ms.begin(), ms.end());
  std::string bw;
  if (beside) {
    beside->sample(5);
    char buf[96];
    std::snprintf(buf, sizeof buf, " bw_gbs=%.4g bw_best_gbs=%.4g", beside->median(), beside->best());
    bw = buf;
  }
  std::printf("library: %s, %d threads\n", library_name().c_str(), threads);
  std::printf("summary: ms=%.6g min=%.6g max=%.6g reps=%d inner=%d%s\n", ms[ms.size() / 2], ms.front(), ms.back(), n,
              c.inner, bw.c_str());
  return 0;
}

}  // namespace bench
