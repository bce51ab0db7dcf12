// amp::AutocastGuard: the guard's state (nesting, threads), the op table against torch
// 1.13's CPU autocast (tests/amp/torch_autocast_cpu.txt, written by
// torch_autocast_table.py), the weight cast cache, and autograd through the casts.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "test_util.h"

namespace autocast_test {

using namespace ember;
namespace F = ember::nn::functional;

TEST(Autocast, GuardNestsAndRestores) {
  EXPECT_FALSE(amp::is_autocast_enabled());
  {
    amp::AutocastGuard outer;  // bfloat16 by default
    EXPECT_TRUE(amp::is_autocast_enabled());
    EXPECT_EQ(amp::get_autocast_dtype(), kBFloat16);
    {
      amp::AutocastGuard inner(kFloat16);
      EXPECT_EQ(amp::get_autocast_dtype(), kFloat16);
      {
        amp::AutocastGuard off(kBFloat16, false);
        EXPECT_FALSE(amp::is_autocast_enabled());
        EXPECT_EQ(matmul(ones({2, 2}), ones({2, 2})).dtype(), kFloat32);
      }
      EXPECT_TRUE(amp::is_autocast_enabled());
      EXPECT_EQ(matmul(ones({2, 2}), ones({2, 2})).dtype(), kFloat16);
    }
    EXPECT_EQ(amp::get_autocast_dtype(), kBFloat16);
  }
  EXPECT_FALSE(amp::is_autocast_enabled());
  EXPECT_EQ(matmul(ones({2, 2}), ones({2, 2})).dtype(), kFloat32);
}

TEST(Autocast, StateIsPerThread) {
  amp::AutocastGuard guard;
  bool other = true;
  std::thread([&] { other = amp::is_autocast_enabled(); }).join();
  EXPECT_FALSE(other);
  EXPECT_TRUE(amp::is_autocast_enabled());
}

TEST(Autocast, RefusesOtherDtypes) {
  ember::testing::ExpectError([] { amp::AutocastGuard g(kFloat64); }, {"[autocast]", "Float64", "bfloat16 or float16"});
  EXPECT_FALSE(amp::is_autocast_enabled());
}

TEST(Autocast, TableHasNoDuplicates) {
  std::set<std::string_view> names;
  for (const amp::OpRow& row : amp::autocast_ops()) EXPECT_TRUE(names.insert(row.name).second) << row.name;
  EXPECT_EQ(amp::policy_of("matmul"), amp::CastPolicy::LowerPrecision);
  EXPECT_EQ(amp::policy_of("softmax"), amp::CastPolicy::Float32);
}

// ---- the op table against torch 1.13 ----

using OpFn = std::function<Tensor(const std::function<Tensor(IntArrayRef)>&)>;

// The same ops and shapes as torch_autocast_table.py.
std::map<std::string, OpFn> ops() {
  auto lng = [](std::initializer_list<int64_t> v) { return tensor(std::vector<int64_t>(v)); };
  return {
      {"matmul", [](auto x) { return matmul(x({4, 4}), x({4, 4})); }},
      {"mm", [](auto x) { return mm(x({4, 4}), x({4, 4})); }},
      {"bmm", [](auto x) { return bmm(x({2, 4, 4}), x({2, 4, 4})); }},
      {"addmm", [](auto x) { return addmm(x({4, 4}), x({4, 4}), x({4, 4})); }},
      {"baddbmm", [](auto x) { return baddbmm(x({2, 4, 4}), x({2, 4, 4}), x({2, 4, 4})); }},
      {"linear", [](auto x) { return F::linear(x({3, 4}), x({5, 4}), x({5})); }},
      {"conv1d", [](auto x) { return conv1d(x({1, 2, 8}), x({3, 2, 3}), x({3})); }},
      {"conv2d", [](auto x) { return conv2d(x({1, 2, 8, 8}), x({3, 2, 3, 3}), x({3})); }},
      {"conv_transpose1d", [](auto x) { return conv_transpose1d(x({1, 2, 8}), x({2, 3, 3}), x({3})); }},
      {"conv_transpose2d", [](auto x) { return conv_transpose2d(x({1, 2, 8, 8}), x({2, 3, 3, 3}), x({3})); }},
      {"mse_loss", [](auto x) { return F::mse_loss(x({3, 4}), x({3, 4})); }},
      {"l1_loss", [](auto x) { return F::l1_loss(x({3, 4}), x({3, 4})); }},
      {"smooth_l1_loss", [](auto x) { return F::smooth_l1_loss(x({3, 4}), x({3, 4})); }},
      {"huber_loss", [](auto x) { return F::huber_loss(x({3, 4}), x({3, 4})); }},
      {"kl_div", [](auto x) { return F::kl_div(x({3, 4}), x({3, 4}), nn::Reduction::BatchMean); }},
      {"binary_cross_entropy",
       [](auto x) { return F::binary_cross_entropy(x({3, 4}).sigmoid(), x({3, 4}).sigmoid()); }},
      {"binary_cross_entropy_with_logits",
       [](auto x) { return F::binary_cross_entropy_with_logits(x({3, 4}), x({3, 4})); }},
      {"nll_loss", [lng](auto x) { return F::nll_loss(x({3, 4}), lng({0, 1, 2})); }},
      {"cross_entropy", [lng](auto x) { return F::cross_entropy(x({3, 4}), lng({0, 1, 2})); }},
      {"prod", [](auto x) { return x({3, 4}).prod(); }},
      {"softmax", [](auto x) { return softmax(x({3, 4}), 1); }},
      {"log_softmax", [](auto x) { return log_softmax(x({3, 4}), 1); }},
      {"layer_norm", [](auto x) { return F::layer_norm(x({3, 4}), {4}, x({4}), x({4})); }},
      {"group_norm", [](auto x) { return F::group_norm(x({2, 4, 3}), 2, x({4}), x({4})); }},
      // Running statistics stay float32 in ember (modules keep their buffers float32).
      {"batch_norm", [](auto x) { return F::batch_norm(x({3, 4}), zeros({4}), ones({4}), x({4}), x({4}), false); }},
      {"sum", [](auto x) { return x({3, 4}).sum(); }},
      {"mean", [](auto x) { return x({3, 4}).mean(); }},
      {"norm", [](auto x) { return x({3, 4}).norm(); }},
      {"cumsum", [](auto x) { return cumsum(x({3, 4}), 0); }},
      {"logsumexp", [](auto x) { return logsumexp(x({3, 4}), {1}); }},
      {"exp", [](auto x) { return exp(x({3, 4})); }},
      {"log", [](auto x) { return log(x({3, 4})); }},
      {"pow", [](auto x) { return pow(x({3, 4}), 3); }},
      {"relu", [](auto x) { return x({3, 4}).relu(); }},
      {"gelu", [](auto x) { return x({3, 4}).gelu(); }},
      {"tanh", [](auto x) { return x({3, 4}).tanh(); }},
      {"sigmoid", [](auto x) { return x({3, 4}).sigmoid(); }},
      {"max_pool2d", [](auto x) { return max_pool2d(x({1, 2, 4, 4}), {2}); }},
      {"avg_pool2d", [](auto x) { return avg_pool2d(x({1, 2, 4, 4}), {2}); }},
      {"cat", [](auto x) { return cat({x({2, 2}), x({2, 2})}); }},
      {"add", [](auto x) { return x({3, 4}) + x({3, 4}); }},
      {"mul", [](auto x) { return x({3, 4}) * x({3, 4}); }},
      {"add_mixed", [](auto x) { return rand({3, 4}) + x({3, 4}); }},
      {"cat_mixed", [](auto x) { return cat({rand({2, 2}), x({2, 2})}); }},
  };
}

struct TorchRow {
  std::string f32, bf16;  // result dtypes for float32 / bfloat16 inputs
};

std::map<std::string, TorchRow> torch_table() {
  const char* dir = std::getenv("EMBER_SOURCE_DIR");
  const std::string path = std::string(dir ? dir : ".") + "/tests/amp/torch_autocast_cpu.txt";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::map<std::string, TorchRow> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string op;
    TorchRow r;
    ls >> op >> r.f32 >> r.bf16;
    rows[op] = r;
  }
  return rows;
}

