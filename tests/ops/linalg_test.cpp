// Matrix products: matmul's dimension rules, mm/bmm/addmm/baddbmm/linear/dot/outer values
// for every dtype family, strided and expanded operands, empty dims, error messages, and
// results that do not depend on the thread count. Expected values and error cases were
// checked against PyTorch 1.13.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include "test_util.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace ops_linalg_test {

using namespace testing;  // I64, F32, Sizes, Longs, Floats, Doubles, ExpectError (test_util.h)

// a (m x k) @ b (k x n) in double, row-major, from any layout.
std::vector<double> NaiveMM(const Tensor& a, const Tensor& b) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  const std::vector<double> av = Doubles(a), bv = Doubles(b);
  std::vector<double> out(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t p = 0; p < k; ++p) {
      for (int64_t j = 0; j < n; ++j) out[i * n + j] += av[i * k + p] * bv[p * n + j];
    }
  }
  return out;
}

// |got - want| <= atol + rtol * |want| element-wise.
void ExpectClose(const std::vector<double>& got, const std::vector<double>& want, double rtol,
                 double atol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_LE(std::fabs(got[i] - want[i]), atol + rtol * std::fabs(want[i]))
        << "element " << i << ": got " << got[i] << ", want " << want[i];
  }
}

bool BitEqual(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && a.dtype() == b.dtype() && a.is_contiguous() &&
         b.is_contiguous() && std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

// 0..n-1 as dtype, shaped.
Tensor Seq(IntArrayRef shape, DType dtype = kFloat32) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return arange(n, TensorOptions(dtype)).reshape(shape);
}

// Restores the thread count when a test ends, even on failure.
struct ThreadCountGuard {
  int saved = get_num_threads();
  ~ThreadCountGuard() { set_num_threads(saved); }
};

// ---------------------------------------------------------------------------------------
// mm and matmul's dimension rules

TEST(Linalg, MmValuesFloat32AndFloat64) {
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor a = Seq({2, 3}, dt), b = Seq({3, 4}, dt);
    Tensor c = mm(a, b);
    EXPECT_EQ(c.dtype(), dt);
    EXPECT_EQ(Sizes(c), (I64{2, 4}));
    EXPECT_TRUE(c.is_contiguous());
    EXPECT_EQ(Doubles(c), (std::vector<double>{20, 23, 26, 29, 56, 68, 80, 92}));
    EXPECT_TRUE(BitEqual(a.mm(b), c));
    EXPECT_TRUE(BitEqual(a.matmul(b), c));
    EXPECT_FALSE(c.is_alias_of(a));
  }
}

TEST(Linalg, MatmulOneByOneIsZeroDimDot) {
  Tensor r = matmul(Seq({3}), Seq({3}));
  EXPECT_EQ(r.dim(), 0);
  EXPECT_EQ(r.dtype(), kFloat32);
  EXPECT_EQ(r.item<double>(), 5.0);
  EXPECT_EQ(matmul(Seq({3}, kInt64), Seq({3}, kInt64)).item<int64_t>(), 5);
}

TEST(Linalg, MatmulVectorMatrixCases) {
  Tensor m = Seq({2, 3}), v = Seq({3});
  Tensor mv = matmul(m, v);  // [0*0+1*1+2*2, 3*0+4*1+5*2]
  EXPECT_EQ(Sizes(mv), (I64{2}));
  EXPECT_EQ(Doubles(mv), (std::vector<double>{5, 14}));
  Tensor vm = matmul(Seq({2}), m);  // [3, 4, 5]
  EXPECT_EQ(Sizes(vm), (I64{3}));
  EXPECT_EQ(Doubles(vm), (std::vector<double>{3, 4, 5}));
  EXPECT_TRUE(vm.is_contiguous());
}

TEST(Linalg, MatmulBatchedWithBroadcasting) {
  // (j, 1, n, m) @ (k, m, p) -> (j, k, n, p)
  Tensor a = randn({2, 1, 3, 4}), b = randn({5, 4, 6});
  Tensor c = matmul(a, b);
  EXPECT_EQ(Sizes(c), (I64{2, 5, 3, 6}));
  EXPECT_TRUE(c.is_contiguous());
  for (int64_t j = 0; j < 2; ++j) {
    for (int64_t k = 0; k < 5; ++k) {
      ExpectClose(Doubles(c[j][k]), NaiveMM(a[j][0], b[k]), 1e-5, 1e-5);
    }
  }
}

