#pragma once
// Internal: memory-overlap checks shared by in-place ops and copy_.

#include "ember/core/tensor.h"

namespace ember {

// Throws when two elements of t share memory (an expanded view), which would make an
// in-place write depend on the order of writes. `op` names the caller.
void check_no_internal_overlap(const Tensor& t, const char* op);
// True when a and b view the same storage and their byte ranges intersect (a cheap,
// conservative test: interleaved views that never touch the same element also count).
bool may_overlap(const Tensor& a, const Tensor& b);
// True when a and b address exactly the same elements in the same layout.
bool is_same_view(const Tensor& a, const Tensor& b);

}  // namespace ember
