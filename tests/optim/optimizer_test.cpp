// Optimizer base behaviour: defaults, groups, zero_grad, state_dict round trips, errors,
// closures, a custom optimizer, gradient accumulation.

#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <string>
#include <vector>

// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace optim_optimizer_test {

using namespace ember;
namespace F = ember::nn::functional;

void expect_throw_with(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected an ember::Error containing: " << needle;
  } catch (const ember::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

Tensor param(std::vector<int64_t> sizes) { return randn(sizes).requires_grad_(); }

TEST(Optimizer, DefaultsMatchPyTorch) {
  optim::AdamOptions a;
  EXPECT_DOUBLE_EQ(a.lr(), 1e-3);
  EXPECT_DOUBLE_EQ(std::get<0>(a.betas()), 0.9);
  EXPECT_DOUBLE_EQ(std::get<1>(a.betas()), 0.999);
  EXPECT_DOUBLE_EQ(a.eps(), 1e-8);
  EXPECT_DOUBLE_EQ(a.weight_decay(), 0);
  EXPECT_FALSE(a.amsgrad());
  EXPECT_DOUBLE_EQ(optim::AdamWOptions().weight_decay(), 1e-2);
  optim::RMSpropOptions r;
  EXPECT_DOUBLE_EQ(r.lr(), 1e-2);
  EXPECT_DOUBLE_EQ(r.alpha(), 0.99);
  EXPECT_DOUBLE_EQ(r.eps(), 1e-8);
  optim::AdagradOptions g;
  EXPECT_DOUBLE_EQ(g.lr(), 1e-2);
  EXPECT_DOUBLE_EQ(g.eps(), 1e-10);
  optim::SGDOptions s(0.1);
  EXPECT_DOUBLE_EQ(s.momentum(), 0);
  EXPECT_FALSE(s.nesterov());
  // Chainable setters.
  optim::AdamOptions b = optim::AdamOptions(0.01).betas({0.8, 0.9}).weight_decay(0.1).amsgrad(true);
  EXPECT_DOUBLE_EQ(std::get<0>(b.betas()), 0.8);
  EXPECT_TRUE(b.amsgrad());
}

TEST(Optimizer, SgdStepIsExact) {
  Tensor w = tensor({1.0, 2.0, 3.0}).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.5));
  (w * w).sum().backward();  // grad = 2w
  const uint32_t v0 = w._version();
  opt.step();
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_GT(w._version(), v0);
}

TEST(Optimizer, ParamGroupsAndLr) {
  Tensor a = param({3}), b = param({2});
  optim::Adam opt({optim::OptimizerParamGroup({a}), optim::OptimizerParamGroup({b}, optim::AdamOptions(0.5))},
                  optim::AdamOptions(0.1));
  ASSERT_EQ(opt.param_groups().size(), 2u);
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].lr(), 0.1);
  EXPECT_DOUBLE_EQ(opt.param_groups()[1].lr(), 0.5);
  opt.param_groups()[0].set_lr(0.2);
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].options_as<optim::AdamOptions>().lr(), 0.2);
  Tensor c = param({4});
  opt.add_param_group(optim::OptimizerParamGroup({c}));
  EXPECT_DOUBLE_EQ(opt.param_groups()[2].lr(), 0.1);
  EXPECT_EQ(opt.size(), 3u);
  expect_throw_with([&] { opt.add_param_group(optim::OptimizerParamGroup({a})); },
                    "some parameters appear in more than one parameter group");
}

TEST(Optimizer, ZeroGrad) {
  Tensor w = param({3});
  optim::SGD opt({w}, 0.1);
  w.sum().backward();
  opt.zero_grad(false);
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{0, 0, 0}));
  opt.zero_grad();
  EXPECT_FALSE(w.grad().defined());
}

TEST(Optimizer, BadOptionsNameTheOption) {
  Tensor w = param({2});
  expect_throw_with([&] { optim::Adam({w}, optim::AdamOptions(-0.1)); }, "[Adam] Invalid learning rate: -0.1");
  expect_throw_with([&] { optim::Adam({w}, optim::AdamOptions().betas({1.0, 0.9})); },
                    "Invalid beta parameter at index 0");
  expect_throw_with([&] { optim::AdamW({w}, optim::AdamWOptions().eps(-1)); }, "[AdamW] Invalid epsilon value");
  expect_throw_with([&] { optim::SGD({w}, optim::SGDOptions(0.1).nesterov(true)); },
                    "Nesterov momentum requires a momentum and zero dampening");
  expect_throw_with([&] { optim::SGD({w}, optim::SGDOptions(0.1).weight_decay(-1)); }, "Invalid weight_decay value");
  expect_throw_with([&] { optim::RMSprop({w}, optim::RMSpropOptions().alpha(-1)); }, "Invalid alpha value");
  expect_throw_with([&] { optim::Adagrad({w}, optim::AdagradOptions().lr_decay(-1)); }, "Invalid lr_decay value");
  Tensor nonleaf = w * 2;
  expect_throw_with([&] { optim::SGD({nonleaf}, 0.1); }, "can't optimize a non-leaf Tensor");
}

