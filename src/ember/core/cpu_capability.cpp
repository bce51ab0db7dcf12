#include "ember/core/cpu_capability.h"

#include <cstdlib>
#include <cstring>

#include "ember/core/check.h"
#include "ember/kernels/cpu/isa.h"

namespace ember {

namespace {

// The CPU features each level's translation units are compiled for (CMakeLists.txt:
// x86-64-v3 and x86-64-v4). __builtin_cpu_supports also checks that the OS saves the
// AVX / AVX-512 register state.
bool detect(CpuCapability c) {
#if defined(__x86_64__) || defined(__i386__)
  switch (c) {
    case CpuCapability::Default: return true;
    case CpuCapability::AVX2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("f16c");
    case CpuCapability::AVX512:
      return detect(CpuCapability::AVX2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512cd");
  }
  return false;
#else
  return c == CpuCapability::Default;
#endif
}

std::string supported_list() {
  std::string s;
  for (CpuCapability c : supported_cpu_capabilities()) {
    if (!s.empty()) s += ", ";
    s += to_string(c);
  }
  return s;
}

// The level from the environment and the CPU, or -1 when EMBER_CPU_CAPABILITY is bad
// (cpu_capability() then explains why).
int choose_level() {
  const char* env = std::getenv("EMBER_CPU_CAPABILITY");
  if (env == nullptr || *env == '\0') {
    if (detect(CpuCapability::AVX512)) return 2;
    if (detect(CpuCapability::AVX2)) return 1;
    return 0;
  }
  for (int l = 0; l <= 2; ++l) {
    const auto c = static_cast<CpuCapability>(l);
    if (strcasecmp(env, to_string(c)) == 0) return detect(c) ? l : -1;
  }
  return -1;
}

}  // namespace

const char* to_string(CpuCapability c) {
  switch (c) {
    case CpuCapability::Default: return "default";
    case CpuCapability::AVX2: return "avx2";
    case CpuCapability::AVX512: return "avx512";
  }
  return "unknown";
}

bool cpu_supports(CpuCapability c) { return detect(c); }

std::vector<CpuCapability> supported_cpu_capabilities() {
  std::vector<CpuCapability> out;
  for (int l = 0; l <= 2; ++l) {
    if (detect(static_cast<CpuCapability>(l))) out.push_back(static_cast<CpuCapability>(l));
  }
  return out;
}

namespace kernels::cpu {
std::atomic<int> g_isa_level{-2};

int compute_isa_level() {
  static const int level = choose_level();
  g_isa_level.store(level, std::memory_order_relaxed);
  return level;
}

void isa_level_error() {
  (void)ember::cpu_capability();  // throws: the level is unusable
  std::abort();
}
}  // namespace kernels::cpu

CpuCapability cpu_capability() {
  const int level = kernels::cpu::isa_level();
  if (level >= 0) return static_cast<CpuCapability>(level);
  const char* env = std::getenv("EMBER_CPU_CAPABILITY");
  const std::string value = env ? env : "";
  for (int l = 0; l <= 2; ++l) {
    const auto c = static_cast<CpuCapability>(l);
    if (strcasecmp(value.c_str(), to_string(c)) == 0) {
      // A configuration error: it names cpu_capability, not the op that first needed a kernel.
      throw Error(Error::OwnOp{}, "cpu_capability",
                  detail::str_cat("EMBER_CPU_CAPABILITY=", value, " asks for ", to_string(c),
                                  " kernels, but this CPU lacks the instructions they need; this CPU "
                                  "supports: ", supported_list(),
                                  ". Unset EMBER_CPU_CAPABILITY or pick one of those"));
    }
  }
  throw Error(Error::OwnOp{}, "cpu_capability",
              detail::str_cat("EMBER_CPU_CAPABILITY=", value,
                              " is not a known level; use default, avx2 or avx512 (this CPU supports: ",
                              supported_list(), ")"));
}

std::string cpu_capability_name() { return to_string(cpu_capability()); }

}  // namespace ember
