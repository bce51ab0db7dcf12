// The libtorch compatibility surface (src/ember/torch.h and the libtorch-shaped APIs it
// relies on): index lists, nested torch::tensor, resize_/set_data, Scalar accessors,
// layouts, warnings through c10::Warning, TORCH_CHECK, and the autograd semantics that
// libtorch code depends on (mark_dirty, retain_grad after in-place ops, views under
// no-grad, empty input lists).

#include <ember/torch.h>
#include <gtest/gtest.h>

#include <optional>
#include <sstream>
#include <string>
#include <vector>


namespace torch {
namespace nn {
// Code may reopen torch::nn (libtorch's own tests do); ember's names stay visible in it.
inline int reopened_namespace_marker() { return 7; }
}  // namespace nn
}  // namespace torch

namespace {

using namespace torch::indexing;

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const ember::Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(TorchCompat, TensorDataContainerAccessorsCheckTheKind) {
  EXPECT_TRUE(contains(error_of([] { (void)torch::detail::TensorDataContainer(1.1).init_list(); }),
                       "Can only call `init_list()` on a TensorDataContainer that has `is_init_list() == true`"));
  EXPECT_TRUE(contains(error_of([] { (void)torch::detail::TensorDataContainer({1.1, 2.2}).scalar(); }),
                       "Can only call `scalar()` on a TensorDataContainer that has `is_scalar() == true`"));
  EXPECT_TRUE(contains(error_of([] { (void)torch::detail::TensorDataContainer(1.1).tensor(); }),
                       "Can only call `tensor()` on a TensorDataContainer that has `is_tensor() == true`"));
  EXPECT_EQ(torch::detail::TensorDataContainer(2.5).scalar().toDouble(), 2.5);
  EXPECT_EQ(torch::detail::TensorDataContainer({1.1, 2.2}).init_list().size(), 2u);
}

TEST(TorchCompat, ModuleToDeviceExtendFromContainersAndDefaultArgsInSequential) {
  torch::nn::Linear fc(torch::nn::LinearOptions(3, 2).bias(false));
  fc->to(torch::kCPU);
  fc->to(torch::Device("cpu"), torch::kFloat64);
  EXPECT_EQ(fc->weight.dtype(), torch::kFloat64);
  EXPECT_FALSE(fc->bias.defined());
  EXPECT_TRUE(contains(error_of([&] { fc->to(torch::kCUDA); }), "ember runs on the CPU only"));
  torch::nn::Sequential seq(torch::nn::Linear(2, 2));
  std::vector<std::shared_ptr<torch::nn::ReLUImpl>> more = {std::make_shared<torch::nn::ReLUImpl>(),
                                                           std::make_shared<torch::nn::ReLUImpl>()};
  seq->extend(more);
  ASSERT_EQ(seq->size(), 3u);
  EXPECT_NE(std::dynamic_pointer_cast<torch::nn::ReLUImpl>(seq[2]), nullptr);
  // MultiheadAttention's trailing forward arguments have defaults, so a Sequential can call
  // it with query, key and value only.
  torch::nn::Sequential attn(torch::nn::MultiheadAttention(4, 2));
  const torch::Tensor q = torch::randn({3, 2, 4});
  auto [out, weights] = attn->forward<std::tuple<torch::Tensor, torch::Tensor>>(q, q, q);
  EXPECT_EQ(out.sizes(), q.sizes());
  EXPECT_EQ(weights.sizes(), (std::vector<int64_t>{2, 3, 3}));
}

TEST(TorchCompat, CompatHeaderSelectsPyTorchGenerator) {
  if (std::getenv("EMBER_GENERATOR") != nullptr) GTEST_SKIP() << "EMBER_GENERATOR is set";
  EXPECT_EQ(ember::default_generator_kind(), ember::GeneratorKind::MT19937);
  torch::manual_seed(0);
  const std::vector<float> v = torch::randn({3}).to_vector<float>();
  // PyTorch: torch.manual_seed(0); torch.randn(3) -> [1.5410, -0.2934, -2.1788]
  EXPECT_NEAR(v[0], 1.5410f, 1e-4);
  EXPECT_NEAR(v[1], -0.2934f, 1e-4);
  EXPECT_NEAR(v[2], -2.1788f, 1e-4);
  torch::manual_seed(0);
  const std::vector<float> u = torch::rand({3}).to_vector<float>();
  // torch.manual_seed(0); torch.rand(3) -> [0.4963, 0.7682, 0.0885]
  EXPECT_NEAR(u[0], 0.4963f, 1e-4);
  EXPECT_NEAR(u[1], 0.7682f, 1e-4);
  EXPECT_NEAR(u[2], 0.0885f, 1e-4);
}

TEST(TorchCompat, SliceAndTensorIndexPrinting) {
  EXPECT_EQ(c10::str(Slice(1, 2, 3)), "1:2:3");
  EXPECT_EQ(c10::str(std::vector<TensorIndex>{Slice()}), c10::str("(0:", INDEX_MAX, ":1)"));
  EXPECT_EQ(c10::str(std::vector<TensorIndex>{Slice(None, None, -1)}), c10::str("(", INDEX_MAX, ":", INDEX_MIN, ":-1)"));
  std::vector<TensorIndex> items = {None, "...", Ellipsis, 0, true, Slice(1, None, 2)};
  EXPECT_EQ(c10::str(items), c10::str("(None, ..., ..., 0, true, 1:", INDEX_MAX, ":2)"));
  EXPECT_TRUE(items[1].is_ellipsis());
  EXPECT_TRUE(items[4].is_boolean());
  EXPECT_TRUE(contains(error_of([] { TensorIndex(".."); }), "Expected \"...\" to represent an ellipsis index, but got \"..\""));
}

TEST(TorchCompat, IndexListsMatchPythonIndexing) {
  torch::Tensor x = torch::arange(24).view({2, 3, 4});
  // x[1, :, ::2] == x.select(0, 1).slice(1, 0, 4, 2)
  EXPECT_TRUE(torch::equal(x.index({1, Slice(), Slice(None, None, 2)}), x.select(0, 1).slice(1, 0, 4, 2)));
  // x[..., -1] and x[None, 0].shape == [1, 3, 4]
  EXPECT_TRUE(torch::equal(x.index({"...", -1}), x.select(2, 3)));
  EXPECT_EQ(x.index({None, 0}).sizes(), (std::vector<int64_t>{1, 3, 4}));
  EXPECT_EQ(x.index({false}).sizes(), (std::vector<int64_t>{0, 2, 3, 4}));
  // Advanced: integer tensors pick rows, a mask picks elements.
  torch::Tensor rows = x.index({torch::tensor({1, 0}), 2});
  EXPECT_EQ(rows.sizes(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(rows.to_vector<int64_t>()[0], 20);
  torch::Tensor m = x.index({x > 20});
  EXPECT_EQ(m.to_vector<int64_t>(), (std::vector<int64_t>{21, 22, 23}));
  // Non-contiguous input: a transposed view indexed the same way as its copy.
  torch::Tensor xt = x.transpose(0, 2);
  EXPECT_TRUE(torch::equal(xt.index({Slice(1, 3), torch::tensor({2, 0})}),
                           xt.contiguous().index({Slice(1, 3), torch::tensor({2, 0})})));
  // index_put_ with a scalar and with a tensor, through basic and advanced items.
  torch::Tensor y = torch::zeros({3, 4});
  y.index_put_({Slice(), 1}, 5);
  y.index_put_({torch::tensor({0, 2}), 3}, torch::tensor({7.f, 8.f}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 5, 0, 7, 0, 5, 0, 0, 0, 5, 0, 8}));
  EXPECT_TRUE(contains(error_of([&] { x.index({}); }), "Passing an empty index list to Tensor::index() is not valid syntax"));
  EXPECT_TRUE(contains(error_of([&] { x.index({0, 0, 0, 0}); }), "too many indices for tensor of dimension 3"));
  EXPECT_TRUE(contains(error_of([&] { x.index({5}); }), "index 5 is out of bounds for dimension 0 with size 2"));
  EXPECT_TRUE(contains(error_of([&] { x.index({torch::tensor({0.5f})}); }), "must be long, int, byte or bool"));
}

TEST(TorchCompat, NestedTensorLiterals) {
  torch::Tensor a = torch::tensor({{1, 2}, {3, 4}});
  EXPECT_EQ(a.dtype(), torch::kLong);
  EXPECT_EQ(a.sizes(), (std::vector<int64_t>{2, 2}));
  torch::Tensor b = torch::tensor({{{1.5, 2.5}}}, torch::kFloat64);
  EXPECT_EQ(b.sizes(), (std::vector<int64_t>{1, 1, 2}));
  EXPECT_EQ(b.to_vector<double>(), (std::vector<double>{1.5, 2.5}));
  EXPECT_EQ(torch::tensor({1.f, 2.f}).dtype(), torch::get_default_dtype());
  EXPECT_EQ(torch::tensor({true, false}).dtype(), torch::kBool);
  EXPECT_EQ(torch::tensor(std::vector<int>{1, 2}).dtype(), torch::kLong);
  EXPECT_EQ(torch::tensor(at::ArrayRef<int64_t>({4, 5})).to_vector<int64_t>(), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(torch::tensor(3.5).dim(), 0);
  EXPECT_EQ(torch::tensor({{}, {}}).sizes(), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(c10::str(torch::detail::TensorDataContainer({{1, 2}, {3, 4}})), "{{1, 2}, {3, 4}}");
  EXPECT_TRUE(contains(error_of([] { torch::tensor({{{2, 3, 4}, {{5, 6}, {7}}}}); }),
                       "Expected all sub-lists to have sizes: 2 (e.g. {5, 6}), but got sub-list {7} with sizes: 1"));
  EXPECT_TRUE(contains(error_of([] { torch::tensor({{{1, 2.0}}}); }),
                       "Expected all elements of the tensor to have the same scalar type: Int, but got element of scalar type: Double"));
}

TEST(TorchCompat, ResizeAndSetData) {
  torch::Tensor t = torch::arange(6, torch::kFloat32);
  torch::Tensor view = t.view({2, 3});
  t.resize_({2, 5});
  EXPECT_EQ(t.sizes(), (std::vector<int64_t>{2, 5}));
  EXPECT_TRUE(t.is_contiguous());
  // The old values stay at the start; the earlier view sees the grown storage.
  EXPECT_EQ(t.view({10}).slice(0, 0, 6).to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(view.data_ptr(), t.data_ptr());
  t.resize_({3});
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0, 1, 2}));
  torch::Tensor g = torch::ones({2}, torch::requires_grad());
  EXPECT_TRUE(contains(error_of([&] { g.resize_({4}); }), "[resize_] cannot resize a tensor that requires grad"));
  // set_data keeps the autograd identity and takes the new shape and values.
  torch::Tensor p = torch::zeros({2, 2}, torch::requires_grad());
  p.set_data(torch::ones({3}));
  EXPECT_TRUE(p.requires_grad());
  EXPECT_EQ(p.sizes(), (std::vector<int64_t>{3}));
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{1, 1, 1}));
}

