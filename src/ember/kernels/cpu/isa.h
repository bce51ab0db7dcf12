#pragma once
// Internal: runtime CPU dispatch of the hot kernels (Note [CPU dispatch] in
// core/cpu_capability.h).
//
// The kernel files listed in EMBER_DISPATCH_SOURCES (CMakeLists.txt) are compiled three
// times, with -march=x86-64-v2 / -v3 / -v4, and EMBER_CPU_NS set to baseline / avx2 /
// avx512. Each copy defines its entry points in ember::kernels::cpu::EMBER_CPU_NS, and
// everything of its own (helpers, SIMD wrappers, lambdas) lives in that namespace too,
// so no two levels define the same symbol. Shared inline code from other headers (Tensor
// accessors, the loop templates' non-lambda instantiations, std::) may be emitted by
// every copy; the baseline objects come first on the link line, so where the linker
// keeps one copy it keeps the baseline one (tests/isa/check_isa_symbols.py checks that
// no AVX instruction lies outside the avx2/avx512 namespaces).
//
// isa_dispatch.cpp defines the public entry points (ember::kernels::cpu::unary, ...), each a
// switch on isa_level() that calls one level's copy.

#include <atomic>
#include <cstdint>
#include <vector>

namespace ember::kernels::cpu {

// The chosen level once known, -2 before (a relaxed load is a plain move on x86).
__attribute__((visibility("hidden"))) extern std::atomic<int> g_isa_level;
int compute_isa_level();
// 0 baseline, 1 avx2, 2 avx512; -1 when EMBER_CPU_CAPABILITY is unusable. Computed once.
inline int isa_level() {
  const int level = g_isa_level.load(std::memory_order_relaxed);
  return level != -2 ? level : compute_isa_level();
}
// Throws the ember::Error that explains why isa_level() is -1.
[[noreturn]] void isa_level_error();

// The constants of isa_selftest.cpp as level `level`'s copy computed them; the source says
// {1, 1, 0, 0, 7, 7, 7, 0, 3, 3, 3, 3, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 0, 0}.
std::vector<int64_t> isa_selftest_constants(int level);
}  // namespace ember::kernels::cpu
