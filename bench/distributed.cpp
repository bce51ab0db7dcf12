// All-reduce timing for bench/distributed.py: run under ember-run, one process per rank.
// For each size (bytes of float32), a few warm-up calls, then enough timed calls to move
// ~64 MB or at least 5 calls; rank 0 prints one line per size:
//   size_bytes <n> iters <k> seconds_per_call <t>
// --no-checks turns the fingerprint exchange off (Note [Hang-proof collectives]).
// --ddp-step mlp|cnn [--single | --wrap ddp|zero|fsdp] [--batch B] [--steps N]: training steps
// of the main job's models instead (--single: without a wrapper, for DDP's overhead).

#include "ember/distributed/distributed.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "ember/distributed/ddp.h"
#include "ember/distributed/fsdp.h"
#include "ember/distributed/zero_redundancy_optimizer.h"
#include "ember/ember.h"

namespace dist = ember::distributed;
namespace nn = ember::nn;

namespace {

// The main job's models (examples/fashion_mnist), as bench/distributed_torch.py builds them.
nn::Sequential make_model(const std::string& kind) {
  if (kind == "mlp") {
    return nn::Sequential(nn::Flatten(), nn::Linear(784, 512), nn::ReLU(), nn::Linear(512, 256), nn::ReLU(),
                          nn::Linear(256, 10));
  }
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)), nn::ReLU(),
                        nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)),
                        nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Flatten(), nn::Linear(3136, 128),
                        nn::ReLU(), nn::Linear(128, 10));
}

// Training steps of `kind` on this rank's batch of `batch` random images: `wrap` is "single"
// (no wrapper), "ddp", "zero" (DDP + ZeroRedundancyOptimizer), "fsdp" or "fsdp_grad_op"
// (SHARD_GRAD_OP); rank 0 prints
// "ddp_step <kind> <wrap> seconds_per_step <t>" (median of steps).
int ddp_steps(const std::string& kind, const std::string& wrap, int64_t batch, int steps) {
  dist::init_process_group({.timeout = std::chrono::seconds(120)});
  ember::manual_seed(0);
  nn::Sequential model = make_model(kind);
  std::shared_ptr<nn::parallel::DistributedDataParallelImpl> ddp;
  std::shared_ptr<nn::parallel::FullyShardedDataParallelImpl> fsdp;
  std::unique_ptr<ember::optim::Optimizer> opt;
  const auto sgd = ember::optim::SGDOptions(0.01).momentum(0.9);
  if (wrap == "ddp" || wrap == "zero") ddp = std::make_shared<nn::parallel::DistributedDataParallelImpl>(model.ptr());
  if (wrap == "fsdp" || wrap == "fsdp_grad_op") {
    nn::parallel::FSDPOptions o;
    if (wrap == "fsdp_grad_op") o.sharding_strategy = nn::parallel::ShardingStrategy::SHARD_GRAD_OP;
    fsdp = std::make_shared<nn::parallel::FullyShardedDataParallelImpl>(model.ptr(), o);
  }
  if (wrap == "zero") {
    opt = std::make_unique<dist::ZeroRedundancyOptimizer>(model->parameters(), dist::optimizer_class<ember::optim::SGD>,
                                                          sgd);
  } else {
    opt = std::make_unique<ember::optim::SGD>(fsdp ? fsdp->parameters() : model->parameters(), sgd);
  }
  ember::Generator gen(static_cast<uint64_t>(dist::get_rank()) + 1);
  ember::Tensor x = ember::randn({batch, 1, 28, 28}, gen);
  ember::Tensor y = ember::randint(0, 10, {batch}, gen, ember::TensorOptions(ember::kInt64));
  std::vector<double> times;
  for (int i = 0; i < steps + 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    opt->zero_grad();
    ember::Tensor out = ddp ? ddp->forward(x) : fsdp ? fsdp->forward(x) : model(x);
    nn::functional::cross_entropy(out, y).backward();
    opt->step();
    if (i >= 3) times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  if (dist::get_rank() == 0)
    std::printf("ddp_step %s %s seconds_per_step %.9f\n", kind.c_str(), wrap.c_str(), times[times.size() / 2]);
  std::fflush(stdout);
  opt.reset();
  ddp.reset();
  fsdp.reset();
  dist::destroy_process_group();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool checks = true;
  std::string wrap = "ddp";
  int64_t min_bytes = 1024, max_bytes = 64 << 20, batch = 64;
  int steps = 20;
  std::string ddp_model;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--no-checks"))
      checks = false;
    else if (!std::strcmp(argv[i], "--ddp-step") && i + 1 < argc)
      ddp_model = argv[++i];
    else if (!std::strcmp(argv[i], "--single"))
      wrap = "single";
    else if (!std::strcmp(argv[i], "--wrap") && i + 1 < argc)
      wrap = argv[++i];
    else if (!std::strcmp(argv[i], "--batch") && i + 1 < argc)
      batch = std::stoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--steps") && i + 1 < argc)
      steps = std::stoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--max-bytes") && i + 1 < argc)
      max_bytes = std::stoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--min-bytes") && i + 1 < argc)
      min_bytes = std::stoll(argv[++i]);
  }
  ember::set_num_threads(1);
  if (!ddp_model.empty()) return ddp_steps(ddp_model, wrap, batch, steps);
  dist::init_process_group({.timeout = std::chrono::seconds(120), .check_collectives = checks});
  for (int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    ember::Tensor t = ember::ones({bytes / 4});
    for (int i = 0; i < 3; ++i) dist::all_reduce(t);
    const int iters = static_cast<int>(std::max<int64_t>(5, std::min<int64_t>(2000, (64 << 20) / bytes)));
    dist::barrier();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) dist::all_reduce(t);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (dist::get_rank() == 0)
      std::printf("size_bytes %lld iters %d seconds_per_call %.9f\n", static_cast<long long>(bytes), iters, s / iters);
    std::fflush(stdout);
  }
  dist::destroy_process_group();
  return 0;
}
