#include "ember/core/dtype.h"

#include <atomic>
#include <ostream>

#include "ember/core/check.h"

namespace ember {

namespace {
constexpr size_t kSizes[] = {1, 1, 2, 4, 8, 2, 4, 8, 1, 2};
constexpr std::string_view kNames[] = {"uint8",   "int8",    "int16",   "int32", "int64",
                                       "float16", "float32", "float64", "bool",  "bfloat16"};
static_assert(sizeof(kSizes) / sizeof(kSizes[0]) == kNumDTypes, "one size per dtype");
static_assert(sizeof(kNames) / sizeof(kNames[0]) == kNumDTypes, "one name per dtype");

std::atomic<DType> g_default_dtype{DType::Float32};
}  // namespace

size_t element_size(DType t) {
  EMBER_CHECK(t != DType::Undefined, "[element_size] dtype is undefined");
  return kSizes[static_cast<int>(t)];
}

std::string_view dtype_name(DType t) {
  if (t == DType::Undefined) return "undefined";
  return kNames[static_cast<int>(t)];
}

std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

DType promote_types(DType a, DType b) {
  constexpr DType u1 = kUInt8, i1 = kInt8, i2 = kInt16, i4 = kInt32, i8 = kInt64, f2 = kFloat16,
                  f4 = kFloat32, f8 = kFloat64, b1 = kBool, bf = kBFloat16;
  // Row a, column b, in enum order. Same lattice as PyTorch 1.13 (complex and
  // quantized types left out); checked against torch.promote_types in the tests.
  static constexpr DType kTable[kNumDTypes][kNumDTypes] = {
      /* u1 */ {u1, i2, i2, i4, i8, f2, f4, f8, u1, bf},
      /* i1 */ {i2, i1, i2, i4, i8, f2, f4, f8, i1, bf},
      /* i2 */ {i2, i2, i2, i4, i8, f2, f4, f8, i2, bf},
      /* i4 */ {i4, i4, i4, i4, i8, f2, f4, f8, i4, bf},
      /* i8 */ {i8, i8, i8, i8, i8, f2, f4, f8, i8, bf},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f4, f8, f2, f4},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f8, f4, f4},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
      /* b1 */ {u1, i1, i2, i4, i8, f2, f4, f8, b1, bf},
      /* bf */ {bf, bf, bf, bf, bf, f4, f4, f8, bf, bf},
  };
  if (a == DType::Undefined) return b;
  if (b == DType::Undefined) return a;
  return kTable[static_cast<int>(a)][static_cast<int>(b)];
}

DType get_default_dtype() { return g_default_dtype.load(std::memory_order_relaxed); }

void set_default_dtype(DType t) {
  EMBER_CHECK(is_floating_point(t), "[set_default_dtype] only floating-point types can be the default, got ",
              t);
  g_default_dtype.store(t, std::memory_order_relaxed);
}

}  // namespace ember
