// All-reduce timing for bench/distributed.py: run under ember-run, one process per rank.
// For each size (bytes of float32), a few warm-up calls, then enough timed calls to move
// ~64 MB or at least 5 calls; rank 0 prints one line per size:
//   size_bytes <n> iters <k> seconds_per_call <t>
// --no-checks turns the fingerprint exchange off (Note [Hang-proof collectives]).

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "ember/distributed/distributed.h"
#include "ember/ember.h"

namespace dist = ember::distributed;

int main(int argc, char** argv) {
  bool checks = true;
  int64_t min_bytes = 1024, max_bytes = 64 << 20;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--no-checks")) checks = false;
    else if (!std::strcmp(argv[i], "--max-bytes") && i + 1 < argc) max_bytes = std::stoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--min-bytes") && i + 1 < argc) min_bytes = std::stoll(argv[++i]);
  }
  ember::set_num_threads(1);
  dist::init_process_group({.timeout = std::chrono::seconds(120), .check_collectives = checks});
  for (int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    ember::Tensor t = ember::ones({bytes / 4});
    for (int i = 0; i < 3; ++i) dist::all_reduce(t);
    const int iters = static_cast<int>(std::max<int64_t>(5, std::min<int64_t>(2000, (64 << 20) / bytes)));
    dist::barrier();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) dist::all_reduce(t);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (dist::get_rank() == 0) std::printf("size_bytes %lld iters %d seconds_per_call %.9f\n", static_cast<long long>(bytes), iters, s / iters);
    std::fflush(stdout);
  }
  dist::destroy_process_group();
  return 0;
}