TEST(Linalg, MatmulFoldsAndBroadcastsVectors) {
  Tensor a = randn({2, 3, 4});
  // 3-D @ 2-D folds into one mm; same values as per-batch products.
  Tensor w = randn({4, 5});
  Tensor c = matmul(a, w);
  EXPECT_EQ(Sizes(c), (I64{2, 3, 5}));
  for (int64_t i = 0; i < 2; ++i) ExpectClose(Doubles(c[i]), NaiveMM(a[i], w), 1e-5, 1e-5);
  // 3-D @ 1-D and 1-D @ 3-D drop the added dim.
  Tensor v = randn({4});
  Tensor cv = matmul(a, v);
  EXPECT_EQ(Sizes(cv), (I64{2, 3}));
  for (int64_t i = 0; i < 2; ++i) {
    ExpectClose(Doubles(cv[i]), NaiveMM(a[i], v.unsqueeze(1)), 1e-5, 1e-5);
  }
  Tensor u = randn({3});
  Tensor cu = matmul(u, a);
  EXPECT_EQ(Sizes(cu), (I64{2, 4}));
  for (int64_t i = 0; i < 2; ++i) {
    ExpectClose(Doubles(cu[i]), NaiveMM(u.unsqueeze(0), a[i]), 1e-5, 1e-5);
  }
  // 2-D @ 3-D broadcasts the matrix over the batch.
  Tensor m = randn({5, 3});
  Tensor cm = matmul(m, a);
  EXPECT_EQ(Sizes(cm), (I64{2, 5, 4}));
  for (int64_t i = 0; i < 2; ++i) ExpectClose(Doubles(cm[i]), NaiveMM(m, a[i]), 1e-5, 1e-5);
}

TEST(Linalg, MatmulExpandedBatchIsNotFoldedButStillCorrect) {
  Tensor base = randn({1, 3, 4});
  Tensor a = base.expand({6, 3, 4});  // stride 0 over the batch
  Tensor w = randn({4, 2});
  Tensor c = matmul(a, w);
  EXPECT_EQ(Sizes(c), (I64{6, 3, 2}));
  const std::vector<double> want = NaiveMM(base[0], w);
  for (int64_t i = 0; i < 6; ++i) ExpectClose(Doubles(c[i]), want, 1e-5, 1e-5);
}

TEST(Linalg, StridedOperandsMatchContiguousCopies) {
  Tensor a = randn({7, 5}), b = randn({5, 9});
  const Tensor want = mm(a, b);
  // Transposed storage (column-major) goes to BLAS with the transpose flag.
  Tensor at = a.t().contiguous().t(), bt = b.t().contiguous().t();
  EXPECT_FALSE(at.is_contiguous());
  ExpectClose(Doubles(mm(at, b)), Doubles(want), 1e-6, 1e-6);
  ExpectClose(Doubles(mm(a, bt)), Doubles(want), 1e-6, 1e-6);
  ExpectClose(Doubles(mm(at, bt)), Doubles(want), 1e-6, 1e-6);
  // Stepped slices (neither layout) are copied; storage offsets are honoured.
  Tensor big = randn({14, 11});
  Tensor as = big.slice(0, 0, 14, 2).slice(1, 1, 6);  // 7x5, row stride 22
  Tensor bs = randn({5, 18}).slice(1, 0, 18, 2);      // 5x9, column stride 2
  ExpectClose(Doubles(mm(as, bs)), NaiveMM(as, bs), 1e-5, 1e-5);
  // Expanded rows/columns (stride 0 inside the matrix).
  Tensor ae = randn({1, 5}).expand({7, 5});
  Tensor be = randn({5, 1}).expand({5, 9});
  ExpectClose(Doubles(mm(ae, be)), NaiveMM(ae, be), 1e-5, 1e-5);
  // Size-1 dims with odd strides.
  Tensor row = randn({5, 3}).slice(1, 1, 2).t();  // 1x5, strides (1, 3)
  ExpectClose(Doubles(mm(row, b)), NaiveMM(row, b), 1e-5, 1e-5);
  Tensor col = randn({3, 5}).slice(0, 1, 2).t();  // 5x1, strides (1, 5)
  ExpectClose(Doubles(mm(a, col)), NaiveMM(a, col), 1e-5, 1e-5);
}

