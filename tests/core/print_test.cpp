// operator<<(ostream, Tensor) against PyTorch 1.13's repr(tensor). Every expected string below
// was produced by running the same expression in Python with torch 1.13 (the expression is in
// the comment above each check) and replacing "torch." with "ember." in the dtype suffix.
// Inputs are built from arange/linspace/literals only, so both sides see identical values.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace core_print_test {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string Repr(const Tensor& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

// Restores the default print options and default dtype however a test ends.
class PrintTest : public ::testing::Test {
 protected:
  void TearDown() override {
    set_printoptions(PrintOptions{});
    set_default_dtype(kFloat32);
  }
};

TEST_F(PrintTest, IntegerTensors) {
  // torch.arange(10)
  EXPECT_EQ(Repr(arange(10)), "tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])");
  // torch.tensor([-5, 10, 200, -3000]): every column as wide as the widest value.
  EXPECT_EQ(Repr(tensor({-5, 10, 200, -3000})), "tensor([   -5,    10,   200, -3000])");
  // torch.arange(12).reshape(3, 4)
  EXPECT_EQ(Repr(arange(12).reshape({3, 4})),
            "tensor([[ 0,  1,  2,  3],\n"
            "        [ 4,  5,  6,  7],\n"
            "        [ 8,  9, 10, 11]])");
  // torch.tensor([[-1, 20], [300, -4]])
  EXPECT_EQ(Repr(tensor({{-1, 20}, {300, -4}})),
            "tensor([[ -1,  20],\n"
            "        [300,  -4]])");
  // torch.tensor([-9223372036854775808, 5])
  EXPECT_EQ(Repr(tensor(std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 5})),
            "tensor([-9223372036854775808,                    5])");
}

TEST_F(PrintTest, FloatIntMode) {
  // torch.tensor([0., 1.])
  EXPECT_EQ(Repr(tensor({0., 1.})), "tensor([0., 1.])");
  // torch.tensor([-2., 10., 300.])
  EXPECT_EQ(Repr(tensor({-2., 10., 300.})), "tensor([ -2.,  10., 300.])");
  // torch.arange(6.).reshape(2, 3)
  EXPECT_EQ(Repr(arange(6.).reshape({2, 3})),
            "tensor([[0., 1., 2.],\n"
            "        [3., 4., 5.]])");
  // torch.zeros(3)
  EXPECT_EQ(Repr(zeros({3})), "tensor([0., 0., 0.])");
  // torch.tensor([1e8]): 1e8 itself is not above 1e8.
  EXPECT_EQ(Repr(tensor({1e8})), "tensor([100000000.])");
  // torch.tensor([1., 1000.]): a ratio of exactly 1000 stays in int mode.
  EXPECT_EQ(Repr(tensor({1., 1000.})), "tensor([   1., 1000.])");
}

TEST_F(PrintTest, FloatFixedMode) {
  // torch.tensor([1.5, 2.25, -3.125])
  EXPECT_EQ(Repr(tensor({1.5, 2.25, -3.125})), "tensor([ 1.5000,  2.2500, -3.1250])");
  // torch.tensor([0.1, 0.2, 12.345])
  EXPECT_EQ(Repr(tensor({0.1, 0.2, 12.345})), "tensor([ 0.1000,  0.2000, 12.3450])");
  // torch.tensor([1.00005, 0.12345, -99.99995]): rounds the float32 values.
  EXPECT_EQ(Repr(tensor({1.00005, 0.12345, -99.99995})),
            "tensor([  1.0000,   0.1235, -99.9999])");
  // torch.linspace(0, 1, 5)
  EXPECT_EQ(Repr(linspace(0, 1, 5)), "tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])");
  // torch.linspace(-1, 1, 6).reshape(2, 3)
  EXPECT_EQ(Repr(linspace(-1, 1, 6).reshape({2, 3})),
            "tensor([[-1.0000, -0.6000, -0.2000],\n"
            "        [ 0.2000,  0.6000,  1.0000]])");
  // torch.tensor([0.5, 500.]): a ratio of exactly 1000 stays fixed.
  EXPECT_EQ(Repr(tensor({0.5, 500.})), "tensor([  0.5000, 500.0000])");
}

