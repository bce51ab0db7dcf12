#pragma once
// Which instruction-set level ember's hot kernels run at. Note [CPU dispatch]: ember is
// built for a baseline x86-64 level (x86-64-v2: SSE4.2, no AVX) and its hot kernels are
// compiled once more per level (AVX2+FMA, AVX-512). The level is chosen once, on the
// first kernel call, from what the CPU (and OS) support; EMBER_CPU_CAPABILITY=default|
// avx2|avx512 overrides it (like PyTorch's ATEN_CPU_CAPABILITY), and a level the CPU
// lacks is refused with an ember::Error rather than crashing on an illegal instruction.

#include <string>
#include <vector>

namespace ember {

enum class CpuCapability : int { Default = 0, AVX2 = 1, AVX512 = 2 };

// The level the kernels run at. Throws ember::Error when EMBER_CPU_CAPABILITY names an
// unknown level or one this CPU lacks.
CpuCapability cpu_capability();
// "default", "avx2" or "avx512": the chosen level's name (what EMBER_CPU_CAPABILITY takes).
std::string cpu_capability_name();
const char* to_string(CpuCapability c);
// Whether this CPU (and OS) can run the kernels of level c.
bool cpu_supports(CpuCapability c);
// Every level this CPU can run, lowest first (always starts with Default).
std::vector<CpuCapability> supported_cpu_capabilities();

}  // namespace ember
