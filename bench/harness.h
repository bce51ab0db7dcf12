#pragma once
// The benchmark harness's C++ side. Each benchmark family (bench/ops.cpp,
// conv.cpp, ...) is one source file built twice: once against ember
// (bench_<family>_ember) and once against libtorch 1.13 (bench_<family>_torch,
// compiled with BENCH_TORCH=1). The source names the library `lib`, so the same
// lines call ember:: or torch::. bench/run.py runs each case of each program in
// a process of its own, ember and torch interleaved over several rounds (Note
// [Each library in its own process] in bench/README.md).
//
//   bench_ops_ember --list                     one line per case: name, bytes,
//   flops, limit bench_ops_ember --case NAME [--threads N]  runs one case,
//   prints
//                                              `summary: ms=<median per call>
//                                              min=.. max=.. reps=..`

#if BENCH_TORCH
#include <torch/torch.h>
namespace lib = torch;
#else
#include <ember/ember.h>
namespace lib = ember;
#endif

#include <functional>
#include <string>
#include <vector>

namespace bench {

#if BENCH_TORCH
using Tensor = torch::Tensor;
inline constexpr bool kTorch = true;
#else
using Tensor = ember::Tensor;
inline constexpr bool kTorch = false;
#endif

// What bounds a case, for the "% of limit" column: memory bandwidth (the
// measured read-only or copy rate of this machine) or the GEMM peak (OpenBLAS
// sgemm on this machine).
enum class Limit { None, Read, Copy, Gemm };

// One benchmark case. `setup` builds the inputs (untimed) and returns the work
// to time.
struct Case {
  std::string name;
  std::function<std::function<void()>()> setup;
  int reps = 15;     // timed samples
  int inner = 1;     // calls per sample (for microsecond cases)
  double bytes = 0;  // memory traffic of one call (reads + writes), for GB/s
  double flops = 0;  // floating-point operations of one call, for GFLOP/s
  Limit limit = Limit::None;
};

// Parses the command line (--list, --case NAME, --threads N, --reps N), sets
// the thread count and the seed, runs the case and prints its summary line.
// Returns the exit code.
int main_with_cases(int argc, char **argv, const std::vector<Case> &cases);

// Drops a tensor's gradient (libtorch and ember spell it differently).
inline void clear_grad(Tensor &t) {
#if BENCH_TORCH
  t.mutable_grad().reset();
#else
  t.mutable_grad() = ember::Tensor();
#endif
}

// Keeps a value alive so that the compiler cannot drop the work that produced
// it.
void keep(const Tensor &t);

}  // namespace bench
