// Runs one kernel under the CPU level EMBER_CPU_CAPABILITY asks for and prints what it
// chose: the CTest cases in tests/CMakeLists.txt ("isa.*") check the overrides and the
// errors for unknown or unsupported levels. With --unsupported it sets the variable to
// the first level this CPU lacks (exit 77, "skipped", when it has them all).

#include <cstdlib>
#include <cstring>
#include <iostream>

#include "ember/core/cpu_capability.h"
#include "ember/ember.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--unsupported") == 0) {
    const char* missing = nullptr;
    for (auto c : {ember::CpuCapability::AVX512, ember::CpuCapability::AVX2}) {
      if (!ember::cpu_supports(c)) missing = ember::to_string(c);
    }
    if (missing == nullptr) {
      std::cout << "this CPU supports every level; nothing to refuse\n";
      return 77;
    }
    setenv("EMBER_CPU_CAPABILITY", missing, 1);
  }
  try {
    // A kernel call decides the level; the result must not depend on it beyond rounding.
    ember::Tensor x = ember::arange(0, 64, ember::kFloat32).div(16);
    const float s = ember::exp(x).sum().item<float>();
    std::cout << "capability: " << ember::cpu_capability_name() << "\n";
    std::cout << "sum(exp(x)) = " << s << "\n";
    return (s > 831.0f && s < 831.1f) ? 0 : 1;
  } catch (const ember::Error& e) {
    std::cout << "error: " << e.what() << "\n";
    return 2;
  }
}
