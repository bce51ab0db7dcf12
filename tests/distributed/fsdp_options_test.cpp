// FullyShardedDataParallel's mixed precision, prefetching and no_sync on real processes:
// bf16 training within bf16 tolerance of float32 with float32 shards and bf16 compute;
// prefetching bit-identical to none for both sharding strategies; no_sync accumulation
// equal to one step on the concatenated batch and to DDP's no_sync.

#include <gtest/gtest.h>

#include <cmath>
#include <iomanip>

#include "ember/distributed/ddp.h"
#include "ember/distributed/distributed.h"
#include "ember/distributed/fsdp.h"
#include "ember/ember.h"
#include "tests/distributed/harness.h"

namespace dist = ember::distributed;
namespace nn = ember::nn;
namespace optim = ember::optim;
using ember::Tensor;
using nn::parallel::FSDPOptions;
using nn::parallel::FullyShardedDataParallel;

namespace fsdp_options_test {

// A linear layer that records the dtypes and sizes its forward sees.
struct ProbeLinearImpl : nn::Module {
  ProbeLinearImpl(int64_t in, int64_t out) : Module("ProbeLinear") {
    nn::Linear init(in, out);
    weight = register_parameter("weight", init->weight.detach().clone());
    bias = register_parameter("bias", init->bias.detach().clone());
  }
  Tensor forward(const Tensor& x) override {
    weight_dtypes.push_back(weight.dtype());
    input_dtypes.push_back(x.dtype());
    weight_numels.push_back(weight.numel());
    return nn::functional::linear(x, weight, bias);
  }
  Tensor weight, bias;
  std::vector<ember::DType> weight_dtypes, input_dtypes;
  std::vector<int64_t> weight_numels;
};
EMBER_MODULE(ProbeLinear);

// Three units (fc1, probe, fc3) and a root unit (scale), plus a float buffer.
struct PNetImpl : nn::Module {
  PNetImpl() : Module("PNet") {
    fc1 = register_module("fc1", nn::Linear(6, 32));
    probe = register_module("probe", ProbeLinear(32, 16));
    fc3 = register_module("fc3", nn::Linear(16, 3));
    scale = register_parameter("scale", ember::ones({3}));
    shift = register_buffer("shift", ember::full({3}, 0.125));
  }
  Tensor forward(const Tensor& x) override { return fc3(probe(fc1(x).relu()).tanh()) * scale + shift; }
  nn::Linear fc1{nullptr}, fc3{nullptr};
  ProbeLinear probe{nullptr};
  Tensor scale, shift;
};
EMBER_MODULE(PNet);

// |a - b| <= tol * max|b| elementwise.
void expect_close(const Tensor& a, const Tensor& b, const std::string& what, double tol) {
  auto x = a.to(ember::kFloat64).contiguous().to_vector<double>();
  auto y = b.to(ember::kFloat64).contiguous().to_vector<double>();
  WCHECK(x.size() == y.size(), << what << ": " << x.size() << " vs " << y.size() << " elements");
  double scale = 0;
  for (double v : y) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < x.size(); ++i)
    WCHECK(std::abs(x[i] - y[i]) <= tol * scale + 1e-12,
           << what << "[" << i << "]: " << std::setprecision(10) << x[i] << " vs " << y[i]);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return (a.to(ember::kFloat64) - b.to(ember::kFloat64)).abs().max().item<double>();
}

