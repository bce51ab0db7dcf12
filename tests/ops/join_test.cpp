// Joining and shaping ops: cat, stack, hstack, vstack, flip, roll, repeat, tile,
// repeat_interleave, tril, triu, pad and one_hot. Expected values, dtypes and errors were
// checked against PyTorch 1.13.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace ops_join_test {

using I64 = std::vector<int64_t>;
using F32 = std::vector<float>;

I64 Sizes(const Tensor& t) { return t.sizes().vec(); }
I64 Longs(const Tensor& t) { return t.to_vector<int64_t>(); }
F32 Floats(const Tensor& t) { return t.to_vector<float>(); }

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Runs fn, expects an ember::Error whose message contains every one of `parts`
// (case-insensitively) and starts with "[op]".
void ExpectError(const std::function<void()>& fn, const std::string& op,
                 const std::vector<std::string>& parts) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("[" + op + "]", 0), 0u)
        << "message \"" << msg << "\" does not start with [" << op << "]";
    for (const auto& p : parts) {
      EXPECT_NE(Lower(msg).find(Lower(p)), std::string::npos)
          << "message \"" << msg << "\" does not mention \"" << p << "\"";
    }
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected ember::Error, got another exception: " << e.what();
    return;
  }
  ADD_FAILURE() << "expected ember::Error, nothing was thrown";
}

// 0..n-1 as int64 in the given shape.
Tensor Iota(IntArrayRef shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return arange(n).reshape(shape);
}

// ======================================================================================
// cat / concat

