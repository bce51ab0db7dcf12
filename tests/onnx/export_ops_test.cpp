// onnx::export_model op by op, beyond the first families (export_test.cpp): gelu and the
// other activations, group norm, embedding, joins and slices, reductions, expand and the
// selections by mask, creation ops, comparisons, addmm/baddbmm, transposed convolution,
// tril/triu, and the graphs of MultiheadAttention, LSTM and GRU (traced as their
// decomposed ops). Each file passes the ONNX checker and runs on OpenCV's dnn module where
// OpenCV 4.6 imports its ops, else on the numpy evaluator of validate_onnx.py, against the
// graph's own outputs within 1e-4 relative.

#include <ember/ember.h>
#include <ember/onnx/export.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "onnx/onnx_test_util.h"
#include "test_util.h"

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace onnx_export_ops_test {

using ember::testing::ExpectError;
using namespace ember::onnx_test;

using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

jit::GraphModule TraceFn(const Fn& fn, const std::vector<Tensor>& example, bool dynamic = true) {
  jit::TraceOptions opt;
  opt.dynamic_batch = dynamic;
  return jit::trace(fn, example, opt);
}

TEST(OnnxExportOps, GeluBothFormsRunInOpenCV) {
  manual_seed(11);
  auto lin = nn::Linear(6, 8);
  lin->eval();
  auto fn = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    Tensor h = lin(in[0]);
    return {gelu(h), gelu(h, "tanh")};
  };
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  jit::GraphModule g = jit::trace(*lin, fn, {randn({2, 6})}, opt);
  const std::string out = ExportAndCompare(g, "gelu", {6}, {}, Runtime::Both);
  EXPECT_TRUE(Has(out, "ops Gemm Div Erf Add Mul Mul Mul Mul Mul Add Mul Tanh Add Mul Mul\n")) << out;
  EXPECT_TRUE(Has(out, "output output1 FLOAT [B,8]")) << out;
  // Frozen: gelu is a step of a fused chain, written the same way.
  jit::GraphModule frozen = jit::freeze(g);
  ExportAndCompare(frozen, "gelu_frozen", {6}, Opset(13));
}

TEST(OnnxExportOps, ActivationsWithoutAnOnnxOp) {
  manual_seed(12);
  auto fn = [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    Tensor pos = x.abs() + 0.5;
    return {nn::functional::silu(x),
            nn::functional::leaky_relu(x, 0.2),
            x.softplus(2, 1.5),
            x.softplus(),
            pos.rsqrt() + pos.log1p() + pos.log2() - pos.log10(),
            x.expm1() + x.exp2(),
            x.trunc(),
            (x * 3).frac(),
            (x * 3).round(),
            x.tan() + x.atan() + x.sinh() - x.cosh(),
            (x * 0.5).asin() + (x * 0.5).acos(),
            logit(x.sigmoid(), 1e-3)};
  };
  jit::GraphModule g = TraceFn(fn, {randn({2, 7})});
  const std::string out = ExportAndCompare(g, "activations", {7}, {}, Runtime::Numpy);
  EXPECT_TRUE(Has(out, "Softplus")) << out;
  EXPECT_TRUE(Has(out, "LeakyRelu")) << out;
  EXPECT_TRUE(Has(out, "Where")) << out;  // softplus above its threshold is x
}

TEST(OnnxExportOps, GroupNormAsInstanceNormRunsInOpenCV) {
  manual_seed(13);
  auto m = nn::Sequential(nn::Conv2d(nn::Conv2dOptions(3, 8, 3).padding(1)), nn::GroupNorm(nn::GroupNormOptions(2, 8)),
                          nn::ReLU(), nn::GroupNorm(nn::GroupNormOptions(4, 8).affine(false)));
  {
    NoGradGuard ng;
    for (auto& it : m->named_parameters()) it.value().normal_(0.2, 0.5);
  }
  m->eval();
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  jit::GraphModule g = jit::trace(*m, randn({2, 3, 6, 6}), opt);
  ASSERT_EQ(g.graph().op_histogram().at("group_norm"), 2);
  const std::string out = ExportAndCompare(g, "group_norm", {3, 6, 6});
  EXPECT_TRUE(Has(out,
                  "ops Conv Reshape InstanceNormalization Reshape Mul Add Relu Reshape "
                  "InstanceNormalization Reshape\n"))
      << out;
  EXPECT_TRUE(Has(out, "reshape v")) << out;
  EXPECT_TRUE(Has(out, " [0,2,-1]\n")) << out;
  ExportAndCompare(g, "group_norm_np", {3, 6, 6}, Opset(14), Runtime::Numpy);
}

