// Dtype conversion kernels (copy_ / to()) agree with the scalar bit conversions of
// core/half.h for every float16 value, at whatever CPU level this process runs (make test
// runs this area at every level the machine has: Note [CPU dispatch]).

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ember/ember.h"

// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace ops_convert_test {

// Every float16 bit pattern except the signalling NaNs (F16C quiets them; the scalar
// conversion keeps the bits).
std::vector<uint16_t> all_halves() {
  std::vector<uint16_t> v;
  for (uint32_t h = 0; h < 65536; ++h) {
    const bool nan = (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0;
    if (nan && (h & 0x200u) == 0) continue;
    v.push_back(static_cast<uint16_t>(h));
  }
  return v;
}

TEST(Convert, Float16ToFloat32MatchesTheBitConversionEverywhere) {
  std::vector<uint16_t> bits = all_halves();
  const int64_t n = static_cast<int64_t>(bits.size());
  ember::Tensor h = ember::from_blob(bits.data(), {n}, ember::TensorOptions(ember::kFloat16));
  // Contiguous (the vector path plus a tail), and strided through a reversed view.
  const ember::Tensor f = h.to(ember::kFloat32);
  const ember::Tensor fr = h.flip({0}).to(ember::kFloat32);
  const float* fp = f.data_ptr<float>();
  const float* frp = fr.data_ptr<float>();
  int mismatches = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t want = std::bit_cast<uint32_t>(ember::half_bits_to_float(bits[i]));
    if (std::bit_cast<uint32_t>(fp[i]) != want || std::bit_cast<uint32_t>(frp[n - 1 - i]) != want) {
      if (++mismatches < 5) ADD_FAILURE() << "float16 bits 0x" << std::hex << bits[i] << " gave 0x" << std::bit_cast<uint32_t>(fp[i]) << " / 0x" << std::bit_cast<uint32_t>(frp[n - 1 - i]) << ", want 0x" << want;
    }
  }
  EXPECT_EQ(mismatches, 0) << "at CPU level " << ember::cpu_capability_name();
}

TEST(Convert, Float32ToFloat16RoundTripsAndRoundsToNearestEven) {
  std::vector<uint16_t> bits = all_halves();
  const int64_t n = static_cast<int64_t>(bits.size());
  ember::Tensor h = ember::from_blob(bits.data(), {n}, ember::TensorOptions(ember::kFloat16));
  const ember::Tensor back = h.to(ember::kFloat32).to(ember::kFloat16);
  EXPECT_EQ(std::memcmp(back.data_ptr(), bits.data(), bits.size() * 2), 0);
  // 1 + 2^-11 lies halfway between 1 and the next half (1 + 2^-10): ties go to even (1).
  const ember::Tensor tie = ember::full({9}, 1.0f + 0x1p-11f).to(ember::kFloat16).to(ember::kFloat32);
  EXPECT_EQ(tie.data_ptr<float>()[8], 1.0f);
  const ember::Tensor up = ember::full({9}, 1.0f + 3 * 0x1p-11f).to(ember::kFloat16).to(ember::kFloat32);
  EXPECT_EQ(up.data_ptr<float>()[8], 1.0f + 0x1p-9f);
}

}  // namespace
