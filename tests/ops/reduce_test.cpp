#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <string>
#include <vector>

// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace ops_reduce_test {

using namespace ember;

TEST(Reduce, DtypesOfResults) {
  EXPECT_EQ(ones({3}, kInt32).sum().dtype(), kInt64);
  EXPECT_EQ(ones({3}, kBool).sum().dtype(), kInt64);
  EXPECT_EQ(ones({3}, kFloat16).sum().dtype(), kFloat16);
  EXPECT_EQ(ones({3}, kInt32).sum({}, false, kFloat64).dtype(), kFloat64);
  EXPECT_EQ(ones({3}, kInt32).cumsum(0).dtype(), kInt64);
  EXPECT_EQ(ones({3}, kUInt8).all().dtype(), kUInt8);
  EXPECT_EQ(ones({3}, kFloat32).any().dtype(), kBool);
  EXPECT_EQ(ones({3}, kInt32).count_nonzero().dtype(), kInt64);
  EXPECT_THROW(ones({3}, kInt32).mean(), Error);
  EXPECT_EQ(ones({3}, kInt32).mean({}, false, kFloat32).item<float>(), 1.0f);
}

TEST(Reduce, KeepdimAndNegativeDims) {
  Tensor x = arange(24, kFloat32).reshape({2, 3, 4});
  EXPECT_EQ(x.sum({-1}).sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(x.sum({0, 2}, true).sizes().vec(), (std::vector<int64_t>{1, 3, 1}));
  EXPECT_EQ(x.sum({0, 2}).to_vector<float>(), (std::vector<float>{60, 92, 124}));
  EXPECT_EQ(x.amax({1}).to_vector<float>()[0], 8.0f);
  EXPECT_THROW(x.sum({3}), Error);
  auto [v, i] = x.max(1, true);
  EXPECT_EQ(v.sizes().vec(), (std::vector<int64_t>{2, 1, 4}));
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{2, 2, 2, 2, 2, 2, 2, 2}));
}

TEST(Reduce, ZeroDimTensors) {
  Tensor s = tensor(3.0);
  EXPECT_FLOAT_EQ(s.sum().item<float>(), 3.0f);
  EXPECT_FLOAT_EQ(s.sum({0}).item<float>(), 3.0f);
  EXPECT_FLOAT_EQ(s.softmax(0).item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(s.cumsum(0).item<float>(), 3.0f);
}

TEST(Reduce, VarianceCorrectionAndStd) {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, kFloat64);
  EXPECT_DOUBLE_EQ(x.var().item<double>(), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(x.var({}, 0).item<double>(), 1.25);
  EXPECT_DOUBLE_EQ(x.std({}, 0).item<double>(), std::sqrt(1.25));
  auto [v, m] = x.var_mean();
  EXPECT_DOUBLE_EQ(m.item<double>(), 2.5);
  EXPECT_DOUBLE_EQ(v.item<double>(), 5.0 / 3.0);
  EXPECT_TRUE(std::isinf(tensor({1.0}).var().item<float>()) || std::isnan(tensor({1.0}).var().item<float>()));
}

// Note [Column variance about a shift]: float32 variance over a non-last dim, on data
// whose mean is 10^4 times its spread (where a one-pass sum of squares loses every digit),
// with row counts that leave short blocks and several row tiles, equals the float64
// two-pass variance of the same values to float32 rounding; var_mean's mean too. 2500x2100
// has two column tiles (2048 and 52 columns) by three row tiles (1024, 1024 and 452 rows).
TEST(Reduce, ColumnVarianceOfFloat32AgainstFloat64) {
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{3001, 300}, {13, 5000}, {7, 3}, {2000, 2, 65}, {2500, 2100}}) {
    Tensor x = randn(shape) + 1e4;
    Tensor ref = x.to(kFloat64).var({0}), ref_mean = x.to(kFloat64).mean({0});
    auto [v, m] = x.var_mean({0});
    const double err = ((v.to(kFloat64) - ref) / ref).abs().max().item<double>();
    EXPECT_LT(err, 1e-5) << shape[0] << " rows";
    EXPECT_LT(((m.to(kFloat64) - ref_mean) / ref_mean).abs().max().item<double>(), 1.5e-7) << shape[0] << " rows";
    // The same with correction 0 and a constant column (variance exactly zero).
    Tensor c = full({shape[0], 4}, 1234.5f);
    EXPECT_EQ(c.var({0}, 0).abs().max().item<double>(), 0.0);
    // A constant whose float mean is inexact: non-negative and at the mean's rounding.
    for (float value : {0.1f, 0.3f, 1.1f, 12345.6f, -2.9f}) {
      Tensor cv = full({shape[0], 37}, value).var({0});
      EXPECT_GE(cv.min().item<double>(), 0.0) << value;
      EXPECT_LT(cv.max().item<double>(), 1e-12 * value * value) << value;
    }
  }
}