TEST(OnnxExportOps, EmbeddingIsGather) {
  manual_seed(14);
  auto emb = nn::Embedding(nn::EmbeddingOptions(10, 4).padding_idx(0));
  emb->eval();
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  opt.input_names = {"tokens"};
  jit::GraphModule g = jit::trace(*emb, randint(0, 10, {2, 5}), opt);
  // OpenCV's Python binding passes float arrays only: integer token ids run on numpy.
  const std::string out = ExportAndCompareInputs(
      g, "embedding",
      [](int64_t b) {
        return std::vector<Tensor>{randint(0, 10, {b, 5})};
      },
      {}, Runtime::Numpy);
  EXPECT_TRUE(Has(out, "input tokens INT64 [B,5]")) << out;
  EXPECT_TRUE(Has(out, "ops Gather\n")) << out;
  EXPECT_TRUE(Has(out, "output output0 FLOAT [B,5,4]")) << out;
}

// cat, stack, chunk, split, unbind, slice, narrow, select on [B, 2, 4, 6] (4-D: OpenCV's
// Python binding reads a 3-D array as an image with channels).
TEST(OnnxExportOps, JoinsSlicesAndSelections) {
  manual_seed(15);
  auto fn = [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    const Tensor& x = in[0];                                                       // [B, 2, 4, 6]
    std::vector<Tensor> halves = x.chunk(2, 3);                                    // 2 x [B, 2, 4, 3]
    std::vector<Tensor> parts = x.split_with_sizes({1, 3}, 2);                     // [B, 2, 1, 6], [B, 2, 3, 6]
    Tensor a = cat({halves[1], halves[0]}, 3);                                     // [B, 2, 4, 6]
    Tensor b = cat({parts[1], parts[0]}, 2) * 2.0;                                 // [B, 2, 4, 6]
    Tensor c = x.slice(3, 1, std::nullopt, 2) + x.narrow(3, 0, 3);                 // [B, 2, 4, 3]
    std::vector<Tensor> rows = x.unbind(1);                                        // 2 x [B, 4, 6]
    Tensor d = stack({rows[1], rows[0] * 0.5}, 1) + x.select(2, -1).unsqueeze(2);  // [B, 2, 4, 6]
    return {a + b + d, c};
  };
  jit::GraphModule g = TraceFn(fn, {randn({2, 2, 4, 6})});
  const auto hist = g.graph().op_histogram();
  for (const char* op : {"chunk", "split", "cat", "slice", "narrow", "unbind", "stack", "select"}) {
    EXPECT_EQ(hist.count(op), 1u) << op << "\n" << g.graph();
  }
  for (int opset : {13, 17}) {
    const std::string out =
        ExportAndCompare(g, "joins" + std::to_string(opset), {2, 4, 6}, Opset(opset), Runtime::Numpy);
    EXPECT_TRUE(Has(out, "Slice")) << out;
    EXPECT_TRUE(Has(out, "Concat")) << out;
    EXPECT_TRUE(Has(out, "Gather")) << out;
    EXPECT_TRUE(Has(out, "Unsqueeze")) << out;
  }
  // OpenCV 4.6 keeps the axis a Gather of a rank-0 index drops (select, unbind): the
  // slices and joins alone run there.
  auto cv_fn = [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    std::vector<Tensor> halves = x.chunk(2, 3);
    std::vector<Tensor> parts = x.split_with_sizes({1, 3}, 2);
    return {cat({halves[1], halves[0]}, 3) + cat({parts[1], parts[0]}, 2) * 2.0,
            x.slice(3, 1, std::nullopt, 2) + x.narrow(3, 0, 3)};
  };
  const std::string out =
      ExportAndCompare(TraceFn(cv_fn, {randn({2, 2, 4, 6})}), "joins_cv", {2, 4, 6}, {}, Runtime::Both);
  EXPECT_TRUE(Has(out, "ops Slice Slice Slice Slice Concat Mul Concat Add Slice Slice Add\n")) << out;
}

