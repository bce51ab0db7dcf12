// nn::Module: registration, traversal names, train/eval, state_dict and its loading
// reports, hooks, clone, to(dtype), zero_grad, printing; Linear/Dropout/containers; init.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include "test_util.h"

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace nn_module_test {

using Keys = std::vector<std::string>;

using ember::testing::ErrorOf;

struct NetImpl : nn::Module {
  NetImpl() : Module("Net") {
    features = register_module("features", nn::Sequential(nn::Linear(4, 8), nn::ReLU(), nn::Linear(8, 3)));
    head = register_module("head", nn::Linear(nn::LinearOptions(3, 2).bias(false)));
    register_buffer("steps", zeros({1}, kInt64));
    register_buffer("scratch", zeros({2}), /*persistent=*/false);
  }
  Tensor forward(const Tensor& x) override { return head(features(x)); }
  nn::Sequential features{nullptr};
  nn::Linear head{nullptr};
};
EMBER_MODULE(Net);

TEST(Module, NamesFollowTheTree) {
  Net net;
  EXPECT_EQ(net->named_parameters().keys(),
            (Keys{"features.0.weight", "features.0.bias", "features.2.weight", "features.2.bias", "head.weight"}));
  EXPECT_EQ(net->parameters().size(), 5u);
  EXPECT_EQ(net->named_buffers().keys(), (Keys{"steps", "scratch"}));
  EXPECT_EQ(net->state_dict().keys(), (Keys{"steps", "features.0.weight", "features.0.bias", "features.2.weight",
                                            "features.2.bias", "head.weight"}));
  EXPECT_EQ(net->named_children().keys(), (Keys{"features", "head"}));
  EXPECT_EQ(net->named_modules().keys(), (Keys{"", "features", "features.0", "features.1", "features.2", "head"}));
  EXPECT_EQ(net->modules(false).size(), 5u);
  for (const Tensor& p : net->parameters()) EXPECT_TRUE(p.requires_grad());
  Tensor y = net(randn({5, 4}));
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{5, 2}));
}

TEST(Module, RegistrationErrors) {
  nn::Module m;
  m.register_parameter("w", zeros({2}));
  EXPECT_NE(ErrorOf([&] { m.register_buffer("w", zeros({2})); }).find("already registered"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { m.register_parameter("a.b", zeros({2})); }).find("must not contain a dot"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { m(zeros({2})); }).find("has no forward"), std::string::npos);
  nn::Linear empty{nullptr};
  EXPECT_NE(ErrorOf([&] { empty->weight.defined(); }).find("Accessing empty ModuleHolder"), std::string::npos);
}

TEST(Module, TrainEvalPropagatesAndDropoutObeysIt) {
  auto seq = nn::Sequential(nn::Linear(3, 3), nn::Dropout(0.5));
  EXPECT_TRUE(seq->is_training());
  seq->eval();
  for (const auto& m : seq->modules()) EXPECT_FALSE(m->is_training());
  nn::Dropout drop(0.5);
  Tensor x = ones({1000});
  Tensor y = drop(x);
  const double kept = (y != 0).sum().item<int64_t>();
  EXPECT_NEAR(kept / 1000, 0.5, 0.08);
  EXPECT_TRUE((y == 0).logical_or(y == 2).all().item<bool>());  // survivors scaled by 1/(1-p)
  drop->eval();
  EXPECT_TRUE(drop(x).equal(x));
}

