// Element-wise ops: edge cases and guarantees beyond the libtorch parity suite.

#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace ops_pointwise_test {

using namespace ember;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Pointwise, BroadcastingShapesAndValues) {
  Tensor a = arange(3, kFloat32).reshape({3, 1});
  Tensor b = arange(4, kFloat32);
  Tensor c = a + b;
  EXPECT_EQ(c.sizes().vec(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5}));
  std::string msg = error_of([] { ones({2, 3}) + ones({4}); });
  EXPECT_NE(msg.find("must match the size of tensor b (4) at non-singleton dimension 1"), std::string::npos) << msg;
}

TEST(Pointwise, ZeroDimAndEmptyTensors) {
  Tensor s = tensor(2.0);
  EXPECT_EQ((s * s).dim(), 0);
  EXPECT_FLOAT_EQ((s * s).item<float>(), 4.0f);
  Tensor e = zeros({0, 3});
  EXPECT_EQ((e + ones({3})).sizes().vec(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(e.exp().numel(), 0);
}

TEST(Pointwise, TypePromotionOfResults) {
  EXPECT_EQ((ones({2}, kInt32) + ones({2}, kInt64)).dtype(), kInt64);
  EXPECT_EQ((ones({2}, kInt32) / ones({2}, kInt32)).dtype(), kFloat32);  // true division
  EXPECT_EQ((ones({2}, kInt32) * 2.5).dtype(), kFloat32);
  EXPECT_EQ((ones({2}, kFloat16) * 2.5).dtype(), kFloat16);
  EXPECT_EQ((ones({2}, kUInt8) + ones({2}, kInt8)).dtype(), kInt16);
  EXPECT_EQ(ones({2}, kInt64).exp().dtype(), kFloat32);
  EXPECT_EQ(ones({2}, kInt64).abs().dtype(), kInt64);
  EXPECT_EQ((ones({2}) > 0).dtype(), kBool);
}

// Integer division by zero: ember raises (PyTorch raises ZeroDivisionError too); floating
// division by zero follows IEEE (inf, nan).
TEST(Pointwise, DivisionByZero) {
  Tensor i = tensor({5, -5, 0});
  Tensor z = zeros({3}, kInt64);
  std::string msg = error_of([&] { i.div(z, "floor"); });
  EXPECT_NE(msg.find("division by zero"), std::string::npos) << msg;
  EXPECT_THROW(i.div(z, "trunc"), Error);
  EXPECT_THROW(i.remainder(z), Error);
  EXPECT_THROW(i.fmod(0), Error);
  Tensor q = i / z;  // true division promotes to float: IEEE results
  auto v = q.to_vector<float>();
  EXPECT_TRUE(std::isinf(v[0]) && v[0] > 0);
  EXPECT_TRUE(std::isinf(v[1]) && v[1] < 0);
  EXPECT_TRUE(std::isnan(v[2]));
}

TEST(Pointwise, RoundingDivisionAndRemainderSigns) {
  Tensor a = tensor({7, -7, 7, -7});
  Tensor b = tensor({2, 2, -2, -2});
  EXPECT_EQ(a.div(b, "floor").to_vector<int64_t>(), (std::vector<int64_t>{3, -4, -4, 3}));
  EXPECT_EQ(a.div(b, "trunc").to_vector<int64_t>(), (std::vector<int64_t>{3, -3, -3, 3}));
  EXPECT_EQ(a.remainder(b).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, -1, -1}));  // sign of divisor
  EXPECT_EQ(a.fmod(b).to_vector<int64_t>(), (std::vector<int64_t>{1, -1, 1, -1}));       // sign of dividend
  std::string msg = error_of([&] { a.div(b, "round"); });
  EXPECT_NE(msg.find("rounding_mode"), std::string::npos) << msg;
}

TEST(Pointwise, NanPropagation) {
  Tensor x = tensor({1.0, NAN, -2.0});
  Tensor y = tensor({NAN, 0.0, -3.0});
  auto mx = x.maximum(y).to_vector<float>();
  EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mx[1]));
  EXPECT_EQ(mx[2], -2.0f);
  EXPECT_TRUE(std::isnan(x.relu().to_vector<float>()[1]));
  EXPECT_TRUE(std::isnan(x.clamp(0, 1).to_vector<float>()[1]));
  EXPECT_EQ(x.nan_to_num(5.0).to_vector<float>(), (std::vector<float>{1, 5, -2}));
  EXPECT_EQ(x.isnan().to_vector<bool>(), (std::vector<bool>{false, true, false}));
  EXPECT_FALSE(x.eq(x).to_vector<bool>()[1]);  // NaN != NaN
}

