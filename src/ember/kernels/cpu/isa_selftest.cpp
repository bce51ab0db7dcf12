// A check of the compiler flags each ISA level is built with: GCC 12 stores some
// constant integer arrays ({a, a, 0, 0}, {a, a, a, 0}, ...) with one 256-bit broadcast when
// AVX-512 is on or the tuning prefers 256-bit stores by pieces, writing {a, a, a, a}.
// CMakeLists.txt caps those stores at 128 bits (-mstore-max/-mmove-max); tests/isa
// compares what each level's copy of these functions returns with the source.

#include <cstdint>
#include <vector>

namespace ember::kernels::cpu::EMBER_CPU_NS {  // compiled per ISA level (kernels/cpu/isa.h)

namespace {
[[gnu::noinline]] std::vector<int64_t> two_then_zeros() { return {1, 1, 0, 0}; }
[[gnu::noinline]] std::vector<int64_t> three_then_zero() { return {7, 7, 7, 0}; }
[[gnu::noinline]] std::vector<int32_t> four_then_zeros() { return {3, 3, 3, 3, 0, 0, 0, 0}; }
[[gnu::noinline]] std::vector<int64_t> six_then_zeros() { return {2, 2, 2, 2, 2, 2, 0, 0}; }
}  // namespace

std::vector<int64_t> isa_selftest_constants() {
  std::vector<int64_t> out;
  for (auto v : two_then_zeros()) out.push_back(v);
  for (auto v : three_then_zero()) out.push_back(v);
  for (auto v : four_then_zeros()) out.push_back(v);
  for (auto v : six_then_zeros()) out.push_back(v);
  return out;
}

}  // namespace ember::kernels::cpu::EMBER_CPU_NS
