// Sorting and selection: sort, argsort, topk, kthvalue, unique, searchsorted. Expected
// values, shapes, dtypes and errors were checked against PyTorch 1.13.

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
namespace ops_sort_test {

using namespace testing;  // I64, F32, Sizes, Longs, Floats, Doubles, ExpectError (test_util.h)

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor L(std::initializer_list<int64_t> v) { return tensor(std::vector<int64_t>(v)); }

// Compares floats treating NaN as equal to NaN and telling -0.0 from 0.0.
void ExpectSameFloats(const F32& got, const F32& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
    } else {
      EXPECT_EQ(got[i], want[i]) << "at " << i;
      EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << "at " << i;
    }
  }
}

const std::vector<DType> kAllTypes = {kUInt8,   kInt8,     kInt16,   kInt32,   kInt64,
                                      kFloat16, kBFloat16, kFloat32, kFloat64, kBool};

// ---------------------------------------------------------------------------------------
// sort / argsort

TEST(SortOpsSort, NanIsLargestAndTiesKeepTheirOrder) {
  Tensor v = tensor({3.0f, kNan, -kInf, 1.0f, kNan, kInf, -0.0f, 0.0f, 1.0f});
  auto [s, i] = v.sort(-1, false, true);
  ExpectSameFloats(Floats(s), {-kInf, -0.0f, 0.0f, 1, 1, 3, kInf, kNan, kNan});
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_EQ(Longs(i), (I64{2, 6, 7, 3, 8, 0, 5, 1, 4}));
  auto [sd, id] = sort(v, 0, true, true);
  ExpectSameFloats(Floats(sd), {kNan, kNan, kInf, 3, 1, 1, -0.0f, 0.0f, -kInf});
  EXPECT_EQ(Longs(id), (I64{1, 4, 5, 0, 3, 8, 6, 7, 2}));
  // stable=false gives the same (ember always sorts stably).
  EXPECT_EQ(Longs(std::get<1>(v.sort())), Longs(i));
}

TEST(SortOpsSort, AlongEveryDimOfNonContiguousInputs) {
  Tensor x = tensor({5.0f, 1.0f, 4.0f, 2.0f, 6.0f, 3.0f}).reshape({2, 3});
  auto [s0, i0] = x.sort(0);
  EXPECT_EQ(Floats(s0), (F32{2, 1, 3, 5, 6, 4}));
  EXPECT_EQ(Longs(i0), (I64{1, 0, 1, 0, 1, 0}));
  auto [s1, i1] = x.sort(-1, true);
  EXPECT_EQ(Floats(s1), (F32{5, 4, 1, 6, 3, 2}));
  EXPECT_EQ(Longs(i1), (I64{0, 2, 1, 1, 2, 0}));
  auto [st, it] = x.t().sort(1);  // (3, 2)
  EXPECT_EQ(Sizes(st), (I64{3, 2}));
  EXPECT_EQ(Floats(st), (F32{2, 5, 1, 6, 3, 4}));
  EXPECT_EQ(Longs(it), (I64{1, 0, 0, 1, 1, 0}));
  Tensor stepped = arange(10, 0, -1, TensorOptions(kFloat32)).slice(0, 0, 10, 3);  // 10 7 4 1
  EXPECT_EQ(Floats(std::get<0>(stepped.sort())), (F32{1, 4, 7, 10}));
  Tensor e = tensor({2.0f, 1.0f}).view({1, 2}).expand({3, 2});
  EXPECT_EQ(Floats(std::get<0>(e.sort())), (F32{1, 2, 1, 2, 1, 2}));
  Tensor a = tensor({3.0f, 1.0f, 2.0f});
  EXPECT_EQ(Longs(a.argsort()), (I64{1, 2, 0}));
  EXPECT_EQ(Longs(argsort(a, 0, true)), (I64{0, 2, 1}));
}