std::string dtype_str(DType dt) {
  switch (dt) {
    case kFloat32: return "float32";
    case kBFloat16: return "bfloat16";
    case kFloat16: return "float16";
    case kFloat64: return "float64";
    default: return "other";
  }
}

const amp::OpRow* row_of(const std::string& op) {
  for (const amp::OpRow& r : amp::autocast_ops())
    if (r.name == op) return &r;
  return nullptr;
}

TEST(Autocast, OutputDtypesMatchTorchCpuLists) {
  const auto expected = torch_table();
  const auto table = ops();
  ASSERT_EQ(expected.size(), table.size()) << "tests/amp/torch_autocast_cpu.txt and ops() list different ops";
  for (const auto& [op, fn] : table) {
    SCOPED_TRACE(op);
    ASSERT_TRUE(expected.contains(op));
    const TorchRow& torch_row = expected.at(op);
    std::string got[2];
    const DType inputs[2] = {kFloat32, kBFloat16};
    for (int i = 0; i < 2; ++i) {
      amp::AutocastGuard guard(kBFloat16);
      const DType in_dt = inputs[i];
      got[i] = dtype_str(fn([&](IntArrayRef s) { return rand(s).add(0.5).to(in_dt); }).dtype());
    }
    const amp::OpRow* row = row_of(op);
    if (row != nullptr && row->origin == amp::Origin::Ember) {
      // torch 1.13 leaves these alone on the CPU; ember runs them in float32.
      EXPECT_EQ(torch_row.f32, "float32");
      EXPECT_EQ(torch_row.bf16, "bfloat16") << "torch lists " << op << " now: make the row Origin::Torch";
      EXPECT_EQ(got[0], "float32");
      EXPECT_EQ(got[1], "float32");
    } else {
      EXPECT_EQ(got[0], torch_row.f32) << "float32 inputs";
      EXPECT_EQ(got[1], torch_row.bf16) << "bfloat16 inputs";
    }
  }
}

