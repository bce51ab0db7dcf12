// View ops and the storage model: which ops share storage (and with which sizes,
// strides and offsets), which copy, and the errors they raise. Expected strides and
// values were checked against PyTorch 1.13.

#include <gtest/gtest.h>

#include "test_util.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ember/ember.h>

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace ops_view_test {

using namespace testing;  // I64, F32, Sizes, Longs, Floats, Doubles, ExpectError (test_util.h)

Tensor Arange(int64_t n) { return arange(n); }

// ---------------------------------------------------------------------------------------
// The storage model

TEST(ViewOpsStorageModel, ReshapeTransposeAndViewOfTranspose) {
  Tensor a = Arange(12).reshape({3, 4});
  EXPECT_EQ(Sizes(a), (I64{3, 4}));
  EXPECT_EQ(Strides(a), (I64{4, 1}));
  EXPECT_TRUE(a.is_contiguous());
  EXPECT_EQ(a.storage_offset(), 0);

  Tensor t = a.t();
  EXPECT_EQ(Sizes(t), (I64{4, 3}));
  EXPECT_EQ(Strides(t), (I64{1, 4}));
  EXPECT_TRUE(t.is_alias_of(a));
  EXPECT_FALSE(t.is_same(a));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.data_ptr(), a.data_ptr());

  ExpectError([&] { (void)t.view({12}); }, {"[12]", "[4, 3]", "[1, 4]", "reshape"});

  Tensor r = t.reshape({12});
  EXPECT_FALSE(r.is_alias_of(a));
  EXPECT_TRUE(r.is_contiguous());
  EXPECT_EQ(Sizes(r), (I64{12}));
  EXPECT_EQ(Longs(r), (I64{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
}

TEST(ViewOpsStorageModel, WritesThroughViewsAreVisibleAndBumpSharedVersion) {
  Tensor a = zeros({3, 4});
  Tensor col = a.select(1, 2);
  Tensor row = a[1];
  const uint32_t v0 = a._version();
  EXPECT_EQ(col._version(), v0);

  col.fill_(7.0);
  EXPECT_EQ(a._version(), v0 + 1);
  EXPECT_EQ(col._version(), v0 + 1);
  EXPECT_EQ(row._version(), v0 + 1);
  EXPECT_EQ(Floats(a), (std::vector<float>{0, 0, 7, 0, 0, 0, 7, 0, 0, 0, 7, 0}));

  row.copy_(ones({4}));
  EXPECT_EQ(a._version(), v0 + 2);
  EXPECT_EQ(col._version(), v0 + 2);
  EXPECT_EQ(Floats(a), (std::vector<float>{0, 0, 7, 0, 1, 1, 1, 1, 0, 0, 7, 0}));

  a.t().zero_();
  EXPECT_EQ(row._version(), v0 + 3);
  EXPECT_EQ(Floats(a), std::vector<float>(12, 0.0f));

  // A clone has its own storage and counter.
  Tensor c = a.clone();
  const uint32_t cv = c._version();
  a.fill_(1.0);
  EXPECT_EQ(c._version(), cv);
  EXPECT_EQ(Floats(c), std::vector<float>(12, 0.0f));
}

TEST(ViewOpsStorageModel, ViewsKeepTheStorageAlive) {
  const int64_t before = memory_allocated();
  {
    Tensor v;
    {
      Tensor a = Arange(10);
      v = a.slice(0, 5).view({-1});
      EXPECT_EQ(a.storage().use_count(), 2u);
      EXPECT_EQ(memory_allocated(), before + 80);
    }
    // The base handle is gone; the view keeps the storage and, like PyTorch's _base,
    // the base tensor itself alive (autograd needs it for in-place ops on the view).
    EXPECT_EQ(v.storage().use_count(), 2u);
    ASSERT_NE(v.impl()->view_base(), nullptr);
    EXPECT_EQ(v.impl()->view_base()->numel(), 10);
    EXPECT_EQ(memory_allocated(), before + 80);
    EXPECT_EQ(Longs(v), (I64{5, 6, 7, 8, 9}));
    Tensor copy = v;  // copying a handle shares the TensorImpl
    EXPECT_TRUE(copy.is_same(v));
    EXPECT_EQ(v.use_count(), 2u);
  }
  EXPECT_EQ(memory_allocated(), before);
}

TEST(ViewOpsStorageModel, UndefinedTensorThrowsInsteadOfCrashing) {
  Tensor u;
  EXPECT_FALSE(u.defined());
  ExpectError([&] { (void)u.sizes(); }, {"undefined"});
  ExpectError([&] { (void)u.view({1}); }, {"undefined"});
  ExpectError([&] { (void)u.numel(); }, {"undefined"});
  ExpectError([&] { (void)u.dim(); }, {"undefined"});
  ExpectError([&] { (void)u.t(); }, {"undefined"});
  ExpectError([&] { (void)u.reshape({1}); }, {"undefined"});
  ExpectError([&] { (void)u.contiguous(); }, {"undefined"});
  ExpectError([&] { (void)u.clone(); }, {"undefined"});
  ExpectError([&] { (void)u.size(0); }, {"undefined"});
  ExpectError([&] { u.fill_(1); }, {"undefined"});
  ExpectError([&] { ones({2}).copy_(u); }, {"undefined"});
}

TEST(ViewOpsStorageModel, DimensionOutOfRangeErrors) {
  Tensor a = Arange(24).reshape({2, 3, 4});
  ExpectError([&] { (void)a.transpose(0, 3); }, {"dimension out of range", "3"});
  ExpectError([&] { (void)a.transpose(-4, 0); }, {"dimension out of range"});
  ExpectError([&] { (void)a.select(3, 0); }, {"dimension out of range"});
  ExpectError([&] { (void)a.squeeze(5); }, {"dimension out of range"});
  ExpectError([&] { (void)a.unsqueeze(4); }, {"dimension out of range"});
  ExpectError([&] { (void)a.unsqueeze(-5); }, {"dimension out of range"});
  ExpectError([&] { (void)a.size(3); }, {"dimension out of range"});
  ExpectError([&] { (void)a.stride(-4); }, {"dimension out of range"});
  ExpectError([&] { (void)a.slice(3); }, {"dimension out of range"});
  ExpectError([&] { (void)a.narrow(-4, 0, 1); }, {"dimension out of range"});
  ExpectError([&] { (void)a.flatten(0, 3); }, {"dimension out of range"});
  ExpectError([&] { (void)a.movedim(0, 3); }, {"dimension out of range"});
  ExpectError([&] { (void)a.permute({0, 1, 3}); }, {"dimension out of range"});
  ExpectError([&] { (void)a.split(2, 3); }, {"dimension out of range"});
  ExpectError([&] { (void)a.unbind(-4); }, {"dimension out of range"});
  ExpectError([&] { (void)a.diagonal(0, 0, 3); }, {"dimension out of range"});
  // The message names the valid range as PyTorch does.
  ExpectError([&] { (void)Arange(6).reshape({2, 3}).transpose(0, 2); },
              {"expected to be in range of [-2, 1], but got 2"});
  // Negative dims wrap.
  EXPECT_EQ(a.size(-1), 4);
  EXPECT_EQ(a.stride(-3), 12);
}

// ---------------------------------------------------------------------------------------
// view / reshape / as_strided

TEST(ViewOpsView, InfersMinusOne) {
  Tensor a = Arange(12);
  Tensor v = a.view({-1, 6});
  EXPECT_EQ(Sizes(v), (I64{2, 6}));
  EXPECT_EQ(Strides(v), (I64{6, 1}));
  EXPECT_TRUE(v.is_alias_of(a));
  EXPECT_EQ(Sizes(a.view({2, -1, 2})), (I64{2, 3, 2}));
  EXPECT_EQ(Strides(a.view({2, -1, 2})), (I64{6, 2, 1}));
  EXPECT_EQ(Sizes(a.view({-1})), (I64{12}));
  EXPECT_EQ(Sizes(a.view_as(zeros({4, 3}))), (I64{4, 3}));
  EXPECT_EQ(Sizes(zeros({0, 3}).view({-1})), (I64{0}));
  EXPECT_EQ(Sizes(zeros({0, 3}).view({3, 0, 2})), (I64{3, 0, 2}));
}

TEST(ViewOpsView, InvalidShapes) {
  Tensor a = Arange(12);
  ExpectError([&] { (void)a.view({-1, -1}); }, {"only one dimension can be inferred"});
  ExpectError([&] { (void)a.view({5}); }, {"[5]", "invalid for input of size 12"});
  ExpectError([&] { (void)a.view({5, -1}); }, {"invalid for input of size 12"});
  ExpectError([&] { (void)a.view({-2, 6}); }, {"-2"});
  ExpectError([&] { (void)zeros({0, 3}).view({-1, 0}); }, {"invalid for input of size 0"});
  ExpectError([&] { (void)a.reshape({7}); }, {"invalid for input of size 12"});
}

TEST(ViewOpsView, NonContiguousButViewable) {
  // (2,3,4) transposed to (3,2,4) with strides (4,12,1): the last dim can still be split.
  Tensor x = Arange(24).reshape({2, 3, 4}).transpose(0, 1);
  EXPECT_EQ(Strides(x), (I64{4, 12, 1}));
  Tensor v = x.view({3, 2, 2, 2});
  EXPECT_EQ(Strides(v), (I64{4, 12, 2, 1}));
  EXPECT_TRUE(v.is_alias_of(x));
  EXPECT_EQ(Longs(v), Longs(x));
  ExpectError([&] { (void)x.view({3, 8}); }, {"[3, 8]", "[3, 2, 4]", "[4, 12, 1]", "reshape"});

  // Size-1 dims never block a view.
  Tensor y = Arange(6).view({2, 1, 3}).permute({1, 0, 2});
  EXPECT_EQ(Sizes(y.view({6})), (I64{6}));
  EXPECT_TRUE(y.view({6}).is_alias_of(y));
}

TEST(ViewOpsView, ZeroDimTensors) {
  Tensor s = scalar_tensor(5.0);
  EXPECT_EQ(s.dim(), 0);
  Tensor v = s.view({1, 1});
  EXPECT_EQ(Sizes(v), (I64{1, 1}));
  EXPECT_EQ(Strides(v), (I64{1, 1}));
  EXPECT_TRUE(v.is_alias_of(s));
  Tensor back = Arange(1).view({});
  EXPECT_EQ(back.dim(), 0);
  EXPECT_EQ(back.numel(), 1);
  EXPECT_EQ(back.item<int64_t>(), 0);
  EXPECT_EQ(Sizes(s.reshape({-1})), (I64{1}));
}

TEST(ViewOpsReshape, ViewWhenPossibleCopyOtherwise) {
  Tensor a = Arange(24);
  Tensor r = a.reshape({2, 3, 4});
  EXPECT_TRUE(r.is_alias_of(a));
  EXPECT_EQ(Strides(r), (I64{12, 4, 1}));

  Tensor x = r.transpose(0, 1);
  Tensor viewable = x.reshape({3, 2, 2, 2});
  EXPECT_TRUE(viewable.is_alias_of(a));
  EXPECT_EQ(Strides(viewable), (I64{4, 12, 2, 1}));

  Tensor copied = x.reshape({3, 8});
  EXPECT_FALSE(copied.is_alias_of(a));
  EXPECT_TRUE(copied.is_contiguous());
  EXPECT_EQ(Longs(copied), Longs(x));
  EXPECT_EQ(Longs(copied.select(0, 1)), (I64{4, 5, 6, 7, 16, 17, 18, 19}));

  Tensor other = zeros({6, 4});
  EXPECT_EQ(Sizes(a.reshape_as(other)), (I64{6, 4}));
  EXPECT_EQ(Sizes(reshape(a, {4, -1})), (I64{4, 6}));
}

TEST(ViewOpsAsStrided, ViewsStorageWithGivenGeometry) {
  Tensor a = Arange(6);
  Tensor s = a.as_strided({2, 2}, {1, 2}, 1);
  EXPECT_TRUE(s.is_alias_of(a));
  EXPECT_EQ(Sizes(s), (I64{2, 2}));
  EXPECT_EQ(Strides(s), (I64{1, 2}));
  EXPECT_EQ(s.storage_offset(), 1);
  EXPECT_EQ(Longs(s), (I64{1, 3, 2, 4}));

  // Overlapping windows are allowed for reading.
  Tensor w = as_strided(a, {3, 3}, {1, 1});
  EXPECT_EQ(Longs(w), (I64{0, 1, 2, 1, 2, 3, 2, 3, 4}));

  // The offset defaults to the tensor's own.
  Tensor tail = a.slice(0, 2);
  EXPECT_EQ(tail.as_strided({2}, {1}).storage_offset(), 2);
  EXPECT_EQ(Longs(tail.as_strided({2}, {1})), (I64{2, 3}));
}

TEST(ViewOpsAsStrided, Errors) {
  Tensor a = Arange(6);
  // Needs elements 0..6 of a 6-element storage.
  ExpectError([&] { (void)a.as_strided({3, 3}, {2, 1}); }, {"7", "6", "storage"});
  ExpectError([&] { (void)a.as_strided({2}, {1}, 5); }, {"storage"});
  ExpectError([&] { (void)a.as_strided({2, 2}, {1}); }, {"strides"});
  ExpectError([&] { (void)a.as_strided({2}, {1}, -1); }, {"offset"});
  // Empty results never read memory.
  EXPECT_EQ(a.as_strided({0, 100}, {100, 1}, 6).numel(), 0);
  // The last element exactly fits.
  EXPECT_EQ(Longs(a.as_strided({1}, {1}, 5)), (I64{5}));
}

// ---------------------------------------------------------------------------------------
// t / transpose / permute / movedim

TEST(ViewOpsTranspose, TOnLowDimsAndErrors) {
  Tensor v = Arange(3);
  Tensor vt = v.t();
  EXPECT_EQ(Sizes(vt), (I64{3}));
  EXPECT_TRUE(vt.is_alias_of(v));
  Tensor s = scalar_tensor(1.0);
  EXPECT_EQ(s.t().dim(), 0);
  ExpectError([&] { (void)zeros({2, 3, 4}).t(); }, {"<= 2 dimensions", "3D"});
}

TEST(ViewOpsTranspose, SwapsSizesAndStrides) {
  Tensor a = Arange(24).reshape({2, 3, 4});
  Tensor t = a.transpose(0, 2);
  EXPECT_EQ(Sizes(t), (I64{4, 3, 2}));
  EXPECT_EQ(Strides(t), (I64{1, 4, 12}));
  EXPECT_TRUE(t.is_alias_of(a));
  Tensor tn = a.transpose(-1, -3);
  EXPECT_EQ(Strides(tn), (I64{1, 4, 12}));
  // Element [k][j][i] of the transpose is element [i][j][k] of a.
  EXPECT_EQ(t.select(0, 3).select(0, 1).select(0, 1).item<int64_t>(), 12 + 4 + 3);
  Tensor same = a.transpose(1, 1);
  EXPECT_EQ(Strides(same), (I64{12, 4, 1}));
  EXPECT_EQ(Strides(transpose(a, 0, 1)), (I64{4, 12, 1}));
}

TEST(ViewOpsPermute, ReordersDims) {
  Tensor a = Arange(24).reshape({2, 3, 4});
  Tensor p = a.permute({2, 0, 1});
  EXPECT_EQ(Sizes(p), (I64{4, 2, 3}));
  EXPECT_EQ(Strides(p), (I64{1, 12, 4}));
  EXPECT_TRUE(p.is_alias_of(a));
  EXPECT_EQ(Strides(a.permute({-1, 0, 1})), (I64{1, 12, 4}));
  EXPECT_EQ(Longs(permute(a, {2, 0, 1}).select(0, 1).select(0, 1)), (I64{13, 17, 21}));
  ExpectError([&] { (void)a.permute({0, 1}); }, {"[0, 1]", "3"});
  ExpectError([&] { (void)a.permute({0, 1, 2, 3}); }, {"permute"});
  ExpectError([&] { (void)a.permute({0, 0, 1}); }, {"repeated dim"});
  ExpectError([&] { (void)a.permute({0, -3, 1}); }, {"repeated dim"});
}

TEST(ViewOpsMovedim, MovesOneDim) {
  Tensor a = Arange(24).reshape({2, 3, 4});
  Tensor m = a.movedim(0, 2);
  EXPECT_EQ(Sizes(m), (I64{3, 4, 2}));
  EXPECT_EQ(Strides(m), (I64{4, 1, 12}));
  Tensor m2 = movedim(a, -1, 0);
  EXPECT_EQ(Sizes(m2), (I64{4, 2, 3}));
  EXPECT_EQ(Strides(m2), (I64{1, 12, 4}));
  EXPECT_TRUE(m2.is_alias_of(a));
  EXPECT_EQ(Strides(a.movedim(1, 1)), (I64{12, 4, 1}));
}

// ---------------------------------------------------------------------------------------
// expand / expand_as / broadcast_to

TEST(ViewOpsExpand, SizeOneDimsGetStrideZero) {
  Tensor col = Arange(3).view({3, 1});
  Tensor e = col.expand({-1, 4});
  EXPECT_EQ(Sizes(e), (I64{3, 4}));
  EXPECT_EQ(Strides(e), (I64{1, 0}));
  EXPECT_TRUE(e.is_alias_of(col));
  EXPECT_FALSE(e.is_contiguous());
  EXPECT_EQ(Longs(e), (I64{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2}));

  Tensor row = Arange(3);
  Tensor lead = row.expand({2, 3});
  EXPECT_EQ(Strides(lead), (I64{0, 1}));
  EXPECT_EQ(Longs(lead), (I64{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(Strides(row.expand({2, 1, 3})), (I64{0, 0, 1}));
  EXPECT_EQ(Sizes(row.expand({2, -1})), (I64{2, 3}));
  EXPECT_EQ(Sizes(row.expand({0, 3})), (I64{0, 3}));

  Tensor s = scalar_tensor(5.0);
  Tensor se = s.expand({2, 3});
  EXPECT_EQ(Strides(se), (I64{0, 0}));
  EXPECT_EQ(Floats(se), std::vector<float>(6, 5.0f));

  EXPECT_EQ(Sizes(col.expand_as(zeros({2, 3, 5}))), (I64{2, 3, 5}));
  EXPECT_EQ(Strides(col.expand_as(zeros({2, 3, 5}))), (I64{0, 1, 0}));
  EXPECT_EQ(Strides(col.broadcast_to({3, 2})), (I64{1, 0}));
  EXPECT_EQ(Strides(broadcast_to(row, {4, 3})), (I64{0, 1}));
}

TEST(ViewOpsExpand, ViewOfExpandedNeedsACopy) {
  Tensor e = Arange(3).expand({2, 3});
  ExpectError([&] { (void)e.view({6}); }, {"[2, 3]", "[0, 1]", "reshape"});
  Tensor r = e.reshape({6});
  EXPECT_FALSE(r.is_alias_of(e));
  EXPECT_EQ(Longs(r), (I64{0, 1, 2, 0, 1, 2}));
  // Adding or removing size-1 dims is still a view.
  Tensor u = e.view({2, 1, 3});
  EXPECT_TRUE(u.is_alias_of(e));
  EXPECT_EQ(Strides(u).back(), 1);
  EXPECT_EQ(Strides(u).front(), 0);
}

TEST(ViewOpsExpand, Errors) {
  Tensor row = Arange(3);
  ExpectError([&] { (void)row.expand({2, 4}); },
              {"The expanded size of the tensor (4) must match the existing size (3) at "
               "non-singleton dimension 1",
               "[2, 4]", "[3]"});
  ExpectError([&] { (void)row.expand({-1, 3}); }, {"-1"});
  ExpectError([&] { (void)zeros({2, 3}).expand({3}); }, {"number of sizes"});
  ExpectError([&] { (void)row.broadcast_to({3, 2}); }, {"existing size (3)"});
}

TEST(ViewOpsExpand, WritingIntoAnExpandedTensorIsRefused) {
  Tensor e = zeros({3, 1}).expand({3, 4});
  ExpectError([&] { e.fill_(1.0); }, {"single memory location"});
  ExpectError([&] { e.copy_(ones({3, 4})); }, {"single memory location"});
}

// ---------------------------------------------------------------------------------------
// squeeze / unsqueeze / flatten / unflatten

TEST(ViewOpsSqueeze, AllAndOneDim) {
  Tensor a = Arange(6).reshape({1, 2, 1, 3});
  EXPECT_EQ(Strides(a), (I64{6, 3, 3, 1}));
  Tensor s = a.squeeze();
  EXPECT_EQ(Sizes(s), (I64{2, 3}));
  EXPECT_EQ(Strides(s), (I64{3, 1}));
  EXPECT_TRUE(s.is_alias_of(a));
  Tensor s2 = a.squeeze(-2);
  EXPECT_EQ(Sizes(s2), (I64{1, 2, 3}));
  EXPECT_EQ(Strides(s2), (I64{6, 3, 1}));
  EXPECT_EQ(Sizes(squeeze(a, 0)), (I64{2, 1, 3}));
  // Squeezing a dim that is not 1 changes nothing.
  EXPECT_EQ(Sizes(a.squeeze(1)), (I64{1, 2, 1, 3}));
  EXPECT_TRUE(a.squeeze(1).is_alias_of(a));
  // All-ones shape squeezes to 0-dim.
  EXPECT_EQ(ones({1, 1}).squeeze().dim(), 0);
  EXPECT_EQ(scalar_tensor(1.0).squeeze(0).dim(), 0);
  EXPECT_EQ(Sizes(squeeze(a)), (I64{2, 3}));
}

TEST(ViewOpsSqueeze, Unsqueeze) {
  Tensor a = Arange(24).reshape({2, 3, 4});
  EXPECT_EQ(Sizes(a.unsqueeze(0)), (I64{1, 2, 3, 4}));
  EXPECT_EQ(Strides(a.unsqueeze(0)), (I64{24, 12, 4, 1}));
  EXPECT_EQ(Strides(a.unsqueeze(1)), (I64{12, 12, 4, 1}));
  EXPECT_EQ(Sizes(a.unsqueeze(3)), (I64{2, 3, 4, 1}));
  EXPECT_EQ(Strides(a.unsqueeze(3)), (I64{12, 4, 1, 1}));
  EXPECT_EQ(Sizes(a.unsqueeze(-1)), (I64{2, 3, 4, 1}));
  EXPECT_EQ(Sizes(unsqueeze(a, -4)), (I64{1, 2, 3, 4}));
  EXPECT_TRUE(a.unsqueeze(2).is_alias_of(a));
  Tensor s = scalar_tensor(3.0).unsqueeze(0);
  EXPECT_EQ(Sizes(s), (I64{1}));
  EXPECT_EQ(Strides(s), (I64{1}));
}

TEST(ViewOpsFlatten, ViewOrCopy) {
  Tensor a = Arange(24).reshape({2, 3, 4});
  Tensor f = a.flatten();
  EXPECT_EQ(Sizes(f), (I64{24}));
  EXPECT_TRUE(f.is_alias_of(a));
  Tensor f1 = a.flatten(1);
  EXPECT_EQ(Sizes(f1), (I64{2, 12}));
  EXPECT_EQ(Strides(f1), (I64{12, 1}));
  EXPECT_EQ(Sizes(flatten(a, 0, 1)), (I64{6, 4}));
  EXPECT_EQ(Sizes(a.flatten(-2, -1)), (I64{2, 12}));
  EXPECT_EQ(Sizes(a.flatten(1, 1)), (I64{2, 3, 4}));

  Tensor t = a.transpose(0, 2);
  Tensor tf = t.flatten();
  EXPECT_FALSE(tf.is_alias_of(a));
  EXPECT_EQ(Longs(tf), (I64{0, 12, 4, 16, 8, 20, 1, 13, 5, 17, 9, 21,
                            2, 14, 6, 18, 10, 22, 3, 15, 7, 19, 11, 23}));
  ExpectError([&] { (void)a.flatten(2, 1); }, {"start_dim"});
  Tensor s = scalar_tensor(4.0).flatten();
  EXPECT_EQ(Sizes(s), (I64{1}));
}

TEST(ViewOpsFlatten, Unflatten) {
  Tensor a = Arange(12).reshape({3, 4});
  Tensor u = a.unflatten(1, {2, -1});
  EXPECT_EQ(Sizes(u), (I64{3, 2, 2}));
  EXPECT_EQ(Strides(u), (I64{4, 2, 1}));
  EXPECT_TRUE(u.is_alias_of(a));
  EXPECT_EQ(Sizes(a.unflatten(-2, {1, 3})), (I64{1, 3, 4}));
  ExpectError([&] { (void)a.unflatten(1, {3, 2}); }, {"invalid for input of size 4"});
  ExpectError([&] { (void)a.unflatten(1, {}); }, {"non-empty"});
}

// ---------------------------------------------------------------------------------------
// narrow / slice / select

TEST(ViewOpsNarrow, StartAndLength) {
  Tensor a = Arange(10);
  Tensor n = a.narrow(0, 1, 2);
  EXPECT_EQ(Longs(n), (I64{1, 2}));
  EXPECT_EQ(n.storage_offset(), 1);
  EXPECT_TRUE(n.is_alias_of(a));

  Tensor m = Arange(12).reshape({3, 4});
  Tensor cols = narrow(m, 1, -2, 2);
  EXPECT_EQ(Longs(cols), (I64{2, 3, 6, 7, 10, 11}));
  EXPECT_EQ(cols.storage_offset(), 2);
  EXPECT_EQ(Strides(cols), (I64{4, 1}));
  EXPECT_EQ(a.narrow(0, 10, 0).numel(), 0);

  ExpectError([&] { (void)a.narrow(0, 8, 3); }, {"exceeds dimension size"});
  ExpectError([&] { (void)a.narrow(0, 11, 0); }, {"out of range"});
  ExpectError([&] { (void)a.narrow(0, 0, -1); }, {"length"});
}

TEST(ViewOpsSlice, PythonSemantics) {
  Tensor y = Arange(10);
  EXPECT_EQ(Longs(y.slice(0, -3)), (I64{7, 8, 9}));
  EXPECT_EQ(Longs(y.slice(0, -100, 3)), (I64{0, 1, 2}));
  EXPECT_EQ(Longs(y.slice(0, 8, 100)), (I64{8, 9}));
  EXPECT_EQ(Longs(y.slice(0, std::nullopt, -8)), (I64{0, 1}));
  Tensor empty_slice = y.slice(0, 5, 2);
  EXPECT_EQ(Sizes(empty_slice), (I64{0}));
  EXPECT_EQ(y.slice(0, 100, 200).numel(), 0);
  Tensor stepped = y.slice(0, 1, 8, 3);
  EXPECT_EQ(Longs(stepped), (I64{1, 4, 7}));
  EXPECT_EQ(Strides(stepped), (I64{3}));
  EXPECT_EQ(stepped.storage_offset(), 1);
  EXPECT_TRUE(stepped.is_alias_of(y));
  EXPECT_EQ(Longs(y.slice(0, 1, 9, 3)), (I64{1, 4, 7}));
  EXPECT_EQ(Longs(y.slice(0, 0, 10, 20)), (I64{0}));
  EXPECT_EQ(Longs(y.slice()), Longs(y));

  Tensor x = Arange(24).reshape({2, 3, 4});
  Tensor s = x.slice(1, 1).slice(2, std::nullopt, std::nullopt, 2);
  EXPECT_EQ(Sizes(s), (I64{2, 2, 2}));
  EXPECT_EQ(Strides(s), (I64{12, 4, 2}));
  EXPECT_EQ(s.storage_offset(), 4);
  EXPECT_EQ(Longs(s), (I64{4, 6, 8, 10, 16, 18, 20, 22}));
  EXPECT_EQ(Longs(x.slice(-1, -1)), (I64{3, 7, 11, 15, 19, 23}));

  ExpectError([&] { (void)y.slice(0, 0, 5, 0); }, {"step"});
  ExpectError([&] { (void)y.slice(0, 0, 5, -1); }, {"step"});
  ExpectError([&] { (void)scalar_tensor(1.0).slice(0); }, {"0-dim"});
}

TEST(ViewOpsSelect, IndexAndErrors) {
  Tensor x = Arange(24).reshape({2, 3, 4});
  Tensor s = x.select(1, -1);
  EXPECT_EQ(Sizes(s), (I64{2, 4}));
  EXPECT_EQ(Strides(s), (I64{12, 1}));
  EXPECT_EQ(s.storage_offset(), 8);
  EXPECT_EQ(Longs(s), (I64{8, 9, 10, 11, 20, 21, 22, 23}));
  EXPECT_TRUE(s.is_alias_of(x));
  EXPECT_EQ(Longs(x[1][2]), (I64{20, 21, 22, 23}));
  EXPECT_EQ(x[1][2][3].dim(), 0);
  EXPECT_EQ(x[1][2][3].item<int64_t>(), 23);
  EXPECT_EQ(select(x, 2, 0).storage_offset(), 0);
  EXPECT_EQ(Longs(select(x, 2, 0)), (I64{0, 4, 8, 12, 16, 20}));

  ExpectError([&] { (void)Arange(6).select(0, 6); }, {"index 6 out of range", "[6]"});
  ExpectError([&] { (void)Arange(6).select(0, -7); }, {"out of range"});
  ExpectError([&] { (void)scalar_tensor(1.0).select(0, 0); }, {"0-dim"});
}

// ---------------------------------------------------------------------------------------
// unfold / diagonal

TEST(ViewOpsUnfold, Windows) {
  Tensor a = Arange(10);
  Tensor u = a.unfold(0, 3, 2);
  EXPECT_EQ(Sizes(u), (I64{4, 3}));
  EXPECT_EQ(Strides(u), (I64{2, 1}));
  EXPECT_TRUE(u.is_alias_of(a));
  EXPECT_EQ(Longs(u), (I64{0, 1, 2, 2, 3, 4, 4, 5, 6, 6, 7, 8}));

  Tensor m = Arange(12).reshape({3, 4});
  Tensor u1 = m.unfold(1, 2, 1);
  EXPECT_EQ(Sizes(u1), (I64{3, 3, 2}));
  EXPECT_EQ(Strides(u1), (I64{4, 1, 1}));
  Tensor u0 = m.unfold(0, 2, 1);
  EXPECT_EQ(Sizes(u0), (I64{2, 4, 2}));
  EXPECT_EQ(Strides(u0), (I64{4, 1, 4}));
  EXPECT_EQ(Longs(u0.select(0, 1)), (I64{4, 8, 5, 9, 6, 10, 7, 11}));

  ExpectError([&] { (void)a.unfold(0, 11, 1); }, {"maximum size", "10", "11"});
  ExpectError([&] { (void)a.unfold(0, 2, 0); }, {"step"});
}

TEST(ViewOpsDiagonal, OffsetsAndDims) {
  Tensor x = Arange(12).reshape({3, 4});
  Tensor d = x.diagonal();
  EXPECT_EQ(Longs(d), (I64{0, 5, 10}));
  EXPECT_EQ(Strides(d), (I64{5}));
  EXPECT_TRUE(d.is_alias_of(x));
  Tensor up = x.diagonal(1);
  EXPECT_EQ(Longs(up), (I64{1, 6, 11}));
  EXPECT_EQ(up.storage_offset(), 1);
  Tensor down = diagonal(x, -1);
  EXPECT_EQ(Longs(down), (I64{4, 9}));
  EXPECT_EQ(down.storage_offset(), 4);
  EXPECT_EQ(Sizes(x.diagonal(5)), (I64{0}));
  EXPECT_EQ(Sizes(x.diagonal(-3)), (I64{0}));
  EXPECT_EQ(Longs(x.diagonal(3)), (I64{3}));

  Tensor y = Arange(24).reshape({2, 3, 4});
  Tensor d12 = y.diagonal(0, 1, 2);
  EXPECT_EQ(Sizes(d12), (I64{2, 3}));
  EXPECT_EQ(Strides(d12), (I64{12, 5}));
  EXPECT_EQ(Longs(d12), (I64{0, 5, 10, 12, 17, 22}));
  Tensor odd = y.diagonal(1, -1, 0);
  EXPECT_EQ(Sizes(odd), (I64{3, 1}));
  EXPECT_EQ(Strides(odd), (I64{4, 13}));
  EXPECT_EQ(odd.storage_offset(), 12);
  EXPECT_EQ(Longs(odd), (I64{12, 16, 20}));

  // Writing through the diagonal changes the base.
  Tensor z = zeros({3, 3});
  z.diagonal().fill_(2.0);
  EXPECT_EQ(Floats(z), (std::vector<float>{2, 0, 0, 0, 2, 0, 0, 0, 2}));

  ExpectError([&] { (void)y.diagonal(0, 1, 1); }, {"identical"});
  ExpectError([&] { (void)Arange(3).diagonal(); }, {"at least 2 dims"});
}

// ---------------------------------------------------------------------------------------
// split / split_with_sizes / chunk / unbind

TEST(ViewOpsSplit, BySizeAndSizes) {
  Tensor a = Arange(10);
  auto parts = a.split(4);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(Longs(parts[0]), (I64{0, 1, 2, 3}));
  EXPECT_EQ(Longs(parts[1]), (I64{4, 5, 6, 7}));
  EXPECT_EQ(Longs(parts[2]), (I64{8, 9}));
  for (const auto& p : parts) EXPECT_TRUE(p.is_alias_of(a));
  EXPECT_EQ(parts[2].storage_offset(), 8);
  EXPECT_EQ(split(a, 10).size(), 1u);
  EXPECT_EQ(a.split(20).size(), 1u);

  Tensor m = Arange(12).reshape({3, 4});
  auto cols = m.split(3, 1);
  ASSERT_EQ(cols.size(), 2u);
  EXPECT_EQ(Sizes(cols[0]), (I64{3, 3}));
  EXPECT_EQ(Longs(cols[1]), (I64{3, 7, 11}));

  auto ws = a.split_with_sizes({3, 0, 7});
  ASSERT_EQ(ws.size(), 3u);
  EXPECT_EQ(Longs(ws[0]), (I64{0, 1, 2}));
  EXPECT_EQ(ws[1].numel(), 0);
  EXPECT_EQ(ws[2].numel(), 7);
  EXPECT_EQ(ws[2].storage_offset(), 3);

  ExpectError([&] { (void)a.split_with_sizes({3, 6}); }, {"[3, 6]", "sum to 9", "10"});
  ExpectError([&] { (void)a.split(0); }, {"split_size"});
  ExpectError([&] { (void)a.split(-1); }, {"split_size"});
  EXPECT_EQ(zeros({0}).split(0).size(), 1u);
}

TEST(ViewOpsSplit, ChunkAndUnbind) {
  Tensor a = Arange(10);
  auto c = a.chunk(3);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].numel(), 4);
  EXPECT_EQ(c[1].numel(), 4);
  EXPECT_EQ(Longs(c[2]), (I64{8, 9}));
  // Like PyTorch, chunk may return fewer chunks than asked.
  auto c5 = chunk(Arange(5), 4);
  ASSERT_EQ(c5.size(), 3u);
  EXPECT_EQ(Longs(c5[2]), (I64{4}));
  EXPECT_EQ(zeros({0}).chunk(3).size(), 3u);
  ExpectError([&] { (void)a.chunk(0); }, {"chunks"});

  Tensor m = Arange(12).reshape({3, 4});
  auto cols = m.unbind(1);
  ASSERT_EQ(cols.size(), 4u);
  EXPECT_EQ(Sizes(cols[2]), (I64{3}));
  EXPECT_EQ(Strides(cols[2]), (I64{4}));
  EXPECT_EQ(Longs(cols[2]), (I64{2, 6, 10}));
  EXPECT_TRUE(cols[2].is_alias_of(m));
  auto rows = unbind(m);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(Longs(rows[1]), (I64{4, 5, 6, 7}));
  EXPECT_EQ(m.unbind(-1).size(), 4u);
}

// ---------------------------------------------------------------------------------------
// contiguous / clone / to / detach / alias

TEST(ViewOpsCopies, Contiguous) {
  Tensor a = Arange(12).reshape({3, 4});
  Tensor c = a.contiguous();
  EXPECT_TRUE(c.is_same(a));
  Tensor t = a.t();
  Tensor tc = t.contiguous();
  EXPECT_FALSE(tc.is_alias_of(a));
  EXPECT_TRUE(tc.is_contiguous());
  EXPECT_EQ(Strides(tc), (I64{3, 1}));
  EXPECT_EQ(Longs(tc), (I64{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  // Views that are contiguous (with an offset) are returned as they are.
  Tensor row = a[1];
  EXPECT_TRUE(row.contiguous().is_same(row));
}

TEST(ViewOpsCopies, Clone) {
  Tensor a = Arange(12).reshape({3, 4});
  Tensor c = a.clone();
  EXPECT_FALSE(c.is_alias_of(a));
  EXPECT_NE(c.data_ptr(), a.data_ptr());
  EXPECT_EQ(Longs(c), Longs(a));
  c.fill_(0);
  EXPECT_EQ(a.select(1, 3).to_vector<int64_t>(), (I64{3, 7, 11}));
  Tensor tc = a.t().clone();
  EXPECT_TRUE(tc.is_contiguous());
  EXPECT_EQ(Sizes(tc), (I64{4, 3}));
  EXPECT_EQ(Longs(tc), (I64{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  Tensor e = Arange(3).expand({2, 3}).clone();
  EXPECT_EQ(Strides(e), (I64{3, 1}));
  EXPECT_EQ(Longs(e), (I64{0, 1, 2, 0, 1, 2}));
}

TEST(ViewOpsCopies, ToDtype) {
  Tensor f = tensor({2.7f, -2.7f, 0.5f, 0.0f});
  Tensor i = f.to(kInt32);
  EXPECT_EQ(i.dtype(), kInt32);
  EXPECT_EQ(i.to_vector<int32_t>(), (std::vector<int32_t>{2, -2, 0, 0}));
  Tensor b = f.to(kBool);
  EXPECT_EQ(b.dtype(), kBool);
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, true, true, false}));
  Tensor d = tensor({-2.7}, kFloat64).to(kInt64);
  EXPECT_EQ(d.item<int64_t>(), -2);
  Tensor back = tensor({1, 0, 3}).to(kFloat64);
  EXPECT_EQ(back.to_vector<double>(), (std::vector<double>{1.0, 0.0, 3.0}));
  Tensor h = tensor({1.5f, -0.25f}).to(kFloat16);
  EXPECT_EQ(h.dtype(), kFloat16);
  EXPECT_EQ(Floats(h), (std::vector<float>{1.5f, -0.25f}));

  // Same dtype: the same tensor unless a copy is asked for.
  EXPECT_TRUE(f.to(kFloat32).is_same(f));
  Tensor copy = f.to(kFloat32, /*copy=*/true);
  EXPECT_FALSE(copy.is_alias_of(f));
  EXPECT_EQ(Floats(copy), Floats(f));
  EXPECT_TRUE(f.to(TensorOptions(kFloat32)).is_same(f));
  EXPECT_EQ(f.to(TensorOptions(kFloat64)).dtype(), kFloat64);

  // Converting a non-contiguous view gives a contiguous result in its logical order.
  Tensor tv = Arange(6).reshape({2, 3}).t().to(kFloat32);
  EXPECT_TRUE(tv.is_contiguous());
  EXPECT_EQ(Floats(tv), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(ViewOpsCopies, DetachAndAliasShareStorage) {
  Tensor a = Arange(6).reshape({2, 3});
  Tensor d = a.detach();
  EXPECT_TRUE(d.is_alias_of(a));
  EXPECT_FALSE(d.is_same(a));
  EXPECT_EQ(Strides(d), Strides(a));
  Tensor al = a.t().alias();
  EXPECT_EQ(Strides(al), (I64{1, 3}));
  EXPECT_TRUE(al.is_alias_of(a));
}

// ---------------------------------------------------------------------------------------
// copy_ / fill_ / zero_

TEST(ViewOpsCopyInPlace, BroadcastAndConvert) {
  Tensor m = zeros({3, 4});
  m.copy_(Arange(4));  // int64 row broadcast into a float matrix
  EXPECT_EQ(m.dtype(), kFloat32);
  EXPECT_EQ(Floats(m), (std::vector<float>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  m.copy_(tensor({1.0f, 2.0f, 3.0f}).view({3, 1}));
  EXPECT_EQ(Floats(m), (std::vector<float>{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}));
  m.copy_(scalar_tensor(9.0));
  EXPECT_EQ(Floats(m), std::vector<float>(12, 9.0f));

  Tensor ints = zeros({3}, kInt32);
  ints.copy_(tensor({1.9, -1.9, 7.2}, kFloat64));
  EXPECT_EQ(ints.to_vector<int32_t>(), (std::vector<int32_t>{1, -1, 7}));

  ExpectError([&] { zeros({3, 4}).copy_(Arange(3)); }, {"[3]", "[3, 4]"});
  ExpectError([&] { zeros({4}).copy_(zeros({2, 4})); }, {"[2, 4]", "[4]"});
}

TEST(ViewOpsCopyInPlace, IntoNonContiguousView) {
  Tensor a = zeros({3, 4}, kInt64);
  a.t().copy_(Arange(12).view({4, 3}));
  EXPECT_EQ(Longs(a), (I64{0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11}));

  Tensor b = zeros({4, 4}, kInt64);
  b.slice(1, 1, std::nullopt, 2).copy_(ones({4, 2}, kInt64));
  EXPECT_EQ(Longs(b.select(0, 2)), (I64{0, 1, 0, 1}));
  b.diagonal().copy_(Arange(4));
  EXPECT_EQ(Longs(b.diagonal()), (I64{0, 1, 2, 3}));
  EXPECT_EQ(Longs(b[3]), (I64{0, 1, 0, 3}));
}

TEST(ViewOpsCopyInPlace, OverlappingSourceIsReadFirst) {
  // Shift right: a[1:] = a[:-1].
  Tensor a = arange(5.0);
  a.slice(0, 1, std::nullopt).copy_(a.slice(0, 0, -1));
  EXPECT_EQ(Floats(a), (std::vector<float>{0, 0, 1, 2, 3}));
  // Shift left: a[:-1] = a[1:].
  Tensor b = arange(5.0);
  b.slice(0, 0, -1).copy_(b.slice(0, 1, std::nullopt));
  EXPECT_EQ(Floats(b), (std::vector<float>{1, 2, 3, 4, 4}));
  // In-place transpose through a view of the same storage.
  Tensor c = Arange(9).view({3, 3});
  c.copy_(c.t());
  EXPECT_EQ(Longs(c), (I64{0, 3, 6, 1, 4, 7, 2, 5, 8}));
  // Broadcast source that overlaps the destination: every row becomes the old row 0.
  Tensor d = Arange(6).view({2, 3});
  d.copy_(d[0]);
  EXPECT_EQ(Longs(d), (I64{0, 1, 2, 0, 1, 2}));
  // Copying a tensor into itself is a no-op that still counts as a write.
  Tensor e = Arange(4);
  const uint32_t v = e._version();
  e.copy_(e);
  EXPECT_EQ(Longs(e), (I64{0, 1, 2, 3}));
  EXPECT_EQ(e._version(), v + 1);
}

TEST(ViewOpsCopyInPlace, FillAndZero) {
  Tensor i = zeros({2, 3}, kInt64);
  i.fill_(2.5);
  EXPECT_EQ(Longs(i), I64(6, 2));
  Tensor f = zeros({2, 3});
  f.t().select(0, 1).fill_(-1.5);  // column 1
  EXPECT_EQ(Floats(f), (std::vector<float>{0, -1.5f, 0, 0, -1.5f, 0}));
  Tensor b = zeros({3}, kBool);
  b.fill_(true);
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, true, true}));
  f.zero_();
  EXPECT_EQ(Floats(f), std::vector<float>(6, 0.0f));
  Tensor h = zeros({2}, kBFloat16);
  h.fill_(1.5);
  EXPECT_EQ(Floats(h), (std::vector<float>{1.5f, 1.5f}));
  Tensor e = zeros({0, 3});
  const uint32_t v = e._version();
  e.fill_(1.0);
  EXPECT_EQ(e._version(), v + 1);
  Tensor& ref = f.fill_(3.0);
  EXPECT_TRUE(ref.is_same(f));
}

TEST(ViewOpsBroadcast, Shapes) {
  EXPECT_EQ(broadcast_shapes({3, 1}, {4}).vec(), (I64{3, 4}));
  EXPECT_EQ(broadcast_shapes({2, 1, 5}, {3, 1}).vec(), (I64{2, 3, 5}));
  EXPECT_EQ(broadcast_shapes({}, {2}).vec(), (I64{2}));
  ExpectError([&] { (void)broadcast_shapes({3}, {4}); }, {"3", "4"});
  auto bt = broadcast_tensors({Arange(3), zeros({2, 1})});
  ASSERT_EQ(bt.size(), 2u);
  EXPECT_EQ(Sizes(bt[0]), (I64{2, 3}));
  EXPECT_EQ(Strides(bt[0]), (I64{0, 1}));
  EXPECT_EQ(Strides(bt[1]), (I64{1, 0}));
}

}  // namespace
}  // namespace ember