TEST(SortOpsSort, ZeroDimEmptyAndDTypes) {
  auto [s, i] = tensor(3.0).sort();
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(i.dim(), 0);
  EXPECT_EQ(s.item<double>(), 3.0);
  EXPECT_EQ(i.item<int64_t>(), 0);
  ExpectError([&] { tensor(3.0).sort(1); }, {"[sort]", "dimension out of range"});
  auto [es, ei] = zeros({0, 3}).sort(0);
  EXPECT_EQ(Sizes(es), (I64{0, 3}));
  EXPECT_EQ(Sizes(ei), (I64{0, 3}));
  for (DType dt : kAllTypes) {
    Tensor y = tensor({3.0, 0.0, 2.0, 1.0}).to(dt);
    auto [ys, yi] = y.sort(0, false, true);
    EXPECT_EQ(ys.dtype(), dt);
    EXPECT_EQ(Floats(ys), Floats(tensor({0.0, 1.0, 2.0, 3.0}).to(dt))) << dt;
    if (dt != kBool) {
      EXPECT_EQ(Longs(yi), (I64{1, 3, 2, 0})) << dt;
    }
  }
  auto [bs, bi] = tensor({true, false, true}).sort(0, false, true);
  EXPECT_EQ(bs.to_vector<bool>(), (std::vector<bool>{false, true, true}));
  EXPECT_EQ(Longs(bi), (I64{1, 0, 2}));
  auto [i8, i8i] = tensor({3.0, -1.0, 2.0}).to(kInt8).sort(0, true);
  EXPECT_EQ(Longs(i8), (I64{3, 2, -1}));
  EXPECT_EQ(Longs(i8i), (I64{0, 2, 1}));
}

TEST(SortOpsSort, SameResultForOneAndTwoThreads) {
  Tensor x = randint(0, 20, {300, 500}).to(kFloat32);  // many ties
  const int saved = get_num_threads();
  set_num_threads(1);
  auto [a, ai] = x.sort(0);
  set_num_threads(2);
  auto [b, bi] = x.sort(0);
  set_num_threads(saved);
  EXPECT_EQ(Floats(a), Floats(b));
  EXPECT_EQ(Longs(ai), Longs(bi));
  // Ties keep their original order.
  auto col = Floats(x.select(1, 7));
  auto idx = Longs(ai.select(1, 7));
  for (size_t k = 1; k < idx.size(); ++k) {
    if (col[idx[k]] == col[idx[k - 1]]) {
      EXPECT_LT(idx[k - 1], idx[k]);
    }
    EXPECT_LE(col[idx[k - 1]], col[idx[k]]);
  }
}

// ---------------------------------------------------------------------------------------
// topk / kthvalue

TEST(SortOpsTopK, LargestAndSmallestInSortedOrder) {
  Tensor v = tensor({3.0f, kNan, -kInf, 1.0f, kNan, kInf, -0.0f, 0.0f, 1.5f});
  auto [tv, ti] = v.topk(4);
  ExpectSameFloats(Floats(tv), {kNan, kNan, kInf, 3});
  EXPECT_EQ(Longs(ti), (I64{1, 4, 5, 0}));
  auto [sv, si] = topk(v, 3, -1, false);
  ExpectSameFloats(Floats(sv), {-kInf, -0.0f, 0.0f});
  EXPECT_EQ(Longs(si), (I64{2, 6, 7}));
  Tensor x = arange(20, TensorOptions(kFloat32)).reshape({4, 5});
  auto [c, ci] = x.topk(2, 0);
  EXPECT_EQ(Sizes(c), (I64{2, 5}));
  EXPECT_EQ(Floats(c), (F32{15, 16, 17, 18, 19, 10, 11, 12, 13, 14}));
  EXPECT_EQ(Longs(ci), (I64{3, 3, 3, 3, 3, 2, 2, 2, 2, 2}));
  auto [u, ui] = tensor({5.0f, 1.0f, 4.0f, 2.0f, 3.0f, 9.0f, 0.0f}).topk(3, -1, true, false);
  EXPECT_EQ(Floats(u), (F32{9, 5, 4}));
  EXPECT_EQ(Longs(ui), (I64{5, 0, 2}));
  auto [nt, nti] = x.t().topk(1, 1);  // (5, 4) -> (5, 1)
  EXPECT_EQ(Floats(nt), (F32{15, 16, 17, 18, 19}));
  EXPECT_EQ(Longs(nti), (I64{3, 3, 3, 3, 3}));
}

