// bench/stream: this machine's limits, for the harness's "% of limit" column
// (bench/run.py): read and copy bandwidth of main memory (STREAM-like kernels
// on 256 MiB buffers, split over N threads) and the single-precision GEMM peak
// (sgemm 2048, N threads) of the two BLAS ember calls: OpenBLAS and oneDNN, whose sgemm
// runs ember's float32 products (Note [oneDNN sgemm]). gemm_gflops is the higher one.
//
//   bench_stream [--threads N]   prints `summary: read_gbs=.. copy_gbs=..
//   write_gbs=.. read16_gbs=.. copy16_gbs=.. read64_gbs=.. copy64_gbs=.. gemm_gflops=..
//   openblas_gflops=.. onednn_gflops=..`
//
// Note [Limits at the case's size]: read16/copy16 and read64/copy64 are the same kernels on
// the first 16 MiB and 64 MiB of the buffers. The benchmark cases stream 16-64 MiB arrays;
// with a 32 MB L3 part of such an array is still cached on the next pass, so a case reads
// faster than main memory allows (both libraries showed 150% of the 256 MiB read rate), and
// the harness compares each case with the kernel whose buffer is nearest its own size.
//
// Bandwidth counts bytes as STREAM does: a copy of B bytes moves 2B (read +
// write), ignoring the write-allocate reads that the hardware adds; the
// benchmarks count their bytes alike.

#include <cblas.h>
#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "read_kernel.h"

namespace {

constexpr size_t kFloats = size_t(64) << 20;  // 256 MiB of float32

volatile float g_sink = 0;

// Runs fn(thread, begin, end) over [0, n) split into `threads` parts, one
// std::thread each.
void split(int threads, size_t n, const std::function<void(int, size_t, size_t)> &fn) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    const size_t b = n * t / threads, e = n * (t + 1) / threads;
    pool.emplace_back(fn, t, b, e);
  }
  for (auto &th : pool) th.join();
}

// Best time of `reps` runs, in seconds (STREAM reports the best).
double best_seconds(int reps, const std::function<void()> &fn) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto a = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  return best;
}

}  // namespace

int main(int argc, char **argv) {
  int threads = 2;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
  }
  // On 2 MiB pages (Note [Limits on huge pages], read_kernel.h); touched: no page faults when timed.
  const bench::HugeBuffer a(kFloats, 1.0f), b(kFloats, 2.0f);
  const double bytes = kFloats * sizeof(float);
  std::vector<float> partial(static_cast<size_t>(threads));

  // Read and copy over the first `floats` floats of a and b.
  auto read_seconds = [&](size_t floats) {
    return best_seconds(7, [&] {
      split(threads, floats, [&](int t, size_t s, size_t e) { partial[t] = bench::read_sum(a.data() + s, e - s); });
      for (float p : partial) g_sink = g_sink + p;
    });
  };
  auto copy_seconds = [&](size_t floats) {
    return best_seconds(7, [&] {
      split(threads, floats, [&](int, size_t s, size_t e) { std::memcpy(b.data() + s, a.data() + s, (e - s) * 4); });
    });
  };
  const double read_s = read_seconds(kFloats), copy_s = copy_seconds(kFloats);
  // Note [Limits at the case's size].
  const size_t f16 = size_t(4) << 20, f64 = size_t(16) << 20;
  const double read16_s = read_seconds(f16), copy16_s = copy_seconds(f16);
  const double read64_s = read_seconds(f64), copy64_s = copy_seconds(f64);
  const double write_s = best_seconds(7, [&] {
    split(threads, kFloats, [&](int, size_t s, size_t e) { std::fill(b.data() + s, b.data() + e, 3.0f); });
  });

  openblas_set_num_threads(threads);
  const int n = 2048;
  std::vector<float> x(size_t(n) * n, 0.5f), y(size_t(n) * n, 0.25f), z(size_t(n) * n);
  auto gemm = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, x.data(), n, y.data(), n, 0.0f, z.data(), n);
  };
  gemm();
  const double openblas_s = best_seconds(5, gemm);
  omp_set_num_threads(threads);  // oneDNN's threads are OpenMP's
  auto dnnl_gemm = [&] {
    dnnl_sgemm('N', 'N', n, n, n, 1.0f, x.data(), n, y.data(), n, 0.0f, z.data(), n);
  };
  dnnl_gemm();
  const double onednn_s = best_seconds(5, dnnl_gemm);
  const double flop = 2.0 * n * n * n;
  std::printf("library: plain C++ (bandwidth), OpenBLAS and oneDNN sgemm, %d threads\n", threads);
  const double b16 = f16 * sizeof(float), b64 = f64 * sizeof(float);
  std::printf("summary: read_gbs=%.2f copy_gbs=%.2f write_gbs=%.2f read16_gbs=%.2f copy16_gbs=%.2f read64_gbs=%.2f "
              "copy64_gbs=%.2f gemm_gflops=%.1f openblas_gflops=%.1f onednn_gflops=%.1f\n",
              bytes / read_s / 1e9, 2 * bytes / copy_s / 1e9, bytes / write_s / 1e9, b16 / read16_s / 1e9,
              2 * b16 / copy16_s / 1e9, b64 / read64_s / 1e9, 2 * b64 / copy64_s / 1e9,
              flop / std::min(openblas_s, onednn_s) / 1e9, flop / openblas_s / 1e9, flop / onednn_s / 1e9);
  return 0;
}