TEST(Pointwise, InPlaceOnViewsWritesTheBaseAndBumpsTheVersion) {
  Tensor base = zeros({3, 4});
  Tensor col = base.select(1, 2);  // strided view
  const uint32_t v0 = base._version();
  col.add_(tensor({1.0f, 2.0f, 3.0f}));
  EXPECT_EQ(base._version(), v0 + 1);
  EXPECT_EQ(base.select(1, 2).to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(base.sum().item<float>(), 6.0f);
  col.mul_(2).exp_();
  EXPECT_EQ(base._version(), v0 + 3);
  EXPECT_FLOAT_EQ(base[2][2].item<float>(), std::exp(6.0f));
  // Overlapping in-place source: reads happen before writes, as if the source were cloned.
  Tensor r = arange(5, kFloat32);
  r.slice(0, 1).add_(r.slice(0, 0, 4));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{0, 1, 3, 5, 7}));
}

TEST(Pointwise, InPlaceCastingAndShapeErrors) {
  Tensor i = ones({3}, kInt64);
  std::string msg = error_of([&] { i.add_(0.5); });
  EXPECT_NE(msg.find("can't be cast to the desired output type int64"), std::string::npos) << msg;
  EXPECT_THROW(i.exp_(), Error);
  msg = error_of([] { ones({3}).mul_(ones({2, 3})); });
  EXPECT_NE(msg.find("doesn't match the broadcast shape [2, 3]"), std::string::npos) << msg;
  msg = error_of([] { ones({1, 3}).expand({2, 3}).add_(1); });
  EXPECT_NE(msg.find("single memory location"), std::string::npos) << msg;
  Tensor f = ones({2});
  f.add_(ones({2}, kInt64));  // int into float is allowed
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{2, 2}));
}

TEST(Pointwise, BoolRules) {
  Tensor m = tensor({true, false});
  EXPECT_NE(error_of([&] { -m; }).find("logical_not"), std::string::npos);
  EXPECT_NE(error_of([&] { m - m; }).find("bool"), std::string::npos);
  EXPECT_EQ(m.logical_not().to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ((m + m).dtype(), kBool);
  EXPECT_EQ((m + 1).dtype(), kInt64);
}

TEST(Pointwise, WhereRequiresBoolCondition) {
  Tensor a = tensor({1.0, 2.0}), b = tensor({10, 20});
  Tensor r = where(a > 1.5, a, b);
  EXPECT_EQ(r.dtype(), kFloat32);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{10, 2}));
  std::string msg = error_of([&] { where(b, a, a); });
  EXPECT_NE(msg.find("bool"), std::string::npos) << msg;
  EXPECT_EQ(where(a > 1.5, a, 0.0).to_vector<float>(), (std::vector<float>{0, 2}));
}

TEST(Pointwise, GeluAndFriendsKnownValues) {
  Tensor x = tensor({-1.0, 0.0, 1.0}, kFloat64);
  auto g = x.gelu().to_vector<double>();
  EXPECT_NEAR(g[2], 0.8413447460685429, 1e-12);
  EXPECT_NEAR(g[0], -0.15865525393145707, 1e-12);
  EXPECT_NEAR(x.gelu("tanh").to_vector<double>()[2], 0.8411919906082768, 1e-12);
  EXPECT_NEAR(x.silu().to_vector<double>()[2], 0.7310585786300049, 1e-12);
  EXPECT_NEAR(x.sigmoid().to_vector<double>()[0], 0.2689414213699951, 1e-12);
  EXPECT_NEAR(tensor({0.5}, kFloat64).erfinv().item<double>(), 0.4769362762044699, 1e-12);
  EXPECT_THROW(x.gelu("fast"), Error);
  EXPECT_EQ(tensor({0.5, 1.5, 2.5, -0.5}).round().to_vector<float>(), (std::vector<float>{0, 2, 2, -0}));
}

