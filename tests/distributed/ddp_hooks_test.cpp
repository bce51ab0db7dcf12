// DistributedDataParallel's communication hooks, gradient_as_bucket_view and static_graph
// on real processes: each is compared with a twin model under plain DDP (same
// initialization, same batches), bit for bit where the arithmetic is the same.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iomanip>

#include "ember/autograd/autograd_meta.h"
#include "ember/distributed/comm_hooks.h"
#include "ember/distributed/ddp.h"
#include "ember/distributed/distributed.h"
#include "ember/ember.h"
#include "tests/distributed/harness.h"

namespace dist = ember::distributed;
namespace nn = ember::nn;
namespace hooks = ember::distributed::algorithms::ddp_comm_hooks::default_hooks;
using ember::Tensor;

namespace ddp_hooks_test {

// fc2 and fc1 take part in the loss; `spare` only when use_spare is set.
struct NetImpl : nn::Module {
  NetImpl() : Module("Net") {
    fc1 = register_module("fc1", nn::Linear(6, 16));
    fc2 = register_module("fc2", nn::Linear(16, 3));
    spare = register_module("spare", nn::Linear(3, 3));
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = fc2(fc1(x).relu());
    return use_spare ? spare(y) : y;
  }
  nn::Linear fc1{nullptr}, fc2{nullptr}, spare{nullptr};
  bool use_spare = false;
};
EMBER_MODULE(Net);

// Two identical models (seed 0) and this rank's share of a fixed batch. Without
// spare_trains, `spare` does not require grad (DDP leaves it out).
struct Setup {
  explicit Setup(bool spare_trains) {
    ember::manual_seed(0);
    a = Net();
    ember::manual_seed(0);
    b = Net();
    if (!spare_trains) {
      for (Net* n : {&a, &b}) {
        (*n)->spare->weight.requires_grad_(false);
        (*n)->spare->bias.requires_grad_(false);
      }
    }
    ember::Generator gen(11);
    const int world = dist::get_world_size(), rank = dist::get_rank();
    Tensor X = ember::randn({4 * world, 6}, gen), Y = ember::randn({4 * world, 3}, gen);
    x = X.narrow(0, 4 * rank, 4);
    y = Y.narrow(0, 4 * rank, 4);
  }
  Net a{nullptr}, b{nullptr};
  Tensor x, y;
};

Tensor loss_of(nn::parallel::DistributedDataParallel& ddp, const Setup& s) {
  return nn::functional::mse_loss(ddp(s.x), s.y);
}

// Every bucket in its own bucket: ~10 bytes.
nn::parallel::DDPOptions tiny_buckets() {
  nn::parallel::DDPOptions o;
  o.bucket_cap_mb = 0.00001;
  o.first_bucket_mb = 0.00001;
  return o;
}

double env_double(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v ? std::atof(v) : fallback;
}

void init() { dist::init_process_group({.backend = dist_test::backend(), .timeout = std::chrono::seconds(20)}); }

// Both parameter lists' gradients bit for bit (undefined where the other's is).
void expect_same_grads(const std::vector<Tensor>& p, const std::vector<Tensor>& q, const std::string& what) {
  for (size_t i = 0; i < p.size(); ++i) {
    WCHECK(p[i].grad().defined() == q[i].grad().defined(), << what << ": grad " << i << " defined on one side only");
    if (p[i].grad().defined()) WCHECK(ember::equal(p[i].grad(), q[i].grad()), << what << ": grad " << i << " differs");
  }
}

uint64_t digest(const std::vector<Tensor>& ts) {
  uint64_t h = 1469598103934665603ull;
  for (const auto& t : ts) {
    if (!t.defined()) continue;
    for (float f : t.contiguous().to_vector<float>()) {
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      h = (h ^ bits) * 1099511628211ull;
    }
  }
  return h;
}

std::vector<Tensor> grads_of(const std::vector<Tensor>& params) {
  std::vector<Tensor> out;
  for (const auto& p : params) out.push_back(p.grad());
  return out;
}

// A hook that records what it sees, reduces like allreduce_hook into a new tensor and
// doubles it: the gradients must come out twice plain DDP's.
struct Seen {
  size_t index;
  int64_t numel;
  bool is_last;
  size_t nparams;
  bool grads_are_views;
  bool during_backward;  // fc1.weight (reduced last) had no gradient yet
};

DIST_SCENARIO(ddp_hook_sees_buckets) {
  init();
  Setup s(/*spare_trains=*/false);
  nn::parallel::DistributedDataParallel hooked(s.a, tiny_buckets()), plain(s.b, tiny_buckets());
  auto seen = std::make_shared<std::vector<Seen>>();
  Tensor last = s.a->fc1->weight;
  hooked->register_comm_hook(
      hooked->process_group(), [seen, last](dist::ProcessGroupPtr& group, dist::GradBucket& bucket) {
        bool views = true;
        int64_t total = 0;
        const auto grads = bucket.gradients();
        for (size_t k = 0; k < grads.size(); ++k) {
          views = views && grads[k].is_alias_of(bucket.buffer()) && grads[k].sizes() == bucket.parameters()[k].sizes();
          total += grads[k].numel();
        }
        views = views && total == bucket.buffer().numel();
        seen->push_back({bucket.index(), bucket.buffer().numel(), bucket.is_last(), bucket.parameters().size(), views,
                         !last.grad().defined()});
        Tensor copy = bucket.buffer().clone();
        copy.div_(group->size());
        auto work = dist::all_reduce(copy, dist::ReduceOp::SUM, group, /*async_op=*/true);
        return dist::Future::from_work(work, copy)->then([](const Tensor& v) { return v * 2.0; });
      });
  auto p = s.a->parameters(), q = s.b->parameters();
  for (int step = 0; step < 3; ++step) {
    seen->clear();
    loss_of(hooked, s).backward();
    loss_of(plain, s).backward();
    // fc1 and fc2: 4 parameters, one bucket each.
    const auto buffers = hooked->bucket_buffers();
    WCHECK(seen->size() == buffers.size(),
           << "step " << step << ": " << seen->size() << " hook calls for " << buffers.size() << " buckets");
    for (size_t k = 0; k < seen->size(); ++k) {
      const Seen& c = (*seen)[k];
      WCHECK(c.index == k, << "step " << step << ": call " << k << " had index " << c.index);
      WCHECK(c.numel == buffers[k].numel(), << "bucket " << k << ": " << c.numel << " vs " << buffers[k].numel());
      WCHECK(c.is_last == (k + 1 == buffers.size()), << "bucket " << k);
      WCHECK(c.nparams == 1 && c.grads_are_views, << "bucket " << k);
      // Communication starts while backward still runs.
      WCHECK(c.during_backward == (k + 1 < seen->size()), << "bucket " << k);
    }
    for (size_t i = 0; i < p.size(); ++i) {
      if (!q[i].grad().defined()) continue;
      WCHECK(ember::equal(p[i].grad(), q[i].grad() * 2.0), << "step " << step << ": grad " << i << " is not doubled");
      p[i].mutable_grad() = Tensor();
      q[i].mutable_grad() = Tensor();
    }
  }
  std::cout << "calls per step " << seen->size() << std::endl;
  dist::destroy_process_group();
  return 0;
}

// HOOK=allreduce|fp16|bf16 against plain DDP, three SGD steps.
DIST_SCENARIO(ddp_builtin_hook) {
  init();
  const std::string which = std::getenv("HOOK");
  Setup s(/*spare_trains=*/false);
  ember::manual_seed(0);
  Net local;  // this rank's own gradients, to bound the rounding
  nn::parallel::DistributedDataParallel hooked(s.a), plain(s.b);
  if (which == "allreduce") {
    hooked->register_comm_hook(hooked->process_group(), hooks::allreduce_hook);
  } else if (which == "fp16") {
    hooked->register_comm_hook(nullptr, hooks::fp16_compress_hook);  // null: the default group
  } else {
    hooked->register_comm_hook(hooked->process_group(), hooks::bf16_compress_hook);
  }
  WCHECK(hooked->bucket_buffers().size() == 1);
  const ember::DType low = which == "bf16" ? ember::kBFloat16 : ember::kFloat16;
  const double unit = which == "bf16" ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);  // unit roundoff
  auto p = s.a->parameters(), q = s.b->parameters(), l = local->parameters();
  p.resize(4);
  q.resize(4);
  ember::optim::SGD opt_a(p, ember::optim::SGDOptions(0.1)), opt_b(q, ember::optim::SGDOptions(0.1));
  std::vector<Tensor> hooked_grads;
  for (int step = 0; step < 3; ++step) {
    if (which != "allreduce") {
      // The same parameters for both, so that only the reduction differs.
      ember::NoGradGuard ng;
      for (size_t i = 0; i < p.size(); ++i) {
        q[i].copy_(p[i]);
        l[i].copy_(p[i]);
      }
    }
    opt_a.zero_grad();
    opt_b.zero_grad();
    loss_of(hooked, s).backward();
    loss_of(plain, s).backward();
    if (which == "allreduce") {
      expect_same_grads(p, q, "step " + std::to_string(step));
    } else {
      // Each rank's values are rounded to `low`, and so is their mean: the error is at most
      // about 2 * unit * (the largest local gradient on any rank).
      local->zero_grad();
      nn::functional::mse_loss(local(s.x), s.y).backward();
      bool some_differ = false;
      for (size_t i = 0; i < p.size(); ++i) {
        Tensor local_max = l[i].grad().abs().max().reshape({1});
        dist::all_reduce(local_max, dist::ReduceOp::MAX);
        const double scale = local_max.item<float>();
        const Tensor& g = p[i].grad();
        // The values went through `low`: casting there and back changes nothing.
        WCHECK(ember::equal(g, g.to(low).to(ember::kFloat32)), << "grad " << i << " is not a " << which << " value");
        auto x = g.contiguous().to_vector<float>(), y = q[i].grad().contiguous().to_vector<float>();
        for (size_t k = 0; k < x.size(); ++k) {
          some_differ = some_differ || x[k] != y[k];
          WCHECK(std::abs(double(x[k]) - y[k]) <= 4 * unit * scale, << "step " << step << " grad " << i << "[" << k
                                                                    << "]: " << std::setprecision(9) << x[k] << " vs "
                                                                    << y[k] << " (scale " << scale << ")");
        }
      }
      WCHECK(some_differ, << "the " << which << " hook gave float32's gradients exactly");
    }
    hooked_grads = grads_of(p);
    opt_a.step();
    opt_b.step();
  }
  if (which == "allreduce") {
    for (size_t i = 0; i < p.size(); ++i) WCHECK(ember::equal(p[i], q[i]), << "parameter " << i);
  }
  std::cout << "digest " << std::hex << digest(hooked_grads) << " " << digest(p) << std::dec << std::endl;
  dist::destroy_process_group();
  return 0;
}

