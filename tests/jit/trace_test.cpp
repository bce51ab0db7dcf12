// jit::trace on a model zoo: each model traced with a dynamic batch dim, run at batch
// 1, 7 and 64 and compared with eager (bit-identical: the graph calls the same ops);
// frozen graphs (folded, fused) within float rounding; saved and loaded artifacts equal
// the graph they came from. Tracing errors name the op.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace jit_trace_test {

using ember::testing::ExpectError;

void ExpectSame(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec());
  ASSERT_EQ(got.dtype(), want.dtype());
  EXPECT_TRUE(got.equal(want)) << "max abs diff " << (got - want).abs().amax().item().to_double();
}

void ExpectClose(const Tensor& got, const Tensor& want, double rtol = 1e-5, double atol = 1e-5) {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec());
  EXPECT_TRUE(got.allclose(want, rtol, atol)) << "max abs diff " << (got - want).abs().amax().item().to_double();
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/jit_trace_test_" + name;
}

nn::Sequential Mlp() { return nn::Sequential(nn::Linear(20, 32), nn::ReLU(), nn::Linear(32, 10)); }

nn::Sequential Cnn() {
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 8, 3).padding(1)), nn::BatchNorm2d(8), nn::ReLU(),
                        nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Conv2d(nn::Conv2dOptions(8, 16, 3).padding(1)),
                        nn::BatchNorm2d(16), nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Flatten(),
                        nn::Linear(16 * 7 * 7, 10));
}

void Randomize(nn::Module& m) { ember::testing::RandomizeNormStats(m); }

// Runs the graph at batch sizes 1, 7 and 64 against eager.
template <typename Eager>
void CheckBatches(const jit::GraphModule& g, Eager eager, const std::vector<int64_t>& item_shape, bool exact) {
  for (int64_t b : {1, 7, 64}) {
    std::vector<int64_t> shape{b};
    shape.insert(shape.end(), item_shape.begin(), item_shape.end());
    Tensor x = randn(shape);
    Tensor want = eager(x);
    Tensor got = g.forward(x);
    if (exact) ExpectSame(got, want);
    else ExpectClose(got, want);
  }
}

TEST(JitTrace, MlpDynamicBatchPrintSaveLoad) {
  manual_seed(1);
  auto mlp = Mlp();
  mlp->eval();
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  opt.input_names = {"x"};
  jit::GraphModule g = jit::trace(*mlp, randn({4, 20}), opt);
  const std::string listing = g.graph().str();
  EXPECT_NE(listing.find("graph(%x: f32[B,20])"), std::string::npos) << listing;
  EXPECT_NE(listing.find("%0.weight: f32[32,20] = param"), std::string::npos) << listing;
  EXPECT_NE(listing.find("f32[B,32] = linear(%x, %0.weight, %0.bias)"), std::string::npos) << listing;
  EXPECT_NE(listing.find("= relu("), std::string::npos) << listing;
  EXPECT_EQ(g.graph().op_histogram(), (std::map<std::string, int>{{"linear", 2}, {"relu", 1}}));
  EXPECT_EQ(g.graph().parameter_count(), 20 * 32 + 32 + 32 * 10 + 10);
  CheckBatches(g, [&](const Tensor& x) { return mlp->forward(x); }, {20}, true);

  const std::string path = TempPath("mlp.ember");
  Value meta = Value::dict();
  meta["model_name"] = "mlp";
  meta["labels"] = Value(Value::List{Value("a"), Value("b")});
  jit::save(g, path, meta);
  jit::GraphModule loaded = jit::load(path);
  EXPECT_EQ(loaded.metadata().at("model_name").to_string(), "mlp");
  EXPECT_EQ(loaded.graph().str(), listing);
  CheckBatches(loaded, [&](const Tensor& x) { return mlp->forward(x); }, {20}, true);
  // Wrong inputs are refused naming the spec.
  ExpectError([&] { loaded.forward(randn({3, 21})); }, {"[jit::run]", "input 0 'x'", "f32[B,20]", "f32[3, 21]"});
  ExpectError([&] { loaded.forward(randn({3, 20}, TensorOptions(kFloat64))); }, {"f32[B,20]", "f64"});
  ExpectError([&] { loaded.run({randn({3, 20}), randn({3, 20})}); }, {"takes 1 inputs, got 2"});
}

