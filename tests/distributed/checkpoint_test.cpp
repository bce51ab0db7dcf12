// Sharded checkpoints on real processes: FSDP and ZeRO-1 checkpoints saved with 2 ranks
// load with 3 ranks, with 1 rank and into a single process (load_full_checkpoint) with
// identical values; a truncated or corrupt shard, and a checkpoint of another model, give
// an ember::Error naming the file or the keys.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ember/distributed/ddp.h"
#include "ember/distributed/distributed.h"
#include "ember/distributed/fsdp.h"
#include "ember/distributed/sharded_checkpoint.h"
#include "ember/distributed/zero_redundancy_optimizer.h"
#include "ember/ember.h"
#include "tests/distributed/harness.h"

namespace dist = ember::distributed;
namespace nn = ember::nn;
namespace optim = ember::optim;
namespace fs = std::filesystem;
using ember::Tensor;
using ember::Value;

namespace checkpoint_test {

struct CNetImpl : nn::Module {
  explicit CNetImpl(int64_t hidden = 24) : Module("CNet") {
    fc1 = register_module("fc1", nn::Linear(5, hidden));
    norm = register_module("norm", nn::BatchNorm1d(hidden));
    fc2 = register_module("fc2", nn::Linear(hidden, 7));
    fc3 = register_module("fc3", nn::Linear(7, 2));
  }
  Tensor forward(const Tensor& x) override { return fc3(fc2(norm(fc1(x)).relu()).tanh()); }
  nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
  nn::BatchNorm1d norm{nullptr};
};
EMBER_MODULE(CNet);

std::string dir() {
  const char* d = std::getenv("CKPT_DIR");
  if (!d) throw std::runtime_error("CKPT_DIR is not set");
  return d;
}

// The same batch on every world size: rank r of w takes rows [r*n/w, (r+1)*n/w) of 12.
std::pair<Tensor, Tensor> batch(int rank, int world) {
  ember::Generator gen(11);
  Tensor x = ember::randn({12, 5}, gen), y = ember::randn({12, 2}, gen);
  const int64_t per = 12 / world;
  return {x.narrow(0, rank * per, per), y.narrow(0, rank * per, per)};
}

// A Value as it comes back from a file (numbers through JSON), for comparisons.
Value roundtrip(const Value& v, const std::string& name) {
  const std::string path = dir() + "/" + name;
  ember::save(v, path);
  return ember::load(path);
}

// FSDP + Adam, 3 steps on 2 ranks; save; rank 0 keeps the full model as the reference.
DIST_SCENARIO(ckpt_fsdp_save) {
  dist::init_process_group({.timeout = std::chrono::seconds(20)});
  const int rank = dist::get_rank(), world = dist::get_world_size();
  ember::manual_seed(0);
  CNet net;
  nn::parallel::FullyShardedDataParallel fsdp(net);
  optim::Adam opt(fsdp->parameters(), optim::AdamOptions(1e-2));
  auto [x, y] = batch(rank, world);
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    nn::functional::mse_loss(fsdp(x), y).backward();
    opt.step();
  }
  dist::save_sharded(dir() + "/fsdp", *fsdp, &opt);
  auto full = fsdp->full_state_dict();
  if (rank == 0) ember::save(full, dir() + "/fsdp_ref.safetensors");
  dist::destroy_process_group();
  return 0;
}