TEST(TorchCompat, ScalarsOptionsAndConversions) {
  c10::Scalar s = 2.5;
  EXPECT_FLOAT_EQ(s.toFloat(), 2.5f);
  EXPECT_EQ(c10::Scalar(7).toLong(), 7);
  EXPECT_TRUE(c10::Scalar(true).toBool());
  EXPECT_EQ(torch::ones({1}).layout(), torch::kStrided);
  EXPECT_EQ(torch::TensorOptions().layout(), torch::kStrided);
  EXPECT_TRUE(contains(error_of([] { torch::zeros({2}, torch::TensorOptions().layout(torch::kSparse)); }),
                       "only strided tensors exist in ember"));
  torch::Tensor i = torch::tensor({1, 2});
  EXPECT_EQ(i.to(torch::ones({1}, torch::kFloat64)).dtype(), torch::kFloat64);
  EXPECT_TRUE(contains(error_of([&] { i.to(torch::TensorOptions().requires_grad(true)); }),
                       "requires_grad=true cannot be passed to to()"));
  torch::Tensor r = torch::empty({100}, torch::kInt64).random_(7);
  EXPECT_GE(r.min().item<int64_t>(), 0);
  EXPECT_LT(r.max().item<int64_t>(), 7);
  EXPECT_TRUE(torch::allclose(torch::tensor({0.1f}), torch::tensor({0.f}), 1.1, 0.1));
}

TEST(TorchCompat, MacrosAndWarnings) {
  EXPECT_TRUE(contains(error_of([] { TORCH_CHECK(1 == 2, "values differ: ", 3); }), "values differ: 3"));
  EXPECT_TRUE(contains(error_of([] { TORCH_CHECK(1 == 2); }), "Expected 1 == 2 to be true, but got false."));
  struct Capture : c10::WarningHandler {
    std::vector<std::string> messages;
    void process(const c10::SourceLocation&, const std::string& msg, const bool) override { messages.push_back(msg); }
  } capture;
  c10::WarningHandler* prev = c10::Warning::get_warning_handler();
  c10::Warning::set_warning_handler(&capture);
  TORCH_WARN("careful: ", 42);
  for (int k = 0; k < 3; ++k) TORCH_WARN_ONCE("only once");
  c10::Warning::set_warning_handler(prev);
  ASSERT_EQ(capture.messages.size(), 2u);
  EXPECT_EQ(capture.messages[0], "careful: 42");
  EXPECT_EQ(capture.messages[1], "only once");
  std::vector<int> seen;
  for (int k : c10::irange(3)) seen.push_back(k);
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2}));
}

