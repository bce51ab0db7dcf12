// Sharded data-parallel training of the Fashion-MNIST MLP (docs/distributed.md): DDP with
// ZeroRedundancyOptimizer (ZeRO-1) or FullyShardedDataParallel (ZeRO-3), a sharded
// checkpoint after every epoch, and --resume from it with any number of ranks.
//
//   build/tools/ember-run --standalone --nproc-per-node 2 build/examples/sharded_training --mode fsdp --epochs 1
//   build/tools/ember-run --standalone --nproc-per-node 3 build/examples/sharded_training --mode fsdp --epochs 2
//   --resume
//   build/tools/ember-run --standalone --nproc-per-node 2 build/examples/sharded_training --mode fsdp --epochs 1
//   --bf16 --prefetch --accumulate 2
//
// Flags: --mode zero|fsdp, --epochs N, --limit N (training images), --batch-size B (per
// rank), --lr, --out DIR, --resume, --min-accuracy A (exit 3 below it). FSDP only: --bf16
// (MixedPrecision: bf16 parameters, reduction and buffers; float32 shards and Adam),
// --prefetch (BACKWARD_PRE and forward_prefetch), --accumulate K (each batch as K
// micro-batches, all but the last under no_sync).

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "ember/distributed/ddp.h"
#include "ember/distributed/distributed.h"
#include "ember/distributed/fsdp.h"
#include "ember/distributed/sharded_checkpoint.h"
#include "ember/distributed/zero_redundancy_optimizer.h"
#include "ember/ember.h"

namespace dist = ember::distributed;
namespace data = ember::data;
namespace nn = ember::nn;
namespace optim = ember::optim;

