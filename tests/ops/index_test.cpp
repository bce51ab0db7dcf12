// Indexing ops: index_select, gather, the scatter family, index_add/copy/fill, the masked
// ops, nonzero, bincount, and advanced indexing (index / index_put_). Expected values,
// shapes, dtypes and error cases were checked against PyTorch 1.13.

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
namespace ops_index_test {

using namespace testing;  // I64, F32, Sizes, Longs, Floats, Doubles, ExpectError (test_util.h)

Tensor Ar(int64_t n, DType dt = kFloat32) { return arange(0, n, TensorOptions(dt)); }
Tensor L(std::initializer_list<int64_t> v) { return tensor(std::vector<int64_t>(v)); }
Tensor L2(std::initializer_list<std::initializer_list<int64_t>> rows) {
  std::vector<int64_t> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  const int64_t n = static_cast<int64_t>(rows.size());
  return tensor(flat).reshape({n, n == 0 ? 0 : static_cast<int64_t>(flat.size()) / n});
}

Tensor B2(std::initializer_list<std::initializer_list<bool>> rows) {
  std::vector<bool> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  const int64_t n = static_cast<int64_t>(rows.size());
  return tensor(flat).reshape({n, static_cast<int64_t>(flat.size()) / n});
}

// A bool mask with each element true with probability p (no pointwise ops needed).
Tensor RandomMask(IntArrayRef sizes, double p = 0.5) {
  return empty(sizes, TensorOptions(kBool)).bernoulli_(p);
}

bool SameBits(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

const std::vector<DType> kAllTypes = {kUInt8,   kInt8,     kInt16,   kInt32,   kInt64,
                                      kFloat16, kBFloat16, kFloat32, kFloat64, kBool};

// Runs fn with 1 thread and with 2, restoring the setting.
template <typename F>
std::pair<Tensor, Tensor> WithOneAndTwoThreads(F fn) {
  const int saved = get_num_threads();
  set_num_threads(1);
  Tensor a = fn();
  set_num_threads(2);
  Tensor b = fn();
  set_num_threads(saved);
  return {a, b};
}

// ---------------------------------------------------------------------------------------
// index_select

TEST(IndexOpsIndexSelect, SelectsRowsAndColumns) {
  Tensor x = Ar(20).reshape({4, 5});
  Tensor r = x.index_select(0, L({3, 0, 3}));
  EXPECT_EQ(Sizes(r), (I64{3, 5}));
  EXPECT_EQ(Floats(r), (F32{15, 16, 17, 18, 19, 0, 1, 2, 3, 4, 15, 16, 17, 18, 19}));
  Tensor c = index_select(x, -1, L({4, 1}));
  EXPECT_EQ(Sizes(c), (I64{4, 2}));
  EXPECT_EQ(Floats(c), (F32{4, 1, 9, 6, 14, 11, 19, 16}));
  EXPECT_TRUE(r.is_contiguous());
  EXPECT_FALSE(r.is_alias_of(x));
}

TEST(IndexOpsIndexSelect, Int32IndexScalarIndexAndNonContiguousSelf) {
  Tensor x = Ar(20).reshape({4, 5});
  Tensor r = x.index_select(0, tensor(std::vector<int32_t>{1, 2}, kInt32));
  EXPECT_EQ(Floats(r), (F32{5, 6, 7, 8, 9, 10, 11, 12, 13, 14}));
  Tensor s = x.index_select(0, tensor(int64_t{2}));  // a 0-dim index keeps the dim (size 1)
  EXPECT_EQ(Sizes(s), (I64{1, 5}));
  Tensor xt = x.t();  // (5, 4), strides (1, 5)
  EXPECT_EQ(Floats(xt.index_select(1, L({3}))), (F32{15, 16, 17, 18, 19}));
  Tensor stepped = x.slice(1, 0, 5, 2);  // (4, 3)
  EXPECT_EQ(Floats(stepped.index_select(0, L({1, 0}))), (F32{5, 7, 9, 0, 2, 4}));
  Tensor expanded = Ar(3).expand({4, 3});
  EXPECT_EQ(Floats(expanded.index_select(1, L({2, 2}))), (F32{2, 2, 2, 2, 2, 2, 2, 2}));
}

TEST(IndexOpsIndexSelect, ZeroDimEmptyAndAllDTypes) {
  Tensor z = tensor(5.0);
  Tensor r = z.index_select(0, L({0}));
  EXPECT_EQ(r.dim(), 0);
  EXPECT_EQ(r.item<double>(), 5.0);
  Tensor x = Ar(12).reshape({3, 4});
  Tensor e = x.index_select(1, empty({0}, TensorOptions(kInt64)));
  EXPECT_EQ(Sizes(e), (I64{3, 0}));
  for (DType dt : kAllTypes) {
    Tensor y = Ar(6).reshape({2, 3}).to(dt);
    Tensor got = y.index_select(1, L({2, 0}));
    EXPECT_EQ(got.dtype(), dt);
    EXPECT_EQ(Floats(got),
              Floats(Ar(6).reshape({2, 3}).to(dt).to(kFloat32).index_select(1, L({2, 0}))));
  }
  EXPECT_EQ(Longs(Ar(6, kInt64).reshape({2, 3}).index_select(1, L({2, 0}))), (I64{2, 0, 5, 3}));
}

TEST(IndexOpsIndexSelect, Errors) {
  Tensor x = Ar(20).reshape({5, 4});
  ExpectError(
      [&] {
        x.index_select(0, L({1, 7}));
      },
      {"[index_select] index 7 is out of bounds for dimension 0 with size 5"});
  ExpectError([&] { x.index_select(1, L({-1})); },
              {"[index_select] index -1 is out of bounds for dimension 1 with size 4"});
  ExpectError([&] { x.index_select(0, L({0}).view({1, 1})); }, {"[index_select]", "vector"});
  ExpectError([&] { x.index_select(0, L({0}).to(kInt16)); }, {"[index_select]", "int16"});
  ExpectError([&] { x.index_select(0, L({0}).to(kFloat32)); }, {"[index_select]", "float32"});
  ExpectError([&] { x.index_select(2, L({0})); }, {"[index_select]", "dimension out of range"});
  ExpectError([&] { x.index_select(0, Tensor()); }, {"[index_select]", "undefined"});
}

// ---------------------------------------------------------------------------------------
// gather

TEST(IndexOpsGather, PicksAlongDim) {
  Tensor x = Ar(12).reshape({3, 4});
  Tensor idx = L2({{0, 3}, {2, 2}, {1, 0}});
  Tensor g = x.gather(1, idx);
  EXPECT_EQ(Sizes(g), (I64{3, 2}));
  EXPECT_EQ(Floats(g), (F32{0, 3, 6, 6, 9, 8}));
  Tensor g0 = gather(x, -2, L2({{2, 0, 1, 2}}));
  EXPECT_EQ(Floats(g0), (F32{8, 1, 6, 11}));
  // index may be smaller than self in every dim and larger along dim.
  Tensor big = x.gather(0, zeros({5, 2}, TensorOptions(kInt64)));
  EXPECT_EQ(Sizes(big), (I64{5, 2}));
  EXPECT_EQ(Floats(big), (F32{0, 1, 0, 1, 0, 1, 0, 1, 0, 1}));
}

TEST(IndexOpsGather, NonContiguousZeroDimAndEmpty) {
  Tensor x = Ar(12).reshape({3, 4});
  Tensor xt = x.t();                                        // (4, 3)
  Tensor idx = L2({{2, 0}, {1, 1}}).t();                    // non-contiguous index
  EXPECT_EQ(Floats(xt.gather(1, idx)), (F32{8, 4, 1, 5}));  // xt[i][k] = 4k + i
  Tensor s = tensor(3.0);
  Tensor g = s.gather(0, tensor(int64_t{0}));
  EXPECT_EQ(g.dim(), 0);
  EXPECT_EQ(g.item<double>(), 3.0);
  EXPECT_EQ(Floats(s.gather(0, L({0, 0}))), (F32{3, 3}));
  Tensor e = x.gather(0, zeros({0, 7}, TensorOptions(kInt64)));  // empty index: no checks
  EXPECT_EQ(Sizes(e), (I64{0, 7}));
  for (DType dt : kAllTypes) {
    Tensor y = Ar(6).reshape({2, 3}).to(dt);
    Tensor got = y.gather(1, L2({{2, 0}, {1, 1}}));
    EXPECT_EQ(got.dtype(), dt);
    EXPECT_EQ(Floats(got), Floats(tensor({{2.0, 0.0}, {4.0, 4.0}}).to(dt)));
  }
}

TEST(IndexOpsGather, Errors) {
  Tensor x = Ar(20).reshape({4, 5});
  ExpectError([&] { x.gather(0, L2({{9}})); },
              {"[gather] index 9 is out of bounds for dimension 0 with size 4"});
  ExpectError([&] { x.gather(1, L2({{-1}})); },
              {"[gather] index -1 is out of bounds for dimension 1 with size 5"});
  ExpectError([&] { x.gather(0, L({0})); }, {"[gather]", "same number of dimensions"});
  ExpectError(
      [&] {
        x.gather(0, zeros({2, 6}, TensorOptions(kInt64)));
      },
      {"[gather]", "dimension 1", "[2, 6]", "[4, 5]"});
  ExpectError([&] { x.gather(0, L2({{0}}).to(kInt32)); }, {"[gather]", "int64", "int32"});
  ExpectError([&] { x.gather(2, L2({{0}})); }, {"dimension out of range"});
}

// ---------------------------------------------------------------------------------------
// scatter, scatter_add, scatter_reduce

TEST(IndexOpsScatter, WritesSrcAndValue) {
  Tensor x = zeros({3, 4});
  Tensor idx = L2({{0, 3}, {2, 1}});
  Tensor src = arange(1, 9, TensorOptions(kFloat32)).reshape({2, 4});  // larger than index
  Tensor r = x.scatter(1, idx, src);
  EXPECT_EQ(Floats(r), (F32{1, 0, 0, 2, 0, 6, 5, 0, 0, 0, 0, 0}));
  EXPECT_EQ(Floats(x), F32(12, 0.0f));  // out of place
  Tensor v = x.scatter(1, idx, Scalar(2.5));
  EXPECT_EQ(Floats(v), (F32{2.5, 0, 0, 2.5, 0, 2.5, 2.5, 0, 0, 0, 0, 0}));
  // Float value into an integer tensor truncates.
  EXPECT_EQ(Longs(Ar(4, kInt64).scatter(0, L({1}), Scalar(2.7))), (I64{0, 2, 2, 3}));
}

TEST(IndexOpsScatter, DuplicateIndicesLastOneWins) {
  Tensor x = zeros({5});
  Tensor r = x.scatter(0, L({1, 1, 1, 3}), tensor({1.0, 2.0, 3.0, 4.0}));
  EXPECT_EQ(Floats(r), (F32{0, 3, 0, 4, 0}));
}

TEST(IndexOpsScatter, InPlaceBumpsVersionAndHandlesViews) {
  Tensor base = zeros({4, 6});
  Tensor x = base.slice(1, 0, 6, 2);  // (4, 3), non-contiguous
  const uint32_t v0 = base._version();
  Tensor& ret = x.scatter_(0, L2({{3, 2, 1}}), ones({1, 3}));
  EXPECT_TRUE(ret.is_same(x));
  EXPECT_EQ(base._version(), v0 + 1);
  EXPECT_EQ(Floats(base.select(1, 0)), (F32{0, 0, 0, 1}));
  EXPECT_EQ(Floats(base.select(1, 2)), (F32{0, 0, 1, 0}));
  EXPECT_EQ(Floats(base.select(1, 4)), (F32{0, 1, 0, 0}));
  EXPECT_EQ(Floats(base.select(1, 1)), F32(4, 0.0f));
  x.scatter_(1, L2({{0}}), Scalar(7));
  EXPECT_EQ(base._version(), v0 + 2);
  EXPECT_EQ(base[0][0].item<float>(), 7.0f);
  // Writing into an expanded tensor is refused.
  Tensor e = zeros({1, 3}).expand({4, 3});
  ExpectError(
      [&] {
        e.scatter_(0, L2({{0}}), ones({1, 1}));
      },
      {"[scatter_]", "single memory location"});
  // src aliasing self is read before being overwritten.
  Tensor a = Ar(4);
  a.scatter_(0, L({1, 0, 3, 2}), a);
  EXPECT_EQ(Floats(a), (F32{1, 0, 3, 2}));
}

TEST(IndexOpsScatter, Errors) {
  Tensor x = Ar(20).reshape({4, 5});
  ExpectError(
      [&] {
        x.scatter(0, L2({{0}}), ones({1, 1}, TensorOptions(kFloat64)));
      },
      {"[scatter]", "dtype", "float32", "float64"});
  ExpectError(
      [&] {
        x.scatter(0, L2({{0, 1}}), ones({1, 1}));
      },
      {"[scatter]", "[1, 2]", "src", "[1, 1]"});
  ExpectError(
      [&] {
        x.scatter(0, zeros({2, 6}, TensorOptions(kInt64)), ones({9, 9}));
      },
      {"[scatter]", "[2, 6]", "[4, 5]"});
  ExpectError(
      [&] {
        x.scatter(1, L2({{5}}), ones({9, 9}));
      },
      {"[scatter] index 5 is out of bounds for dimension 1 with size 5"});
  ExpectError([&] { x.scatter(1, L2({{1}}).to(kInt32), ones({9, 9})); }, {"[scatter]", "int64"});
  ExpectError(
      [&] {
        x.scatter(0, zeros({1, 1}, TensorOptions(kInt64)), ones({5, 5, 5}));
      },
      {"[scatter]", "same number of dimensions", "src"});
  // An empty index skips every shape check, as in PyTorch.
  EXPECT_EQ(Floats(x.scatter(0, zeros({0}, TensorOptions(kInt64)), x)), Floats(x));
}

TEST(IndexOpsScatterAdd, AccumulatesDuplicatesInIndexOrder) {
  Tensor r = zeros({3}).scatter_add(0, L({0, 0, 2, 0}), tensor({1.0, 2.0, 3.0, 4.0}));
  EXPECT_EQ(Floats(r), (F32{7, 0, 3}));
  Tensor m = scatter_add(ones({2, 3}), 1, L2({{0, 0}, {2, 1}}), tensor({{5.0, 6.0}, {7.0, 8.0}}));
  EXPECT_EQ(Floats(m), (F32{12, 1, 1, 1, 9, 8}));
  // bool: "or".
  Tensor b = tensor({true, false, false}).scatter_add(0, L({1, 1}), tensor({true, true}));
  EXPECT_EQ(b.dtype(), kBool);
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, true, false}));
  // Integers wrap like PyTorch's.
  Tensor i8 = L({100}).to(kInt8).scatter_add(0, L({0}), L({100}).to(kInt8));
  EXPECT_EQ(Longs(i8), (I64{-56}));
  Tensor x = ones({2});
  const uint32_t v0 = x._version();
  x.scatter_add_(0, L({1, 1}), tensor({1.0f, 1.0f}));
  EXPECT_EQ(Floats(x), (F32{1, 3}));
  EXPECT_EQ(x._version(), v0 + 1);
}