TEST(TorchCompat, AutogradSemantics) {
  using torch::autograd::Variable;
  // An explicitly empty input list is an error (leaving it out means every leaf).
  Variable x = torch::ones({2}, torch::requires_grad());
  EXPECT_TRUE(contains(error_of([&] { (x * 2).sum().backward({}, false, false, std::vector<Variable>{}); }),
                       "cannot be empty"));
  EXPECT_TRUE(contains(error_of([&] { torch::autograd::grad({x * 2}, {}, {torch::ones({2})}); }),
                       "grad requires non-empty inputs"));
  // retain_grad() follows the tensor through an in-place op: grad() is d out / d (new a).
  Variable a = torch::ones({3}, torch::requires_grad()).clone();
  a.retain_grad();
  a.mul_(2);
  (a + 1).sum().backward();
  EXPECT_TRUE(torch::allclose(a.grad(), torch::ones({3})));
  // A view taken with grad mode off still requires grad and is a leaf.
  Variable c = torch::ones({2, 3}, torch::requires_grad());
  {
    torch::NoGradGuard no_grad;
    Variable v = c.view({3, 2});
    EXPECT_TRUE(v.requires_grad());
    EXPECT_TRUE(v.is_leaf());
  }
  // Views keep their base's inference flag, whatever the mode they are made in.
  torch::Tensor normal = torch::ones({2, 3});
  torch::Tensor inference;
  {
    torch::InferenceMode guard;
    inference = torch::ones({2, 3});
    EXPECT_FALSE(normal.view({3, 2}).is_inference());
  }
  EXPECT_TRUE(inference.view({6}).is_inference());
}

struct Doubler : public torch::autograd::Function<Doubler> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor v) {
    v.data_ptr<float>()[0] = 2;
    ctx->mark_dirty({v});
    return v;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list grad) {
    return {grad[0] * 2.0};
  }
};

TEST(TorchCompat, MarkDirtyBumpsTheVersion) {
  torch::Tensor x = torch::randn({5, 5}, torch::requires_grad()).clone();
  const auto before = x._version();
  torch::Tensor out = Doubler::apply(x);
  EXPECT_GE(x._version(), before + 1);
  out.sum().backward();
}

// In-place methods are const (a Tensor is a handle), and assigning to a temporary view
// writes through it, as in libtorch.
TEST(TorchCompat, ConstInPlaceAndRvalueAssignment) {
  torch::Tensor x = torch::ones({2, 3});
  const torch::Tensor& cx = x;
  cx.mul_(2).add_(1);
  EXPECT_EQ(x.sum().item<double>(), 18.0);
  x[0] = torch::tensor({7.0f, 8.0f, 9.0f});
  EXPECT_EQ(x[0].sum().item<double>(), 24.0);
  EXPECT_EQ(x[1].sum().item<double>(), 9.0);
  x.index({Slice(), 0}) = 0.5;
  EXPECT_EQ(x[1][0].item<double>(), 0.5);
  torch::Tensor y;
  y = x;  // an lvalue still rebinds the handle
  EXPECT_EQ(y.data_ptr(), x.data_ptr());
  torch::Tensor r = torch::tensor({-3.0, 5.5}) % 2;
  EXPECT_EQ(r[0].item<double>(), 1.0);  // Python's modulo: the divisor's sign
  EXPECT_EQ(r[1].item<double>(), 1.5);
  EXPECT_EQ(torch::ones({2}, torch::kInt32).type_as(x).dtype(), torch::kFloat32);
  EXPECT_TRUE(x[0].is_view());
  EXPECT_FALSE(x.is_view());
}

TEST(TorchCompat, HooksInputsAndAnomalyWithoutNanChecks) {
  torch::Tensor x = torch::ones({2}, torch::requires_grad());
  torch::Tensor y = torch::ones({2}, torch::requires_grad());
  int calls = 0;
  torch::Tensor z = x * y;
  auto h = z.register_hook([&](torch::Tensor g) { ++calls; return g; });
  z.sum().backward({}, true, false, {x});
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(x.grad().defined());
  EXPECT_FALSE(y.grad().defined());
  z.remove_hook(h);
  z.sum().backward({}, false, false, {x});
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(contains(error_of([&] { (x * 2).sum().backward({}, false, false, {}); }), "inputs"));
  // check_nan=false: a NaN gradient passes; with the default it is named.
  auto nan_backward = [] {
    torch::Tensor a = torch::zeros({1}, torch::requires_grad());
    a.sqrt().mul(0).sum().backward();
  };
  {
    torch::autograd::DetectAnomalyGuard guard(/*check_nan=*/false);
    EXPECT_EQ(error_of(nan_backward), "(no error)");
  }
  {
    torch::autograd::DetectAnomalyGuard guard;
    EXPECT_TRUE(contains(error_of(nan_backward), "nan"));
  }
  EXPECT_TRUE(at::native::is_nonzero(torch::tensor({2})));
  EXPECT_TRUE(contains(error_of([] { at::native::is_nonzero(torch::ones({2})); }), "[is_nonzero]"));
}

// libtorch's free functions with positional arguments (ember/compat/aten.h).
TEST(TorchCompat, AtenFreeFunctions) {
  torch::Tensor a = torch::tensor({1.0, -2.0, 3.0});
  torch::Tensor b = torch::tensor({0.0, 0.0, 5.0});
  EXPECT_TRUE(torch::equal(torch::max(a, b), torch::tensor({1.0, 0.0, 5.0})));
  EXPECT_TRUE(torch::equal(torch::min(a, b), torch::tensor({0.0, -2.0, 3.0})));
  EXPECT_EQ(torch::max(a).item<double>(), 3.0);
  EXPECT_EQ(std::get<1>(torch::min(a, 0)).item<int64_t>(), 1);
  // Functional binds the trailing arguments: elu with scale 0 is zero everywhere.
  auto f = torch::nn::Functional(torch::elu, /*alpha=*/1, /*scale=*/0, /*input_scale=*/1);
  EXPECT_EQ(f(torch::ones({})).item<float>(), 0.0f);
  torch::Tensor w = torch::arange(12, torch::kFloat32).reshape({4, 3});
  torch::Tensor e = torch::embedding(w, torch::tensor({3, 0}), -1, false, false);
  EXPECT_TRUE(torch::equal(e[0], w[3]));
  torch::Tensor bag = std::get<0>(
      torch::embedding_bag(w, torch::tensor({1, 2, 3}), torch::tensor({0, 2}), false, /*mode=*/1));
  EXPECT_TRUE(torch::allclose(bag[0], (w[1] + w[2]) / 2));
  EXPECT_TRUE(torch::allclose(bag[1], w[3]));
  EXPECT_TRUE(contains(error_of([&] { torch::embedding_bag(w, torch::tensor({1}), torch::tensor({0}), false, 5); }),
                       "mode must be 0 (sum), 1 (mean) or 2 (max)"));
}

