#pragma once
// Internal: keeps the OpenMP-threaded libraries ember calls (OpenBLAS's OpenMP build,
// oneDNN) on the calling thread. Outside a parallel region they would spread a call over
// omp_get_max_threads() threads and round differently from a single-threaded call; inside
// a region they already stay on one thread. The setting is restored afterwards.

#include <omp.h>

namespace ember::kernels::cpu {

class OneOmpThread {
 public:
  OneOmpThread() : saved_(omp_in_parallel() ? 1 : omp_get_max_threads()) {
    if (saved_ > 1) omp_set_num_threads(1);
  }
  ~OneOmpThread() {
    if (saved_ > 1) omp_set_num_threads(saved_);
  }
  OneOmpThread(const OneOmpThread&) = delete;
  OneOmpThread& operator=(const OneOmpThread&) = delete;

 private:
  int saved_;
};

}  // namespace ember::kernels::cpu
