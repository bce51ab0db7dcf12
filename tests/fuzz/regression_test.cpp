// Regressions found by hostile-input testing (issue 13 and the op fuzzer in this folder):
// each call here once crashed, threw something other than ember::Error, stalled, or
// named an internal helper instead of the op the user called.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "test_util.h"

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace fuzz_regression_test {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// The ember::Error fn throws (failing the test when it throws nothing or another type).
Error CaughtError(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected ember::Error, got " << typeid(e).name() << ": " << e.what();
    return Error("", "");
  }
  ADD_FAILURE() << "expected ember::Error, nothing was thrown";
  return Error("", "");
}

// ---- the error contract: one type, the op the user called, op()/message() fields ----

TEST(ErrorContract, BinaryOpsNameThemselvesNotBroadcast) {
  const Tensor a = ones({3, 5}), b = ones({3, 4});
  const Error e = CaughtError([&] { add(a, b); });
  const std::string detail =
      "the size of tensor a (5) must match the size of tensor b (4) at non-singleton dimension 1 (shapes [3, 5] and "
      "[3, 4])";
  EXPECT_EQ(std::string(e.what()), "[add] " + detail);
  EXPECT_EQ(e.op(), "add");
  EXPECT_EQ(e.message(), detail);
  EXPECT_EQ(CaughtError([&] { mul(a, b); }).op(), "mul");
  EXPECT_EQ(CaughtError([&] { (void)(a - b); }).op(), "sub");
}

TEST(ErrorContract, CompositeOpsNameThemselves) {
  namespace F = nn::functional;
  // cross_entropy: a class index out of range is found by an inner gather.
  const Error ce = CaughtError([] { F::cross_entropy(randn({2, 3}), tensor({0, 7}, TensorOptions(kInt64))); });
  EXPECT_EQ(ce.op(), "cross_entropy") << ce.what();
  const Error ce2 = CaughtError([] { F::cross_entropy(randn({2, 3}), tensor({0, 1, 2}, TensorOptions(kInt64))); });
  EXPECT_EQ(ce2.op(), "cross_entropy") << ce2.what();
  const Error sdpa = CaughtError([] { F::scaled_dot_product_attention(randn({2, 3, 4}), randn({2, 3, 5}), randn({2, 3, 4})); });
  EXPECT_EQ(sdpa.op(), "scaled_dot_product_attention") << sdpa.what();
  const Error ri = CaughtError([] { randint(5, 2, {3}); });
  EXPECT_EQ(ri.op(), "randint") << ri.what();
  const Error gn = CaughtError([] { F::group_norm(randn({2, 6, 4}), 4); });
  EXPECT_EQ(gn.op(), "group_norm") << gn.what();
}

TEST(ErrorContract, OutsideAnyOpTheTextIsKept) {
  const Error e("[helper] something went wrong");
  EXPECT_EQ(e.op(), "helper");
  EXPECT_EQ(e.message(), "something went wrong");
  const Error bare("no prefix here");
  EXPECT_EQ(bare.op(), "");
  EXPECT_EQ(bare.message(), "no prefix here");
  EXPECT_STREQ(Error("op", "msg").what(), "[op] msg");
}

TEST(ErrorContract, ConfigurationErrorsKeepTheirOwnName) {
  // Inside an op, an ordinary check takes the op's name; an OwnOp error (a bad
  // EMBER_CPU_CAPABILITY found by the first kernel call) keeps its own.
  OpScope scope("div");
  EXPECT_EQ(Error("[helper] detail").op(), "div");
  const Error own(Error::OwnOp{}, "cpu_capability", "EMBER_CPU_CAPABILITY=sse9 is not a known level");
  EXPECT_EQ(own.op(), "cpu_capability");
  EXPECT_STREQ(own.what(), "[cpu_capability] EMBER_CPU_CAPABILITY=sse9 is not a known level");
}

TEST(ErrorContract, AllocationFailureIsAnEmberErrorWithReadableSize) {
  const Error e = CaughtError([] { empty({int64_t{1} << 41}, TensorOptions(kFloat32)); });
  EXPECT_EQ(e.op(), "empty");
  EXPECT_NE(std::string(e.message()).find("cannot allocate 8.0 TiB"), std::string::npos) << e.what();
}

// ---- convolution: out-of-bounds im2col ----