// Layers built from their options' constructor arguments, reduction tags, printing.
TEST(TorchCompat, LayerConstructionAndPrinting) {
  using namespace torch::nn;
  EXPECT_EQ(c10::str(Threshold(0.1, 20)), "torch::nn::Threshold(threshold=0.1, value=20)");
  EXPECT_EQ(MaxUnpool1d(3)->options.kernel_size()[0], 3);
  EXPECT_EQ(LPPool1d(2, 3)->options.norm_type(), 2.0);
  EXPECT_EQ(SmoothL1Loss(torch::kNone)->reduction, ember::nn::Reduction::None);
  EXPECT_EQ(HuberLoss(torch::kSum)->reduction, ember::nn::Reduction::Sum);
  EXPECT_EQ(MaxPool3d(MaxPool3dOptions(3)).ptr()->options.kernel_size()[0], 3);
  EXPECT_TRUE(contains(error_of([] { Hardtanh(HardtanhOptions().min_val(0.42).max_val(0.42)); }),
                       "max_val must be greater than min_val"));
  EXPECT_EQ(c10::str(RNNCell(20, 10)), "torch::nn::RNNCell(20, 10)");
  EXPECT_EQ(c10::str(RNNCell(RNNCellOptions(20, 10).bias(false).nonlinearity(torch::kReLU))),
            "torch::nn::RNNCell(20, 10, bias=false, nonlinearity=kReLU)");
  EXPECT_EQ(c10::str(GRUCell(GRUCellOptions(20, 10).bias(false))), "torch::nn::GRUCell(20, 10, bias=false)");
  EXPECT_EQ(c10::str(MultiheadAttention(20, 10)),
            "torch::nn::MultiheadAttention(\n  (out_proj): torch::nn::Linear(in_features=20, out_features=20, "
            "bias=true)\n)");
  EXPECT_EQ(c10::str(Embedding(EmbeddingOptions(10, 2).scale_grad_by_freq(true).sparse(true))),
            "torch::nn::Embedding(num_embeddings=10, embedding_dim=2, scale_grad_by_freq=true, sparse=true)");
  Linear empty{nullptr};
  EXPECT_TRUE(contains(error_of([&] { (void)empty->options; }), "Accessing empty ModuleHolder"));
}

namespace {
struct Leaf : torch::nn::Cloneable<Leaf> {
  Leaf() { reset(); }
  void reset() override { weight = register_parameter("weight", torch::ones({2, 2})); }
  torch::Tensor weight;
  int value = 0;
};
struct Nest : torch::nn::Cloneable<Nest> {
  Nest() { reset(); }
  void reset() override { leaf = register_module("leaf", std::make_shared<Leaf>()); }
  std::shared_ptr<Leaf> leaf;
};
struct Plain : torch::nn::Module {
  explicit Plain(int64_t v) : t(register_buffer("t", torch::tensor(v))) {}
  torch::Tensor t;
};
}  // namespace

// Modules without options clone libtorch's way (copy, reset(), copy the values), keeping
// members that are not tensors; module objects copy and go into containers by value.
TEST(TorchCompat, ModuleCopyCloneAndReplace) {
  auto a = std::make_shared<Nest>();
  {
    torch::NoGradGuard no_grad;
    a->leaf->weight.add_(1);
  }
  a->leaf->value = 123;
  auto b = std::dynamic_pointer_cast<Nest>(a->clone());
  ASSERT_TRUE(b);
  EXPECT_EQ(b->leaf->value, 123);
  EXPECT_NE(b->leaf->weight.data_ptr(), a->leaf->weight.data_ptr());
  EXPECT_EQ(b->leaf->weight.data_ptr(), b->leaf->named_parameters()["weight"].data_ptr());
  EXPECT_TRUE(torch::equal(b->leaf->weight, a->leaf->weight));
  EXPECT_EQ(b->named_parameters()["leaf.weight"].data_ptr(), b->leaf->weight.data_ptr());

  torch::nn::Sequential seq;
  seq->push_back(Plain(4));
  torch::nn::ModuleList list;
  list->push_back(Plain(5));
  EXPECT_EQ(seq->size(), 1u);
  EXPECT_EQ(std::dynamic_pointer_cast<Plain>(list[0])->t.item<int64_t>(), 5);
  Plain copy = Plain(6);
  EXPECT_EQ(copy.named_buffers()["t"].item<int64_t>(), 6);

  struct Model : torch::nn::Module {
    torch::nn::Linear l1{nullptr};
    Model() { l1 = register_module("l1", torch::nn::Linear(3, 4)); }
  };
  auto m = std::make_shared<Model>();
  m->l1 = m->replace_module("l1", torch::nn::Linear(5, 6));
  EXPECT_EQ(m->named_parameters()["l1.weight"].size(0), 6);
  EXPECT_EQ(m->l1.get(), m->named_modules()["l1"]->as<torch::nn::Linear>());
}

// ember/torch.h makes zero_grad() zero the gradients (libtorch 1.13); zero_grad(true) still
// sets them to none, and ember's own default is restored by set_zero_grad_sets_to_none.
TEST(TorchCompat, ZeroGradFollowsLibtorchUnderTheCompatHeader) {
  EXPECT_FALSE(ember::zero_grad_sets_to_none());
  torch::nn::Linear fc(3, 2);
  fc(torch::ones({4, 3})).sum().backward();
  fc->zero_grad();
  ASSERT_TRUE(fc->weight.grad().defined());
  EXPECT_EQ(fc->weight.grad().abs().sum().item<double>(), 0.0);
  fc->zero_grad(true);
  EXPECT_FALSE(fc->weight.grad().defined());
  torch::Tensor p = torch::ones({2}, torch::requires_grad());
  torch::optim::SGD opt({p}, torch::optim::SGDOptions(0.1));
  (p * 2).sum().backward();
  opt.zero_grad();
  ASSERT_TRUE(p.grad().defined());
  EXPECT_EQ(p.grad().sum().item<double>(), 0.0);
  {
    torch::nn::Module m;
    c10::Warning::WarnAlways always;
    std::vector<std::string> seen;
    ember::set_warning_handler([&](const std::string& w) { seen.push_back(w); });
    m.register_parameter("undefined", torch::Tensor());
    ember::set_warning_handler(nullptr);
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_TRUE(contains(seen[0], "Ignoring the `requires_grad=true` function parameter"));
    EXPECT_EQ(m.parameters().size(), 0u);
  }
}


namespace {
struct AddOne : torch::nn::Module {
  int forward(int x) { return x + 1; }
};
struct Concat : torch::nn::Module {
  std::string forward(std::string a, const std::string& b, std::string&& c) { return a + b + c; }
};
struct WithDefaults : torch::nn::Module {
  double forward(int a, int b = 2, double c = 3.0) { return a + b + c; }

 protected:
  FORWARD_HAS_DEFAULT_ARGS({1, torch::nn::AnyValue(2)}, {2, torch::nn::AnyValue(3.0)})
};
struct Scale : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x) { return x * 3; }
};
}  // namespace