// gradient_as_bucket_view against the copying mode: views of the buckets, the same values
// bit for bit, through SGD with momentum, both zero_grad modes, no_sync and a rebuild.
DIST_SCENARIO(ddp_bucket_view) {
  init();
  // VIEW_UNUSED=1: spare trains but is never used (find_unused_parameters, no rebuild);
  // otherwise it is frozen and the buckets are rebuilt after the first step.
  const bool unused = env_double("VIEW_UNUSED", 0) != 0;
  Setup s(/*spare_trains=*/unused);
  nn::parallel::DDPOptions opts;
  opts.bucket_cap_mb = env_double("DDP_BUCKET_MB", 25);
  opts.first_bucket_mb = opts.bucket_cap_mb;
  opts.find_unused_parameters = unused;
  nn::parallel::DDPOptions view_opts = opts;
  view_opts.gradient_as_bucket_view = true;
  nn::parallel::DistributedDataParallel view(s.a, view_opts), copy(s.b, opts);
  auto p = s.a->parameters(), q = s.b->parameters();
  ember::optim::SGD opt_a(p, ember::optim::SGDOptions(0.1).momentum(0.9)),
      opt_b(q, ember::optim::SGDOptions(0.1).momentum(0.9));
  auto check_views = [&](const std::string& when) {
    const auto buffers = view->bucket_buffers();
    for (size_t i = 0; i < p.size(); ++i) {
      const Tensor& g = p[i].grad();
      if (!g.defined()) continue;
      bool found = false;
      for (const auto& buf : buffers) {
        const auto* lo = static_cast<const char*>(buf.data_ptr());
        const auto* at = static_cast<const char*>(g.data_ptr());
        found = found || (g.is_alias_of(buf) && at >= lo && at + g.nbytes() <= lo + buf.nbytes());
      }
      WCHECK(found, << when << ": grad " << i << " is not a view of a bucket");
    }
  };
  for (int step = 0; step < 5; ++step) {
    const bool set_to_none = step == 2;
    opt_a.zero_grad(set_to_none);
    opt_b.zero_grad(set_to_none);
    if (!set_to_none && step > 0) {
      check_views("after zero_grad");
      for (const auto& buf : view->bucket_buffers()) WCHECK(buf.abs().sum().item<float>() == 0.f);
    }
    if (step == 3) {
      auto g1 = view->no_sync();
      auto g2 = copy->no_sync();
      loss_of(view, s).backward();
      loss_of(copy, s).backward();
    }
    loss_of(view, s).backward();
    loss_of(copy, s).backward();
    check_views("step " + std::to_string(step));
    expect_same_grads(p, q, "step " + std::to_string(step));
    // The optimizer's count of backward passes (Note [Counting accumulations]) agrees too.
    for (size_t i = 0; i < p.size(); ++i) {
      const auto* ma = p[i].impl()->autograd_meta();
      const auto* mb = q[i].impl()->autograd_meta();
      const uint32_t na = ma && ma->grad.defined() ? ma->grad_accumulations : 0;
      const uint32_t nb = mb && mb->grad.defined() ? mb->grad_accumulations : 0;
      WCHECK(na == nb && nb == (step == 3 ? 2u : 1u) * (i < 4 ? 1u : 0u),
             << "step " << step << " grad " << i << ": " << na << " vs " << nb << " backward passes");
    }
    WCHECK(!p[4].grad().defined(), << "the unused parameter got a gradient");
    WCHECK(view->buckets_rebuilt() == (!unused && step > 0), << "step " << step);
    opt_a.step();
    opt_b.step();
    for (size_t i = 0; i < p.size(); ++i) WCHECK(ember::equal(p[i], q[i]), << "step " << step << " parameter " << i);
  }
  // Two parameters in one bucket share its storage.
  WCHECK(view->bucket_buffers().size() > 1 || p[0].grad().is_alias_of(p[1].grad()));
  std::cout << "buckets " << view->bucket_buffers().size() << " digest " << std::hex << digest(p) << std::dec
            << std::endl;
  dist::destroy_process_group();
  return 0;
}