TEST(SortOpsTopK, EdgeCasesAndErrors) {
  Tensor v = arange(5, TensorOptions(kFloat32));
  EXPECT_EQ(Sizes(std::get<0>(v.topk(0))), (I64{0}));
  EXPECT_EQ(Sizes(std::get<0>(zeros({3, 0}).topk(0))), (I64{3, 0}));
  EXPECT_EQ(Sizes(std::get<0>(zeros({0, 3}).topk(2))), (I64{0, 2}));
  auto [s, si] = tensor(3.0).topk(1);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<double>(), 3.0);
  EXPECT_EQ(si.item<int64_t>(), 0);
  ExpectError([&] { v.topk(6); }, {"[topk]", "k out of range", "6"});
  ExpectError([&] { v.topk(-1); }, {"[topk]", "k out of range"});
  ExpectError([&] { tensor({true, false}).topk(1); }, {"[topk]", "bool"});
  for (DType dt : kAllTypes) {
    if (dt == kBool) continue;
    auto [t, ti] = tensor({1.0, 3.0, 2.0}).to(dt).topk(2);
    EXPECT_EQ(t.dtype(), dt);
    EXPECT_EQ(Floats(t), (F32{3, 2})) << dt;
    EXPECT_EQ(Longs(ti), (I64{1, 2})) << dt;
  }
}

TEST(SortOpsKthValue, ValuesIndicesAndKeepdim) {
  Tensor v = tensor({3.0f, kNan, -kInf, 1.0f, kNan, kInf, -0.0f, 0.0f, 1.0f});
  auto [k2, i2] = v.kthvalue(2);
  EXPECT_EQ(k2.dim(), 0);
  EXPECT_EQ(k2.item<float>(), 0.0f);
  const int64_t at = i2.item<int64_t>();
  EXPECT_TRUE(at == 6 || at == 7);  // either zero; PyTorch reports 6
  auto [k8, i8] = v.kthvalue(8);
  EXPECT_TRUE(std::isnan(k8.item<float>()));
  EXPECT_TRUE(i8.item<int64_t>() == 1 || i8.item<int64_t>() == 4);
  Tensor x = arange(6, TensorOptions(kFloat32)).reshape({2, 3});
  auto [kv, ki] = x.kthvalue(2, 0, true);
  EXPECT_EQ(Sizes(kv), (I64{1, 3}));
  EXPECT_EQ(Floats(kv), (F32{3, 4, 5}));
  EXPECT_EQ(Longs(ki), (I64{1, 1, 1}));
  auto [kr, kri] = kthvalue(x.t(), 1, -1);  // (3, 2) -> (3)
  EXPECT_EQ(Floats(kr), (F32{0, 1, 2}));
  EXPECT_EQ(Longs(kri), (I64{0, 0, 0}));
  auto [z, zi] = tensor(3.0).kthvalue(1);
  EXPECT_EQ(z.item<double>(), 3.0);
  EXPECT_EQ(zi.item<int64_t>(), 0);
  EXPECT_EQ(Sizes(std::get<0>(zeros({0, 3}).kthvalue(1))), (I64{0}));
  EXPECT_EQ(Sizes(std::get<0>(zeros({3, 0}).kthvalue(1, 0))), (I64{0}));
  EXPECT_EQ(Longs(std::get<0>(tensor({7.0, 3.0, 5.0}).to(kInt16).kthvalue(3))), (I64{7}));
}

TEST(SortOpsKthValue, Errors) {
  Tensor v = arange(5, TensorOptions(kFloat32));
  ExpectError([&] { v.kthvalue(0); }, {"[kthvalue]", "k out of range for dimension 0"});
  ExpectError([&] { v.kthvalue(6); }, {"[kthvalue]", "k out of range"});
  ExpectError([&] { tensor(3.0).kthvalue(2); }, {"[kthvalue]", "k out of range"});
  ExpectError([&] { v.kthvalue(1, 1); }, {"[kthvalue]", "dimension out of range"});
  ExpectError([&] { tensor({true}).kthvalue(1); }, {"[kthvalue]", "bool"});
}