TEST(ConvHardening, ZeroWidthInputWithPaddingDoesNotCrash) {
  // PyTorch 1.13 refuses an input with a zero spatial size; ember computes the (padded)
  // result, which is the bias-free sum over zeros: all zeros.
  const Tensor y = conv2d(randn({2, 3, 5, 0}), randn({4, 3, 4, 4}), {}, 1, 2);
  EXPECT_EQ(testing::Sizes(y), (testing::I64{2, 4, 6, 1}));
  EXPECT_EQ(y.abs().sum().item<float>(), 0.0f);
  const Tensor y1 = conv1d(randn({1, 3, 0}), randn({1, 3, 4}), {}, 1, 2);
  EXPECT_EQ(testing::Sizes(y1), (testing::I64{1, 1, 1}));
  EXPECT_EQ(y1.abs().sum().item<float>(), 0.0f);
}

TEST(ConvHardening, PaddingWiderThanInputWithDilationMatchesHandComputation) {
  // padding 6, dilation 5, kernel 4 over a 5x6 input: output 2x3. Each output reads the
  // taps (oh - 6 + 5i, ow - 6 + 5j); only taps inside the input count.
  manual_seed(3);
  const Tensor x = randn({1, 1, 5, 6}, TensorOptions(kFloat64));
  const Tensor w = randn({1, 1, 4, 4}, TensorOptions(kFloat64));
  const Tensor y = conv2d(x, w, {}, 1, 6, 5);
  ASSERT_EQ(testing::Sizes(y), (testing::I64{1, 1, 2, 3}));
  for (int64_t oh = 0; oh < 2; ++oh) {
    for (int64_t ow = 0; ow < 3; ++ow) {
      double want = 0;
      for (int64_t i = 0; i < 4; ++i) {
        for (int64_t j = 0; j < 4; ++j) {
          const int64_t ih = oh - 6 + 5 * i, iw = ow - 6 + 5 * j;
          if (ih >= 0 && ih < 5 && iw >= 0 && iw < 6) {
            want += x[0][0][ih][iw].item<double>() * w[0][0][i][j].item<double>();
          }
        }
      }
      EXPECT_NEAR(y[0][0][oh][ow].item<double>(), want, 1e-12) << oh << "," << ow;
    }
  }
  // The backward pass walks the same windows (col2im).
  Tensor xg = x.clone().requires_grad_();
  conv2d(xg, w, {}, 1, 6, 5).sum().backward();
  EXPECT_EQ(testing::Sizes(xg.grad()), (testing::I64{1, 1, 5, 6}));
}

TEST(ConvHardening, HugeStride) {
  const Tensor x = randn({3, 4, 4}), w = randn({1, 4, 1});
  const Tensor y = conv1d(x, w, {}, kMax, 2);
  ASSERT_EQ(testing::Sizes(y), (testing::I64{3, 1, 1}));
  EXPECT_EQ(y.abs().sum().item<float>(), 0.0f);  // the single tap lands in the padding
  const int64_t huge_pad = kMax;  // through IntArrayRef: the `int padding` overload would narrow it
  const Error e = CaughtError([&] { conv1d(randn({1, 1, 4}), randn({1, 1, 2}), {}, 1, IntArrayRef(huge_pad)); });
  EXPECT_EQ(e.op(), "conv1d");
  EXPECT_NE(std::string(e.message()).find("overflows int64"), std::string::npos) << e.what();
}

// Found by ember_fuzz (seed 1 under UBSan): the pooling output size overflowed int64.
TEST(PoolHardening, HugeKernelDilationAndPadding) {
  const Tensor x = randn({1, 1, 4, 4});
  const Error e = CaughtError([&] { max_pool2d(x, {kMax}, {}, 0, 4); });
  EXPECT_EQ(e.op(), "max_pool2d");
  EXPECT_NE(std::string(e.message()).find("span more than 2^31"), std::string::npos) << e.what();
  // A huge kernel with padding half its size once walked ~2^62 padded taps (a hang).
  EXPECT_EQ(CaughtError([&] { avg_pool2d(x, {kMax}, {kMax}, kMax / 2); }).op(), "avg_pool2d");
  EXPECT_EQ(CaughtError([&] { max_pool2d(x, {kMax}, {1}, kMax / 2, 1, true); }).op(), "max_pool2d");
  // Large but supported windows over padding are computed (the first tap is found directly).
  const Tensor y = max_pool2d(x, {int64_t{1} << 20}, {int64_t{1} << 20}, int64_t{1} << 19);
  EXPECT_EQ(testing::Sizes(y), (testing::I64{1, 1, 1, 1}));
  EXPECT_EQ(y.item<float>(), x.max().item<float>());
}