TEST(IndexOpsScatterAdd, SameBitsForOneAndTwoThreads) {
  Tensor src = randn({64, 3000});
  Tensor idx = randint(0, 7, {64, 3000});
  auto [a, b] = WithOneAndTwoThreads([&] { return zeros({7, 3000}).scatter_add(0, idx, src); });
  EXPECT_TRUE(SameBits(a, b));
  Tensor idx1 = randint(0, 5, {200000});
  Tensor src1 = randn({200000});
  auto [c, d] = WithOneAndTwoThreads([&] { return zeros({5}).scatter_add(0, idx1, src1); });
  EXPECT_TRUE(SameBits(c, d));
  // The serial order: exactly the left-to-right float sum.
  float expect[5] = {0, 0, 0, 0, 0};
  auto iv = Longs(idx1);
  auto sv = Floats(src1);
  for (size_t i = 0; i < iv.size(); ++i) expect[iv[i]] += sv[i];
  EXPECT_EQ(Floats(c), (F32{expect[0], expect[1], expect[2], expect[3], expect[4]}));
}

TEST(IndexOpsScatterReduce, AllReductionsWithAndWithoutSelf) {
  Tensor self = tensor({1.0, 2.0, 3.0, 4.0});
  Tensor idx = L({0, 0, 1, 1, 2});
  Tensor src = tensor({-4.0, 2.0, 5.0, 6.0, 0.5});
  EXPECT_EQ(Floats(self.scatter_reduce(0, idx, src, "sum")), (F32{-1, 13, 3.5, 4}));
  EXPECT_EQ(Floats(self.scatter_reduce(0, idx, src, "sum", false)), (F32{-2, 11, 0.5, 4}));
  EXPECT_EQ(Floats(self.scatter_reduce(0, idx, src, "prod")), (F32{-8, 60, 1.5, 4}));
  EXPECT_EQ(Floats(self.scatter_reduce(0, idx, src, "prod", false)), (F32{-8, 30, 0.5, 4}));
  EXPECT_EQ(Floats(self.scatter_reduce(0, idx, src, "amax")), (F32{2, 6, 3, 4}));
  EXPECT_EQ(Floats(self.scatter_reduce(0, idx, src, "amax", false)), (F32{2, 6, 0.5, 4}));
  EXPECT_EQ(Floats(self.scatter_reduce(0, idx, src, "amin")), (F32{-4, 2, 0.5, 4}));
  EXPECT_EQ(Floats(self.scatter_reduce(0, idx, src, "amin", false)), (F32{-4, 5, 0.5, 4}));
  auto mean = Floats(self.scatter_reduce(0, idx, src, "mean"));
  EXPECT_FLOAT_EQ(mean[0], -1.0f / 3.0f);
  EXPECT_FLOAT_EQ(mean[1], 13.0f / 3.0f);
  EXPECT_FLOAT_EQ(mean[2], 1.75f);
  EXPECT_FLOAT_EQ(mean[3], 4.0f);
  EXPECT_EQ(Floats(self.scatter_reduce(0, idx, src, "mean", false)), (F32{-1, 5.5, 0.5, 4}));
}

