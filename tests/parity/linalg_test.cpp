// Matrix products against libtorch 1.13: matmul, mm, bmm, addmm, baddbmm, linear, dot and
// outer on the same inputs (contiguous, transposed, stepped, offset and expanded operands,
// odd and empty shapes, broadcast batches) in every dtype the ops accept, plus the
// errors both libraries raise. float32 products are compared with rtol 1e-4 and
// atol 1e-5 * sqrt(k). ember computes float16/bfloat16 products in float32 and rounds
// once; PyTorch 1.13 has no float16 products on the CPU, and its bfloat16 mm rounds the
// running sum to bfloat16 after every step of k (several ulps off for k = 33), so both
// are compared with torch computing in float32 and rounding once, and bfloat16 also
// against torch's own bfloat16 kernels with a tolerance sized for their rounding.

#include <ember/ember.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "parity/torch_bridge.h"

// Named per file: the parity files are compiled in unity batches (Note [Build time]).
namespace linalg_parity {

using I64 = std::vector<int64_t>;
using ETensor = ember::Tensor;
using TTensor = torch::Tensor;

std::string Str(const I64& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

bool IsReduced(ember::DType dt) { return dt == ember::kFloat16 || dt == ember::kBFloat16; }

// Random values of dtype: normal for floating types, small integers otherwise (int8 and
// uint8 products still wrap, identically in both libraries).
ETensor Random(const I64& shape, ember::DType dt) {
  if (ember::is_floating_point(dt)) return ember::randn(shape, dt);
  if (dt == ember::kUInt8) return ember::randint(0, 20, shape, dt);
  return ember::randint(-20, 20, shape, dt);
}

// How an operand is laid out in memory; every layout holds the same kind of values.
enum class Layout { kContiguous, kTransposed, kStepped, kOffset, kExpanded };

const char* Name(Layout l) {
  switch (l) {
    case Layout::kContiguous:
      return "contiguous";
    case Layout::kTransposed:
      return "transposed";
    case Layout::kStepped:
      return "stepped";
    case Layout::kOffset:
      return "offset";
    case Layout::kExpanded:
      return "expanded";
  }
  return "?";
}

ETensor Make(const I64& shape, ember::DType dt, Layout layout) {
  const int64_t d = static_cast<int64_t>(shape.size());
  I64 s = shape;
  switch (layout) {
    case Layout::kContiguous:
      return Random(shape, dt);
    case Layout::kTransposed:
      if (d < 2) return Random(shape, dt);
      std::swap(s[d - 1], s[d - 2]);
      return Random(s, dt).transpose(-1, -2);
    case Layout::kStepped:
      s[d - 1] *= 2;
      return Random(s, dt).slice(d - 1, 0, s[d - 1], 2);
    case Layout::kOffset:
      s[0] += 1;
      return Random(s, dt).slice(0, 1, s[0]);
    case Layout::kExpanded:
      s[0] = 1;
      return Random(s, dt).expand(shape);
  }
  return {};
}

// Same values in torch (a contiguous copy).
TTensor T(const ETensor& e) { return parity::to_torch(e); }

// Runs fn in torch the way ember computes dtype: float16 and bfloat16 through float32.
TTensor TorchRef(const std::function<TTensor(const std::vector<TTensor>&)>& fn,
                 const std::vector<ETensor>& inputs, ember::DType dt) {
  std::vector<TTensor> ts;
  for (const ETensor& e : inputs) {
    TTensor t = T(e);
    if (IsReduced(dt) && t.scalar_type() == parity::to_torch(dt)) t = t.to(torch::kFloat32);
    ts.push_back(t);
  }
  TTensor r = fn(ts);
  return IsReduced(dt) ? r.to(parity::to_torch(dt)) : r;
}

// Same shape and dtype; equal for integers and bool, close for floating types with a
// tolerance that grows with the reduction length k.
void ExpectMatches(const ETensor& e, const TTensor& t, int64_t k, const std::string& what,
                   double reduced_tol = 1e-2) {
  ASSERT_EQ(e.sizes().vec(), t.sizes().vec()) << what;
  ASSERT_EQ(parity::to_torch(e.dtype()), t.scalar_type()) << what;
  const TTensor et = T(e);
  if (!ember::is_floating_point(e.dtype())) {
    EXPECT_TRUE(torch::equal(et, t)) << what << "\nember:\n" << et << "\ntorch:\n" << t;
    return;
  }
  const double sk = std::sqrt(static_cast<double>(std::max<int64_t>(k, 1)));
  double rtol = 1e-4, atol = 1e-5 * sk;
  if (e.dtype() == ember::kFloat64) rtol = 1e-10, atol = 1e-12 * sk;
  if (IsReduced(e.dtype())) rtol = reduced_tol, atol = reduced_tol * sk;
  const TTensor ed = et.to(torch::kFloat64), td = t.to(torch::kFloat64);
  const TTensor ok = (ed - td).abs() <= atol + rtol * td.abs();
  if (!ok.all().item<bool>()) {
    ADD_FAILURE() << what << ": max abs difference " << (ed - td).abs().max().item<double>()
                  << " (rtol " << rtol << ", atol " << atol << ")";
  }
}

const std::vector<ember::DType> kProductDtypes = {
    ember::kFloat32, ember::kFloat64, ember::kFloat16, ember::kBFloat16, ember::kInt64,
    ember::kInt32,   ember::kInt16,   ember::kInt8,    ember::kUInt8};

struct Pair {
  I64 a, b;
};

// ---------------------------------------------------------------------------------------

TEST(LinalgParity, MatmulShapesLayoutsAndDtypes) {
  const std::vector<Pair> pairs = {{{1, 1}, {1, 1}},
                                   {{17, 33}, {33, 5}},
                                   {{3}, {3}},
                                   {{5, 4}, {4}},
                                   {{4}, {4, 6}},
                                   {{2, 3, 4}, {4, 5}},
                                   {{2, 1, 3, 4}, {5, 4, 6}},
                                   {{3}, {2, 3, 4}},
                                   {{2, 3, 4}, {4}},
                                   {{7, 3, 4}, {7, 4, 2}},
                                   {{17, 33, 5}, {5, 9}},
                                   {{2, 17, 33, 5}, {5, 2}},
                                   {{4, 1, 6}, {1, 6, 3}},
                                   {{65, 129}, {129, 257}},
                                   {{0, 4}, {4, 3}},
                                   {{2, 0}, {0, 3}},
                                   {{2, 3, 0}, {0, 5}},
                                   {{0}, {0}},
                                   {{0, 2, 3}, {3, 4}},
                                   {{3, 2, 3}, {0, 1, 3, 4}}};
  const std::vector<Layout> layouts = {Layout::kContiguous, Layout::kTransposed, Layout::kStepped,
                                       Layout::kOffset, Layout::kExpanded};
  for (ember::DType dt : kProductDtypes) {
    for (const Pair& p : pairs) {
      for (Layout la : layouts) {
        for (Layout lb : {Layout::kContiguous, Layout::kTransposed, Layout::kStepped}) {
          if (!ember::is_floating_point(dt) && la != lb) continue;  // fewer integer combos
          ETensor a = Make(p.a, dt, la), b = Make(p.b, dt, lb);
          const std::string what = std::string("matmul ") + Str(p.a) + " " + Name(la) + " @ " +
                                   Str(p.b) + " " + Name(lb) + " " +
                                   std::string(ember::dtype_name(dt));
          ETensor r = ember::matmul(a, b);
          TTensor want =
              TorchRef([](const auto& t) { return torch::matmul(t[0], t[1]); }, {a, b}, dt);
          ExpectMatches(r, want, p.a.back(), what);
          EXPECT_TRUE(r.is_contiguous()) << what;
        }
      }
    }
  }
}

TEST(LinalgParity, BFloat16AgainstTorchsOwnKernels) {
  // torch's bfloat16 mm rounds after every step of k, so allow a few ulps per sqrt(k).
  for (const Pair& p : std::vector<Pair>{
           {{17, 33}, {33, 5}}, {{2, 3, 64}, {64, 7}}, {{1000}, {1000}}, {{5, 40}, {40}}}) {
    ETensor a = Make(p.a, ember::kBFloat16, Layout::kTransposed);
    ETensor b = Make(p.b, ember::kBFloat16, Layout::kContiguous);
    ExpectMatches(ember::matmul(a, b), torch::matmul(T(a), T(b)), p.a.back(),
                  "native bfloat16 matmul " + Str(p.a), 5e-2);
  }
  // torch 1.13's bfloat16 baddbmm ignores beta when alpha == 0 (it returns the input); ember
  // returns beta * input, as torch does for float32.
  ETensor in = ember::randn({2, 3, 4}, ember::kBFloat16);
  ETensor b1 = ember::randn({2, 3, 5}, ember::kBFloat16),
          b2 = ember::randn({2, 5, 4}, ember::kBFloat16);
  ExpectMatches(ember::baddbmm(in, b1, b2, 2, 0),
                (T(in).to(torch::kFloat32) * 2).to(torch::kBFloat16), 5,
                "bfloat16 baddbmm alpha 0");
  ExpectMatches(ember::baddbmm(in, b1, b2, 2, 1), torch::baddbmm(T(in), T(b1), T(b2), 2, 1), 5,
                "native bfloat16 baddbmm", 5e-2);
}

TEST(LinalgParity, TransposedOperandsGiveTheSameResultAsContiguousCopies) {
  for (ember::DType dt : {ember::kFloat32, ember::kFloat64, ember::kBFloat16, ember::kInt64}) {
    for (const Pair& p : std::vector<Pair>{{{17, 33}, {33, 5}},
                                           {{300, 200}, {200, 301}},
                                           {{3, 17, 33}, {3, 33, 5}},
                                           {{1, 9}, {9, 1}}}) {
      ETensor a = Make(p.a, dt, Layout::kTransposed), b = Make(p.b, dt, Layout::kTransposed);
      const ETensor want = ember::matmul(a.contiguous(), b.contiguous());
      // OpenBLAS's kernels for different transpose flags may sum in different orders
      // (its small-matrix paths do), so layouts agree to rounding, not bit for bit;
      // bit-identity is promised across thread counts (see ThreadCount tests).
      const double tol = dt == ember::kBFloat16 ? 1e-2 : (dt == ember::kFloat32 ? 1e-5 : 1e-12);
      auto close = [&](const ETensor& got) {
        return got.to(ember::kFloat64).allclose(want.to(ember::kFloat64), tol, tol);
      };
      EXPECT_TRUE(close(ember::matmul(a, b))) << Str(p.a) << " " << dt;
      EXPECT_TRUE(close(ember::matmul(a, b.contiguous()))) << Str(p.a) << " " << dt;
      EXPECT_TRUE(close(ember::matmul(a.contiguous(), b))) << Str(p.a) << " " << dt;
      ExpectMatches(ember::matmul(a, b),
                    TorchRef([](const auto& t) { return torch::matmul(t[0], t[1]); }, {a, b}, dt),
                    p.a.back(), "transposed " + Str(p.a));
    }
  }
}

TEST(LinalgParity, MmAndBmm) {
  for (ember::DType dt : kProductDtypes) {
    std::vector<Pair> mm_pairs = {{{1, 1}, {1, 1}},
                                  {{17, 33}, {33, 5}},
                                  {{64, 1}, {1, 64}},
                                  {{3, 0}, {0, 2}},
                                  {{0, 5}, {5, 2}}};
    // Big enough to be split into tiles (floating types only, to keep the test quick).
    if (ember::is_floating_point(dt)) mm_pairs.push_back({{300, 200}, {200, 301}});
    for (const Pair& p : mm_pairs) {
      for (Layout l : {Layout::kContiguous, Layout::kTransposed, Layout::kStepped}) {
        ETensor a = Make(p.a, dt, l), b = Make(p.b, dt, Layout::kTransposed);
        ExpectMatches(ember::mm(a, b),
                      TorchRef([](const auto& t) { return torch::mm(t[0], t[1]); }, {a, b}, dt),
                      p.a.back(), "mm " + Str(p.a) + " " + Name(l));
      }
    }
    for (const Pair& p : std::vector<Pair>{{{1, 1, 1}, {1, 1, 1}},
                                           {{4, 3, 5}, {4, 5, 2}},
                                           {{3, 17, 33}, {3, 33, 5}},
                                           {{0, 2, 3}, {0, 3, 4}},
                                           {{2, 3, 0}, {2, 0, 4}},
                                           {{200, 9, 7}, {200, 7, 11}}}) {
      for (Layout l :
           {Layout::kContiguous, Layout::kTransposed, Layout::kOffset, Layout::kExpanded}) {
        if (l == Layout::kOffset && p.a[0] == 0) continue;
        ETensor a = Make(p.a, dt, l), b = Make(p.b, dt, Layout::kStepped);
        ExpectMatches(ember::bmm(a, b),
                      TorchRef([](const auto& t) { return torch::bmm(t[0], t[1]); }, {a, b}, dt),
                      p.a.back(), "bmm " + Str(p.a) + " " + Name(l));
      }
      // A permuted batch dim (the batch is not outermost in memory).
      if (p.a[0] > 0) {
        ETensor a = Random({p.a[1], p.a[0], p.a[2]}, dt).permute({1, 0, 2});
        ETensor b = Random(p.b, dt);
        ExpectMatches(ember::bmm(a, b),
                      TorchRef([](const auto& t) { return torch::bmm(t[0], t[1]); }, {a, b}, dt),
                      p.a.back(), "bmm permuted " + Str(p.a));
      }
    }
  }
}

TEST(LinalgParity, AddmmAndBaddbmm) {
  struct Coeffs {
    double beta, alpha;
  };
  const std::vector<Coeffs> coeffs = {{1, 1}, {0.5, -2}, {0, 1.5}, {2, 0}};
  for (ember::DType dt : kProductDtypes) {
    const bool integral = !ember::is_floating_point(dt);
    for (const Coeffs& c : coeffs) {
      // Integer dtypes take integer coefficients (PyTorch truncates others the same way);
      // PyTorch refuses negative ones for uint8.
      double beta = integral ? std::trunc(c.beta) : c.beta;
      double alpha = integral ? std::trunc(c.alpha) : c.alpha;
      if (dt == ember::kUInt8) beta = std::fabs(beta), alpha = std::fabs(alpha);
      for (const I64& in_shape : std::vector<I64>{{17, 5}, {5}, {}, {17, 1}}) {
        ETensor in = Random(in_shape, dt);
        ETensor m1 = Make({17, 33}, dt, Layout::kTransposed),
                m2 = Make({33, 5}, dt, Layout::kStepped);
        ETensor r = ember::addmm(in, m1, m2, beta, alpha);
        TTensor want =
            TorchRef([&](const auto& t) { return torch::addmm(t[0], t[1], t[2], beta, alpha); },
                     {in, m1, m2}, dt);
        ExpectMatches(r, want, 33,
                      "addmm input " + Str(in_shape) + " beta " + std::to_string(beta) + " alpha " +
                          std::to_string(alpha) + " " + std::string(ember::dtype_name(dt)));
      }
      for (const I64& in_shape : std::vector<I64>{{3, 17, 5}, {17, 5}, {5}, {3, 1, 1}}) {
        ETensor in = Random(in_shape, dt);
        ETensor b1 = Make({3, 17, 33}, dt, Layout::kTransposed);
        ETensor b2 = Make({3, 33, 5}, dt, Layout::kExpanded);
        ETensor r = ember::baddbmm(in, b1, b2, beta, alpha);
        TTensor want =
            TorchRef([&](const auto& t) { return torch::baddbmm(t[0], t[1], t[2], beta, alpha); },
                     {in, b1, b2}, dt);
        ExpectMatches(r, want, 33,
                      "baddbmm input " + Str(in_shape) + " beta " + std::to_string(beta) + " " +
                          std::string(ember::dtype_name(dt)));
      }
    }
  }
  // beta == 0 ignores NaN in the input (PyTorch's documented rule). The reference is the plain
  // product: libtorch 1.13's own baddbmm lets some NaNs through once its thread pool has been
  // used by earlier tests in the same process, so it cannot be the reference here.
  ETensor nan_in = ember::full({4, 3}, std::nan(""));
  ETensor m1 = ember::randn({4, 6}), m2 = ember::randn({6, 3});
  ExpectMatches(ember::addmm(nan_in, m1, m2, 0, 1), torch::mm(T(m1), T(m2)), 6, "addmm beta 0 with NaN input");
  ETensor nan_b = ember::full({2, 4, 3}, std::nan(""));
  ETensor b1 = ember::randn({2, 4, 6}), b2 = ember::randn({2, 6, 3});
  ExpectMatches(ember::baddbmm(nan_b, b1, b2, 0, 1), torch::bmm(T(b1), T(b2)), 6, "baddbmm beta 0 with NaN input");
  // Large enough to be tiled.
  ETensor big_in = ember::randn({301});
  ETensor big1 = ember::randn({300, 200}), big2 = ember::randn({200, 301});
  ExpectMatches(ember::addmm(big_in, big1, big2, 0.5, 3),
                torch::addmm(T(big_in), T(big1), T(big2), 0.5, 3), 200, "addmm 300x200x301");
}

TEST(LinalgParity, Linear) {
  for (ember::DType dt : kProductDtypes) {
    for (const I64& in_shape : std::vector<I64>{{3}, {5, 3}, {2, 5, 3}, {2, 1, 4, 3}, {0, 3}}) {
      for (bool with_bias : {true, false}) {
        for (Layout lw : {Layout::kContiguous, Layout::kTransposed}) {
          ETensor x =
              Make(in_shape, dt, in_shape.size() >= 2 ? Layout::kTransposed : Layout::kStepped);
          ETensor w = Make({4, 3}, dt, lw);
          ETensor b = with_bias ? Random({4}, dt) : ETensor();
          ETensor r = ember::linear(x, w, b);
          TTensor want = TorchRef(
              [&](const auto& t) {
                return torch::nn::functional::linear(t[0], t[1], with_bias ? t[2] : TTensor());
              },
              with_bias ? std::vector<ETensor>{x, w, b} : std::vector<ETensor>{x, w}, dt);
          ExpectMatches(r, want, 3,
                        "linear " + Str(in_shape) + (with_bias ? " with bias " : " ") + Name(lw) +
                            " " + std::string(ember::dtype_name(dt)));
        }
      }
    }
  }
  // A realistic layer: 64 x 512 -> 256.
  ETensor x = ember::randn({64, 512}), w = ember::randn({256, 512}), b = ember::randn({256});
  ExpectMatches(ember::linear(x, w, b), torch::nn::functional::linear(T(x), T(w), T(b)), 512,
                "linear 64x512 -> 256");
}

TEST(LinalgParity, DotAndOuter) {
  for (ember::DType dt : kProductDtypes) {
    for (int64_t n : {1, 17, 1000, 0}) {
      for (Layout l : {Layout::kContiguous, Layout::kStepped, Layout::kOffset}) {
        if (l == Layout::kOffset && n == 0) continue;
        ETensor a = Make({n}, dt, l), b = Make({n}, dt, Layout::kStepped);
        ExpectMatches(ember::dot(a, b),
                      TorchRef([](const auto& t) { return torch::dot(t[0], t[1]); }, {a, b}, dt), n,
                      "dot " + std::to_string(n) + " " + Name(l));
        ETensor c = Make({n > 1 ? std::min<int64_t>(n / 2, 40) : n + 1}, dt, l);
        ExpectMatches(ember::outer(a, c), torch::outer(T(a), T(c)), 1,
                      "outer " + std::to_string(n) + " " + Name(l));
      }
    }
  }
  // outer promotes like a multiply and accepts bool.
  const std::vector<ember::DType> all = {ember::kBool,     ember::kUInt8,   ember::kInt8,
                                         ember::kInt32,    ember::kInt64,   ember::kFloat16,
                                         ember::kBFloat16, ember::kFloat32, ember::kFloat64};
  for (ember::DType da : all) {
    for (ember::DType db : all) {
      ETensor a = da == ember::kBool ? ember::randint(0, 2, {5}).to(ember::kBool) : Random({5}, da);
      ETensor b = db == ember::kBool ? ember::randint(0, 2, {3}).to(ember::kBool) : Random({3}, db);
      ExpectMatches(ember::outer(a, b), torch::outer(T(a), T(b)), 1,
                    std::string("outer ") + std::string(ember::dtype_name(da)) + " x " +
                        std::string(ember::dtype_name(db)));
    }
  }
}

// Both libraries refuse the same inputs.
TEST(LinalgParity, SameErrors) {
  struct Bad {
    std::string name;
    std::function<void()> e, t;
  };
  auto r = [](I64 s) { return ember::randn(s); };
  auto tr = [](I64 s) { return torch::randn(s); };
  const std::vector<Bad> bad = {
      {"mm shapes",
       [&] {
         (void)ember::mm(r({2, 3}), r({4, 5}));
       },
       [&] {
         (void)torch::mm(tr({2, 3}), tr({4, 5}));
       }},
      {"matmul 0-D", [&] { (void)ember::matmul(r({}), r({3})); },
       [&] { (void)torch::matmul(tr({}), tr({3})); }},
      {"matmul batch",
       [&] {
         (void)ember::matmul(r({2, 2, 3}), r({3, 3, 4}));
       },
       [&] {
         (void)torch::matmul(tr({2, 2, 3}), tr({3, 3, 4}));
       }},
      {"matmul dtypes",
       [&] {
         (void)ember::matmul(r({2, 3}), r({3, 4}).to(ember::kFloat64));
       },
       [&] {
         (void)torch::matmul(tr({2, 3}), tr({3, 4}).to(torch::kFloat64));
       }},
      {"bmm batch",
       [&] {
         (void)ember::bmm(r({2, 2, 3}), r({3, 3, 5}));
       },
       [&] {
         (void)torch::bmm(tr({2, 2, 3}), tr({3, 3, 5}));
       }},
      {"bmm 2-D",
       [&] {
         (void)ember::bmm(r({2, 3}), r({2, 3, 4}));
       },
       [&] {
         (void)torch::bmm(tr({2, 3}), tr({2, 3, 4}));
       }},
      {"addmm input",
       [&] {
         (void)ember::addmm(r({3, 3}), r({2, 3}), r({3, 4}));
       },
       [&] {
         (void)torch::addmm(tr({3, 3}), tr({2, 3}), tr({3, 4}));
       }},
      {"dot lengths", [&] { (void)ember::dot(r({3}), r({4})); },
       [&] { (void)torch::dot(tr({3}), tr({4})); }},
      {"dot 2-D",
       [&] {
         (void)ember::dot(r({3, 1}), r({3}));
       },
       [&] {
         (void)torch::dot(tr({3, 1}), tr({3}));
       }},
      {"outer 0-D", [&] { (void)ember::outer(r({3}), r({})); },
       [&] { (void)torch::outer(tr({3}), tr({})); }},
      {"mm bool",
       [&] {
         (void)ember::mm(r({2, 2}).to(ember::kBool), r({2, 2}).to(ember::kBool));
       },
       [&] {
         (void)torch::mm(tr({2, 2}).to(torch::kBool), tr({2, 2}).to(torch::kBool));
       }},
      {"linear features",
       [&] {
         (void)ember::linear(r({2, 3}), r({4, 2}));
       },
       [&] {
         (void)torch::nn::functional::linear(tr({2, 3}), tr({4, 2}));
       }},
      {"linear bias",
       [&] {
         (void)ember::linear(r({2, 3}), r({4, 3}), r({5}));
       },
       [&] {
         (void)torch::nn::functional::linear(tr({2, 3}), tr({4, 3}), tr({5}));
       }},
  };
  for (const Bad& b : bad) {
    EXPECT_THROW(b.e(), ember::Error) << b.name;
    EXPECT_ANY_THROW(b.t()) << b.name;
  }
}

}  // namespace linalg_parity