// ---- sizes that overflow or cannot be allocated ----

TEST(SizeHardening, ChunkAndSplit) {
  EXPECT_EQ(ones({3}).chunk(kMax, 0).size(), 3u);  // ceil(3 / kMax) = 1 per chunk
  const Error e = CaughtError([] { ones({0}).chunk(kMax, 0); });
  EXPECT_EQ(e.op(), "chunk");
  EXPECT_NE(std::string(e.message()).find("would return 9223372036854775807 tensors"), std::string::npos) << e.what();
  EXPECT_EQ(CaughtError([] { ones({0}).chunk(int64_t{1} << 40, 0); }).op(), "chunk");
  EXPECT_EQ(ones({0}).chunk(3, 0).size(), 3u);  // PyTorch: chunks empty tensors
  EXPECT_EQ(CaughtError([] { ones({1}).expand({int64_t{1} << 40}).unbind(0); }).op(), "unbind");
  EXPECT_EQ(CaughtError([] { ones({4}).split_with_sizes({kMax, kMax, 2}, 0); }).op(), "split_with_sizes");
}

TEST(SizeHardening, RandpermOfHugeN) {
  const Error e = CaughtError([] { randperm(int64_t{1} << 40); });
  EXPECT_EQ(e.op(), "randperm");
  EXPECT_NE(std::string(e.message()).find("cannot allocate 8.0 TiB"), std::string::npos) << e.what();
  EXPECT_EQ(testing::Longs(std::get<0>(randperm(5).sort())), (testing::I64{0, 1, 2, 3, 4}));
}

TEST(SizeHardening, ArangeOverTheWholeInt64Range) {
  const Error e = CaughtError([] { arange(kMin, kMax, TensorOptions(kInt64)); });
  EXPECT_EQ(e.op(), "arange");
  EXPECT_NE(std::string(e.message()).find("more than int64 can count"), std::string::npos) << e.what();
  EXPECT_EQ(testing::Longs(arange(kMax - 2, kMax, TensorOptions(kInt64))), (testing::I64{kMax - 2, kMax - 1}));
  EXPECT_EQ(testing::Longs(arange(kMin + 1, kMin, -1)), (testing::I64{kMin + 1}));
}

TEST(SizeHardening, RepeatInterleaveChecksTheOutputFirst) {
  EXPECT_EQ(CaughtError([] { ones({3}).repeat_interleave(kMax); }).op(), "repeat_interleave");
  EXPECT_EQ(CaughtError([] { ones({3}).repeat_interleave(int64_t{1} << 40); }).op(), "repeat_interleave");
  // An expanded input has 2^40 rows in no memory: refused before building a list per row.
  EXPECT_EQ(CaughtError([] { ones({1}).expand({int64_t{1} << 40}).repeat_interleave(2, 0); }).op(),
            "repeat_interleave");
  EXPECT_EQ(CaughtError([] { ones({3}).repeat_interleave(tensor(int64_t{-1}), 0); }).op(), "repeat_interleave");
  EXPECT_EQ(testing::Floats(tensor({1.0, 2.0}).repeat_interleave(2)), (testing::F32{1, 1, 2, 2}));
}

// Found by ember_fuzz (seed 2 under UBSan): a view's element count overflowed int64.
TEST(SizeHardening, ViewsWhoseElementCountOverflows) {
  const Error e = CaughtError([] { ones({1, 1}).expand({kMax, 5}); });
  EXPECT_EQ(e.op(), "expand");
  EXPECT_NE(std::string(e.message()).find("have more elements than fit in int64"), std::string::npos) << e.what();
  EXPECT_EQ(CaughtError([] { ones({1}).as_strided({int64_t{1} << 62, 4}, {0, 0}); }).op(), "as_strided");
  EXPECT_EQ(ones({1, 1}).expand({int64_t{1} << 40, 5}).numel(), int64_t{5} << 40);  // fits: still a view
}

TEST(SizeHardening, EmptyStridedSpanOverflow) {
  const Error e = CaughtError([] { empty_strided({3, 3}, {kMax, 1}); });
  EXPECT_EQ(e.op(), "empty_strided");
}

}  // namespace
}  // namespace ember