TEST(Autocast, Float16UsesTheSameLists) {
  amp::AutocastGuard guard(kFloat16);
  EXPECT_EQ(F::linear(rand({3, 4}), rand({5, 4}), rand({5})).dtype(), kFloat16);
  EXPECT_EQ(conv2d(rand({1, 2, 6, 6}), rand({3, 2, 3, 3})).dtype(), kFloat16);
  EXPECT_EQ(softmax(rand({3, 4}).to(kFloat16), 1).dtype(), kFloat32);
  EXPECT_EQ(F::cross_entropy(rand({3, 4}).to(kFloat16), tensor({0L, 1L, 2L})).dtype(), kFloat32);
}

TEST(Autocast, DoubleAndExplicitDtypesAreLeftAlone) {
  amp::AutocastGuard guard;
  EXPECT_EQ(matmul(rand({2, 2}, kFloat64), rand({2, 2}, kFloat64)).dtype(), kFloat64);
  EXPECT_EQ(softmax(rand({2, 2}, kFloat64), 0).dtype(), kFloat64);
  EXPECT_EQ(softmax(rand({2, 2}).to(kBFloat16), 0, kBFloat16).dtype(), kBFloat16);
  EXPECT_EQ(rand({2, 2}).to(kBFloat16).sum(kBFloat16).dtype(), kBFloat16);
  // Integer inputs are never cast.
  EXPECT_EQ(ones({2, 2}, kInt64).sum().dtype(), kInt64);
}

TEST(Autocast, ValuesAreTheLowPrecisionProduct) {
  manual_seed(1);
  const Tensor a = randn({8, 16}), b = randn({16, 4});
  Tensor got;
  {
    amp::AutocastGuard guard;
    got = matmul(a, b);
  }
  const Tensor want = matmul(a.to(kBFloat16).to(kFloat32), b.to(kBFloat16).to(kFloat32)).to(kBFloat16);
  EXPECT_TRUE(got.to(kFloat32).allclose(want.to(kFloat32), 1e-2, 1e-2));
}

// ---- autograd and the cast cache ----

TEST(Autocast, GradientsArriveInTheParameterDtype) {
  manual_seed(2);
  nn::Linear fc(4, 3);
  const Tensor x = randn({5, 4});
  Tensor loss;
  {
    amp::AutocastGuard guard;
    const Tensor y = fc->forward(x);
    EXPECT_EQ(y.dtype(), kBFloat16);
    loss = F::cross_entropy(y, tensor({0L, 1L, 2L, 0L, 1L}));
    EXPECT_EQ(loss.dtype(), kFloat32);
  }
  loss.backward();
  EXPECT_EQ(fc->weight.grad().dtype(), kFloat32);
  EXPECT_EQ(fc->bias.grad().dtype(), kFloat32);
  // Close to the float32 gradient (bf16 has 8 significant bits).
  const Tensor gw = fc->weight.grad().clone();
  fc->weight.mutable_grad() = Tensor();
  fc->bias.mutable_grad() = Tensor();
  F::cross_entropy(fc->forward(x), tensor({0L, 1L, 2L, 0L, 1L})).backward();
  EXPECT_TRUE(gw.allclose(fc->weight.grad(), 3e-2, 3e-2));
}