// bf16 MixedPrecision against float32 FSDP: same losses and parameters within bf16
// tolerance, float32 shards and gradients, bf16 parameters and inputs inside the units,
// half the gathered bytes, buffers cast and given back in float32.
DIST_SCENARIO(fsdp_mixed_precision) {
  dist::init_process_group({.backend = dist_test::backend(), .timeout = std::chrono::seconds(20)});
  const int rank = dist::get_rank(), world = dist::get_world_size();
  ember::manual_seed(0);
  PNet a;
  ember::manual_seed(0);
  PNet b;
  const auto initial = a->state_dict();
  FullyShardedDataParallel ref(a);
  FSDPOptions o;
  o.mixed_precision = nn::parallel::MixedPrecision{
      .param_dtype = ember::kBFloat16, .reduce_dtype = ember::kBFloat16, .buffer_dtype = ember::kBFloat16};
  o.cpu_offload.offload_params = true;  // accepted, a no-op on the CPU
  FullyShardedDataParallel mp(b, o);
  WCHECK(b->shift.dtype() == ember::kBFloat16, << b->shift.dtype());
  // The other strategy with every prefetch: the same bf16 arithmetic, so the same bits.
  ember::manual_seed(0);
  PNet c;
  o.sharding_strategy = nn::parallel::ShardingStrategy::SHARD_GRAD_OP;
  o.backward_prefetch = nn::parallel::BackwardPrefetch::BACKWARD_PRE;
  o.forward_prefetch = true;
  FullyShardedDataParallel mp_prefetch(c, o);
  optim::SGD opt_a(ref->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  optim::SGD opt_b(mp->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  optim::SGD opt_c(mp_prefetch->parameters(), optim::SGDOptions(0.05).momentum(0.9));

  ember::Generator gen(11);
  const int64_t per = 6;
  Tensor X = ember::randn({per * world, 6}, gen), Y = ember::randn({per * world, 3}, gen);
  Tensor xr = X.narrow(0, rank * per, per), yr = Y.narrow(0, rank * per, per);
  for (int step = 0; step < 4; ++step) {
    opt_a.zero_grad();
    Tensor la = nn::functional::mse_loss(ref(xr), yr);
    la.backward();
    opt_a.step();
    opt_b.zero_grad();
    Tensor out = mp(xr);
    WCHECK(out.dtype() == ember::kBFloat16, << out.dtype());
    Tensor lb = nn::functional::mse_loss(out.to(ember::kFloat32), yr);
    lb.backward();
    for (const Tensor& s : mp->parameters()) {
      WCHECK(s.dtype() == ember::kFloat32 && s.grad().defined() && s.grad().dtype() == ember::kFloat32,
             << "shard " << s.dtype() << ", gradient " << (s.grad().defined() ? s.grad().dtype() : s.dtype()));
    }
    opt_b.step();
    opt_c.zero_grad();
    Tensor lc = nn::functional::mse_loss(mp_prefetch(xr).to(ember::kFloat32), yr);
    lc.backward();
    opt_c.step();
    expect_close(lb, la, "loss at step " + std::to_string(step), 2e-2);
    WCHECK(ember::equal(lc, lb), << "SHARD_GRAD_OP with prefetch: " << lc.item<float>() << " vs " << lb.item<float>());
    WCHECK(mp->memory_stats().gathered_bytes_now == 0);
  }
  // The unit saw its gathered parameters and its input in bf16 in every forward.
  WCHECK(b->probe->weight_dtypes.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    WCHECK(b->probe->weight_dtypes[i] == ember::kBFloat16, << b->probe->weight_dtypes[i]);
    WCHECK(b->probe->input_dtypes[i] == ember::kBFloat16, << b->probe->input_dtypes[i]);
    WCHECK(b->probe->weight_numels[i] == 32 * 16);
  }
  for (ember::DType t : a->probe->weight_dtypes) WCHECK(t == ember::kFloat32);
  // Half the bytes gathered (bf16 buffers): the same units, each half the size.
  WCHECK(2 * mp->memory_stats().peak_gathered_bytes == ref->memory_stats().peak_gathered_bytes,
         << mp->memory_stats().peak_gathered_bytes << " vs " << ref->memory_stats().peak_gathered_bytes);

  auto full_a = ref->full_state_dict(), full_b = mp->full_state_dict();
  double moved = 0, mp_diff = 0;
  for (const auto& item : full_a) {
    const Tensor& tb = full_b[item.key()];
    WCHECK(tb.dtype() == ember::kFloat32, << item.key() << " " << tb.dtype());
    expect_close(tb, item.value(), item.key(), 2e-2);
    moved = std::max(moved, max_abs_diff(item.value(), initial[item.key()]));
    mp_diff = std::max(mp_diff, max_abs_diff(tb, item.value()));
  }
  WCHECK(moved > 1e-2, << "training did not move the parameters: " << moved);
  WCHECK(mp_diff > 0, << "bf16 training came out identical to float32: was it computed in float32?");
  WCHECK(mp_prefetch->prefetch_count() > 0);
  for (size_t k = 0; k < 4; ++k) WCHECK(ember::equal(mp_prefetch->shard(k), mp->shard(k)), << "unit " << k);
  WCHECK(ember::equal(full_b["shift"], ember::full({3}, 0.125)));
  std::cout << "max |bf16 - float32| over parameters after 4 steps: " << mp_diff << " (largest update " << moved << ")"
            << std::endl;

  // Every rank computes the same outputs on the same input.
  Tensor probe_in = X.narrow(0, 0, 4);
  Tensor mine;
  {
    ember::NoGradGuard ng;
    mine = mp(probe_in).to(ember::kFloat32).contiguous();
  }
  std::vector<Tensor> all;
  for (int r = 0; r < world; ++r) all.push_back(ember::empty_like(mine));
  dist::all_gather(all, mine);
  for (int r = 0; r < world; ++r) WCHECK(ember::equal(all[r], all[0]), << "rank " << r << " differs from rank 0");

  // A dtype that is not floating point is refused, naming the field.
  try {
    FSDPOptions bad;
    bad.mixed_precision = nn::parallel::MixedPrecision{.reduce_dtype = ember::kInt64};
    ember::manual_seed(0);
    PNet c;
    FullyShardedDataParallel wrapped(c, bad);
    WCHECK(false, << "no error");
  } catch (const ember::Error& e) {
    WCHECK(std::string(e.what()).find(
               "[FullyShardedDataParallel] MixedPrecision.reduce_dtype must be a floating-point dtype, got int64") == 0,
           << e.what());
  }
  dist::destroy_process_group();
  return 0;
}

// Prefetching changes when the all-gathers start, never what they deliver: each variant's
// losses and shards equal the variant without prefetching bit for bit, with the same
// number of collectives, for both sharding strategies.
DIST_SCENARIO(fsdp_prefetch) {
  dist::init_process_group({.backend = dist_test::backend(), .timeout = std::chrono::seconds(20)});
  const int rank = dist::get_rank(), world = dist::get_world_size();
  using nn::parallel::BackwardPrefetch;
  using nn::parallel::ShardingStrategy;
  struct Variant {
    std::optional<BackwardPrefetch> backward;
    bool forward;
  };
  const std::vector<Variant> variants{
      {std::nullopt, false}, {BackwardPrefetch::BACKWARD_PRE, false}, {BackwardPrefetch::BACKWARD_POST, true}};
  ember::Generator gen(5);
  Tensor x = ember::randn({4 * world, 6}, gen).narrow(0, rank * 4, 4),
         y = ember::randn({4 * world, 3}, gen).narrow(0, rank * 4, 4);
  const int steps = 4;
  for (ShardingStrategy strategy : {ShardingStrategy::FULL_SHARD, ShardingStrategy::SHARD_GRAD_OP}) {
    const bool full_shard = strategy == ShardingStrategy::FULL_SHARD;
    std::vector<PNet> nets;
    std::vector<FullyShardedDataParallel> wrapped;
    std::vector<std::unique_ptr<optim::Adam>> opts;
    for (const Variant& v : variants) {
      ember::manual_seed(0);
      nets.emplace_back();
      FSDPOptions o;
      o.sharding_strategy = strategy;
      o.backward_prefetch = v.backward;
      o.forward_prefetch = v.forward;
      wrapped.emplace_back(nets.back(), o);
      opts.push_back(std::make_unique<optim::Adam>(wrapped.back()->parameters(), optim::AdamOptions(1e-2)));
    }
    const auto& group = wrapped[0]->process_group();
    for (int step = 0; step < steps; ++step) {
      std::vector<float> losses;
      std::vector<uint64_t> collectives;
      for (size_t i = 0; i < variants.size(); ++i) {
        const uint64_t s0 = group->sequence_number();
        opts[i]->zero_grad();
        Tensor loss = nn::functional::mse_loss(wrapped[i](x), y);
        loss.backward();
        opts[i]->step();
        collectives.push_back(group->sequence_number() - s0);
        losses.push_back(loss.item<float>());
        WCHECK(wrapped[i]->memory_stats().gathered_bytes_now == 0, << "variant " << i << " left units gathered");
      }
      for (size_t i = 1; i < variants.size(); ++i) {
        WCHECK(losses[i] == losses[0], << "variant " << i << " step " << step << ": " << std::setprecision(10)
                                       << losses[i] << " vs " << losses[0]);
        WCHECK(collectives[i] == collectives[0],
               << "variant " << i << ": " << collectives[i] << " vs " << collectives[0]);
      }
    }
    for (size_t i = 1; i < variants.size(); ++i) {
      for (size_t k = 0; k < 4; ++k)
        WCHECK(ember::equal(wrapped[i]->shard(k), wrapped[0]->shard(k)), << "variant " << i << " unit " << k);
    }
    // What was prefetched: in backward (3 units: fc3 prefetches probe, probe prefetches
    // fc1) only when FULL_SHARD freed the units after forward; in forward (fc1 prefetches
    // probe, probe prefetches fc3) from the second step on, once an order was recorded.
    const int64_t backward_each = full_shard ? 2 * steps : 0, forward_each = 2 * (steps - 1);
    WCHECK(wrapped[0]->prefetch_count() == 0);
    WCHECK(wrapped[1]->prefetch_count() == backward_each, << wrapped[1]->prefetch_count());
    WCHECK(wrapped[2]->prefetch_count() == backward_each + forward_each, << wrapped[2]->prefetch_count());
    // FULL_SHARD: one more unit is materialized at a time while a prefetch is in flight.
    const int64_t peak0 = wrapped[0]->memory_stats().peak_gathered_bytes;
    for (size_t i = 1; i < variants.size(); ++i) {
      const int64_t peak = wrapped[i]->memory_stats().peak_gathered_bytes;
      WCHECK(full_shard ? peak > peak0 : peak == peak0, << "variant " << i << ": " << peak << " vs " << peak0);
    }
  }
  dist::destroy_process_group();
  return 0;
}

// Gradient accumulation: a micro-batch under no_sync, then one outside it, steps like one
// batch of both (the losses halved), and like DDP's no_sync; no reduce-scatter runs under
// no_sync, and the unsharded sums are freed by the synchronized backward.
DIST_SCENARIO(fsdp_no_sync) {
  dist::init_process_group({.backend = dist_test::backend(), .timeout = std::chrono::seconds(20)});
  const int rank = dist::get_rank(), world = dist::get_world_size();
  auto build = [] {
    ember::manual_seed(0);
    return PNet();
  };
  PNet a = build(), b = build(), c = build(), d = build(), e = build();
  nn::parallel::DistributedDataParallel ddp(a);
  FullyShardedDataParallel acc(b), whole(c);
  // The same with bf16 compute: unsharded sums in float32, one bf16 reduce-scatter.
  FSDPOptions o;
  o.mixed_precision = nn::parallel::MixedPrecision{.param_dtype = ember::kBFloat16};
  FullyShardedDataParallel acc_bf16(d, o), whole_bf16(e, o);
  optim::SGD opt_a(a->parameters(), optim::SGDOptions(0.1));
  opt_a.set_accumulation_steps(2);  // DDP accumulates in .grad
  optim::SGD opt_d(acc_bf16->parameters(), optim::SGDOptions(0.1));
  optim::SGD opt_e(whole_bf16->parameters(), optim::SGDOptions(0.1));
  optim::SGD opt_b(acc->parameters(), optim::SGDOptions(0.1));
  optim::SGD opt_c(whole->parameters(), optim::SGDOptions(0.1));
  int64_t padded_bytes = 0;
  for (size_t k = 0; k < 4; ++k) padded_bytes += acc->shard(k).numel() * world * 4;
  const auto& group = acc->process_group();
  ember::Generator gen(3);
  const int64_t per = 4;  // rows per micro-batch and rank
  for (int round = 0; round < 2; ++round) {
    Tensor X = ember::randn({2 * per * world, 6}, gen), Y = ember::randn({2 * per * world, 3}, gen);
    // This rank's rows: [first micro-batch | second micro-batch].
    Tensor xr = X.narrow(0, rank * 2 * per, 2 * per), yr = Y.narrow(0, rank * 2 * per, 2 * per);
    Tensor x1 = xr.narrow(0, 0, per), y1 = yr.narrow(0, 0, per);
    Tensor x2 = xr.narrow(0, per, per), y2 = yr.narrow(0, per, per);

    opt_a.zero_grad();
    {
      auto guard = ddp->no_sync();
      (nn::functional::mse_loss(ddp(x1), y1) * 0.5).backward();
    }
    (nn::functional::mse_loss(ddp(x2), y2) * 0.5).backward();
    opt_a.step();

    opt_b.zero_grad();
    const uint64_t s0 = group->sequence_number();
    {
      auto guard = acc->no_sync();
      (nn::functional::mse_loss(acc(x1), y1) * 0.5).backward();
    }
    const uint64_t s1 = group->sequence_number();
    // Forward gathers 3 units and the root, backward the 3 units again: no reduce-scatter.
    WCHECK(s1 - s0 == 7, << "collectives under no_sync: " << s1 - s0);
    WCHECK(acc->memory_stats().accumulated_gradient_bytes == padded_bytes,
           << acc->memory_stats().accumulated_gradient_bytes);
    WCHECK(acc->memory_stats().gathered_bytes_now == 0);
    (nn::functional::mse_loss(acc(x2), y2) * 0.5).backward();
    WCHECK(group->sequence_number() - s1 == 11, << "collectives after no_sync: " << group->sequence_number() - s1);
    WCHECK(acc->memory_stats().accumulated_gradient_bytes == 0);
    opt_b.step();

    opt_c.zero_grad();
    nn::functional::mse_loss(whole(xr), yr).backward();
    opt_c.step();

    opt_d.zero_grad();
    {
      // The forward outside, the backward inside: the backward decides (torch's FSDP).
      Tensor first = nn::functional::mse_loss(acc_bf16(x1).to(ember::kFloat32), y1) * 0.5;
      auto guard = acc_bf16->no_sync();
      first.backward();
    }
    WCHECK(acc_bf16->memory_stats().accumulated_gradient_bytes == padded_bytes);
    (nn::functional::mse_loss(acc_bf16(x2).to(ember::kFloat32), y2) * 0.5).backward();
    opt_d.step();
    opt_e.zero_grad();
    nn::functional::mse_loss(whole_bf16(xr).to(ember::kFloat32), yr).backward();
    opt_e.step();

    auto full_b = acc->full_state_dict(), full_c = whole->full_state_dict();
    auto full_d = acc_bf16->full_state_dict(), full_e = whole_bf16->full_state_dict();
    auto ref = a->state_dict();
    bool same_as_ddp = true;
    for (const auto& item : ref) {
      expect_close(full_b[item.key()], full_c[item.key()], "vs one batch: " + item.key(), 1e-5);
      expect_close(full_b[item.key()], item.value(), "vs DDP no_sync: " + item.key(), 1e-6);
      same_as_ddp = same_as_ddp && ember::equal(full_b[item.key()], item.value());
      expect_close(full_d[item.key()], full_e[item.key()], "bf16 vs one batch: " + item.key(), 2e-2);
    }
    std::cout << "round " << round << ": bit-identical to DDP's no_sync " << same_as_ddp << std::endl;
  }
  dist::destroy_process_group();
  return 0;
}

}  // namespace fsdp_options_test

using dist_test::run_ranks;

TEST(FullyShardedDataParallel, MixedPrecisionBf16TwoRanks) {
  auto r = run_ranks("fsdp_mixed_precision", 2, 60);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  std::cout << r.ranks[0].output;
}

TEST(FullyShardedDataParallel, PrefetchIsBitIdenticalThreeRanks) {
  auto r = run_ranks("fsdp_prefetch", 3, 90);
  ASSERT_TRUE(r.all_ok()) << r.dump();
}

TEST(FullyShardedDataParallel, NoSyncAccumulationTwoRanks) {
  auto r = run_ranks("fsdp_no_sync", 2, 60);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  std::cout << r.ranks[0].output;
}

// The same scenarios on the MPI backend (its async collectives carry the prefetches).
TEST(FullyShardedDataParallel, MixedPrecisionPrefetchNoSyncOnMPI) {
  const std::string why = dist_test::mpi_skip_reason();
  if (!why.empty()) GTEST_SKIP() << why;
  for (const auto& [scenario, ranks] :
       {std::pair{"fsdp_mixed_precision", 2}, std::pair{"fsdp_prefetch", 3}, std::pair{"fsdp_no_sync", 2}}) {
    auto r = dist_test::run_mpi(scenario, ranks, 120);
    ASSERT_TRUE(r.all_ok()) << scenario << "\n" << r.dump();
  }
}
