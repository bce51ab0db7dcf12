// Custom operators through ember/torch.h's TORCH_LIBRARY and dispatcher (src/ember/compat/library.h):
// schemas, registration and its undoing, typed calls, the not-implemented autograd wrapper
// (written arguments, views, errors at backward), user Autograd kernels and composite kernels.

#include <ember/torch.h>
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

namespace ember_library_test {

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

torch::Tensor scaled_add(const torch::Tensor& a, const torch::Tensor& b, double alpha) { return a + b * alpha; }
torch::Tensor add_into(const torch::Tensor& self, const torch::Tensor& other) { return self.add_(other); }
torch::Tensor as_alias(const torch::Tensor& self) { return self.alias(); }
std::tuple<torch::Tensor, int64_t> with_count(const torch::Tensor& a, at::TensorList rest) {
  torch::Tensor out = a.clone();
  for (const auto& t : rest) out.add_(t);
  return {out, static_cast<int64_t>(rest.size())};
}
torch::Tensor maybe_add(const torch::Tensor& a, const c10::optional<torch::Tensor>& b) {
  return b ? a + *b : a.clone();
}

// A static registration, as a user's extension library would have it.
torch::Tensor static_twice(const torch::Tensor& a) { return a * 2; }
TORCH_LIBRARY(ember_static_test, m) { m.def("twice(Tensor a) -> Tensor"); }
TORCH_LIBRARY_IMPL(ember_static_test, CPU, m) { m.impl("twice", TORCH_FN(static_twice)); }

TEST(OpLibrary, SchemaParsesAndPrintsBack) {
  const c10::FunctionSchema s = c10::parse_schema(
      "ns::op.out(Tensor(a!) self, Tensor? other=None, int[2] size=[1, 2], *, float alpha=1.0) -> Tensor(a!)");
  EXPECT_EQ(s.name(), "ns::op");
  EXPECT_EQ(s.overload_name(), "out");
  ASSERT_EQ(s.arguments().size(), 4u);
  EXPECT_EQ(s.arguments()[0].type(), "Tensor");
  ASSERT_TRUE(s.arguments()[0].alias_info().has_value());
  EXPECT_TRUE(s.arguments()[0].is_write());
  EXPECT_EQ(s.arguments()[1].type(), "Tensor?");
  EXPECT_EQ(s.arguments()[1].default_value().value(), "None");
  EXPECT_EQ(s.arguments()[2].type(), "int[2]");
  EXPECT_EQ(s.arguments()[2].default_value().value(), "[1, 2]");
  EXPECT_TRUE(s.arguments()[3].kwarg_only());
  ASSERT_EQ(s.returns().size(), 1u);
  EXPECT_TRUE(s.returns()[0].is_write());
  EXPECT_EQ(s.str(), "ns::op.out(Tensor(a!) self, Tensor? other=None, int[2] size=[1, 2], *, float alpha=1.0) -> "
                     "Tensor(a!)");
  const c10::FunctionSchema multi = c10::parse_schema("f(Tensor(a) x) -> (Tensor(a) y, Tensor[] z, int)", "lib");
  EXPECT_EQ(multi.name(), "lib::f");
  EXPECT_EQ(multi.str(), "lib::f(Tensor(a) x) -> (Tensor(a) y, Tensor[] z, int)");
  EXPECT_TRUE(contains(error_of([] { c10::parse_schema("ns::op(Tensor self -> Tensor"); }), "expected ','"));
  EXPECT_TRUE(contains(error_of([] { c10::parse_schema("ns::op(Tensr self) -> Tensor"); }), "unknown type 'Tensr'"));
  EXPECT_TRUE(contains(error_of([] { c10::parse_schema("ns::op(Tensor) -> Tensor"); }), "an argument name"));
}

TEST(OpLibrary, TypedCallsRunTheKernelAndCheckTheSignature) {
  auto m = MAKE_TORCH_LIBRARY(ember_lib_a);
  m.def("scaled_add(Tensor a, Tensor b, float alpha=1) -> Tensor");
  auto cpu = MAKE_TORCH_LIBRARY_IMPL(ember_lib_a, CPU);
  cpu.impl("scaled_add", TORCH_FN(scaled_add));
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow("ember_lib_a::scaled_add", "");
  EXPECT_EQ(op.schema().str(), "ember_lib_a::scaled_add(Tensor a, Tensor b, float alpha=1) -> Tensor");
  EXPECT_TRUE(op.hasKernelForDispatchKey(c10::DispatchKey::CPU));
  EXPECT_FALSE(op.hasKernelForDispatchKey(c10::DispatchKey::Autograd));
  const torch::Tensor a = torch::randn({3, 4}).t();  // non-contiguous [4, 3]
  const torch::Tensor b = torch::randn({3});          // broadcast
  const torch::Tensor c = op.typed<torch::Tensor(const torch::Tensor&, const torch::Tensor&, double)>().call(a, b, 0.5);
  EXPECT_TRUE(torch::allclose(c, a + b * 0.5));
  // A call that names another signature is refused, naming both.
  const std::string wrong = error_of([&] {
    op.typed<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>().call(a, b);
  });
  EXPECT_TRUE(contains(wrong, "[ember_lib_a::scaled_add] called as")) << wrong;
  EXPECT_TRUE(contains(wrong, "double")) << wrong;
  // Unknown ops name what is there.
  const std::string unknown = error_of([] { c10::Dispatcher::singleton().findSchemaOrThrow("ember_lib_a::nope", ""); });
  EXPECT_TRUE(contains(unknown, "Could not find schema for ember_lib_a::nope")) << unknown;
  EXPECT_TRUE(contains(unknown, "ember_lib_a::scaled_add")) << unknown;
}

TEST(OpLibrary, RegistrationIsUndoneWithTheLibrary) {
  {
    auto m = MAKE_TORCH_LIBRARY(ember_lib_b);
    m.def("f(Tensor a) -> Tensor", [](const torch::Tensor& a) { return a + 1; });
    EXPECT_TRUE(c10::Dispatcher::singleton().findSchema({"ember_lib_b::f", ""}).has_value());
    // One TORCH_LIBRARY per namespace while it is alive.
    const std::string twice = error_of([] { auto again = MAKE_TORCH_LIBRARY(ember_lib_b); });
    EXPECT_TRUE(contains(twice, "Only a single TORCH_LIBRARY can be used to register the namespace ember_lib_b"))
        << twice;
  }
  EXPECT_FALSE(c10::Dispatcher::singleton().findSchema({"ember_lib_b::f", ""}).has_value());
  auto m = MAKE_TORCH_LIBRARY(ember_lib_b);  // the namespace is free again
  m.def("f(Tensor a) -> Tensor");
  const std::string no_kernel = error_of([] {
    c10::Dispatcher::singleton()
        .findSchemaOrThrow("ember_lib_b::f", "")
        .typed<torch::Tensor(const torch::Tensor&)>()
        .call(torch::ones({2}));
  });
  EXPECT_TRUE(contains(no_kernel, "has no kernel to run on CPU tensors")) << no_kernel;
}

TEST(OpLibrary, KernelTypesAreCheckedAgainstTheSchema) {
  auto m = MAKE_TORCH_LIBRARY(ember_lib_c);
  m.def("g(Tensor a, int n) -> Tensor");
  auto cpu = MAKE_TORCH_LIBRARY_IMPL(ember_lib_c, CPU);
  const std::string bad = error_of([&] { cpu.impl("g", [](const torch::Tensor& a, double) { return a; }); });
  EXPECT_TRUE(contains(bad, "takes (Tensor, float)")) << bad;
  EXPECT_TRUE(contains(bad, "the schema says (Tensor, int)")) << bad;
  // The key of an IMPL block is the only one it registers.
  const std::string key = error_of([&] {
    cpu.impl("g", c10::DispatchKey::Autograd, [](const torch::Tensor& a, int64_t) { return a; });
  });
  EXPECT_TRUE(contains(key, "registers CPU kernels")) << key;
  // A bare name takes its schema from the C++ signature.
  m.def("h", [](const torch::Tensor& a, int64_t n, const c10::optional<torch::Tensor>& b) {
    return b ? a * static_cast<double>(n) + *b : a;
  });
  auto h = c10::Dispatcher::singleton().findSchemaOrThrow("ember_lib_c::h", "");
  EXPECT_EQ(h.schema().str(), "ember_lib_c::h(Tensor _0, int _1, Tensor? _2) -> Tensor");
}

TEST(OpLibrary, StaticRegistrationIsVisible) {
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow("ember_static_test::twice", "");
  const torch::Tensor x = torch::arange(4).to(torch::kFloat32);
  EXPECT_TRUE(torch::equal(op.typed<torch::Tensor(const torch::Tensor&)>().call(x), x * 2));
}

TEST(OpLibrary, BackendKernelsWithoutDerivativeFailAtBackwardNamingTheOp) {
  auto m = MAKE_TORCH_LIBRARY(ember_lib_d);
  m.def("with_count(Tensor a, Tensor[] rest) -> (Tensor, int)");
  m.def("maybe_add(Tensor a, Tensor? b) -> Tensor");
  auto cpu = MAKE_TORCH_LIBRARY_IMPL(ember_lib_d, CPU);
  cpu.impl("with_count", TORCH_FN(with_count));
  cpu.impl("maybe_add", TORCH_FN(maybe_add));
  auto& d = c10::Dispatcher::singleton();
  auto count = d.findSchemaOrThrow("ember_lib_d::with_count", "")
                   .typed<std::tuple<torch::Tensor, int64_t>(const torch::Tensor&, at::TensorList)>();
  auto maybe = d.findSchemaOrThrow("ember_lib_d::maybe_add", "")
                   .typed<torch::Tensor(const torch::Tensor&, const c10::optional<torch::Tensor>&)>();
  const torch::Tensor a = torch::randn({3});
  const torch::Tensor b = torch::randn({3}).requires_grad_();
  std::vector<torch::Tensor> rest = {torch::randn({3}), b};
  auto [out, n] = count.call(a, rest);
  EXPECT_EQ(n, 2);
  EXPECT_TRUE(torch::allclose(out, a + rest[0] + b));
  ASSERT_TRUE(out.requires_grad());
  EXPECT_EQ(out.grad_fn()->name(), "NotImplemented");
  const std::string backward = error_of([&] { out.sum().backward(); });
  EXPECT_TRUE(contains(backward, "ember_lib_d::with_count")) << backward;
  EXPECT_TRUE(contains(backward, "is not implemented")) << backward;
  // Nothing requires grad: no history.
  auto [plain, n2] = count.call(a, std::vector<torch::Tensor>{a});
  EXPECT_EQ(n2, 1);
  EXPECT_FALSE(plain.requires_grad());
  // An optional argument, given or not.
  EXPECT_TRUE(torch::allclose(maybe.call(a, b), a + b));
  EXPECT_TRUE(torch::allclose(maybe.call(a, {}), a));
  EXPECT_FALSE(maybe.call(a, {}).requires_grad());
}

TEST(OpLibrary, WrittenArgumentsAreCheckedBumpedAndRebased) {
  auto m = MAKE_TORCH_LIBRARY(ember_lib_e);
  m.def("add_into(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  auto cpu = MAKE_TORCH_LIBRARY_IMPL(ember_lib_e, CPU);
  cpu.impl("add_into", TORCH_FN(add_into));
  auto op = c10::Dispatcher::singleton()
                .findSchemaOrThrow("ember_lib_e::add_into", "")
                .typed<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>();
  const torch::Tensor leaf = torch::ones({2}).requires_grad_();
  const std::string on_leaf = error_of([&] { op.call(leaf, torch::ones({2})); });
  EXPECT_TRUE(contains(on_leaf, "a leaf Variable that requires grad is being used in an in-place operation"))
      << on_leaf;
  const torch::Tensor x = torch::ones({2});
  const uint32_t before = x._version();
  const torch::Tensor r = op.call(x, leaf);
  EXPECT_EQ(r.unsafeGetTensorImpl(), x.unsafeGetTensorImpl());
  EXPECT_NE(x._version(), before);
  EXPECT_TRUE(torch::equal(x, torch::full({2}, 2.0)));
  ASSERT_TRUE(x.requires_grad());  // it now depends on leaf through the op
  EXPECT_EQ(x.grad_fn()->name(), "NotImplemented");
  // On a view of a tensor requiring grad: the view becomes an as_strided view of the
  // base's new history.
  const torch::Tensor base = (torch::ones({4}).requires_grad_() * 1).contiguous();
  const torch::Tensor view = base.view({2, 2});
  EXPECT_EQ(op.call(view, torch::ones({2, 2})).unsafeGetTensorImpl(), view.unsafeGetTensorImpl());
  EXPECT_TRUE(contains(view.grad_fn()->name(), "AsStridedBackward"));
  EXPECT_EQ(base.grad_fn()->name(), "CopySlices");
  // A view taken under no_grad, written with grad mode on.
  torch::Tensor nograd_view;
  {
    torch::NoGradGuard guard;
    nograd_view = base.view({4});
    op.call(nograd_view, torch::ones({4}));  // fine inside the block
  }
  const std::string mixed = error_of([&] { op.call(nograd_view, torch::ones({4})); });
  EXPECT_TRUE(contains(mixed, "A view was created in no_grad mode")) << mixed;
}

TEST(OpLibrary, ViewSchemasMakeViewsThatRefuseInPlaceChanges) {
  auto m = MAKE_TORCH_LIBRARY(ember_lib_f);
  m.def("as_alias(Tensor(a) self) -> Tensor(a)");
  m.def("two_views(Tensor(a) self, Tensor(b) other) -> (Tensor(a), Tensor(b))");
  m.def("second_view(Tensor self, Tensor(b) other) -> (Tensor, Tensor(b))");
  auto cpu = MAKE_TORCH_LIBRARY_IMPL(ember_lib_f, CPU);
  cpu.impl("as_alias", TORCH_FN(as_alias));
  auto pair = [](const torch::Tensor& a, const torch::Tensor& b) { return std::make_tuple(a.alias(), b.alias()); };
  cpu.impl("two_views", pair);
  cpu.impl("second_view", pair);
  auto& d = c10::Dispatcher::singleton();
  auto op = d.findSchemaOrThrow("ember_lib_f::as_alias", "").typed<torch::Tensor(const torch::Tensor&)>();
  const torch::Tensor plain = torch::ones({3});
  const torch::Tensor v = op.call(plain);
  ASSERT_TRUE(v.is_view());
  EXPECT_EQ(v._base().unsafeGetTensorImpl(), plain.unsafeGetTensorImpl());
  const torch::Tensor b1 = torch::ones({3}).requires_grad_().clone();
  const torch::Tensor v1 = op.call(b1);
  ASSERT_TRUE(v1.is_view());
  EXPECT_EQ(v1._base().unsafeGetTensorImpl(), b1.unsafeGetTensorImpl());
  const torch::Tensor t = torch::ones({3}).requires_grad_();
  const std::string inplace = error_of([&] { v1.add_(t); });
  EXPECT_TRUE(contains(inplace, "which does not have a derivative implemented is forbidden")) << inplace;
  b1.add_(t);  // the base may change, but the view's history cannot follow it
  const std::string history = error_of([&] { (void)v1.grad_fn(); });
  EXPECT_TRUE(contains(history, "which does not have a derivative implemented is forbidden")) << history;
  EXPECT_TRUE(contains(error_of([] { (void)torch::ones({2})._base(); }), "non-view"));
  using Pair = std::tuple<torch::Tensor, torch::Tensor>(const torch::Tensor&, const torch::Tensor&);
  const std::string two = error_of([&] { d.findSchemaOrThrow("ember_lib_f::two_views", "").typed<Pair>().call(b1, t); });
  EXPECT_TRUE(contains(two, "Expected only a single output in the operator schema to have a non-write alias")) << two;
  const std::string second =
      error_of([&] { d.findSchemaOrThrow("ember_lib_f::second_view", "").typed<Pair>().call(b1, t); });
  EXPECT_TRUE(contains(second, "can only create view relationships between the first")) << second;
}

// A user's Autograd kernel: a custom Function whose forward calls the op below autograd.
struct ScaledAddFunction : public torch::autograd::Function<ScaledAddFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& a, const torch::Tensor& b,
                               double alpha) {
    ctx->saved_data["alpha"] = alpha;
    at::AutoDispatchBelowADInplaceOrView guard;
    return c10::Dispatcher::singleton()
        .findSchemaOrThrow("ember_lib_g::scaled_add", "")
        .typed<torch::Tensor(const torch::Tensor&, const torch::Tensor&, double)>()
        .call(a, b, alpha);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const double alpha = ctx->saved_data["alpha"].toDouble();
    return {grads[0], grads[0] * alpha, torch::Tensor()};
  }
};