// Note [Column variance about a shift]: the deviations are taken about the mean of each
// tile's first eight rows; where that shift lies far from a column's mean (a step at the
// start of every row tile, a ramp, a first row of outliers), the column is read again about
// its mean, so the variance stays at float32 rounding of the float64 two-pass value. The
// row tiles hold 1024 rows at 1500 columns; steps every 256, 512 and 1024 rows land on their
// starts.
TEST(Reduce, ColumnVarianceWithAFarShift) {
  const int64_t rows = 4096, cols = 1500;
  std::vector<Tensor> inputs;
  for (int64_t period : {256, 512, 1024}) {
    Tensor x = randn({rows, cols});
    for (int64_t r = 0; r < rows; r += period) x.narrow(0, r, 8).add_(1e4);
    inputs.push_back(x);
  }
  inputs.push_back(arange(0, rows, kFloat32).reshape({rows, 1}) * 0.01 + randn({rows, cols}) + 1e3);
  inputs.push_back(arange(0, rows, kFloat32).reshape({rows, 1}).expand({rows, 64}).contiguous());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    Tensor ref = x.to(kFloat64).var({0}), ref_mean = x.to(kFloat64).mean({0});
    auto [v, m] = x.var_mean({0});
    EXPECT_LT(((v.to(kFloat64) - ref) / ref).abs().max().item<double>(), 2e-7) << "input " << i;
    EXPECT_LT(((m.to(kFloat64) - ref_mean).abs() / (ref_mean.abs() + ref.sqrt())).max().item<double>(), 1e-7)
        << "input " << i;
  }
}

// Note [Online column softmax]: float32 softmax over a long dim 0 (2051 rows: a partial block
// of rows; 70 columns: a partial vector) equals the float64 softmax to float32 rounding on
// rising and falling ramps (the max moves in every block) and random columns, and the special
// columns come out as in softmax_rows: all NaN with a NaN, a +inf or only -inf, and -inf
// entries 0 beside finite ones.
TEST(Reduce, OnlineColumnSoftmaxAgainstFloat64) {
  const int64_t rows = 2051, cols = 70;
  Tensor ramp = arange(0, rows, kFloat32).reshape({rows, 1}) * 0.01;
  for (const Tensor& x : {ramp + randn({rows, cols}), ramp.neg() + randn({rows, cols}), randn({rows, cols}) * 5}) {
    Tensor ref = x.to(kFloat64).softmax(0), ref_log = x.to(kFloat64).log_softmax(0);
    EXPECT_LT(((x.softmax(0).to(kFloat64) - ref).abs() / ref).max().item<double>(), 5e-6);
    EXPECT_LT((x.log_softmax(0).to(kFloat64) - ref_log).abs().max().item<double>(), 5e-6);
  }
  Tensor sp = randn({rows, cols});
  sp.index_put_({5, 3}, NAN);
  sp.index_put_({rows - 1, 4}, INFINITY);
  sp.narrow(1, 6, 1).fill_(-INFINITY);
  sp.narrow(1, 7, 1).fill_(-INFINITY);
  sp.index_put_({rows - 1, 7}, 2.0f);
  sp.index_put_({17, 69}, -INFINITY);
  for (bool log : {false, true}) {
    Tensor y = log ? sp.log_softmax(0) : sp.softmax(0);
    for (int64_t c : {3, 4, 6}) EXPECT_TRUE(y.select(1, c).isnan().all().item<bool>()) << c;
    EXPECT_FALSE(y.select(1, 7).isnan().any().item<bool>());
    EXPECT_EQ(y.index({rows - 1, 7}).item<float>(), log ? 0.0f : 1.0f);
    EXPECT_EQ(y.index({0, 7}).item<float>(), log ? -INFINITY : 0.0f);
    EXPECT_EQ(y.index({17, 69}).item<float>(), log ? -INFINITY : 0.0f);
    EXPECT_FALSE(y.select(1, 69).isnan().any().item<bool>());
  }
  // The tiles' widths follow the thread count (one tile of 80 columns on one thread, 64 + 6 on
  // two or three, the 6 through the padded block); the bits do not.
  Tensor r = randn({rows, cols}) * 5;
  const int saved = get_num_threads();
  set_num_threads(1);
  const Tensor one = r.softmax(0), one_log = r.log_softmax(0);
  for (int threads : {2, 3}) {
    set_num_threads(threads);
    EXPECT_TRUE(r.softmax(0).equal(one)) << threads << " threads";
    EXPECT_TRUE(r.log_softmax(0).equal(one_log)) << threads << " threads";
  }
  set_num_threads(saved);
}