TEST(OnnxExportOps, Reductions) {
  manual_seed(16);
  auto fn = [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    const Tensor& x = in[0];  // [B, 3, 4, 5]
    return {x.sum({1}),
            x.sum({2, 3}, true),
            x.mean({-1}),
            x.mean({1, 3}, true),
            x.amax({2}),
            x.amin({1}, true),
            x.sum() + x.mean() + x.amax() - x.amin()};
  };
  jit::GraphModule g = TraceFn(fn, {randn({2, 3, 4, 5})});
  for (int opset : {13, 17}) {
    const std::string out =
        ExportAndCompare(g, "reduce" + std::to_string(opset), {3, 4, 5}, Opset(opset), Runtime::Numpy);
    EXPECT_TRUE(Has(out, "ReduceSum")) << out;
    EXPECT_TRUE(Has(out, "ReduceMean")) << out;
    EXPECT_TRUE(Has(out, "ReduceMax")) << out;
    EXPECT_TRUE(Has(out, "ReduceMin")) << out;
    EXPECT_TRUE(Has(out, "output output6 FLOAT []")) << out;
  }
  // OpenCV 4.6 reads ReduceMean/Max/Min with axes as an attribute (not ReduceSum's input),
  // but gives them wrong shapes when the batch dim is symbolic: a static graph runs there.
  auto cv_fn = [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {in[0].mean({2, 3}, true) + in[0].amax({2, 3}, true) - in[0].amin({2, 3}, true)};
  };
  ExportAndCompareInputs(TraceFn(cv_fn, {randn({5, 3, 4, 5})}, /*dynamic=*/false), "reduce_cv",
                         [](int64_t) {
                           return std::vector<Tensor>{randn({5, 3, 4, 5})};
                         },
                         {}, Runtime::OpenCV, {5});
}

TEST(OnnxExportOps, ExpandWhereMaskedFillClamp) {
  manual_seed(17);
  auto fn = [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    const Tensor& x = in[0];  // [B, 3, 4]
    Tensor col = x.select(2, 0).unsqueeze(2).expand({x.size(0), 3, 4});
    Tensor mask = x.gt(0.3);
    Tensor m = x.masked_fill(mask, -1.5);
    Tensor w = where(x.lt(col), x, col * 2.0);
    Tensor mt = x.masked_fill(x.lt(-1.0), full(std::vector<int64_t>{}, 7.0));
    return {col, m + w, x.clamp(Scalar(-0.5), Scalar(0.25)), x.clamp(std::nullopt, Scalar(0.1)), x.clamp(Scalar(-0.2)),
            mt};
  };
  jit::GraphModule g = TraceFn(fn, {randn({2, 3, 4})});
  const std::string out = ExportAndCompare(g, "select_mask", {3, 4}, {}, Runtime::Numpy);
  EXPECT_TRUE(Has(out, "Expand")) << out;
  EXPECT_TRUE(Has(out, "Where")) << out;
  EXPECT_TRUE(Has(out, "Clip")) << out;
}

TEST(OnnxExportOps, CreationOpsAsConstantsOrConstantOfShape) {
  auto fn = [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    const Tensor& x = in[0];  // [B, 4]
    Tensor fixed = ones({4}) + arange(0, 4, 1, TensorOptions(kFloat32)) + full({4}, 2.5);
    Tensor state = zeros({2, x.size(0), 4});  // follows the batch, as an LSTM's initial state
    return {x + fixed, state + x.unsqueeze(0)};
  };
  jit::GraphModule g = TraceFn(fn, {randn({2, 4})});
  ASSERT_NE(g.graph().str().find("zeros(size=[2, B, 4]"), std::string::npos) << g.graph();
  const std::string out = ExportAndCompare(g, "creation", {4}, {}, Runtime::Numpy);
  EXPECT_TRUE(Has(out, "Shape Gather Concat ConstantOfShape")) << out;  // [2, B, 4] from the input's B
  EXPECT_TRUE(Has(out, "output output1 FLOAT [2,B,4]")) << out;
}

