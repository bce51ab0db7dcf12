#pragma once
// Intra-op parallelism. Note [Thread-count-independent chunks]: work is cut into chunks
// whose boundaries depend only on the range and the grain size, never on the number of
// threads, and any partial results are combined in chunk order. A program therefore
// produces bit-identical results with 1 or N threads (DESIGN.md, decision 5).

#include <cstdint>

#include "ember/core/function_ref.h"

namespace ember {

// Threads used by ember's parallel loops (and by the BLAS library). n >= 1.
void set_num_threads(int n);
int get_num_threads();
// True inside a parallel_for body.
bool in_parallel_region();

// Calls fn(chunk_begin, chunk_end) for the chunks [begin + k*grain, begin + (k+1)*grain)
// covering [begin, end), in parallel when there is more than one chunk. Each chunk is
// handed to exactly one call. Exceptions thrown by fn reach the caller (the first one).
void parallel_for(int64_t begin, int64_t end, int64_t grain_size,
                  FunctionRef<void(int64_t, int64_t)> fn);

}  // namespace ember