TEST(Linalg, LargeTiledProductsWithEveryLayout) {
  // Big enough to be cut into several tiles; every combination of row- and column-major.
  Tensor a = randn({300, 200}, kFloat64), b = randn({200, 500}, kFloat64);
  const std::vector<double> want = NaiveMM(a, b);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Tensor x = ta ? a.t().contiguous().t() : a;
      Tensor y = tb ? b.t().contiguous().t() : b;
      ExpectClose(Doubles(mm(x, y)), want, 1e-12, 1e-12);
    }
  }
  Tensor af = a.to(kFloat32), bf = b.to(kFloat32);
  ExpectClose(Doubles(mm(af.t().contiguous().t(), bf)), want, 1e-4, 1e-5 * std::sqrt(200.0));
  // Batched and tiled: a batch of 3 large products, b broadcast over the batch.
  Tensor ab = randn({3, 300, 200}, kFloat64);
  Tensor cb = matmul(ab.transpose(1, 2).contiguous().transpose(1, 2), b);
  for (int64_t i = 0; i < 3; ++i) ExpectClose(Doubles(cb[i]), NaiveMM(ab[i], b), 1e-12, 1e-12);
}

TEST(Linalg, IntegerProductsAreExactAndWrap) {
  for (DType dt : {kInt64, kInt32, kInt16, kUInt8, kInt8}) {
    Tensor c = mm(Seq({2, 3}, dt), Seq({3, 4}, dt));
    EXPECT_EQ(c.dtype(), dt);
    EXPECT_EQ(Longs(c), (I64{20, 23, 26, 29, 56, 68, 80, 92})) << dt;
  }
  // int8 wraps modulo 256 as in PyTorch: 100*2 + 100*2 = 400 -> -112.
  Tensor a = full({1, 2}, 100, kInt8), b = full({2, 1}, 2, kInt8);
  EXPECT_EQ(mm(a, b).item<int64_t>(), -112);
  // int64 products and strided operands.
  Tensor x = randint(-1000, 1000, {6, 8}), y = randint(-1000, 1000, {8, 5});
  Tensor want = mm(x, y);
  EXPECT_EQ(Longs(mm(x.t().contiguous().t(), y.t().contiguous().t())), Longs(want));
  const std::vector<double> ref = NaiveMM(x, y);
  EXPECT_EQ(Longs(want), I64(ref.begin(), ref.end()));
  EXPECT_EQ(Longs(bmm(x.unsqueeze(0).expand({3, 6, 8}), y.unsqueeze(0).expand({3, 8, 5}))[2]),
            Longs(want));
}

TEST(Linalg, ReducedPrecisionComputesInFloat) {
  for (DType dt : {kFloat16, kBFloat16}) {
    Tensor c = matmul(Seq({2, 3}, dt), Seq({3, 4}, dt));
    EXPECT_EQ(c.dtype(), dt);
    EXPECT_EQ(Doubles(c), (std::vector<double>{20, 23, 26, 29, 56, 68, 80, 92}));
    Tensor x = randn({9, 33}), y = randn({33, 5});
    ExpectClose(Doubles(mm(x.to(dt), y.to(dt))), NaiveMM(x.to(dt), y.to(dt)), 1e-2, 1e-2);
    EXPECT_EQ(dot(Seq({3}, dt), Seq({3}, dt)).item<double>(), 5.0);
    EXPECT_EQ(dot(Seq({3}, dt), Seq({3}, dt)).dtype(), dt);
  }
}