// A reshape whose target has two dims that follow the batch at new places: ONNX infers one
// (-1) at most, so the target is computed from the input's batch size.
TEST(OnnxExportOps, ReshapeWithTwoBatchDimsComputesItsTarget) {
  auto fn = [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    Tensor m = in[0].matmul(in[0].t());  // [B, B]
    return {m.view({1, 1, m.size(0), m.size(1)}).tanh()};
  };
  jit::GraphModule g = TraceFn(fn, {randn({3, 4})});
  const std::string out = ExportAndCompare(g, "reshape_bb", {4}, {}, Runtime::Numpy);
  EXPECT_TRUE(Has(out, "output output0 FLOAT [1,1,B,B]")) << out;
  EXPECT_TRUE(Has(out, "Shape Gather")) << out;
}

TEST(OnnxExportOps, ComparisonsAndLogicalOps) {
  manual_seed(18);
  auto fn = [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    const Tensor& y = in[1];
    Tensor a = x.gt(y).logical_and(x.ge(0.0)).logical_or(x.eq(y));
    Tensor b = x.ne(y).logical_xor(x.le(-0.5)).logical_not();
    Tensor c = x.lt(1).to(kFloat32) + remainder(x * 4, 1.5) + fmod(x * 4, 1.5);
    return {a, b, c};
  };
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  jit::GraphModule g = jit::trace(fn, {randn({2, 5}), randn({2, 5})}, opt);
  const std::string out = ExportAndCompareInputs(
      g, "compare",
      [](int64_t b) {
        Tensor x = randn({b, 5});
        Tensor y = x.clone();
        y.select(1, 0).fill_(0.25);
        return std::vector<Tensor>{x, y};
      },
      {}, Runtime::Numpy);
  EXPECT_TRUE(Has(out, "output output0 BOOL [B,5]")) << out;
  for (const char* op : {"Greater", "GreaterOrEqual", "And", "Or", "Equal", "Not", "Xor", "LessOrEqual", "Mod"}) {
    EXPECT_TRUE(Has(out, op)) << op << "\n" << out;
  }
}

TEST(OnnxExportOps, AddmmBaddbmmAndTransposedConv) {
  manual_seed(19);
  Tensor m2 = randn({6, 3});
  Tensor bias = randn({3});
  Tensor batch2 = randn({4, 6, 2});
  auto fn = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {addmm(bias, in[0], m2, 0.5, 2.0)};  // [4, 6] @ [6, 3]
  };
  auto bfn = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {baddbmm(zeros({4, 1, 2}), in[0].unsqueeze(1), batch2, 1.0, 0.25)};
  };
  jit::TraceOptions opt;
  opt.allow_constants = true;
  auto inputs = [](int64_t) { return std::vector<Tensor>{randn({4, 6})}; };
  const std::string out =
      ExportAndCompareInputs(jit::trace(fn, {randn({4, 6})}, opt), "addmm", inputs, {}, Runtime::Both, {4});
  EXPECT_TRUE(Has(out, "ops MatMul Mul Add\n")) << out;  // the constant bias scaled by beta beforehand
  // OpenCV 4.6 does not multiply a 3-D input by a 3-D constant: numpy.
  const std::string bout =
      ExportAndCompareInputs(jit::trace(bfn, {randn({4, 6})}, opt), "baddbmm", inputs, {}, Runtime::Numpy, {4});
  EXPECT_TRUE(Has(bout, "ops Reshape MatMul Mul Add\n")) << bout;

  auto up = nn::ConvTranspose2d(nn::ConvTranspose2dOptions(3, 2, 3).stride(2).padding(1));
  auto up_pad = nn::ConvTranspose2d(nn::ConvTranspose2dOptions(3, 2, 3).stride(2).padding(1).output_padding(1));
  up->eval();
  up_pad->eval();
  jit::TraceOptions copt;
  copt.dynamic_batch = true;
  const std::string cout_ =
      ExportAndCompare(jit::trace(*up, randn({2, 3, 5, 5}), copt), "deconv", {3, 5, 5}, {}, Runtime::Both);
  EXPECT_TRUE(Has(cout_, "ops ConvTranspose\n")) << cout_;
  // OpenCV 4.6 refuses ConvTranspose's output_padding: numpy.
  ExportAndCompare(jit::trace(*up_pad, randn({2, 3, 5, 5}), copt), "deconv_pad", {3, 5, 5}, {}, Runtime::Numpy);
}