TEST(Pointwise, ParameterisedUnaryOps) {
  Tensor x = tensor({-2.0, -0.5, 0.0, 0.5, 3.0}, kFloat64);
  EXPECT_EQ(leaky_relu(x, 0.1).to_vector<double>(), (std::vector<double>{-0.2, -0.05, 0.0, 0.5, 3.0}));
  EXPECT_EQ(leaky_relu(x).to_vector<double>()[0], -2.0 * 0.01);
  // softplus: log1p(exp(beta x)) / beta, x itself above the threshold.
  auto sp = softplus(x, 2, 4).to_vector<double>();
  EXPECT_NEAR(sp[0], std::log1p(std::exp(-4.0)) / 2, 1e-15);
  EXPECT_EQ(sp[4], 3.0);
  // logit: without eps NaN outside [0, 1] and inf at 1; with eps the input is clamped.
  Tensor p = tensor({-0.5, 0.0, 0.25, 1.0, 2.0}, kFloat64);
  auto l = logit(p).to_vector<double>();
  EXPECT_TRUE(std::isnan(l[0]));
  EXPECT_EQ(l[1], -INFINITY);
  EXPECT_NEAR(l[2], std::log(1.0 / 3.0), 1e-15);
  EXPECT_EQ(l[3], INFINITY);
  EXPECT_TRUE(std::isnan(l[4]));
  auto le = logit(p, 0.1).to_vector<double>();
  EXPECT_NEAR(le[0], std::log(0.1 / 0.9), 1e-15);
  EXPECT_NEAR(le[4], std::log(0.9 / 0.1), 1e-15);
  // Integer inputs: logit computes in the default float dtype; leaky_relu and softplus refuse.
  EXPECT_EQ(logit(tensor({0, 1})).dtype(), kFloat32);
  EXPECT_EQ(error_of([] { leaky_relu(tensor({1, 2})); }),
            "[leaky_relu] is only defined for floating-point tensors, got dtype int64");
  EXPECT_EQ(error_of([] { softplus(tensor({1, 2})); }), "[softplus] expected a floating-point tensor, got int64");
  EXPECT_EQ(error_of([] { logit(Tensor()); }), "[logit] called on an undefined tensor");
}

// Float math with a vector form (atan2, pow, fmod and the unary functions) gives a value the
// same result wherever it sits: contiguous, strided, broadcast, or in the padded tail.
TEST(Pointwise, VectorisedFloatMathDoesNotDependOnLayout) {
  manual_seed(5);
  Tensor a = randn({37, 29}), b = randn({37, 29}).abs() + 0.5;
  Tensor at = a.t().contiguous().t(), bt = b.t().contiguous().t();
  for (auto [name, fn] : std::vector<std::pair<std::string, std::function<Tensor(const Tensor&, const Tensor&)>>>{
           {"atan2", [](const Tensor& x, const Tensor& y) { return atan2(x, y); }},
           {"pow", [](const Tensor& x, const Tensor& y) { return y.pow(x); }},
           {"fmod", [](const Tensor& x, const Tensor& y) { return x.mul(7).fmod(y); }},
           {"exp", [](const Tensor& x, const Tensor&) { return x.exp(); }}}) {
    Tensor ref = fn(a, b);
    EXPECT_TRUE(equal(fn(at, bt), ref)) << name << " transposed";
    EXPECT_TRUE(equal(fn(a.flatten().slice(0, 3, 40), b.flatten().slice(0, 3, 40)),
                      ref.flatten().slice(0, 3, 40)))
        << name << " offset tail";
    Tensor row = a.slice(0, 0, 1);
    EXPECT_TRUE(equal(fn(row.expand({37, 29}), b), fn(row.expand({37, 29}).contiguous(), b))) << name << " broadcast";
  }
}

// Bits of a float32 tensor, so that -0 and NaN payloads count.
std::vector<uint32_t> Bits(const Tensor& t) {
  const std::vector<float> v = t.contiguous().to_vector<float>();
  std::vector<uint32_t> out(v.size());
  std::memcpy(out.data(), v.data(), v.size() * sizeof(float));
  return out;
}

