// DistributedDataParallel on real processes: gradients equal the single-process gradients
// of the concatenated batch, bit-identical across runs, no_sync accumulation, and the
// unused-parameter error.

#include "ember/distributed/ddp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iomanip>

#include "ember/distributed/distributed.h"
#include "ember/ember.h"
#include "tests/distributed/harness.h"

namespace dist = ember::distributed;
namespace nn = ember::nn;
using ember::Tensor;

namespace ddp_test {

struct NetImpl : nn::Module {
  explicit NetImpl(bool with_spare = false) : Module("Net") {
    fc1 = register_module("fc1", nn::Linear(6, 16));
    fc2 = register_module("fc2", nn::Linear(16, 3));
    if (with_spare) spare = register_module("spare", nn::Linear(3, 3));
  }
  Tensor forward(const Tensor& x) override { return fc2(fc1(x).relu()); }
  nn::Linear fc1{nullptr}, fc2{nullptr}, spare{nullptr};
};
EMBER_MODULE(Net);

double env_double(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v ? std::atof(v) : fallback;
}

// |a - b| <= 1e-6 * max|b| elementwise (relative to the tensor's scale).
void expect_close(const Tensor& a, const Tensor& b, const std::string& what) {
  auto x = a.to(ember::kFloat64).contiguous().to_vector<double>();
  auto y = b.to(ember::kFloat64).contiguous().to_vector<double>();
  WCHECK(x.size() == y.size(), << what);
  double scale = 0;
  for (double v : y) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < x.size(); ++i) {
    WCHECK(std::abs(x[i] - y[i]) <= 1e-6 * scale + 1e-12, << what << "[" << i << "]: " << std::setprecision(10) << x[i]
                                                          << " vs " << y[i] << " (scale " << scale << ")");
  }
}

uint64_t digest(const std::vector<Tensor>& ts) {
  uint64_t h = 1469598103934665603ull;
  for (const auto& t : ts) {
    auto v = t.contiguous().to_vector<float>();
    for (float f : v) {
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      h = (h ^ bits) * 1099511628211ull;
    }
  }
  return h;
}

void sgd(const std::vector<Tensor>& params, double lr) {
  ember::NoGradGuard ng;
  for (auto p : params) {
    p.sub_(p.grad() * lr);
    p.mutable_grad().zero_();
  }
}

DIST_SCENARIO(ddp_grads) {
  dist::init_process_group({.backend = dist_test::backend(), .timeout = std::chrono::seconds(20)});
  const int rank = dist::get_rank(), world = dist::get_world_size();
  ember::manual_seed(rank == 0 ? 0 : 1234);  // rank 1 starts elsewhere: DDP must broadcast
  Net net;
  ember::manual_seed(0);
  Net ref;
  nn::parallel::DDPOptions opts;
  opts.bucket_cap_mb = env_double("DDP_BUCKET_MB", 25);
  opts.first_bucket_mb = env_double("DDP_FIRST_BUCKET_MB", 1);
  nn::parallel::DistributedDataParallel ddp(net, opts);
  std::cout << "buckets:";
  for (const auto& b : ddp->bucket_names()) {
    std::cout << " [";
    for (const auto& n : b) std::cout << n << " ";
    std::cout << "]";
  }
  std::cout << std::endl;
  auto p = net->parameters(), q = ref->parameters();
  for (size_t i = 0; i < p.size(); ++i) WCHECK(ember::equal(p[i], q[i]), << "parameter " << i << " not broadcast");

  ember::Generator gen(42);
  const int64_t per = 4;
  Tensor X = ember::randn({per * world, 6}, gen), Y = ember::randn({per * world, 3}, gen);
  Tensor xr = X.narrow(0, rank * per, per), yr = Y.narrow(0, rank * per, per);
  for (int step = 0; step < 3; ++step) {
    Tensor loss = nn::functional::mse_loss(ddp(xr), yr);
    loss.backward();
    Tensor ref_loss = nn::functional::mse_loss(ref(X), Y);
    ref_loss.backward();
    for (size_t i = 0; i < p.size(); ++i) expect_close(p[i].grad(), q[i].grad(), "grad " + std::to_string(i));
    sgd(p, 0.1);
    sgd(q, 0.1);
  }
  for (size_t i = 0; i < p.size(); ++i) expect_close(p[i], q[i], "parameter " + std::to_string(i));
  std::cout << "digest " << std::hex << digest(p) << std::dec << std::endl;
  dist::destroy_process_group();
  return 0;
}

