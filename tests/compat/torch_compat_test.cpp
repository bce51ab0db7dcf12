// The libtorch compatibility surface (src/ember/torch.h and the libtorch-shaped APIs it
// relies on): index lists, nested torch::tensor, resize_/set_data, Scalar accessors,
// layouts, warnings through c10::Warning, TORCH_CHECK, and the autograd semantics that
// libtorch code depends on (mark_dirty, retain_grad after in-place ops, views under
// no-grad, empty input lists).

#include <ember/torch.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

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

}  // namespace