TEST(Optimizer, SkipsParamsWithoutGrad) {
  Tensor a = param({3}), b = param({3});
  const std::vector<float> b0 = b.to_vector<float>();
  optim::Adam opt({a, b}, optim::AdamOptions(0.1));
  a.sum().backward();
  opt.step();
  EXPECT_EQ(b.to_vector<float>(), b0);
  EXPECT_EQ(opt.find_state(b), nullptr);
  ASSERT_NE(opt.find_state(a), nullptr);
  EXPECT_EQ(opt.find_state(a)->step, 1);
}

TEST(Optimizer, ClosureReturnsLoss) {
  Tensor w = tensor({2.0}).requires_grad_();
  optim::SGD opt({w}, 0.25);
  int calls = 0;
  Tensor loss = opt.step([&] {
    ++calls;
    opt.zero_grad();
    Tensor l = (w * w).sum();
    l.backward();
    return l;
  });
  EXPECT_EQ(calls, 1);
  EXPECT_FLOAT_EQ(loss.item<float>(), 4.0f);
  EXPECT_FLOAT_EQ(w.item<float>(), 1.0f);  // 2 - 0.25 * 4
  EXPECT_FALSE(opt.step().defined());
}

TEST(Optimizer, NonContiguousParam) {
  Tensor base = zeros({3, 4});
  Tensor w = base.t().contiguous().t().detach().requires_grad_();  // strides (1, 3)
  ASSERT_FALSE(w.is_contiguous());
  optim::SGD opt({w}, optim::SGDOptions(1.0).momentum(0.5));
  (w * arange(12, kFloat32).reshape({3, 4})).sum().backward();
  opt.step();
  EXPECT_TRUE(w.allclose(-arange(12, kFloat32).reshape({3, 4})));
}

// Trains a few steps, saves, continues; a fresh optimizer loaded from the save must give
// bit-identical parameters.
template <typename Opt, typename Options>
void check_resume(const Options& options) {
  manual_seed(3);
  Tensor w0 = randn({5, 4}), b0 = randn({4});
  std::vector<Tensor> grads;
  for (int i = 0; i < 10; ++i) grads.push_back(randn({5, 4}));
  auto run = [&](Tensor w, Opt& opt, int from, int to) {
    for (int i = from; i < to; ++i) {
      opt.zero_grad();
      w.mutable_grad() = grads[i].clone();
      opt.step();
    }
  };
  Tensor wa = w0.clone().requires_grad_(), ba = b0.clone().requires_grad_();
  Opt a({optim::OptimizerParamGroup({wa}), optim::OptimizerParamGroup({ba})}, options);
  run(wa, a, 0, 10);

  Tensor wb = w0.clone().requires_grad_(), bb = b0.clone().requires_grad_();
  Opt b({optim::OptimizerParamGroup({wb}), optim::OptimizerParamGroup({bb})}, options);
  run(wb, b, 0, 5);
  const Value saved = b.state_dict();
  Tensor wc = wb.detach().clone().requires_grad_(), bc = bb.detach().clone().requires_grad_();
  Opt c({optim::OptimizerParamGroup({wc}), optim::OptimizerParamGroup({bc})}, Options(123.0));
  c.load_state_dict(saved);
  EXPECT_DOUBLE_EQ(c.param_groups()[0].lr(), options.get_lr());
  run(wc, c, 5, 10);
  EXPECT_TRUE(wc.equal(wa)) << "resumed run differs";
  EXPECT_EQ(c.state_dict(), a.state_dict());
}

TEST(Optimizer, StateDictResumeIsBitIdentical) {
  check_resume<optim::Adam>(optim::AdamOptions(0.01).amsgrad(true).weight_decay(0.1));
  check_resume<optim::AdamW>(optim::AdamWOptions(0.01));
  check_resume<optim::SGD>(optim::SGDOptions(0.01).momentum(0.9).nesterov(true));
  check_resume<optim::RMSprop>(optim::RMSpropOptions(0.01).momentum(0.5).centered(true));
  check_resume<optim::Adagrad>(optim::AdagradOptions(0.01).lr_decay(0.01).initial_accumulator_value(0.1));
}

