// ZeroRedundancyOptimizer on real processes: several steps give parameters bit-identical
// to DDP + the same optimizer on every rank, each rank holds ~1/N of the optimizer state,
// consolidate_state_dict / state_dict / load_state_dict round-trip, and mismatched
// parameters across ranks are an error on every rank. Also the object collectives it uses.

#include <gtest/gtest.h>

#include <cstring>
#include <iomanip>

#include "ember/distributed/ddp.h"
#include "ember/distributed/distributed.h"
#include "ember/distributed/object_collectives.h"
#include "ember/distributed/zero_redundancy_optimizer.h"
#include "ember/ember.h"
#include "tests/distributed/harness.h"

namespace dist = ember::distributed;
namespace nn = ember::nn;
namespace optim = ember::optim;
using ember::Tensor;
using ember::Value;

namespace zero_test {

struct NetImpl : nn::Module {
  explicit NetImpl(int64_t hidden = 16) : Module("Net") {
    fc1 = register_module("fc1", nn::Linear(6, hidden));
    fc2 = register_module("fc2", nn::Linear(hidden, 8));
    fc3 = register_module("fc3", nn::Linear(8, 3));
  }
  Tensor forward(const Tensor& x) override { return fc3(fc2(fc1(x).relu()).tanh()); }
  nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};
EMBER_MODULE(Net);

std::string env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

std::unique_ptr<optim::Optimizer> make_plain(const std::string& kind, std::vector<Tensor> params) {
  if (kind == "sgd")
    return std::make_unique<optim::SGD>(params, optim::SGDOptions(0.05).momentum(0.9).weight_decay(1e-3));
  if (kind == "adam") return std::make_unique<optim::Adam>(params, optim::AdamOptions(1e-2));
  return std::make_unique<optim::AdamW>(params, optim::AdamWOptions(1e-2).weight_decay(0.1));
}

std::unique_ptr<dist::ZeroRedundancyOptimizer> make_zero(const std::string& kind, std::vector<Tensor> params) {
  if (kind == "sgd")
    return std::make_unique<dist::ZeroRedundancyOptimizer>(params, dist::optimizer_class<optim::SGD>,
                                                           optim::SGDOptions(0.05).momentum(0.9).weight_decay(1e-3));
  if (kind == "adam")
    return std::make_unique<dist::ZeroRedundancyOptimizer>(params, dist::optimizer_class<optim::Adam>,
                                                           optim::AdamOptions(1e-2));
  return std::make_unique<dist::ZeroRedundancyOptimizer>(params, dist::optimizer_class<optim::AdamW>,
                                                         optim::AdamWOptions(1e-2).weight_decay(0.1));
}

// The options of a second group (another learning rate), for add_param_group.
optim::OptimizerParamGroup second_group(const std::string& kind, std::vector<Tensor> params) {
  if (kind == "sgd") return optim::OptimizerParamGroup(std::move(params), optim::SGDOptions(0.02).momentum(0.5));
  if (kind == "adam") return optim::OptimizerParamGroup(std::move(params), optim::AdamOptions(3e-3));
  return optim::OptimizerParamGroup(std::move(params), optim::AdamWOptions(3e-3).weight_decay(0.2));
}

int64_t state_bytes(const optim::Optimizer& o) {
  int64_t n = 0;
  for (const Tensor& p : o.parameters())
    if (const auto* st = o.find_state(p))
      for (const auto& item : st->tensors) n += static_cast<int64_t>(item.value().nbytes());
  return n;
}

void expect_bit_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const std::string& what) {
  WCHECK(a.size() == b.size(), << what);
  for (size_t i = 0; i < a.size(); ++i) {
    WCHECK(a[i].sizes() == b[i].sizes(), << what << " " << i);
    WCHECK(std::memcmp(a[i].contiguous().data_ptr(), b[i].contiguous().data_ptr(), a[i].nbytes()) == 0,
           << what << ": parameter " << i << " differs: " << a[i] << " vs " << b[i]);
  }
}

void train_step(nn::parallel::DistributedDataParallel& ddp, optim::Optimizer& opt, const Tensor& x, const Tensor& y) {
  opt.zero_grad();
  nn::functional::mse_loss(ddp(x), y).backward();
  opt.step();
}