TEST_F(PrintTest, FloatScientificMode) {
  // torch.tensor([1., 10000.]): integers spanning more than 1000x.
  EXPECT_EQ(Repr(tensor({1., 10000.})), "tensor([1.0000e+00, 1.0000e+04])");
  // torch.tensor([0.5, 1000.5])
  EXPECT_EQ(Repr(tensor({0.5, 1000.5})), "tensor([5.0000e-01, 1.0005e+03])");
  // torch.tensor([0.1, 0.2, 123.456])
  EXPECT_EQ(Repr(tensor({0.1, 0.2, 123.456})), "tensor([1.0000e-01, 2.0000e-01, 1.2346e+02])");
  // torch.tensor([1e-5, 0.5]): a value below 1e-4.
  EXPECT_EQ(Repr(tensor({1e-5, 0.5})), "tensor([1.0000e-05, 5.0000e-01])");
  // torch.tensor([1e-4, 0.5]): float32(1e-4) is just below 1e-4.
  EXPECT_EQ(Repr(tensor({1e-4, 0.5})), "tensor([1.0000e-04, 5.0000e-01])");
  // torch.full((2, 2), 1e-5)
  EXPECT_EQ(Repr(full({2, 2}, 1e-5)),
            "tensor([[1.0000e-05, 1.0000e-05],\n"
            "        [1.0000e-05, 1.0000e-05]])");
  // torch.tensor([1e9, 1.5]): a value above 1e8.
  EXPECT_EQ(Repr(tensor({1e9, 1.5})), "tensor([1.0000e+09, 1.5000e+00])");
  // torch.tensor([1e10, 2e10]): integers above 1e8, ratio only 2.
  EXPECT_EQ(Repr(tensor({1e10, 2e10})), "tensor([1.0000e+10, 2.0000e+10])");
  // torch.tensor([-1e-5, 0., 3.]): zero printed in scientific form too.
  EXPECT_EQ(Repr(tensor({-1e-5, 0., 3.})), "tensor([-1.0000e-05,  0.0000e+00,  3.0000e+00])");
}

TEST_F(PrintTest, NanAndInf) {
  // torch.tensor([1., nan, inf, -inf])
  EXPECT_EQ(Repr(tensor({1., kNan, kInf, -kInf})), "tensor([1., nan, inf, -inf])");
  // torch.tensor([1.5, nan, -inf])
  EXPECT_EQ(Repr(tensor({1.5, kNan, -kInf})), "tensor([1.5000,    nan,   -inf])");
  // torch.tensor([nan, inf])
  EXPECT_EQ(Repr(tensor({kNan, kInf})), "tensor([nan, inf])");
  // torch.tensor([1e-5, nan, -inf, 100.])
  EXPECT_EQ(Repr(tensor({1e-5, kNan, -kInf, 100.})),
            "tensor([1.0000e-05,        nan,       -inf, 1.0000e+02])");
  // torch.tensor([-nan, 1.5]): the sign of a NaN is never shown.
  EXPECT_EQ(Repr(tensor({-kNan, 1.5})), "tensor([   nan, 1.5000])");
}

TEST_F(PrintTest, NegativeZero) {
  // torch.tensor([-0., 1.])
  EXPECT_EQ(Repr(tensor({-0., 1.})), "tensor([-0., 1.])");
  // torch.tensor([-0., 0.5])
  EXPECT_EQ(Repr(tensor({-0., 0.5})), "tensor([-0.0000, 0.5000])");
  // torch.tensor([-0., 0.])
  EXPECT_EQ(Repr(tensor({-0., 0.})), "tensor([-0., 0.])");
}

TEST_F(PrintTest, BoolTensors) {
  // torch.tensor([True, False])
  EXPECT_EQ(Repr(tensor({true, false})), "tensor([ True, False])");
  // torch.tensor([True])
  EXPECT_EQ(Repr(tensor(std::vector<bool>{true})), "tensor([True])");
  // torch.tensor([[True, False], [False, True]])
  EXPECT_EQ(Repr(tensor({true, false, false, true}).reshape({2, 2})),
            "tensor([[ True, False],\n"
            "        [False,  True]])");
}