TEST(IndexOpsScatterReduce, IntegerMeanFloorsNanPropagatesAndErrors) {
  Tensor self = L({1, 2, 3});
  Tensor idx = L({0, 0, 1, 1});
  Tensor src = L({-4, 2, 5, 6});
  EXPECT_EQ(Longs(self.scatter_reduce(0, idx, src, "mean")), (I64{-1, 4, 3}));
  EXPECT_EQ(Longs(self.scatter_reduce(0, idx, src, "mean", false)), (I64{-1, 5, 3}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor f = tensor({1.0f, 2.0f, 3.0f});
  auto amax = Floats(f.scatter_reduce(0, L({0, 0, 1}), tensor({nan, 2.0f, 5.0f}), "amax"));
  EXPECT_TRUE(std::isnan(amax[0]));
  EXPECT_EQ(amax[1], 5.0f);
  auto amin =
      Floats(tensor({nan, 2.0f}).scatter_reduce(0, L({0, 1}), tensor({1.0f, 1.0f}), "amin"));
  EXPECT_TRUE(std::isnan(amin[0]));
  EXPECT_EQ(amin[1], 1.0f);
  // bool: sum is "or", prod is "and".
  Tensor b = tensor({true, false, true});
  EXPECT_EQ(
      b.scatter_reduce(0, L({1, 1, 2}), tensor({true, true, false}), "prod").to_vector<bool>(),
      (std::vector<bool>{true, false, false}));
  ExpectError([&] { f.scatter_reduce(0, L({0}), f, "max"); },
              {"[scatter_reduce]", "sum, prod, mean, amax or amin", "'max'"});
  ExpectError([&] { b.scatter_reduce(0, L({0}), b, "mean"); },
              {"[scatter_reduce]", "mean", "bool"});
  Tensor g = f.clone();
  const uint32_t v0 = g._version();
  g.scatter_reduce_(0, L({2, 2}), tensor({10.0f, 20.0f}), "amax", false);
  EXPECT_EQ(Floats(g), (F32{1, 2, 20}));
  EXPECT_EQ(g._version(), v0 + 1);
}

TEST(IndexOpsScatterReduce, HalfMeanRoundsLikePyTorch) {
  Tensor self = tensor({1.0, 2.0, 3.0}).to(kFloat16);
  Tensor r = self.scatter_reduce(0, L({0, 0, 1}), tensor({-4.0, 2.0, 5.0}).to(kFloat16), "mean");
  EXPECT_EQ(r.dtype(), kFloat16);
  EXPECT_EQ(Floats(r), (F32{-0.333251953125f, 3.5f, 3.0f}));
}

// ---------------------------------------------------------------------------------------
// index_add, index_copy, index_fill

TEST(IndexOpsIndexAdd, AddsSlicesWithAlpha) {
  Tensor x = zeros({3, 2});
  Tensor src = tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}});
  Tensor r = x.index_add(0, L({2, 0, 2}), src);
  EXPECT_EQ(Floats(r), (F32{3, 4, 0, 0, 6, 8}));
  Tensor a = zeros({3}).index_add(0, L({0, 0}), tensor({1.0, 2.0}), 2.5);
  EXPECT_EQ(Floats(a), (F32{7.5, 0, 0}));
  // An integer tensor truncates a float alpha.
  Tensor i = zeros({3}, TensorOptions(kInt64)).index_add(0, L({0, 0}), L({1, 2}), 2.5);
  EXPECT_EQ(Longs(i), (I64{6, 0, 0}));
  Tensor i32 = zeros({3}).index_add(0, tensor(std::vector<int32_t>{0, 0}, kInt32), tensor({1.0, 2.0}));
  EXPECT_EQ(Floats(i32), (F32{3, 0, 0}));
  // Along a non-leading dim of a non-contiguous self.
  Tensor t = zeros({2, 3}).t();  // (3, 2)
  t.index_add_(1, L({1}), ones({3, 1}));
  EXPECT_EQ(Floats(t), (F32{0, 1, 0, 1, 0, 1}));
  Tensor z = tensor(1.0);
  EXPECT_EQ(z.index_add(0, L({0}), tensor(2.0)).item<double>(), 3.0);
}

