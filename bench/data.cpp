// bench/data: one epoch of Fashion-MNIST train (60000 images) through ember's DataLoader
// vs torch.utils.data.DataLoader: batch 64, shuffle, 2 workers, per-sample uint8 -> float
// / 255 and Normalize(0.2860, 0.3530). The torch side runs as a Python process
// (bench/data_loader_torch.py) whose samples/s this program reads. Ratio: epoch time
// ember / torch (below 1.0 means ember is faster).
//   --root DIR (default /usr/share/datasets/fashion-mnist)  --workers N (default 2)
//   --script PATH (default: bench/data_loader_torch.py, else the one in this source folder)

#include <ember/core/cpu_capability.h>
#include <ember/ember.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace ed = ember::data;

namespace {

double seconds(const std::function<void()>& fn) {
  auto a = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
}

// Median epoch time over `reps` epochs.
double epoch_seconds(const std::shared_ptr<ed::Dataset>& ds, int workers, int reps) {
  ed::DataLoader loader(ds, ed::DataLoaderOptions().batch_size(64).shuffle(true).num_workers(workers).seed(0));
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    int64_t n = 0;
    t.push_back(seconds([&] {
      for (ed::Example& b : loader) n += b.data.size(0);
    }));
    if (n != ds->size()) std::fprintf(stderr, "bench_data: epoch saw %lld samples\n", static_cast<long long>(n));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string root = "/usr/share/datasets/fashion-mnist";
  // Run from the repository root (make bench) or anywhere: fall back to the source folder.
  std::string script = "bench/data_loader_torch.py";
  if (!std::filesystem::exists(script)) script = std::string(EMBER_BENCH_DIR) + "/data_loader_torch.py";
  int workers = 2;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--root") && i + 1 < argc) root = argv[++i];
    else if (!std::strcmp(argv[i], "--workers") && i + 1 < argc) workers = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--script") && i + 1 < argc) script = argv[++i];
  }
  if (!std::filesystem::exists(root + "/train-images-idx3-ubyte.gz")) {
    std::printf("bench_data: %s has no Fashion-MNIST (apt-get install dataset-fashion-mnist); skipped\n", root.c_str());
    return 0;
  }
  ember::set_num_threads(1);  // the loader's parallelism is its workers

  std::shared_ptr<ed::FashionMNIST> ds;
  const double load_s = seconds([&] { ds = std::make_shared<ed::FashionMNIST>(root, true); });
  const double n = static_cast<double>(ds->size());

  // Fast path: Normalize fused into the batch conversion (MNIST::get_batch).
  ds->set_transform(ed::transforms::Normalize({0.2860}, {0.3530}));
  const double fast_s = epoch_seconds(ds, workers, 5);
  // General path: get() per sample, the transform on each sample, default_collate copies.
  ds->set_transform(ed::transforms::Compose({ed::transforms::Normalize({0.2860}, {0.3530})}));
  const double sample_s = epoch_seconds(ds, workers, 3);
  const double sample0_s = epoch_seconds(ds, 0, 3);

  double torch_rate = 0, torch_load = 0;
  const std::string cmd = "/usr/bin/python3 " + script + " " + root + " " + std::to_string(workers) + " 2>&1";
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, p)) {
      std::sscanf(line, "samples_per_s %lf", &torch_rate);
      std::sscanf(line, "load_s %lf", &torch_load);
    }
    pclose(p);
  }

  std::printf("bench_data: Fashion-MNIST train, %d samples, batch 64, shuffle, Normalize (CPU kernels: %s)\n",
              static_cast<int>(n), ember::cpu_capability_name().c_str());
  std::printf("| case | ember samples/s | torch samples/s | epoch ember/torch |\n| --- | ---: | ---: | ---: |\n");
  auto row = [&](const char* name, double s) {
    if (torch_rate > 0) {
      std::printf("| %s | %.0f | %.0f | %.3f |\n", name, n / s, torch_rate, s / (n / torch_rate));
    } else {
      std::printf("| %s | %.0f | (torch run failed) | - |\n", name, n / s);
    }
  };
  const std::string w = std::to_string(workers) + " workers";
  row((w + ", batch fast path").c_str(), fast_s);
  row((w + ", per-sample get + collate").c_str(), sample_s);
  row("0 workers, per-sample get + collate", sample0_s);
  std::printf("decode both .gz files: ember %.3f s, torch (gzip + numpy) %.3f s\n", load_s, torch_load);
  return 0;
}