TEST_F(PrintTest, ZeroDimTensors) {
  // torch.tensor(3.5)
  EXPECT_EQ(Repr(tensor(3.5)), "tensor(3.5000)");
  // torch.tensor(2.)
  EXPECT_EQ(Repr(tensor(2.)), "tensor(2.)");
  // torch.tensor(7)
  EXPECT_EQ(Repr(tensor(7)), "tensor(7)");
  // torch.tensor(-42)
  EXPECT_EQ(Repr(tensor(int64_t{-42})), "tensor(-42)");
  // torch.tensor(True)
  EXPECT_EQ(Repr(tensor(true)), "tensor(True)");
  // torch.tensor(1e-5)
  EXPECT_EQ(Repr(tensor(1e-5)), "tensor(1.0000e-05)");
  // torch.tensor(-0.)
  EXPECT_EQ(Repr(tensor(-0.)), "tensor(-0.)");
  // torch.tensor(nan)
  EXPECT_EQ(Repr(tensor(kNan)), "tensor(nan)");
  // torch.tensor(3.5, dtype=torch.float64)
  EXPECT_EQ(Repr(tensor(3.5, kFloat64)), "tensor(3.5000, dtype=ember.float64)");
  // torch.tensor(5, dtype=torch.int32)
  EXPECT_EQ(Repr(tensor(5, kInt32)), "tensor(5, dtype=ember.int32)");
  // torch.tensor(0.1).half()
  EXPECT_EQ(Repr(tensor(0.1).to(kHalf)), "tensor(0.1000, dtype=ember.float16)");
  // torch.tensor(1.5).requires_grad_()
  EXPECT_EQ(Repr(tensor(1.5).requires_grad_()), "tensor(1.5000, requires_grad=True)");
}

TEST_F(PrintTest, EmptyTensors) {
  // torch.zeros(0)
  EXPECT_EQ(Repr(zeros({0})), "tensor([])");
  // torch.zeros(0, 3)
  EXPECT_EQ(Repr(zeros({0, 3})), "tensor([], size=(0, 3))");
  // torch.zeros(0, dtype=torch.int32)
  EXPECT_EQ(Repr(zeros({0}, kInt32)), "tensor([], dtype=ember.int32)");
  // torch.zeros(0, dtype=torch.int64): unlike non-empty tensors, int64 is named.
  EXPECT_EQ(Repr(zeros({0}, kInt64)), "tensor([], dtype=ember.int64)");
  // torch.zeros(0, dtype=torch.bool)
  EXPECT_EQ(Repr(zeros({0}, kBool)), "tensor([], dtype=ember.bool)");
  // torch.zeros(2, 0, 3, dtype=torch.float64)
  EXPECT_EQ(Repr(zeros({2, 0, 3}, kFloat64)), "tensor([], size=(2, 0, 3), dtype=ember.float64)");
  // torch.zeros(0).requires_grad_()
  EXPECT_EQ(Repr(zeros({0}).requires_grad_()), "tensor([], requires_grad=True)");
}

TEST_F(PrintTest, NonDefaultDTypes) {
  // torch.ones(2, dtype=torch.float64)
  EXPECT_EQ(Repr(ones({2}, kFloat64)), "tensor([1., 1.], dtype=ember.float64)");
  // torch.tensor([0.1, 2.5], dtype=torch.float64)
  EXPECT_EQ(Repr(tensor({0.1, 2.5}, kFloat64)), "tensor([0.1000, 2.5000], dtype=ember.float64)");
  // torch.tensor([1, 2, 3], dtype=torch.int32)
  EXPECT_EQ(Repr(tensor({1, 2, 3}, kInt32)), "tensor([1, 2, 3], dtype=ember.int32)");
  // torch.tensor([0, 7, 255], dtype=torch.uint8)
  EXPECT_EQ(Repr(tensor({0, 7, 255}, kUInt8)), "tensor([  0,   7, 255], dtype=ember.uint8)");
  // torch.tensor([-128, 5, 127], dtype=torch.int8)
  EXPECT_EQ(Repr(tensor({-128, 5, 127}, kInt8)), "tensor([-128,    5,  127], dtype=ember.int8)");
  // torch.tensor([-300, 42], dtype=torch.int16)
  EXPECT_EQ(Repr(tensor({-300, 42}, kInt16)), "tensor([-300,   42], dtype=ember.int16)");
  // torch.tensor([0.1, 3.3]).half(): values as float16 holds them.
  EXPECT_EQ(Repr(tensor({0.1, 3.3}).to(kHalf)), "tensor([0.1000, 3.3008], dtype=ember.float16)");
  // torch.tensor([0.1, 1000.3, -2.7]).half()
  EXPECT_EQ(Repr(tensor({0.1, 1000.3, -2.7}).to(kHalf)),
            "tensor([ 9.9976e-02,  1.0005e+03, -2.6992e+00], dtype=ember.float16)");
  // torch.tensor([1e-5, 60000.]).half(): a float16 subnormal.
  EXPECT_EQ(Repr(tensor({1e-5, 60000.}).to(kHalf)),
            "tensor([1.0014e-05, 6.0000e+04], dtype=ember.float16)");
  // torch.tensor([3.14159, 100.7, -0.3]).bfloat16()
  EXPECT_EQ(Repr(tensor({3.14159, 100.7, -0.3}).to(kBFloat16)),
            "tensor([  3.1406, 100.5000,  -0.3008], dtype=ember.bfloat16)");
  // torch.tensor([1., 256., 257.]).bfloat16(): 257 rounds to 256.
  EXPECT_EQ(Repr(tensor({1., 256., 257.}).to(kBFloat16)),
            "tensor([  1., 256., 256.], dtype=ember.bfloat16)");
}