// Note [Float deviations]: float32 variance over the last dim, on rows whose mean is 10^4
// times their spread, with lengths that leave partial blocks and short tails and enough rows
// that each thread's rows prefetch their successors, equals the float64 variance to float32
// rounding, and var_mean's mean the float64 mean.
TEST(Reduce, RowVarianceOfFloat32AgainstFloat64) {
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{64, 4096}, {37, 1003}, {300, 33}, {9, 31}, {5, 4099}}) {
    Tensor x = randn(shape) * 3 + 1e4;
    Tensor ref = x.to(kFloat64).var({1});
    auto [v, m] = x.var_mean({1});
    EXPECT_LT(((v.to(kFloat64) - ref) / ref).abs().max().item<double>(), 1e-5) << shape[1] << " columns";
    Tensor ref_mean = x.to(kFloat64).mean({1});
    EXPECT_LT(((m.to(kFloat64) - ref_mean) / ref_mean).abs().max().item<double>(), 1.5e-7) << shape[1] << " columns";
    // A constant row has variance exactly zero where its sum is exact (1234.5f), and a
    // non-negative one at the mean's rounding where it is not (0.3f); a NaN reaches its row's
    // variance.
    EXPECT_EQ(full(shape, 1234.5f).var({1}, 0).abs().max().item<double>(), 0.0);
    for (float value : {0.1f, 0.3f, 0.7f, 1.1f, 3.3f, 1e-3f, 12345.6f, -2.9f}) {
      Tensor c = full(shape, value).var({1});
      EXPECT_GE(c.min().item<double>(), 0.0) << value;
      EXPECT_LT(c.max().item<double>(), 1e-12 * value * value) << value;
    }
    Tensor with_nan = x.clone();
    with_nan.index_put_({1, shape[1] - 1}, NAN);
    const std::vector<float> vn = with_nan.var({1}).to_vector<float>();
    EXPECT_TRUE(std::isnan(vn[1]) && !std::isnan(vn[0])) << shape[1] << " columns";
  }
}