namespace ember {
namespace fuzz_regression_test {

// Found by ember_fuzz under UBSan: integer arithmetic overflowed (undefined behaviour in
// C++). PyTorch wraps around in two's complement; so does ember now.
TEST(IntegerOverflow, AddSubMulAndReductionsWrapAround) {
  const Tensor big = full({3}, kMax, TensorOptions(kInt64));
  const Tensor one = ones({3}, TensorOptions(kInt64));
  EXPECT_EQ((big + one).data_ptr<int64_t>()[2], kMin);
  EXPECT_EQ((full({3}, kMin, TensorOptions(kInt64)) - one).data_ptr<int64_t>()[0], kMax);
  EXPECT_EQ(add(big, one, 3).data_ptr<int64_t>()[1], kMin + 2);
  EXPECT_EQ((big * full({3}, int64_t{2}, TensorOptions(kInt64))).data_ptr<int64_t>()[0], int64_t{-2});
  EXPECT_EQ((full({3}, int32_t{2147483647}, TensorOptions(kInt32)) + ones({3}, TensorOptions(kInt32)))
                .data_ptr<int32_t>()[0],
            int32_t{-2147483647} - 1);
  EXPECT_EQ(full({2}, kMax, TensorOptions(kInt64)).sum().item<int64_t>(), int64_t{-2});
  EXPECT_EQ(full({2}, kMax, TensorOptions(kInt64)).prod().item<int64_t>(), int64_t{1});
  EXPECT_EQ(full({2}, kMax, TensorOptions(kInt64)).cumsum(0).data_ptr<int64_t>()[1], int64_t{-2});
}

// Found by ember_fuzz (seed 1860870707): the highest element as_strided reaches was
// computed with an overflowing product, wrapped negative and passed the storage check.
TEST(IntegerOverflow, AsStridedSpanOverflow) {
  const Error e = CaughtError([] { ones({4}).as_strided({3, 2}, {kMax / 2 + 1, 1}); });
  EXPECT_EQ(e.op(), "as_strided");
  EXPECT_NE(std::string(e.message()).find("reach past int64 elements"), std::string::npos) << e.what();
  EXPECT_EQ(CaughtError([] { ones({4}).as_strided({2}, {1}, kMax); }).op(), "as_strided");
  // ember_fuzz seed 20261124 (UBSan): an empty view may start anywhere, but its offset in
  // bytes must fit in int64 (data() multiplies it by the element size).
  const Error e2 = CaughtError([] { ones({4}, TensorOptions(kFloat16)).as_strided({0}, {1}, kMax); });
  EXPECT_NE(std::string(e2.message()).find("is beyond any address"), std::string::npos) << e2.what();
  EXPECT_EQ(ones({4}).as_strided({0}, {1}, 1000).numel(), 0);  // far but addressable: allowed
}

// Found by ember_fuzz (seed 20261124, ASan): with dilation 5 and padding 1 on a height-2
// input, a window's taps (-1 and 4) all fall outside the input. Its output is -inf (as in
// PyTorch) and its index was one past the plane, so the backward wrote out of bounds; the
// index is now -1 and the backward and double backward skip it.
TEST(PoolBounds, DilatedWindowWithNoInputElement) {
  const Tensor x = randn({4, 2, 3}).requires_grad_();
  const auto [y, idx] = max_pool2d_with_indices(x, {2, 2}, {3, 3}, {1, 1}, {5, 3}, /*ceil_mode=*/true);
  ASSERT_EQ(y.sizes(), IntArrayRef({4, 1, 2}));
  const Tensor yc = y.detach().contiguous(), ic = idx.contiguous();
  for (int64_t i = 0; i < yc.numel(); ++i) {
    EXPECT_EQ(yc.data_ptr<float>()[i], -std::numeric_limits<float>::infinity()) << i;
    EXPECT_EQ(ic.data_ptr<int64_t>()[i], -1) << i;
  }
  guards::set_enabled(guards::Guard::NonFiniteLoss, false);  // an empty window's -inf is the point here
  y.sum().backward();
  guards::set_enabled(guards::Guard::NonFiniteLoss, true);
  EXPECT_TRUE(x.grad().equal(zeros({4, 2, 3})));
  // Double backward: the gradient's own backward gathers at the indices.
  const Tensor xg = randn({4, 2, 3}).requires_grad_();
  const Tensor v = ones({4, 1, 2}).requires_grad_();
  const Tensor yg = max_pool2d(xg, {2, 2}, {3, 3}, {1, 1}, {5, 3}, true);
  const Tensor g = autograd::grad({yg}, {xg}, {v}, std::nullopt, /*create_graph=*/true)[0];
  EXPECT_TRUE(g.equal(zeros({4, 2, 3})));
  const Tensor gv = autograd::grad({(g * randn({4, 2, 3})).sum()}, {v})[0];
  EXPECT_TRUE(gv.equal(zeros({4, 1, 2})));
}

// Found by ember_fuzz (seed 20261124 call 7178367, a 5-s hang under ASan): an adaptive
// output of 2^40 x 0 has no elements, but the backward walked its 2^40 rows.
TEST(PoolBounds, AdaptiveOutputWithNoElementsSendsNoGradient) {
  const Tensor x = randn({4, 1, 3}).to(kBFloat16).requires_grad_();
  const Tensor y = adaptive_avg_pool2d(x, {int64_t{1} << 40, 0});
  EXPECT_EQ(y.sizes(), IntArrayRef({4, int64_t{1} << 40, 0}));
  y.sum().backward();
  EXPECT_TRUE(x.grad().equal(zeros({4, 1, 3}).to(kBFloat16)));
}

// With ceil_mode an odd size adds a last 2x2 window that hangs over the edge: the 2x2 fast
// path must not take it.
TEST(PoolBounds, CeilModeTwoByTwoWindowsOverTheEdge) {
  const Tensor x = arange(25, TensorOptions(kFloat32)).view({1, 1, 5, 5});
  const auto [y, idx] = max_pool2d_with_indices(x, {2, 2}, {2, 2}, {0, 0}, {1, 1}, /*ceil_mode=*/true);
  ASSERT_EQ(y.sizes(), IntArrayRef({1, 1, 3, 3}));
  // Each window's maximum is its bottom-right element inside the 5x5 plane.
  const std::vector<float> want_y{6, 8, 9, 16, 18, 19, 21, 23, 24};
  const std::vector<int64_t> want_idx{6, 8, 9, 16, 18, 19, 21, 23, 24};
  const Tensor yc = y.contiguous(), ic = idx.contiguous();
  for (size_t i = 0; i < want_y.size(); ++i) {
    EXPECT_EQ(yc.data_ptr<float>()[i], want_y[i]) << i;
    EXPECT_EQ(ic.data_ptr<int64_t>()[i], want_idx[i]) << i;
  }
  const Tensor xr = x.detach().requires_grad_();
  max_pool2d(xr, {2, 2}, {2, 2}, {0, 0}, {1, 1}, true).sum().backward();
  EXPECT_EQ(xr.grad().sum().item<float>(), 9.0f);
  EXPECT_EQ(xr.grad().view({25}).data_ptr<float>()[24], 1.0f);
}

// Found by ember_fuzz (seed 20261124, UBSan): zero channels admit any num_groups, and
// N * num_groups overflowed while shaping the rows.
TEST(IntegerOverflow, GroupNormOfZeroChannelsWithHugeGroupCount) {
  namespace F = nn::functional;
  const Tensor x = randn({5, 0, 3});
  const Tensor y = F::group_norm(x, int64_t{1} << 62);
  EXPECT_EQ(y.sizes(), IntArrayRef({5, 0, 3}));
  EXPECT_EQ(F::group_norm(x, 7, ones({0}), zeros({0})).sizes(), IntArrayRef({5, 0, 3}));
  EXPECT_EQ(CaughtError([] { F::group_norm(randn({5, 6, 3}), int64_t{1} << 62); }).op(), "group_norm");
}

TEST(IntegerOverflow, SliceAndUnfoldWithHugeSteps) {
  const Tensor t = arange(10);
  const Tensor s = t.slice(0, 0, 10, kMax);  // one element: the stride is never used
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.item<int64_t>(), 0);
  EXPECT_EQ(t.slice(0, 3, 10, 4).numel(), 2);
  const Tensor u = arange(40).view({10, 4}).unfold(0, 2, kMax / 2 + 1);  // 4 * step overflows
  EXPECT_EQ(u.size(0), 1);
  EXPECT_EQ(u.size(1), 4);
  EXPECT_EQ(u.size(2), 2);
  EXPECT_EQ(u.select(0, 0).select(0, 1).data_ptr<int64_t>()[0], 1);
}

}  // namespace
}  // namespace ember
