#include "ember/core/parallel.h"

#include <omp.h>

#include <atomic>
#include <exception>
#include <mutex>

#include "ember/core/check.h"

// From OpenBLAS (linked privately); declared here to keep cblas.h out of core.
extern "C" void openblas_set_num_threads(int num_threads);

namespace ember {

namespace {
std::atomic<int> g_num_threads{0};  // 0: not yet set, use the OpenMP default
[[gnu::tls_model("initial-exec")]] thread_local bool t_in_parallel = false;

int default_threads() {
  int n = omp_get_max_threads();
  return n > 0 ? n : 1;
}
}  // namespace

void set_num_threads(int n) {
  EMBER_CHECK(n >= 1, "[set_num_threads] the number of threads must be positive, got ", n);
  g_num_threads.store(n, std::memory_order_relaxed);
  openblas_set_num_threads(n);
}

int get_num_threads() {
  int n = g_num_threads.load(std::memory_order_relaxed);
  return n > 0 ? n : default_threads();
}

bool in_parallel_region() { return t_in_parallel; }

void parallel_for(int64_t begin, int64_t end, int64_t grain_size,
                  FunctionRef<void(int64_t, int64_t)> fn) {
  if (begin >= end) return;
  if (grain_size < 1) grain_size = 1;
  const int64_t range = end - begin;
  const int64_t chunks = (range + grain_size - 1) / grain_size;
  const int threads = get_num_threads();
  if (chunks == 1 || threads == 1 || t_in_parallel) {
    // Same chunk boundaries as the parallel path, so results match bit for bit.
    for (int64_t c = 0; c < chunks; ++c) {
      int64_t b = begin + c * grain_size;
      fn(b, b + grain_size < end ? b + grain_size : end);
    }
    return;
  }
  std::exception_ptr error;
  std::mutex error_mutex;
  const int team = static_cast<int>(chunks < threads ? chunks : threads);
#pragma omp parallel for num_threads(team) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    t_in_parallel = true;
    try {
      int64_t b = begin + c * grain_size;
      fn(b, b + grain_size < end ? b + grain_size : end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
    t_in_parallel = false;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace ember