// Note [Row variance about a shift]: a float32 row's deviations are taken from the float mean
// of its first 256 values; where that lies far from the row's mean (a step after the first
// block, an offset on the rest of the row) the row is read again about its mean, so the
// variance stays at float32 rounding. Infinities in the first block or later give torch's
// mean (inf, or NaN for both signs) and a NaN variance.
TEST(Reduce, RowVarianceWithAFarShift) {
  for (int64_t len : {4096, 1003, 300, 257}) {
    Tensor x = randn({6, len});
    Tensor head = x.narrow(1, 0, std::min<int64_t>(len, 256));
    x[0].add_(1e4);  // far from zero, near its own mean: no second read needed
    head[1].add_(1e4);  // a step after the first block
    x[2].narrow(0, 256, len - 256).add_(50);  // an offset on the rest of the row
    x[3].narrow(0, 256, len - 256).add_(3);  // within a few deviations of the head's mean
    head[4].mul_(1e-3);  // a quiet head
    x[5].copy_(arange(len, TensorOptions(kFloat32)) * 0.5 + 1000);  // a ramp
    auto [v, m] = x.var_mean({1});
    const Tensor ref = x.to(kFloat64).var({1}), ref_mean = x.to(kFloat64).mean({1});
    const std::vector<double> rv = ref.to_vector<double>(), vv = v.to(kFloat64).to_vector<double>();
    const std::vector<double> rm = ref_mean.to_vector<double>(), mm = m.to(kFloat64).to_vector<double>();
    const std::vector<double> sd = x.to(kFloat64).std({1}).to_vector<double>();
    for (size_t r = 0; r < rv.size(); ++r) {
      EXPECT_LT(std::abs(vv[r] - rv[r]) / rv[r], 2e-7) << "row " << r << ", " << len << " values";
      EXPECT_LT(std::abs(mm[r] - rm[r]), 1e-7 * (std::abs(rm[r]) + sd[r])) << "row " << r << ", " << len << " values";
    }
  }
  // Quiet rows (std 0.01) whose first block, or the rest, sits 1, 10 or 100 higher: the shift
  // is 100-10000 deviations of the noise away; without the second read their variances miss
  // float64's by up to 5e-7.
  for (int64_t len : {16384, 32768}) {
    for (double offset : {1.0, 10.0, 100.0}) {
      Tensor a = randn({8, len}) * 0.01, b = randn({8, len}) * 0.01;
      a.narrow(1, 0, 256).add_(offset);
      b.narrow(1, 256, len - 256).add_(offset);
      for (const Tensor& t : {a, b}) {
        const Tensor ref = t.to(kFloat64).var({1});
        EXPECT_LT(((t.var({1}).to(kFloat64) - ref) / ref).abs().max().item<double>(), 2e-7)
            << len << " values, offset " << offset;
      }
    }
  }
  Tensor y = randn({5, 600});
  y.index_put_({0, 3}, INFINITY);      // +inf in the first block
  y.index_put_({1, 500}, INFINITY);    // +inf after it
  y.index_put_({2, 7}, -INFINITY);     // both signs
  y.index_put_({2, 400}, INFINITY);
  y.index_put_({3, 100}, NAN);         // NaN in the first block
  auto [v, m] = y.var_mean({1});
  const std::vector<float> vv = v.to_vector<float>(), mm = m.to_vector<float>();
  EXPECT_EQ(mm[0], INFINITY);
  EXPECT_EQ(mm[1], INFINITY);
  EXPECT_TRUE(std::isnan(mm[2]) && std::isnan(mm[3]));
  for (int r = 0; r < 4; ++r) EXPECT_TRUE(std::isnan(vv[r])) << "row " << r;
  EXPECT_TRUE(std::isfinite(vv[4]) && std::isfinite(mm[4]));
}

// Note [Eight rows per pass]: float32 sums and extremes over dim 0 read eight rows at a time;
// with more than one column block (4100 columns), row counts that leave a short last block
// and several row chunks, they agree with float64 sums (to float32 rounding) and with exact
// float64 extremes, and a NaN, +inf or -inf in any of the eight rows reaches its column. A NaN
// in the first row stays its column's extreme through an infinity in the last row.
TEST(Reduce, ColumnSumsAndExtremesInBlocksOfEightRows) {
  for (int64_t rows : {8, 13, 1003}) {
    Tensor x = randn({rows, 4100});
    x.index_put_({rows - 1, 4099}, NAN);
    x.index_put_({0, 4097}, NAN);
    x.index_put_({rows - 1, 4097}, INFINITY);
    x.index_put_({rows - 2, 4096}, NAN);
    x.index_put_({rows - 1, 4096}, -INFINITY);
    x.index_put_({rows / 2, 7}, INFINITY);
    x.index_put_({rows / 3, 4098}, -INFINITY);
    Tensor s = x.sum({0}).to(kFloat64), ref = x.to(kFloat64).sum({0});
    const std::vector<double> sv = s.to_vector<double>(), rv = ref.to_vector<double>();
    const std::vector<double> mx = x.amax({0}).to(kFloat64).to_vector<double>();
    const std::vector<double> mn = x.amin({0}).to(kFloat64).to_vector<double>();
    const std::vector<double> rmx = x.to(kFloat64).amax({0}).to_vector<double>();
    const std::vector<double> rmn = x.to(kFloat64).amin({0}).to_vector<double>();
    for (size_t j = 0; j < sv.size(); ++j) {
      if (j == 7 || j >= 4096) continue;
      ASSERT_NEAR(sv[j], rv[j], 1e-5 * std::sqrt(static_cast<double>(rows))) << rows << " rows, column " << j;
      ASSERT_EQ(mx[j], rmx[j]) << rows << " rows, column " << j;
      ASSERT_EQ(mn[j], rmn[j]) << rows << " rows, column " << j;
    }
    for (size_t j : {4096, 4097, 4099}) {
      EXPECT_TRUE(std::isnan(sv[j]) && std::isnan(mx[j]) && std::isnan(mn[j])) << rows << " rows, column " << j;
    }
    EXPECT_EQ(sv[7], INFINITY);
    EXPECT_EQ(mx[7], INFINITY);
    EXPECT_EQ(sv[4098], -INFINITY);
    EXPECT_EQ(mn[4098], -INFINITY);
  }
}