DIST_SCENARIO(zero_matches_ddp) {
  dist::init_process_group({.backend = dist_test::backend(), .timeout = std::chrono::seconds(20)});
  const int rank = dist::get_rank(), world = dist::get_world_size();
  const std::string kind = env("ZERO_OPT", "adam");
  ember::manual_seed(0);
  Net a;
  ember::manual_seed(0);
  Net b;
  nn::parallel::DistributedDataParallel ddp_a(a), ddp_b(b);
  // fc1 and fc2 in the first group; fc3 added as a second group with other options.
  auto pa = a->parameters(), pb = b->parameters();
  auto plain = make_plain(kind, {pa.begin(), pa.begin() + 4});
  auto zero = make_zero(kind, {pb.begin(), pb.begin() + 4});
  plain->add_param_group(second_group(kind, {pa[4], pa[5]}));
  zero->add_param_group(second_group(kind, {pb[4], pb[5]}));

  // The partition: every parameter on exactly one rank, greedy by size.
  size_t owned = 0;
  for (const auto& g : zero->partition()[static_cast<size_t>(rank)]) owned += g.size();
  WCHECK(owned == zero->optim().parameters().size());

  ember::Generator gen(42);
  const int64_t per = 4;
  Tensor X = ember::randn({per * world, 6}, gen), Y = ember::randn({per * world, 3}, gen);
  Tensor xr = X.narrow(0, rank * per, per), yr = Y.narrow(0, rank * per, per);
  for (int step = 0; step < 5; ++step) {
    train_step(ddp_a, *plain, xr, yr);
    train_step(ddp_b, *zero, xr, yr);
    expect_bit_equal(a->parameters(), b->parameters(), "step " + std::to_string(step));
  }

  // Optimizer state: this rank's share, and all shares add up to the unsharded state.
  const int64_t mine = zero->local_state_bytes(), full = state_bytes(*plain);
  Tensor total = ember::tensor(std::vector<int64_t>{mine});
  dist::all_reduce(total);
  WCHECK(total.item<int64_t>() == full, << total.item<int64_t>() << " vs " << full);
  int64_t largest = 0;
  for (const Tensor& p : a->parameters()) largest = std::max<int64_t>(largest, static_cast<int64_t>(p.nbytes()));
  const int64_t per_param_state = kind == "sgd" ? 1 : 2;
  WCHECK(mine <= full / world + per_param_state * largest, << mine << " of " << full);
  std::cout << "state bytes " << mine << " of " << full << std::endl;

  // consolidate_state_dict / state_dict: rank 0 gets the plain optimizer's state dict.
  zero->consolidate_state_dict(0);
  Value sd;
  if (rank == 0) {
    sd = zero->state_dict();
    WCHECK(sd == plain->state_dict(), << "the consolidated state differs from the plain optimizer's");
  } else {
    try {
      zero->state_dict();
      WCHECK(false, << "state_dict() on a rank without the consolidated state did not throw");
    } catch (const ember::Error& e) {
      WCHECK(std::string(e.what()).rfind("[ZeroRedundancyOptimizer.state_dict]", 0) == 0, << e.what());
    }
  }
  std::vector<Value> box{sd};
  dist::broadcast_object_list(box, 0);
  sd = box[0];

  // load_state_dict into a fresh ZeRO over a copy of the model: one more step equals the plain one.
  ember::manual_seed(5);
  Net c;
  {
    ember::NoGradGuard ng;
    auto pa = a->parameters(), pc = c->parameters();
    for (size_t i = 0; i < pa.size(); ++i) pc[i].copy_(pa[i]);
  }
  nn::parallel::DistributedDataParallel ddp_c(c);
  auto pc = c->parameters();
  auto zero_c = make_zero(kind, {pc.begin(), pc.begin() + 4});
  zero_c->add_param_group(second_group(kind, {pc[4], pc[5]}));
  zero_c->load_state_dict(sd);
  train_step(ddp_a, *plain, xr, yr);
  train_step(ddp_c, *zero_c, xr, yr);
  expect_bit_equal(a->parameters(), c->parameters(), "after load_state_dict");
  dist::destroy_process_group();
  return 0;
}