int main(int argc, char** argv) {
  std::string mode = "fsdp", out = "sharded_training_out", data_dir = "/usr/share/datasets/fashion-mnist";
  int64_t epochs = 1, limit = 8000, batch_size = 64;
  double lr = 1e-3, min_accuracy = 0;
  bool resume = false, bf16 = false, prefetch = false;
  int64_t accumulate = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--mode")
      mode = next();
    else if (a == "--epochs")
      epochs = std::stoll(next());
    else if (a == "--limit")
      limit = std::stoll(next());
    else if (a == "--batch-size")
      batch_size = std::stoll(next());
    else if (a == "--lr")
      lr = std::stod(next());
    else if (a == "--out")
      out = next();
    else if (a == "--data")
      data_dir = next();
    else if (a == "--resume")
      resume = true;
    else if (a == "--min-accuracy")
      min_accuracy = std::stod(next());
    else if (a == "--bf16")
      bf16 = true;
    else if (a == "--prefetch")
      prefetch = true;
    else if (a == "--accumulate")
      accumulate = std::stoll(next());
    else {
      std::cerr << "unknown flag " << a << "\n";
      return 2;
    }
  }
  if (mode != "zero" && mode != "fsdp") {
    std::cerr << "--mode must be zero or fsdp\n";
    return 2;
  }
  if (mode != "fsdp" && (bf16 || prefetch || accumulate != 1)) {
    std::cerr << "--bf16, --prefetch and --accumulate need --mode fsdp\n";
    return 2;
  }
  if (accumulate < 1 || accumulate > batch_size) {
    std::cerr << "--accumulate must be between 1 and the batch size\n";
    return 2;
  }
  dist::init_process_group();
  const int rank = dist::get_rank(), world = dist::get_world_size();
  const char* omp = std::getenv("OMP_NUM_THREADS");
  ember::set_num_threads(omp ? std::max(1, std::atoi(omp)) : 1);
  if (rank != 0) std::cout.setstate(std::ios::failbit);  // one rank reports

  auto train_set = std::make_shared<data::FashionMNIST>(data_dir, /*train=*/true);
  auto test_set = std::make_shared<data::FashionMNIST>(data_dir, /*train=*/false);
  train_set->set_transform(data::transforms::Normalize({0.2860}, {0.3530}));
  test_set->set_transform(data::transforms::Normalize({0.2860}, {0.3530}));
  std::vector<int64_t> first(static_cast<size_t>(std::min<int64_t>(limit, static_cast<int64_t>(train_set->size()))));
  for (size_t i = 0; i < first.size(); ++i) first[i] = static_cast<int64_t>(i);
  auto train_data = std::make_shared<data::Subset>(train_set, first);
  auto sampler = std::make_shared<data::DistributedSampler>(static_cast<int64_t>(train_data->size()), world, rank);
  data::DataLoader loader(train_data, data::DataLoaderOptions().batch_size(batch_size).sampler(sampler));

  ember::manual_seed(0);
  nn::Sequential model(nn::Flatten(), nn::Linear(784, 512), nn::ReLU(), nn::Linear(512, 256), nn::ReLU(),
                       nn::Linear(256, 10));
  // ZeRO-1: DDP averages the gradients, each rank keeps Adam's state for its share.
  // ZeRO-3: every rank keeps a shard of each layer; Adam runs on the shards.
  std::shared_ptr<nn::parallel::DistributedDataParallelImpl> ddp;
  std::shared_ptr<nn::parallel::FullyShardedDataParallelImpl> fsdp;
  std::unique_ptr<dist::ZeroRedundancyOptimizer> zero;
  std::unique_ptr<optim::Adam> adam;
  if (mode == "zero") {
    ddp = std::make_shared<nn::parallel::DistributedDataParallelImpl>(model.ptr());
    zero = std::make_unique<dist::ZeroRedundancyOptimizer>(model->parameters(), dist::optimizer_class<optim::Adam>,
                                                           optim::AdamOptions(lr));
  } else {
    nn::parallel::FSDPOptions options;
    if (bf16) {
      options.mixed_precision = nn::parallel::MixedPrecision{
          .param_dtype = ember::kBFloat16, .reduce_dtype = ember::kBFloat16, .buffer_dtype = ember::kBFloat16};
    }
    if (prefetch) {
      options.backward_prefetch = nn::parallel::BackwardPrefetch::BACKWARD_PRE;
      options.forward_prefetch = true;
    }
    fsdp = std::make_shared<nn::parallel::FullyShardedDataParallelImpl>(model.ptr(), options);
    adam = std::make_unique<optim::Adam>(fsdp->parameters(), optim::AdamOptions(lr));
  }
  optim::Optimizer& opt = zero ? static_cast<optim::Optimizer&>(*zero) : *adam;
  // bf16 logits come back as float32 for the loss and the accuracy.
  auto forward = [&](const ember::Tensor& x) { return fsdp ? fsdp->forward(x).to(ember::kFloat32) : ddp->forward(x); };

  const std::string ckpt = (std::filesystem::path(out) / "checkpoint").string();
  int64_t first_epoch = 1;
  if (resume) {
    try {
      if (fsdp) {
        dist::load_sharded(ckpt, *fsdp, adam.get());
      } else {
        dist::load_sharded(ckpt, *model, *zero);
      }
      first_epoch =
          ember::load((std::filesystem::path(out) / "progress.safetensors").string()).at("epoch").to_int() + 1;
      std::cout << "resumed from " << ckpt << " (saved with " << dist::ShardedCheckpointReader(ckpt).world_size()
                << " ranks) on " << world << " ranks\n";
    } catch (const ember::Error& e) {
      std::cerr << "cannot resume: " << e.what() << "\n";
      return 1;
    }
  }

  double accuracy = 0;
  for (int64_t epoch = first_epoch; epoch <= epochs; ++epoch) {
    sampler->set_epoch(epoch);
    double loss_sum = 0;
    int64_t steps = 0;
    for (data::Example& batch : loader) {
      opt.zero_grad();
      // K micro-batches: the first K-1 accumulate unsharded gradients under no_sync, the
      // last reduce-scatters their sum with its own (each loss weighted by its rows).
      const int64_t rows = batch.data.size(0), k = std::min(accumulate, rows);
      double batch_loss = 0;
      for (int64_t m = 0, begin = 0; m < k; ++m) {
        const int64_t n = rows / k + (m < rows % k ? 1 : 0);
        ember::Tensor loss =
            nn::functional::cross_entropy(forward(batch.data.narrow(0, begin, n)), batch.target.narrow(0, begin, n)) *
            (static_cast<double>(n) / static_cast<double>(rows));
        if (m + 1 < k) {
          auto no_sync = fsdp->no_sync();
          loss.backward();
        } else {
          loss.backward();
        }
        batch_loss += loss.item<double>();
        begin += n;
      }
      opt.step();
      loss_sum += batch_loss;
      ++steps;
    }
    // Every rank evaluates through its wrapper (FSDP gathers each layer in turn).
    int64_t correct = 0, seen = 0;
    {
      ember::NoGradGuard ng;
      data::DataLoader test_loader(test_set, data::DataLoaderOptions().batch_size(1000));
      for (data::Example& batch : test_loader) {
        correct += forward(batch.data).argmax(1).eq(batch.target).sum().item<int64_t>();
        seen += batch.target.size(0);
      }
    }
    accuracy = static_cast<double>(correct) / static_cast<double>(seen);
    if (fsdp) {
      dist::save_sharded(ckpt, *fsdp, adam.get());
    } else {
      dist::save_sharded(ckpt, *model, *zero);
    }
    if (rank == 0) {
      ember::Value progress = ember::Value::dict();
      progress["epoch"] = epoch;
      ember::save(progress, (std::filesystem::path(out) / "progress.safetensors").string());
    }
    std::cout << "epoch " << epoch << " (" << mode << ", " << world << " ranks): train loss "
              << loss_sum / static_cast<double>(std::max<int64_t>(steps, 1)) << ", test accuracy " << accuracy
              << "; sharded checkpoint in " << ckpt << "\n";
  }
  if (fsdp) {
    const auto m = fsdp->memory_stats(adam.get());
    std::cout << "memory on rank 0: parameters " << m.sharded_parameter_bytes << " B, gradients "
              << m.sharded_gradient_bytes << " B, Adam state " << m.optimizer_state_bytes
              << " B (unsharded model: " << m.full_parameter_bytes << " B of parameters)\n";
  } else {
    std::cout << "Adam state on rank 0: " << zero->local_state_bytes() << " B\n";
  }
  dist::barrier();
  dist::destroy_process_group();
  if (accuracy < min_accuracy) {
    std::cerr << "test accuracy " << accuracy << " is below --min-accuracy " << min_accuracy << "\n";
    return 3;
  }
  return 0;
}