TEST(Module, StateDictRoundTripAndLoadReports) {
  Net a, b;
  EXPECT_FALSE(a->features->at<nn::LinearImpl>(0).weight.equal(b->features->at<nn::LinearImpl>(0).weight));
  {
    NoGradGuard ng;
    a->named_buffers()["steps"].fill_(7);
  }
  b->load_state_dict(a->state_dict());
  for (const auto& item : a->state_dict()) EXPECT_TRUE(item.value().equal(b->state_dict()[item.key()])) << item.key();
  // The loaded values were copied into b's own tensors (b's parameters keep identity).
  EXPECT_FALSE(a->head->weight.is_same(b->head->weight));

  auto sd = a->state_dict();
  sd.erase("head.weight");
  sd.insert("extra.bias", zeros({3}));
  sd.insert_or_assign("features.2.bias", zeros({5}));
  const std::string msg = ErrorOf([&] { b->load_state_dict(sd); });
  EXPECT_NE(msg.find("Missing key(s): \"head.weight\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("Unexpected key(s): \"extra.bias\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("features.2.bias: checkpoint has [5], module has [3]"), std::string::npos) << msg;
  nn::LoadStateDictResult r = b->load_state_dict(sd, /*strict=*/false);
  EXPECT_EQ(r.missing_keys, (Keys{"head.weight"}));
  EXPECT_EQ(r.unexpected_keys, (Keys{"extra.bias"}));
  ASSERT_EQ(r.mismatched_keys.size(), 1u);
}

TEST(Module, ForwardHooksAndRemoval) {
  nn::Linear lin(2, 2);
  int calls = 0;
  auto pre = lin->register_forward_pre_hook([&](nn::Module&, const nn::TensorList& in) {
    ++calls;
    return std::optional<nn::TensorList>(nn::TensorList{in[0] * 0});
  });
  auto post = lin->register_forward_hook([&](nn::Module& m, const nn::TensorList&, const nn::TensorList& out) {
    EXPECT_EQ(m.name(), "Linear");
    return std::optional<nn::TensorList>(nn::TensorList{out[0] + 100});
  });
  Tensor x = ones({1, 2});
  Tensor y = lin(x);
  EXPECT_EQ(calls, 1);
  Tensor expect = lin->bias.detach().unsqueeze(0) + 100;  // zero input: bias only, then +100
  EXPECT_TRUE(y.allclose(expect));
  pre.remove();
  post.remove();
  y = lin(x);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(y.allclose(nn::functional::linear(x, lin->weight, lin->bias)));
}

TEST(Module, CloneIsDeep) {
  auto seq = nn::Sequential(nn::Linear(3, 4), nn::Tanh());
  auto copy = std::dynamic_pointer_cast<nn::SequentialImpl>(seq->clone());
  ASSERT_NE(copy, nullptr);
  auto l0 = seq->ptr<nn::LinearImpl>(0), c0 = copy->ptr<nn::LinearImpl>(0);
  EXPECT_TRUE(l0->weight.equal(c0->weight));
  EXPECT_FALSE(l0->weight.is_same_storage(c0->weight));
  // The clone's member handles are its registered parameters.
  EXPECT_TRUE(c0->weight.is_same(c0->named_parameters()["weight"]));
  {
    NoGradGuard ng;
    c0->weight.fill_(1);
  }
  EXPECT_FALSE(l0->weight.equal(c0->weight));
}

TEST(Module, ToDtypeKeepsIdentityAndZeroGrad) {
  nn::Linear lin(3, 2);
  Tensor w = lin->weight;
  lin->to(kFloat64);
  EXPECT_EQ(w.dtype(), kFloat64);  // the same tensor object was converted
  EXPECT_TRUE(w.requires_grad());
  lin(randn({4, 3}, TensorOptions(kFloat64))).sum().backward();
  ASSERT_TRUE(lin->weight.grad().defined());
  lin->zero_grad(/*set_to_none=*/false);
  EXPECT_TRUE(lin->weight.grad().eq(0).all().item<bool>());
  lin->zero_grad();
  EXPECT_FALSE(lin->weight.grad().defined());
}

TEST(Module, PrintsLikePyTorch) {
  Net net;
  EXPECT_EQ(net->repr(),
            "Net(\n"
            "  (features): Sequential(\n"
            "    (0): Linear(in_features=4, out_features=8, bias=True)\n"
            "    (1): ReLU()\n"
            "    (2): Linear(in_features=8, out_features=3, bias=True)\n"
            "  )\n"
            "  (head): Linear(in_features=3, out_features=2, bias=False)\n"
            ")");
}

TEST(Linear, DefaultInitBoundsAndShapes) {
  manual_seed(1);
  nn::Linear lin(100, 50);
  const double bound = 1.0 / std::sqrt(100.0);
  EXPECT_LE(lin->weight.abs().max().item<float>(), bound);
  EXPECT_GT(lin->weight.abs().max().item<float>(), 0.9 * bound);
  EXPECT_LE(lin->bias.abs().max().item<float>(), bound);
  // The uniform's variance is bound^2 / 3.
  EXPECT_NEAR(lin->weight.var().item<float>(), bound * bound / 3, 0.1 * bound * bound / 3);
  Tensor y = lin(randn({2, 7, 100}));
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 7, 50}));
  EXPECT_NE(ErrorOf([&] { lin(randn({2, 99})); }).find("does not end in in_features=100"), std::string::npos);
}

TEST(Containers, ModuleListAndDict) {
  nn::ModuleList list(nn::Linear(2, 2), nn::ReLU());
  list->push_back(nn::Linear(2, 1));
  EXPECT_EQ(list->size(), 3u);
  EXPECT_EQ(list->named_parameters().keys(), (Keys{"0.weight", "0.bias", "2.weight", "2.bias"}));
  EXPECT_EQ(list->at<nn::LinearImpl>(2).options.out_features(), 1);
  nn::ModuleDict dict;
  dict->insert("enc", nn::Linear(2, 3));
  dict->insert("act", nn::GELU());
  EXPECT_EQ(dict->keys(), (Keys{"enc", "act"}));
  EXPECT_EQ(dict->named_parameters().keys(), (Keys{"enc.weight", "enc.bias"}));
  EXPECT_NE(ErrorOf([&] { (*dict)["nope"]; }).find("Module 'nope' is not defined"), std::string::npos);
}

TEST(Init, GainsFansAndDistributions) {
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("relu"), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("tanh"), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("leaky_relu", 0.2), std::sqrt(2.0 / 1.04));
  Tensor w = empty({64, 32, 3, 3});
  auto [fi, fo] = nn::init::calculate_fan_in_and_fan_out(w);
  EXPECT_EQ(fi, 32 * 9);
  EXPECT_EQ(fo, 64 * 9);
  nn::init::kaiming_normal_(w, 0, "fan_in", "relu");
  EXPECT_NEAR(w.std().item<float>(), std::sqrt(2.0 / (32 * 9)), 0.05 * std::sqrt(2.0 / (32 * 9)));
  Tensor x = empty({200, 300});
  nn::init::xavier_uniform_(x);
  const double a = std::sqrt(6.0 / 500);
  EXPECT_LE(x.abs().max().item<float>(), a);
  nn::init::trunc_normal_(x, 0, 1, -0.5, 0.5);
  EXPECT_LE(x.abs().max().item<float>(), 0.5);
  EXPECT_NEAR(x.mean().item<float>(), 0, 0.02);
  Tensor q = empty({5, 8}, kFloat64);
  nn::init::orthogonal_(q);
  EXPECT_TRUE(q.matmul(q.t()).allclose(eye(5, TensorOptions(kFloat64)), 1e-9, 1e-9));
  Tensor e = empty({3, 4});
  nn::init::eye_(e);
  EXPECT_TRUE(e.equal(eye(3, 4)));
  EXPECT_NE(ErrorOf([&] { nn::init::calculate_gain("swish"); }).find("unsupported nonlinearity 'swish'"),
            std::string::npos);
}

}  // namespace
}  // namespace ember