// Note [Integer sums in one accumulator] (kernels/cpu/reduce.cpp): GCC 12 miscompiled the
// 8-accumulator sum of integers narrower than int64, counting only some lanes, from runs of
// a few thousand values on. Sums of whole tensors, of rows (a long row split in chunks, and
// several rows), of columns and of products, at lengths with and without tails, against
// int64 arithmetic here; the CPU-level runs (isa.<level>.ops) check every level.
TEST(Reduce, IntegerSumsOfLongRuns) {
  for (DType dt : {kUInt8, kInt8, kInt16, kInt32, kInt64, kBool}) {
    for (int64_t n : {7, 1000, 4099, 30000, 40001, 100003}) {
      std::vector<int64_t> v(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        const int64_t r = (i * 7919 + 13) % 251;  // 0..250, in every type's range once shifted
        v[static_cast<size_t>(i)] = dt == kBool ? r % 3 != 0 : dt == kUInt8 ? r : r - 125;
      }
      std::vector<int64_t> sq(v.size());
      for (size_t i = 0; i < v.size(); ++i) sq[i] = dt == kBool ? v[i] : dt == kUInt8 ? (v[i] * v[i]) % 256 : (v[i] * v[i]) % 128;
      const Tensor x = from_blob(v.data(), {n}, TensorOptions(kInt64)).to(dt);
      int64_t want = 0;
      for (int64_t e : v) want += e;
      const std::string what = "dtype " + std::string(dtype_name(dt)) + ", " + std::to_string(n) + " values";
      ASSERT_EQ(x.sum().item<int64_t>(), want) << what;
      const Tensor rows = stack({x, x.flip({0}), x}).contiguous();
      const std::vector<int64_t> rs = rows.sum({1}).to_vector<int64_t>();
      ASSERT_EQ(rs, (std::vector<int64_t>{want, want, want})) << what << ", rows";
      const Tensor cols = x.view({n, 1}).expand({n, 5}).contiguous();
      ASSERT_EQ(cols.sum({0}).to_vector<int64_t>(), std::vector<int64_t>(5, want)) << what << ", columns";
      int64_t want_sq = 0;
      for (int64_t e : sq) want_sq += e;
      const Tensor xs = from_blob(sq.data(), {n}, TensorOptions(kInt64)).to(dt);
      ASSERT_EQ(xs.sum().item<int64_t>(), want_sq) << what << ", squares";
    }
  }
}

TEST(Reduce, NormsAndLogsumexpStability) {
  Tensor x = tensor({3.0, -4.0});
  EXPECT_FLOAT_EQ(x.norm().item<float>(), 5.0f);
  EXPECT_FLOAT_EQ(x.norm(1).item<float>(), 7.0f);
  EXPECT_FLOAT_EQ(x.norm(INFINITY).item<float>(), 4.0f);
  Tensor big = tensor({1000.0, 1000.0});
  EXPECT_NEAR(big.logsumexp({0}).item<float>(), 1000.0f + std::log(2.0f), 1e-3);
  Tensor sm = tensor({1000.0, 0.0}).softmax(0);
  EXPECT_FLOAT_EQ(sm.to_vector<float>()[0], 1.0f);
  // A row of -inf has no defined softmax: NaN, as in PyTorch.
  EXPECT_TRUE(std::isnan(tensor({-INFINITY, -INFINITY}).softmax(0).to_vector<float>()[0]));
}

TEST(Reduce, ScansAlongEachDim) {
  Tensor x = arange(1, 7, kFloat32).reshape({2, 3});
  EXPECT_EQ(x.cumsum(1).to_vector<float>(), (std::vector<float>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(x.cumsum(0).to_vector<float>(), (std::vector<float>{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(x.cumprod(1).to_vector<float>(), (std::vector<float>{1, 2, 6, 4, 20, 120}));
  EXPECT_EQ(x.t().cumsum(0).t().contiguous().to_vector<float>(), (std::vector<float>{1, 3, 6, 4, 9, 15}));
}

}  // namespace