TEST(IndexOpsIndexAdd, ErrorsAndDeterminism) {
  Tensor x = zeros({3, 2});
  ExpectError(
      [&] {
        x.index_add(0, L({0, 3}), ones({2, 2}));
      },
      {"[index_add] index 3 is out of bounds for dimension 0 with size 3"});
  ExpectError(
      [&] {
        x.index_add(0, L({-1}), ones({1, 2}));
      },
      {"[index_add] index -1 is out of bounds for dimension 0 with size 3"});
  ExpectError(
      [&] {
        x.index_add(0, L({0, 1}), ones({2, 2}, TensorOptions(kInt64)));
      },
      {"[index_add]", "same dtype"});
  ExpectError(
      [&] {
        x.index_add(0, L({0, 1}), ones({3, 2}));
      },
      {"[index_add]", "number of indices (2)", "(3)"});
  ExpectError([&] { x.index_add(0, L({0, 1}), ones({2, 3})); }, {"[index_add]", "same size"});
  ExpectError(
      [&] {
        x.index_add(0, L({0}).view({1, 1}), ones({1, 2}));
      },
      {"[index_add]", "vector"});
  Tensor idx = randint(0, 4, {100000});
  Tensor src = randn({100000, 3});
  auto [a, b] = WithOneAndTwoThreads([&] { return zeros({4, 3}).index_add(0, idx, src); });
  EXPECT_TRUE(SameBits(a, b));
}

TEST(IndexOpsIndexCopy, CopiesSlicesLastDuplicateWins) {
  Tensor x = zeros({3, 2});
  Tensor r = x.index_copy(0, L({2, 0}), tensor({{1.0, 2.0}, {3.0, 4.0}}));
  EXPECT_EQ(Floats(r), (F32{3, 4, 0, 0, 1, 2}));
  EXPECT_EQ(Floats(zeros({3}).index_copy(0, L({0, 0}), tensor({1.0, 2.0}))), (F32{2, 0, 0}));
  Tensor y = zeros({2, 3});
  const uint32_t v0 = y._version();
  y.index_copy_(-1, L({1}), ones({2, 1}));
  EXPECT_EQ(Floats(y), (F32{0, 1, 0, 0, 1, 0}));
  EXPECT_EQ(y._version(), v0 + 1);
  ExpectError(
      [&] {
        x.index_copy(0, tensor(std::vector<int32_t>{0}, kInt32), ones({1, 2}));
      },
      {"[index_copy]", "int64", "int32"});
  ExpectError(
      [&] {
        x.index_copy(0, L({5}), ones({1, 2}));
      },
      {"[index_copy] index 5 is out of bounds for dimension 0 with size 3"});
  ExpectError([&] { x.index_copy(0, L({0}), ones({2})); },
              {"[index_copy]", "number of dimensions"});
}