// static_graph against find_unused_parameters, with `spare` unused every step: the same
// gradients and parameters bit for bit; after the first step no used-parameter all-reduce
// (one collective per bucket), and the buckets are rebuilt.
DIST_SCENARIO(ddp_static_graph) {
  init();
  Setup s(/*spare_trains=*/true);
  ember::manual_seed(0);
  Net c;
  nn::parallel::DDPOptions dynamic = tiny_buckets(), stat = tiny_buckets();
  dynamic.find_unused_parameters = true;
  stat.static_graph = true;
  nn::parallel::DDPOptions both = dynamic;
  both.static_graph = true;
  nn::parallel::DistributedDataParallel a(s.a, stat), b(s.b, dynamic), cc(c, both);
  std::vector<nn::parallel::DistributedDataParallel*> ddps = {&a, &b, &cc};
  std::vector<std::vector<Tensor>> params = {s.a->parameters(), s.b->parameters(), c->parameters()};
  std::vector<std::unique_ptr<ember::optim::SGD>> opts;
  for (const auto& ps : params) {
    opts.push_back(std::make_unique<ember::optim::SGD>(ps, ember::optim::SGDOptions(0.1).momentum(0.9)));
  }
  for (int step = 0; step < 4; ++step) {
    std::vector<uint64_t> collectives;
    for (size_t k = 0; k < ddps.size(); ++k) {
      auto& ddp = *ddps[k];
      opts[k]->zero_grad();
      const uint64_t before = ddp->process_group()->sequence_number();
      loss_of(ddp, s).backward();
      collectives.push_back(ddp->process_group()->sequence_number() - before);
      WCHECK(!params[k][4].grad().defined(), << "model " << k << ": the unused parameter got a gradient");
    }
    expect_same_grads(params[0], params[1], "static vs dynamic, step " + std::to_string(step));
    expect_same_grads(params[2], params[1], "static+find_unused vs dynamic, step " + std::to_string(step));
    WCHECK(a->buckets_rebuilt() == (step > 0) && cc->buckets_rebuilt() == (step > 0) && !b->buckets_rebuilt(),
           << "step " << step);
    std::cout << "step " << step << " collectives " << collectives[0] << " " << collectives[1] << " " << collectives[2]
              << std::endl;
    if (step >= 2) {  // step 1 also broadcasts the rebuilt order
      WCHECK(collectives[0] == a->bucket_buffers().size(), << collectives[0]);
      WCHECK(collectives[2] == cc->bucket_buffers().size(), << collectives[2]);
      WCHECK(collectives[1] == b->bucket_buffers().size() + 1, << collectives[1]);
    }
    for (auto& o : opts) o->step();
  }
  for (size_t i = 0; i < params[0].size(); ++i) {
    WCHECK(ember::equal(params[0][i], params[1][i]) && ember::equal(params[2][i], params[1][i]), << "parameter " << i);
  }
  std::cout << "digest " << std::hex << digest(params[0]) << std::dec << std::endl;
  dist::destroy_process_group();
  return 0;
}

