// onnx::load: ember's own exported files read back into jit graphs (the CNN with batch
// norm, the MLP, layer norm in both forms, softmax, embedding, slices, joins, reductions)
// run like the graphs they came from at every batch size; files ember cannot read are refused naming the node, op and
// opset. PyTorch's exported files are read in torch_compare_test.cpp.

#include <ember/ember.h>
#include <ember/onnx/export.h>
#include <ember/onnx/load.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "onnx/onnx_test_util.h"
#include "test_util.h"

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace onnx_load_test {

using ember::testing::ExpectError;
using namespace ember::onnx_test;

double MaxRel(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.sizes().vec(), want.sizes().vec());
  return (got - want).abs().amax().item().to_double() / want.abs().amax().item().to_double();
}

jit::GraphModule RoundTrip(const jit::GraphModule& g, const std::string& name, int opset = 17) {
  const std::string path = TempPath(name + "_roundtrip.onnx");
  onnx::export_model(g, path, Opset(opset));
  return onnx::load(path);
}

TEST(OnnxLoad, CnnRoundTripServesEveryBatch) {
  manual_seed(41);
  auto cnn = nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 8, 3).padding(1)), nn::BatchNorm2d(8), nn::ReLU(),
                            nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Conv2d(nn::Conv2dOptions(8, 16, 3).padding(1)),
                            nn::ReLU(), nn::AvgPool2d(nn::AvgPool2dOptions(2)), nn::Flatten(),
                            nn::Linear(16 * 7 * 7, 10), nn::LogSoftmax(1));
  ember::testing::RandomizeNormStats(*cnn);
  cnn->eval();
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  opt.input_names = {"images"};
  opt.output_names = {"logits"};
  jit::GraphModule g = jit::trace(*cnn, randn({2, 1, 28, 28}), opt);
  g.metadata()["model_name"] = "cnn";
  for (int opset : {13, 17}) {
    jit::GraphModule loaded = RoundTrip(g, "cnn", opset);
    const std::string text = loaded.graph().str();
    EXPECT_NE(text.find("graph(%images: f32[B,1,28,28])"), std::string::npos) << text;
    EXPECT_EQ(loaded.graph().op_histogram(), g.graph().op_histogram()) << text;
    EXPECT_EQ(loaded.metadata().at("producer_name").to_string(), "ember");
    EXPECT_EQ(loaded.metadata().at("model_name").to_string(), "cnn");
    for (int64_t b : {1, 3, 8}) {
      const Tensor x = randn({b, 1, 28, 28});
      EXPECT_LE(MaxRel(loaded.forward(x), g.forward(x)), 1e-6) << "batch " << b;
    }
  }
  // The frozen graph (batch norm folded into the conv, relu fused) reads back too.
  jit::GraphModule frozen = jit::freeze(g);
  jit::GraphModule loaded = RoundTrip(frozen, "cnn_frozen");
  const Tensor x = randn({4, 1, 28, 28});
  EXPECT_LE(MaxRel(loaded.forward(x), g.forward(x)), 1e-5);
}

TEST(OnnxLoad, MlpWithLayerNormAndReshapes) {
  manual_seed(42);
  auto m = nn::Sequential(nn::Linear(12, 12), nn::LayerNorm(std::vector<int64_t>{12}), nn::Tanh());
  m->eval();
  auto fn = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    Tensor h = m->forward(in[0]).view({-1, 3, 4}).permute({0, 2, 1});
    return {softmax(h.reshape({-1, 12}), 1) + h.reshape({-1, 12}).sigmoid()};
  };
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  jit::GraphModule g = jit::trace(*m, fn, {randn({2, 12})}, opt);
  jit::GraphModule loaded = RoundTrip(g, "mlp_ln");
  for (int64_t b : {1, 6}) {
    const Tensor x = randn({b, 12});
    EXPECT_LE(MaxRel(loaded.forward(x), g.forward(x)), 1e-6) << "batch " << b;
  }
  // Opset 16 writes layer norm as ReduceMean, Sub, Mul, Sqrt, Div: read back op by op.
  jit::GraphModule loaded16 = RoundTrip(g, "mlp_ln16", 16);
  EXPECT_EQ(loaded16.graph().op_histogram().count("layer_norm"), 0u);
  EXPECT_EQ(loaded16.graph().op_histogram().at("mean"), 2);
  const Tensor x = randn({5, 12});
  EXPECT_LE(MaxRel(loaded16.forward(x), g.forward(x)), 1e-6);
}

