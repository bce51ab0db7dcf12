// bench/data: one epoch of Fashion-MNIST train (60000 images) through ember's
// DataLoader: batch 64, shuffle, Normalize(0.2860, 0.3530). The PyTorch side is
// a Python program (bench/data_loader_torch.py, torch.utils.data.DataLoader
// with the same work per sample), so this family is built against ember only;
// bench/run.py pairs the cases.
//   --root DIR (default /usr/share/datasets/fashion-mnist, or
//   $EMBER_FASHION_MNIST)

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "harness.h"

namespace ed = ember::data;

namespace {

using bench::Case;

std::string data_root() {
  const char *env = std::getenv("EMBER_FASHION_MNIST");
  return env ? env : "/usr/share/datasets/fashion-mnist";
}

// One epoch per call. per_sample: get() per sample with the transform applied
// to each sample and default collation (what a torch Dataset does); otherwise
// the batch fast path (Normalize fused into the batch conversion).
Case epoch(std::string name, int workers, bool per_sample) {
  return {std::move(name),
          [=] {
            auto ds = std::make_shared<ed::FashionMNIST>(data_root(), true);
            if (per_sample) {
              ds->set_transform(ed::transforms::Compose({ed::transforms::Normalize({0.2860}, {0.3530})}));
            } else {
              ds->set_transform(ed::transforms::Normalize({0.2860}, {0.3530}));
            }
            auto loader = std::make_shared<ed::DataLoader>(
                ds, ed::DataLoaderOptions().batch_size(64).shuffle(true).num_workers(workers).seed(0));
            return std::function<void()>([ds, loader] {
              int64_t n = 0;
              for (ed::Example &b : *loader) n += b.data.size(0);
              if (n != ds->size()) std::fprintf(stderr, "bench_data: an epoch saw %lld samples\n", (long long)n);
            });
          },
          3};
}

}  // namespace

int main(int argc, char **argv) {
  if (!std::filesystem::exists(data_root() + "/train-images-idx3-ubyte.gz")) {
    std::fprintf(stderr,
                 "bench_data: %s has no Fashion-MNIST (scripts/setup.sh "
                 "installs dataset-fashion-mnist)\n",
                 data_root().c_str());
    return 3;
  }
  return bench::main_with_cases(argc, argv,
                                {
                                    epoch("loader epoch, 2 workers, batch fast path", 2, false),
                                    epoch("loader epoch, 2 workers, per-sample get + collate", 2, true),
                                    epoch("loader epoch, 0 workers, per-sample get + collate", 0, true),
                                });
}