TEST(Optimizer, StateDictLayout) {
  Tensor a = param({3}), b = param({2});
  optim::Adam opt({a, b}, optim::AdamOptions(0.1).amsgrad(true));
  a.sum().backward();
  opt.step();
  const Value sd = opt.state_dict();
  ASSERT_TRUE(sd.contains("state"));
  const Value& st = sd.at("state");
  ASSERT_TRUE(st.contains("0"));
  EXPECT_FALSE(st.contains("1"));  // b had no gradient
  EXPECT_EQ(st.at("0").at("step").to_tensor().item<float>(), 1.0f);
  EXPECT_TRUE(st.at("0").contains("exp_avg"));
  EXPECT_TRUE(st.at("0").contains("max_exp_avg_sq"));
  const Value& g = sd.at("param_groups").to_list().at(0);
  EXPECT_DOUBLE_EQ(g.at("lr").to_double(), 0.1);
  EXPECT_EQ(g.at("betas").to_double_list(), (std::vector<double>{0.9, 0.999}));
  EXPECT_EQ(g.at("params").to_int_list(), (std::vector<int64_t>{0, 1}));
  // A different group layout is refused.
  optim::Adam other({a}, optim::AdamOptions());
  expect_throw_with([&] { other.load_state_dict(sd); }, "parameter group 0 with 2 parameters");
}

// ---- a custom optimizer: the docs/optim.md example ----
struct MomentumSGDOptions : optim::OptimizerCloneableOptions<MomentumSGDOptions> {
  MomentumSGDOptions(double lr) : lr_(lr) {}
  EMBER_OPTIM_ARG(double, lr);
  EMBER_OPTIM_ARG(double, momentum) = 0.9;

 public:
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
};

class MomentumSGD : public optim::Optimizer {
 public:
  MomentumSGD(std::vector<Tensor> params, const MomentumSGDOptions& options)
      : Optimizer({optim::OptimizerParamGroup(std::move(params))}, options.clone(), "MomentumSGD") {}

 protected:
  void update(optim::OptimizerParamGroup& group) override {
    const auto& o = group.options_as<MomentumSGDOptions>();
    for (Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      Tensor& buf = state(p)["momentum_buffer"];
      if (!buf.defined()) buf = zeros_like(p);
      buf.mul_(o.momentum()).add_(p.grad());
      p.add_(buf, -o.lr());
    }
  }
};

TEST(Optimizer, CustomOptimizerTrainsASmallModel) {
  manual_seed(0);
  nn::Sequential model(nn::Linear(4, 16), nn::Tanh(), nn::Linear(16, 1));
  Tensor x = randn({64, 4});
  Tensor y = (x.slice(1, 0, 1) * 2 - x.slice(1, 1, 2) + 0.5).tanh();
  MomentumSGD opt(model->parameters(), MomentumSGDOptions(0.05));
  double first = 0, last = 0;
  for (int i = 0; i < 200; ++i) {
    opt.zero_grad();
    Tensor loss = F::mse_loss(model(x), y);
    loss.backward();
    opt.step();
    if (i == 0) first = loss.item<double>();
    last = loss.item<double>();
  }
  EXPECT_LT(last, first * 0.05) << "first " << first << " last " << last;
  EXPECT_TRUE(opt.state_dict().at("state").at("0").contains("momentum_buffer"));
}

TEST(Optimizer, GradientAccumulationMatchesBigBatch) {
  manual_seed(1);
  nn::Linear a(6, 3), b(6, 3);
  {
    NoGradGuard ng;
    b->weight.copy_(a->weight);
    b->bias.copy_(a->bias);
  }
  Tensor x = randn({32, 6}), y = randn({32, 3});
  F::mse_loss(a(x), y).backward();
  for (int k = 0; k < 4; ++k) {
    Tensor xs = x.slice(0, 8 * k, 8 * (k + 1)), ys = y.slice(0, 8 * k, 8 * (k + 1));
    (F::mse_loss(b(xs), ys) / 4).backward();
  }
  EXPECT_TRUE(b->weight.grad().allclose(a->weight.grad(), 1e-5, 1e-6));
  EXPECT_TRUE(b->bias.grad().allclose(a->bias.grad(), 1e-5, 1e-6));
  optim::Adam oa(a->parameters(), optim::AdamOptions(0.01)), ob(b->parameters(), optim::AdamOptions(0.01));
  ob.set_accumulation_steps(4);  // declared, so the GradAccumulation guard stays quiet
  oa.step();
  ob.step();
  EXPECT_TRUE(b->weight.allclose(a->weight, 1e-5, 1e-6));
}

TEST(Optimizer, Float64AndThreadCountIndependence) {
  auto run = [](int threads, DType dt) {
    set_num_threads(threads);
    manual_seed(5);
    Tensor w = randn({300000}).to(dt).requires_grad_();
    optim::Adam opt({w}, optim::AdamOptions(0.01).weight_decay(0.01));
    for (int i = 0; i < 3; ++i) {
      w.mutable_grad() = randn({300000}).to(dt);
      opt.step();
    }
    return w.detach();
  };
  const int n = get_num_threads();
  Tensor a1 = run(1, kFloat32), a2 = run(2, kFloat32);
  Tensor d1 = run(1, kFloat64);
  set_num_threads(n);
  EXPECT_TRUE(a1.equal(a2));
  EXPECT_TRUE(d1.to(kFloat32).allclose(a1, 1e-5, 1e-6));
}

}  // namespace