// Any world size: load, compare with the reference, take a step, and save again.
DIST_SCENARIO(ckpt_fsdp_load) {
  dist::init_process_group({.timeout = std::chrono::seconds(20)});
  const int rank = dist::get_rank(), world = dist::get_world_size();
  ember::manual_seed(123);
  CNet net;
  nn::parallel::FullyShardedDataParallel fsdp(net);
  optim::Adam opt(fsdp->parameters(), optim::AdamOptions(0.5));  // the checkpoint's lr replaces it
  dist::load_sharded(dir() + "/fsdp", *fsdp, &opt);
  const auto ref = ember::load(dir() + "/fsdp_ref.safetensors").to_tensor_dict();
  const auto full = fsdp->full_state_dict();
  WCHECK(full.size() == ref.size());
  for (const auto& item : ref) WCHECK(ember::equal(full[item.key()], item.value()), << item.key());
  WCHECK(opt.param_groups()[0].lr() == 1e-2);
  const std::string out = dir() + "/fsdp_resaved_" + std::to_string(world);
  dist::save_sharded(out, *fsdp, &opt);
  // The optimizer state is usable: one more step, and its step count goes on from 3.
  auto [x, y] = batch(rank, world);
  opt.zero_grad();
  nn::functional::mse_loss(fsdp(x), y).backward();
  opt.step();
  WCHECK(opt.find_state(fsdp->parameters()[0])->step == 4);
  dist::destroy_process_group();
  return 0;
}

// A checkpoint of another model: an error naming the keys, on every rank.
DIST_SCENARIO(ckpt_fsdp_wrong_model) {
  dist::init_process_group({.timeout = std::chrono::seconds(20)});
  CNet net(25);
  nn::parallel::FullyShardedDataParallel fsdp(net);
  try {
    dist::load_sharded(dir() + "/fsdp", *fsdp);
    std::cout << "no error" << std::endl;
    return 1;
  } catch (const ember::Error& e) {
    std::cout << "error: " << e.what() << std::endl;
  }
  dist::destroy_process_group();
  return 0;
}

// A save that dies half-way: rank 1 is killed after writing its shard's temporary file but
// before renaming it; rank 0 must fail (naming the lost rank) instead of hanging, and the
// checkpoint saved earlier in the same directory must stay loadable.
DIST_SCENARIO(ckpt_fsdp_crash) {
  dist::init_process_group({.timeout = std::chrono::seconds(5)});
  const int rank = dist::get_rank(), world = dist::get_world_size();
  ember::manual_seed(0);
  CNet net;
  nn::parallel::FullyShardedDataParallel fsdp(net);
  optim::Adam opt(fsdp->parameters(), optim::AdamOptions(1e-2));
  auto [x, y] = batch(rank, world);
  opt.zero_grad();
  nn::functional::mse_loss(fsdp(x), y).backward();
  opt.step();
  if (rank == 1) {
    ember::detail::set_save_progress_hook([](const char* stage, uint64_t) {
      if (std::string(stage) == "synced") std::_Exit(9);
    });
  }
  try {
    dist::save_sharded(dir() + "/fsdp", *fsdp, &opt);
    std::cout << "no error" << std::endl;
    return 1;
  } catch (const ember::Error& e) {
    std::cout << "error: " << e.what() << std::endl;
  }
  return 0;
}

DIST_SCENARIO(ckpt_zero_save) {
  dist::init_process_group({.timeout = std::chrono::seconds(20)});
  const int rank = dist::get_rank(), world = dist::get_world_size();
  ember::manual_seed(0);
  CNet net;
  nn::parallel::DistributedDataParallel ddp(net);
  dist::ZeroRedundancyOptimizer zero(net->parameters(), dist::optimizer_class<optim::AdamW>, optim::AdamWOptions(1e-2));
  auto [x, y] = batch(rank, world);
  for (int step = 0; step < 3; ++step) {
    zero.zero_grad();
    nn::functional::mse_loss(ddp(x), y).backward();
    zero.step();
  }
  dist::save_sharded(dir() + "/zero", *net, zero);
  zero.consolidate_state_dict(0);
  if (rank == 0) {
    Value ref = Value::dict();
    ref["model"] = Value(net->state_dict());
    ref["optim"] = zero.state_dict();
    ember::save(ref, dir() + "/zero_ref.safetensors");
  }
  dist::destroy_process_group();
  return 0;
}