TEST(OnnxExportOps, TrilTriuFromOpset14AndAdaptivePools) {
  auto fn = [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {in[0].tril(), in[0].triu(1) * 2.0, in[0].tril(-1).sum({1})};
  };
  jit::GraphModule g = TraceFn(fn, {randn({2, 4, 4})});
  const std::string out = ExportAndCompare(g, "trilu", {4, 4}, Opset(14), Runtime::Numpy);
  EXPECT_TRUE(Has(out, "Trilu")) << out;
  ExpectError([&] { onnx::export_to_bytes(g, Opset(13)); },
              {"node 0 (op 'tril') has no ONNX form in opset 13", "Trilu arrives in opset 14"});

  auto pool = nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({2, 3}));
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  const std::string pout = ExportAndCompare(jit::trace(*pool, randn({2, 3, 6, 6}), opt), "adaptive", {3, 6, 6});
  EXPECT_TRUE(Has(pout, "ops AveragePool\n")) << pout;
  auto odd = nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({4, 4}));
  jit::GraphModule og = jit::trace(*odd, randn({2, 3, 6, 6}), opt);
  ExpectError([&] { onnx::export_to_bytes(og); },
              {"node 0 (op 'adaptive_avg_pool2d') has no ONNX form in opset 17", "4x4"});
}

// MultiheadAttention traces as its pieces: linear, view, permute, reshape, unbind, bmm,
// softmax, baddbmm with the masks, expand, masked_fill, sum.
TEST(OnnxExportOps, MultiheadAttentionGraph) {
  manual_seed(20);
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(8, 2).batch_first(true));
  {
    NoGradGuard ng;
    for (auto& it : mha->named_parameters()) it.value().normal_(0.0, 0.4);
  }
  mha->eval();
  const int64_t L = 5;
  auto fn = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    auto [out, weights] = mha->forward(in[0], in[0], in[0]);
    return {out, weights};
  };
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  opt.input_names = {"x"};
  jit::GraphModule g = jit::trace(*mha, fn, {randn({3, L, 8})}, opt);
  const std::string out = ExportAndCompare(g, "mha", {L, 8}, {}, Runtime::Numpy);
  EXPECT_TRUE(Has(out, "output output0 FLOAT [B,5,8]")) << out;
  EXPECT_TRUE(Has(out, "output output1 FLOAT [B,5,5]")) << out;
  EXPECT_TRUE(Has(out, "Softmax")) << out;

  // With a key padding mask (a bool input) and the causal mask.
  auto masked = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    auto [out, weights] = mha->forward(in[0], in[0], in[0], in[1], true, Tensor(), true, true);
    return {out};
  };
  auto padding = [&](int64_t b) {
    Tensor m = zeros({b, L}, TensorOptions(kBool));
    m.select(1, L - 1).fill_(true);
    return m;
  };
  opt.input_names = {"x", "padding"};
  jit::GraphModule mg = jit::trace(*mha, masked, {randn({3, L, 8}), padding(3)}, opt);
  const std::string mout = ExportAndCompareInputs(
      mg, "mha_masked",
      [&](int64_t b) {
        return std::vector<Tensor>{randn({b, L, 8}), padding(b)};
      },
      Opset(14), Runtime::Numpy);
  EXPECT_TRUE(Has(mout, "input padding BOOL [B,5]")) << mout;
  EXPECT_TRUE(Has(mout, "Where")) << mout;
  ExportAndCompareInputs(
      jit::freeze(mg), "mha_masked_frozen",
      [&](int64_t b) {
        return std::vector<Tensor>{randn({b, L, 8}), padding(b)};
      },
      Opset(14), Runtime::Numpy);
}