// The backward node of the one input of y's op that requires grad (the cast of w).
autograd::Node* cast_node(const Tensor& y) {
  for (const autograd::Edge& e : y.grad_fn()->next_edges())
    if (e.function) return e.function.get();
  return nullptr;
}

TEST(Autocast, ParameterIsCastOncePerRegion) {
  Tensor w = randn({3, 3}).requires_grad_();
  const Tensor x = randn({2, 3});
  Tensor y1, y2, loss;
  {
    amp::AutocastGuard outer;
    y1 = matmul(x, w);
    {
      amp::AutocastGuard inner;  // nested: the cache stays
      y2 = matmul(x, w);
    }
    // Both products read the same bf16 copy: one cast node feeds both.
    ASSERT_TRUE(y1.grad_fn() && y2.grad_fn());
    EXPECT_NE(cast_node(y1), nullptr);
    EXPECT_EQ(cast_node(y1), cast_node(y2));
    loss = (y1.to(kFloat32) + y2.to(kFloat32)).sum();
  }
  loss.backward();
  EXPECT_EQ(w.grad().dtype(), kFloat32);
  // A new region casts again.
  Tensor y3;
  {
    amp::AutocastGuard again;
    y3 = matmul(x, w);
  }
  EXPECT_NE(cast_node(y1), cast_node(y3));
}

TEST(Autocast, InPlaceUpdateInvalidatesTheCachedCast) {
  Tensor w = ones({2, 2}).requires_grad_();
  amp::AutocastGuard guard;
  const Tensor before = matmul(ones({1, 2}), w);
  {
    NoGradGuard no_grad;
    w.mul_(2);
  }
  const Tensor after = matmul(ones({1, 2}), w);
  EXPECT_EQ(before.to(kFloat32).sum().item<float>(), 4.0f);
  EXPECT_EQ(after.to(kFloat32).sum().item<float>(), 8.0f);
}

TEST(Autocast, BackwardRunsOutsideAutocast) {
  Tensor w = randn({3, 3}).requires_grad_();
  amp::AutocastGuard guard;
  Tensor y = matmul(randn({2, 3}), w);
  // backward inside the region: the products of the backward keep the forward's dtypes.
  y.to(kFloat32).sum().backward();
  EXPECT_EQ(w.grad().dtype(), kFloat32);
  EXPECT_TRUE(amp::is_autocast_enabled());
}

TEST(Autocast, ConvNetTrainsThroughCasts) {
  manual_seed(3);
  nn::Conv2d conv(nn::Conv2dOptions(1, 4, 3));
  nn::Linear fc(4 * 6 * 6, 10);
  const Tensor x = randn({2, 1, 8, 8});
  Tensor loss;
  {
    amp::AutocastGuard guard;
    Tensor h = conv->forward(x).relu();
    EXPECT_EQ(h.dtype(), kBFloat16);
    loss = F::cross_entropy(fc->forward(h.flatten(1)), tensor({1L, 7L}));
  }
  loss.backward();
  EXPECT_EQ(conv->weight.grad().dtype(), kFloat32);
  EXPECT_EQ(conv->weight.grad().sizes(), conv->weight.sizes());
  EXPECT_TRUE(conv->weight.grad().isfinite().all().item<bool>());
}

TEST(Autocast, CheckpointRerunsUnderTheForwardsAutocast) {
  Tensor w = randn({3, 3}).requires_grad_();
  const Tensor x = randn({2, 3}).requires_grad_();
  Tensor out;
  {
    amp::AutocastGuard guard;
    out = autograd::checkpoint([&](const autograd::variable_list& in) { return autograd::variable_list{matmul(in[0], w)}; },
                               {x})[0];
    EXPECT_EQ(out.dtype(), kBFloat16);
  }
  out.to(kFloat32).sum().backward();
  EXPECT_EQ(x.grad().dtype(), kFloat32);
  EXPECT_EQ(w.grad().dtype(), kFloat32);
}

}  // namespace autocast_test