TEST(IndexOpsIndexFill, FillsSlicesAndWrapsNegativeIndices) {
  Tensor x = Ar(6).reshape({2, 3});
  EXPECT_EQ(Floats(x.index_fill(1, L({0, 2}), -1)), (F32{-1, 1, -1, -1, 4, -1}));
  EXPECT_EQ(Floats(zeros({3}).index_fill(0, L({-1}), 1)), (F32{0, 0, 1}));
  EXPECT_EQ(Longs(zeros({3}, TensorOptions(kInt64)).index_fill(0, L({1}), 2.7)), (I64{0, 2, 0}));
  EXPECT_EQ(Floats(x.index_fill(0, L({0}), true)), (F32{1, 1, 1, 3, 4, 5}));
  Tensor y = zeros({3});
  y.index_fill_(0, tensor(int64_t{1}), 4);
  EXPECT_EQ(Floats(y), (F32{0, 4, 0}));
  ExpectError([&] { y.index_fill(0, L({3}), 1); },
              {"[index_fill] index 3 is out of bounds for dimension 0 with size 3"});
  ExpectError([&] { y.index_fill(0, L({-4}), 1); }, {"[index_fill] index -4 is out of bounds"});
  ExpectError([&] { y.index_fill(0, tensor(std::vector<int32_t>{0}, kInt32), 1); },
              {"[index_fill]", "int64"});
}

// ---------------------------------------------------------------------------------------
// masked ops

TEST(IndexOpsMaskedFill, BroadcastsMaskAndSelf) {
  Tensor x = Ar(20).reshape({4, 5});
  Tensor m = tensor({true, false, true, false, false});
  Tensor r = x.masked_fill(m, 1);
  EXPECT_EQ(Sizes(r), (I64{4, 5}));
  EXPECT_EQ(Floats(r.select(0, 1)), (F32{1, 6, 1, 8, 9}));
  // Out of place, self broadcasts to the mask's shape.
  Tensor b = x[0].masked_fill(ones({2, 5}, TensorOptions(kBool)), 3);
  EXPECT_EQ(Sizes(b), (I64{2, 5}));
  EXPECT_EQ(Floats(b), F32(10, 3.0f));
  // Value conversion: float into int truncates, into bool is "!= 0".
  EXPECT_EQ(Longs(Ar(3, kInt64).masked_fill(tensor({true, false, true}), 2.7)), (I64{2, 1, 2}));
  EXPECT_EQ(
      zeros({2}, TensorOptions(kBool)).masked_fill(tensor({true, false}), 0.5).to_vector<bool>(),
      (std::vector<bool>{true, false}));
  // A uint8 mask is accepted (PyTorch 1.13 still takes one).
  EXPECT_EQ(Floats(Ar(3).masked_fill(L({0, 1, 2}).to(kUInt8), -1)), (F32{0, -1, -1}));
  Tensor z = tensor(1.0);
  EXPECT_EQ(z.masked_fill(tensor(true), 3).item<double>(), 3.0);
  EXPECT_EQ(Sizes(zeros({0, 3}).masked_fill(ones({3}, TensorOptions(kBool)), 1)), (I64{0, 3}));
}

TEST(IndexOpsMaskedFill, InPlaceNonContiguousAndErrors) {
  Tensor base = Ar(12).reshape({3, 4});
  Tensor v = base.t();  // (4, 3)
  const uint32_t v0 = base._version();
  v.masked_fill_(tensor({false, true, false}), -1);
  EXPECT_EQ(base._version(), v0 + 1);
  EXPECT_EQ(Floats(base), (F32{0, 1, 2, 3, -1, -1, -1, -1, 8, 9, 10, 11}));
  ExpectError(
      [&] {
        Ar(5).masked_fill_(ones({4, 5}, TensorOptions(kBool)), 1);
      },
      {"[masked_fill_]", "[4, 5]", "[5]"});
  ExpectError([&] { Ar(5).masked_fill(Ar(5), 1); }, {"[masked_fill]", "bool", "float32"});
  ExpectError([&] { Ar(5).masked_fill(ones({4}, TensorOptions(kBool)), 1); }, {"[masked_fill]", "must match the size of tensor b"});
  for (DType dt : kAllTypes) {
    Tensor y = Ar(4).to(dt).masked_fill(tensor({true, false, false, true}), 1);
    EXPECT_EQ(y.dtype(), dt);
    EXPECT_EQ(Floats(y), Floats(tensor({1.0, 1.0, 2.0, 1.0}).to(dt)));
  }
}