TEST(Linalg, EmptyDims) {
  // k == 0: zeros.
  Tensor z = mm(empty({2, 0}), empty({0, 3}));
  EXPECT_EQ(Sizes(z), (I64{2, 3}));
  EXPECT_EQ(Doubles(z), std::vector<double>(6, 0.0));
  EXPECT_EQ(matmul(empty({0}), empty({0})).item<double>(), 0.0);
  EXPECT_EQ(Longs(mm(empty({2, 0}, kInt64), empty({0, 2}, kInt64))), (I64{0, 0, 0, 0}));
  EXPECT_EQ(Doubles(mm(empty({2, 0}, kBFloat16), empty({0, 1}, kBFloat16))),
            (std::vector<double>{0, 0}));
  // m or n == 0: an empty result.
  EXPECT_EQ(Sizes(mm(empty({0, 4}), randn({4, 3}))), (I64{0, 3}));
  EXPECT_EQ(Sizes(mm(randn({2, 4}), empty({4, 0}))), (I64{2, 0}));
  EXPECT_EQ(Sizes(bmm(empty({0, 2, 3}), empty({0, 3, 4}))), (I64{0, 2, 4}));
  EXPECT_EQ(Sizes(matmul(empty({2, 0, 3}), randn({3, 4}))), (I64{2, 0, 4}));
  EXPECT_EQ(Sizes(matmul(empty({0, 1, 2, 3}), randn({5, 3, 4}))), (I64{0, 5, 2, 4}));
  EXPECT_EQ(Sizes(matmul(empty({3, 5, 0}), empty({0, 0}))), (I64{3, 5, 0}));
  // addmm with k == 0 is beta * input.
  Tensor in = full({2, 3}, 2.0);
  EXPECT_EQ(Doubles(addmm(in, empty({2, 0}), empty({0, 3}), 3, 5)), std::vector<double>(6, 6.0));
  // linear with no input features: just the bias.
  Tensor lin = linear(empty({4, 0}), empty({3, 0}), Seq({3}));
  EXPECT_EQ(Sizes(lin), (I64{4, 3}));
  EXPECT_EQ(Doubles(lin[3]), (std::vector<double>{0, 1, 2}));
}

// ---------------------------------------------------------------------------------------
// bmm, addmm, baddbmm, linear, dot, outer

TEST(Linalg, BmmMatchesPerBatchProducts) {
  Tensor a = randn({4, 3, 5}), b = randn({4, 5, 2});
  Tensor c = bmm(a, b);
  EXPECT_EQ(Sizes(c), (I64{4, 3, 2}));
  for (int64_t i = 0; i < 4; ++i) ExpectClose(Doubles(c[i]), NaiveMM(a[i], b[i]), 1e-5, 1e-5);
  EXPECT_TRUE(BitEqual(a.bmm(b), c));
  // Permuted batches (batch dim not outermost in memory).
  Tensor ap = randn({3, 4, 5}).permute({1, 0, 2});
  Tensor cp = bmm(ap, b);
  for (int64_t i = 0; i < 4; ++i) ExpectClose(Doubles(cp[i]), NaiveMM(ap[i], b[i]), 1e-5, 1e-5);
}

TEST(Linalg, AddmmScalesAndBroadcastsInput) {
  Tensor a = Seq({2, 3}), b = Seq({3, 4});
  Tensor in = tensor({1.0, 2.0, 3.0, 4.0});
  Tensor r = addmm(in, a, b, 0.5, 2);  // 0.5 * in + 2 * [[20,23,26,29],[56,68,80,92]]
  EXPECT_EQ(Sizes(r), (I64{2, 4}));
  EXPECT_EQ(Doubles(r), (std::vector<double>{40.5, 47, 53.5, 60, 112.5, 137, 161.5, 186}));
  EXPECT_TRUE(BitEqual(in.addmm(a, b, 0.5, 2), r));
  // A 0-dim input and a column input broadcast too.
  EXPECT_EQ(Doubles(addmm(tensor(1.0), a, b))[0], 21.0);
  Tensor colin = tensor({1.0, 2.0}).unsqueeze(1);
  EXPECT_EQ(Doubles(addmm(colin, a, b))[4], 58.0);
  // Defaults: beta = alpha = 1.
  EXPECT_EQ(Doubles(addmm(zeros({2, 4}), a, b)), Doubles(mm(a, b)));
}

TEST(Linalg, AddmmBetaZeroIgnoresInputAndAlphaZeroIgnoresProduct) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor eye2 = eye(2);
  Tensor nan_in = tensor({{nan, 1.0}, {1.0, 1.0}});
  EXPECT_EQ(Doubles(addmm(nan_in, eye2, eye2, 0)), (std::vector<double>{1, 0, 0, 1}));
  EXPECT_EQ(Doubles(baddbmm(nan_in.unsqueeze(0), eye2.unsqueeze(0), eye2.unsqueeze(0), 0)),
            (std::vector<double>{1, 0, 0, 1}));
  Tensor nan_mat = tensor({{nan, 1.0}, {2.0, 3.0}});
  EXPECT_EQ(Doubles(addmm(ones({2, 2}), nan_mat, eye2, 2, 0)), (std::vector<double>{2, 2, 2, 2}));
  EXPECT_EQ(Doubles(addmm(ones({2, 2}), nan_mat, eye2, 0, 0)), (std::vector<double>{0, 0, 0, 0}));
  // Integer dtypes truncate alpha and beta as PyTorch does: 0.5 becomes 0.
  Tensor i = tensor({{1, 2}, {3, 4}}, kInt64);
  EXPECT_EQ(Longs(addmm(i, i, i, 1, 0.5)), (I64{1, 2, 3, 4}));
  EXPECT_EQ(Longs(addmm(i, i, i, 0.5, 1)), (I64{7, 10, 15, 22}));
  EXPECT_EQ(Longs(addmm(i, i, i, 2, 3)), (I64{23, 34, 51, 74}));
}

