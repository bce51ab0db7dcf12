#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "ember/core/cpu_capability.h"
#include "ember/kernels/cpu/isa.h"

// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace core_cpu_capability_test {

TEST(CpuCapability, ChosenLevelIsSupportedAndNamed) {
  const auto supported = ember::supported_cpu_capabilities();
  ASSERT_FALSE(supported.empty());
  EXPECT_EQ(supported.front(), ember::CpuCapability::Default);
  const ember::CpuCapability chosen = ember::cpu_capability();
  EXPECT_TRUE(ember::cpu_supports(chosen));
  EXPECT_EQ(ember::cpu_capability_name(), ember::to_string(chosen));
  const char* env = std::getenv("EMBER_CPU_CAPABILITY");
  if (env == nullptr || *env == '\0') {
    // Left to itself, ember picks the best level the CPU has.
    EXPECT_EQ(chosen, supported.back());
  } else {
    EXPECT_EQ(ember::cpu_capability_name(), env);
  }
}

// GCC 12 stores some constant arrays with one 256-bit broadcast under AVX-512 or some
// tunings, writing {1, 1, 1, 1} for {1, 1, 0, 0}; CMakeLists.txt's flags must prevent it at
// every level this CPU can run.
TEST(CpuCapability, EveryLevelCompilesConstantsAsWritten) {
  const std::vector<int64_t> expected{1, 1, 0, 0, 7, 7, 7, 0, 3, 3, 3, 3, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 0, 0};
  for (ember::CpuCapability c : ember::supported_cpu_capabilities()) {
    EXPECT_EQ(ember::kernels::cpu::isa_selftest_constants(static_cast<int>(c)), expected)
        << "level " << ember::to_string(c);
  }
}

}  // namespace
