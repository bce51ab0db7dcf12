// Sharded data-parallel training of the Fashion-MNIST MLP (docs/distributed.md): DDP with
// ZeroRedundancyOptimizer (ZeRO-1) or FullyShardedDataParallel (ZeRO-3), a sharded
// checkpoint after every epoch, and --resume from it with any number of ranks.
//
//   build/tools/ember-run --standalone --nproc-per-node 2 build/examples/sharded_training --mode fsdp --epochs 1
//   build/tools/ember-run --standalone --nproc-per-node 3 build/examples/sharded_training --mode fsdp --epochs 2
//   --resume
//
// Flags: --mode zero|fsdp, --epochs N, --limit N (training images), --batch-size B (per
// rank), --lr, --out DIR, --resume, --min-accuracy A (exit 3 below it).

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
  bool resume = false;
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
    else {
      std::cerr << "unknown flag " << a << "\n";
      return 2;
    }
  }
  if (mode != "zero" && mode != "fsdp") {
    std::cerr << "--mode must be zero or fsdp\n";
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
    fsdp = std::make_shared<nn::parallel::FullyShardedDataParallelImpl>(model.ptr());
    adam = std::make_unique<optim::Adam>(fsdp->parameters(), optim::AdamOptions(lr));
  }
  optim::Optimizer& opt = zero ? static_cast<optim::Optimizer&>(*zero) : *adam;
  auto forward = [&](const ember::Tensor& x) { return fsdp ? fsdp->forward(x) : ddp->forward(x); };

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
      ember::Tensor loss = nn::functional::cross_entropy(forward(batch.data), batch.target);
      loss.backward();
      opt.step();
      loss_sum += loss.item<double>();
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