TEST(Linalg, BaddbmmValuesAndInputDtype) {
  Tensor a = randn({3, 2, 4}), b = randn({3, 4, 5});
  Tensor in = randn({2, 1, 5}).slice(0, 0, 1);  // (1, 1, 5) broadcast over batch and rows
  Tensor r = baddbmm(in, a, b, 0.25, -1.5);
  EXPECT_EQ(Sizes(r), (I64{3, 2, 5}));
  const std::vector<double> inv = Doubles(in);
  for (int64_t i = 0; i < 3; ++i) {
    std::vector<double> want = NaiveMM(a[i], b[i]);
    for (size_t e = 0; e < want.size(); ++e) want[e] = 0.25 * inv[e % 5] - 1.5 * want[e];
    ExpectClose(Doubles(r[i]), want, 1e-5, 1e-5);
  }
  EXPECT_TRUE(BitEqual(in.baddbmm(a, b, 0.25, -1.5), r));
  // As in PyTorch, the input may have another dtype; the result has the batches' dtype.
  Tensor rd = baddbmm(in.to(kFloat64), a, b, 0.25, -1.5);
  EXPECT_EQ(rd.dtype(), kFloat32);
  EXPECT_TRUE(BitEqual(rd, r));
}

TEST(Linalg, LinearAnyRank) {
  Tensor w = randn({4, 3}), bias = randn({4});
  for (I64 shape : {I64{3}, I64{5, 3}, I64{2, 5, 3}, I64{2, 1, 2, 3}}) {
    Tensor x = randn(shape);
    Tensor y = linear(x, w, bias);
    I64 want_shape = shape;
    want_shape.back() = 4;
    EXPECT_EQ(Sizes(y), want_shape);
    Tensor x2 = x.reshape({-1, 3});
    std::vector<double> want = NaiveMM(x2, w.t());
    const std::vector<double> bv = Doubles(bias);
    for (size_t e = 0; e < want.size(); ++e) want[e] += bv[e % 4];
    ExpectClose(Doubles(y), want, 1e-5, 1e-5);
    ExpectClose(Doubles(linear(x, w)), NaiveMM(x2, w.t()), 1e-5, 1e-5);
  }
  // A non-contiguous input and a bias that broadcasts over more than the last dim.
  Tensor xt = randn({3, 5}).t();  // 5x3
  Tensor b2 = randn({5, 1});
  Tensor y = linear(xt, w, b2);
  std::vector<double> want = NaiveMM(xt, w.t());
  const std::vector<double> bv = Doubles(b2);
  for (size_t e = 0; e < want.size(); ++e) want[e] += bv[e / 4];
  ExpectClose(Doubles(y), want, 1e-5, 1e-5);
  // A 1-D weight gives one output feature and drops the dim.
  Tensor w1 = randn({3});
  EXPECT_EQ(linear(randn({3}), w1).dim(), 0);
  EXPECT_EQ(Sizes(linear(randn({2, 3}), w1, tensor(1.0))), (I64{2}));
  // Integer linear layers work too.
  EXPECT_EQ(Longs(linear(Seq({2, 3}, kInt64), Seq({2, 3}, kInt64), tensor({10, 20}, kInt64))),
            (I64{15, 34, 24, 70}));
}