// Embedding (Gather of rows), select (Gather of one index), narrow/slice (Slice), cat,
// stack (Unsqueeze, Concat) and the reductions, with an int64 input and several outputs.
TEST(OnnxLoad, EmbeddingSlicesAndReductions) {
  manual_seed(43);
  auto emb = nn::Embedding(10, 4);
  emb->eval();
  auto fn = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    Tensor e = emb(in[0]);                                     // [B, 5, 4]
    Tensor h = cat({e.slice(1, 0, 3), e.narrow(1, 2, 3)}, 1);  // [B, 6, 4]
    Tensor s = stack({e.select(1, 0), e.select(1, -1)}, 1);    // [B, 2, 4]
    return {h.sum({1}), s.mean({2}, true), e.amax({1}) - e.amin({2}).sum({1}, true)};
  };
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  jit::GraphModule g = jit::trace(*emb, fn, {randint(0, 10, {2, 5})}, opt);
  jit::GraphModule loaded = RoundTrip(g, "embedding", 13);
  EXPECT_NE(loaded.graph().str().find("i64[B,5]"), std::string::npos) << loaded.graph();
  for (int64_t b : {1, 4}) {
    const Tensor tokens = randint(0, 10, {b, 5});
    const std::vector<Tensor> want = g.run({tokens}), got = loaded.run({tokens});
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) EXPECT_LE(MaxRel(got[k], want[k]), 1e-6) << "output " << k;
  }
}

// Attention without masks exports as reshapes, rank-0 Gathers (unbind), MatMul, Softmax and
// ReduceSum: a transformer encoder reads back and serves every batch size.
TEST(OnnxLoad, TransformerEncoderRoundTrip) {
  manual_seed(44);
  nn::TransformerEncoderLayer layer(
      nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).activation("gelu").batch_first(true));
  nn::TransformerEncoder enc(layer, 2);
  enc->eval();
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  jit::GraphModule g = jit::trace(*enc, randn({3, 4, 8}), opt);
  for (int opset : {16, 17}) {
    jit::GraphModule loaded = RoundTrip(g, "encoder", opset);
    for (int64_t b : {1, 6}) {
      const Tensor x = randn({b, 4, 8});
      EXPECT_LE(MaxRel(loaded.forward(x), g.forward(x)), 1e-5) << "opset " << opset << " batch " << b;
    }
  }
}

// Group norm (Reshape, InstanceNormalization, affine), transposed convolution with output
// padding, comparisons, Where, Cast, Trilu, Expand: a static attention with a bool key
// padding mask and the causal mask reads back too.
TEST(OnnxLoad, GroupNormDeconvMasksAndComparisons) {
  manual_seed(45);
  auto m = nn::Sequential(
      nn::Conv2d(nn::Conv2dOptions(3, 8, 3).padding(1)), nn::GroupNorm(nn::GroupNormOptions(2, 8)), nn::ReLU(),
      nn::ConvTranspose2d(nn::ConvTranspose2dOptions(8, 2, 3).stride(2).padding(1).output_padding(1)));
  {
    NoGradGuard ng;
    for (auto& it : m->named_parameters()) it.value().normal_(0.2, 0.5);
  }
  m->eval();
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  jit::GraphModule g = jit::trace(*m, randn({2, 3, 6, 6}), opt);
  jit::GraphModule loaded = RoundTrip(g, "group_norm_deconv");
  EXPECT_EQ(loaded.graph().op_histogram().at("conv_transpose2d"), 1);
  for (int64_t b : {1, 5}) {
    const Tensor x = randn({b, 3, 6, 6});
    EXPECT_LE(MaxRel(loaded.forward(x), g.forward(x)), 1e-5) << "batch " << b;
  }

  auto cmp = [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    return {x.gt(0.2).logical_and(x.le(1.0)).logical_not(),
            x.lt(1).to(kFloat32) + x.ne(0.5).to(kFloat32) + fmod(x * 3, 0.7) + (x * 3).round() +
                nn::functional::leaky_relu(x, 0.2) + x.clamp(Scalar(-0.3), Scalar(0.4)) + x.clamp(Scalar(0.1)) +
                x.tan()};
  };
  jit::GraphModule cg = jit::trace(cmp, {randn({2, 5})}, opt);
  jit::GraphModule cloaded = RoundTrip(cg, "compare");
  const Tensor x = randn({4, 5});
  const std::vector<Tensor> want = cg.run({x}), got = cloaded.run({x});
  EXPECT_TRUE(got[0].equal(want[0]));
  EXPECT_TRUE(got[1].equal(want[1]));

  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(8, 2).batch_first(true));
  mha->eval();
  const int64_t L = 5;
  auto masked = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    auto [out, weights] = mha->forward(in[0], in[0], in[0], in[1], true, Tensor(), true, true);
    return {out, weights};
  };
  Tensor pad = zeros({3, L}, TensorOptions(kBool));
  pad.select(1, L - 1).fill_(true);
  jit::GraphModule mg = jit::trace(*mha, masked, {randn({3, L, 8}), pad}, jit::TraceOptions());
  jit::GraphModule mloaded = RoundTrip(mg, "mha_masked", 14);
  const Tensor q = randn({3, L, 8});
  const std::vector<Tensor> mwant = mg.run({q, pad}), mgot = mloaded.run({q, pad});
  for (size_t k = 0; k < 2; ++k) EXPECT_LE(MaxRel(mgot[k], mwant[k]), 1e-5) << "output " << k;
}