// AnyModule: any forward() signature behind one interface, checked at run time.
TEST(TorchCompat, AnyModuleAndAnyValue) {
  torch::nn::AnyModule any(AddOne{});
  EXPECT_EQ(any.forward<int>(4), 5);
  EXPECT_TRUE(contains(error_of([&] { any.forward(5.0); }),
                       "Expected argument #0 to be of type int, but received value of type double"));
  EXPECT_TRUE(contains(error_of([&] { any.forward(1, 2); }), "forward() method expects 1 argument(s), but received 2."));
  EXPECT_TRUE(contains(error_of([&] { any.forward<std::string>(1); }),
                       "Attempted to cast AnyValue to std::__cxx11::basic_string"));
  torch::nn::AnyModule concat(Concat{});
  EXPECT_EQ(concat.forward<std::string>(std::string("a"), std::string("b"), std::string("c")), "abc");
  torch::nn::AnyModule defaults(WithDefaults{});
  EXPECT_EQ(defaults.forward<double>(1), 6.0);
  EXPECT_EQ(defaults.forward<double>(1, 3), 7.0);
  EXPECT_TRUE(contains(error_of([&] { defaults.forward(); }),
                       "expects at least 1 argument(s) and at most 3 argument(s), but received 0."));
  torch::nn::AnyModule linear(torch::nn::Linear(3, 2));
  EXPECT_EQ(linear.forward(torch::ones({4, 3})).sizes(), torch::IntArrayRef({4, 2}));
  EXPECT_EQ(linear.get<torch::nn::Linear>()->options.out_features(), 2);
  EXPECT_TRUE(contains(error_of([&] { linear.ptr<AddOne>(); }), "Attempted to cast module"));
  torch::nn::AnyModule empty;
  EXPECT_TRUE(empty.is_empty());
  EXPECT_TRUE(contains(error_of([&] { empty.forward<int>(5); }), "Cannot call forward() on an empty AnyModule"));
  torch::nn::AnyValue v(std::string("hi"));
  EXPECT_NE(v.try_get<std::string>(), nullptr);
  EXPECT_EQ(v.try_get<int>(), nullptr);
  torch::nn::AnyValue literal("hello");
  EXPECT_EQ(literal.type_info().hash_code(), typeid(const char*).hash_code());
}

// Sequential chains modules of any signature; Tensor modules keep the direct call.
TEST(TorchCompat, SequentialOfAnyModules) {
  torch::nn::Sequential chain(AddOne{}, AddOne{}, AddOne{});
  EXPECT_EQ(chain->forward<int>(1), 4);
  torch::nn::Sequential empty;
  EXPECT_TRUE(contains(error_of([&] { empty->forward<int>(); }), "Cannot call forward() on an empty Sequential"));
  torch::nn::Sequential tensors(torch::nn::Linear(3, 4), Scale{}, torch::nn::ReLU());
  torch::Tensor x = torch::ones({2, 3});
  torch::Tensor expected = torch::relu(tensors[0]->as<torch::nn::Linear>()->forward(x) * 3);
  EXPECT_TRUE(torch::allclose(tensors->forward(x), expected));
  EXPECT_TRUE(torch::allclose(tensors->forward<torch::Tensor>(x), expected));
  torch::nn::Sequential more(Scale{});
  tensors->extend(*more);
  EXPECT_EQ(tensors->size(), 4u);
  EXPECT_TRUE(torch::allclose(tensors->forward(x), expected * 3));
  // A module that is not Cloneable cannot be cloned (as in libtorch); these can.
  EXPECT_TRUE(contains(error_of([&] { tensors->clone(); }), "clone() has not been implemented"));
  torch::nn::Sequential clonable(torch::nn::Linear(3, 4), torch::nn::ReLU());
  auto copy = std::dynamic_pointer_cast<torch::nn::SequentialImpl>(clonable->clone());
  ASSERT_TRUE(copy);
  EXPECT_TRUE(torch::allclose(copy->forward(x), clonable->forward(x)));
  EXPECT_NE(copy->ptr<torch::nn::LinearImpl>(0)->weight.data_ptr(), clonable->ptr<torch::nn::LinearImpl>(0)->weight.data_ptr());
  torch::nn::Sequential named({{"fc", torch::nn::Linear(3, 4)}, {"act", torch::nn::ReLU()}});
  EXPECT_EQ(named->named_children().keys(), std::vector<std::string>({"fc", "act"}));
  EXPECT_EQ(named->at<torch::nn::LinearImpl>(0).options.in_features(), 3);
}

TEST(TorchCompat, ModuleDictAndOrderedDict) {
  torch::OrderedDict<std::string, int> dict("Penguin");
  dict.insert("a", 1);
  EXPECT_EQ(dict.key_description(), "Penguin");
  EXPECT_TRUE(contains(error_of([&] { dict["b"]; }), "Penguin 'b' is not defined"));
  EXPECT_TRUE(contains(error_of([&] { dict.insert("a", 2); }), "Penguin 'a' already defined"));
  torch::OrderedDict<std::string, int> other = {{"c", 3}};
  other.update(dict);
  EXPECT_EQ(other.front().key(), "c");
  EXPECT_EQ(other.back().value(), 1);
  EXPECT_TRUE(contains(error_of([] { torch::OrderedDict<std::string, int>().front(); }),
                       "Called front() on an empty OrderedDict"));

  torch::nn::ModuleDict modules;
  EXPECT_TRUE(modules->empty());
  modules->update(std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>>{
      {"fc", torch::nn::Linear(2, 3).ptr()}});
  torch::OrderedDict<std::string, std::shared_ptr<torch::nn::Module>> more = {{"act", torch::nn::ReLU().ptr()}};
  modules->update(more);
  EXPECT_EQ(modules->size(), 2u);
  EXPECT_EQ(modules->at<torch::nn::LinearImpl>("fc").options.out_features(), 3);
  std::vector<std::string> keys;
  for (const auto& item : *modules) keys.push_back(item.key());
  EXPECT_EQ(keys, std::vector<std::string>({"fc", "act"}));
  modules->pop("fc");
  EXPECT_FALSE(modules->contains("fc"));
  EXPECT_TRUE(contains(error_of([&] { modules->pop("fc"); }), "'fc' is not defined"));
  modules->clear();
  EXPECT_TRUE(modules->empty());
}

// Inference tensors: all-inference inputs record no graph; mixed inputs record one and
// refuse to save an inference tensor. A 0-dim integer tensor index selects (a view).
TEST(TorchCompat, InferenceTensorsAndScalarTensorIndices) {
  torch::Tensor c;
  {
    torch::InferenceMode guard;
    c = torch::ones({2, 3}).set_requires_grad(true);
  }
  torch::Tensor tmp = c * c;
  EXPECT_FALSE(tmp.requires_grad());
  torch::Tensor s = torch::ones({2, 3}, torch::requires_grad());
  torch::Tensor out = c.add(s);
  EXPECT_TRUE(out.requires_grad());
  out.sum().backward();
  EXPECT_TRUE(torch::equal(c.grad(), torch::ones({2, 3})));
  EXPECT_TRUE(contains(error_of([&] { c.mul(s); }), "Inference tensors cannot be saved for backward."));

  torch::Tensor a = torch::arange(6, torch::kFloat32).reshape({2, 3});
  torch::Tensor zero = torch::tensor(0), one = torch::tensor(1);
  EXPECT_EQ(a.index({zero, one}).data_ptr(), a.index({0, 1}).data_ptr());
  EXPECT_EQ(a.index({one, zero}).item<float>(), 3.0f);
  torch::Tensor t = torch::zeros({10, 20});
  at::index_put_(t, {torch::arange(3, torch::kLong)}, torch::ones({1, 20}));
  EXPECT_EQ(t.sum().item<double>(), 60.0);
  EXPECT_TRUE(torch::equal(at::index(t, {torch::arange(3, torch::kLong)}), torch::ones({3, 20})));
}