TEST(Linalg, DotValuesAndStrides) {
  Tensor a = tensor({1.0, 2.0, 3.0}), b = tensor({4.0, 5.0, 6.0});
  Tensor d = dot(a, b);
  EXPECT_EQ(d.dim(), 0);
  EXPECT_EQ(d.item<double>(), 32.0);
  EXPECT_EQ(a.dot(b).item<double>(), 32.0);
  Tensor s = Seq({10}).slice(0, 1, 10, 3);  // [1, 4, 7]
  EXPECT_EQ(dot(s, a).item<double>(), 30.0);
  EXPECT_EQ(dot(tensor({2.0}).expand({3}), a).item<double>(), 12.0);
  EXPECT_EQ(dot(Seq({4}, kInt32), Seq({4}, kInt32)).item<int64_t>(), 14);
  EXPECT_EQ(dot(Seq({4}, kInt32), Seq({4}, kInt32)).dtype(), kInt32);
  Tensor x = randn({1000}, kFloat64), y = randn({1000}, kFloat64);
  const std::vector<double> xv = Doubles(x), yv = Doubles(y);
  double want = 0;
  for (size_t i = 0; i < xv.size(); ++i) want += xv[i] * yv[i];
  EXPECT_NEAR(dot(x, y).item<double>(), want, 1e-10);
}

TEST(Linalg, OuterPromotesLikeMultiply) {
  Tensor o = outer(tensor({1.0, 2.0}), tensor({3.0, 4.0, 5.0}));
  EXPECT_EQ(Sizes(o), (I64{2, 3}));
  EXPECT_EQ(Doubles(o), (std::vector<double>{3, 4, 5, 6, 8, 10}));
  EXPECT_TRUE(BitEqual(tensor({1.0, 2.0}).outer(tensor({3.0, 4.0, 5.0})), o));
  EXPECT_EQ(outer(Seq({3}, kInt32), tensor({0.5, 1.0})).dtype(), kFloat32);
  EXPECT_EQ(outer(Seq({3}, kFloat16), Seq({2}, kBFloat16)).dtype(), kFloat32);
  EXPECT_EQ(outer(Seq({3}, kBool), Seq({2}, kInt32)).dtype(), kInt32);
  Tensor ob = outer(tensor({true, false}), tensor({true, true}));
  EXPECT_EQ(ob.dtype(), kBool);
  EXPECT_EQ(Longs(ob), (I64{1, 1, 0, 0}));
  // int8 wraps: 100 * 3 = 300 -> 44.
  EXPECT_EQ(outer(full({1}, 100, kInt8), full({1}, 3, kInt8)).item<int64_t>(), 44);
  Tensor s = Seq({6}).slice(0, 0, 6, 2);  // [0, 2, 4]
  EXPECT_EQ(Doubles(outer(s, tensor({1.0}).expand({2}))), (std::vector<double>{0, 0, 2, 2, 4, 4}));
  EXPECT_EQ(Sizes(outer(empty({0}), randn({3}))), (I64{0, 3}));
}

// ---------------------------------------------------------------------------------------
// Errors

TEST(Linalg, ShapeErrorsNameBothShapes) {
  ExpectError(
      [] {
        (void)mm(randn({2, 3}), randn({4, 5}));
      },
      {"[mm]", "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"});
  ExpectError([] { (void)matmul(randn({2, 3}), randn({4, 5})); }, {"[matmul]", "(2x3 and 4x5)"});
  ExpectError([] { (void)matmul(randn({2, 3, 4}), randn({5})); }, {"[matmul]", "2x3x4 and 5"});
  ExpectError([] { (void)matmul(randn({3}), randn({4})); }, {"[matmul]", "(3 and 4)"});
  ExpectError(
      [] {
        (void)matmul(randn({2, 2, 3}), randn({3, 3, 4}));
      },
      {"[matmul]", "batch", "[2, 2, 3]", "[3, 3, 4]"});
  ExpectError([] { (void)matmul(tensor(1.0), randn({3})); }, {"[matmul]", "0-D"});
  ExpectError([] { (void)mm(randn({3}), randn({3, 4})); }, {"[mm]", "mat1", "2-D", "1-D"});
  ExpectError([] { (void)mm(randn({2, 3}), randn({2, 3, 4})); }, {"[mm]", "mat2", "3-D"});
  ExpectError([] { (void)bmm(randn({2, 3}), randn({2, 3, 4})); }, {"[bmm]", "batch1", "3-D"});
  ExpectError(
      [] {
        (void)bmm(randn({2, 2, 3}), randn({3, 3, 5}));
      },
      {"[bmm]", "batch size", "2", "3"});
  ExpectError(
      [] {
        (void)bmm(randn({2, 2, 3}), randn({2, 4, 5}));
      },
      {"[bmm]", "(2x2x3 and 2x4x5)"});
  ExpectError(
      [] {
        (void)addmm(randn({3, 3}), randn({2, 3}), randn({3, 4}));
      },
      {"[addmm]", "input", "[3, 3]", "[2, 4]"});
  ExpectError(
      [] {
        (void)addmm(randn({2, 2, 4}), randn({2, 3}), randn({3, 4}));
      },
      {"[addmm]", "[2, 2, 4]"});
  ExpectError(
      [] {
        (void)baddbmm(randn({3, 1, 4}), randn({2, 2, 3}), randn({2, 3, 4}));
      },
      {"[baddbmm]", "[3, 1, 4]", "[2, 2, 4]"});
  ExpectError([] { (void)dot(randn({3}), randn({4})); }, {"[dot]", "3", "4"});
  ExpectError([] { (void)dot(randn({3, 1}), randn({3})); }, {"[dot]", "1-D", "2-D"});
  ExpectError([] { (void)outer(randn({3, 1}), randn({3})); }, {"[outer]", "1-D", "2-D"});
  ExpectError([] { (void)outer(randn({3}), tensor(1.0)); }, {"[outer]", "vec2", "0-D"});
  ExpectError(
      [] {
        (void)linear(randn({2, 3}), randn({4, 2}));
      },
      {"[linear]", "(2x3 and 2x4)", "[4, 2]"});
  ExpectError(
      [] {
        (void)linear(randn({2, 3}), randn({4, 3}), randn({5}));
      },
      {"[linear]", "bias", "[5]", "[2, 4]"});
  ExpectError([] { (void)linear(tensor(1.0), randn({4, 3})); }, {"[linear]", "0-D"});
  ExpectError([] { (void)linear(randn({3}), randn({2, 4, 3})); }, {"[linear]", "3-D"});
}