// Batch-sized constants (an LSTM's initial state, an attention's padding mask) are written
// as ConstantOfShape of sizes computed from Shape; load turns them back into size
// attributes that follow the batch.
TEST(OnnxLoad, RecurrentAndMaskedAttentionGraphsWithADynamicBatch) {
  manual_seed(46);
  nn::LSTM lstm(nn::LSTMOptions(6, 12).num_layers(2).batch_first(true));
  nn::GRU gru(nn::GRUOptions(12, 5).batch_first(true));
  lstm->eval();
  gru->eval();
  auto fn = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    auto [out, state] = lstm->forward(in[0], std::nullopt);
    auto [gout, h] = gru->forward(out);
    return {gout, std::get<1>(state), h};
  };
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  opt.allow_constants = true;  // the GRU's weights: constants of a graph traced from the LSTM
  jit::GraphModule g = jit::trace(*lstm, fn, {randn({3, 4, 6})}, opt);
  opt.allow_constants = false;
  jit::GraphModule loaded = RoundTrip(g, "rnn");
  EXPECT_NE(loaded.graph().str().find("full(size=[2, B, 12]"), std::string::npos) << loaded.graph();
  for (int64_t b : {1, 6}) {
    const Tensor x = randn({b, 4, 6});
    const std::vector<Tensor> want = g.run({x}), got = loaded.run({x});
    for (size_t k = 0; k < want.size(); ++k)
      EXPECT_LE(MaxRel(got[k], want[k]), 1e-5) << "batch " << b << " output " << k;
  }

  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(8, 2).batch_first(true));
  mha->eval();
  const int64_t L = 5;
  auto masked = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    auto [out, weights] = mha->forward(in[0], in[0], in[0], in[1], true, Tensor(), true, true);
    return {out};
  };
  auto padding = [&](int64_t b) {
    Tensor m = zeros({b, L}, TensorOptions(kBool));
    m.select(1, L - 1).fill_(true);
    return m;
  };
  jit::GraphModule mg = jit::trace(*mha, masked, {randn({3, L, 8}), padding(3)}, opt);
  jit::GraphModule mloaded = RoundTrip(mg, "mha_dynamic", 14);
  for (int64_t b : {1, 4}) {
    const Tensor q = randn({b, L, 8});
    EXPECT_LE(MaxRel(mloaded.run({q, padding(b)})[0], mg.run({q, padding(b)})[0]), 1e-5) << "batch " << b;
  }
}

TEST(OnnxLoad, FilesItCannotReadAreRefused) {
  // softplus is written with Softplus, which load does not read (ONNX's has no threshold).
  auto fn = [](const std::vector<Tensor>& in) -> std::vector<Tensor> { return {in[0].softplus().relu()}; };
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  ExpectError(
      [&] {
        RoundTrip(jit::trace(fn, {randn({2, 3})}, opt), "where");
      },
      {"[onnx::load] node 0 ('n0_Softplus', op Softplus) in opset 17 has no ember form", "ember reads no Softplus yet",
       "docs/onnx.md"});
  ExpectError([] { onnx::load(TempPath("no_such_file.onnx")); }, {"[onnx::load] cannot open"});
  // Two dims that vary independently (written by the ONNX package's own helper).
  const std::string two_dims = TempPath("two_dims.onnx");
  const Validation made = RunCommand(
      "/usr/bin/python3 -c \"import onnx; from onnx import helper as h, TensorProto as T; "
      "x = h.make_tensor_value_info('x', T.FLOAT, ['batch', 'seq']); "
      "y = h.make_tensor_value_info('y', T.FLOAT, ['batch', 'seq']); "
      "g = h.make_graph([h.make_node('Relu', ['x'], ['y'])], 'g', [x], [y]); "
      "onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 17)]), '" +
      two_dims + "')\"");
  ASSERT_EQ(made.status, 0) << made.output;
  ExpectError([&] { onnx::load(two_dims); }, {"[onnx::load] graph input 'x'", "'batch' and 'seq'", "one dynamic dim"});
  const std::string junk = TempPath("junk.onnx");
  std::ofstream(junk) << "this is not protobuf";
  ExpectError([&] { onnx::load(junk); }, {"[onnx::load]", "is not an ONNX model"});
}

}  // namespace onnx_load_test
}  // namespace ember