// A transformer encoder (two layers, gelu, causal mask given as a graph input): attention,
// layer norm, gelu and the feed-forward linears together.
TEST(OnnxExportOps, TransformerEncoderGraph) {
  manual_seed(22);
  nn::TransformerEncoderLayer layer(
      nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.1).activation("gelu").batch_first(true));
  nn::TransformerEncoder enc(layer, 2);
  enc->eval();
  const int64_t L = 4;
  auto fn = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{enc->forward(in[0])}; };
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  jit::GraphModule g = jit::trace(*enc, fn, {randn({3, L, 8})}, opt);
  for (int opset : {14, 17}) {
    const std::string out =
        ExportAndCompare(g, "encoder" + std::to_string(opset), {L, 8}, Opset(opset), Runtime::Numpy);
    EXPECT_TRUE(Has(out, "Erf")) << out;
    EXPECT_TRUE(Has(out, opset == 17 ? "LayerNormalization" : "ReduceMean")) << out;
  }
  ExportAndCompare(jit::freeze(g), "encoder_frozen", {L, 8}, {}, Runtime::Numpy);
}

struct RecurrentClassifierImpl : nn::Module {
  nn::LSTM lstm{nullptr};
  nn::GRU gru{nullptr};
  nn::Linear head{nullptr};
  RecurrentClassifierImpl() : nn::Module("RecurrentClassifier") {
    lstm = register_module("lstm", nn::LSTM(nn::LSTMOptions(6, 12).num_layers(2).batch_first(true)));
    gru = register_module("gru", nn::GRU(nn::GRUOptions(12, 5).batch_first(true)));
    head = register_module("head", nn::Linear(5, 3));
  }
  Tensor forward(const Tensor& x) override {
    auto [out, state] = lstm->forward(x, std::nullopt);
    auto [gout, h] = gru->forward(out);
    return head(h.select(0, -1)) + gout.sum({1}).amax({1}, true);
  }
};

TEST(OnnxExportOps, LstmAndGruGraphs) {
  manual_seed(21);
  auto model = std::make_shared<RecurrentClassifierImpl>();
  model->eval();
  jit::TraceOptions opt;
  opt.dynamic_batch = true;
  jit::GraphModule g = jit::trace(*model, randn({3, 4, 6}), opt);
  const auto hist = g.graph().op_histogram();
  EXPECT_GT(hist.count("chunk"), 0u) << g.graph();
  EXPECT_GT(hist.count("zeros"), 0u) << g.graph();
  const std::string out = ExportAndCompare(g, "rnn", {4, 6}, {}, Runtime::Numpy);
  EXPECT_TRUE(Has(out, "ConstantOfShape")) << out;  // the initial states [layers, B, H]
  EXPECT_TRUE(Has(out, "output output0 FLOAT [B,3]")) << out;
  ExportAndCompare(jit::freeze(g), "rnn_frozen", {4, 6}, Opset(13), Runtime::Numpy);
}

TEST(OnnxExportOps, RefusedOpsNameNodeAndOpset) {
  auto fn = [](const std::vector<Tensor>& in) -> std::vector<Tensor> { return {atan2(in[0], in[0] + 1.0)}; };
  jit::GraphModule g = TraceFn(fn, {randn({2, 3})});
  ExpectError([&] { onnx::export_to_bytes(g, Opset(16)); },
              {"[onnx::export] node 1 (op 'atan2') has no ONNX form in opset 16", "no conversion"});
  // embedding with max_norm rewrites the weight it reads.
  auto emb = nn::Embedding(nn::EmbeddingOptions(10, 4).max_norm(1.0));
  emb->eval();
  jit::TraceOptions opt;
  opt.check = false;
  jit::GraphModule eg = jit::trace(*emb, randint(0, 10, {2, 5}), opt);
  ExpectError([&] { onnx::export_to_bytes(eg); }, {"op 'embedding'", "max_norm"});
}

}  // namespace onnx_export_ops_test
}  // namespace ember