TEST(Linalg, DtypeErrors) {
  ExpectError(
      [] {
        (void)mm(randn({2, 3}), randn({3, 4}, kFloat64));
      },
      {"[mm]", "same dtype", "float32", "float64"});
  ExpectError(
      [] {
        (void)matmul(randn({2, 3}), randn({3, 4}, kFloat64));
      },
      {"[matmul]", "float32", "float64"});
  ExpectError(
      [] {
        (void)bmm(randn({1, 2, 3}), randn({1, 3, 4}, kFloat64));
      },
      {"[bmm]", "float32", "float64"});
  ExpectError([] { (void)dot(randn({3}), randn({3}, kFloat64)); }, {"[dot]", "float64"});
  ExpectError(
      [] {
        (void)addmm(randn({4}, kFloat64), randn({2, 3}), randn({3, 4}));
      },
      {"[addmm]", "input", "float64", "float32"});
  ExpectError(
      [] {
        (void)linear(randn({2, 3}), randn({4, 3}), randn({4}, kFloat64));
      },
      {"[linear]", "bias", "float64"});
  Tensor b = ones({2, 2}, kBool);
  ExpectError([&] { (void)mm(b, b); }, {"[mm]", "not implemented for 'Bool'"});
  ExpectError([&] { (void)matmul(b, b); }, {"[matmul]", "'Bool'"});
  ExpectError([&] { (void)bmm(b.unsqueeze(0), b.unsqueeze(0)); }, {"[bmm]", "'Bool'"});
  ExpectError([&] { (void)dot(b[0], b[0]); }, {"[dot]", "'Bool'"});
  ExpectError([&] { (void)addmm(b, b, b); }, {"[addmm]", "'Bool'"});
  ExpectError([] { (void)mm(Tensor(), randn({2, 2})); }, {"[mm]", "undefined"});
}

TEST(Linalg, ObserversSeeOneOpPerCall) {
  std::vector<std::string> names;
  const int id = add_op_observer([&](const OpEvent& e) {
    if (e.entering) names.emplace_back(e.name);
  });
  (void)matmul(randn({2, 3, 4}), randn({4, 5}));
  (void)linear(randn({2, 3}), randn({4, 3}), randn({4}));
  remove_op_observer(id);
  // randn is an op too; the products must not report nested mm/addmm calls.
  EXPECT_EQ(std::count(names.begin(), names.end(), "matmul"), 1);
  EXPECT_EQ(std::count(names.begin(), names.end(), "linear"), 1);
  EXPECT_EQ(std::count(names.begin(), names.end(), "mm"), 0);
  EXPECT_EQ(std::count(names.begin(), names.end(), "addmm"), 0);
}

