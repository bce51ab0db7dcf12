// bench/ops: ember vs libtorch 1.13 on the same inputs, in one process, both with the
// same number of threads (2 by default, --threads N). Prints one line per case with
// both medians and the ratio ember/torch (below 1.0 means ember is faster).

#include <torch/torch.h>

#include <ember/ember.h>

#include "bench_util.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

using bench::median_ms;
using bench::to_torch;



struct Case {
  std::string name;
  std::function<void()> ember_fn, torch_fn;
  int reps;
  int inner = 1;  // calls per timed run (for microsecond cases)
};

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
  }
  ember::set_num_threads(threads);
  torch::set_num_threads(threads);
  torch::NoGradGuard no_grad;
  ember::manual_seed(0);

  ember::Tensor tiny_a = ember::randn({10}), tiny_b = ember::randn({10});
  torch::Tensor ttiny_a = to_torch(tiny_a), ttiny_b = to_torch(tiny_b);
  const int64_t big = 16 * 1024 * 1024;
  ember::Tensor a = ember::randn({big}), b = ember::randn({big});
  torch::Tensor ta = to_torch(a), tb = to_torch(b);
  ember::Tensor rows = ember::randn({4096, 4096});
  torch::Tensor trows = to_torch(rows);
  std::vector<std::pair<ember::Tensor, torch::Tensor>> mats;
  for (int n : {256, 1024, 2048}) {
    ember::Tensor m = ember::randn({n, n});
    mats.emplace_back(m, to_torch(m));
  }
  ember::Tensor b1 = ember::randn({64, 128, 128}), b2 = ember::randn({64, 128, 128});
  torch::Tensor tb1 = to_torch(b1), tb2 = to_torch(b2);
  ember::Tensor half1 = ember::randn({500000, 16}), half2 = ember::randn({500000, 16});
  torch::Tensor thalf1 = to_torch(half1), thalf2 = to_torch(half2);
  ember::Tensor table = ember::randn({1000000, 16});
  ember::Tensor idx = ember::randperm(1000000);
  torch::Tensor ttable = to_torch(table), tidx = to_torch(idx);

  volatile float sink = 0;
  std::vector<Case> cases = {
      {"add 10 elements (latency)", [&] { sink = sink + (tiny_a + tiny_b).data_ptr<float>()[0]; },
       [&] { sink = sink + (ttiny_a + ttiny_b).data_ptr<float>()[0]; }, 30, 2000},
      {"add 16M", [&] { ember::Tensor r = a + b; }, [&] { torch::Tensor r = ta + tb; }, 15},
      {"mul 16M", [&] { ember::Tensor r = a * b; }, [&] { torch::Tensor r = ta * tb; }, 15},
      {"exp 16M", [&] { ember::Tensor r = a.exp(); }, [&] { torch::Tensor r = ta.exp(); }, 15},
      {"tanh 16M", [&] { ember::Tensor r = a.tanh(); }, [&] { torch::Tensor r = ta.tanh(); }, 15},
      // In-place: no output allocation, so these time the kernels alone.
      {"add_ 16M (in place)", [&] { a.add_(b); }, [&] { ta.add_(tb); }, 15},
      {"clamp_ 16M (in place)", [&] { a.clamp_(-10, 10); }, [&] { ta.clamp_(-10, 10); }, 15},
      {"exp_ 16M (in place)", [&] { a.clamp_(-10, 10).exp_(); }, [&] { ta.clamp_(-10, 10).exp_(); }, 15},
      {"sum 16M", [&] { sink = sink + a.sum().item<float>(); }, [&] { sink = sink + ta.sum().item<float>(); }, 15},
      {"softmax rows 4096x4096", [&] { ember::Tensor r = rows.softmax(1); },
       [&] { torch::Tensor r = trows.softmax(1); }, 10},
      {"matmul 256", [&] { ember::Tensor r = mats[0].first.matmul(mats[0].first); },
       [&] { torch::Tensor r = mats[0].second.matmul(mats[0].second); }, 30},
      {"matmul 1024", [&] { ember::Tensor r = mats[1].first.matmul(mats[1].first); },
       [&] { torch::Tensor r = mats[1].second.matmul(mats[1].second); }, 10},
      {"matmul 2048", [&] { ember::Tensor r = mats[2].first.matmul(mats[2].first); },
       [&] { torch::Tensor r = mats[2].second.matmul(mats[2].second); }, 5},
      {"bmm 64x(128x128)", [&] { ember::Tensor r = b1.bmm(b2); }, [&] { torch::Tensor r = tb1.bmm(tb2); }, 15},
      {"cat 2x(500k,16) -> 1M rows", [&] { ember::Tensor r = ember::cat({half1, half2}); },
       [&] { torch::Tensor r = torch::cat({thalf1, thalf2}); }, 15},
      {"index_select 1M rows of 16", [&] { ember::Tensor r = table.index_select(0, idx); },
       [&] { torch::Tensor r = ttable.index_select(0, tidx); }, 15},
  };

  std::printf("bench/ops: ember vs libtorch %s, %d threads, median of N runs\n", TORCH_VERSION, threads);
  std::printf("%-30s %12s %12s %8s\n", "case", "ember ms", "torch ms", "ratio");
  int slower = 0;
  for (const auto& c : cases) {
    if (!only.empty() && c.name.find(only) == std::string::npos) continue;
    auto run_e = [&] { for (int i = 0; i < c.inner; ++i) c.ember_fn(); };
    auto run_t = [&] { for (int i = 0; i < c.inner; ++i) c.torch_fn(); };
    // Interleave the two libraries so machine noise hits both alike.
    double e1 = median_ms(run_e, c.reps, 2), t1 = median_ms(run_t, c.reps, 2);
    double e2 = median_ms(run_e, c.reps, 0), t2 = median_ms(run_t, c.reps, 0);
    double e = std::min(e1, e2) / c.inner, t = std::min(t1, t2) / c.inner;
    const char* unit = c.inner > 1 ? " (per call)" : "";
    std::printf("%-30s %12.4f %12.4f %8.2f%s\n", c.name.c_str(), e, t, e / t, unit);
    if (e > t) ++slower;
  }
  std::printf("cases where ember is slower than torch: %d\n", slower);
  return 0;
}
