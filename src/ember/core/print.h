#pragma once
// Print options for operator<<(ostream, Tensor), as torch.set_printoptions.

#include <cstdint>

namespace ember {

struct PrintOptions {
  int precision = 4;         // digits after the point
  int64_t threshold = 1000;  // summarise tensors with more elements than this
  int64_t edgeitems = 3;     // items shown at each end of a summarised dim
  int64_t linewidth = 80;    // characters per line before wrapping
};

void set_printoptions(const PrintOptions& options);
PrintOptions get_printoptions();

}  // namespace ember
