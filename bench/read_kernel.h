#pragma once
// The read-bandwidth kernel shared by bench_stream (the run-wide limits) and the harness's
// bandwidth beside each case (Note [Bandwidth beside the case] in harness_main.cpp), so both
// measure the same loop.

#include <cstddef>

namespace bench {

// The sum of p[0, n), in 16 independent lanes (the loads, not the adds, bound it).
inline float read_sum(const float *p, size_t n) {
  float acc[16] = {};
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int k = 0; k < 16; ++k) acc[k] += p[i + k];
  }
  for (; i < n; ++i) acc[0] += p[i];
  float s = 0;
  for (float a : acc) s += a;
  return s;
}

}  // namespace bench