DIST_SCENARIO(ckpt_zero_load) {
  dist::init_process_group({.timeout = std::chrono::seconds(20)});
  const int rank = dist::get_rank();
  ember::manual_seed(77);
  CNet net;
  nn::parallel::DistributedDataParallel ddp(net);
  dist::ZeroRedundancyOptimizer zero(net->parameters(), dist::optimizer_class<optim::AdamW>, optim::AdamWOptions(1e-3));
  dist::load_sharded(dir() + "/zero", *net, zero);
  const Value ref = ember::load(dir() + "/zero_ref.safetensors");
  const auto model_ref = ref.at("model").to_tensor_dict();
  const auto now = net->state_dict();
  for (const auto& item : model_ref) WCHECK(ember::equal(now[item.key()], item.value()), << item.key());
  zero.consolidate_state_dict(0);
  if (rank == 0) {
    WCHECK(roundtrip(zero.state_dict(), "zero_now.safetensors") == ref.at("optim"),
           << "optimizer state after load differs from the saved one");
  }
  dist::destroy_process_group();
  return 0;
}

}  // namespace checkpoint_test

using dist_test::run_ranks;

namespace {
std::string fresh_dir() { return dist_test::temp_dir(); }

void expect_same_dicts(const ember::OrderedDict<std::string, Tensor>& a,
                       const ember::OrderedDict<std::string, Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& item : b) {
    ASSERT_NE(a.find(item.key()), nullptr) << item.key();
    EXPECT_TRUE(ember::equal(a[item.key()], item.value())) << item.key();
  }
}
}  // namespace

