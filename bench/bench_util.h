#pragma once
// Helpers shared by the benchmarks that run ember and libtorch side by side: copying an
// ember tensor into libtorch, and the median wall time of repeated runs.

#include <torch/torch.h>

#include <ember/ember.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
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

}  // namespace bench