TEST(JitTrace, CnnWithBatchNormFrozenAndFolded) {
  manual_seed(2);
  auto cnn = Cnn();
  Randomize(*cnn);
  cnn->eval();
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  jit::GraphModule g = jit::trace(*cnn, randn({2, 1, 28, 28}), opt);
  EXPECT_EQ(g.graph().op_histogram().at("batch_norm"), 2);
  CheckBatches(g, [&](const Tensor& x) { return cnn->forward(x); }, {1, 28, 28}, true);

  jit::GraphModule frozen = jit::freeze(g);
  const auto hist = frozen.graph().op_histogram();
  EXPECT_EQ(hist.count("batch_norm"), 0u) << frozen.graph();
  EXPECT_EQ(hist.count("relu"), 0u) << frozen.graph();  // fused into the convs
  EXPECT_EQ(hist.at("conv2d"), 2);
  EXPECT_NE(frozen.graph().str().find("activation=\"relu\""), std::string::npos);
  CheckBatches(frozen, [&](const Tensor& x) { return cnn->forward(x); }, {1, 28, 28}, false);

  // Freezing copies the weights: training the model on does not change the frozen graph.
  Tensor x = randn({3, 1, 28, 28});
  Tensor before = frozen.forward(x);
  {
    NoGradGuard ng;
    for (auto& p : cnn->parameters()) p.add_(1.0);
  }
  ExpectSame(frozen.forward(x), before);

  const std::string path = TempPath("cnn.ember");
  jit::save(frozen, path);
  ExpectSame(jit::load(path).forward(x), before);
}

// LSTM classifier: the last step's hidden state through a linear head.
struct LstmClassifierImpl : nn::Module {
  nn::LSTM lstm{nullptr};
  nn::Linear head{nullptr};
  LstmClassifierImpl() : nn::Module("LstmClassifier") {
    lstm = register_module("lstm", nn::LSTM(nn::LSTMOptions(6, 12).num_layers(2).batch_first(true)));
    head = register_module("head", nn::Linear(12, 3));
  }
  Tensor forward(const Tensor& x) override {
    auto [out, state] = lstm->forward(x, std::nullopt);
    return head(std::get<0>(state).select(0, -1));
  }
};

TEST(JitTrace, LstmClassifier) {
  manual_seed(3);
  auto model = std::make_shared<LstmClassifierImpl>();
  model->eval();
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  jit::GraphModule g = jit::trace(*model, randn({3, 5, 6}), opt);
  CheckBatches(g, [&](const Tensor& x) { return model->forward(x); }, {5, 6}, true);
  CheckBatches(jit::freeze(g), [&](const Tensor& x) { return model->forward(x); }, {5, 6}, false);
}

TEST(JitTrace, TransformerEncoderWithMasks) {
  manual_seed(4);
  nn::TransformerEncoderLayer layer(
      nn::TransformerEncoderLayerOptions(16, 4).dim_feedforward(32).dropout(0.1).batch_first(true));
  nn::TransformerEncoder enc(layer, 2);
  enc->eval();
  const int64_t L = 6;
  Tensor causal = ones({L, L}, TensorOptions(kBool)).triu(1);
  auto fn = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{enc->forward(in[0], causal, in[1])}; };
  auto padding = [&](int64_t b) {
    Tensor m = zeros({b, L}, TensorOptions(kBool));
    m.select(1, L - 1).fill_(true);
    return m;
  };
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  opt.input_names = {"src", "padding_mask"};
  // The causal mask is captured by the function, not passed in: refused unless allowed.
  ExpectError([&] { jit::trace(*enc, fn, {randn({3, L, 16}), padding(3)}, opt); },
              {"[jit::trace]", "input 1 of 'masked_fill'", "bool[6, 6]", "allow_constants"});
  opt.allow_constants = true;
  jit::GraphModule g = jit::trace(*enc, fn, {randn({3, L, 16}), padding(3)}, opt);
  for (int64_t b : {1, 7, 64}) {
    Tensor x = randn({b, L, 16});
    Tensor m = padding(b);
    ExpectSame(g.run({x, m})[0], fn({x, m})[0]);
    ExpectClose(jit::freeze(g).run({x, m})[0], fn({x, m})[0], 1e-4, 1e-5);
  }
}

// Shared weights (one Linear used twice) and two outputs.
struct TwoHeadsImpl : nn::Module {
  nn::Linear shared{nullptr}, a{nullptr}, b{nullptr};
  TwoHeadsImpl() : nn::Module("TwoHeads") {
    shared = register_module("shared", nn::Linear(8, 8));
    a = register_module("a", nn::Linear(8, 2));
    b = register_module("b", nn::Linear(8, 3));
  }
  std::vector<Tensor> both(const Tensor& x) {
    Tensor h = shared(shared(x).tanh());  // the same weights twice
    return {a(h).softmax(-1), b(h) * 2.0 + 1.0};
  }
};

TEST(JitTrace, SharedWeightsAndMultipleOutputs) {
  manual_seed(5);
  auto m = std::make_shared<TwoHeadsImpl>();
  m->eval();
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  opt.output_names = {"probs", "scores"};
  jit::GraphModule g = jit::trace(*m, [&](const std::vector<Tensor>& in) { return m->both(in[0]); }, {randn({4, 8})}, opt);
  // One parameter var per tensor, however often it is used.
  EXPECT_EQ(g.graph().parameter_count(), 8 * 8 + 8 + 8 * 2 + 2 + 8 * 3 + 3);
  EXPECT_EQ(g.graph().output_names, (std::vector<std::string>{"probs", "scores"}));
  jit::GraphModule frozen = jit::freeze(g);
  // b(h) * 2 + 1 became one fused node.
  EXPECT_EQ(frozen.graph().op_histogram().count("fused_elementwise"), 1u) << frozen.graph();
  const std::string path = TempPath("heads.ember");
  jit::save(frozen, path);
  jit::GraphModule loaded = jit::load(path);
  for (int64_t b : {1, 7, 64}) {
    Tensor x = randn({b, 8});
    std::vector<Tensor> want = m->both(x);
    std::vector<Tensor> got = g.run({x});
    ASSERT_EQ(got.size(), 2u);
    ExpectSame(got[0], want[0]);
    ExpectSame(got[1], want[1]);
    std::vector<Tensor> got2 = loaded.run({x});
    ExpectClose(got2[0], want[0]);
    ExpectClose(got2[1], want[1]);
  }
}