// Rank 1 builds a wider model: the constructor raises on every rank, naming both.
DIST_SCENARIO(zero_mismatch) {
  dist::init_process_group({.backend = dist_test::backend(), .timeout = std::chrono::seconds(20)});
  Net net(dist::get_rank() == 1 ? 17 : 16);
  try {
    dist::ZeroRedundancyOptimizer zero(net->parameters(), dist::optimizer_class<optim::SGD>, optim::SGDOptions(0.1));
    std::cout << "no error" << std::endl;
    return 1;
  } catch (const ember::Error& e) {
    std::cout << "error: " << e.what() << std::endl;
  }
  dist::barrier();  // the group is still usable
  dist::destroy_process_group();
  return 0;
}

DIST_SCENARIO(object_collectives) {
  dist::init_process_group({.backend = dist_test::backend(), .timeout = std::chrono::seconds(20)});
  const int rank = dist::get_rank(), world = dist::get_world_size();
  Value mine = Value::dict();
  mine["rank"] = rank;
  mine["name"] = std::string(static_cast<size_t>(rank) * 5 + 1, 'x');
  mine["t"] = ember::arange(rank + 2, ember::TensorOptions(ember::kFloat64)).reshape({1, -1});
  Value list = Value::list();
  list.push_back(Value());
  list.push_back(2.5);
  list.push_back(rank % 2 == 0);
  mine["list"] = list;
  std::vector<Value> all;
  dist::all_gather_object(all, mine);
  WCHECK(static_cast<int>(all.size()) == world);
  for (int r = 0; r < world; ++r) {
    WCHECK(all[static_cast<size_t>(r)].at("rank").to_int() == r);
    WCHECK(all[static_cast<size_t>(r)].at("name").to_string().size() == static_cast<size_t>(r) * 5 + 1);
    WCHECK(ember::equal(all[static_cast<size_t>(r)].at("t").to_tensor(),
                        ember::arange(r + 2, ember::TensorOptions(ember::kFloat64)).reshape({1, -1})));
    WCHECK(all[static_cast<size_t>(r)].at("list").to_list()[2].to_bool() == (r % 2 == 0));
  }
  std::vector<Value> gathered;
  dist::gather_object(mine, rank == world - 1 ? &gathered : nullptr, world - 1);
  if (rank == world - 1) {
    WCHECK(static_cast<int>(gathered.size()) == world);
    for (int r = 0; r < world; ++r) WCHECK(gathered[static_cast<size_t>(r)] == all[static_cast<size_t>(r)]);
  }
  std::vector<Value> box(2);
  if (rank == 1) box = {Value("from one"), mine};
  dist::broadcast_object_list(box, 1);
  WCHECK(box[0].to_string() == "from one");
  WCHECK(box[1] == all[1]);
  dist::destroy_process_group();
  return 0;
}

}  // namespace zero_test

using dist_test::run_ranks;

TEST(ZeroRedundancyOptimizer, AdamMatchesDDPTwoRanks) {
  auto r = run_ranks("zero_matches_ddp", 2, 60, {"ZERO_OPT=adam"});
  ASSERT_TRUE(r.all_ok()) << r.dump();
}

TEST(ZeroRedundancyOptimizer, SGDMomentumMatchesDDPThreeRanks) {
  auto r = run_ranks("zero_matches_ddp", 3, 60, {"ZERO_OPT=sgd"});
  ASSERT_TRUE(r.all_ok()) << r.dump();
}

TEST(ZeroRedundancyOptimizer, AdamWMatchesDDPThreeRanks) {
  auto r = run_ranks("zero_matches_ddp", 3, 60, {"ZERO_OPT=adamw"});
  ASSERT_TRUE(r.all_ok()) << r.dump();
}

TEST(ZeroRedundancyOptimizer, MismatchedParametersAreAnErrorOnEveryRank) {
  auto r = run_ranks("zero_mismatch", 2, 60);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  for (const auto& rr : r.ranks) {
    EXPECT_NE(rr.output.find("error: [ZeroRedundancyOptimizer] the ranks hold different parameters: rank 0 has 6 "
                             "parameters (275 elements) in 1 group; rank 1 has 6 parameters (290 elements) in 1 group"),
              std::string::npos)
        << r.dump();
  }
}

TEST(ObjectCollectives, AllGatherGatherBroadcastThreeRanks) {
  auto r = run_ranks("object_collectives", 3, 60);
  ASSERT_TRUE(r.all_ok()) << r.dump();
}