TEST(ShardedCheckpoint, FSDPSavedOnTwoRanksLoadsOnThreeAndOne) {
  const std::string d = fresh_dir();
  const std::string env = "CKPT_DIR=" + d;
  auto saved = run_ranks("ckpt_fsdp_save", 2, 60, {env});
  ASSERT_TRUE(saved.all_ok()) << saved.dump();
  auto three = run_ranks("ckpt_fsdp_load", 3, 60, {env});
  ASSERT_TRUE(three.all_ok()) << three.dump();
  auto one = run_ranks("ckpt_fsdp_load", 1, 60, {env});
  ASSERT_TRUE(one.all_ok()) << one.dump();

  // One process: the full model, equal to the reference, from the 2-rank save and from
  // the 3- and 1-rank re-saves; and the optimizer state loads into a plain Adam.
  const auto ref = ember::load(d + "/fsdp_ref.safetensors").to_tensor_dict();
  auto from2 = dist::load_full_checkpoint(d + "/fsdp");
  auto from3 = dist::load_full_checkpoint(d + "/fsdp_resaved_3");
  auto from1 = dist::load_full_checkpoint(d + "/fsdp_resaved_1");
  expect_same_dicts(from2.model, ref);
  expect_same_dicts(from3.model, ref);
  expect_same_dicts(from1.model, ref);
  EXPECT_TRUE(from2.optimizer == from3.optimizer);
  EXPECT_TRUE(from2.optimizer == from1.optimizer);
  checkpoint_test::CNet plain;
  plain->load_state_dict(from2.model);
  optim::Adam adam(plain->parameters(), optim::AdamOptions(0.5));
  adam.load_state_dict(from2.optimizer);
  EXPECT_EQ(adam.param_groups()[0].lr(), 1e-2);
  EXPECT_EQ(adam.find_state(plain->fc1->weight)->step, 3);
  EXPECT_EQ(adam.find_state(plain->fc1->weight)->tensors["exp_avg"].sizes(), plain->fc1->weight.sizes());

  // A save killed half-way leaves the checkpoint above as it was.
  auto crash = run_ranks("ckpt_fsdp_crash", 2, 60, {env});
  EXPECT_EQ(crash.ranks[1].exit_code, 9) << crash.dump();
  EXPECT_EQ(crash.ranks[0].exit_code, 0) << crash.dump();
  EXPECT_NE(crash.ranks[0].output.find("error: [save_sharded] the ranks lost contact while saving to '" + d +
                                       "/fsdp'; the checkpoint saved there before (if any) is unchanged: "),
            std::string::npos)
      << crash.dump();
  EXPECT_NE(crash.ranks[0].output.find("rank 1 never arrived"), std::string::npos) << crash.dump();
  auto after_crash = dist::load_full_checkpoint(d + "/fsdp");
  expect_same_dicts(after_crash.model, ref);
  EXPECT_TRUE(after_crash.optimizer == from2.optimizer);
  // The next save (the same training again) replaces it and removes the crashed save's leftovers.
  size_t leftovers = 0;
  for (const auto& e : fs::directory_iterator(d + "/fsdp")) leftovers += e.path().filename().string()[0] == '.';
  EXPECT_EQ(leftovers, 1u);  // rank 1's temporary
  auto again = run_ranks("ckpt_fsdp_save", 2, 60, {env});
  ASSERT_TRUE(again.all_ok()) << again.dump();
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(d + "/fsdp")) files.push_back(e.path().filename().string());
  EXPECT_EQ(files.size(), 3u) << ::testing::PrintToString(files);
  expect_same_dicts(dist::load_full_checkpoint(d + "/fsdp").model, ref);

  // A checkpoint of another model.
  auto wrong = run_ranks("ckpt_fsdp_wrong_model", 2, 60, {env});
  ASSERT_TRUE(wrong.all_ok()) << wrong.dump();
  EXPECT_NE(wrong.ranks[1].output.find("error: [load_sharded] the checkpoint in '" + d +
                                       "/fsdp' does not match the model: shapes differ (checkpoint vs model) "
                                       "'fc1.weight: [24, 5] vs [25, 5]'"),
            std::string::npos)
      << wrong.dump();

  // A truncated shard, then a corrupted one: errors naming the file.
  std::string victim;
  // Rank 1's shard of the checkpoint (not the temporary the crashed save left behind).
  for (const auto& e : fs::directory_iterator(d + "/fsdp")) {
    const std::string name = e.path().filename().string();
    if (name.rfind("shard-", 0) == 0 && name.find("-00001-of-00002.safetensors") != std::string::npos)
      victim = e.path().string();
  }
  ASSERT_FALSE(victim.empty());
  const auto size = fs::file_size(victim);
  fs::copy_file(victim, d + "/backup");
  fs::resize_file(victim, size - 10);
  try {
    dist::load_full_checkpoint(d + "/fsdp");
    ADD_FAILURE() << "no error for a truncated shard";
  } catch (const ember::Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[load_sharded] cannot read shard file '" + victim + "': ", 0), 0u)
        << e.what();
  }
  fs::copy_file(d + "/backup", victim, fs::copy_options::overwrite_existing);
  {
    std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size - 5));
    f.put('\x7f');
  }
  try {
    dist::load_full_checkpoint(d + "/fsdp");
    ADD_FAILURE() << "no error for a corrupted shard";
  } catch (const ember::Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[load_sharded] cannot read shard file '" + victim + "': ", 0), 0u)
        << e.what();
  }
  fs::remove(d + "/fsdp/metadata.safetensors");
  try {
    dist::load_full_checkpoint(d + "/fsdp");
    ADD_FAILURE() << "no error without metadata";
  } catch (const ember::Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a sharded checkpoint"), std::string::npos) << e.what();
  }
  fs::remove_all(d);
}

TEST(ShardedCheckpoint, ZeroSavedOnTwoRanksLoadsOnThreeAndInOneProcess) {
  const std::string d = fresh_dir();
  const std::string env = "CKPT_DIR=" + d;
  auto saved = run_ranks("ckpt_zero_save", 2, 60, {env});
  ASSERT_TRUE(saved.all_ok()) << saved.dump();
  auto three = run_ranks("ckpt_zero_load", 3, 60, {env});
  ASSERT_TRUE(three.all_ok()) << three.dump();
  const Value ref = ember::load(d + "/zero_ref.safetensors");
  auto full = dist::load_full_checkpoint(d + "/zero");
  expect_same_dicts(full.model, ref.at("model").to_tensor_dict());
  ember::save(full.optimizer, d + "/full_optim.safetensors");
  EXPECT_TRUE(ember::load(d + "/full_optim.safetensors") == ref.at("optim"));
  fs::remove_all(d);
}