TEST(JitTrace, DataDependentBranchIsRefused) {
  auto mlp = Mlp();
  mlp->eval();
  auto fn = [&](const std::vector<Tensor>& in) {
    Tensor h = mlp->forward(in[0]);
    if (h.sum().item().to_double() > 0) return std::vector<Tensor>{h.relu()};
    return std::vector<Tensor>{h};
  };
  ExpectError([&] { jit::trace(*mlp, fn, {randn({2, 20})}); }, {"[item]", "traced tensor", "baked in", "mark_constant"});
  // nonzero's shape depends on the data.
  ExpectError([&] { jit::trace([](const std::vector<Tensor>& in) { return std::vector<Tensor>{nonzero(in[0])}; },
                               {randn({3})}); },
              {"[nonzero]", "traced tensor"});
  // Marked constant, the value may be read (and is baked in).
  jit::GraphModule g = jit::trace(
      [](const std::vector<Tensor>& in) {
        Tensor s = in[0].sum();
        jit::mark_constant(s);
        return std::vector<Tensor>{in[0] * s.item().to_double()};
      },
      {ones({3})});
  ExpectSame(g.forward(ones({3})), full({3}, 3.0));
  ExpectSame(g.forward(full({3}, 2.0)), full({3}, 6.0));  // 3 baked in, as asked
  EXPECT_FALSE(jit::is_tracing());
}

TEST(JitTrace, TrainModeWarnsAndTracingDoesNotChangeTheModel) {
  auto cnn = Cnn();
  cnn->train();
  std::vector<std::string> warnings;
  WarningHandler old = set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  Tensor before = cnn->named_buffers()["1.running_mean"].clone();
  jit::GraphModule g = jit::trace(*cnn, randn({4, 1, 28, 28}));
  set_warning_handler(old);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("training mode"), std::string::npos);
  EXPECT_NE(warnings[0].find("eval()"), std::string::npos);
  ExpectSame(cnn->named_buffers()["1.running_mean"], before);
  EXPECT_NE(g.graph().str().find("training=True"), std::string::npos);
}

TEST(JitTrace, CapturedTensorsAndUnknownInputs) {
  Tensor captured = randn({3});
  auto fn = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + captured}; };
  ExpectError([&] { jit::trace(fn, {randn({3})}); }, {"input 1 of 'add'", "f32[3]", "allow_constants"});
  jit::TraceOptions opt;
  opt.allow_constants = true;
  jit::GraphModule g = jit::trace(fn, {randn({3})}, opt);
  Tensor x = randn({3});
  ExpectSame(g.forward(x), x + captured);
  ExpectError([] { jit::mark_constant(ones({1})); }, {"outside jit::trace"});
}

TEST(JitTrace, InPlaceOpsRecordTheirValue) {
  jit::GraphModule g = jit::trace(
      [](const std::vector<Tensor>& in) {
        Tensor h = in[0] * 2.0;
        h.relu_();
        h.add_(1.0);
        return std::vector<Tensor>{h};
      },
      {randn({5})});
  EXPECT_EQ(g.graph().op_histogram(), (std::map<std::string, int>{{"add", 1}, {"mul", 1}, {"relu", 1}}));
  Tensor x = randn({5});
  ExpectSame(g.forward(x), (x * 2.0).relu() + 1.0);
  // Writing through a view of a traced tensor cannot be followed.
  ExpectError([] {
    jit::trace(
        [](const std::vector<Tensor>& in) {
          Tensor h = in[0] * 1.0;
          Tensor v = h.narrow(0, 0, 2);
          v.mul_(3.0);
          return std::vector<Tensor>{h};
        },
        {randn({5})});
  }, {"in-place", "shares memory"});
}

TEST(JitTrace, BatchDependentGraphIsRefused) {
  // A forward whose op sequence depends on the batch size cannot have one dynamic graph.
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor x = in[0];
    for (int64_t i = 0; i < x.size(0); ++i) x = x * 2.0;
    return std::vector<Tensor>{x};
  };
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  ExpectError([&] { jit::trace(fn, {randn({2, 3})}, opt); }, {"different graph at batch size 2 and 3"});
  // Without dynamic dims it traces, for that shape only.
  jit::GraphModule g = jit::trace(fn, {randn({2, 3})});
  ExpectError([&] { g.forward(randn({3, 3})); }, {"f32[2,3]"});
}

}  // namespace jit_trace_test
}  // namespace ember