TEST(TorchCompat, ParameterDictAndList) {
  torch::nn::ParameterDict dict;
  EXPECT_TRUE(dict->empty());
  dict->insert("scale", torch::ones({2, 3}, torch::requires_grad()));
  dict->insert("shift", torch::zeros({3}));
  EXPECT_EQ(dict->size(), 2u);
  EXPECT_EQ(dict->keys(), std::vector<std::string>({"scale", "shift"}));
  EXPECT_TRUE(dict["scale"].requires_grad());
  EXPECT_FALSE(dict->get("shift").requires_grad());
  EXPECT_EQ(dict->named_parameters().size(), 2u);
  EXPECT_EQ(c10::str(dict),
            "torch::nn::ParameterDict(\n(scale): Parameter containing: [Float of size [2, 3]]\n"
            "(shift): Parameter containing: [Float of size [3]]\n)");
  torch::Tensor popped = dict->pop("shift");
  EXPECT_EQ(popped.sizes(), torch::IntArrayRef({3}));
  EXPECT_FALSE(dict->contains("shift"));
  EXPECT_TRUE(contains(error_of([&] { dict->pop("shift"); }), "Parameter 'shift' is not defined"));
  auto copy = std::dynamic_pointer_cast<torch::nn::ParameterDictImpl>(dict->clone());
  ASSERT_TRUE(copy);
  EXPECT_NE(copy->get("scale").data_ptr(), dict->get("scale").data_ptr());
  EXPECT_TRUE(torch::equal(copy->get("scale"), dict->get("scale")));

  torch::nn::ParameterList list(torch::randn({2}, torch::requires_grad()), torch::zeros({3}));
  list->append(torch::ones({4}));
  EXPECT_EQ(list->size(), 3u);
  EXPECT_EQ(list[2].sizes(), torch::IntArrayRef({4}));
  EXPECT_TRUE(list->at(0).requires_grad());
  EXPECT_TRUE(contains(error_of([&] { list->at(3); }), "Index out of range"));
  torch::optim::SGD opt(list->parameters(), torch::optim::SGDOptions(0.1));
  EXPECT_EQ(opt.param_groups()[0].params().size(), 3u);
}


// Reading grad() of a non-leaf warns (backward never fills it); anomaly mode names the
// forward call of a node whose backward fails.
TEST(TorchCompat, NonLeafGradAndAnomalyWarnings) {
  std::vector<std::string> seen;
  ember::set_warning_handler([&](const std::string& w) { seen.push_back(w); });
  torch::Tensor input = torch::rand({1, 3}, torch::requires_grad());
  torch::Tensor h1 = input * 3;
  EXPECT_FALSE(h1.grad().defined());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(contains(seen[0], "is not a leaf"));
  h1.retain_grad();
  EXPECT_FALSE(h1.grad().defined());
  EXPECT_EQ(seen.size(), 1u);
  {
    torch::autograd::DetectAnomalyGuard anomaly;
    torch::Tensor x = torch::tensor({5.0}, torch::requires_grad());
    torch::Tensor y = x * x;
    torch::Tensor z = y * y;
    y += 1;
    EXPECT_TRUE(contains(error_of([&] { z.backward(); }), "inplace"));
  }
  ember::set_warning_handler(nullptr);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_TRUE(contains(seen[1], "Traceback of forward call"));
}


TEST(TorchCompat, NamespaceAliases) {
  torch::Dtype d = torch::kFloat64;
  EXPECT_EQ(torch::ones({1}, d).dtype(), torch::kFloat64);
  auto p = torch::make_unique<int>(3);
  EXPECT_EQ(*p, 3);
  EXPECT_EQ(torch::autograd::make_variable(torch::ones({2}), true).requires_grad(), true);
}


TEST(TorchCompat, ReopenedNamespacesAndSequentialMessages) {
  EXPECT_EQ(torch::nn::reopened_namespace_marker(), 7);
  torch::nn::Linear fc(2, 3);  // still ember's Linear through torch::nn
  EXPECT_EQ(fc->options.out_features(), 3);
  struct Five : torch::nn::Module {
    int forward() { return 5; }
  };
  torch::nn::Sequential seq(Five{});
  EXPECT_EQ(seq->forward<int>(), 5);
  EXPECT_TRUE(contains(error_of([&] { seq->forward<float>(); }),
                       "The type of the return value is int, but you asked for type float"));
  seq->push_back("five", Five{});
  EXPECT_EQ(seq->named_children().keys(), std::vector<std::string>({"0", "five"}));
  torch::nn::Sequential bag(torch::nn::EmbeddingBag(10, 3));
  EXPECT_EQ(bag->forward(torch::tensor({{1, 2}, {3, 4}})).sizes(), torch::IntArrayRef({2, 3}));
}


TEST(TorchCompat, ModuleApplyInEveryLibtorchForm) {
  struct Leaf : torch::nn::Module {
    explicit Leaf(int v) : value(v) {}
    int value;
  };
  struct Tree : torch::nn::Module {
    Tree() {
      a = register_module("a", std::make_shared<Leaf>(1));
      b = register_module("b", std::make_shared<Leaf>(2));
    }
    std::shared_ptr<Leaf> a, b;
  };
  auto tree = std::make_shared<Tree>();
  std::vector<int> seen;
  auto value = [](const torch::nn::Module& m) { return m.as<Leaf>() ? m.as<Leaf>()->value : 0; };
  tree->apply([&](torch::nn::Module& m) { seen.push_back(value(m)); });
  EXPECT_EQ(seen, std::vector<int>({0, 1, 2}));
  std::shared_ptr<const Tree> ctree = tree;
  seen.clear();
  ctree->apply([&](const torch::nn::Module& m) { seen.push_back(value(m)); });
  EXPECT_EQ(seen, std::vector<int>({0, 1, 2}));
  std::vector<std::string> names;
  tree->apply([&](const std::string& n, torch::nn::Module&) { names.push_back(n); }, "root");
  EXPECT_EQ(names, std::vector<std::string>({"root", "root.a", "root.b"}));
  names.clear();
  ctree->apply([&](const std::string& n, const torch::nn::Module&) { names.push_back(n); }, "p");
  EXPECT_EQ(names, std::vector<std::string>({"p", "p.a", "p.b"}));
  names.clear();
  tree->apply([&](torch::nn::Module&, const std::string& n) { names.push_back(n); });  // ember's order
  EXPECT_EQ(names, std::vector<std::string>({"", "a", "b"}));
  std::vector<const torch::nn::Module*> ptrs;
  tree->apply([&](const std::shared_ptr<torch::nn::Module>& m) { ptrs.push_back(m.get()); });
  EXPECT_EQ(ptrs, std::vector<const torch::nn::Module*>({tree.get(), tree->a.get(), tree->b.get()}));
  names.clear();
  tree->apply([&](const std::string& n, const std::shared_ptr<torch::nn::Module>& m) {
    names.push_back(n + "=" + std::to_string(value(*m)));
  }, "t");
  EXPECT_EQ(names, std::vector<std::string>({"t=0", "t.a=1", "t.b=2"}));
  // The reference forms work on a module no shared_ptr owns.
  Tree on_stack;
  int count = 0;
  on_stack.apply([&](torch::nn::Module&) { ++count; });
  EXPECT_EQ(count, 3);
}