TEST(OpLibrary, AutogradAndCompositeKernelsGiveGradients) {
  auto m = MAKE_TORCH_LIBRARY(ember_lib_g);
  m.def("scaled_add(Tensor a, Tensor b, float alpha) -> Tensor");
  // A composite kernel: autograd flows through the ember ops it calls.
  m.def("softplus_sum(Tensor a) -> Tensor", [](const torch::Tensor& a) { return a.softplus().sum(); });
  auto cpu = MAKE_TORCH_LIBRARY_IMPL(ember_lib_g, CPU);
  cpu.impl("scaled_add", TORCH_FN(scaled_add));
  auto ad = MAKE_TORCH_LIBRARY_IMPL(ember_lib_g, Autograd);
  ad.impl("scaled_add", [](const torch::Tensor& a, const torch::Tensor& b, double alpha) {
    return ScaledAddFunction::apply(a, b, alpha);
  });
  auto& d = c10::Dispatcher::singleton();
  auto op = d.findSchemaOrThrow("ember_lib_g::scaled_add", "")
                .typed<torch::Tensor(const torch::Tensor&, const torch::Tensor&, double)>();
  const torch::Tensor a = torch::randn({2, 3}).requires_grad_();
  const torch::Tensor b = torch::randn({2, 3}).requires_grad_();
  op.call(a, b, 3.0).sum().backward();
  EXPECT_TRUE(torch::allclose(a.grad(), torch::ones({2, 3})));
  EXPECT_TRUE(torch::allclose(b.grad(), torch::full({2, 3}, 3.0)));
  auto sp = d.findSchemaOrThrow("ember_lib_g::softplus_sum", "").typed<torch::Tensor(const torch::Tensor&)>();
  const torch::Tensor x = torch::randn({5}).requires_grad_();
  sp.call(x).backward();
  EXPECT_TRUE(torch::allclose(x.grad(), torch::sigmoid(x.detach())));
}

}  // namespace ember_library_test
