// Reductions, scans and softmax against libtorch 1.13, plus the accuracy and
// determinism guarantees ember adds (long float32 sums, 1 vs 2 threads).

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ember/ember.h>

#include <functional>
#include <string>
#include <vector>

#include "parity/torch_bridge.h"

// Named per file: the parity files are compiled in unity batches (Note [Build time]).
namespace reduce_parity {

using ember::DType;

void expect_close(const ember::Tensor& e, const torch::Tensor& t, const std::string& what, double rtol,
                  double atol) {
  ASSERT_EQ(e.dtype(), parity::to_ember(t.scalar_type())) << what;
  ASSERT_EQ(e.sizes().vec(), t.sizes().vec()) << what;
  torch::Tensor et = parity::to_torch(e);
  if (ember::is_floating_point(e.dtype())) {
    EXPECT_TRUE(torch::allclose(et.to(torch::kFloat64), t.to(torch::kFloat64), rtol, atol, true))
        << what << "\nember:\n" << et << "\ntorch:\n" << t;
  } else {
    EXPECT_TRUE(torch::equal(et, t.contiguous())) << what << "\nember:\n" << et << "\ntorch:\n" << t;
  }
}

double rtol_for(DType dt) {
  switch (dt) {
    case ember::kFloat16: return 1e-2;
    case ember::kBFloat16: return 5e-2;
    case ember::kFloat32: return 1e-5;
    default: return 1e-10;
  }
}

ember::Tensor input(DType dt, bool transposed) {
  ember::Tensor x = ember::is_floating_point(dt) ? ember::randn({4, 6, 5}, ember::kFloat64)
                                                 : ember::randint(-4, 5, {4, 6, 5});
  if (dt == ember::kUInt8) x = x.abs();
  if (dt == ember::kBool) x = x.gt(0);
  x = x.to(dt);
  // Same logical values, laid out with the last two dims swapped in memory.
  return transposed ? x.transpose(1, 2).contiguous().transpose(1, 2) : x;
}

struct Case {
  std::string name;
  std::function<ember::Tensor(const ember::Tensor&)> e;
  std::function<torch::Tensor(const torch::Tensor&)> t;
};

TEST(ReduceParity, ReductionsOverDimsDtypesAndLayouts) {
  ember::manual_seed(11);
  const std::vector<std::vector<int64_t>> dimsets = {{}, {0}, {1}, {-1}, {0, 2}, {1, 2}, {0, 1, 2}};
  int compared = 0;
  for (int d = 0; d < ember::kNumDTypes; ++d) {
    const auto dt = static_cast<DType>(d);
    for (bool transposed : {false, true}) {
      ember::Tensor x = input(dt, transposed);
      torch::Tensor tx = parity::to_torch(x);
      for (const auto& dims : dimsets) {
        for (bool keepdim : {false, true}) {
          ember::IntArrayRef ed(dims);
          c10::IntArrayRef td(dims);
          std::vector<Case> cases = {
              {"sum", [&](const ember::Tensor& a) { return a.sum(ed, keepdim); },
               [&](const torch::Tensor& a) { return dims.empty() && !keepdim ? a.sum() : a.sum(td, keepdim); }},
              {"mean", [&](const ember::Tensor& a) { return a.mean(ed, keepdim); },
               [&](const torch::Tensor& a) { return dims.empty() && !keepdim ? a.mean() : a.mean(td, keepdim); }},
              {"amax", [&](const ember::Tensor& a) { return a.amax(ed, keepdim); },
               [&](const torch::Tensor& a) { return a.amax(td, keepdim); }},
              {"amin", [&](const ember::Tensor& a) { return a.amin(ed, keepdim); },
               [&](const torch::Tensor& a) { return a.amin(td, keepdim); }},
              {"var", [&](const ember::Tensor& a) { return a.var(ed, 1, keepdim); },
               [&](const torch::Tensor& a) { return torch::var(a, dims.empty() ? c10::optional<c10::IntArrayRef>() : td, 1, keepdim); }},
              {"std0", [&](const ember::Tensor& a) { return a.std(ed, 0, keepdim); },
               [&](const torch::Tensor& a) { return torch::std(a, dims.empty() ? c10::optional<c10::IntArrayRef>() : td, 0, keepdim); }},
              {"norm2", [&](const ember::Tensor& a) { return a.norm(2, ed, keepdim); },
               [&](const torch::Tensor& a) { return torch::norm(a, 2, dims.empty() ? std::vector<int64_t>{0, 1, 2} : dims, keepdim); }},
              {"norm1", [&](const ember::Tensor& a) { return a.norm(1, ed, keepdim); },
               [&](const torch::Tensor& a) { return torch::norm(a, 1, dims.empty() ? std::vector<int64_t>{0, 1, 2} : dims, keepdim); }},
              {"norm3", [&](const ember::Tensor& a) { return a.norm(3, ed, keepdim); },
               [&](const torch::Tensor& a) { return torch::norm(a, 3, dims.empty() ? std::vector<int64_t>{0, 1, 2} : dims, keepdim); }},
              {"normInf", [&](const ember::Tensor& a) { return a.norm(INFINITY, ed, keepdim); },
               [&](const torch::Tensor& a) { return torch::norm(a, INFINITY, dims.empty() ? std::vector<int64_t>{0, 1, 2} : dims, keepdim); }},
              {"count_nonzero", [&](const ember::Tensor& a) { return keepdim ? ember::Tensor() : a.count_nonzero(ed); },
               [&](const torch::Tensor& a) { return keepdim ? torch::Tensor() : torch::count_nonzero(a, td); }},
              {"logsumexp", [&](const ember::Tensor& a) { return dims.empty() ? ember::Tensor() : a.logsumexp(ed, keepdim); },
               [&](const torch::Tensor& a) { return dims.empty() ? torch::Tensor() : torch::logsumexp(a, td, keepdim); }},
          };
          if (dims.size() <= 1) {
            const int64_t dim = dims.empty() ? 0 : dims[0];
            cases.push_back({"prod", [&, dim](const ember::Tensor& a) { return a.prod(dim, keepdim); },
                             [&, dim](const torch::Tensor& a) { return a.prod(dim, keepdim); }});
            cases.push_back({"max.values", [&, dim](const ember::Tensor& a) { return std::get<0>(a.max(dim, keepdim)); },
                             [&, dim](const torch::Tensor& a) { return std::get<0>(a.max(dim, keepdim)); }});
            cases.push_back({"argmax", [&, dim](const ember::Tensor& a) { return a.argmax(dim, keepdim); },
                             [&, dim](const torch::Tensor& a) { return a.argmax(dim, keepdim); }});
            cases.push_back({"argmin", [&, dim](const ember::Tensor& a) { return a.argmin(dim, keepdim); },
                             [&, dim](const torch::Tensor& a) { return a.argmin(dim, keepdim); }});
            cases.push_back({"all", [&, dim](const ember::Tensor& a) { return a.all(dim, keepdim); },
                             [&, dim](const torch::Tensor& a) { return a.all(dim, keepdim); }});
            cases.push_back({"any", [&, dim](const ember::Tensor& a) { return a.any(dim, keepdim); },
                             [&, dim](const torch::Tensor& a) { return a.any(dim, keepdim); }});
            cases.push_back({"cumsum", [&, dim](const ember::Tensor& a) { return a.cumsum(dim); },
                             [&, dim](const torch::Tensor& a) { return a.cumsum(dim); }});
            cases.push_back({"cumprod", [&, dim](const ember::Tensor& a) { return a.cumprod(dim); },
                             [&, dim](const torch::Tensor& a) { return a.cumprod(dim); }});
            cases.push_back({"softmax", [&, dim](const ember::Tensor& a) { return a.softmax(dim); },
                             [&, dim](const torch::Tensor& a) { return a.softmax(dim); }});
            cases.push_back({"log_softmax", [&, dim](const ember::Tensor& a) { return a.log_softmax(dim); },
                             [&, dim](const torch::Tensor& a) { return a.log_softmax(dim); }});
          }
          for (const auto& c : cases) {
            const std::string what = c.name + " " + std::string(ember::dtype_name(dt)) +
                                     (transposed ? " transposed" : "") + " dims " +
                                     std::to_string(dims.size()) + (keepdim ? " keepdim" : "");
            torch::Tensor ty;
            try {
              ty = c.t(tx);
            } catch (const c10::Error&) {
              if (dt != ember::kFloat16 && dt != ember::kBFloat16) {
                EXPECT_THROW(c.e(x), ember::Error) << what << ": torch refuses it";
              }
              continue;
            }
            if (!ty.defined()) continue;
            ember::Tensor ey;
            try {
              ey = c.e(x);
            } catch (const ember::Error& err) {
              ADD_FAILURE() << what << ": ember threw but torch did not: " << err.what();
              continue;
            }
            expect_close(ey, ty, what, rtol_for(ey.dtype()), rtol_for(ey.dtype()) * 1e-1);
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 1000);
}

// Values for the row kernels' tests: random rows, with special rows when `special`: row 0
// holds a NaN, row 1 only -inf, row 2 a +inf, row 3 some -inf entries.
ember::Tensor rows_with_specials(int64_t rows, int64_t len, DType dt, bool special) {
  ember::Tensor x = ember::randn({rows, len}, ember::kFloat64) * 3;
  if (special && rows >= 4) {
    x[0][len / 2].fill_(NAN);
    x[1].fill_(-INFINITY);
    x[2][len - 1].fill_(INFINITY);
    x[3][0].fill_(-INFINITY);
    if (len > 2) x[3][len - 2].fill_(-INFINITY);
  }
  return x.to(dt);
}

TEST(ReduceParity, RowAndColumnKernelsOddLengthsSpecialValuesAndLayouts) {
  ember::manual_seed(13);
  int compared = 0;
  for (DType dt : {ember::kFloat32, ember::kFloat64}) {
    for (int64_t len : {1, 7, 8, 9, 31, 33, 4097, 40000}) {
      for (int64_t rows : {2, 5}) {
        if (len == 40000 && rows == 5) continue;  // only the few-long-rows path needs it
        for (bool special : {false, true}) {
          ember::Tensor base = rows_with_specials(rows, len, dt, special);
          // Layouts: contiguous; the same values stored transposed; a broadcast row.
          std::vector<std::pair<std::string, ember::Tensor>> inputs = {
              {"contiguous", base},
              {"transposed", base.t().contiguous().t()},
              {"broadcast", base[rows - 1].unsqueeze(0).expand({3, len})},
          };
          for (const auto& [layout, x] : inputs) {
            torch::Tensor tx = parity::to_torch(x);
            for (int64_t dim : {-1, 0}) {
              std::vector<Case> cases = {
                  {"softmax", [&](const ember::Tensor& a) { return a.softmax(dim); },
                   [&](const torch::Tensor& a) { return a.softmax(dim); }},
                  {"log_softmax", [&](const ember::Tensor& a) { return a.log_softmax(dim); },
                   [&](const torch::Tensor& a) { return a.log_softmax(dim); }},
                  {"amax", [&](const ember::Tensor& a) { return a.amax({dim}); },
                   [&](const torch::Tensor& a) { return a.amax({dim}); }},
                  {"amin", [&](const ember::Tensor& a) { return a.amin({dim}); },
                   [&](const torch::Tensor& a) { return a.amin({dim}); }},
                  {"sum", [&](const ember::Tensor& a) { return a.sum({dim}); },
                   [&](const torch::Tensor& a) { return a.sum({dim}); }},
                  {"mean", [&](const ember::Tensor& a) { return a.mean({dim}); },
                   [&](const torch::Tensor& a) { return a.mean({dim}); }},
                  {"var", [&](const ember::Tensor& a) { return a.var({dim}); },
                   [&](const torch::Tensor& a) { return a.var(std::vector<int64_t>{dim}); }},
                  {"sum_all", [&](const ember::Tensor& a) { return a.sum(); },
                   [&](const torch::Tensor& a) { return a.sum(); }},
                  {"amax_all", [&](const ember::Tensor& a) { return a.amax(); },
                   [&](const torch::Tensor& a) { return a.amax(); }},
              };
              for (const auto& c : cases) {
                const std::string what = c.name + " " + std::string(ember::dtype_name(dt)) + " " + layout + " rows " +
                                         std::to_string(rows) + " len " + std::to_string(len) + " dim " +
                                         std::to_string(dim) + (special ? " with NaN/inf" : "");
                // Sums over 40000 values: float32 rounding differs from torch's order.
                const double rtol = dt == ember::kFloat32 ? (len > 4096 ? 1e-4 : 1e-5) : 1e-10;
                expect_close(c.e(x), c.t(tx), what, rtol, rtol);
                ++compared;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 1000);
}

TEST(ReduceParity, SoftmaxOfSpecialRowsIsTorchs) {
  // NaN anywhere, +inf anywhere or only -inf: the whole row is NaN; -inf entries give 0.
  ember::Tensor x = ember::tensor({1.0f, 2.0f, 3.0f, -INFINITY, -INFINITY, -INFINITY, 1.0f, NAN, 3.0f, INFINITY, 1.0f,
                                   2.0f, -INFINITY, 0.0f, 1.0f})
                        .reshape({5, 3});
  torch::Tensor tx = parity::to_torch(x);
  expect_close(x.softmax(1), tx.softmax(1), "softmax of special rows", 1e-6, 1e-7);
  expect_close(x.log_softmax(1), tx.log_softmax(1), "log_softmax of special rows", 1e-6, 1e-7);
  expect_close(x.amax({1}), tx.amax({1}), "amax of special rows", 0, 0);
  expect_close(x.amin({0}), tx.amin({0}), "amin of special columns", 0, 0);
}

// Note [Online column softmax]: float32 softmax over a long non-last dim keeps a running max
// and sum per column. Columns whose max rises in every block (an increasing ramp), falls
// (a decreasing one), random columns, a width that leaves a partial vector, a length that
// leaves a partial block of rows, a middle dim, and the special columns: a NaN, a +inf, only
// -inf, -inf until a finite last row, a finite first row then -inf.
TEST(ReduceParity, SoftmaxOverALongNonLastDimIsTorchs) {
  const int64_t rows = 2051;
  ember::Tensor ramp = ember::arange(0, rows, ember::kFloat32).reshape({rows, 1}) * 0.01;
  std::vector<std::pair<std::string, std::pair<ember::Tensor, int64_t>>> inputs = {
      {"rising ramp", {ramp + ember::randn({rows, 37}), 0}},
      {"falling ramp", {ramp.neg() + ember::randn({rows, 37}), 0}},
      {"random 2051x333", {ember::randn({rows, 333}) * 5, 0}},
      {"dim 1 of 3x1500x70", {ember::randn({3, 1500, 70}) * 3, 1}},
  };
  ember::Tensor sp = ember::randn({1030, 70});
  sp.index_put_({5, 3}, NAN);
  sp.index_put_({1029, 4}, INFINITY);
  sp.narrow(1, 6, 1).fill_(-INFINITY);
  sp.narrow(1, 7, 1).fill_(-INFINITY);
  sp.index_put_({1029, 7}, 2.0f);
  sp.narrow(1, 8, 1).fill_(-INFINITY);
  sp.index_put_({0, 8}, 1.0f);
  sp.index_put_({17, 9}, -INFINITY);
  inputs.push_back({"special columns", {sp, 0}});
  for (const auto& [name, in] : inputs) {
    const auto& [x, dim] = in;
    torch::Tensor tx = parity::to_torch(x);
    // torch's own float32 error on the random columns, against float64: up to 8.4e-6 of a
    // softmax value and 1e-5 absolute in log_softmax (where a value near 0 has cancelled).
    expect_close(x.softmax(dim), tx.softmax(dim), "softmax, " + name, 2e-5, 1e-8);
    expect_close(x.log_softmax(dim), tx.log_softmax(dim), "log_softmax, " + name, 1e-5, 2e-5);
  }
}

TEST(ReduceParity, NanPropagationAndTies) {
  ember::Tensor x = ember::tensor({1.0, NAN, 3.0, 3.0, -1.0, NAN});
  torch::Tensor tx = parity::to_torch(x);
  EXPECT_TRUE(std::isnan(x.max().item<float>()));
  EXPECT_TRUE(std::isnan(x.amin().item<float>()));
  EXPECT_EQ(x.argmax().item<int64_t>(), tx.argmax().item<int64_t>());
  EXPECT_EQ(x.argmin().item<int64_t>(), tx.argmin().item<int64_t>());
  ember::Tensor ties = ember::tensor({2, 5, 5, 1, 1});
  torch::Tensor tt = parity::to_torch(ties);
  EXPECT_EQ(std::get<1>(ties.max(0)).item<int64_t>(), std::get<1>(tt.max(0)).item<int64_t>());
  EXPECT_EQ(std::get<1>(ties.min(0)).item<int64_t>(), std::get<1>(tt.min(0)).item<int64_t>());
  EXPECT_EQ(ties.argmax().item<int64_t>(), 1);
}

TEST(ReduceParity, EmptyInputs) {
  ember::Tensor e = ember::zeros({0, 3});
  torch::Tensor te = torch::zeros({0, 3});
  expect_close(e.sum(), te.sum(), "sum of empty", 0, 0);
  expect_close(e.sum(0), te.sum(0), "sum over empty dim", 0, 0);
  expect_close(e.prod(0), te.prod(0), "prod over empty dim", 0, 0);
  EXPECT_TRUE(std::isnan(e.mean().item<float>()));
  EXPECT_THROW(e.max(), ember::Error);
  EXPECT_THROW(e.amax(0), ember::Error);
  expect_close(e.amax(1), te.amax(1), "amax over non-empty dim of an empty tensor", 0, 0);
  EXPECT_THROW(e.argmax(), ember::Error);
  EXPECT_THROW(ember::zeros({3}).sum({0, 0}), ember::Error);
  EXPECT_THROW(ember::zeros({3}, ember::kInt64).mean(), ember::Error);
}

TEST(ReduceAccuracy, LongFloat32SumMatchesFloat64) {
  ember::Tensor x = ember::full({10000000}, 0.1f, ember::kFloat32);
  const double exact = x.to(ember::kFloat64).sum().item<double>();
  const double got = x.sum().item<float>();
  EXPECT_NEAR(got / exact, 1.0, 1e-6) << got << " vs " << exact;
  ember::Tensor r = ember::rand({3000000});
  EXPECT_NEAR(r.sum().item<float>() / r.to(ember::kFloat64).sum().item<double>(), 1.0, 1e-6);
  EXPECT_NEAR(r.mean().item<float>(), 0.5, 1e-3);
}

TEST(ReduceDeterminism, BitIdenticalForOneTwoAndThreeThreads) {
  const int saved = ember::get_num_threads();
  ember::manual_seed(12);
  ember::Tensor x = ember::randn({3, 1 << 20});
  ember::Tensor m = ember::randn({4096, 512});
  ember::Tensor md = ember::randn({1000, 777}, ember::kFloat64);
  ember::Tensor wide = ember::randn({300, 5000});
  ember::Tensor tiles = ember::randn({2, 2500, 2100});  // 3 row tiles by 2 column tiles, twice
  ember::Tensor mid = ember::randn({1000, 1000});  // variance tiles shortened to 256 rows
  std::vector<std::function<ember::Tensor()>> ops = {
      [&] { return x.sum(); },
      [&] { return x.sum(1); },
      [&] { return m.sum(0); },
      [&] { return m.var(1); },
      [&] { return m.softmax(1); },
      [&] { return m.logsumexp(0); },
      [&] { return x.cumsum(1); },
      [&] { return x.norm(); },
      [&] { return m.log_softmax(1); },
      [&] { return m.softmax(0); },
      [&] { return md.softmax(1); },
      [&] { return x.softmax(1); },
      [&] { return x.amax({1}); },
      [&] { return m.amax({1}); },
      [&] { return m.amin({0}); },
      [&] { return x.var(1); },
      [&] { return m.var(0); },
      [&] { return md.var(0); },
      [&] { return wide.sum(0); },
      [&] { return wide.var(0); },
      [&] { return tiles.var(1); },
      [&] { return mid.var(0); },
      [&] { return tiles.sum(1); },
      [&] { return tiles.amax({1}); },
      [&] { return wide.amax({0}); },
      [&] { return md.sum(0); },
      [&] { return m.mean({0}); },
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    ember::set_num_threads(1);
    ember::Tensor a = ops[i]();
    for (int threads : {2, 3}) {
      ember::set_num_threads(threads);
      ember::Tensor b = ops[i]();
      ASSERT_EQ(a.nbytes(), b.nbytes());
      EXPECT_EQ(std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(), a.nbytes()), 0)
          << "op " << i << " with " << threads << " threads";
    }
  }
  ember::set_num_threads(saved);
}

}  // namespace reduce_parity
