#pragma once
// Internal: the loops shared by the quantized modules (not installed API).

#include <cstdint>

#include "ember/quant/quant.h"

namespace ember::quant::detail {

struct MinMax {
  float lo, hi;
  bool has_nan;
};
// The smallest and largest of x[0..n) (0, 0 when n is 0) and whether any is NaN.
MinMax min_max(const float* x, int64_t n);
// out[i] = clamp(round_half_even(x[i] / scale) + zero_point, qmin, qmax).
void quantize_u8(const float* x, int64_t n, QParams q, int32_t qmin, int32_t qmax, uint8_t* out);

}  // namespace ember::quant::detail