TEST_F(PrintTest, DefaultDTypeDecidesTheSuffix) {
  set_default_dtype(kFloat64);
  // torch.set_default_dtype(torch.float64); torch.tensor([1.5, 2.])
  EXPECT_EQ(Repr(tensor({1.5, 2.})), "tensor([1.5000, 2.0000])");
  // torch.tensor([1.5, 2.], dtype=torch.float32)
  EXPECT_EQ(Repr(tensor({1.5, 2.}, kFloat32)), "tensor([1.5000, 2.0000], dtype=ember.float32)");
  // torch.zeros(0)
  EXPECT_EQ(Repr(zeros({0})), "tensor([])");
  // torch.zeros(0, dtype=torch.float32)
  EXPECT_EQ(Repr(zeros({0}, kFloat32)), "tensor([], dtype=ember.float32)");
}

TEST_F(PrintTest, HigherDimensions) {
  // torch.arange(24).reshape(2, 3, 4): one blank line between 2-D slices.
  EXPECT_EQ(Repr(arange(24).reshape({2, 3, 4})),
            "tensor([[[ 0,  1,  2,  3],\n"
            "         [ 4,  5,  6,  7],\n"
            "         [ 8,  9, 10, 11]],\n"
            "\n"
            "        [[12, 13, 14, 15],\n"
            "         [16, 17, 18, 19],\n"
            "         [20, 21, 22, 23]]])");
  // torch.arange(8.).reshape(2, 2, 2)
  EXPECT_EQ(Repr(arange(8.).reshape({2, 2, 2})),
            "tensor([[[0., 1.],\n"
            "         [2., 3.]],\n"
            "\n"
            "        [[4., 5.],\n"
            "         [6., 7.]]])");
  // torch.arange(16).reshape(2, 2, 2, 2): two blank lines between 3-D slices.
  EXPECT_EQ(Repr(arange(16).reshape({2, 2, 2, 2})),
            "tensor([[[[ 0,  1],\n"
            "          [ 2,  3]],\n"
            "\n"
            "         [[ 4,  5],\n"
            "          [ 6,  7]]],\n"
            "\n"
            "\n"
            "        [[[ 8,  9],\n"
            "          [10, 11]],\n"
            "\n"
            "         [[12, 13],\n"
            "          [14, 15]]]])");
}