TEST(TorchCompat, RemoveHookByPositionAndUndefinedGrad) {
  auto x = torch::ones({2}, torch::requires_grad());
  auto z = x * 3;
  int calls = 0;
  z.register_hook([&](const torch::Tensor&) { ++calls; });
  z.register_hook([&](const torch::Tensor&) { calls += 10; });
  z.remove_hook(1u);
  z.sum().backward({}, /*retain_graph=*/true);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(contains(error_of([&] { z.remove_hook(1u); }), "Invalid index"));
  EXPECT_TRUE(contains(error_of([&] { x.remove_hook(0u); }), "[remove_hook] Invalid index"));
  z.remove_hook(0u);
  z.sum().backward();
  EXPECT_EQ(calls, 1);

  struct Pass : torch::autograd::Function<Pass> {
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor v) {
      ctx->saved_data["materialize"] = true;
      return v * 1;
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                    torch::autograd::variable_list g) {
      EXPECT_TRUE(g[0].defined());
      EXPECT_TRUE(torch::equal(g[0], torch::zeros({2})));
      return g;
    }
  };
  auto y = torch::ones({2}, torch::requires_grad());
  auto outs = torch::autograd::UndefinedGrad().apply({Pass::apply(y)});
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_TRUE(outs[0].requires_grad());
  EXPECT_TRUE(torch::equal(outs[0], torch::ones({2})));
  outs[0].sum().backward();
  ASSERT_TRUE(y.grad().defined());
  EXPECT_TRUE(torch::equal(y.grad(), torch::zeros({2})));
}

TEST(TorchCompat, AdaptivePoolKeptDimsAndHardtanhReset) {
  torch::nn::AdaptiveMaxPool2d pool(torch::nn::AdaptiveMaxPool2dOptions({3, c10::nullopt}));
  std::ostringstream os;
  os << *pool;
  EXPECT_EQ(os.str(), "torch::nn::AdaptiveMaxPool2d(output_size=[3, None])");
  EXPECT_EQ(pool->forward(torch::randn({1, 2, 6, 5})).sizes(), torch::IntArrayRef({1, 2, 3, 5}));
  torch::nn::AdaptiveAvgPool2d avg(torch::nn::AdaptiveAvgPool2dOptions({c10::nullopt, 2}));
  std::ostringstream os2;
  os2 << *avg;
  EXPECT_EQ(os2.str(), "torch::nn::AdaptiveAvgPool2d(output_size=[None, 2])");
  auto x = torch::randn({2, 3, 4, 6});
  EXPECT_TRUE(torch::allclose(avg->forward(x), x.view({2, 3, 4, 2, 3}).mean(-1)));
  torch::nn::AdaptiveAvgPool3d avg3(torch::nn::AdaptiveAvgPool3dOptions({c10::nullopt, 1, c10::nullopt}));
  EXPECT_EQ(avg3->forward(torch::randn({1, 2, 3, 4, 5})).sizes(), torch::IntArrayRef({1, 2, 3, 1, 5}));

  torch::nn::Hardtanh ht(torch::nn::HardtanhOptions().min_val(-0.5).max_val(0.5));
  ht->options.min_val(0.5);
  EXPECT_TRUE(contains(error_of([&] { ht->reset(); }), "max_val must be greater than min_val"));
}


TEST(TorchCompat, CustomFunctionTensorListAndTrimmedInputGrads) {
  struct Combine : torch::autograd::Function<Combine> {
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, at::TensorList ts, double scale) {
      ctx->save_for_backward({ts[0], ts[1]});
      ctx->saved_data["scale"] = scale;
      return (ts[0] * ts[1]) * scale;
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                    torch::autograd::variable_list g) {
      auto s = ctx->get_saved_variables();
      const double scale = ctx->saved_data["scale"].toDouble();
      // One gradient per tensor of the list, then none for the double.
      return {ctx->needs_input_grad(0) ? g[0] * s[1] * scale : torch::Tensor(),
              ctx->needs_input_grad(1) ? g[0] * s[0] * scale : torch::Tensor(), torch::Tensor()};
    }
  };
  auto a = torch::randn({3}, torch::requires_grad());
  auto b = torch::randn({3}, torch::requires_grad());
  std::vector<torch::Tensor> list{a, b};
  auto out = Combine::apply(at::TensorList(list), 2.0);
  out.sum().backward();
  EXPECT_TRUE(torch::allclose(a.grad(), b * 2));
  EXPECT_TRUE(torch::allclose(b.grad(), a * 2));

  // grad() of one input: the other's edge is trimmed, so needs_input_grad says false.
  struct Watch : torch::autograd::Function<Watch> {
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x, torch::Tensor y) {
      ctx->save_for_backward({x, y});
      return x * y;
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                    torch::autograd::variable_list g) {
      auto s = ctx->get_saved_variables();
      ctx->saved_data["asked"] = static_cast<int64_t>(ctx->needs_input_grad(0)) * 10 +
                                 static_cast<int64_t>(ctx->needs_input_grad(1));
      seen().push_back(ctx->saved_data["asked"].toInt());
      return {g[0] * s[1], g[0] * s[0]};
    }
    static std::vector<int64_t>& seen() {
      static std::vector<int64_t> v;
      return v;
    }
  };
  Watch::seen().clear();
  auto x = torch::randn({2}, torch::requires_grad()), y = torch::randn({2}, torch::requires_grad());
  auto gx = torch::autograd::grad({Watch::apply(x, y).sum()}, {x})[0];
  EXPECT_TRUE(torch::allclose(gx, y));
  auto gy = torch::autograd::grad({Watch::apply(x, y).sum()}, {y})[0];
  EXPECT_TRUE(torch::allclose(gy, x));
  Watch::apply(x, y).sum().backward();
  EXPECT_EQ(Watch::seen(), std::vector<int64_t>({10, 1, 11}));
}

}  // namespace