// A static graph whose used parameters change: the backward names the parameter.
DIST_SCENARIO(ddp_static_graph_changes) {
  init();
  Setup s(/*spare_trains=*/true);
  nn::parallel::DDPOptions opts;
  opts.static_graph = true;
  nn::parallel::DistributedDataParallel ddp(s.a, opts);
  for (int step = 0; step < 2; ++step) loss_of(ddp, s).backward();
  s.a->use_spare = true;
  try {
    loss_of(ddp, s).backward();
    std::cout << "no error" << std::endl;
    return 1;
  } catch (const ember::Error& e) {
    std::cout << "error: " << e.what() << std::endl;
  }
  dist::destroy_process_group();
  return 0;
}

// register_comm_hook twice, after a backward, and a hook whose result has the wrong size.
DIST_SCENARIO(ddp_hook_errors) {
  init();
  Setup s(/*spare_trains=*/false);
  nn::parallel::DistributedDataParallel ddp(s.a);
  ddp->register_comm_hook(ddp->process_group(), hooks::allreduce_hook);
  int errors = 0;
  try {
    ddp->register_comm_hook(ddp->process_group(), hooks::fp16_compress_hook);
  } catch (const ember::Error& e) {
    std::cout << "twice: " << e.what() << std::endl;
    ++errors;
  }
  nn::parallel::DistributedDataParallel late(s.b);
  loss_of(late, s).backward();
  try {
    late->register_comm_hook(late->process_group(), hooks::allreduce_hook);
  } catch (const ember::Error& e) {
    std::cout << "late: " << e.what() << std::endl;
    ++errors;
  }
  ember::manual_seed(0);
  Net c;
  c->spare->weight.requires_grad_(false);
  c->spare->bias.requires_grad_(false);
  nn::parallel::DistributedDataParallel bad(c);
  bad->register_comm_hook(
      0, [](int&, dist::GradBucket& bucket) { return dist::Future::completed(bucket.buffer().narrow(0, 0, 1)); });
  try {
    loss_of(bad, s).backward();
  } catch (const ember::Error& e) {
    std::cout << "size: " << e.what() << std::endl;
    ++errors;
  }
  WCHECK(errors == 3, << errors);
  dist::destroy_process_group();
  return 0;
}

}  // namespace ddp_hooks_test