// Two micro-batches per rank, the first under no_sync: the synchronized backward
// reduces the accumulated gradients.
DIST_SCENARIO(ddp_no_sync) {
  dist::init_process_group({.backend = dist_test::backend(), .timeout = std::chrono::seconds(20)});
  const int rank = dist::get_rank(), world = dist::get_world_size();
  ember::manual_seed(0);
  Net net;
  ember::manual_seed(0);
  Net ref;
  nn::parallel::DistributedDataParallel ddp(
      net, nn::parallel::DDPOptions{.bucket_cap_mb = 0.00001, .first_bucket_mb = 0.00001});
  ember::Generator gen(7);
  const int64_t per = 3;
  Tensor X = ember::randn({2 * per * world, 6}, gen), Y = ember::randn({2 * per * world, 3}, gen);
  auto chunk = [&](const Tensor& t, int r, int k) { return t.narrow(0, (r * 2 + k) * per, per); };
  const uint64_t before = ddp->process_group()->sequence_number();
  {
    auto guard = ddp->no_sync();
    nn::functional::mse_loss(ddp(chunk(X, rank, 0)), chunk(Y, rank, 0)).backward();
  }
  WCHECK(ddp->process_group()->sequence_number() == before, << "no_sync issued collectives");
  nn::functional::mse_loss(ddp(chunk(X, rank, 1)), chunk(Y, rank, 1)).backward();
  // Reference: the mean over ranks of each rank's summed micro-batch gradients.
  Tensor total;
  for (int r = 0; r < world; ++r)
    for (int k = 0; k < 2; ++k) {
      Tensor l = nn::functional::mse_loss(ref(chunk(X, r, k)), chunk(Y, r, k));
      total = total.defined() ? total + l : l;
    }
  (total / static_cast<double>(world)).backward();
  auto p = net->parameters(), q = ref->parameters();
  for (size_t i = 0; i < p.size(); ++i) expect_close(p[i].grad(), q[i].grad(), "grad " + std::to_string(i));
  dist::destroy_process_group();
  return 0;
}

// A parameter outside the loss: the next forward names it; with find_unused_parameters
// the step works and leaves its gradient alone.
DIST_SCENARIO(ddp_unused) {
  dist::init_process_group({.backend = dist_test::backend(), .timeout = std::chrono::seconds(20)});
  ember::manual_seed(0);
  Net net(true);
  Tensor x = ember::randn({2, 6});
  {
    nn::parallel::DistributedDataParallel ddp(net);
    nn::functional::mse_loss(ddp(x), ember::zeros({2, 3})).backward();
    try {
      ddp(x);
      std::cout << "no error" << std::endl;
      return 1;
    } catch (const ember::Error& e) {
      std::cout << "error: " << e.what() << std::endl;
    }
  }
  net->zero_grad();
  nn::parallel::DistributedDataParallel ddp(net, nn::parallel::DDPOptions{.find_unused_parameters = true});
  for (int i = 0; i < 2; ++i) {
    nn::functional::mse_loss(ddp(x), ember::zeros({2, 3})).backward();
  }
  WCHECK(!net->spare->weight.grad().defined(), << "the unused parameter got a gradient");
  WCHECK(net->fc1->weight.grad().defined());
  dist::destroy_process_group();
  return 0;
}

// Registered in the opposite order to their use: the default (reverse registration)
// buckets put fc_a first although backward produces fc_b's gradients first.
struct RevNetImpl : nn::Module {
  RevNetImpl() : Module("RevNet") {
    fc_b = register_module("fc_b", nn::Linear(16, 3));
    fc_a = register_module("fc_a", nn::Linear(6, 16));
  }
  Tensor forward(const Tensor& x) override { return fc_b(fc_a(x).relu()); }
  nn::Linear fc_b{nullptr}, fc_a{nullptr};
};
EMBER_MODULE(RevNet);

std::string describe_buckets(const nn::parallel::DistributedDataParallelImpl& ddp) {
  std::ostringstream os;
  for (const auto& b : ddp.bucket_names()) {
    os << " [";
    for (const auto& n : b) os << n << " ";
    os << "]";
  }
  return os.str();
}

// Note [Bucket rebuild]: after the first step the buckets follow the observed gradient
// order; gradients still equal the single-process reference, bit-identical run to run.
DIST_SCENARIO(ddp_rebuild) {
  dist::init_process_group({.backend = dist_test::backend(), .timeout = std::chrono::seconds(20)});
  const int rank = dist::get_rank(), world = dist::get_world_size();
  ember::manual_seed(0);
  RevNet net;
  ember::manual_seed(0);
  RevNet ref;
  nn::parallel::DDPOptions opts;
  opts.bucket_cap_mb = env_double("DDP_BUCKET_MB", 25);
  opts.first_bucket_mb = env_double("DDP_FIRST_BUCKET_MB", 1);
  nn::parallel::DistributedDataParallel ddp(net, opts);
  std::cout << "before:" << describe_buckets(*ddp) << std::endl;
  ember::Generator gen(3);
  const int64_t per = 4;
  Tensor X = ember::randn({per * world, 6}, gen), Y = ember::randn({per * world, 3}, gen);
  Tensor xr = X.narrow(0, rank * per, per), yr = Y.narrow(0, rank * per, per);
  auto p = net->parameters(), q = ref->parameters();
  for (int step = 0; step < 4; ++step) {
    Tensor out = ddp(xr);
    WCHECK(ddp->buckets_rebuilt() == (step > 0), << "step " << step);
    if (step == 1) std::cout << "after:" << describe_buckets(*ddp) << std::endl;
    nn::functional::mse_loss(out, yr).backward();
    nn::functional::mse_loss(ref(X), Y).backward();
    for (size_t i = 0; i < p.size(); ++i) expect_close(p[i].grad(), q[i].grad(), "grad " + std::to_string(i));
    sgd(p, 0.1);
    sgd(q, 0.1);
  }
  std::cout << "digest " << std::hex << digest(p) << std::dec << std::endl;
  dist::destroy_process_group();
  return 0;
}

}  // namespace ddp_test

