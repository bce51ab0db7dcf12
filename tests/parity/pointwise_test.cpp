// Element-wise ops against libtorch 1.13: every unary op on every dtype and layout, every
// binary op on every dtype pair with broadcasting and scalars. Where torch refuses an
// input, ember must refuse it too (except float16/bfloat16 math that torch 1.13 lacks
// on CPU, which ember supports).

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ember/ember.h>

#include <functional>
#include <string>
#include <vector>

#include "parity/torch_bridge.h"

// Named per file: the parity files are compiled in unity batches (Note [Build time]).
namespace pointwise_parity {

using ember::DType;

struct Tol {
  double rtol, atol;
};

Tol tol_for(DType dt) {
  switch (dt) {
    case ember::kFloat16: return {2e-3, 1e-3};
    case ember::kBFloat16: return {1.6e-2, 1e-2};
    case ember::kFloat32: return {2e-5, 1e-6};
    case ember::kFloat64: return {1e-12, 1e-14};
    default: return {0, 0};
  }
}

// Values for a dtype: random plus the awkward ones (zeros, infinities, NaN, halves).
ember::Tensor values(DType dt, int64_t n, bool nonzero = false) {
  if (ember::is_floating_point(dt)) {
    ember::Tensor r = ember::randn({n}, ember::kFloat64).mul(3.0);
    std::vector<double> special = {0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1.0, -1.0, 0.999, 1e-3};
    if (!nonzero) {
      special.push_back(INFINITY);
      special.push_back(-INFINITY);
      special.push_back(NAN);
    } else {
      special = {0.5, -0.5, 1.5, 2.5, -2.5, 1.0, -1.0, 3.0};
    }
    ember::Tensor s = ember::tensor(special, ember::kFloat64);
    r.slice(0, 0, s.numel()).copy_(s);
    return r.to(dt);
  }
  if (dt == ember::kBool) return ember::randint(0, 2, {n}).to(ember::kBool);
  if (dt == ember::kUInt8) return ember::randint(nonzero ? 1 : 0, 40, {n}).to(dt);
  ember::Tensor r = ember::randint(-20, 20, {n});
  if (nonzero) r = ember::where(r.eq(0), ember::full({n}, 7), r);
  return r.to(dt);
}

// The same logical values in four layouts: contiguous, transposed, stepped, expanded.
std::vector<std::pair<std::string, ember::Tensor>> layouts(const ember::Tensor& flat35) {
  ember::Tensor base = flat35.reshape({5, 7});
  return {
      {"contiguous", base},
      {"transposed", base.t().contiguous().t()},
      {"stepped", ember::empty({5, 14}, base.dtype()).slice(1, 0, 14, 2).copy_(base)},
      {"expanded", base.slice(0, 0, 1).expand({5, 7})},
  };
}

void expect_match(const ember::Tensor& e, const torch::Tensor& t, const std::string& what) {
  ASSERT_EQ(e.dtype(), parity::to_ember(t.scalar_type())) << what;
  ASSERT_EQ(e.sizes().vec(), t.sizes().vec()) << what;
  torch::Tensor et = parity::to_torch(e);
  if (ember::is_floating_point(e.dtype())) {
    Tol tol = tol_for(e.dtype());
    bool ok = torch::allclose(et.to(torch::kFloat64), t.to(torch::kFloat64), tol.rtol, tol.atol,
                              /*equal_nan=*/true);
    if (!ok) {
      torch::Tensor diff = (et.to(torch::kFloat64) - t.to(torch::kFloat64)).abs();
      diff = torch::where(torch::isnan(diff), torch::zeros_like(diff), diff);
      int64_t i = diff.reshape(-1).argmax().item<int64_t>();
      ADD_FAILURE() << what << ": worst element " << i << " ember " << et.reshape(-1)[i].item<double>()
                    << " torch " << t.reshape(-1)[i].item<double>();
    }
  } else {
    EXPECT_TRUE(torch::equal(et, t.contiguous())) << what << "\nember:\n" << et << "\ntorch:\n" << t;
  }
}

struct Unary {
  std::string name;
  std::function<ember::Tensor(const ember::Tensor&)> e;
  std::function<torch::Tensor(const torch::Tensor&)> t;
};

std::vector<Unary> unary_ops() {
  using E = ember::Tensor;
  using T = torch::Tensor;
#define U(name, expr_e, expr_t) {name, [](const E& x) { return expr_e; }, [](const T& x) { return expr_t; }}
  return {
      U("neg", x.neg(), x.neg()), U("abs", x.abs(), x.abs()), U("sign", x.sign(), x.sign()),
      U("exp", x.exp(), x.exp()), U("exp2", x.exp2(), x.exp2()), U("expm1", x.expm1(), x.expm1()),
      U("log", x.log(), x.log()), U("log2", x.log2(), x.log2()), U("log10", x.log10(), x.log10()),
      U("log1p", x.log1p(), x.log1p()), U("sqrt", x.sqrt(), x.sqrt()), U("rsqrt", x.rsqrt(), x.rsqrt()),
      U("reciprocal", x.reciprocal(), x.reciprocal()), U("sin", x.sin(), x.sin()),
      U("cos", x.cos(), x.cos()), U("tan", x.tan(), x.tan()), U("asin", x.asin(), x.asin()),
      U("acos", x.acos(), x.acos()), U("atan", x.atan(), x.atan()), U("sinh", x.sinh(), x.sinh()),
      U("cosh", x.cosh(), x.cosh()), U("tanh", x.tanh(), x.tanh()),
      U("sigmoid", x.sigmoid(), x.sigmoid()), U("relu", x.relu(), x.relu()),
      U("gelu", x.gelu(), torch::gelu(x)), U("gelu_tanh", x.gelu("tanh"), torch::gelu(x, "tanh")),
      U("silu", x.silu(), torch::silu(x)), U("softplus", x.softplus(), torch::softplus(x, 1, 20)),
      U("softplus_beta", x.softplus(2, 3), torch::softplus(x, 2, 3)),
      U("leaky_relu", ember::leaky_relu(x), torch::leaky_relu(x)),
      U("leaky_relu_slope", ember::leaky_relu(x, 0.2), torch::leaky_relu(x, 0.2)),
      U("logit", ember::logit(x.mul(0.3)), torch::logit(x.mul(0.3))),
      U("logit_eps", ember::logit(x.mul(0.3), 0.2), torch::logit(x.mul(0.3), 0.2)),
      U("erf", x.erf(), x.erf()),
      U("erfinv", x.mul(0.3).erfinv(), x.mul(0.3).erfinv()), U("floor", x.floor(), x.floor()),
      U("ceil", x.ceil(), x.ceil()), U("round", x.round(), x.round()), U("trunc", x.trunc(), x.trunc()),
      U("frac", x.frac(), x.frac()), U("clamp", x.clamp(-1, 2), x.clamp(-1, 2)),
      U("clamp_min", x.clamp_min(0.5), x.clamp_min(0.5)), U("clamp_max", x.clamp_max(1), x.clamp_max(1)),
      U("nan_to_num", x.nan_to_num(), x.nan_to_num()),
      U("nan_to_num_args", x.nan_to_num(1.0, 2.0, -3.0), x.nan_to_num(1.0, 2.0, -3.0)),
      U("logical_not", x.logical_not(), x.logical_not()), U("isnan", x.isnan(), x.isnan()),
      U("isinf", x.isinf(), x.isinf()), U("isfinite", x.isfinite(), x.isfinite()),
  };
#undef U
}

TEST(PointwiseParity, UnaryOpsEveryDtypeAndLayout) {
  ember::manual_seed(1);
  int compared = 0;
  for (const auto& op : unary_ops()) {
    for (int d = 0; d < ember::kNumDTypes; ++d) {
      const auto dt = static_cast<DType>(d);
      for (const auto& [layout, x] : layouts(values(dt, 35))) {
        const std::string what = op.name + " " + std::string(ember::dtype_name(dt)) + " " + layout;
        torch::Tensor tx = parity::to_torch(x);
        torch::Tensor ty;
        bool torch_threw = false;
        try {
          ty = op.t(tx);
        } catch (const c10::Error&) {
          torch_threw = true;
        }
        if (torch_threw) {
          if (dt != ember::kFloat16 && dt != ember::kBFloat16) {
            EXPECT_THROW(op.e(x), ember::Error) << what << ": torch refuses this input";
          }
          continue;
        }
        ember::Tensor ey;
        try {
          ey = op.e(x);
        } catch (const ember::Error& err) {
          ADD_FAILURE() << what << ": ember threw but torch did not: " << err.what();
          continue;
        }
        expect_match(ey, ty, what);
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 1200);
}

// Binary float math runs through Sleef at the avx2/avx512 levels: within 2 ulp of libtorch's
// float32 results (which use Sleef too where vectorised), on a length that leaves a tail.
TEST(PointwiseParity, BinaryFloatMathWithinTwoUlp) {
  ember::manual_seed(6);
  ember::Tensor a = ember::randn({4099}).mul(3), b = ember::randn({4099}).mul(3);
  ember::Tensor pos = b.abs() + 0.1;
  struct Case {
    const char* name;
    ember::Tensor e;
    torch::Tensor t;
  };
  torch::Tensor ta = parity::to_torch(a), tb = parity::to_torch(b), tpos = parity::to_torch(pos);
  for (const Case& c : std::vector<Case>{{"atan2", ember::atan2(a, b), torch::atan2(ta, tb)},
                                         {"pow", pos.pow(a), tpos.pow(ta)},
                                         {"fmod", a.mul(10).fmod(b), ta.mul(10).fmod(tb)}}) {
    torch::Tensor et = parity::to_torch(c.e);
    // ulp of the torch value, float32
    torch::Tensor ulp = (torch::nextafter(c.t.abs(), torch::full_like(c.t, INFINITY)) - c.t.abs());
    torch::Tensor err = (et - c.t).abs() / ulp;
    err = torch::where(torch::isnan(err), torch::zeros_like(err), err);
    EXPECT_LE(err.max().item<double>(), 2.0) << c.name;
    EXPECT_EQ(torch::isnan(et).sum().item<int64_t>(), torch::isnan(c.t).sum().item<int64_t>()) << c.name;
  }
}

TEST(PointwiseParity, InPlaceUnaryMatchesOutOfPlace) {
  ember::manual_seed(2);
  ember::Tensor x = values(ember::kFloat32, 35).reshape({5, 7}).t();
  for (auto [name, fn_, fn] :
       std::vector<std::tuple<std::string, std::function<void(ember::Tensor&)>, std::function<ember::Tensor(const ember::Tensor&)>>>{
           {"exp_", [](ember::Tensor& t) { t.exp_(); }, [](const ember::Tensor& t) { return t.exp(); }},
           {"tanh_", [](ember::Tensor& t) { t.tanh_(); }, [](const ember::Tensor& t) { return t.tanh(); }},
           {"relu_", [](ember::Tensor& t) { t.relu_(); }, [](const ember::Tensor& t) { return t.relu(); }},
           {"clamp_", [](ember::Tensor& t) { t.clamp_(-1, 1); }, [](const ember::Tensor& t) { return t.clamp(-1, 1); }},
           {"floor_", [](ember::Tensor& t) { t.floor_(); }, [](const ember::Tensor& t) { return t.floor(); }},
       }) {
    ember::Tensor y = x.clone().t().contiguous().t();  // same non-contiguous layout
    uint32_t v = y._version();
    fn_(y);
    EXPECT_EQ(y._version(), v + 1) << name;
    EXPECT_TRUE(ember::equal(y.isnan(), fn(x).isnan())) << name;
    EXPECT_TRUE(y.nan_to_num().equal(fn(x).nan_to_num())) << name;
  }
}

struct Binary {
  std::string name;
  std::function<ember::Tensor(const ember::Tensor&, const ember::Tensor&)> e;
  std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)> t;
  bool needs_nonzero_rhs = false;
};

std::vector<Binary> binary_ops() {
  using E = ember::Tensor;
  using T = torch::Tensor;
#define B(name, expr_e, expr_t, nz) \
  {name, [](const E& a, const E& b) { return expr_e; }, [](const T& a, const T& b) { return expr_t; }, nz}
  return {
      B("add", a + b, a + b, false), B("add_alpha", a.add(b, 2), a.add(b, 2), false),
      B("sub", a - b, a - b, false), B("sub_alpha", a.sub(b, 3), a.sub(b, 3), false),
      B("mul", a * b, a * b, false), B("div", a / b, a / b, false),
      B("div_trunc", a.div(b, "trunc"), a.div(b, "trunc"), true),
      B("div_floor", a.div(b, "floor"), a.div(b, "floor"), true),
      B("remainder", a.remainder(b), a.remainder(b), true), B("fmod", a.fmod(b), a.fmod(b), true),
      B("pow", a.pow(b), a.pow(b), false), B("maximum", a.maximum(b), a.maximum(b), false),
      B("minimum", a.minimum(b), a.minimum(b), false), B("atan2", a.atan2(b), a.atan2(b), false),
      B("eq", a == b, a == b, false), B("ne", a != b, a != b, false), B("lt", a < b, a < b, false),
      B("le", a <= b, a <= b, false), B("gt", a > b, a > b, false), B("ge", a >= b, a >= b, false),
      B("logical_and", a.logical_and(b), a.logical_and(b), false),
      B("logical_or", a.logical_or(b), a.logical_or(b), false),
      B("logical_xor", a.logical_xor(b), a.logical_xor(b), false),
  };
#undef B
}

TEST(PointwiseParity, BinaryOpsEveryDtypePairWithBroadcasting) {
  ember::manual_seed(3);
  int compared = 0;
  for (const auto& op : binary_ops()) {
    for (int da = 0; da < ember::kNumDTypes; ++da) {
      for (int db = 0; db < ember::kNumDTypes; ++db) {
        const auto ta = static_cast<DType>(da), tb = static_cast<DType>(db);
        // (5, 1, 7) with (4, 7): broadcast both ways; b transposed to be non-contiguous.
        ember::Tensor a = values(ta, 35).reshape({5, 1, 7});
        ember::Tensor b = values(tb, 28, op.needs_nonzero_rhs).reshape({7, 4}).t();
        if (op.name == "pow" && ember::is_integral(tb, false)) b = b.abs();  // torch refuses int ** negative
        const std::string what = op.name + " " + std::string(ember::dtype_name(ta)) + " x " +
                                 std::string(ember::dtype_name(tb));
        torch::Tensor ty;
        bool torch_threw = false;
        try {
          ty = op.t(parity::to_torch(a), parity::to_torch(b));
        } catch (const c10::Error&) {
          torch_threw = true;
        }
        if (torch_threw) {
          const bool half = ta == ember::kFloat16 || ta == ember::kBFloat16 || tb == ember::kFloat16 ||
                            tb == ember::kBFloat16;
          if (!half) {
            EXPECT_THROW(op.e(a, b), ember::Error) << what << ": torch refuses this input";
          }
          continue;
        }
        ember::Tensor ey;
        try {
          ey = op.e(a, b);
        } catch (const ember::Error& err) {
          ADD_FAILURE() << what << ": ember threw but torch did not: " << err.what();
          continue;
        }
        expect_match(ey, ty, what);
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 1500);
}

TEST(PointwiseParity, TensorScalarOpsFollowScalarPromotion) {
  ember::manual_seed(4);
  std::vector<std::pair<ember::Scalar, c10::Scalar>> scalars = {
      {ember::Scalar(2), c10::Scalar(2)}, {ember::Scalar(2.5), c10::Scalar(2.5)},
      {ember::Scalar(true), c10::Scalar(true)}, {ember::Scalar(-3), c10::Scalar(-3)}};
  int compared = 0;
  for (int d = 0; d < ember::kNumDTypes; ++d) {
    const auto dt = static_cast<DType>(d);
    ember::Tensor a = values(dt, 20).reshape({4, 5});
    torch::Tensor ta = parity::to_torch(a);
    for (auto& [es, ts] : scalars) {
      const std::string what = std::string(ember::dtype_name(dt)) + " with scalar " + std::to_string(es.to_double());
      std::vector<std::tuple<std::string, std::function<ember::Tensor()>, std::function<torch::Tensor()>>> cases = {
          {"add", [&] { return a + es; }, [&] { return ta + ts; }},
          // libtorch C++ operators with the scalar first do not follow Python semantics;
          // Python's are rsub and reciprocal() * scalar.
          {"rsub", [&] { return es - a; }, [&] { return torch::rsub(ta, ts); }},
          {"mul", [&] { return a * es; }, [&] { return ta * ts; }},
          {"div", [&] { return a / es; }, [&] { return ta / ts; }},
          {"rdiv", [&] { return es / a; }, [&] { return ta.reciprocal() * ts; }},
          {"pow", [&] { return a.pow(es); }, [&] { return ta.pow(ts); }},
          {"rpow", [&] { return ember::pow(es, a); }, [&] { return torch::pow(ts, ta); }},
          {"gt", [&] { return a > es; }, [&] { return ta > ts; }},
          {"eq", [&] { return a == es; }, [&] { return ta == ts; }},
          {"remainder", [&] { return a.remainder(es); }, [&] { return ta.remainder(ts); }},
          {"where", [&] { return ember::where(a > es, a, es); }, [&] { return torch::where(ta > ts, ta, ts); }},
      };
      for (auto& [name, fe, ft] : cases) {
        torch::Tensor ty;
        try {
          ty = ft();
        } catch (const c10::Error&) {
          if (dt != ember::kFloat16 && dt != ember::kBFloat16) {
            EXPECT_THROW(fe(), ember::Error) << name << " " << what;
          }
          continue;
        }
        ember::Tensor ey;
        try {
          ey = fe();
        } catch (const ember::Error& err) {
          ADD_FAILURE() << name << " " << what << ": ember threw but torch did not: " << err.what();
          continue;
        }
        expect_match(ey, ty, name + " " + what);
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 300);
}

TEST(PointwiseParity, InPlaceBinaryCastingRules) {
  for (int da = 0; da < ember::kNumDTypes; ++da) {
    for (int db = 0; db < ember::kNumDTypes; ++db) {
      const auto ta = static_cast<DType>(da), tb = static_cast<DType>(db);
      ember::Tensor a = ember::ones({2, 3}, ta);
      ember::Tensor b = ember::ones({3}, tb);
      torch::Tensor tta = parity::to_torch(a);
      bool torch_ok = true;
      try {
        tta.add_(parity::to_torch(b));
      } catch (const c10::Error&) {
        torch_ok = false;
      }
      const std::string what = std::string(ember::dtype_name(ta)) + " += " + std::string(ember::dtype_name(tb));
      if (torch_ok) {
        ASSERT_NO_THROW(a.add_(b)) << what;
        expect_match(a, tta, what);
      } else {
        EXPECT_THROW(a.add_(b), ember::Error) << what;
      }
    }
  }
  // The broadcast shape must equal self's shape.
  EXPECT_THROW(ember::ones({3}).add_(ember::ones({2, 3})), ember::Error);
}

TEST(PointwiseParity, WhereLerpIscloseClampTensor) {
  ember::manual_seed(5);
  ember::Tensor a = ember::randn({4, 5}), b = ember::randn({5}), w = ember::rand({4, 1});
  torch::Tensor ta = parity::to_torch(a), tb = parity::to_torch(b), tw = parity::to_torch(w);
  expect_match(ember::where(a > 0, a, b), torch::where(ta > 0, ta, tb), "where");
  expect_match(a.lerp(b.expand({4, 5}), 0.3), ta.lerp(tb.expand({4, 5}), 0.3), "lerp scalar");
  expect_match(a.lerp(b.expand({4, 5}), w.expand({4, 5})), ta.lerp(tb.expand({4, 5}), tw.expand({4, 5})),
               "lerp tensor");
  ember::Tensor c = a + b * 1e-6;
  expect_match(ember::isclose(a, c, 1e-5, 1e-8), torch::isclose(ta, parity::to_torch(c), 1e-5, 1e-8), "isclose");
  EXPECT_EQ(ember::allclose(a, c), torch::allclose(ta, parity::to_torch(c)));
  expect_match(a.clamp(b.neg().abs().neg(), b.abs()), ta.clamp(tb.abs().neg(), tb.abs()), "clamp tensor");
  ember::Tensor i = ember::randint(-5, 5, {6});
  expect_match(i.clamp(0.5, 2.5), parity::to_torch(i).clamp(0.5, 2.5), "clamp int with float bounds");
}

}  // namespace pointwise_parity
