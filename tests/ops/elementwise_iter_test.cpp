// ElementwiseIter's shortcut for operands that are all contiguous and of the output's shape
// (Note [Flat operands], kernels/cpu/iter.cpp), and its mixing with operands that take the
// general path: every layout must give the values of a plain loop.

#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cstdint>
#include <vector>

// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace ops_elementwise_iter_test {

using namespace ember;

// a + 10 * b element by element over row-major indices of a's shape, b broadcast to it.
std::vector<float> expected_sum(const Tensor& a, const Tensor& b) {
  const Tensor bb = b.expand(a.sizes()).contiguous();
  const std::vector<float> av = a.contiguous().to_vector<float>(), bv = bb.to_vector<float>();
  std::vector<float> r(av.size());
  for (size_t i = 0; i < r.size(); ++i) r[i] = av[i] + 10 * bv[i];
  return r;
}

TEST(ElementwiseIter, FlatOperands) {
  Tensor a = arange(12, kFloat32).reshape({3, 4});
  Tensor b = arange(12, kFloat32).reshape({3, 4}) * 2;
  EXPECT_EQ((a + b * 10).to_vector<float>(), expected_sum(a, b));
  // size-1 dims, a single element, and a 0-dim tensor
  Tensor c = arange(5, kFloat32).reshape({1, 5, 1});
  EXPECT_EQ((c + c * 10).to_vector<float>(), expected_sum(c, c));
  Tensor one = full({1, 1}, 3.0f);
  EXPECT_EQ((one + one * 10).to_vector<float>(), std::vector<float>{33.0f});
  Tensor s = tensor(2.0f);
  EXPECT_EQ((s + s * 10).item<float>(), 22.0f);
  // Mixed dtypes: int64 + float32 promotes, each operand keeps its own element size.
  Tensor i = arange(12).reshape({3, 4});
  EXPECT_EQ((i + b).to_vector<float>(), (a + b).to_vector<float>());
}

TEST(ElementwiseIter, FlatOperandsMixedWithStridedOnes) {
  Tensor a = arange(12, kFloat32).reshape({3, 4});
  Tensor bt = (arange(12, kFloat32).reshape({4, 3}) * 3).t();  // [3, 4], not contiguous
  EXPECT_FALSE(bt.is_contiguous());
  EXPECT_EQ((a + bt * 10).to_vector<float>(), expected_sum(a, bt));
  EXPECT_EQ((bt * 10 + a).to_vector<float>(), expected_sum(a, bt));
  // A broadcast operand (other sizes) next to flat ones.
  Tensor row = arange(4, kFloat32) - 1;
  EXPECT_EQ((a + row * 10).to_vector<float>(), expected_sum(a, row));
  Tensor col = (arange(3, kFloat32) + 5).reshape({3, 1});
  EXPECT_EQ((a + col * 10).to_vector<float>(), expected_sum(a, col));
  // In place into a flat output from a strided operand.
  Tensor out = a.clone();
  out.add_(bt * 10);
  EXPECT_EQ(out.to_vector<float>(), expected_sum(a, bt));
  // A contiguous view with a storage offset is flat too.
  Tensor big = arange(20, kFloat32);
  Tensor mid = big.narrow(0, 4, 12).reshape({3, 4});
  EXPECT_EQ((mid + a * 10).to_vector<float>(), expected_sum(mid, a));
}

TEST(ElementwiseIter, EmptyOperands) {
  Tensor e = zeros({0, 3});
  EXPECT_EQ((e + e).sizes().vec(), (std::vector<int64_t>{0, 3}));
  Tensor et = zeros({3, 0}).t();
  EXPECT_EQ((e + et).numel(), 0);
}

}  // namespace ops_elementwise_iter_test