using dist_test::run_ranks;

namespace {
// The hex words after "digest " in a rank's output.
std::string digest_of(const dist_test::RunResult& r, size_t rank) {
  const auto& out = r.ranks[rank].output;
  const auto pos = out.find("digest ");
  return pos == std::string::npos ? "" : out.substr(pos + 7, out.find('\n', pos) - pos - 7);
}
}  // namespace

TEST(DistributedDataParallelHooks, CustomHookSeesEveryBucketOnceAndItsResultIsTheGradient) {
  auto r = run_ranks("ddp_hook_sees_buckets", 2, 60);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  EXPECT_NE(r.ranks[0].output.find("calls per step 4"), std::string::npos) << r.dump();
}

TEST(DistributedDataParallelHooks, AllreduceHookBitIdenticalToNoHook) {
  auto r = run_ranks("ddp_builtin_hook", 2, 60, {"HOOK=allreduce"});
  ASSERT_TRUE(r.all_ok()) << r.dump();
  EXPECT_FALSE(digest_of(r, 0).empty());
  EXPECT_EQ(digest_of(r, 0), digest_of(r, 1));
}

TEST(DistributedDataParallelHooks, Fp16CompressWithinRoundingAndEqualOnAllRanks) {
  auto r = run_ranks("ddp_builtin_hook", 3, 60, {"HOOK=fp16"});
  ASSERT_TRUE(r.all_ok()) << r.dump();
  EXPECT_FALSE(digest_of(r, 0).empty());
  EXPECT_EQ(digest_of(r, 0), digest_of(r, 1));
  EXPECT_EQ(digest_of(r, 0), digest_of(r, 2));
  auto again = run_ranks("ddp_builtin_hook", 3, 60, {"HOOK=fp16"});
  ASSERT_TRUE(again.all_ok()) << again.dump();
  EXPECT_EQ(digest_of(r, 0), digest_of(again, 0));
}

