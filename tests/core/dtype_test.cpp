#include <gtest/gtest.h>

#include <ember/ember.h>

#include <sstream>

// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace core_dtype_test {

using namespace ember;

TEST(DType, SizesNamesAndCategories) {
  EXPECT_EQ(element_size(kFloat32), 4u);
  EXPECT_EQ(element_size(kFloat64), 8u);
  EXPECT_EQ(element_size(kFloat16), 2u);
  EXPECT_EQ(element_size(kBFloat16), 2u);
  EXPECT_EQ(element_size(kInt8), 1u);
  EXPECT_EQ(element_size(kUInt8), 1u);
  EXPECT_EQ(element_size(kInt16), 2u);
  EXPECT_EQ(element_size(kInt32), 4u);
  EXPECT_EQ(element_size(kInt64), 8u);
  EXPECT_EQ(element_size(kBool), 1u);
  EXPECT_EQ(dtype_name(kBFloat16), "bfloat16");
  EXPECT_EQ(dtype_name(kUInt8), "uint8");
  std::ostringstream os;
  os << kFloat64;
  EXPECT_EQ(os.str(), "float64");
  EXPECT_TRUE(is_floating_point(kFloat16));
  EXPECT_TRUE(is_floating_point(kBFloat16));
  EXPECT_FALSE(is_floating_point(kInt64));
  EXPECT_FALSE(is_floating_point(kBool));
  EXPECT_TRUE(is_integral(kBool, true));
  EXPECT_FALSE(is_integral(kBool, false));
  EXPECT_EQ(kLong, kInt64);
  EXPECT_EQ(kHalf, kFloat16);
  EXPECT_EQ(kDouble, kFloat64);
  EXPECT_THROW(element_size(DType::Undefined), Error);
}

TEST(DType, PromoteTypesSpotChecks) {
  // The rest of the lattice is compared with libtorch in tests/parity.
  EXPECT_EQ(promote_types(kUInt8, kInt8), kInt16);
  EXPECT_EQ(promote_types(kBool, kUInt8), kUInt8);
  EXPECT_EQ(promote_types(kInt64, kFloat16), kFloat16);
  EXPECT_EQ(promote_types(kFloat16, kBFloat16), kFloat32);
  EXPECT_EQ(promote_types(kBFloat16, kInt64), kBFloat16);
  EXPECT_EQ(promote_types(kFloat32, kFloat64), kFloat64);
  EXPECT_EQ(promote_types(kBool, kBool), kBool);
  for (int a = 0; a < kNumDTypes; ++a) {
    for (int b = 0; b < kNumDTypes; ++b) {
      auto x = static_cast<DType>(a), y = static_cast<DType>(b);
      EXPECT_EQ(promote_types(x, y), promote_types(y, x)) << x << " " << y;
    }
  }
}

TEST(DType, ResultTypeScalarsKeepTheTensorsCategory) {
  Tensor i32 = zeros({3}, kInt32);
  Tensor f16 = zeros({3}, kFloat16);
  Tensor b = zeros({3}, kBool);
  EXPECT_EQ(result_type(i32, Scalar(5)), kInt32);          // int scalar: no widening
  EXPECT_EQ(result_type(i32, Scalar(2.5)), kFloat32);      // float scalar: default dtype
  EXPECT_EQ(result_type(f16, Scalar(2.5)), kFloat16);      // same category: tensor wins
  EXPECT_EQ(result_type(b, Scalar(3)), kInt64);            // bool tensor, int scalar
  EXPECT_EQ(result_type(b, Scalar(true)), kBool);
  EXPECT_EQ(result_type(i32, zeros({}, kInt64)), kInt32);  // 0-dim tensor of same category
  EXPECT_EQ(result_type(i32, zeros({}, kFloat64)), kFloat64);  // higher category: promotes
  EXPECT_EQ(result_type(zeros({}, kInt64), zeros({}, kInt32)), kInt64);
  EXPECT_EQ(result_type(Scalar(1), Scalar(2.0)), kFloat32);
  set_default_dtype(kFloat64);
  EXPECT_EQ(result_type(i32, Scalar(2.5)), kFloat64);
  set_default_dtype(kFloat32);
  EXPECT_THROW(set_default_dtype(kInt32), Error);
}

TEST(Scalar, KindsAndConversions) {
  Scalar a(3), b(2.5), c(true), d(Half(1.5f));
  EXPECT_TRUE(a.is_integral());
  EXPECT_EQ(a.dtype(), kInt64);
  EXPECT_TRUE(b.is_floating_point());
  EXPECT_EQ(b.dtype(), kFloat64);
  EXPECT_TRUE(c.is_boolean());
  EXPECT_EQ(c.to<int>(), 1);
  EXPECT_DOUBLE_EQ(d.to_double(), 1.5);
  EXPECT_EQ(b.to<int64_t>(), 2);
  EXPECT_FLOAT_EQ(static_cast<float>(b.to<Half>()), 2.5f);
  std::ostringstream os;
  os << a << " " << b << " " << c;
  EXPECT_EQ(os.str(), "3 2.5 True");
}

TEST(Device, ParsesAndRejects) {
  EXPECT_TRUE(Device("cpu").is_cpu());
  Device d("cuda:1");
  EXPECT_TRUE(d.is_cuda());
  EXPECT_EQ(d.index(), 1);
  EXPECT_EQ(d.str(), "cuda:1");
  EXPECT_EQ(Device(kCPU), Device("cpu"));
  EXPECT_THROW(Device("tpu"), Error);
  EXPECT_THROW(Device("cuda:x"), Error);
  EXPECT_THROW(Device("cuda:"), Error);
  try {
    zeros({2}, Device("cuda"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("only the cpu backend"), std::string::npos) << e.what();
  }
}

}  // namespace