TEST(JoinCat, AlongEachDimAndNegativeDims) {
  Tensor a = Iota({2, 3});
  Tensor b = Iota({2, 3}).slice(1, 0, 2).contiguous();  // [[0, 1], [3, 4]]
  Tensor c1 = cat({a, b}, 1);
  EXPECT_EQ(Sizes(c1), (I64{2, 5}));
  EXPECT_EQ(Longs(c1), (I64{0, 1, 2, 0, 1, 3, 4, 5, 3, 4}));
  EXPECT_EQ(Longs(cat({a, b}, -1)), Longs(c1));
  Tensor c0 = cat({a, a, a});
  EXPECT_EQ(Sizes(c0), (I64{6, 3}));
  EXPECT_EQ(Longs(c0.slice(0, 4)), (I64{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(Longs(cat({a}, -2)), Longs(a));
  EXPECT_TRUE(c0.is_contiguous());
}

TEST(JoinCat, ResultIsACopy) {
  Tensor a = Iota({4});
  Tensor c = cat({a});
  EXPECT_FALSE(c.is_alias_of(a));
  c.fill_(9);
  EXPECT_EQ(Longs(a), (I64{0, 1, 2, 3}));
}

TEST(JoinCat, ThreeDimsMiddle) {
  Tensor a = Iota({2, 2, 3});
  Tensor b = full({2, 1, 3}, 100, kInt64);
  Tensor c = cat({a, b}, 1);
  EXPECT_EQ(Sizes(c), (I64{2, 3, 3}));
  EXPECT_EQ(Longs(c), (I64{0, 1, 2, 3, 4, 5, 100, 100, 100, 6, 7, 8, 9, 10, 11, 100, 100, 100}));
}

TEST(JoinCat, PromotesDtypes) {
  Tensor i32 = ones({2}, kInt32);
  EXPECT_EQ(cat({i32, ones({2}, kFloat16)}).dtype(), kFloat16);
  EXPECT_EQ(cat({ones({1}, kUInt8), ones({1}, kInt8)}).dtype(), kInt16);
  EXPECT_EQ(cat({ones({1}, kBool), ones({1}, kInt64)}).dtype(), kInt64);
  EXPECT_EQ(cat({ones({1}, kFloat16), ones({1}, kBFloat16)}).dtype(), kFloat32);
  EXPECT_EQ(cat({ones({1}, kBool), ones({1}, kBool)}).dtype(), kBool);
  Tensor m = cat({tensor({1, 2}, kInt32), tensor({2.5, -1.5}, kFloat64), tensor({true, false})});
  EXPECT_EQ(m.dtype(), kFloat64);
  EXPECT_EQ(m.to_vector<double>(), (std::vector<double>{1, 2, 2.5, -1.5, 1, 0}));
}

TEST(JoinCat, SkipsEmptyOneDimTensorsButPromotesThem) {
  Tensor a = Iota({2, 3}).to(kInt32);
  Tensor c = cat({a, zeros({0}), a}, 1);
  EXPECT_EQ(Sizes(c), (I64{2, 6}));
  EXPECT_EQ(c.dtype(), kFloat32);  // the skipped float tensor still promotes
  EXPECT_EQ(Floats(c), (F32{0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  EXPECT_EQ(cat({zeros({0}, kInt8), a.to(kUInt8)}, 1).dtype(), kInt16);
  // Only skipped tensors: [0], whatever dim says.
  Tensor e = cat({zeros({0}), zeros({0}, kInt64)}, 5);
  EXPECT_EQ(Sizes(e), (I64{0}));
  EXPECT_EQ(e.dtype(), kFloat32);
  // A 1-D empty tensor next to 1-D tensors also takes part as size 0.
  EXPECT_EQ(Sizes(cat({zeros({0}), zeros({3}, kInt64)})), (I64{3}));
}

TEST(JoinCat, EmptyTensorsThatAreNotSkipped) {
  Tensor a = Iota({2, 3});
  EXPECT_EQ(Longs(cat({zeros({2, 0}, kInt64), a}, 1)), Longs(a));
  EXPECT_EQ(Sizes(cat({zeros({0, 3}), a.to(kBool)}, 0)), (I64{2, 3}));
  EXPECT_EQ(Sizes(cat({zeros({0, 3}), zeros({0, 3})}, 0)), (I64{0, 3}));
  EXPECT_EQ(Sizes(cat({zeros({0, 3}), zeros({0, 2})}, 1)), (I64{0, 5}));
  ExpectError(
      [&] {
        cat({zeros({2, 0}), a}, 0);
      },
      "cat",
      {"Sizes of tensors must match except in dimension 0. Expected size 0 but got size 3 "
       "for tensor number 1 in the list."});
}

TEST(JoinCat, NonContiguousAndExpandedInputs) {
  Tensor base = Iota({3, 4});
  Tensor t = base.t();                    // 4x3, strides [1, 4]
  Tensor s = base.slice(1, 0, 4, 2).t();  // 2x3
  Tensor e = tensor({7, 8, 9}).expand({2, 3});
  Tensor c = cat({t, s, e}, 0);
  EXPECT_EQ(Sizes(c), (I64{8, 3}));
  EXPECT_EQ(Longs(c),
            (I64{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, 0, 4, 8, 2, 6, 10, 7, 8, 9, 7, 8, 9}));
  Tensor off = base.select(0, 1);  // storage offset 4
  EXPECT_EQ(Longs(cat({off, off})), (I64{4, 5, 6, 7, 4, 5, 6, 7}));
}

TEST(JoinCat, LargeInputsUseTheParallelPathCorrectly) {
  Tensor a = arange(600000, kFloat32).reshape({300, 2000});
  Tensor b = arange(0, -300000, -1, kFloat32).reshape({300, 1000});
  Tensor c = cat({a, b}, 1);
  EXPECT_EQ(Sizes(c), (I64{300, 3000}));
  EXPECT_EQ(c[123][1999].item<float>(), 123 * 2000 + 1999);
  EXPECT_EQ(c[299][2000].item<float>(), -299000.0f);
  EXPECT_EQ(c[7][2999].item<float>(), -(7 * 1000 + 999));
  Tensor d = cat({a.reshape({-1}), a.reshape({-1})});
  EXPECT_EQ(d[600000 + 599999].item<float>(), 599999.0f);
  EXPECT_EQ(d[314159].item<float>(), 314159.0f);
}

TEST(JoinCat, Errors) {
  Tensor a = Iota({2, 3});
  ExpectError([] { cat({}); }, "cat", {"non-empty list"});
  ExpectError([] { cat({tensor(1)}); }, "cat",
              {"zero-dimensional tensor (at position 0) cannot be concatenated"});
  ExpectError([&] { cat({a, tensor(1)}); }, "cat", {"at position 1"});
  ExpectError(
      [&] {
        cat({a, zeros({2, 4})}, 0);
      },
      "cat",
      {"Sizes of tensors must match except in dimension 0. Expected size 3 but got size "
       "4 for tensor number 1 in the list."});
  ExpectError(
      [&] {
        cat({a, a, zeros({3, 3})}, 1);
      },
      "cat", {"Expected size 2 but got size 3 for tensor number 2"});
  ExpectError(
      [&] {
        cat({a, zeros({2, 4, 1})});
      },
      "cat", {"same number of dimensions", "got 2 and 3"});
  ExpectError([&] { cat({zeros({0, 3}), zeros({3})}); }, "cat", {"got 2 and 1"});
  ExpectError([&] { cat({a, a}, 2); }, "cat", {"[-2, 1]", "got 2"});
  ExpectError([&] { cat({a, a}, -3); }, "cat", {"got -3"});
  ExpectError([&] { cat({a, Tensor()}); }, "cat", {"undefined"});
}

TEST(JoinCat, ConcatIsCat) {
  Tensor a = Iota({2, 2});
  EXPECT_EQ(Longs(concat({a, a}, 1)), (I64{0, 1, 0, 1, 2, 3, 2, 3}));
  ExpectError([] { concat({}); }, "concat", {"non-empty"});
}

TEST(JoinCat, AllDtypesKeepTheirBytes) {
  for (DType dt :
       {kFloat32, kFloat64, kFloat16, kBFloat16, kInt8, kUInt8, kInt16, kInt32, kInt64, kBool}) {
    Tensor a = Iota({2, 3}).to(dt);
    Tensor c = cat({a, a.t().contiguous().t()}, 0);
    EXPECT_EQ(c.dtype(), dt);
    EXPECT_EQ(Sizes(c), (I64{4, 3}));
    EXPECT_EQ(Longs(c.slice(0, 2)), Longs(a)) << dt;
  }
}

// ======================================================================================
// stack / hstack / vstack

TEST(JoinStack, NewDimAtEveryPosition) {
  Tensor a = Iota({2, 3});
  Tensor b = arange(0, -6, -1).reshape({2, 3});
  Tensor s0 = stack({a, b});
  EXPECT_EQ(Sizes(s0), (I64{2, 2, 3}));
  EXPECT_EQ(Longs(s0), (I64{0, 1, 2, 3, 4, 5, 0, -1, -2, -3, -4, -5}));
  Tensor s1 = stack({a, b}, 1);
  EXPECT_EQ(Sizes(s1), (I64{2, 2, 3}));
  EXPECT_EQ(Longs(s1), (I64{0, 1, 2, 0, -1, -2, 3, 4, 5, -3, -4, -5}));
  Tensor s2 = stack({a, b}, -1);
  EXPECT_EQ(Sizes(s2), (I64{2, 3, 2}));
  EXPECT_EQ(Longs(s2), (I64{0, 0, 1, -1, 2, -2, 3, -3, 4, -4, 5, -5}));
  EXPECT_EQ(Longs(stack({a, b}, 2)), Longs(s2));
  EXPECT_EQ(Longs(stack({a, b}, -3)), Longs(s0));
}

TEST(JoinStack, ScalarsEmptyAndMixedDtypes) {
  Tensor s = stack({tensor(1), tensor(2.0)});
  EXPECT_EQ(Sizes(s), (I64{2}));
  EXPECT_EQ(s.dtype(), kFloat32);
  EXPECT_EQ(Floats(s), (F32{1, 2}));
  Tensor h = stack({ones({2, 3}, kInt32), ones({2, 3}, kFloat16)}, 1);
  EXPECT_EQ(h.dtype(), kFloat16);
  EXPECT_EQ(Sizes(h), (I64{2, 2, 3}));
  EXPECT_EQ(Sizes(stack({zeros({0}), zeros({0})})), (I64{2, 0}));
  EXPECT_EQ(Sizes(stack({zeros({0}), zeros({0})}, 1)), (I64{0, 2}));
  Tensor t = Iota({2, 3}).t();
  EXPECT_EQ(Longs(stack({t, t})), (I64{0, 3, 1, 4, 2, 5, 0, 3, 1, 4, 2, 5}));
}

TEST(JoinStack, Errors) {
  Tensor a = Iota({2, 3});
  ExpectError([] { stack({}); }, "stack", {"non-empty"});
  ExpectError(
      [&] {
        stack({a, a.t()});
      },
      "stack",
      {"expects each tensor to be equal size, but got [2, 3] at entry 0 and [3, 2] at "
       "entry 1"});
  ExpectError([&] { stack({a, a}, 3); }, "stack", {"[-3, 2]", "got 3"});
  ExpectError([&] { stack({a, a}, -4); }, "stack", {"got -4"});
}

TEST(JoinHVStack, Hstack) {
  Tensor h = hstack({tensor(1), tensor(2.0)});
  EXPECT_EQ(Sizes(h), (I64{2}));
  EXPECT_EQ(h.dtype(), kFloat32);
  EXPECT_EQ(Longs(hstack({tensor({1, 2}), tensor({3})})), (I64{1, 2, 3}));
  Tensor a = Iota({2, 3});
  Tensor h2 = hstack({a, a.slice(1, 0, 1)});
  EXPECT_EQ(Sizes(h2), (I64{2, 4}));
  EXPECT_EQ(Longs(h2), (I64{0, 1, 2, 0, 3, 4, 5, 3}));
  EXPECT_EQ(Sizes(hstack({zeros({2, 2, 1}), zeros({2, 3, 1})})), (I64{2, 5, 1}));
  ExpectError([] { hstack({}); }, "hstack", {"non-empty"});
  ExpectError([&] { hstack({zeros({3}), zeros({2, 2})}); }, "hstack", {"got 1 and 2"});
}

TEST(JoinHVStack, Vstack) {
  Tensor v = vstack({tensor(1), tensor(2.0)});
  EXPECT_EQ(Sizes(v), (I64{2, 1}));
  Tensor v2 = vstack({tensor({1, 2, 3}), Iota({2, 3})});
  EXPECT_EQ(Sizes(v2), (I64{3, 3}));
  EXPECT_EQ(Longs(v2), (I64{1, 2, 3, 0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(Sizes(vstack({zeros({2, 2, 2}), zeros({1, 2, 2})})), (I64{3, 2, 2}));
  ExpectError([] { vstack({}); }, "vstack", {"non-empty"});
  ExpectError(
      [] {
        vstack({zeros({3}), zeros({2})});
      },
      "vstack", {"Expected size 3 but got size 2"});
}

// ======================================================================================
// flip

TEST(ShapeFlip, DimsAndNegativeDims) {
  Tensor a = Iota({2, 3});
  EXPECT_EQ(Longs(flip(a, {0})), (I64{3, 4, 5, 0, 1, 2}));
  EXPECT_EQ(Longs(flip(a, {1})), (I64{2, 1, 0, 5, 4, 3}));
  EXPECT_EQ(Longs(flip(a, {-1})), (I64{2, 1, 0, 5, 4, 3}));
  EXPECT_EQ(Longs(a.flip({0, 1})), (I64{5, 4, 3, 2, 1, 0}));
  Tensor same = flip(a, {});
  EXPECT_EQ(Longs(same), Longs(a));
  EXPECT_FALSE(same.is_alias_of(a));
  Tensor b = Iota({2, 2, 2});
  EXPECT_EQ(Longs(b.flip({0, 2})), (I64{5, 4, 7, 6, 1, 0, 3, 2}));
}

TEST(ShapeFlip, ScalarsEmptyNonContiguousAndDtypes) {
  EXPECT_EQ(tensor(3).flip({0}).item<int64_t>(), 3);
  EXPECT_EQ(Sizes(tensor(3).flip({})), (I64{}));
  EXPECT_EQ(Sizes(zeros({0, 3}).flip({0, 1})), (I64{0, 3}));
  Tensor t = Iota({3, 4}).t();  // 4x3
  EXPECT_EQ(Longs(t.flip({1})), (I64{8, 4, 0, 9, 5, 1, 10, 6, 2, 11, 7, 3}));
  Tensor e = tensor({1, 2, 3}).expand({2, 3});
  EXPECT_EQ(Longs(e.flip({1})), (I64{3, 2, 1, 3, 2, 1}));
  Tensor h = tensor({1.5, -2.0, 3.25}, kFloat16).flip({0});
  EXPECT_EQ(h.dtype(), kFloat16);
  EXPECT_EQ(Floats(h), (F32{3.25, -2.0, 1.5}));
  Tensor bo = tensor({true, false, false}).flip({0});
  EXPECT_EQ(bo.to_vector<bool>(), (std::vector<bool>{false, false, true}));
}

TEST(ShapeFlip, LongRowsUseBlocks) {
  Tensor a = arange(100000, kInt32);
  Tensor f = a.flip({0});
  EXPECT_EQ(f[0].item<int32_t>(), 99999);
  EXPECT_EQ(f[99999].item<int32_t>(), 0);
  EXPECT_EQ(f[40000].item<int32_t>(), 59999);
}

TEST(ShapeFlip, Errors) {
  Tensor a = Iota({2, 3});
  ExpectError([&] { flip(a, {0, 0}); }, "flip", {"dim 0 appears multiple times"});
  ExpectError([&] { flip(a, {1, -1}); }, "flip", {"dim 1 appears multiple times"});
  ExpectError([&] { flip(a, {2}); }, "flip", {"[-2, 1]", "got 2"});
  ExpectError([] { flip(Tensor(), {0}); }, "flip", {"undefined"});
}

// ======================================================================================
// roll

TEST(ShapeRoll, FlattenedWhenNoDims) {
  Tensor a = Iota({2, 3});
  EXPECT_EQ(Longs(roll(a, {1})), (I64{5, 0, 1, 2, 3, 4}));
  EXPECT_EQ(Longs(roll(a, {7})), (I64{5, 0, 1, 2, 3, 4}));
  EXPECT_EQ(Longs(roll(a, {-2})), (I64{2, 3, 4, 5, 0, 1}));
  EXPECT_EQ(Sizes(roll(a, {1})), (I64{2, 3}));
  EXPECT_EQ(Longs(a.t().roll({1})), (I64{5, 0, 3, 1, 4, 2}));
  EXPECT_EQ(tensor(3).roll({1}).item<int64_t>(), 3);
}

TEST(ShapeRoll, AlongDims) {
  Tensor a = Iota({2, 3});
  EXPECT_EQ(Longs(roll(a, {1}, {1})), (I64{2, 0, 1, 5, 3, 4}));
  EXPECT_EQ(Longs(roll(a, {-8}, {1})), (I64{2, 0, 1, 5, 3, 4}));
  EXPECT_EQ(Longs(roll(a, {1, -1}, {0, 1})), (I64{4, 5, 3, 1, 2, 0}));
  EXPECT_EQ(Longs(roll(a, {1, 1}, {1, 1})), (I64{1, 2, 0, 4, 5, 3}));
  EXPECT_EQ(Longs(roll(a, {std::numeric_limits<int64_t>::min()}, {-1})),
            Longs(roll(a, {std::numeric_limits<int64_t>::min() % 3}, {-1})));
  EXPECT_EQ(Sizes(roll(zeros({0, 3}), {1}, {0})), (I64{0, 3}));
  EXPECT_EQ(Sizes(roll(zeros({0, 3}), {1})), (I64{0, 3}));
  Tensor e = tensor({1, 2, 3}).expand({2, 3});
  EXPECT_EQ(Longs(e.roll({1}, {1})), (I64{3, 1, 2, 3, 1, 2}));
}

TEST(ShapeRoll, Errors) {
  Tensor a = Iota({2, 3});
  ExpectError([&] { roll(a, {}); }, "roll", {"`shifts` required"});
  ExpectError([&] { roll(a, {1, 2}); }, "roll", {"shifts: 2, dims: 0"});
  ExpectError([&] { roll(a, {1}, {0, 1}); }, "roll", {"shifts: 1, dims: 2"});
  ExpectError([&] { roll(a, {1}, {2}); }, "roll", {"got 2"});
  ExpectError([] { roll(tensor(3), {1}, {0}); }, "roll", {"no dimensions"});
}

// ======================================================================================
// repeat / tile

TEST(ShapeRepeat, RepeatsAndNewLeadingDims) {
  Tensor a = Iota({2, 3});
  Tensor r = a.repeat({2, 1, 2});
  EXPECT_EQ(Sizes(r), (I64{2, 2, 6}));
  EXPECT_EQ(Longs(r),
            (I64{0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5, 0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  EXPECT_EQ(Longs(a.repeat({2, 1})), (I64{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(Sizes(a.repeat({0, 2})), (I64{0, 6}));
  EXPECT_EQ(Sizes(tensor(7).repeat({})), (I64{}));
  EXPECT_EQ(Longs(tensor(7).repeat({3})), (I64{7, 7, 7}));
  EXPECT_EQ(Sizes(zeros({0, 2}).repeat({3, 2})), (I64{0, 4}));
  Tensor t = a.t();  // [[0,3],[1,4],[2,5]]
  EXPECT_EQ(Longs(t.repeat({1, 2})), (I64{0, 3, 0, 3, 1, 4, 1, 4, 2, 5, 2, 5}));
  Tensor e = tensor({1, 2}).expand({2, 2});
  EXPECT_EQ(Longs(e.repeat({2, 1})), (I64{1, 2, 1, 2, 1, 2, 1, 2}));
}

TEST(ShapeRepeat, Errors) {
  Tensor a = Iota({2, 3});
  ExpectError([&] { a.repeat({2}); }, "repeat",
              {"number of dimensions of repeat dims (1) can not be smaller than number of "
               "dimensions of tensor (2)"});
  ExpectError([&] { a.repeat({-1, 2}); }, "repeat", {"non-negative", "[-1, 2]"});
  ExpectError([&] { a.repeat({int64_t{1} << 62, 8}); }, "repeat", {"too large"});
  ExpectError([&] { a.repeat({int64_t{1} << 40, int64_t{1} << 40}); }, "repeat", {"too large"});
  // Huge repeats of an empty tensor stay cheap.
  EXPECT_EQ(Sizes(zeros({0, 2}).repeat({int64_t{1} << 40, 3})), (I64{0, 6}));
  EXPECT_EQ(Sizes(zeros({0}).repeat({int64_t{1} << 60})), (I64{0}));
}

TEST(ShapeTile, PadsRepeatsOnTheLeft) {
  Tensor a = Iota({2, 3});
  Tensor t = tile(a, {2});
  EXPECT_EQ(Sizes(t), (I64{2, 6}));
  EXPECT_EQ(Longs(t), (I64{0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  EXPECT_EQ(Longs(a.tile({})), Longs(a));
  EXPECT_EQ(Sizes(a.tile({2, 1, 1})), (I64{2, 2, 3}));
  EXPECT_EQ(tensor(7).tile({}).item<int64_t>(), 7);
  EXPECT_EQ(Longs(tensor({1, 2}).tile({2, 2})), (I64{1, 2, 1, 2, 1, 2, 1, 2}));
  ExpectError([&] { a.tile({-1}); }, "tile", {"non-negative"});
}

// ======================================================================================
// repeat_interleave

TEST(ShapeRepeatInterleave, IntRepeats) {
  Tensor a = Iota({2, 3});
  Tensor f = a.repeat_interleave(2);
  EXPECT_EQ(Sizes(f), (I64{12}));
  EXPECT_EQ(Longs(f), (I64{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}));
  EXPECT_EQ(Longs(repeat_interleave(a, 2, 1)), (I64{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}));
  EXPECT_EQ(Sizes(repeat_interleave(a, 2, 1)), (I64{2, 6}));
  EXPECT_EQ(Longs(a.repeat_interleave(2, -2)), (I64{0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  EXPECT_EQ(Sizes(a.repeat_interleave(0, 0)), (I64{0, 3}));
  EXPECT_EQ(Longs(tensor(7).repeat_interleave(2)), (I64{7, 7}));
  EXPECT_EQ(Sizes(zeros({0, 3}).repeat_interleave(2)), (I64{0}));
  Tensor b = a.to(kBool).repeat_interleave(2, 0);
  EXPECT_EQ(b.dtype(), kBool);
  EXPECT_EQ(Longs(a.t().repeat_interleave(2, 1)), (I64{0, 0, 3, 3, 1, 1, 4, 4, 2, 2, 5, 5}));
}

TEST(ShapeRepeatInterleave, TensorRepeats) {
  Tensor a = Iota({2, 3});
  Tensor r = a.repeat_interleave(tensor({1, 2}), 0);
  EXPECT_EQ(Sizes(r), (I64{3, 3}));
  EXPECT_EQ(r.dtype(), kInt64);
  EXPECT_EQ(Longs(r), (I64{0, 1, 2, 3, 4, 5, 3, 4, 5}));
  EXPECT_EQ(Longs(a.repeat_interleave(tensor({1, 2}, kInt32), 0)), Longs(r));
  EXPECT_EQ(Sizes(a.repeat_interleave(tensor({3}), 0)), (I64{6, 3}));
  EXPECT_EQ(Sizes(a.repeat_interleave(tensor(int64_t{3}), 0)), (I64{6, 3}));
  EXPECT_EQ(Longs(a.repeat_interleave(tensor({1, 2, 0, 1, 0, 3}))), (I64{0, 1, 1, 3, 5, 5, 5}));
  EXPECT_EQ(Longs(a.repeat_interleave(tensor({0, 2, 1}), -1)), (I64{1, 1, 2, 4, 4, 5}));
  Tensor h = ones({2, 2}, kFloat16).repeat_interleave(tensor({1, 3}), 1);
  EXPECT_EQ(h.dtype(), kFloat16);
  EXPECT_EQ(Sizes(h), (I64{2, 4}));
  EXPECT_EQ(Sizes(zeros({0, 3}).repeat_interleave(tensor({1, 2, 0}), 1)), (I64{0, 3}));
  // Non-contiguous repeats.
  Tensor rep = tensor({1, 9, 2, 9}).slice(0, 0, 4, 2);
  EXPECT_EQ(Longs(a.repeat_interleave(rep, 0)), (I64{0, 1, 2, 3, 4, 5, 3, 4, 5}));
}

TEST(ShapeRepeatInterleave, Errors) {
  Tensor a = Iota({2, 3});
  ExpectError([&] { a.repeat_interleave(-1); }, "repeat_interleave", {"can not be negative"});
  ExpectError([&] { a.repeat_interleave(2, 2); }, "repeat_interleave", {"got 2"});
  ExpectError([] { tensor(7).repeat_interleave(2, 0); }, "repeat_interleave", {"no dimensions"});
  ExpectError(
      [&] {
        a.repeat_interleave(tensor({1, 2, 3}), 0);
      },
      "repeat_interleave", {"same size as input along dim", "3", "2"});
  ExpectError(
      [&] {
        a.repeat_interleave(tensor({3}).reshape({1, 1}), 0);
      },
      "repeat_interleave", {"0-dim or 1-dim"});
  ExpectError(
      [&] {
        a.repeat_interleave(tensor({1, -2}), 0);
      },
      "repeat_interleave", {"can not be negative"});
  ExpectError(
      [&] {
        a.repeat_interleave(tensor({1.0, 2.0}), 0);
      },
      "repeat_interleave", {"int64 or int32", "float32"});
  ExpectError([&] { a.repeat_interleave(ones({2}, kInt16), 0); }, "repeat_interleave", {"int16"});
}

// ======================================================================================
// tril / triu

TEST(ShapeTri, DiagonalOffsets) {
  Tensor a = Iota({2, 3});
  EXPECT_EQ(Longs(tril(a)), (I64{0, 0, 0, 3, 4, 0}));
  EXPECT_EQ(Longs(tril(a, 1)), (I64{0, 1, 0, 3, 4, 5}));
  EXPECT_EQ(Longs(tril(a, -1)), (I64{0, 0, 0, 3, 0, 0}));
  EXPECT_EQ(Longs(triu(a)), (I64{0, 1, 2, 0, 4, 5}));
  EXPECT_EQ(Longs(triu(a, -1)), (I64{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(Longs(triu(a, 5)), (I64{0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(Longs(triu(a, -5)), Longs(a));
  EXPECT_EQ(Longs(a.tril(-5)), (I64{0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(Longs(a.tril(std::numeric_limits<int64_t>::max())), Longs(a));
  EXPECT_EQ(Longs(a.triu(std::numeric_limits<int64_t>::min())), Longs(a));
  EXPECT_EQ(Longs(a.triu(std::numeric_limits<int64_t>::max())), (I64{0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(Longs(a.tril(std::numeric_limits<int64_t>::min())), (I64{0, 0, 0, 0, 0, 0}));
}

TEST(ShapeTri, BatchesDtypesAndLayouts) {
  Tensor b = arange(1, 9).reshape({2, 2, 2});
  EXPECT_EQ(Longs(b.triu(1)), (I64{0, 2, 0, 0, 0, 6, 0, 0}));
  Tensor bo = ones({2, 3}, kBool).triu(1);
  EXPECT_EQ(bo.dtype(), kBool);
  EXPECT_EQ(bo.to_vector<bool>(), (std::vector<bool>{false, true, true, false, false, true}));
  Tensor h = ones({3, 3}, kBFloat16).tril();
  EXPECT_EQ(Floats(h), (F32{1, 0, 0, 1, 1, 0, 1, 1, 1}));
  Tensor t = Iota({3, 2}).t();  // [[0,2,4],[1,3,5]]
  EXPECT_EQ(Longs(t.tril()), (I64{0, 0, 0, 1, 3, 0}));
  Tensor e = tensor({1, 2, 3}).expand({3, 3});
  EXPECT_EQ(Longs(e.triu()), (I64{1, 2, 3, 0, 2, 3, 0, 0, 3}));
  EXPECT_EQ(Sizes(zeros({0, 2, 3}).triu()), (I64{0, 2, 3}));
  EXPECT_EQ(Sizes(zeros({2, 0}).tril()), (I64{2, 0}));
}

TEST(ShapeTri, Errors) {
  ExpectError([] { tril(arange(3)); }, "tril", {"at least 2 dimensions", "[3]"});
  ExpectError([] { triu(tensor(1)); }, "triu", {"at least 2 dimensions"});
}

// ======================================================================================
// pad

TEST(ShapePad, Constant) {
  Tensor a = Iota({2, 3});
  Tensor p = pad(a, {1, 1});
  EXPECT_EQ(Sizes(p), (I64{2, 5}));
  EXPECT_EQ(Longs(p), (I64{0, 0, 1, 2, 0, 0, 3, 4, 5, 0}));
  Tensor q = pad(a, {1, 2, 0, 1}, "constant", 9);
  EXPECT_EQ(Sizes(q), (I64{3, 6}));
  EXPECT_EQ(Longs(q), (I64{9, 0, 1, 2, 9, 9, 9, 3, 4, 5, 9, 9, 9, 9, 9, 9, 9, 9}));
  EXPECT_EQ(Longs(pad(a, {1, 1}, "constant", 2.7)), (I64{2, 0, 1, 2, 2, 2, 3, 4, 5, 2}));
  Tensor b = pad(a.to(kBool), {1, 1}, "constant", 2.7);
  EXPECT_EQ(b.to_vector<bool>(),
            (std::vector<bool>{true, false, true, true, true, true, true, true, true, true}));
  EXPECT_EQ(Longs(pad(a, {})), Longs(a));
  EXPECT_EQ(Sizes(pad(tensor(3.0), {})), (I64{}));
  EXPECT_EQ(Sizes(pad(zeros({0, 2}), {1, 1})), (I64{0, 4}));
  EXPECT_EQ(Sizes(pad(zeros({0, 2}), {1, 1, 1, 1})), (I64{2, 4}));
  EXPECT_EQ(Floats(pad(zeros({0}), {1, 1}, "constant", 4)), (F32{4, 4}));
  Tensor t = a.t();  // [[0,3],[1,4],[2,5]]
  EXPECT_EQ(Longs(pad(t, {0, 1}, "constant", -1)), (I64{0, 3, -1, 1, 4, -1, 2, 5, -1}));
  Tensor h =
      pad(ones({1, 1}, kFloat16), {1, 0}, "constant", std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isinf(Floats(h)[0]));
}

TEST(ShapePad, ConstantNegativePaddingCrops) {
  Tensor a = Iota({2, 3});
  EXPECT_EQ(Longs(pad(a, {-1, 1})), (I64{1, 2, 0, 4, 5, 0}));
  EXPECT_EQ(Longs(pad(a, {-1, -1})), (I64{1, 4}));
  EXPECT_EQ(Sizes(pad(a, {-3, 0})), (I64{2, 0}));
  EXPECT_EQ(Sizes(pad(a, {-2, -1})), (I64{2, 0}));
  EXPECT_EQ(Longs(pad(a, {-3, 1})), (I64{0, 0}));
  EXPECT_EQ(Longs(pad(a, {0, 0, -1, 1})), (I64{3, 4, 5, 0, 0, 0}));
  EXPECT_EQ(Sizes(pad(a, {0, 0, -2, 1})), (I64{1, 3}));
  Tensor c = pad(a, {-1, 0});
  EXPECT_FALSE(c.is_alias_of(a));
  EXPECT_TRUE(c.is_contiguous());
}

TEST(ShapePad, ConstantErrors) {
  Tensor a = Iota({2, 3});
  ExpectError([&] { pad(a, {1}); }, "pad", {"divisible by 2"});
  ExpectError([&] { pad(a, {1, 1, 1, 1, 1, 1}); }, "pad", {"too large"});
  ExpectError([&] { pad(a, {-4, 1}); }, "pad", {"(-4, 1)", "size 3", "dimension 1"});
  ExpectError([&] { pad(a, {2, -4}); }, "pad", {"(2, -4)"});
  ExpectError([&] { pad(a, {-2, -2}); }, "pad", {"(-2, -2)"});
  ExpectError(
      [&] {
        pad(a, {-3, 0, 1, 0});
      },
      "pad", {"input size 3", "-3 and 0", "check dimension 1"});
  ExpectError([] { pad(zeros({2, 0}), {0, 0, 1, 0}); }, "pad", {"input size 0", "dimension 1"});
  ExpectError(
      [&] {
        pad(a.to(kUInt8), {1, 1}, "constant", -1);
      },
      "pad", {"-1", "uint8", "overflow"});
  ExpectError([&] { pad(a.to(kInt8), {1, 1}, "constant", -128.5); }, "pad", {"int8"});
  ExpectError([&] { pad(a, {1, 1}, "constant", std::nan("")); }, "pad", {"int64"});
  ExpectError([&] { pad(a.to(kFloat16), {1, 1}, "constant", 65519); }, "pad", {"float16"});
  ExpectError([&] { pad(a.to(kFloat32), {1, 1}, "constant", 1e39); }, "pad", {"float32"});
  ExpectError([&] { pad(a, {1, 1}, "wrap"); }, "pad", {"unrecognised padding mode \"wrap\""});
  ExpectError([&] { pad(a, {1, 1}, "circular"); }, "pad", {"circular", "not supported"});
  ExpectError([&] { pad(a, {std::numeric_limits<int64_t>::min(), 0}); }, "pad", {"out of range"});
  // No fill happens when nothing is padded, so the value is not checked.
  EXPECT_EQ(Sizes(pad(a.to(kUInt8), {0, 0}, "constant", -1)), (I64{2, 3}));
}

TEST(ShapePad, Reflect) {
  Tensor a = Iota({2, 3}).to(kFloat32);
  Tensor r = pad(a, {2, 2}, "reflect");
  EXPECT_EQ(Floats(r), (F32{2, 1, 0, 1, 2, 1, 0, 5, 4, 3, 4, 5, 4, 3}));
  EXPECT_EQ(Floats(pad(a, {-1, 2}, "reflect")), (F32{1, 2, 1, 0, 4, 5, 4, 3}));
  Tensor x3 = Iota({2, 3, 4}).to(kFloat32);
  Tensor r1 = pad(x3, {1, 1}, "reflect");
  EXPECT_EQ(Sizes(r1), (I64{2, 3, 6}));
  EXPECT_EQ(Floats(r1[1][2]), (F32{21, 20, 21, 22, 23, 22}));
  Tensor r2 = pad(x3, {1, 1, 1, 1}, "reflect");
  EXPECT_EQ(Sizes(r2), (I64{2, 5, 6}));
  EXPECT_EQ(Floats(r2[0][0]), (F32{5, 4, 5, 6, 7, 6}));
  EXPECT_EQ(Floats(r2[0][4]), (F32{5, 4, 5, 6, 7, 6}));
  Tensor r3 = pad(x3.unsqueeze(0), {1, 1, 1, 1, 1, 1}, "reflect");
  EXPECT_EQ(Sizes(r3), (I64{1, 4, 5, 6}));
  EXPECT_EQ(Floats(r3[0][0][1]), Floats(r3[0][2][1]));
  // PyTorch lets a 2-D/3-D reflect pad empty some (not all) padded dims.
  EXPECT_EQ(Sizes(pad(x3, {1, 1, -3, 0}, "reflect")), (I64{2, 0, 6}));
  EXPECT_EQ(Sizes(pad(zeros({0, 3, 4}), {1, 1}, "reflect")), (I64{0, 3, 6}));
  EXPECT_EQ(Sizes(pad(zeros({0, 3}), {1, 1}, "reflect")), (I64{0, 5}));
  EXPECT_EQ(Sizes(pad(zeros({0, 3, 3}), {1, 1, 1, 1}, "reflect")), (I64{0, 5, 5}));
  // Any dtype (PyTorch's CPU kernels take only floating types).
  EXPECT_EQ(Longs(pad(Iota({1, 3}), {2, 0}, "reflect")), (I64{2, 1, 0, 1, 2}));
  Tensor t = Iota({3, 2}).to(kFloat64).t();  // [[0,2,4],[1,3,5]]
  EXPECT_EQ(t.to_vector<double>().size(), 6u);
  EXPECT_EQ(pad(t, {1, 1}, "reflect").to_vector<double>(),
            (std::vector<double>{2, 0, 2, 4, 2, 3, 1, 3, 5, 3}));
}

TEST(ShapePad, Replicate) {
  Tensor a = Iota({2, 3}).to(kFloat32);
  EXPECT_EQ(Floats(pad(a, {2, 3}, "replicate")),
            (F32{0, 0, 0, 1, 2, 2, 2, 2, 3, 3, 3, 4, 5, 5, 5, 5}));
  EXPECT_EQ(Floats(pad(a, {-1, 3}, "replicate")), (F32{1, 2, 2, 2, 2, 4, 5, 5, 5, 5}));
  EXPECT_EQ(Sizes(pad(a, {5, 5}, "replicate")), (I64{2, 13}));
  Tensor x3 = Iota({2, 3, 4}).to(kFloat32);
  Tensor r = pad(x3, {5, 1, 0, 2}, "replicate");
  EXPECT_EQ(Sizes(r), (I64{2, 5, 10}));
  EXPECT_EQ(Floats(r[1][4]), (F32{20, 20, 20, 20, 20, 20, 21, 22, 23, 23}));
  Tensor r3 = pad(x3.unsqueeze(0), {1, 1, 1, 1, 1, 1}, "replicate");
  EXPECT_EQ(Sizes(r3), (I64{1, 4, 5, 6}));
  EXPECT_EQ(r3[0][3][4][5].item<float>(), 23.0f);
  EXPECT_EQ(Sizes(pad(zeros({0, 3, 4}), {1, 1}, "replicate")), (I64{0, 3, 6}));
  Tensor e = tensor({1.0, 2.0}).expand({3, 2});
  EXPECT_EQ(Floats(pad(e, {1, 0}, "replicate")), (F32{1, 1, 2, 1, 1, 2, 1, 1, 2}));
  // Cropping past one edge reads from the other side of the window, as in PyTorch.
  EXPECT_EQ(Floats(pad(a, {-5, 4}, "replicate")), (F32{2, 2, 5, 5}));
  EXPECT_EQ(Floats(pad(a, {4, -5}, "replicate")), (F32{0, 0, 3, 3}));
  EXPECT_EQ(Floats(pad(a, {-4, 2}, "reflect")), (F32{0, 3}));
  EXPECT_EQ(Floats(pad(a, {2, -4}, "reflect")), (F32{2, 5}));
  EXPECT_EQ(Floats(pad(arange(5, kFloat32).reshape({1, 5}), {3, -1}, "reflect")),
            (F32{3, 2, 1, 0, 1, 2, 3}));
}

TEST(ShapePad, ReflectReplicateErrors) {
  Tensor a = Iota({2, 3}).to(kFloat32);
  Tensor x3 = Iota({2, 3, 4}).to(kFloat32);
  ExpectError(
      [&] {
        pad(a, {3, 0}, "reflect");
      },
      "pad",
      {"should be less than the corresponding input dimension",
       "padding (3, 0) at dimension 1 of input [2, 3]"});
  ExpectError([&] { pad(x3, {1, 1, 3, 1}, "reflect"); }, "pad", {"(3, 1) at dimension 1"});
  ExpectError([&] { pad(a, {-2, -1}, "reflect"); }, "pad", {"too small"});
  ExpectError([&] { pad(a, {-3, 0}, "replicate"); }, "pad", {"too small"});
  ExpectError(
      [&] {
        pad(a, {1, 1}, "reflect", 1.0);
      },
      "pad", {"\"reflect\" doesn't take in value argument"});
  ExpectError([&] { pad(a, {1, 1}, "replicate", 3.0); }, "pad", {"\"replicate\""});
  ExpectError([&] { pad(a[0], {1, 1}, "reflect"); }, "pad", {"2D, 3D, 4D, 5D"});
  ExpectError([&] { pad(a, {1, 1, 1, 1}, "reflect"); }, "pad", {"2D, 3D, 4D, 5D"});
  ExpectError([&] { pad(x3, {}, "replicate"); }, "pad", {"2D, 3D, 4D, 5D"});
  ExpectError([&] { pad(x3.unsqueeze(0), {1, 1}, "reflect"); }, "pad", {"2D, 3D, 4D, 5D"});
  ExpectError([] { pad(zeros({2, 0, 4}), {1, 1}, "reflect"); }, "pad", {"[2, 0, 4]"});
  ExpectError([] { pad(zeros({3, 0}), {1, 1}, "reflect"); }, "pad", {"[3, 0]"});
  ExpectError([] { pad(zeros({0, 3}), {1, 1}, "replicate"); }, "pad", {"[0, 3]"});
  ExpectError(
      [] {
        pad(zeros({0, 3, 3, 3}), {1, 1, 1, 1, 1, 1}, "reflect");
      },
      "pad", {"[0, 3, 3, 3]"});
  ExpectError([] { pad(zeros({0, 2, 3}), {1, 1, 1, 1}, "replicate"); }, "pad", {"[0, 2, 3]"});
}

// ======================================================================================
// one_hot

TEST(ShapeOneHot, ValuesAndShapes) {
  Tensor x = tensor({0, 2, 1});
  Tensor o = one_hot(x);
  EXPECT_EQ(o.dtype(), kInt64);
  EXPECT_EQ(Sizes(o), (I64{3, 3}));
  EXPECT_EQ(Longs(o), (I64{1, 0, 0, 0, 0, 1, 0, 1, 0}));
  EXPECT_EQ(Sizes(one_hot(x, 5)), (I64{3, 5}));
  EXPECT_EQ(Longs(one_hot(tensor(int64_t{2}))), (I64{0, 0, 1}));
  EXPECT_EQ(Longs(one_hot(tensor(int64_t{2}), 4)), (I64{0, 0, 1, 0}));
  Tensor m = one_hot(tensor({{1, 0}, {2, 3}}));
  EXPECT_EQ(Sizes(m), (I64{2, 2, 4}));
  EXPECT_EQ(Longs(m), (I64{0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
  EXPECT_EQ(Sizes(one_hot(zeros({0, 2}, kInt64), 3)), (I64{0, 2, 3}));
  Tensor t = tensor({{0, 1}, {2, 0}}).t();  // [[0,2],[1,0]]
  EXPECT_EQ(Longs(one_hot(t)), (I64{1, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0}));
}

TEST(ShapeOneHot, Errors) {
  Tensor x = tensor({0, 2, 1});
  ExpectError([&] { one_hot(x, 2); }, "one_hot", {"smaller than num_classes"});
  ExpectError([&] { one_hot(x, 0); }, "one_hot", {"smaller than num_classes"});
  ExpectError([&] { one_hot(x, -2); }, "one_hot", {"smaller than num_classes"});
  ExpectError([] { one_hot(tensor({0, -1})); }, "one_hot", {"non-negative"});
  ExpectError([] { one_hot(tensor({0, -1}), 3); }, "one_hot", {"non-negative"});
  ExpectError([&] { one_hot(x.to(kInt32)); }, "one_hot", {"index tensor", "int32"});
  ExpectError([] { one_hot(zeros({0, 2}, kInt64)); }, "one_hot", {"can not infer"});
  ExpectError([] { one_hot(zeros({0, 2}, kInt64), 0); }, "one_hot", {"can not infer"});
}

// ======================================================================================
// Cross-cutting

TEST(JoinShapeOps, OpScopeSeesEveryOpOnce) {
  std::vector<std::string> seen;
  const int id = add_op_observer([&](const OpEvent& e) {
    if (e.entering) seen.push_back(e.name);
  });
  Tensor a = Iota({2, 2});
  seen.clear();
  (void)cat({a, a});
  (void)stack({a, a});
  (void)a.flip({0});
  (void)a.roll({1});
  (void)a.repeat({1, 2});
  (void)a.tile({2});
  (void)a.repeat_interleave(2);
  (void)a.repeat_interleave(tensor({1, 1}), 0);
  (void)a.tril();
  (void)a.triu();
  (void)pad(a, {1, 1});
  (void)one_hot(a);
  remove_op_observer(id);
  auto count = [&](const std::string& n) { return std::count(seen.begin(), seen.end(), n); };
  for (const char* n :
       {"cat", "stack", "flip", "repeat", "tile", "tril", "triu", "pad", "one_hot"}) {
    EXPECT_GE(count(n), 1) << n;
  }
  EXPECT_GE(count("roll"), 1);
  EXPECT_GE(count("repeat_interleave"), 2);
}

TEST(JoinShapeOps, ResultsAreFreshContiguousTensors) {
  Tensor a = Iota({3, 4}).t();
  for (const Tensor& r :
       {a.flip({0}), a.roll({1}, {0}), a.repeat({1, 1}), a.tile({1}), a.repeat_interleave(1, 0),
        a.tril(), a.triu(), pad(a, {0, 0}), cat({a}), stack({a})}) {
    EXPECT_TRUE(r.is_contiguous());
    EXPECT_FALSE(r.is_alias_of(a));
    EXPECT_EQ(r._version(), 0u);
  }
}

TEST(JoinShapeOps, SameResultWithOneOrTwoThreads) {
  const int before = get_num_threads();
  Tensor x = randn({64, 300, 17});
  std::vector<std::vector<float>> results[2];
  for (int k = 0; k < 2; ++k) {
    set_num_threads(k + 1);
    results[k] = {Floats(x.flip({1, 2})),      Floats(x.roll({5, -3}, {0, 2})),
                  Floats(x.repeat({1, 2, 3})), Floats(x.repeat_interleave(3, 1)),
                  Floats(x.tril(2)),           Floats(pad(x, {3, 4, 5, 6}, "reflect")),
                  Floats(cat({x, x}, 2))};
  }
  set_num_threads(before);
  EXPECT_EQ(results[0], results[1]);
}

}  // namespace
}  // namespace ember