// ---------------------------------------------------------------------------------------
// unique

TEST(SortOpsUnique, SortedValuesInverseAndCounts) {
  Tensor x = L({3, 1, 2, 1}).view({2, 2});
  auto [u, inv, cnt] = unique(x, true, true, true);
  EXPECT_EQ(u.dtype(), kInt64);
  EXPECT_EQ(Longs(u), (I64{1, 2, 3}));
  EXPECT_EQ(Sizes(inv), (I64{2, 2}));
  EXPECT_EQ(Longs(inv), (I64{2, 0, 1, 0}));
  EXPECT_EQ(Longs(cnt), (I64{2, 1, 1}));
  auto [u2, inv2, cnt2] = unique(x);
  EXPECT_EQ(Longs(u2), (I64{1, 2, 3}));
  EXPECT_FALSE(inv2.defined());
  EXPECT_FALSE(cnt2.defined());
  // Always sorted, even with sorted=false.
  EXPECT_EQ(Longs(std::get<0>(unique(L({3, 1, 2, 1}), false))), (I64{1, 2, 3}));
  // Non-contiguous input flattens in row-major order of its shape.
  auto [ut, it, ct] = unique(x.t(), true, true, true);
  EXPECT_EQ(Longs(it), (I64{2, 1, 0, 0}));
}