TEST(IndexOpsMaskedSelect, RowMajorOrderOfBroadcastShape) {
  Tensor x = Ar(6).reshape({2, 3});
  Tensor m = B2({{true, false, true}, {false, true, true}});
  Tensor r = x.masked_select(m);
  EXPECT_EQ(Sizes(r), (I64{4}));
  EXPECT_EQ(Floats(r), (F32{0, 2, 4, 5}));
  Tensor t = masked_select(x.t(), m.t());
  EXPECT_EQ(Floats(t), (F32{0, 4, 2, 5}));
  Tensor b = Ar(3).masked_select(ones({2, 3}, TensorOptions(kBool)));
  EXPECT_EQ(Floats(b), (F32{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(Sizes(tensor(1.0).masked_select(tensor(true))), (I64{1}));
  EXPECT_EQ(Sizes(x.masked_select(zeros({3}, TensorOptions(kBool)))), (I64{0}));
  ExpectError([&] { x.masked_select(x); }, {"[masked_select]", "bool"});
  // Large enough for several parallel chunks: still row-major.
  Tensor big = randn({300, 400});
  Tensor bm = RandomMask({300, 400});
  auto bv = Floats(big);
  auto mv = bm.to_vector<bool>();
  F32 expect;
  for (size_t i = 0; i < bv.size(); ++i) {
    if (mv[i]) expect.push_back(bv[i]);
  }
  EXPECT_EQ(Floats(big.masked_select(bm)), expect);
}

TEST(IndexOpsMaskedScatter, FillsInRowMajorOrderFromFlatSource) {
  Tensor x = Ar(6).reshape({2, 3});
  Tensor m = B2({{false, true, true}, {true, false, false}});
  Tensor src = arange(100, 106, TensorOptions(kFloat32)).reshape({3, 2});
  Tensor r = x.masked_scatter(m, src);
  EXPECT_EQ(Floats(r), (F32{0, 100, 101, 102, 4, 5}));
  // Mask broadcast over rows; out of place, self broadcasts too.
  Tensor col = tensor({true, false, true});
  EXPECT_EQ(Floats(x.masked_scatter(col, src)), (F32{100, 1, 101, 102, 4, 103}));
  Tensor b = Ar(3).masked_scatter(ones({2, 3}, TensorOptions(kBool)), src);
  EXPECT_EQ(Sizes(b), (I64{2, 3}));
  EXPECT_EQ(Floats(b), (F32{100, 101, 102, 103, 104, 105}));
  // In place through a transposed view.
  Tensor base = zeros({2, 3});
  Tensor v = base.t();  // (3, 2)
  const uint32_t v0 = base._version();
  v.masked_scatter_(B2({{true, false}, {true, true}, {false, false}}), src);
  EXPECT_EQ(base._version(), v0 + 1);
  // v row-major: (0,0)=100, (1,0)=101, (1,1)=102.
  EXPECT_EQ(Floats(base), (F32{100, 101, 0, 0, 102, 0}));
  Tensor e = zeros({0});
  EXPECT_EQ(Sizes(e.masked_scatter(zeros({0}, TensorOptions(kBool)), zeros({0}))), (I64{0}));
}

TEST(IndexOpsMaskedScatter, Errors) {
  Tensor x = Ar(6).reshape({2, 3});
  Tensor m = ones({2, 3}, TensorOptions(kBool));
  ExpectError([&] { x.masked_scatter(m, Ar(5)); },
              {"[masked_scatter]", "source (5)", "ones in mask (6)"});
  ExpectError([&] { x.masked_scatter(m, Ar(6, kInt64)); },
              {"[masked_scatter]", "same dtype", "float32", "int64"});
  ExpectError([&] { Ar(3).masked_scatter_(m, Ar(6)); }, {"[masked_scatter_]", "[2, 3]", "[3]"});
  ExpectError([&] { x.masked_scatter(x, Ar(6)); }, {"[masked_scatter]", "bool"});
}

// ---------------------------------------------------------------------------------------
// nonzero, bincount

TEST(IndexOpsNonzero, CoordinatesInRowMajorOrder) {
  Tensor x = tensor({{0.0, 1.5, 0.0}, {-2.0, 0.0, 3.0}});
  Tensor nz = x.nonzero();
  EXPECT_EQ(nz.dtype(), kInt64);
  EXPECT_EQ(Sizes(nz), (I64{3, 2}));
  EXPECT_EQ(Longs(nz), (I64{0, 1, 1, 0, 1, 2}));
  EXPECT_EQ(Longs(nonzero(x.t())), (I64{0, 1, 1, 0, 2, 1}));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(Longs(tensor({nan, 0.0, -0.0}).nonzero()), (I64{0}));
  EXPECT_EQ(Sizes(tensor(3.0).nonzero()), (I64{1, 0}));
  EXPECT_EQ(Sizes(tensor(0.0).nonzero()), (I64{0, 0}));
  EXPECT_EQ(Sizes(zeros({0, 3}).nonzero()), (I64{0, 2}));
  for (DType dt : kAllTypes) {
    Tensor y = tensor({0.0, 1.0, 0.0, 1.0}).to(dt);
    EXPECT_EQ(Longs(y.nonzero()), (I64{1, 3})) << dt;
  }
  // Several parallel chunks keep the global order.
  Tensor big = RandomMask({700, 100}, 0.3);
  Tensor coords = big.nonzero();
  auto mv = big.to_vector<bool>();
  I64 expect;
  for (int64_t i = 0; i < 70000; ++i) {
    if (mv[i]) {
      expect.push_back(i / 100);
      expect.push_back(i % 100);
    }
  }
  EXPECT_EQ(Longs(coords), expect);
}

TEST(IndexOpsBincount, CountsWeightsAndMinlength) {
  Tensor x = L({1, 3, 1});
  Tensor c = x.bincount();
  EXPECT_EQ(c.dtype(), kInt64);
  EXPECT_EQ(Longs(c), (I64{0, 2, 0, 1}));
  EXPECT_EQ(Longs(bincount(x, {}, 6)), (I64{0, 2, 0, 1, 0, 0}));
  EXPECT_EQ(Longs(x.to(kUInt8).bincount()), (I64{0, 2, 0, 1}));
  // float32 weights stay float32, every other weight dtype gives float64 (as PyTorch).
  Tensor wf = x.bincount(tensor({0.5f, 1.0f, 0.25f}));
  EXPECT_EQ(wf.dtype(), kFloat32);
  EXPECT_EQ(Floats(wf), (F32{0, 0.75f, 0, 1}));
  for (DType dt : {kFloat64, kFloat16, kBFloat16, kInt64, kInt32, kBool}) {
    Tensor w = x.bincount(tensor({1.0, 1.0, 1.0}).to(dt));
    EXPECT_EQ(w.dtype(), kFloat64) << dt;
    EXPECT_EQ(Doubles(w), (std::vector<double>{0, 2, 0, 1}));
  }
  // An empty input gives int64 zeros even with weights.
  Tensor e = empty({0}, TensorOptions(kInt64)).bincount(empty({0}), 2);
  EXPECT_EQ(e.dtype(), kInt64);
  EXPECT_EQ(Longs(e), (I64{0, 0}));
}

TEST(IndexOpsBincount, Errors) {
  ExpectError([&] { L({1, -3}).bincount(); }, {"[bincount]", "non-negative", "-3"});
  ExpectError([&] { L2({{1, 2}}).bincount(); }, {"[bincount]", "1-d"});
  ExpectError([&] { tensor(int64_t{1}).bincount(); }, {"[bincount]", "1-d"});
  ExpectError([&] { tensor({1.0, 2.0}).bincount(); }, {"[bincount]", "integral", "float32"});
  ExpectError([&] { tensor({true}).bincount(); }, {"[bincount]", "integral", "bool"});
  ExpectError([&] { L({1}).bincount({}, -1); }, {"[bincount]", "minlength"});
  ExpectError([&] { L({1, 2}).bincount(tensor({1.0})); }, {"[bincount]", "weights", "same length"});
}

// ---------------------------------------------------------------------------------------
// Advanced indexing

TEST(IndexOpsAdvancedIndex, ResultShapesFollowNumPyRules) {
  Tensor x = Ar(60).reshape({3, 4, 5});
  Tensor u;  // a full slice
  EXPECT_EQ(Sizes(x.index({L({0, 2})})), (I64{2, 4, 5}));
  EXPECT_EQ(Sizes(x.index({u, L({0, 2})})), (I64{3, 2, 5}));
  // Adjacent indexed dims stay in place; separated ones move to the front.
  EXPECT_EQ(Sizes(x.index({u, L({0, 2}), L({1, 3})})), (I64{3, 2}));
  EXPECT_EQ(Sizes(x.index({L({0, 2}), u, L({1, 3})})), (I64{2, 4}));
  // Indices broadcast together.
  EXPECT_EQ(Sizes(x.index({L({0, 2}).view({2, 1}), L({1, 3, 0})})), (I64{2, 3, 5}));
  EXPECT_EQ(Sizes(x.index({tensor(int64_t{1})})), (I64{4, 5}));
  EXPECT_EQ(Sizes(x.index({tensor(int64_t{1}), tensor(int64_t{2})})), (I64{5}));
  EXPECT_EQ(Sizes(x.index({empty({0}, TensorOptions(kInt64))})), (I64{0, 4, 5}));
  EXPECT_EQ(Sizes(zeros({0, 3}).index({zeros({2, 0}, TensorOptions(kInt64))})), (I64{2, 0, 3}));
}

TEST(IndexOpsAdvancedIndex, ValuesNegativeIndicesAndNonContiguous) {
  Tensor x = Ar(60).reshape({3, 4, 5});
  Tensor r = x.index({L({0, 2}), L({1, 3})});
  EXPECT_EQ(Sizes(r), (I64{2, 5}));
  EXPECT_EQ(Floats(r), (F32{5, 6, 7, 8, 9, 55, 56, 57, 58, 59}));
  EXPECT_EQ(Floats(x.index({L({-1}), L({-4}), L({-5, 4})})), (F32{40, 44}));
  Tensor s = x.index({L({0, 2}), Tensor(), L({1, 3})});  // (2, 4): x[0, :, 1], x[2, :, 3]
  EXPECT_EQ(Floats(s), (F32{1, 6, 11, 16, 43, 48, 53, 58}));
  Tensor xt = x.permute({2, 0, 1});  // (5, 3, 4)
  EXPECT_EQ(Floats(xt.index({Tensor(), L({1}), L({2})})), (F32{30, 31, 32, 33, 34}));
  Tensor i32 = tensor(std::vector<int32_t>{2, 0}, kInt32);
  EXPECT_EQ(Floats(Ar(4).index({i32})), (F32{2, 0}));
  Tensor e = Ar(3).expand({2, 3});
  EXPECT_EQ(Floats(e.index({Tensor(), L({2, 1})})), (F32{2, 1, 2, 1}));
  Tensor c = x.index(std::vector<Tensor>{});  // an empty tensor list: a copy
  EXPECT_EQ(Sizes(c), (I64{3, 4, 5}));
  EXPECT_FALSE(c.is_alias_of(x));
  for (DType dt : kAllTypes) {
    Tensor y = Ar(6).reshape({2, 3}).to(dt);
    Tensor got = y.index({L({1, 0}), L({2, 2})});
    EXPECT_EQ(got.dtype(), dt);
    EXPECT_EQ(Floats(got), Floats(tensor({5.0, 2.0}).to(dt)));
  }
}

TEST(IndexOpsAdvancedIndex, BoolMasks) {
  Tensor x = Ar(60).reshape({3, 4, 5});
  Tensor m0 = tensor({false, true, true});
  EXPECT_EQ(Sizes(x.index({m0})), (I64{2, 4, 5}));
  EXPECT_EQ(x.index({m0})[0][0][0].item<float>(), 20.0f);
  Tensor m2 = ones({3, 4}, TensorOptions(kBool));
  EXPECT_EQ(Sizes(x.index({m2})), (I64{12, 5}));
  EXPECT_EQ(Sizes(x.index({Tensor(), ones({4, 5}, TensorOptions(kBool))})), (I64{3, 20}));
  Tensor m5 = tensor({true, false, true, false, false});
  EXPECT_EQ(Sizes(x.index({L({0, 1}), Tensor(), m5})), (I64{2, 4}));
  Tensor m1 = tensor({false, true, false, true});
  EXPECT_EQ(Floats(x.index({tensor(int64_t{0}), m1, tensor(int64_t{0})})), (F32{5, 15}));
  // 0-dim bools add a dim of size 1 (true) or 0 (false), as Python's x[True].
  EXPECT_EQ(Sizes(x.index({tensor(true)})), (I64{1, 3, 4, 5}));
  EXPECT_EQ(Sizes(x.index({tensor(false)})), (I64{0, 3, 4, 5}));
  EXPECT_EQ(Sizes(x.index({Tensor(), tensor(true)})), (I64{3, 1, 4, 5}));
  EXPECT_EQ(Sizes(x.index({L({0, 2}), Tensor(), tensor(true)})), (I64{2, 4, 5}));
  EXPECT_EQ(Sizes(x.index({tensor(true), Tensor(), L({0, 2})})), (I64{2, 3, 5}));
  EXPECT_EQ(Sizes(tensor(5.0).index({tensor(true)})), (I64{1}));
  // uint8 tensors are masks (PyTorch 1.13's deprecated behaviour).
  EXPECT_EQ(Sizes(x.index({L({0, 1, 1}).to(kUInt8)})), (I64{2, 4, 5}));
}

TEST(IndexOpsAdvancedIndex, Errors) {
  Tensor x = Ar(60).reshape({3, 4, 5});
  ExpectError([&] { x.index({L({3})}); },
              {"[index] index 3 is out of bounds for dimension 0 with size 3"});
  ExpectError([&] { x.index({L({-4})}); },
              {"[index] index -4 is out of bounds for dimension 0 with size 3"});
  ExpectError(
      [&] {
        x.index({Tensor(), L({0}), L({7})});
      },
      {"[index] index 7 is out of bounds for dimension 2 with size 5"});
  ExpectError(
      [&] {
        x.index({L({0}), Tensor(), L({0}), L({0})});
      },
      {"[index] too many indices for tensor of dimension 3 (got 4)"});
  ExpectError(
      [&] {
        x.index({ones({3, 5}, TensorOptions(kBool))});
      },
      {"[index]", "mask [3, 5] at index 1", "[3, 4, 5] at index 1"});
  ExpectError(
      [&] {
        x.index({ones({3, 4}, TensorOptions(kBool)), L({0, 1})});
      },
      {"[index] shape mismatch", "[12], [12], [2]"});
  ExpectError([&] { x.index({tensor({0.0, 1.0})}); }, {"[index]", "int64", "float32"});
  ExpectError([&] { x.index({L({0}).to(kInt16)}); }, {"[index]", "int16"});
  ExpectError([&] { tensor(5.0).index({L({0})}); }, {"too many indices for tensor of dimension 0"});
  ExpectError([&] { zeros({0, 3}).index({L({0})}); }, {"out of bounds", "size 0"});
}

TEST(IndexOpsIndexPut, WritesBroadcastValues) {
  Tensor x = zeros({3, 2});
  const uint32_t v0 = x._version();
  Tensor& ret = x.index_put_({L({0, 2})}, tensor({1.0f, 2.0f}));
  EXPECT_TRUE(ret.is_same(x));
  EXPECT_EQ(x._version(), v0 + 1);
  EXPECT_EQ(Floats(x), (F32{1, 2, 0, 0, 1, 2}));
  Tensor y = zeros({3, 2});
  y.index_put_({L({0, 2})}, tensor({1.0f, 2.0f}).view({2, 1}));
  EXPECT_EQ(Floats(y), (F32{1, 1, 0, 0, 2, 2}));
  Tensor z = zeros({3, 2});
  z.index_put_({tensor({true, false, true})}, tensor(5.0f));
  EXPECT_EQ(Floats(z), (F32{5, 5, 0, 0, 5, 5}));
  Tensor w = zeros({3});
  w.index_put_({L({-1})}, tensor(1.0f));
  EXPECT_EQ(Floats(w), (F32{0, 0, 1}));
  // Separated indices: values are laid out with the indexed dims first.
  Tensor s = zeros({2, 3, 4});
  s.index_put_({L({0, 1}), Tensor(), L({1, 2})}, Ar(6).view({2, 3}));
  EXPECT_EQ(Floats(s.index({L({0, 1}), Tensor(), L({1, 2})})), Floats(Ar(6)));
  EXPECT_EQ(Floats(s.select(0, 1).select(1, 2)), (F32{3, 4, 5}));
  // Through a non-contiguous view.
  Tensor base = zeros({2, 3});
  base.t().index_put_({L({2}), L({1})}, tensor(9.0f));
  EXPECT_EQ(Floats(base), (F32{0, 0, 0, 0, 0, 9}));
  // 0-dim bool: y[True] = v.
  Tensor q = zeros({3});
  q.index_put_({tensor(true)}, tensor({5.0f, 6.0f, 7.0f}));
  EXPECT_EQ(Floats(q), (F32{5, 6, 7}));
  q.index_put_({tensor(false)}, tensor(1.0f));
  EXPECT_EQ(Floats(q), (F32{5, 6, 7}));
  for (DType dt : kAllTypes) {
    Tensor a = zeros({4}, TensorOptions(dt));
    a.index_put_({L({3, 1})}, tensor({1.0, 1.0}).to(dt));
    EXPECT_EQ(Floats(a), (F32{0, 1, 0, 1})) << dt;
  }
}

TEST(IndexOpsIndexPut, DuplicatesAccumulateOrLastWins) {
  Tensor a = zeros({3});
  a.index_put_({L({0, 0, 2})}, tensor({1.0f, 2.0f, 3.0f}), true);
  EXPECT_EQ(Floats(a), (F32{3, 0, 3}));
  Tensor b = zeros({3});
  b.index_put_({L({0, 0, 2})}, tensor({1.0f, 2.0f, 3.0f}));
  EXPECT_EQ(Floats(b), (F32{2, 0, 3}));
  Tensor c = zeros({3}, TensorOptions(kBool));
  c.index_put_({L({0, 0})}, tensor({true, true}), true);
  EXPECT_EQ(c.to_vector<bool>(), (std::vector<bool>{true, false, false}));
  Tensor idx = randint(0, 6, {100000});
  Tensor vals = randn({100000, 4});
  auto [p, q] = WithOneAndTwoThreads([&] {
    Tensor t = zeros({6, 4});
    t.index_put_({idx}, vals, true);
    return t;
  });
  EXPECT_TRUE(SameBits(p, q));
  Tensor idx2 = randint(0, 3, {50000});
  Tensor vals2 = randn({8, 50000});
  auto [r, s] = WithOneAndTwoThreads([&] {
    Tensor t = zeros({8, 3});
    t.index_put_({Tensor(), idx2}, vals2, true);
    return t;
  });
  EXPECT_TRUE(SameBits(r, s));
}

TEST(IndexOpsIndexPut, Errors) {
  Tensor x = zeros({3, 2});
  ExpectError(
      [&] {
        x.index_put_({L({0, 2})}, tensor({1.0, 2.0, 3.0}));
      },
      {"[index_put_] shape mismatch", "[3]", "[2, 2]"});
  ExpectError(
      [&] {
        x.index_put_({L({0, 2})}, tensor({1, 2}).to(kInt64));
      },
      {"[index_put_]", "dtypes match", "float32", "int64"});
  ExpectError([&] { x.index_put_({L({3})}, tensor(1.0f)); },
              {"[index_put_] index 3 is out of bounds for dimension 0 with size 3"});
  ExpectError(
      [&] {
        zeros({3}).index_put_({L({0, 1})}, ones({3, 2}));
      },
      {"[index_put_] shape mismatch", "[3, 2]", "[2]"});
  // Leading size-1 dims of the value are dropped first, as libtorch's indexing API does.
  Tensor z = zeros({3});
  z.index_put_({L({0, 1})}, ones({1, 1, 2}));
  EXPECT_EQ(Floats(z), (std::vector<float>{1, 1, 0}));
  Tensor e = zeros({1, 2}).expand({3, 2});
  ExpectError([&] { e.index_put_({L({0})}, tensor(1.0f)); }, {"[index_put_]", "single memory"});
  // A failed put leaves self untouched.
  Tensor y = zeros({3});
  const uint32_t v0 = y._version();
  ExpectError([&] { y.index_put_({L({0, 5})}, tensor(1.0f)); }, {"index 5"});
  EXPECT_EQ(Floats(y), F32(3, 0.0f));
  EXPECT_EQ(y._version(), v0);
}

// ---------------------------------------------------------------------------------------
// One way in

TEST(IndexOpsOpScope, EveryOpReportsItsNameOnce) {
  std::vector<std::string> names;
  const int id = add_op_observer([&](const OpEvent& e) {
    if (e.entering) names.emplace_back(e.name);
  });
  Tensor x = Ar(6).reshape({2, 3});
  Tensor idx = L({1, 0});
  Tensor m = tensor({true, false, true});
  (void)x.index_select(1, idx);
  (void)gather(x, 1, L2({{0}, {2}}));
  (void)x.scatter_add(1, L2({{0}, {2}}), x);
  (void)x.scatter_reduce(1, L2({{0}, {2}}), x, "amax");
  (void)x.index_add(0, idx, x);
  (void)x.masked_fill(m, 1);
  (void)x.masked_select(m);
  (void)x.index({idx});
  x.index_put_({idx}, tensor(1.0f));
  (void)x.nonzero();
  remove_op_observer(id);
  for (const char* op : {"index_select", "gather", "scatter_add", "scatter_reduce", "index_add",
                         "masked_fill", "masked_select", "index", "index_put_", "nonzero"}) {
    EXPECT_EQ(std::count(names.begin(), names.end(), std::string(op)), 1) << op;
  }
}

}  // namespace
}  // namespace ember