TEST(DistributedDataParallelHooks, Bf16CompressWithinRoundingAndEqualOnAllRanks) {
  auto r = run_ranks("ddp_builtin_hook", 2, 60, {"HOOK=bf16"});
  ASSERT_TRUE(r.all_ok()) << r.dump();
  EXPECT_FALSE(digest_of(r, 0).empty());
  EXPECT_EQ(digest_of(r, 0), digest_of(r, 1));
}

TEST(DistributedDataParallelHooks, RegisterTwiceOrLateAndWrongResultSizeAreErrors) {
  auto r = run_ranks("ddp_hook_errors", 2, 60);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  const std::string& out = r.ranks[0].output;
  EXPECT_NE(out.find("twice: [DistributedDataParallel.register_comm_hook] a communication hook is already "
                     "registered"),
            std::string::npos)
      << r.dump();
  EXPECT_NE(out.find("late: [DistributedDataParallel.register_comm_hook] called after a backward pass"),
            std::string::npos)
      << r.dump();
  EXPECT_NE(out.find("size: [DistributedDataParallel.register_comm_hook] the future of bucket 0 holds 1 elements of "
                     "float32, but the bucket has"),
            std::string::npos)
      << r.dump();
}

TEST(DistributedDataParallelBucketView, GradsAreBucketViewsEqualToCopyingMode) {
  // One bucket per parameter, rebuilt after the first step.
  auto r = run_ranks("ddp_bucket_view", 2, 60, {"DDP_BUCKET_MB=0.00001"});
  ASSERT_TRUE(r.all_ok()) << r.dump();
  EXPECT_NE(r.ranks[0].output.find("buckets 4 "), std::string::npos) << r.dump();
  EXPECT_EQ(digest_of(r, 0), digest_of(r, 1));
}

TEST(DistributedDataParallelBucketView, OneBucketWithAnUnusedParameter) {
  auto r = run_ranks("ddp_bucket_view", 2, 60, {"VIEW_UNUSED=1"});
  ASSERT_TRUE(r.all_ok()) << r.dump();
  EXPECT_NE(r.ranks[0].output.find("buckets 1 "), std::string::npos) << r.dump();
}

TEST(DistributedDataParallelStaticGraph, EqualsDynamicModeWithAParameterUnusedEveryStep) {
  auto r = run_ranks("ddp_static_graph", 2, 60);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  // Six buckets each; the dynamic mode adds the all-reduce of the used parameters.
  EXPECT_NE(r.ranks[0].output.find("step 3 collectives 6 7 6"), std::string::npos) << r.dump();
  EXPECT_EQ(digest_of(r, 0), digest_of(r, 1));
}

TEST(DistributedDataParallelStaticGraph, ChangedGraphNamesTheParameter) {
  auto r = run_ranks("ddp_static_graph_changes", 2, 60);
  ASSERT_TRUE(r.all_ok()) << r.dump();
  EXPECT_NE(r.ranks[0].output.find("error: [DistributedDataParallel] parameter 'spare."), std::string::npos)
      << r.dump();
  EXPECT_NE(r.ranks[0].output.find("got a gradient, but none in the first iteration"), std::string::npos) << r.dump();
}

// The same scenarios on the MPI backend (mpirun, EMBER_TEST_BACKEND=mpi).
TEST(DistributedDataParallelHooks, HooksBucketViewsAndStaticGraphOnMPI) {
  const std::string why = dist_test::mpi_skip_reason();
  if (!why.empty()) GTEST_SKIP() << why;
  const std::vector<std::pair<std::string, std::vector<std::string>>> runs = {
      {"ddp_hook_sees_buckets", {}},
      {"ddp_builtin_hook", {"HOOK=fp16"}},
      {"ddp_bucket_view", {"VIEW_UNUSED=1"}},
      {"ddp_static_graph", {}},
  };
  for (const auto& [scenario, env] : runs) {
    auto r = dist_test::run_mpi(scenario, 2, 120, env);
    EXPECT_TRUE(r.all_ok()) << scenario << "\n" << r.dump();
  }
}