TEST(SortOpsUnique, EdgeCasesAndDTypes) {
  auto [u0, i0, c0] = unique(tensor(int64_t{3}), true, true, true);
  EXPECT_EQ(Sizes(u0), (I64{1}));
  EXPECT_EQ(i0.dim(), 0);
  EXPECT_EQ(Longs(c0), (I64{1}));
  auto [ue, ie, ce] = unique(zeros({0, 2}), true, true, true);
  EXPECT_EQ(Sizes(ue), (I64{0}));
  EXPECT_EQ(Sizes(ie), (I64{0, 2}));
  EXPECT_EQ(Sizes(ce), (I64{0}));
  auto [ub, ib, cb] = unique(tensor({true, false, true}), true, true, true);
  EXPECT_EQ(ub.to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ(Longs(ib), (I64{1, 0, 1}));
  EXPECT_EQ(Longs(cb), (I64{1, 2}));
  // -0.0 and 0.0 are one value; the first occurrence decides its sign.
  auto [z1, zi1, zc1] = unique(tensor({0.0f, -0.0f, 0.0f}), true, true, true);
  ExpectSameFloats(Floats(z1), {0.0f});
  EXPECT_EQ(Longs(zc1), (I64{3}));
  ExpectSameFloats(Floats(std::get<0>(unique(tensor({-0.0f, 0.0f})))), {-0.0f});
  // NaN equals nothing: each NaN is its own value, after everything else.
  auto [n, ni, nc] = unique(tensor({kNan, 1.0f, kNan, 1.0f}), true, true, true);
  ExpectSameFloats(Floats(n), {1.0f, kNan, kNan});
  EXPECT_EQ(Longs(ni), (I64{1, 0, 2, 0}));
  EXPECT_EQ(Longs(nc), (I64{2, 1, 1}));
  for (DType dt : kAllTypes) {
    auto [v, vi, vc] = unique(tensor({2.0, 0.0, 2.0, 1.0}).to(dt), true, true, true);
    EXPECT_EQ(v.dtype(), dt);
    if (dt == kBool) {
      EXPECT_EQ(Longs(vc), (I64{1, 3}));
    } else {
      EXPECT_EQ(Floats(v), (F32{0, 1, 2})) << dt;
      EXPECT_EQ(Longs(vi), (I64{2, 0, 2, 1})) << dt;
      EXPECT_EQ(Longs(vc), (I64{1, 1, 2})) << dt;
    }
  }
}

// ---------------------------------------------------------------------------------------
// searchsorted

TEST(SortOpsSearchSorted, LeftRightAndInt32) {
  Tensor seq = tensor({1.0f, 2.0f, 2.0f, 3.0f});
  Tensor vals = tensor({2.0f, 0.0f, 5.0f, 2.5f});
  Tensor l = searchsorted(seq, vals);
  EXPECT_EQ(l.dtype(), kInt64);
  EXPECT_EQ(Longs(l), (I64{1, 0, 4, 3}));
  EXPECT_EQ(Longs(searchsorted(seq, vals, false, true)), (I64{3, 0, 4, 3}));
  Tensor i32 = searchsorted(seq, vals, true);
  EXPECT_EQ(i32.dtype(), kInt32);
  EXPECT_EQ(Longs(i32), (I64{1, 0, 4, 3}));
  Tensor s0 = searchsorted(seq, tensor(2.0f));
  EXPECT_EQ(s0.dim(), 0);
  EXPECT_EQ(s0.item<int64_t>(), 1);
  EXPECT_EQ(Longs(searchsorted(empty({0}), tensor({1.0f}))), (I64{0}));
  // Mixed dtypes compare in the promoted type.
  EXPECT_EQ(Longs(searchsorted(seq, L({2, 0}))), (I64{1, 0}));
  EXPECT_EQ(Longs(searchsorted(L({1, 2, 3}).to(kInt32), L({2, 5}))), (I64{1, 3}));
}

TEST(SortOpsSearchSorted, BatchedNanAndErrors) {
  Tensor seq = tensor({1.0f, 2.0f, 2.0f, 3.0f, 0.0f, 1.0f, 4.0f, 5.0f}).view({2, 4});
  Tensor vals = tensor({2.0f, 0.0f, 5.0f, 3.0f, 3.0f, 3.0f}).view({2, 3});
  Tensor r = searchsorted(seq, vals);
  EXPECT_EQ(Sizes(r), (I64{2, 3}));
  EXPECT_EQ(Longs(r), (I64{1, 0, 4, 2, 2, 2}));
  EXPECT_EQ(Longs(searchsorted(seq.t().contiguous().t(), vals)), (I64{1, 0, 4, 2, 2, 2}));
  EXPECT_EQ(Longs(searchsorted(tensor({1.0f, 2.0f, 2.0f, 3.0f}), vals)), (I64{1, 0, 4, 3, 3, 3}));
  Tensor nseq = tensor({1.0f, 2.0f, kNan});
  EXPECT_EQ(Longs(searchsorted(nseq, tensor({kNan, 3.0f, 1.0f}))), (I64{3, 3, 0}));
  EXPECT_EQ(Longs(searchsorted(nseq, tensor({kNan, 3.0f, 1.0f}), false, true)), (I64{3, 3, 1}));
  ExpectError(
      [&] {
        searchsorted(seq, tensor({2.0f, 0.0f, 5.0f}));
      },
      {"[searchsorted]", "first N-1 dimensions", "[2, 4]", "[3]"});
  ExpectError([&] { searchsorted(tensor(1.0f), tensor({2.0f})); },
              {"[searchsorted]", "positive dimension"});
  ExpectError(
      [&] {
        searchsorted(tensor({false, true}), tensor({true}));
      },
      {"[searchsorted]", "bool"});
}

TEST(SortOpsOpScope, EveryOpReportsItsNameOnce) {
  std::vector<std::string> names;
  const int id = add_op_observer([&](const OpEvent& e) {
    if (e.entering) names.emplace_back(e.name);
  });
  Tensor x = tensor({3.0f, 1.0f, 2.0f});
  (void)x.sort();
  (void)x.argsort();
  (void)x.topk(2);
  (void)x.kthvalue(1);
  (void)unique(x);
  (void)searchsorted(tensor({1.0f, 2.0f}), x);
  remove_op_observer(id);
  for (const char* op : {"sort", "argsort", "topk", "kthvalue", "unique", "searchsorted"}) {
    EXPECT_EQ(std::count(names.begin(), names.end(), std::string(op)), 1) << op;
  }
}

}  // namespace
}  // namespace ember