namespace {
struct CountElementsImpl : torch::nn::Module {
  int64_t forward(torch::Tensor x) { return x.numel(); }
};
TORCH_MODULE(CountElements);

TEST(TorchCompat, HolderCallsANonTensorForwardDirectly) {
  CountElements m;
  EXPECT_EQ(m(torch::ones(123)), 123);
  torch::nn::Linear fc(2, 3);  // Tensor forward: still through operator() (hooks run)
  int calls = 0;
  fc->register_forward_hook([&](torch::nn::Module&, const std::vector<torch::Tensor>&,
                                const std::vector<torch::Tensor>&) -> std::optional<std::vector<torch::Tensor>> {
    ++calls;
    return std::nullopt;
  });
  EXPECT_EQ(fc(torch::ones({1, 2})).sizes(), std::vector<int64_t>({1, 3}));
  EXPECT_EQ(calls, 1);
}

TEST(TorchCompat, ReshapeAliasUpsampleExactAndDetailAlphaDropout) {
  // _reshape_alias is as_strided from the tensor's storage offset, and differentiable.
  torch::manual_seed(0);
  auto x = torch::randn({3, 3});
  auto row = x.narrow(0, 1, 2);  // storage offset 3
  auto a = torch::_reshape_alias(row, {2, 2}, {1, 2});
  EXPECT_EQ(a.sizes(), std::vector<int64_t>({2, 2}));
  EXPECT_EQ(a[1][0].item<float>(), x[1][1].item<float>());
  EXPECT_EQ(a[0][1].item<float>(), x[1][2].item<float>());
  auto y = torch::randn({3, 3}, torch::requires_grad(true));
  torch::_reshape_alias(y * y, {9}, {1}).sum().backward();
  EXPECT_TRUE(torch::allclose(y.grad(), 2 * y));
  EXPECT_NE(error_of([&] { torch::_reshape_alias(x, {9}, {1, 1}); }).find("[_reshape_alias]"), std::string::npos);

  // nearest-exact picks floor((j + 0.5) * in / out): 5 -> 3 columns reads 0, 2, 4 (nearest reads 0, 1, 3).
  auto img = torch::arange(5, torch::kFloat).view({1, 1, 1, 5});
  auto exact = at::native::_upsample_nearest_exact2d(img, std::vector<int64_t>{1, 3}, torch::nullopt);
  EXPECT_TRUE(torch::equal(exact.view({3}), torch::tensor({0.f, 2.f, 4.f})));
  namespace F = torch::nn::functional;
  auto nearest = F::interpolate(img, F::InterpolateFuncOptions().size(std::vector<int64_t>{1, 3}));
  EXPECT_TRUE(torch::equal(nearest.view({3}), torch::tensor({0.f, 1.f, 3.f})));
  EXPECT_NE(error_of([&] { at::native::_upsample_nearest_exact2d(img.view({1, 5}), std::vector<int64_t>{3}, torch::nullopt); })
                .find("4-D"),
            std::string::npos);

  // F::detail::alpha_dropout keeps mean and std, and is the identity when not training.
  auto in = torch::randn(5000);
  auto out = F::detail::alpha_dropout(in, 0.5, true, false);
  EXPECT_TRUE(torch::allclose(in.mean(), out.mean(), 0.1, 0.1));
  EXPECT_TRUE(torch::allclose(in.std(), out.std(), 0.1, 0.1));
  EXPECT_TRUE(torch::equal(F::detail::alpha_dropout(in, 0.5, false, false), in));
  EXPECT_FALSE(torch::equal(F::detail::feature_alpha_dropout(in.view({50, 100}), 0.5, true, false), in.view({50, 100})));
}

TEST(TorchCompat, ResetAndMulOutWithGradients) {
  // reset() undefines this handle only.
  auto t = torch::ones({2});
  auto other = t;
  t.reset();
  EXPECT_FALSE(t.defined());
  ASSERT_TRUE(other.defined());
  EXPECT_EQ(other.sum().item<float>(), 2.f);

  // mul_out records no graph, so it refuses inputs requiring grad in grad mode (libtorch's message).
  auto s = torch::ones({2, 3}, torch::requires_grad(true));
  auto out = torch::empty({2, 3});
  EXPECT_NE(error_of([&] { torch::mul_out(out, s, s); })
                .find("out=... arguments don't support automatic differentiation, but one of the arguments requires grad"),
            std::string::npos);
  {
    torch::NoGradGuard no_grad;
    torch::mul_out(out, s, s * 2);
  }
  EXPECT_TRUE(torch::equal(out, torch::full({2, 3}, 2.f)));
  auto plain = torch::full({3}, 3.f);
  auto dst = torch::empty({1});
  torch::mul_out(dst, plain, plain);  // resized to the result
  EXPECT_TRUE(torch::equal(dst, torch::full({3}, 9.f)));
}

TEST(TorchCompat, RecurrentAndUnpoolDefaultsThroughSequential) {
  // The hidden state (and max_unpool's output_size) may be left out through AnyModule.
  torch::manual_seed(0);
  auto x = torch::randn({4, 2, 2});
  torch::nn::RNN rnn(2, 3);
  torch::nn::Sequential seq(torch::nn::Identity(), rnn);
  auto [out, h] = seq->forward<std::tuple<torch::Tensor, torch::Tensor>>(x);
  auto [want_out, want_h] = rnn->forward(x);
  EXPECT_TRUE(torch::equal(out, want_out));
  EXPECT_TRUE(torch::equal(h, want_h));
  torch::nn::LSTM lstm(2, 3);
  torch::nn::AnyModule any_lstm(lstm);
  auto lstm_out = any_lstm.forward<std::tuple<torch::Tensor, std::tuple<torch::Tensor, torch::Tensor>>>(x);
  EXPECT_TRUE(torch::equal(std::get<0>(lstm_out), std::get<0>(lstm->forward(x))));
  torch::nn::GRUCell cell(2, 3);
  torch::nn::AnyModule any_cell(cell);
  EXPECT_TRUE(torch::equal(any_cell.forward(x[0]), cell->forward(x[0])));
  torch::nn::LSTMCell lcell(2, 3);
  torch::nn::AnyModule any_lcell(lcell);
  EXPECT_TRUE(torch::equal(std::get<0>(any_lcell.forward<std::tuple<torch::Tensor, torch::Tensor>>(x[0])),
                           std::get<0>(lcell->forward(x[0]))));
  // Too many arguments is still an error.
  EXPECT_NE(error_of([&] { any_cell.forward(x[0], x[0], x[0]); }).find("expects"), std::string::npos);

  torch::nn::Sequential unpool(torch::nn::MaxUnpool1d(3));
  auto y = unpool->forward(torch::tensor({{{2.f, 4.f, 5.f}}}), torch::tensor({{{1, 3, 4}}}, torch::kLong));
  EXPECT_TRUE(torch::equal(y, torch::tensor({{{0.f, 2.f, 0.f, 4.f, 5.f, 0.f, 0.f, 0.f, 0.f}}})));
}
}  // namespace