// ---------------------------------------------------------------------------------------
// Thread-count independence. Note [Deterministic gemm] (kernels/cpu/gemm.cpp): OpenBLAS
// 0.3.21 itself is NOT bit-identical across thread counts (about 5% of the elements of a
// 512x512 float32 product differ with 1 and 2 threads), so ember splits products into
// fixed tiles and runs OpenBLAS on one thread per tile. These tests hold ember to that.

TEST(Linalg, Matmul512IsBitIdenticalForOneAndTwoThreads) {
  ThreadCountGuard guard;
  Tensor a = randn({512, 512}), b = randn({512, 512});
  set_num_threads(1);
  Tensor r1 = matmul(a, b);
  set_num_threads(2);
  Tensor r2 = matmul(a, b);
  EXPECT_TRUE(BitEqual(r1, r2));
}

TEST(Linalg, OddShapesAndBatchesAreBitIdenticalAcrossThreadCounts) {
  ThreadCountGuard guard;
  struct Case {
    I64 a, b;
  };
  const std::vector<Case> cases = {{{300, 700}, {700, 200}},
                                   {{100, 100}, {100, 100}},
                                   {{1000, 10}, {10, 1000}},
                                   {{200, 37, 29}, {200, 29, 41}},
                                   {{3, 257, 129}, {129, 131}}};
  for (DType dt : {kFloat32, kFloat64}) {
    for (const Case& c : cases) {
      Tensor a = randn(c.a, dt), b = randn(c.b, dt);
      set_num_threads(1);
      Tensor r1 = matmul(a, b);
      Tensor rt1 = matmul(a.transpose(-1, -2).contiguous().transpose(-1, -2), b);
      set_num_threads(2);
      Tensor r2 = matmul(a, b);
      Tensor rt2 = matmul(a.transpose(-1, -2).contiguous().transpose(-1, -2), b);
      EXPECT_TRUE(BitEqual(r1, r2)) << dt << " " << Sizes(a).size();
      EXPECT_TRUE(BitEqual(rt1, rt2)) << dt;
    }
  }
}

// Note [Long-k products]: a weight gradient's shape (small result, long inner dim) is split
// along k; still bit-identical across thread counts, and the values of the product (with
// beta/alpha), against float64.
TEST(Linalg, LongInnerDimProductsSplitAlongKAreBitIdenticalAndRight) {
  ThreadCountGuard guard;
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor g = randn({4100, 96}, dt), x = randn({4100, 40}, dt), c = randn({96, 40}, dt);
    set_num_threads(1);
    Tensor r1 = matmul(g.t(), x), a1 = addmm(c, g.t(), x, 0.5, 2.0);
    set_num_threads(2);
    Tensor r2 = matmul(g.t(), x), a2 = addmm(c, g.t(), x, 0.5, 2.0);
    EXPECT_TRUE(BitEqual(r1, r2)) << dt;
    EXPECT_TRUE(BitEqual(a1, a2)) << dt;
    const Tensor ref = matmul(g.to(kFloat64).t(), x.to(kFloat64));
    EXPECT_TRUE(r1.to(kFloat64).allclose(ref, 1e-4, 1e-3)) << (r1.to(kFloat64) - ref).abs().max();
    EXPECT_TRUE(a1.to(kFloat64).allclose(c.to(kFloat64) * 0.5 + ref * 2.0, 1e-4, 1e-3));
    // The main job's linear layer (64 x 3136 x 128, k cut into four equal chunks).
    Tensor xa = randn({64, 3136}, dt), wa = randn({128, 3136}, dt);
    set_num_threads(1);
    Tensor y1 = matmul(xa, wa.t());
    set_num_threads(2);
    Tensor y2 = matmul(xa, wa.t());
    EXPECT_TRUE(BitEqual(y1, y2)) << dt;
    EXPECT_TRUE(y1.to(kFloat64).allclose(matmul(xa.to(kFloat64), wa.to(kFloat64).t()), 1e-4, 1e-3)) << dt;
  }
  // beta = 0 ignores a NaN input, as BLAS does.
  Tensor nan_input = full({96, 40}, std::numeric_limits<double>::quiet_NaN());
  Tensor g = randn({4096, 96}), x = randn({4096, 40});
  EXPECT_FALSE(addmm(nan_input, g.t(), x, 0.0, 1.0).isnan().any().item<bool>());
}

}  // namespace
}  // namespace ember