// Note [Small flat float32 operands]: add/sub/mul/div (and relu) of small contiguous
// same-shape float32 tensors skip the iterator; every result must have the bits of the iterator's path (taken
// for strided operands, broadcasts, a non-unit alpha and large sizes).
TEST(Pointwise, SmallFlatFloatOperandsMatchTheStridedPath) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t n : {1, 10, 33, 32768, 32769}) {
    manual_seed(static_cast<uint64_t>(n));
    Tensor a = randn({n}), b = randn({n});
    std::vector<float> av = a.to_vector<float>(), bv = b.to_vector<float>();
    const std::vector<std::pair<float, float>> special{{0.0f, -0.0f}, {-0.0f, -0.0f}, {1.0f, 0.0f}, {-1.0f, 0.0f},
                                                      {0.0f, 0.0f},  {inf, inf},     {inf, -inf}, {nan, 1.0f},
                                                      {1e-40f, 3.0f}, {3e38f, 3e38f}};
    for (size_t i = 0; i < special.size() && i < av.size(); ++i) av[i] = special[i].first, bv[i] = special[i].second;
    a = tensor(av);
    b = tensor(bv);
    // The same values through a strided view (a column of a 2-column matrix).
    auto strided = [&](const Tensor& t) { return stack({t, t}, 1).select(1, 0); };
    const Tensor as = strided(a), bs = strided(b);
    ASSERT_TRUE(n == 1 || !as.is_contiguous());  // a single element is contiguous at any stride
    for (auto [name, fn] : std::vector<std::pair<std::string, std::function<Tensor(const Tensor&, const Tensor&)>>>{
             {"add", [](const Tensor& x, const Tensor& y) { return x + y; }},
             {"sub", [](const Tensor& x, const Tensor& y) { return x - y; }},
             {"mul", [](const Tensor& x, const Tensor& y) { return x * y; }},
             {"div", [](const Tensor& x, const Tensor& y) { return x / y; }},
             {"add alpha", [](const Tensor& x, const Tensor& y) { return add(x, y, 0.5); }}}) {
      const Tensor flat = fn(a, b), ref = fn(as, bs);
      EXPECT_EQ(Bits(flat), Bits(ref)) << name << " n=" << n;
      if (n == 10) {
        const std::vector<float> v = flat.to_vector<float>();
        const std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
        if (name == "add") {
          EXPECT_TRUE(std::isinf(v[9]) && v[9] > 0) << "3e38 + 3e38 overflows";
        }
        if (name == "mul") {
          EXPECT_EQ(v[8], x[8] * y[8]) << "a subnormal operand";
        }
        if (name == "div") {
          EXPECT_TRUE(std::isnan(v[4]) && std::isinf(v[2]) && std::signbit(v[3])) << name;
        }
      }
    }
    EXPECT_EQ(Bits(a.relu()), Bits(as.relu())) << "relu n=" << n;
    // In place: the output is the first operand.
    Tensor c = a.clone();
    c.mul_(b);
    EXPECT_EQ(Bits(c), Bits(as * bs)) << "mul_ n=" << n;
    c = a.clone();
    c.sub_(b);
    EXPECT_EQ(Bits(c), Bits(as - bs)) << "sub_ n=" << n;
  }
  // Autograd through the flat path.
  Tensor x = tensor(std::vector<float>{1, 2, 3}).requires_grad_(true), y = tensor(std::vector<float>{4, 5, 6});
  (x * y + x / y).sum().backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{4 + 1 / 4.0f, 5 + 1 / 5.0f, 6 + 1 / 6.0f}));
}

TEST(Pointwise, AllcloseIscloseEqual) {
  Tensor a = tensor({1.0, 2.0, NAN});
  Tensor b = tensor({1.0 + 1e-7, 2.0, NAN});
  EXPECT_FALSE(allclose(a, b));
  EXPECT_TRUE(allclose(a, b, 1e-5, 1e-8, true));
  EXPECT_TRUE(equal(tensor({1, 2}), tensor({1, 2})));
  EXPECT_FALSE(equal(tensor({1, 2}), tensor({1, 2, 3})));
  EXPECT_THROW(isclose(tensor({1.0}), tensor({1})), Error);
}

TEST(Pointwise, LargeOpsAreBitIdenticalAcrossThreadCounts) {
  const int saved = get_num_threads();
  manual_seed(3);
  Tensor x = randn({1 << 20}), y = randn({1 << 20});
  set_num_threads(1);
  Tensor a = (x.exp() * y + x.tanh()).gelu();
  set_num_threads(2);
  Tensor b = (x.exp() * y + x.tanh()).gelu();
  set_num_threads(saved);
  EXPECT_TRUE(equal(a, b));
}

TEST(OpScope, ObserversSeeEveryOpAndRemovalStopsThem) {
  std::vector<std::string> seen;
  int id = add_op_observer([&](const OpEvent& e) {
    if (e.entering) seen.emplace_back(e.name);
  });
  Tensor x = ones({2});
  (x + x).exp().sum();
  remove_op_observer(id);
  x.mul(2);
  EXPECT_EQ(seen, (std::vector<std::string>{"add", "exp", "sum"}));
  bool threw_seen = false;
  id = add_op_observer([&](const OpEvent& e) {
    if (!e.entering && e.threw) threw_seen = true;
  });
  EXPECT_THROW(ones({2}) + ones({3}), Error);
  remove_op_observer(id);
  EXPECT_TRUE(threw_seen);
}

}  // namespace