using dist_test::run_ranks;

namespace {
std::string digest_of(const dist_test::RunResult& r, size_t rank) {
  const auto& out = r.ranks[rank].output;
  const auto pos = out.find("digest ");
  return pos == std::string::npos ? "" : out.substr(pos + 7, out.find('\n', pos) - pos - 7);
}
}  // namespace

TEST(DistributedDataParallel, GradientsMatchTheConcatenatedBatch) {
  auto r = run_ranks("ddp_grads", 2, 60);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  EXPECT_NE(r.ranks[0].output.find("buckets: [fc2.bias fc2.weight fc1.bias fc1.weight ]"), std::string::npos)
      << r.dump();
  // Bit-identical on both ranks, and in a second run.
  EXPECT_EQ(digest_of(r, 0), digest_of(r, 1));
  auto again = run_ranks("ddp_grads", 2, 60);
  ASSERT_TRUE(again.all_ok()) << again.dump();
  EXPECT_EQ(digest_of(r, 0), digest_of(again, 0));
  EXPECT_FALSE(digest_of(r, 0).empty());
}

TEST(DistributedDataParallel, ManyBucketsThreeRanks) {
  // A cap of ~10 bytes: every parameter in its own bucket, reduced in reverse order.
  auto r = run_ranks("ddp_grads", 3, 60, {"DDP_BUCKET_MB=0.00001", "DDP_FIRST_BUCKET_MB=0.00001"});
  ASSERT_TRUE(r.all_ok()) << r.dump();
  EXPECT_NE(r.ranks[0].output.find("buckets: [fc2.bias ] [fc2.weight ] [fc1.bias ] [fc1.weight ]"), std::string::npos)
      << r.dump();
  EXPECT_EQ(digest_of(r, 0), digest_of(r, 2));
}

TEST(DistributedDataParallel, NoSyncAccumulates) {
  auto r = run_ranks("ddp_no_sync", 2, 60);
  ASSERT_TRUE(r.all_ok()) << r.dump();
}

TEST(DistributedDataParallel, UnusedParameterIsNamed) {
  auto r = run_ranks("ddp_unused", 2, 60);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  EXPECT_NE(r.ranks[0].output.find("[DistributedDataParallel] the last backward did not produce gradients for 2 of 6 "
                                   "parameters on rank 0, so their gradients were never averaged: 'spare.weight', "
                                   "'spare.bias'"),
            std::string::npos)
      << r.dump();
}

TEST(DistributedDataParallel, BucketsRebuiltInGradientOrder) {
  auto r = run_ranks("ddp_rebuild", 3, 60, {"DDP_BUCKET_MB=0.00001", "DDP_FIRST_BUCKET_MB=0.00001"});
  ASSERT_TRUE(r.all_ok()) << r.dump();
  const std::string& out = r.ranks[0].output;
  EXPECT_NE(out.find("before: [fc_a.bias ] [fc_a.weight ] [fc_b.bias ] [fc_b.weight ]"), std::string::npos) << r.dump();
  // Backward reaches fc_b first: its two parameters (in the engine's order) lead.
  const auto at = out.find("after: [fc_b.");
  ASSERT_NE(at, std::string::npos) << r.dump();
  const std::string after = out.substr(at, out.find('\n', at) - at);
  EXPECT_NE(after.find("] [fc_b."), std::string::npos) << after;
  EXPECT_NE(after.find("] [fc_a."), std::string::npos) << after;
  EXPECT_LT(after.find("fc_b.weight"), after.find("fc_a.")) << after;
  EXPECT_LT(after.find("fc_b.bias"), after.find("fc_a.")) << after;
  EXPECT_EQ(digest_of(r, 0), digest_of(r, 2));
}

TEST(DistributedDataParallel, RebuiltBucketsBitIdenticalAcrossRuns) {
  auto r = run_ranks("ddp_rebuild", 2, 60);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  EXPECT_NE(r.ranks[0].output.find("before: [fc_a.bias fc_a.weight fc_b.bias fc_b.weight ]"), std::string::npos)
      << r.dump();
  EXPECT_NE(r.ranks[0].output.find("after: [fc_b."), std::string::npos) << r.dump();
  auto again = run_ranks("ddp_rebuild", 2, 60);
  ASSERT_TRUE(again.all_ok()) << again.dump();
  EXPECT_FALSE(digest_of(r, 0).empty());
  EXPECT_EQ(digest_of(r, 0), digest_of(again, 0));
  EXPECT_EQ(digest_of(r, 0), digest_of(r, 1));
}