TEST_F(PrintTest, SummarisesBigTensors) {
  // torch.arange(2000)
  EXPECT_EQ(Repr(arange(2000)), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
  // torch.arange(2000).reshape(1000, 2): only the long dim is cut.
  EXPECT_EQ(Repr(arange(2000).reshape({1000, 2})),
            "tensor([[   0,    1],\n"
            "        [   2,    3],\n"
            "        [   4,    5],\n"
            "        ...,\n"
            "        [1994, 1995],\n"
            "        [1996, 1997],\n"
            "        [1998, 1999]])");
  // torch.arange(0., 1001.): only the shown values decide the width.
  EXPECT_EQ(Repr(arange(0., 1001.)), "tensor([   0.,    1.,    2.,  ...,  998.,  999., 1000.])");
  // torch.arange(10000.).reshape(100, 100)
  EXPECT_EQ(Repr(arange(10000.).reshape({100, 100})),
            "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.7000e+01, 9.8000e+01,\n"
            "         9.9000e+01],\n"
            "        [1.0000e+02, 1.0100e+02, 1.0200e+02,  ..., 1.9700e+02, 1.9800e+02,\n"
            "         1.9900e+02],\n"
            "        [2.0000e+02, 2.0100e+02, 2.0200e+02,  ..., 2.9700e+02, 2.9800e+02,\n"
            "         2.9900e+02],\n"
            "        ...,\n"
            "        [9.7000e+03, 9.7010e+03, 9.7020e+03,  ..., 9.7970e+03, 9.7980e+03,\n"
            "         9.7990e+03],\n"
            "        [9.8000e+03, 9.8010e+03, 9.8020e+03,  ..., 9.8970e+03, 9.8980e+03,\n"
            "         9.8990e+03],\n"
            "        [9.9000e+03, 9.9010e+03, 9.9020e+03,  ..., 9.9970e+03, 9.9980e+03,\n"
            "         9.9990e+03]])");
  // torch.arange(10000., dtype=torch.float64).reshape(100, 100)
  EXPECT_EQ(Repr(arange(10000., kFloat64).reshape({100, 100})),
            "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.7000e+01, 9.8000e+01,\n"
            "         9.9000e+01],\n"
            "        [1.0000e+02, 1.0100e+02, 1.0200e+02,  ..., 1.9700e+02, 1.9800e+02,\n"
            "         1.9900e+02],\n"
            "        [2.0000e+02, 2.0100e+02, 2.0200e+02,  ..., 2.9700e+02, 2.9800e+02,\n"
            "         2.9900e+02],\n"
            "        ...,\n"
            "        [9.7000e+03, 9.7010e+03, 9.7020e+03,  ..., 9.7970e+03, 9.7980e+03,\n"
            "         9.7990e+03],\n"
            "        [9.8000e+03, 9.8010e+03, 9.8020e+03,  ..., 9.8970e+03, 9.8980e+03,\n"
            "         9.8990e+03],\n"
            "        [9.9000e+03, 9.9010e+03, 9.9020e+03,  ..., 9.9970e+03, 9.9980e+03,\n"
            "         9.9990e+03]], dtype=ember.float64)");
}

TEST_F(PrintTest, SummarisesThreeDimensions) {
  // torch.arange(2000).reshape(20, 10, 10): "..." between 2-D blocks and inside them.
  EXPECT_EQ(Repr(arange(2000).reshape({20, 10, 10})),
            "tensor([[[   0,    1,    2,  ...,    7,    8,    9],\n"
            "         [  10,   11,   12,  ...,   17,   18,   19],\n"
            "         [  20,   21,   22,  ...,   27,   28,   29],\n"
            "         ...,\n"
            "         [  70,   71,   72,  ...,   77,   78,   79],\n"
            "         [  80,   81,   82,  ...,   87,   88,   89],\n"
            "         [  90,   91,   92,  ...,   97,   98,   99]],\n"
            "\n"
            "        [[ 100,  101,  102,  ...,  107,  108,  109],\n"
            "         [ 110,  111,  112,  ...,  117,  118,  119],\n"
            "         [ 120,  121,  122,  ...,  127,  128,  129],\n"
            "         ...,\n"
            "         [ 170,  171,  172,  ...,  177,  178,  179],\n"
            "         [ 180,  181,  182,  ...,  187,  188,  189],\n"
            "         [ 190,  191,  192,  ...,  197,  198,  199]],\n"
            "\n"
            "        [[ 200,  201,  202,  ...,  207,  208,  209],\n"
            "         [ 210,  211,  212,  ...,  217,  218,  219],\n"
            "         [ 220,  221,  222,  ...,  227,  228,  229],\n"
            "         ...,\n"
            "         [ 270,  271,  272,  ...,  277,  278,  279],\n"
            "         [ 280,  281,  282,  ...,  287,  288,  289],\n"
            "         [ 290,  291,  292,  ...,  297,  298,  299]],\n"
            "\n"
            "        ...,\n"
            "\n"
            "        [[1700, 1701, 1702,  ..., 1707, 1708, 1709],\n"
            "         [1710, 1711, 1712,  ..., 1717, 1718, 1719],\n"
            "         [1720, 1721, 1722,  ..., 1727, 1728, 1729],\n"
            "         ...,\n"
            "         [1770, 1771, 1772,  ..., 1777, 1778, 1779],\n"
            "         [1780, 1781, 1782,  ..., 1787, 1788, 1789],\n"
            "         [1790, 1791, 1792,  ..., 1797, 1798, 1799]],\n"
            "\n"
            "        [[1800, 1801, 1802,  ..., 1807, 1808, 1809],\n"
            "         [1810, 1811, 1812,  ..., 1817, 1818, 1819],\n"
            "         [1820, 1821, 1822,  ..., 1827, 1828, 1829],\n"
            "         ...,\n"
            "         [1870, 1871, 1872,  ..., 1877, 1878, 1879],\n"
            "         [1880, 1881, 1882,  ..., 1887, 1888, 1889],\n"
            "         [1890, 1891, 1892,  ..., 1897, 1898, 1899]],\n"
            "\n"
            "        [[1900, 1901, 1902,  ..., 1907, 1908, 1909],\n"
            "         [1910, 1911, 1912,  ..., 1917, 1918, 1919],\n"
            "         [1920, 1921, 1922,  ..., 1927, 1928, 1929],\n"
            "         ...,\n"
            "         [1970, 1971, 1972,  ..., 1977, 1978, 1979],\n"
            "         [1980, 1981, 1982,  ..., 1987, 1988, 1989],\n"
            "         [1990, 1991, 1992,  ..., 1997, 1998, 1999]]])");
}

TEST_F(PrintTest, WrapsLongRows) {
  // torch.arange(0., 7.5, 0.25): 30 floats, 9 per line.
  EXPECT_EQ(Repr(arange(0., 7.5, 0.25)),
            "tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000, 1.2500, 1.5000, 1.7500, 2.0000,\n"
            "        2.2500, 2.5000, 2.7500, 3.0000, 3.2500, 3.5000, 3.7500, 4.0000, 4.2500,\n"
            "        4.5000, 4.7500, 5.0000, 5.2500, 5.5000, 5.7500, 6.0000, 6.2500, 6.5000,\n"
            "        6.7500, 7.0000, 7.2500])");
  // torch.arange(100)
  EXPECT_EQ(Repr(arange(100)),
            "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
            "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,\n"
            "        36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53,\n"
            "        54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71,\n"
            "        72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89,\n"
            "        90, 91, 92, 93, 94, 95, 96, 97, 98, 99])");
  // torch.arange(40.).reshape(2, 20): rows of a matrix wrap one column further in.
  EXPECT_EQ(Repr(arange(40.).reshape({2, 20})),
            "tensor([[ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
            "         14., 15., 16., 17., 18., 19.],\n"
            "        [20., 21., 22., 23., 24., 25., 26., 27., 28., 29., 30., 31., 32., 33.,\n"
            "         34., 35., 36., 37., 38., 39.]])");
}

TEST_F(PrintTest, RequiresGradSuffix) {
  // torch.tensor([1., 2.]).requires_grad_()
  EXPECT_EQ(Repr(tensor({1., 2.}).requires_grad_()), "tensor([1., 2.], requires_grad=True)");
  // torch.ones(2, dtype=torch.float64).requires_grad_()
  EXPECT_EQ(Repr(ones({2}, kFloat64).requires_grad_()),
            "tensor([1., 1.], dtype=ember.float64, requires_grad=True)");
  // torch.tensor([1.5, 2.5]).half().requires_grad_()
  EXPECT_EQ(Repr(tensor({1.5, 2.5}).to(kHalf).requires_grad_()),
            "tensor([1.5000, 2.5000], dtype=ember.float16, requires_grad=True)");
  // Switching it off again removes the suffix.
  Tensor t = tensor({1., 2.});
  t.requires_grad_();
  t.requires_grad_(false);
  EXPECT_EQ(Repr(t), "tensor([1., 2.])");
}

TEST_F(PrintTest, SuffixWrapsOntoANewLine) {
  // torch.arange(0., 2.25, 0.25, dtype=torch.float64): 79 characters leave no room.
  EXPECT_EQ(Repr(arange(0., 2.25, 0.25, kFloat64)),
            "tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000, 1.2500, 1.5000, 1.7500, 2.0000],\n"
            "       dtype=ember.float64)");
  // ... .requires_grad_(): the second suffix follows the first on the new line.
  EXPECT_EQ(Repr(arange(0., 2.25, 0.25, kFloat64).requires_grad_()),
            "tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000, 1.2500, 1.5000, 1.7500, 2.0000],\n"
            "       dtype=ember.float64, requires_grad=True)");
  // torch.arange(0., 2.25, 0.25).requires_grad_()
  EXPECT_EQ(Repr(arange(0., 2.25, 0.25).requires_grad_()),
            "tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000, 1.2500, 1.5000, 1.7500, 2.0000],\n"
            "       requires_grad=True)");
  // torch.arange(0., 2., 0.25, dtype=torch.float64): 71 characters, and still it wraps, since
  // PyTorch counts the line as len + 2 when there is no newline, plus ", " + 19.
  EXPECT_EQ(Repr(arange(0., 2., 0.25, kFloat64)),
            "tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000, 1.2500, 1.5000, 1.7500],\n"
            "       dtype=ember.float64)");
  // torch.arange(12, dtype=torch.float64)
  EXPECT_EQ(Repr(arange(12, kFloat64)),
            "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11.],\n"
            "       dtype=ember.float64)");
  // torch.arange(30, dtype=torch.int32): the short last line of a wrapped tensor has room.
  EXPECT_EQ(Repr(arange(30, kInt32)),
            "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
            "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29], dtype=ember.int32)");
}

TEST_F(PrintTest, NonContiguousInputs) {
  // torch.arange(12).reshape(3, 4).t()
  EXPECT_EQ(Repr(arange(12).reshape({3, 4}).t()),
            "tensor([[ 0,  4,  8],\n"
            "        [ 1,  5,  9],\n"
            "        [ 2,  6, 10],\n"
            "        [ 3,  7, 11]])");
  // torch.arange(10)[0:10:2]
  EXPECT_EQ(Repr(arange(10).slice(0, 0, 10, 2)), "tensor([0, 2, 4, 6, 8])");
  // torch.arange(12.).reshape(3, 4)[:, 1:4:2]
  EXPECT_EQ(Repr(arange(12.).reshape({3, 4}).slice(1, 1, 4, 2)),
            "tensor([[ 1.,  3.],\n"
            "        [ 5.,  7.],\n"
            "        [ 9., 11.]])");
  // torch.arange(12).reshape(3, 4)[1]: a view with a storage offset.
  EXPECT_EQ(Repr(arange(12).reshape({3, 4})[1]), "tensor([4, 5, 6, 7])");
  // torch.tensor([1, 2]).expand(3, 2): stride 0.
  EXPECT_EQ(Repr(tensor({1, 2}).expand({3, 2})),
            "tensor([[1, 2],\n"
            "        [1, 2],\n"
            "        [1, 2]])");
  // torch.tensor([1.5, 2.5]).reshape(2, 1).expand(2, 3)
  EXPECT_EQ(Repr(tensor({1.5, 2.5}).reshape({2, 1}).expand({2, 3})),
            "tensor([[1.5000, 1.5000, 1.5000],\n"
            "        [2.5000, 2.5000, 2.5000]])");
  // torch.arange(24).reshape(2, 3, 4).permute(2, 0, 1)
  EXPECT_EQ(Repr(arange(24).reshape({2, 3, 4}).permute({2, 0, 1})),
            "tensor([[[ 0,  4,  8],\n"
            "         [12, 16, 20]],\n"
            "\n"
            "        [[ 1,  5,  9],\n"
            "         [13, 17, 21]],\n"
            "\n"
            "        [[ 2,  6, 10],\n"
            "         [14, 18, 22]],\n"
            "\n"
            "        [[ 3,  7, 11],\n"
            "         [15, 19, 23]]])");
  // torch.arange(0., 7.5, 0.25).reshape(2, 15)[:, ::2]
  EXPECT_EQ(Repr(arange(0., 7.5, 0.25).reshape({2, 15}).slice(1, 0, 15, 2)),
            "tensor([[0.0000, 0.5000, 1.0000, 1.5000, 2.0000, 2.5000, 3.0000, 3.5000],\n"
            "        [3.7500, 4.2500, 4.7500, 5.2500, 5.7500, 6.2500, 6.7500, 7.2500]])");
  // torch.arange(2000).reshape(40, 50).t(): summarised and transposed.
  EXPECT_EQ(Repr(arange(2000).reshape({40, 50}).t()),
            "tensor([[   0,   50,  100,  ..., 1850, 1900, 1950],\n"
            "        [   1,   51,  101,  ..., 1851, 1901, 1951],\n"
            "        [   2,   52,  102,  ..., 1852, 1902, 1952],\n"
            "        ...,\n"
            "        [  47,   97,  147,  ..., 1897, 1947, 1997],\n"
            "        [  48,   98,  148,  ..., 1898, 1948, 1998],\n"
            "        [  49,   99,  149,  ..., 1899, 1949, 1999]])");
}

TEST_F(PrintTest, PrecisionOption) {
  PrintOptions opts;
  opts.precision = 2;
  set_printoptions(opts);
  EXPECT_EQ(get_printoptions().precision, 2);
  // torch.set_printoptions(precision=2); torch.tensor([1.12345])
  EXPECT_EQ(Repr(tensor({1.12345})), "tensor([1.12])");
  // torch.linspace(0, 1, 4)
  EXPECT_EQ(Repr(linspace(0, 1, 4)), "tensor([0.00, 0.33, 0.67, 1.00])");
  // torch.tensor([1e-5, 1.])
  EXPECT_EQ(Repr(tensor({1e-5, 1.})), "tensor([1.00e-05, 1.00e+00])");

  // torch.set_printoptions(precision=0); torch.tensor([1.5, 2.25]): rounds half to even.
  opts.precision = 0;
  set_printoptions(opts);
  EXPECT_EQ(Repr(tensor({1.5, 2.25})), "tensor([2, 2])");

  // torch.set_printoptions(precision=6); torch.tensor([3.14159265], dtype=torch.float64)
  opts.precision = 6;
  set_printoptions(opts);
  EXPECT_EQ(Repr(tensor({3.14159265}, kFloat64)), "tensor([3.141593], dtype=ember.float64)");

  // torch.set_printoptions(profile="default") brings back the 4 digits.
  set_printoptions(PrintOptions{});
  EXPECT_EQ(Repr(tensor({1.12345})), "tensor([1.1235])");
}

TEST_F(PrintTest, ThresholdEdgeItemsAndLineWidth) {
  PrintOptions opts;
  opts.threshold = 5;
  set_printoptions(opts);
  // torch.set_printoptions(threshold=5); torch.arange(10)
  EXPECT_EQ(Repr(arange(10)), "tensor([0, 1, 2,  ..., 7, 8, 9])");
  // torch.arange(6).reshape(2, 3): over the threshold, but no dim is longer than 2 * edgeitems.
  EXPECT_EQ(Repr(arange(6).reshape({2, 3})),
            "tensor([[0, 1, 2],\n"
            "        [3, 4, 5]])");

  opts.edgeitems = 1;
  set_printoptions(opts);
  // torch.set_printoptions(threshold=5, edgeitems=1); torch.arange(10)
  EXPECT_EQ(Repr(arange(10)), "tensor([0,  ..., 9])");
  // torch.arange(20).reshape(4, 5)
  EXPECT_EQ(Repr(arange(20).reshape({4, 5})),
            "tensor([[ 0,  ...,  4],\n"
            "        ...,\n"
            "        [15,  ..., 19]])");

  opts.threshold = 10;
  opts.edgeitems = 2;
  set_printoptions(opts);
  // torch.set_printoptions(threshold=10, edgeitems=2); torch.arange(30.).reshape(5, 6)
  EXPECT_EQ(Repr(arange(30.).reshape({5, 6})),
            "tensor([[ 0.,  1.,  ...,  4.,  5.],\n"
            "        [ 6.,  7.,  ..., 10., 11.],\n"
            "        ...,\n"
            "        [18., 19.,  ..., 22., 23.],\n"
            "        [24., 25.,  ..., 28., 29.]])");

  opts = PrintOptions{};
  opts.linewidth = 20;
  set_printoptions(opts);
  // torch.set_printoptions(linewidth=20); torch.arange(12)
  EXPECT_EQ(Repr(arange(12)),
            "tensor([ 0,  1,  2,\n"
            "         3,  4,  5,\n"
            "         6,  7,  8,\n"
            "         9, 10, 11])");

  opts.linewidth = 30;
  set_printoptions(opts);
  // torch.set_printoptions(linewidth=30); torch.tensor([1.5, 2.5, 3.5], dtype=torch.float64)
  EXPECT_EQ(Repr(tensor({1.5, 2.5, 3.5}, kFloat64)),
            "tensor([1.5000, 2.5000,\n"
            "        3.5000],\n"
            "       dtype=ember.float64)");

  // torch.set_printoptions(profile="default"); torch.arange(2000)
  set_printoptions(PrintOptions{});
  EXPECT_EQ(Repr(arange(2000)), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
}

TEST_F(PrintTest, ToStringMatchesStream) {
  const Tensor t = arange(12).reshape({3, 4});
  EXPECT_EQ(t.toString(), Repr(t));
  std::ostringstream os;
  os << "x = " << tensor({0.5}) << ";";
  EXPECT_EQ(os.str(), "x = tensor([0.5000]);");
}

}  // namespace
}  // namespace ember
