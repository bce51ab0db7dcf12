#include "ember/kernels/cpu/reduce.h"
#include "ember/kernels/cpu/plane_sum.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "ember/core/parallel.h"
#include "ember/kernels/cpu/loops.h"
#include "ember/kernels/cpu/vec.h"

namespace ember::kernels::cpu::EMBER_CPU_NS {  // compiled per ISA level (kernels/cpu/isa.h)

namespace {

// Elements per chunk when one long run is split; fixed, so sums do not depend on threads.
constexpr int64_t kChunk = 1 << 15;

// Note [Fixed-lane accumulation]: the fast float/double loops below keep kAccLanes = 32
// independent accumulators, lane k taking the elements whose index within the run is k mod
// 32, and combine the lanes in one fixed tree at the end. Written as plain loops over
// arrays, GCC vectorises them at every ISA level (SSE, AVX2 or AVX-512 registers)
// without changing which values meet in which order, so a result is bit-identical at every
// level; runs are cut at fixed chunk boundaries (Note [Deterministic reductions]), so it
// does not depend on the thread count either. 32 lanes also hide the latency of the adds
// and compares: one accumulator per element would be a serial dependency chain.
constexpr int64_t kAccLanes = 32;

// Note [Column tiles]: a reduction over a non-last dim (inner > 1) vectorises across the
// columns and reads whole rows of up to kTileCols columns, so the reads stream through
// memory (blocks of 256 columns, i.e. 1 KiB then a jump to the next row, ran 2.7x slower on
// a 4096x4096 float32 sum over dim 0). 2048 columns keep a tile's accumulators (2048 doubles,
// 16 KiB) in L1 beside the eight rows streaming through it: with 4096 columns, all of L1 for
// a sum's doubles, a 4096x4096 float32 sum over dim 0 read 80-92% of the bandwidth measured
// beside it (bench/README.md) and amax 72-94%, with 2048 91-111% and 89-98%. (float32 var's
// tiles are 2048 columns by at least 1024 rows: Note [Column variance about a shift].) For
// parallelism the rows are cut into chunks of a
// fixed number of rows, kTileElems / columns, which depends only on the shape; each (outer,
// row chunk, column block) tile is one task writing its partial results, and the partials
// of an output element are combined in chunk order (Note [Deterministic reductions]).
//
// Note [Eight rows per pass]: the float tiles read eight rows at once and combine each
// column's eight values in registers (a fixed tree, the same at every vector width) before
// they touch the tile's accumulators, so the accumulators are loaded and stored once per
// eight input vectors. Updating an accumulator row per input row (a load and a store of the
// accumulator for every vector read) kept a 4096x4096 sum over dim 0 at about 60% of the
// read bandwidth: the stores compete with the lines streaming into L1. Eight streams of
// whole rows, by contrast, read as fast as one contiguous stream.
constexpr int64_t kTileCols = 2048;
constexpr int64_t kTileElems = int64_t{1} << 19;

// Note [Next rows into L2]: the eight streams of a pass are a few KiB each (a tile's width of
// one row), and the hardware prefetchers pick each up late, every pass anew. So while a
// block of eight rows is read, the next block's lines are prefetched into L2 in address
// order, one row segment after the other (a single stream), eight lines for each line read
// from a row of the current block: the next pass then reads from L2. Sum over dim 0 of a
// 4096x4096 float32 tensor: 92-93% of the read bandwidth beside it without, 97-101% with. (Into
// L1 instead, or the next rows' lines at the columns being read, ran slower than no prefetch:
// 84% against 91%.)
class NextRows {
 public:
  // The block of eight rows at next (nullptr: none), rows `stride` elements apart, each a
  // segment of w elements of `elem` bytes.
  NextRows(const void* next, int64_t stride, int64_t w, int64_t elem)
      : p_(reinterpret_cast<uintptr_t>(next)), row_(p_), stride_(static_cast<uintptr_t>(stride * elem)),
        lines_((w * elem + 63) / 64), seg_(next ? 0 : 8) {}
  // Runs each(j) for j < w in order, prefetching eight lines per `per_line` columns. each(j)
  // must touch only column j of its outputs, which must not overlap its inputs: the loop is
  // vectorised without the runtime overlap checks GCC would otherwise add (whose failure path,
  // one column at a time, it took for the shift of the first block of a variance tile).
  template <typename F>
  void for_columns(int64_t w, int64_t per_line, F each) {
    int64_t j0 = 0;
    for (; j0 + per_line <= w; j0 += per_line) {
      step();
#pragma GCC ivdep
      for (int64_t j = j0; j < j0 + per_line; ++j) each(j);
    }
    for (int64_t j = j0; j < w; ++j) each(j);
  }

 private:
  // Prefetches the next eight lines, if any are left. (Addresses as integers: a prefetch
  // never faults, and the walk may step past the tensor's end, where a pointer must not.)
  void step() {
    for (int m = 0; m < 8 && seg_ < 8; ++m) {
      __builtin_prefetch(reinterpret_cast<const void*>(p_), 0, 2);
      p_ += 64;
      if (++line_ == lines_) {
        line_ = 0;
        row_ += stride_;
        p_ = row_;
        ++seg_;
      }
    }
  }

  uintptr_t p_, row_, stride_;
  int64_t lines_, line_ = 0;
  int seg_;
};

struct ColTiles {
  int64_t cols, col_blocks, rows, chunks;
};

// A tile of a column reduction: rows [r0, r1) of columns [c0, c0 + w) at outer index o.
// Passed to each tile as the tile of the task after it (w == 0: none), whose first block of
// rows the tile's last block prefetches (Note [Next rows into L2]).
struct TileAt {
  int64_t o = 0, r0 = 0, r1 = 0, c0 = 0, w = 0;
  // The tile's first element in x (shape s), or nullptr where there is no tile.
  template <typename T>
  const T* start(const T* x, ReduceShape s) const {
    return w > 0 ? x + (o * s.len + r0) * s.inner + c0 : nullptr;
  }
};
ColTiles col_tiles(ReduceShape s, int64_t tile_elems, int64_t max_cols) {
  ColTiles t;
  t.cols = std::min(s.inner, max_cols);
  t.col_blocks = (s.inner + t.cols - 1) / t.cols;
  t.rows = std::max<int64_t>(8, tile_elems / t.cols / 8 * 8);
  t.chunks = (s.len + t.rows - 1) / t.rows;
  return t;
}

// Runs tile(here, part, next) for every tile `here` of s (s.len > 0, s.inner > 1), where
// part points at the partials of its columns [c0, c0 + w) in row chunk r0 / rows and next is
// the tile of the following task (likely run next by the same thread: the tasks are split
// in contiguous runs), then finish(k, n, partials, chunks, stride, rows) for runs of outputs k,
// k + 1, ..., k + n - 1 (k = o * inner + i, all of one o), where output k + j has its partials
// at partials[c * stride + j], c < chunks, each chunk of `rows` rows but the last, in tasks of
// finish_grain outputs.
template <typename P, typename Tile, typename Finish>
void col_reduce(ReduceShape s, int64_t tile_elems, Tile tile, Finish finish, int64_t max_cols = kTileCols,
                int64_t finish_grain = 4096) {
  const ColTiles t = col_tiles(s, tile_elems, max_cols);
  const int64_t tasks = s.outer * t.chunks * t.col_blocks;
  const auto tile_at = [&](int64_t k) {
    TileAt a;
    if (k >= tasks) return a;
    a.o = k / (t.chunks * t.col_blocks);
    a.r0 = k / t.col_blocks % t.chunks * t.rows;
    a.r1 = std::min(s.len, a.r0 + t.rows);
    a.c0 = k % t.col_blocks * t.cols;
    a.w = std::min(t.cols, s.inner - a.c0);
    return a;
  };
  // Every partial is written by its tile before it is read: no zeroing (P is trivial).
  static_assert(std::is_trivially_default_constructible_v<P>);
  const std::unique_ptr<P[]> part(new P[static_cast<size_t>(s.outer * t.chunks * s.inner)]);
  parallel_for(0, tasks, 1, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const TileAt here = tile_at(k);
      tile(here, part.get() + (here.o * t.chunks + here.r0 / t.rows) * s.inner + here.c0, tile_at(k + 1));
    }
  });
  parallel_for(0, s.outer * s.inner, finish_grain, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e;) {
      const int64_t o = k / s.inner, i = k % s.inner, n = std::min(e - k, s.inner - i);
      finish(k, n, part.get() + o * t.chunks * s.inner + i, t.chunks, s.inner, t.rows);
      k += n;
    }
  });
}


template <typename T>
using acc_of = std::conditional_t<std::is_floating_point_v<acc_t<T>>, double,
                                  std::conditional_t<std::is_same_v<T, uint64_t>, uint64_t, int64_t>>;

// Sum of n contiguous values: floating values with 8 independent accumulators (vectorisable,
// and more accurate than one running sum), integers with one.
//
// Note [Integer sums in one accumulator]: integer addition, wrapping through the unsigned
// type, is associative, so one accumulator gives the same value as any order of the adds,
// and GCC vectorises the plain loop correctly. The 8-accumulator form below is miscompiled
// by GCC 12.2 at -O3 for integers narrower than the accumulator (uint8, int8, int16, int32
// into int64): its loop vectoriser counted only some lanes, so a sum of 30000 int32 ones
// was 15000 at the AVX-512 level and a sum of 40000 uint8 ones 5000, at every level in
// some form (tests/ops/reduce_test.cpp, Reduce.IntegerSumsOfLongRuns).
template <typename T, typename A>
A sum_run(const T* p, int64_t n) {
  if constexpr (std::is_same_v<T, float> && std::is_same_v<A, double>) {
    return float_run_sum(p, n);  // kernels/cpu/plane_sum.h
  }
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    U sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<U>(static_cast<A>(static_cast<acc_t<T>>(p[i])));
    return static_cast<A>(sum);
  }
  A acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) acc[k] = wrapping_add(acc[k], static_cast<A>(static_cast<acc_t<T>>(p[i + k])));
  }
  for (int k = 0; i < n; ++i, ++k) acc[k] = wrapping_add(acc[k], static_cast<A>(static_cast<acc_t<T>>(p[i])));
  const auto add = [](A a, A b) { return wrapping_add(a, b); };
  return add(add(add(acc[0], acc[1]), add(acc[2], acc[3])), add(add(acc[4], acc[5]), add(acc[6], acc[7])));
}

// Few long contiguous rows (inner == 1, outer < 4, len > kChunk) do not give each thread a row
// of its own, so each row is cut into fixed chunks of kChunk values, reduced in parallel by
// run(chunk, n, row); the caller folds row o's partials, [o * chunks, (o + 1) * chunks), in
// chunk order (Note [Deterministic reductions]). Partials of bool are stored as bytes:
// std::vector<bool> packs them into shared words that two threads must not write at once.
bool few_long_rows(ReduceShape s) { return s.inner == 1 && s.outer < 4 && s.len > kChunk; }
int64_t row_chunks(ReduceShape s) { return (s.len + kChunk - 1) / kChunk; }

template <typename P, typename T, typename Run>
std::vector<std::conditional_t<std::is_same_v<P, bool>, uint8_t, P>> row_chunk_partials(const T* x, ReduceShape s,
                                                                                        Run run) {
  const int64_t chunks = row_chunks(s);
  std::vector<std::conditional_t<std::is_same_v<P, bool>, uint8_t, P>> partial(static_cast<size_t>(s.outer * chunks));
  parallel_for(0, s.outer * chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const int64_t o = k / chunks, c = k % chunks;
      partial[k] = run(x + o * s.len + c * kChunk, std::min(kChunk, s.len - c * kChunk), o);
    }
  });
  return partial;
}

// Reduces each (o, :, i) with `step(acc, x)` from `init`, finishing with `done(acc, len)`;
// for a single long row the work is split into fixed chunks combined by `merge`.
template <typename T, typename O, typename A, typename Step, typename Merge, typename Done>
void generic_reduce(const Tensor& out, const Tensor& in, ReduceShape s, A init, Step step, Merge merge, Done done) {
  const T* x = in.data_ptr<T>();
  O* y = out.data_ptr<O>();
  const int64_t outputs = s.outer * s.inner;
  if (outputs == 0) return;
  if (few_long_rows(s)) {
    const int64_t chunks = row_chunks(s);
    const auto partial = row_chunk_partials<A>(x, s, [&](const T* row, int64_t n, int64_t) {
      A acc = init;
      for (int64_t r = 0; r < n; ++r) acc = step(acc, row[r]);
      return acc;
    });
    for (int64_t o = 0; o < s.outer; ++o) {
      A acc = partial[o * chunks];
      for (int64_t c = 1; c < chunks; ++c) acc = merge(acc, partial[o * chunks + c]);
      y[o] = static_cast<O>(done(acc, s.len));
    }
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kChunk / std::max<int64_t>(1, s.len));
  parallel_for(0, outputs, grain, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const int64_t o = k / s.inner, i = k % s.inner;
      const T* p = x + o * s.len * s.inner + i;
      A acc = init;
      for (int64_t r = 0; r < s.len; ++r) acc = step(acc, p[r * s.inner]);
      y[k] = static_cast<O>(done(acc, s.len));
    }
  });
}

// acc[j] += the sum of column j over the eight rows at row, row + stride, ..., j < w: the
// eight floats added as a fixed tree in float, the result added in double.
// next: the following block of eight rows, next_w columns wide, prefetched meanwhile (Note
// [Next rows into L2]).
void add_eight_rows(const float* row, int64_t stride, int64_t w, double* __restrict acc, const float* next,
                    int64_t next_w) {
  const float *r0 = row, *r1 = r0 + stride, *r2 = r1 + stride, *r3 = r2 + stride;
  const float *r4 = r3 + stride, *r5 = r4 + stride, *r6 = r5 + stride, *r7 = r6 + stride;
  NextRows(next, stride, next_w, sizeof(float)).for_columns(w, 16, [&](int64_t j) {
    const float t = ((r0[j] + r1[j]) + (r2[j] + r3[j])) + ((r4[j] + r5[j]) + (r6[j] + r7[j]));
    acc[j] += static_cast<double>(t);
  });
}

// Sum with the fast paths: contiguous rows (8 accumulators, chunked when long) and
// column sums over whole rows (vectorises across the inner dim).
template <typename T, typename O>
void sum_reduce(const Tensor& out, const Tensor& in, ReduceShape s) {
  using A = acc_of<T>;
  const T* x = in.data_ptr<T>();
  O* y = out.data_ptr<O>();
  if (s.outer * s.inner == 0) return;
  if (s.inner == 1) {
    if (few_long_rows(s)) {
      const int64_t chunks = row_chunks(s);
      const auto partial =
          row_chunk_partials<A>(x, s, [](const T* p, int64_t n, int64_t) { return sum_run<T, A>(p, n); });
      for (int64_t o = 0; o < s.outer; ++o) {
        A acc = 0;
        for (int64_t c = 0; c < chunks; ++c) acc = wrapping_add(acc, partial[o * chunks + c]);
        y[o] = static_cast<O>(acc);
      }
      return;
    }
    const int64_t grain = std::max<int64_t>(1, kChunk / std::max<int64_t>(1, s.len));
    parallel_for(0, s.outer, grain, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) y[o] = static_cast<O>(sum_run<T, A>(x + o * s.len, s.len));
    });
    return;
  }
  if (s.len == 0) {
    for (int64_t k = 0; k < s.outer * s.inner; ++k) y[k] = O(0);
    return;
  }
  // Column sums (Note [Column tiles]); float adds blocks of 8 rows in float, then in double.
  col_reduce<A>(
      s, kTileElems,
      [&](const TileAt& here, A* acc, const TileAt& next) {
        const auto [o, r0, r1, c0, w] = here;
        const T* base = x + o * s.len * s.inner + c0;
        for (int64_t j = 0; j < w; ++j) acc[j] = A(0);
        int64_t r = r0;
        if constexpr (std::is_same_v<T, float> && std::is_same_v<A, double>) {
          // Whole rows, eight at a time (Note [Eight rows per pass]): each column's eight
          // values are added in float, then into the double accumulator; the last block
          // prefetches the next tile's first.
          for (; r + 8 <= r1; r += 8) {
            const bool more = r + 16 <= r1;
            add_eight_rows(base + r * s.inner, s.inner, w, acc, more ? base + (r + 8) * s.inner : next.start(x, s),
                           more ? w : next.w);
          }
        }
        for (; r < r1; ++r) {
          const T* row = base + r * s.inner;
          for (int64_t j = 0; j < w; ++j) acc[j] = wrapping_add(acc[j], static_cast<A>(static_cast<acc_t<T>>(row[j])));
        }
      },
      [&](int64_t k, int64_t n, const A* part, int64_t chunks, int64_t stride, int64_t) {
        for (int64_t j = 0; j < n; ++j) {
          A acc = part[j];
          for (int64_t c = 1; c < chunks; ++c) acc = wrapping_add(acc, part[c * stride + j]);
          y[k + j] = static_cast<O>(acc);
        }
      });
}

// Max (kMax) or min of p[0, n) for float or double, NaN if any element is NaN (as PyTorch's
// amax/amin). The lanes skip NaN (`v > a ? v : a` keeps a, one maxps) and a second set of
// lanes records whether a NaN was seen, so the hot loop has no branch.
template <bool kMax, typename T>
T extreme_run(const T* p, int64_t n) {
  using I = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  constexpr T kInit = kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  T acc[kAccLanes];
  I nan[kAccLanes] = {};
  for (int64_t k = 0; k < kAccLanes; ++k) acc[k] = kInit;
  int64_t i = 0;
  for (; i + kAccLanes <= n; i += kAccLanes) {
    for (int64_t k = 0; k < kAccLanes; ++k) {
      const T v = p[i + k];
      acc[k] = (kMax ? v > acc[k] : v < acc[k]) ? v : acc[k];
      nan[k] |= v != v ? I(-1) : I(0);
    }
  }
  for (int64_t k = 0; i < n; ++i, ++k) {
    const T v = p[i];
    acc[k] = (kMax ? v > acc[k] : v < acc[k]) ? v : acc[k];
    nan[k] |= v != v ? I(-1) : I(0);
  }
  I any = 0;
  for (int64_t k = 0; k < kAccLanes; ++k) any |= nan[k];
  if (any) return std::numeric_limits<T>::quiet_NaN();
  for (int64_t w = kAccLanes / 2; w >= 1; w /= 2) {
    for (int64_t k = 0; k < w; ++k) acc[k] = (kMax ? acc[k + w] > acc[k] : acc[k + w] < acc[k]) ? acc[k + w] : acc[k];
  }
  return acc[0];
}

// Column extremes: out[j] = max (or min) over r < rows of p[r * stride + j], j < w <=
// kTileCols, NaN-propagating as extreme_run. Vectorises across the columns. A NaN in a block
// of eight rows makes the column's running value NaN, which the NaN-skipping pick then keeps
// (`b > NaN` is false), so no second array records NaNs: the tile's only array is its
// running values (half the memory traffic of a value array and a NaN-flag array).
// after: the next tile's first row (nullptr: none), after_w columns wide, whose first eight
// rows the last block prefetches (Note [Next rows into L2]).
template <bool kMax, typename T>
void extreme_cols(const T* p, int64_t rows, int64_t stride, int64_t w, T* out, const T* after, int64_t after_w) {
  constexpr T kInit = kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  constexpr T kNaN = std::numeric_limits<T>::quiet_NaN();
  for (int64_t j = 0; j < w; ++j) out[j] = kInit;
  // The NaN-skipping pick: keeps a when b is NaN, and a NaN a against anything.
  const auto pick = [](T a, T b) { return (kMax ? b > a : b < a) ? b : a; };
  int64_t r = 0;
  for (; r + 8 <= rows; r += 8) {  // Note [Eight rows per pass]
    const T *r0 = p + r * stride, *r1 = r0 + stride, *r2 = r1 + stride, *r3 = r2 + stride;
    const T *r4 = r3 + stride, *r5 = r4 + stride, *r6 = r5 + stride, *r7 = r6 + stride;
    const auto eight = [&](int64_t j) {
      const T v0 = r0[j], v1 = r1[j], v2 = r2[j], v3 = r3[j], v4 = r4[j], v5 = r5[j], v6 = r6[j], v7 = r7[j];
      const T m = pick(pick(pick(v0, v1), pick(v2, v3)), pick(pick(v4, v5), pick(v6, v7)));
      const bool nan = ((v0 != v0) | (v1 != v1)) | ((v2 != v2) | (v3 != v3)) | ((v4 != v4) | (v5 != v5)) | ((v6 != v6) | (v7 != v7));
      const T a = pick(out[j], m);
      out[j] = nan ? kNaN : a;
    };
    // Note [Next rows into L2].
    const bool more = r + 16 <= rows;
    NextRows(more ? r0 + 8 * stride : after, stride, more ? w : after_w, sizeof(T))
        .for_columns(w, 64 / sizeof(T), eight);
  }
  for (; r < rows; ++r) {
    const T* row = p + r * stride;
    for (int64_t j = 0; j < w; ++j) {
      const T v = row[j];
      const T a = pick(out[j], v);
      out[j] = v != v ? kNaN : a;
    }
  }
}

// amax/amin for float and double: rows (fixed chunks when few and long) or column tiles.
template <bool kMax, typename T>
void extreme_reduce(const Tensor& out, const Tensor& in, ReduceShape s) {
  const T* x = in.data_ptr<T>();
  T* y = out.data_ptr<T>();
  if (s.outer * s.inner == 0) return;
  if (s.len == 0) {
    for (int64_t k = 0; k < s.outer * s.inner; ++k)
      y[k] = kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    return;
  }
  const auto pick = [](T a, T b) {
    if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
    return (kMax ? b > a : b < a) ? b : a;
  };
  if (s.inner == 1) {
    if (few_long_rows(s)) {
      const int64_t chunks = row_chunks(s);
      const auto partial =
          row_chunk_partials<T>(x, s, [](const T* p, int64_t n, int64_t) { return extreme_run<kMax>(p, n); });
      for (int64_t o = 0; o < s.outer; ++o) {
        T acc = partial[o * chunks];
        for (int64_t c = 1; c < chunks; ++c) acc = pick(acc, partial[o * chunks + c]);
        y[o] = acc;
      }
      return;
    }
    const int64_t grain = std::max<int64_t>(1, kChunk / std::max<int64_t>(1, s.len));
    parallel_for(0, s.outer, grain, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) y[o] = extreme_run<kMax>(x + o * s.len, s.len);
    });
    return;
  }
  col_reduce<T>(
      s, kTileElems,
      [&](const TileAt& here, T* part, const TileAt& next) {
        extreme_cols<kMax>(here.start(x, s), here.r1 - here.r0, s.inner, here.w, part, next.start(x, s), next.w);
      },
      [&](int64_t k, int64_t n, const T* part, int64_t chunks, int64_t stride, int64_t) {
        for (int64_t j = 0; j < n; ++j) {
          T acc = part[j];
          for (int64_t c = 1; c < chunks; ++c) acc = pick(acc, part[c * stride + j]);
          y[k + j] = acc;
        }
      });
}

// Note [Row variance about a shift]: a float32 row's variance is read in one pass: the
// deviations d = x - c from a shift c, the float mean of the row's first 256 values (0 if that
// is not finite), are summed with their squares in float lanes (float_run_shifted_sums,
// plane_sum.h); then mean = c + s1 / n and the squared deviations about it are s2 - s1^2 / n.
// The head's mean is within a few deviations of the row's on any row without a trend, and
// s1^2 / n, the part that cancels, is n (mean - c)^2. Where the shift lies more than sqrt(3)
// deviations from the mean (s1^2 > 0.75 n s2: a step after the first block, an offset on the
// rest of the row) the row, still in cache, is squared again about its mean (Note [Float
// deviations]); without that second read quiet rows with such a step missed float64's
// variance by up to 5e-7 (test Reduce.RowVarianceWithAFarShift), with it by 1e-7, as the
// two-pass form. The previous form (the mean, then the squares: two passes over each row, the
// second from L1 while the next row was prefetched) read 72-96% of the bandwidth beside a
// 4096x4096 var over dim 1, this one 106-114%.
//
// Note [Float deviations]: a float32 row's squared deviations are taken in float, as
// float_run_sum takes sums: d = x - m from the float m nearest the row's mean mu, d^2 summed
// in float by 32 lanes over blocks of 256 values, the block sums in double lanes. With e = mu
// - m (a float rounding of mu, so tiny) and sum d = n e (mu is the row's mean), sum (x - mu)^2
// = sum d^2 - n e^2, and nothing cancels: as in the two-pass method, the deviations are
// taken from a value within rounding of the mean. It is now the second read of Note [Row
// variance about a shift], for rows whose shift lies far from their mean, made while the row
// is still in cache. (As the whole method, two passes with the next row prefetched during
// the squares, it read 72-96% of the bandwidth beside a 4096x4096 var over dim 1.)
double sqdev_about_mean(const float* p, int64_t n, double mu) {
  using namespace plane;  // the lanes as vector types (Note [Lanes as vector types], plane_sum.h)
  constexpr int64_t kBlock = 256;
  const float m = static_cast<float>(mu);
  VecD sq_d[2 * kVecs] = {};
  int64_t i = 0;
  while (i + kLanes <= n) {
    const int64_t end = i + kBlock <= n ? i + kBlock : i + (n - i) / kLanes * kLanes;
    VecF aq[kVecs] = {};
    for (; i < end; i += kLanes) {
      for (int j = 0; j < kVecs; ++j) {
        const VecF d = load(p + i + j * kVecF) - m;
        aq[j] += d * d;
      }
    }
    add_in_double(aq, sq_d);
  }
  double sq[8];
  fold_to_eight(sq_d, sq);
  for (int k = 0; i < n; ++i, k = (k + 1) & 7) {
    const double d = static_cast<double>(p[i]) - static_cast<double>(m);
    sq[k] += d * d;
  }
  // sum d equals n e up to the rounding of the computed mean; on a constant row (d = 0, e the
  // mean's rounding) the difference would be a tiny negative number: clamped to 0 (NaN stays).
  const double e = mu - static_cast<double>(m);
  const double r = (((sq[0] + sq[1]) + (sq[2] + sq[3])) + ((sq[4] + sq[5]) + (sq[6] + sq[7]))) - static_cast<double>(n) * e * e;
  return r < 0 ? 0.0 : r;
}

// A double row's squared deviations about mu, the next row prefetched meanwhile (the
// squaring is compute; without the prefetch the memory would stand idle during it).
double sqdev_about_mean(const double* p, int64_t n, double mu, const double* next) {
  double acc[kAccLanes] = {};
  int64_t i = 0;
  for (; i + kAccLanes <= n; i += kAccLanes) {
    if (next) {
      for (int64_t j = 0; j < kAccLanes; j += 8) __builtin_prefetch(next + i + j, 0, 2);
    }
    for (int64_t k = 0; k < kAccLanes; ++k) {
      const double d = p[i + k] - mu;
      acc[k] += d * d;
    }
  }
  for (int64_t k = 0; i < n; ++i, ++k) {
    const double d = p[i] - mu;
    acc[k] += d * d;
  }
  for (int64_t w = kAccLanes / 2; w >= 1; w /= 2) {
    for (int64_t k = 0; k < w; ++k) acc[k] += acc[k + w];
  }
  return acc[0];
}

// Sum of (p[i] - mu)^2 over [0, n) in double, in the fixed lanes.
template <typename T>
double sqdev_run(const T* p, int64_t n, double mu) {
  double acc[kAccLanes] = {};
  int64_t i = 0;
  for (; i + kAccLanes <= n; i += kAccLanes) {
    for (int64_t k = 0; k < kAccLanes; ++k) {
      const double d = static_cast<double>(p[i + k]) - mu;
      acc[k] += d * d;
    }
  }
  for (int64_t k = 0; i < n; ++i, ++k) {
    const double d = static_cast<double>(p[i]) - mu;
    acc[k] += d * d;
  }
  for (int64_t w = kAccLanes / 2; w >= 1; w /= 2) {
    for (int64_t k = 0; k < w; ++k) acc[k] += acc[k + w];
  }
  return acc[0];
}

// Copies a (strided) row into `row` as C and returns its max. A function of its own so the
// running max lives in a register: inlined into softmax's lambda, GCC kept it on the stack
// at the AVX levels (a store-to-load round trip per element, 2x slower). NaN is skipped
// as std::max(mx, v) skips it; such a row comes out NaN through exp anyway.
template <typename T, typename C>
[[gnu::noinline]] C load_row_max(const T* x, int64_t len, int64_t stride, C* row) {
  C mx = -std::numeric_limits<C>::infinity();
  for (int64_t r = 0; r < len; ++r) {
    const C v = static_cast<C>(x[r * stride]);
    row[r] = v;
    mx = v > mx ? v : mx;
  }
  return mx;
}

template <typename C>
bool is_nan(C x) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(x);
  else return false;
}

// y[i] = exp(x[i] - shift) over [0, n), through the vector path for float (a padded tail
// goes through the same code, so a value's result does not depend on its position).
template <typename C>
void exp_shifted(const C* x, C shift, C* y, int64_t n) {
  int64_t r = 0;
#if EMBER_HAVE_VEC
  if constexpr (std::is_same_v<C, float>) {
    const vec::VecF vm = vec::set1(shift);
    for (; r + vec::kLanes <= n; r += vec::kLanes) vec::store(y + r, vec::exp(vec::sub(vec::load(x + r), vm)));
    if (r < n) {
      alignas(64) float pad[vec::kLanes] = {};
      std::memcpy(pad, x + r, static_cast<size_t>(n - r) * sizeof(float));
      vec::store(pad, vec::exp(vec::sub(vec::load(pad), vm)));
      std::memcpy(y + r, pad, static_cast<size_t>(n - r) * sizeof(float));
      r = n;
    }
  }
#endif
  for (; r < n; ++r) y[r] = std::exp(x[r] - shift);
}

// softmax / log_softmax of contiguous float or double rows, each in three passes while it
// is in cache: the max, exp(x - max) (written to y) and its sum, then the scaling. NaN and
// infinities need no special case: a row with a NaN, a +inf or only -inf values gets a NaN
// sum (exp(NaN), exp(inf - inf), exp(-inf + inf)), so it comes out all NaN, as in PyTorch;
// a -inf entry of an ordinary row gives 0 (or -inf).
template <typename T>
void softmax_rows(bool log, const T* x, T* y, int64_t rows, int64_t len) {
  // Rows are independent, so any split gives the same results; short rows (attention
  // scores: 128 rows of 32) go to both threads from a few thousand elements on.
  constexpr int64_t kRowTaskElements = 2048;
  const int64_t grain = std::max<int64_t>(1, kRowTaskElements / std::max<int64_t>(1, len));
  parallel_for(0, rows, grain, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      const T* xr = x + o * len;
      T* yr = y + o * len;
      T mx = -std::numeric_limits<T>::infinity();
      for (int64_t c = 0; c < len; c += kChunk) mx = std::max(mx, extreme_run<true>(xr + c, std::min(kChunk, len - c)));
      if (mx != mx) mx = -std::numeric_limits<T>::infinity();  // the sum carries the NaN
      exp_shifted(xr, mx, yr, len);
      double sum = 0;
      for (int64_t c = 0; c < len; c += kChunk) sum += sum_run<T, double>(yr + c, std::min(kChunk, len - c));
      if (log) {
        const T lse = static_cast<T>(std::log(sum)) + mx;
        for (int64_t q = 0; q < len; ++q) yr[q] = xr[q] - lse;
      } else {
        const T inv = static_cast<T>(1.0 / sum);
        for (int64_t q = 0; q < len; ++q) yr[q] *= inv;
      }
    }
  });
}

// Softmax over a non-last dim (inner > 1): tiles of up to kSoftmaxCols columns, whose rows
// are contiguous, so each of the three passes (column max, exp(x - max) with per-column
// sums, scaling) vectorises across the columns instead of gathering one strided column at
// a time. A column is computed by one task in row order, so results do not depend on the
// thread count; the special values behave as in softmax_rows.
constexpr int64_t kSoftmaxCols = 512;

template <typename T>
void exp_shifted_cols(const T* x, const T* shift, T* y, int64_t n) {
  int64_t j = 0;
#if EMBER_HAVE_VEC
  if constexpr (std::is_same_v<T, float>) {
    for (; j + vec::kLanes <= n; j += vec::kLanes) {
      vec::store(y + j, vec::exp(vec::sub(vec::load(x + j), vec::load(shift + j))));
    }
    if (j < n) {
      alignas(64) float px[vec::kLanes] = {}, ps[vec::kLanes] = {};
      std::memcpy(px, x + j, static_cast<size_t>(n - j) * sizeof(float));
      std::memcpy(ps, shift + j, static_cast<size_t>(n - j) * sizeof(float));
      vec::store(px, vec::exp(vec::sub(vec::load(px), vec::load(ps))));
      std::memcpy(y + j, px, static_cast<size_t>(n - j) * sizeof(float));
      j = n;
    }
  }
#endif
  for (; j < n; ++j) y[j] = std::exp(x[j] - shift[j]);
}

template <typename T>
void softmax_cols(bool log, const T* x, T* y, ReduceShape s) {
  const int64_t blocks = (s.inner + kSoftmaxCols - 1) / kSoftmaxCols;
  const int64_t block_work = std::max<int64_t>(1, s.len * std::min(s.inner, kSoftmaxCols));
  parallel_for(0, s.outer * blocks, std::max<int64_t>(1, kChunk / block_work), [&](int64_t b, int64_t e) {
    alignas(64) T mx[kSoftmaxCols];
    alignas(64) T scale[kSoftmaxCols];
    double sum[kSoftmaxCols];
    for (int64_t k = b; k < e; ++k) {
      const int64_t o = k / blocks, c0 = k % blocks * kSoftmaxCols;
      const int64_t w = std::min(kSoftmaxCols, s.inner - c0);
      const T* xb = x + o * s.len * s.inner + c0;
      T* yb = y + o * s.len * s.inner + c0;
      for (int64_t j = 0; j < w; ++j) mx[j] = -std::numeric_limits<T>::infinity();
      for (int64_t r = 0; r < s.len; ++r) {
        const T* row = xb + r * s.inner;
        for (int64_t j = 0; j < w; ++j) mx[j] = row[j] > mx[j] ? row[j] : mx[j];  // skips NaN: the sum carries it
      }
      for (int64_t j = 0; j < w; ++j) sum[j] = 0;
      for (int64_t r = 0; r < s.len; ++r) {
        T* out = yb + r * s.inner;
        exp_shifted_cols(xb + r * s.inner, mx, out, w);
        for (int64_t j = 0; j < w; ++j) sum[j] += static_cast<double>(out[j]);
      }
      if (log) {
        for (int64_t j = 0; j < w; ++j) scale[j] = static_cast<T>(std::log(sum[j])) + mx[j];
        for (int64_t r = 0; r < s.len; ++r) {
          const T* row = xb + r * s.inner;
          T* out = yb + r * s.inner;
          for (int64_t j = 0; j < w; ++j) out[j] = row[j] - scale[j];
        }
      } else {
        for (int64_t j = 0; j < w; ++j) scale[j] = static_cast<T>(1.0 / sum[j]);
        for (int64_t r = 0; r < s.len; ++r) {
          T* out = yb + r * s.inner;
          for (int64_t j = 0; j < w; ++j) out[j] *= scale[j];
        }
      }
    }
  });
}

// Note [Fused cross entropy]: cross_entropy with class-index targets never materialises
// the [rows, classes] log-probabilities. The forward reads each row once (it stays in cache
// for its three passes: max, sum of exp(x - max) in kCeBuf blocks, the target's logit) and
// writes two numbers per row, lse = max + log(sum) and the loss lse - x[target]; the
// backward writes the gradient in one pass, scale * (exp(x - lse) - [j == target]), which
// is log_softmax's backward of nll's one-hot gradient written out. Rows are independent
// and each is summed in fixed blocks, so results do not depend on the thread count.
constexpr int64_t kCeBuf = 2048;

// Note [Cross entropy's exp]: the fused kernels are bound by exp (one per logit, twice
// per training step), so they use their own exp instead of Sleef's through a call:
// exp(x) = 2^n * p(r) with n = round(x / ln 2), r = x - n ln 2 (in two FMA steps) and
// p the polynomial of Cephes' expf, inlined, 8 lanes per instruction. It is within 2 ulp
// of the true value on [-87.3, 88]; below that it is 0 (exp of a masked -inf logit must be
// exactly 0), above +inf (the kernels only take exp of x - max or x - lse, which is <= 0 up
// to rounding), NaN stays NaN. The scalar
// form below computes the same FMA sequence, so the baseline level gives the same bits.
constexpr float kExpHi = 88.0f, kExpLo = -87.33654022216797f;
constexpr float kLog2e = 1.44269502162933349609f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
constexpr float kExpC[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                            4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

float ce_exp_scalar(float x) {
  if (x != x) return x;
  if (x > kExpHi) return std::numeric_limits<float>::infinity();
  if (x < kExpLo) return 0.0f;
  const float n = std::nearbyint(x * kLog2e);
  const float r = std::fma(n, -kLn2Lo, std::fma(n, -kLn2Hi, x));
  float p = kExpC[0];
  for (int i = 1; i < 6; ++i) p = std::fma(p, r, kExpC[i]);
  const float y = std::fma(p, r * r, r) + 1.0f;
  return std::ldexp(y, static_cast<int>(n));
}

#if defined(__AVX2__)
// The vector form of ce_exp_scalar for 8 values.
inline __m256 ce_exp8(__m256 v) {
  const __m256 hi = _mm256_set1_ps(kExpHi), lo = _mm256_set1_ps(kExpLo);
  // Clamped so that 2^n below stays a normal number; max(lo, v) keeps a NaN v.
  const __m256 c = _mm256_min_ps(hi, _mm256_max_ps(lo, v));
  const __m256 nf =
      _mm256_round_ps(_mm256_mul_ps(c, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 r = _mm256_fmadd_ps(nf, _mm256_set1_ps(-kLn2Lo), _mm256_fmadd_ps(nf, _mm256_set1_ps(-kLn2Hi), c));
  __m256 p = _mm256_set1_ps(kExpC[0]);
  for (int k = 1; k < 6; ++k) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpC[k]));
  const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  // 2^n: n + 127 in the exponent field (n in [-126, 127] after the clamp).
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(nf), _mm256_set1_epi32(127)), 23);
  __m256 out = _mm256_mul_ps(y, _mm256_castsi256_ps(e));
  out = _mm256_blendv_ps(out, _mm256_setzero_ps(), _mm256_cmp_ps(v, lo, _CMP_LT_OQ));
  return _mm256_blendv_ps(out, _mm256_set1_ps(std::numeric_limits<float>::infinity()),
                          _mm256_cmp_ps(v, hi, _CMP_GT_OQ));
}
#endif

#if defined(__AVX512F__)
// ce_exp8 on 16 values at once, instruction for instruction (each lane gets the bits
// ce_exp8 and ce_exp_scalar give it): at the AVX-512 level the fused kernels issue half as
// many exp instructions.
inline __m512 ce_exp16(__m512 v) {
  const __m512 hi = _mm512_set1_ps(kExpHi), lo = _mm512_set1_ps(kExpLo);
  // The maskz forms with a full mask: GCC 12 warns (-Wmaybe-uninitialized) inside the
  // plain _mm512_min_ps/max_ps/roundscale_ps/cvtps_epi32/slli_epi32/extractf32x8_ps (and in
  // _mm512_castps512_ps256).
  const __mmask16 all = 0xFFFF;
  const __m512 c = _mm512_maskz_min_ps(all, hi, _mm512_maskz_max_ps(all, lo, v));
  const __m512 nf = _mm512_maskz_roundscale_ps(all, _mm512_mul_ps(c, _mm512_set1_ps(kLog2e)),
                                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_fmadd_ps(nf, _mm512_set1_ps(-kLn2Lo), _mm512_fmadd_ps(nf, _mm512_set1_ps(-kLn2Hi), c));
  __m512 p = _mm512_set1_ps(kExpC[0]);
  for (int k = 1; k < 6; ++k) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpC[k]));
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  const __m512i e =
      _mm512_maskz_slli_epi32(all, _mm512_add_epi32(_mm512_maskz_cvtps_epi32(all, nf), _mm512_set1_epi32(127)), 23);
  __m512 out = _mm512_mul_ps(y, _mm512_castsi512_ps(e));
  out = _mm512_mask_mov_ps(out, _mm512_cmp_ps_mask(v, lo, _CMP_LT_OQ), _mm512_setzero_ps());
  return _mm512_mask_mov_ps(out, _mm512_cmp_ps_mask(v, hi, _CMP_GT_OQ),
                            _mm512_set1_ps(std::numeric_limits<float>::infinity()));
}
#endif

// y[i] = exp(x[i] - shift) over [0, n) with the exp above.
void ce_exp_shifted(const float* x, float shift, float* y, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  const __m512 vs16 = _mm512_set1_ps(shift);
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, ce_exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), vs16)));
#endif
#if defined(__AVX2__)
  const __m256 vs = _mm256_set1_ps(shift);
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, ce_exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vs)));
#endif
  for (; i < n; ++i) y[i] = ce_exp_scalar(x[i] - shift);
}

// The sum of exp(x[i] - shift) over [0, n): 8 float lanes (lane l takes i % 8 == l) over
// blocks of 256 values, each block's lanes folded in a fixed tree and added in double. The
// vector loop and the scalar tail fill the same lanes, so every level gets the same bits.
double ce_exp_sum(const float* x, float shift, int64_t n) {
  constexpr int64_t kBlock = 256;
  auto fold = [](const float* l) {
    return static_cast<double>(((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7])));
  };
  double total = 0;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(n, b + kBlock);
    alignas(32) float lane[8] = {};
    int64_t i = b;
#if defined(__AVX2__)
    const __m256 vs = _mm256_set1_ps(shift);
    __m256 acc = _mm256_setzero_ps();
#if defined(__AVX512F__)
    // 16 exps at a time; the halves join lane l's chain in element order, as 8 at a time.
    const __m512 vs16 = _mm512_set1_ps(shift);
    for (; i + 16 <= e; i += 16) {
      const __m512 v = ce_exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), vs16));
      acc = _mm256_add_ps(acc, _mm512_maskz_extractf32x8_ps(0xFF, v, 0));
      acc = _mm256_add_ps(acc, _mm512_maskz_extractf32x8_ps(0xFF, v, 1));
    }
#endif
    for (; i + 8 <= e; i += 8) acc = _mm256_add_ps(acc, ce_exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vs)));
    _mm256_store_ps(lane, acc);
#else
    for (; i + 8 <= e; i += 8) {
      for (int64_t l = 0; l < 8; ++l) lane[l] += ce_exp_scalar(x[i + l] - shift);
    }
#endif
    for (int64_t l = 0; i < e; ++i, ++l) lane[l] += ce_exp_scalar(x[i] - shift);
    total += fold(lane);
  }
  return total;
}

template <typename T>
void ce_exp(const T* x, T shift, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    ce_exp_shifted(x, shift, y, n);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i] - shift);
  }
}

template <typename T>
void cross_entropy_rows_forward(const T* x, const int64_t* t, T* loss, T* lse, int64_t rows, int64_t len,
                                int64_t ignore_index) {
  const int64_t grain = std::max<int64_t>(1, kCeBuf / std::max<int64_t>(1, len));
  parallel_for(0, rows, grain, [&](int64_t b, int64_t e) {
    alignas(64) T buf[kCeBuf];
    for (int64_t o = b; o < e; ++o) {
      const T* xr = x + o * len;
      T mx = -std::numeric_limits<T>::infinity();
      for (int64_t c = 0; c < len; c += kChunk) mx = std::max(mx, extreme_run<true>(xr + c, std::min(kChunk, len - c)));
      if (mx != mx) mx = -std::numeric_limits<T>::infinity();  // the sum carries the NaN
      double sum = 0;
      if constexpr (std::is_same_v<T, float>) {
        sum = ce_exp_sum(xr, mx, len);
      } else {
        for (int64_t c = 0; c < len; c += kCeBuf) {
          const int64_t n = std::min(kCeBuf, len - c);
          ce_exp(xr + c, mx, buf, n);
          sum += sum_run<T, double>(buf, n);
        }
      }
      const double l = std::log(sum) + static_cast<double>(mx);
      lse[o] = static_cast<T>(l);
      const int64_t k = t[o];
      loss[o] = k == ignore_index ? T(0) : static_cast<T>(l - static_cast<double>(xr[k]));
    }
  });
}

template <typename T>
void cross_entropy_rows_backward(const T* x, const int64_t* t, const T* lse, const T* scale, T* dx, int64_t rows,
                                 int64_t len, int64_t ignore_index) {
  const int64_t grain = std::max<int64_t>(1, kCeBuf / std::max<int64_t>(1, len));
  parallel_for(0, rows, grain, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      T* dr = dx + o * len;
      const T s = scale[o];
      ce_exp(x + o * len, lse[o], dr, len);
      for (int64_t j = 0; j < len; ++j) dr[j] *= s;
      const int64_t k = t[o];
      if (k != ignore_index) dr[k] -= s;
    }
  });
}

}  // namespace

void cross_entropy_forward(const Tensor& loss, const Tensor& lse, const Tensor& logits, const Tensor& target,
                           int64_t ignore_index) {
  dispatch_floating(logits.dtype(), "cross_entropy", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      cross_entropy_rows_forward(logits.data_ptr<T>(), target.data_ptr<int64_t>(), loss.data_ptr<T>(),
                                 lse.data_ptr<T>(), logits.size(0), logits.size(1), ignore_index);
    } else {
      EMBER_ERROR("[cross_entropy] internal: fused kernel called with dtype ", logits.dtype());
    }
  });
}

void cross_entropy_backward(const Tensor& grad_logits, const Tensor& logits, const Tensor& lse, const Tensor& target,
                            const Tensor& scale, int64_t ignore_index) {
  dispatch_floating(logits.dtype(), "cross_entropy", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      cross_entropy_rows_backward(logits.data_ptr<T>(), target.data_ptr<int64_t>(), lse.data_ptr<T>(),
                                  scale.data_ptr<T>(), grad_logits.data_ptr<T>(), logits.size(0), logits.size(1),
                                  ignore_index);
    } else {
      EMBER_ERROR("[cross_entropy] internal: fused kernel called with dtype ", logits.dtype());
    }
  });
}

namespace {
}  // namespace

// The output dtypes the ops ask for (ops/reduce.cpp converts the input first when the
// user passes a dtype): the input's own, int64 for integer sums and products and for
// count_nonzero, bool (or uint8 for uint8 input) for all/any. Each op instantiates only its
// own pairs, which keeps this file's compile time (it is built once per ISA level) small.
enum class OutKind { Same, SameOrInt64, Int64, BoolOrUInt8 };

template <typename T, typename F>
void with_out_type(OutKind kind, DType out, F&& f) {
  if ((kind == OutKind::Same || kind == OutKind::SameOrInt64) && out == dtype_of<T>()) return f(TypeTag<T>{});
  if ((kind == OutKind::SameOrInt64 || kind == OutKind::Int64) && out == kInt64) return f(TypeTag<int64_t>{});
  if (kind == OutKind::BoolOrUInt8 && out == kBool) return f(TypeTag<bool>{});
  if (kind == OutKind::BoolOrUInt8 && out == kUInt8) return f(TypeTag<uint8_t>{});
  EMBER_ERROR("[reduce] output dtype ", out, " is not supported for input dtype ", dtype_of<T>());
}

void reduce(ReduceOp op, const Tensor& out, const Tensor& in, ReduceShape s, double p) {
  dispatch_all(in.dtype(), "reduce", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = acc_t<T>;
    using A = acc_of<T>;
    auto run = [&](OutKind kind, auto init, auto step, auto merge, auto done) {
      with_out_type<T>(kind, out.dtype(), [&](auto otag) {
        using O = typename decltype(otag)::type;
        generic_reduce<T, O>(out, in, s, init, step, merge, done);
      });
    };
    auto ident = [](auto a, int64_t) { return a; };
    switch (op) {
      case ReduceOp::Sum:
        with_out_type<T>(OutKind::SameOrInt64, out.dtype(), [&](auto otag) {
          using O = typename decltype(otag)::type;
          sum_reduce<T, O>(out, in, s);
        });
        return;
      case ReduceOp::Prod:
        run(OutKind::SameOrInt64, A(1), [](A a, T x) { return wrapping_mul(a, static_cast<A>(static_cast<C>(x))); },
            [](A a, A b) { return wrapping_mul(a, b); }, ident);
        return;
      case ReduceOp::Max:
      case ReduceOp::Min: {
        const bool mx = op == ReduceOp::Max;
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
          if (out.dtype() == in.dtype()) {
            if (mx)
              extreme_reduce<true, T>(out, in, s);
            else
              extreme_reduce<false, T>(out, in, s);
            return;
          }
        }
        auto pick = [mx](C a, C b) -> C {
          if (is_nan(a)) return a;
          if (is_nan(b)) return b;
          return mx ? (b > a ? b : a) : (b < a ? b : a);
        };
        C init;
        if constexpr (std::is_floating_point_v<C>) init = mx ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
        else if constexpr (std::is_same_v<C, bool>) init = !mx;
        else init = mx ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
        run(OutKind::Same, init, [pick](C a, T x) { return pick(a, static_cast<C>(x)); }, pick, ident);
        return;
      }
      case ReduceOp::All:
        run(OutKind::BoolOrUInt8, true, [](bool a, T x) { return a && static_cast<C>(x) != C(0); },
            [](bool a, bool b) { return a && b; }, ident);
        return;
      case ReduceOp::Any:
        run(OutKind::BoolOrUInt8, false, [](bool a, T x) { return a || static_cast<C>(x) != C(0); },
            [](bool a, bool b) { return a || b; }, ident);
        return;
      case ReduceOp::CountNonzero:
        run(OutKind::Int64, int64_t(0), [](int64_t a, T x) { return a + (static_cast<C>(x) != C(0) ? 1 : 0); },
            [](int64_t a, int64_t b) { return a + b; }, ident);
        return;
      default: break;
    }
    // Norms (ops/reduce.cpp accepts floating inputs only).
    if constexpr (std::is_floating_point_v<C>) {
      switch (op) {
        case ReduceOp::NormL1:
          run(OutKind::Same, 0.0, [](double a, T x) { return a + std::fabs(static_cast<double>(static_cast<C>(x))); },
              [](double a, double b) { return a + b; }, ident);
          return;
        case ReduceOp::NormL2Sq:
          run(OutKind::Same, 0.0, [](double a, T x) { double v = static_cast<double>(static_cast<C>(x)); return a + v * v; },
              [](double a, double b) { return a + b; }, [](double a, int64_t) { return std::sqrt(a); });
          return;
        case ReduceOp::NormInf:
        case ReduceOp::NormNegInf: {
          const bool mx = op == ReduceOp::NormInf;
          auto pick = [mx](double a, double b) {
            if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
            return mx ? std::max(a, b) : std::min(a, b);
          };
          run(OutKind::Same, mx ? 0.0 : std::numeric_limits<double>::infinity(),
              [pick](double a, T x) { return pick(a, std::fabs(static_cast<double>(static_cast<C>(x)))); }, pick, ident);
          return;
        }
        case ReduceOp::NormP:
          run(OutKind::Same, 0.0,
              [p](double a, T x) { return a + std::pow(std::fabs(static_cast<double>(static_cast<C>(x))), p); },
              [](double a, double b) { return a + b; }, [p](double a, int64_t) { return std::pow(a, 1.0 / p); });
          return;
        case ReduceOp::NormL0:
          run(OutKind::Same, 0.0, [](double a, T x) { return a + (static_cast<C>(x) != C(0) ? 1.0 : 0.0); },
              [](double a, double b) { return a + b; }, ident);
          return;
        default: break;
      }
    }
    EMBER_ERROR("[reduce] this reduction needs a floating-point input, got dtype ", in.dtype());
  });
}

// One block of eight rows of Note [Column variance about a shift]: for j < w, s1[j] += the sum
// of d and s2[j] += the sum of d * d over the eight rows, d = q[i][j] - shift[j], both sums in
// float in a fixed tree and then added in double; the next block (its first row at next, rows
// as far apart as q[0] and q[1], next_w columns wide) prefetched meanwhile (Note [Next rows
// into L2]). kFirst: the tile's first block, which first sets shift[j] to the mean of the
// column's eight values (each scaled by 1/8 first, exactly, so that the sum cannot overflow)
// and then sets s1[j] and s2[j] instead of adding to them.
template <bool kFirst>
void shifted_block_sums(const float* const* q, float* shift, int64_t w, double* s1, double* s2, const float* next,
                        int64_t next_w) {
  const float *q0 = q[0], *q1 = q[1], *q2 = q[2], *q3 = q[3], *q4 = q[4], *q5 = q[5], *q6 = q[6], *q7 = q[7];
  const auto eight = [&](int64_t j) {
    const float v0 = q0[j], v1 = q1[j], v2 = q2[j], v3 = q3[j], v4 = q4[j], v5 = q5[j], v6 = q6[j], v7 = q7[j];
    float k;
    if constexpr (kFirst) {
      constexpr float e = 0.125f;
      k = ((v0 * e + v1 * e) + (v2 * e + v3 * e)) + ((v4 * e + v5 * e) + (v6 * e + v7 * e));
      shift[j] = k;
    } else {
      k = shift[j];
    }
    const float d0 = v0 - k, d1 = v1 - k, d2 = v2 - k, d3 = v3 - k, d4 = v4 - k, d5 = v5 - k, d6 = v6 - k, d7 = v7 - k;
    const float bd = ((d0 + d1) + (d2 + d3)) + ((d4 + d5) + (d6 + d7));
    const float bq = ((d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3)) + ((d4 * d4 + d5 * d5) + (d6 * d6 + d7 * d7));
    if constexpr (kFirst) {
      s1[j] = static_cast<double>(bd);
      s2[j] = static_cast<double>(bq);
    } else {
      s1[j] += static_cast<double>(bd);
      s2[j] += static_cast<double>(bq);
    }
  };
  NextRows(next, q[1] - q[0], next_w, sizeof(float)).for_columns(w, 16, eight);
}

void var_mean(const Tensor& var, const Tensor& mean, const Tensor& in, ReduceShape s, int64_t correction) {
  dispatch_floating(in.dtype(), "var", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = in.data_ptr<T>();
    T* v = var.defined() ? var.data_ptr<T>() : nullptr;
    T* m = mean.defined() ? mean.data_ptr<T>() : nullptr;
    const int64_t outputs = s.outer * s.inner;
    if (outputs == 0) return;
    const double denom = static_cast<double>(s.len) - static_cast<double>(correction);  // no int64 overflow
    const double n = static_cast<double>(s.len);
    auto put = [&](int64_t k, double mu, double sq) {
      if (m) m[k] = static_cast<T>(mu);
      if (v) v[k] = static_cast<T>(denom > 0 ? sq / denom : (sq / 0.0));
    };
    // Two passes: the mean, then the squared deviations about it (no cancellation), each in
    // the fixed lanes of Note [Fixed-lane accumulation]; float32 rows and columns in one pass
    // about a shift (Note [Row variance about a shift], Note [Column variance about a shift]),
    // read again about the mean where the shift lies far from it.
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (s.len == 0) {
        for (int64_t k = 0; k < outputs; ++k) put(k, std::numeric_limits<double>::quiet_NaN(), 0.0);
        return;
      }
      if (few_long_rows(s)) {
        const int64_t chunks = row_chunks(s);
        std::vector<double> mu(static_cast<size_t>(s.outer));
        auto partial = row_chunk_partials<double>(
            x, s, [](const T* p, int64_t len, int64_t) { return sum_run<T, double>(p, len); });
        for (int64_t o = 0; o < s.outer; ++o) {
          double acc = 0;
          for (int64_t c = 0; c < chunks; ++c) acc += partial[o * chunks + c];
          mu[o] = acc / n;
        }
        partial = row_chunk_partials<double>(
            x, s, [&](const T* p, int64_t len, int64_t o) { return sqdev_run(p, len, mu[o]); });
        for (int64_t o = 0; o < s.outer; ++o) {
          double acc = 0;
          for (int64_t c = 0; c < chunks; ++c) acc += partial[o * chunks + c];
          put(o, mu[o], acc);
        }
        return;
      }
      if (s.inner == 1) {
        const int64_t grain = std::max<int64_t>(1, kChunk / std::max<int64_t>(1, s.len));
        parallel_for(0, s.outer, grain, [&](int64_t b, int64_t e) {
          for (int64_t o = b; o < e; ++o) {
            const T* p = x + o * s.len;
            if constexpr (std::is_same_v<T, float>) {
              // Note [Row variance about a shift].
              const int64_t head = std::min<int64_t>(s.len, 256);
              float c = static_cast<float>(float_run_sum(p, head) / static_cast<double>(head));
              if (!std::isfinite(c)) c = 0;
              double s1, s2;
              float_run_shifted_sums(p, s.len, c, &s1, &s2);
              const double mu = static_cast<double>(c) + s1 / n;
              if (s1 * s1 > 0.75 * n * s2) {
                put(o, mu, sqdev_about_mean(p, s.len, mu));  // a far shift: about the mean
              } else {
                const double m2 = s2 - s1 * (s1 / n);
                put(o, mu, m2 < 0 ? 0.0 : m2);
              }
            } else {
              const double mu = sum_run<T, double>(p, s.len) / n;
              put(o, mu, sqdev_about_mean(p, s.len, mu, o + 1 < e ? p + s.len : nullptr));
            }
          }
        });
        return;
      }
      // Columns (Note [Column tiles]): each tile's mean and squared deviations, then the
      // tiles of a column merged in chunk order with Chan et al.'s update, which is exact
      // in exact arithmetic and as stable as two passes.
      struct Moments {  // of one tile's column
        double mean, m2;
      };
      // Columns k, ..., k + cnt - 1: each column's tiles merged in chunk order by Chan's
      // update of (n_a, mean, m2) with a tile of nb values, mean mb and squared deviations
      // m2b: delta = mb - mean, mean += delta * (nb / total), m2 += m2b + delta * delta *
      // (n_a * nb / total), total = n_a + nb. A chunk has the same rows in every column, so
      // its two ratios are worked out once for all the columns, and a chunk is merged into a
      // block of columns at a time, whose updates are independent and vectorise. (A
      // column's whole chain of merges at a time, two divisions in each, took 60 us of a
      // 4096x4096 variance over dim 0 that reads its input in 1.2 ms.) Tasks of kMergeGrain
      // columns.
      constexpr int64_t kMergeGrain = 512;
      auto finish = [&](int64_t k, int64_t cnt, const Moments* part, int64_t chunks, int64_t stride,
                        int64_t chunk_rows) {
        constexpr int64_t kBlock = 256;
        double mean[kBlock], m2[kBlock];
        for (int64_t j0 = 0; j0 < cnt; j0 += kBlock) {
          const int64_t m = std::min(kBlock, cnt - j0);
          const Moments* p = part + j0;
          for (int64_t j = 0; j < m; ++j) {
            mean[j] = p[j].mean;
            m2[j] = p[j].m2;
          }
          double n_a = static_cast<double>(std::min(s.len, chunk_rows));
          for (int64_t c = 1; c < chunks; ++c) {
            const Moments* b = p + c * stride;
            const double nb = static_cast<double>(std::min(s.len, (c + 1) * chunk_rows) - c * chunk_rows);
            const double total = n_a + nb, to_mean = nb / total, to_m2 = n_a * nb / total;
            for (int64_t j = 0; j < m; ++j) {
              const double delta = b[j].mean - mean[j];
              mean[j] += delta * to_mean;
              m2[j] += b[j].m2 + delta * delta * to_m2;
            }
            n_a = total;
          }
          for (int64_t j = 0; j < m; ++j) put(k + j0 + j, mean[j], m2[j]);
        }
      };
      if constexpr (std::is_same_v<T, float>) {
        // Note [Column variance about a shift]: float tiles are read once. Each column's
        // values are shifted by the float mean of the tile's first eight rows; every block of
        // 8 rows sums the shifted values d and their squares in float, in registers (Note
        // [Eight rows per pass]), and only those two block sums are added in double. The
        // tile's mean is shift + sum d / n and its squared deviations sum d^2 - (sum d)^2 / n,
        // which keeps float32 rounding while the shift lies near the mean; a column whose
        // shift lies more than sqrt(3) of its standard deviations away (a step at a tile's
        // first rows) would lose more than two bits there, so it is read again, its
        // deviations about that mean in double (about once in a million columns of normal
        // data; every column of a tile that starts with outliers). The decision is made on
        // values that are the same at every ISA level, so the bits are too. The version
        // before this one took each block's own float mean and joined the blocks to the tile
        // by Chan's update in double: about twice the arithmetic, 7 bytes a cycle on one Zen 4
        // core in L3 against 12 now, and 73-87% of the read bandwidth on two cores (4096x4096)
        // against 89-106%.
        //
        // The tiles are 2048 columns wide and at least 1024 rows tall. Each tile costs more
        // than its reads: its first block also works out the shift, its end divides each
        // column's sums and writes 16 bytes of partials a column (read again by the merge),
        // and the tile before it on the thread prefetches its first rows. At 1024 columns by
        // 512 rows (the tiles before, whose 20 bytes of accumulators a column stay in L1) a
        // 4096x4096 variance over dim 0 read 65-74% of a two-thread AVX-512 read of the same
        // size measured in the same process, when that read ran at 53-61 GB/s, against 74-83%
        // for the column sum; at 2048 by 1024 it read 76-80%, and 4096 columns by 1024 rows
        // or more read as much (78-83%) with half the tiles. (Doing the eight subtractions
        // as fma(v, 1, -shift), the same bits on the multiply pipes, to balance Zen 4's add
        // and multiply pipes, measured no faster.)
        // Smaller inputs, which would make fewer than kMinTiles tiles of 1024 rows, get
        // shorter tiles (halved, down to 64 rows), so that the threads have tiles to share:
        // a 1024x2048 variance over dim 0 in one tile took 1.8x as long as in four, and
        // 1000x1000 in one 1.8x as long as in two tiles of 520 rows (the tile shape depends
        // on the input's shape only, not on the thread count). With at least eight tiles
        // 1000x1000 took 14% longer than with the tiles before, with four 4% (in the noise).
        constexpr int64_t kShiftTileCols = 2048, kShiftTileRows = 1024, kMinTiles = 4;
        struct Scratch {
          float shift[kShiftTileCols];
          double s1[kShiftTileCols], s2[kShiftTileCols];
          uint8_t far[kShiftTileCols];
        };
        const int64_t cols = std::min(s.inner, kShiftTileCols);
        int64_t te = std::max(kShiftTileRows, kTileElems / cols) * cols;
        for (ColTiles t = col_tiles(s, te, cols); t.rows > 64 && s.outer * t.chunks * t.col_blocks < kMinTiles;
             t = col_tiles(s, te, cols)) {
          te /= 2;
        }
        col_reduce<Moments>(
            s, te,
            [&](const TileAt& here, Moments* part, const TileAt& next) {
              const auto [o, r0, r1, c0, w] = here;
              const float* base = x + o * s.len * s.inner + c0;
              // Each thread's scratch (42 KiB), kept: a fresh block for each tile came back
              // from the allocator as fresh pages to fault in.
              thread_local std::unique_ptr<Scratch> scratch;
              if (!scratch) scratch.reset(new Scratch);
              float* shift = scratch->shift;
              double *s1 = scratch->s1, *s2 = scratch->s2;
              int64_t r = r0;
              if (r1 - r0 < 8) {  // the shift from the tile's few rows
                const float* row = base + r0 * s.inner;
                for (int64_t j = 0; j < w; ++j) shift[j] = row[j];
                for (int64_t q = 1; q < r1 - r0; ++q) {
                  for (int64_t j = 0; j < w; ++j) shift[j] += row[q * s.inner + j];
                }
                const float inv = 1.0f / static_cast<float>(r1 - r0);
                for (int64_t j = 0; j < w; ++j) {
                  shift[j] *= inv;
                  s1[j] = s2[j] = 0;
                }
              }
              for (; r + 8 <= r1; r += 8) {
                const float* q[8];
                for (int i = 0; i < 8; ++i) q[i] = base + (r + i) * s.inner;
                const bool more = r + 16 <= r1;  // else the next tile's first block
                const float* ahead = more ? base + (r + 8) * s.inner : next.start(x, s);
                if (r == r0) {
                  shifted_block_sums<true>(q, shift, w, s1, s2, ahead, more ? w : next.w);
                } else {
                  shifted_block_sums<false>(q, shift, w, s1, s2, ahead, more ? w : next.w);
                }
              }
              for (; r < r1; ++r) {  // the last rows, fewer than 8
                const float* row = base + r * s.inner;
                for (int64_t j = 0; j < w; ++j) {
                  const float d = row[j] - shift[j];
                  s1[j] += static_cast<double>(d);
                  s2[j] += static_cast<double>(d * d);
                }
              }
              // Each column's mean and squared deviations (into s1 and s2), in a loop without
              // branches so that it vectorises (with the far-shift test inside, its divisions
              // ran one at a time, a tenth of the tile's time); then the far columns.
              const double n_a = static_cast<double>(r1 - r0);
              uint8_t* far = scratch->far;
              int64_t any_far = 0;
              for (int64_t j = 0; j < w; ++j) {
                const double a = s1[j], b = s2[j];
                far[j] = a * a > 0.75 * n_a * b;
                any_far += far[j];
                s1[j] = static_cast<double>(shift[j]) + a / n_a;
                s2[j] = b - a * a / n_a;
              }
              for (int64_t j = 0; any_far > 0 && j < w; ++j) {
                if (!far[j]) continue;
                // The shift is more than sqrt(3) standard deviations from the mean: the
                // subtraction above lost more than two bits, so the column's rows are read
                // again, their deviations about the mean in double.
                double e1 = 0, e2 = 0;
                for (int64_t q = r0; q < r1; ++q) {
                  const double d = static_cast<double>(base[q * s.inner + j]) - s1[j];
                  e1 += d;
                  e2 += d * d;
                }
                s1[j] += e1 / n_a;
                s2[j] = e2 - e1 * e1 / n_a;
                --any_far;
              }
              for (int64_t j = 0; j < w; ++j) part[j] = Moments{s1[j], s2[j] < 0 ? 0.0 : s2[j]};
            },
            finish, kShiftTileCols, kMergeGrain);
        return;
      }
      col_reduce<Moments>(
          s, kTileElems / 4,
          [&](const TileAt& here, Moments* part, const TileAt&) {
            const auto [o, r0, r1, c0, w] = here;
            const T* base = x + o * s.len * s.inner + c0;
            double acc[kTileCols];
            for (int64_t j = 0; j < w; ++j) acc[j] = 0;
            for (int64_t r = r0; r < r1; ++r) {
              const T* row = base + r * s.inner;
              for (int64_t j = 0; j < w; ++j) acc[j] += static_cast<double>(row[j]);
            }
            // The means in an array of their own: read through the 16-byte Moments they
            // would be a strided gather in the second pass, which then does not vectorise.
            const double rows = static_cast<double>(r1 - r0);
            double mu[kTileCols];
            for (int64_t j = 0; j < w; ++j) mu[j] = acc[j] / rows;
            for (int64_t j = 0; j < w; ++j) acc[j] = 0;
            for (int64_t r = r0; r < r1; ++r) {
              const T* row = base + r * s.inner;
              for (int64_t j = 0; j < w; ++j) {
                const double d = static_cast<double>(row[j]) - mu[j];
                acc[j] += d * d;
              }
            }
            for (int64_t j = 0; j < w; ++j) part[j] = Moments{mu[j], acc[j]};
          },
          finish, kTileCols, kMergeGrain);
      return;
    }
    const int64_t grain = std::max<int64_t>(1, kChunk / std::max<int64_t>(1, s.len));
    parallel_for(0, outputs, grain, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        const int64_t o = k / s.inner, i = k % s.inner;
        const T* p = x + o * s.len * s.inner + i;
        auto ld = [](T t) { return static_cast<double>(static_cast<acc_t<T>>(t)); };
        double sum = 0;
        for (int64_t r = 0; r < s.len; ++r) sum += ld(p[r * s.inner]);
        const double mu = sum / n;
        double sq = 0;
        for (int64_t r = 0; r < s.len; ++r) {
          const double d = ld(p[r * s.inner]) - mu;
          sq += d * d;
        }
        put(k, mu, sq);
      }
    });
  });
}

void arg_reduce(bool is_max, const Tensor& values, const Tensor& indices, const Tensor& in, ReduceShape s) {
  dispatch_all(in.dtype(), is_max ? "max" : "min", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = acc_t<T>;
    const T* x = in.data_ptr<T>();
    T* vo = values.defined() ? values.data_ptr<T>() : nullptr;
    int64_t* io = indices.defined() ? indices.data_ptr<int64_t>() : nullptr;
    const int64_t outputs = s.outer * s.inner;
    const int64_t grain = std::max<int64_t>(1, kChunk / std::max<int64_t>(1, s.len));
    parallel_for(0, outputs, grain, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        const int64_t o = k / s.inner, i = k % s.inner;
        const T* p = x + o * s.len * s.inner + i;
        C best = static_cast<C>(p[0]);
        int64_t arg = 0;
        if (!is_nan(best)) {
          for (int64_t r = 1; r < s.len; ++r) {
            const C v = static_cast<C>(p[r * s.inner]);
            if (is_nan(v)) {
              best = v;
              arg = r;
              break;
            }
            if (is_max ? v > best : v < best) {
              best = v;
              arg = r;
            }
          }
        }
        if (vo) vo[k] = static_cast<T>(best);
        if (io) io[k] = arg;
      }
    });
  });
}

void logsumexp(const Tensor& out, const Tensor& in, ReduceShape s) {
  dispatch_floating(in.dtype(), "logsumexp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = in.data_ptr<T>();
    T* y = out.data_ptr<T>();
    const int64_t grain = std::max<int64_t>(1, kChunk / std::max<int64_t>(1, s.len));
    parallel_for(0, s.outer * s.inner, grain, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        const int64_t o = k / s.inner, i = k % s.inner;
        const T* p = x + o * s.len * s.inner + i;
        auto ld = [](T t) { return static_cast<double>(static_cast<acc_t<T>>(t)); };
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t r = 0; r < s.len; ++r) mx = std::max(mx, ld(p[r * s.inner]));
        if (std::isinf(mx)) {
          y[k] = static_cast<T>(mx);
          continue;
        }
        double sum = 0;
        for (int64_t r = 0; r < s.len; ++r) {
          sum += std::exp(ld(p[r * s.inner]) - mx);
        }
        y[k] = static_cast<T>(std::log(sum) + mx);
      }
    });
  });
}

void cumulative(bool is_prod, const Tensor& out, const Tensor& in, ReduceShape s) {
  dispatch_all(in.dtype(), is_prod ? "cumprod" : "cumsum", [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_out_type<T>(OutKind::SameOrInt64, out.dtype(), [&](auto otag) {
      using O = typename decltype(otag)::type;
      using A = acc_of<O>;
      const T* x = in.data_ptr<T>();
      O* y = out.data_ptr<O>();
      const int64_t grain = std::max<int64_t>(1, kChunk / std::max<int64_t>(1, s.len));
      parallel_for(0, s.outer * s.inner, grain, [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) {
          const int64_t o = k / s.inner, i = k % s.inner;
          const int64_t base = o * s.len * s.inner + i;
          A acc = is_prod ? A(1) : A(0);
          for (int64_t r = 0; r < s.len; ++r) {
            const A v = static_cast<A>(static_cast<acc_t<O>>(static_cast<O>(static_cast<acc_t<T>>(x[base + r * s.inner]))));
            acc = is_prod ? wrapping_mul(acc, v) : wrapping_add(acc, v);
            y[base + r * s.inner] = static_cast<O>(acc);
          }
        }
      });
    });
  });
}

#if EMBER_HAVE_VEC
// Note [Online column softmax]: a float32 softmax over a long non-last dim (a tile of
// kSoftmaxCols columns over all its rows does not stay in L2) would read its input from
// memory three times in softmax_cols. Here each column keeps a running max m and a running
// sum S of exp(x - m) (Milakov and Gimelshein's online normaliser): one pass over whole rows
// (tiles up to kOnlineCols wide, so each row's piece streams) updates them in blocks of eight
// rows, the second writes y = exp(x - M) / S, or x - (M + log S). A block rescales S by
// exp(m_old - m_new), in double, only in the lanes whose max moved (a new maximum; rare in
// most columns after the first rows), so the sum keeps the accuracy of the three-pass form:
// each term is exp(x - m) rounded once in float, the factors are exact to double rounding.
// The exps are Note [Cross entropy's exp]'s.
// The max used for the exponents is clamped to -FLT_MAX so that a column of -inf so far
// adds exp(-inf) = 0 rather than NaN; the special values then come out as in softmax_rows
// (NaN, +inf or only -inf in a column: all NaN). Rows missing from the last block are rows
// of -inf, which add 0 and move no max; columns past the last whole vector are copied into a
// padded block and go through the same code, so a column's result does not depend on its
// position in a tile, nor the tile widths on anything but the shape: the results are the
// same for any thread count.
constexpr int64_t kOnlineCols = 2048;

// The exp of Note [Cross entropy's exp] (inlined, within 2 ulp; Sleef's, through a call, took
// a third of the time).
inline vec::VecF online_exp(vec::VecF v) {
#if defined(__AVX512F__)
  return ce_exp16(v);
#else
  return ce_exp8(v);
#endif
}

// One block of eight rows for columns [j, j + kLanes): x[i] points at row i's values.
inline void online_block(const float* const* x, float* mx, double* sum) {
  using vec::VecF;
  const VecF floor = vec::set1(-std::numeric_limits<float>::max());
  const VecF m = vec::load(mx);
  VecF v[8];
  for (int i = 0; i < 8; ++i) v[i] = vec::load(x[i]);
  const VecF bm = vec::max(vec::max(vec::max(v[0], v[1]), vec::max(v[2], v[3])),
                           vec::max(vec::max(v[4], v[5]), vec::max(v[6], v[7])));
  const VecF mn = vec::max(bm, m);  // a NaN in bm leaves m: the sum carries it
  const VecF s_old = vec::max(m, floor), s_new = vec::max(mn, floor);
  VecF e[8];
  for (int i = 0; i < 8; ++i) e[i] = online_exp(vec::sub(v[i], s_new));
  const VecF bs = vec::add(vec::add(vec::add(e[0], e[1]), vec::add(e[2], e[3])),
                           vec::add(vec::add(e[4], e[5]), vec::add(e[6], e[7])));
  alignas(64) float old_l[vec::kLanes], new_l[vec::kLanes], bs_l[vec::kLanes];
  vec::store(old_l, s_old);
  vec::store(new_l, s_new);
  vec::store(bs_l, bs);
  if (std::memcmp(old_l, new_l, sizeof old_l) != 0) {
    for (int l = 0; l < vec::kLanes; ++l) {
      if (old_l[l] != new_l[l]) sum[l] *= std::exp(static_cast<double>(old_l[l]) - static_cast<double>(new_l[l]));
    }
  }
  for (int l = 0; l < vec::kLanes; ++l) sum[l] += static_cast<double>(bs_l[l]);
  vec::store(mx, mn);
}

// y[j] = exp(x[j] - shift[j]) * scale[j] (softmax) or x[j] - shift[j] (log_softmax, shift =
// max + log S) over [0, n); a tail goes through the vector code in a padded block.
inline void online_write(bool log, const float* x, const float* shift, const float* scale, float* y, int64_t n) {
  auto body = [log](const float* xp, const float* sp, const float* cp, float* yp) {
    const vec::VecF d = vec::sub(vec::load(xp), vec::load(sp));
    vec::store(yp, log ? d : vec::mul(online_exp(d), vec::load(cp)));
  };
  int64_t j = 0;
  for (; j + vec::kLanes <= n; j += vec::kLanes) body(x + j, shift + j, scale + j, y + j);
  if (j < n) {
    alignas(64) float px[vec::kLanes] = {}, ps[vec::kLanes] = {}, pc[vec::kLanes] = {};
    const size_t bytes = static_cast<size_t>(n - j) * sizeof(float);
    std::memcpy(px, x + j, bytes);
    std::memcpy(ps, shift + j, bytes);
    std::memcpy(pc, scale + j, bytes);
    body(px, ps, pc, px);
    std::memcpy(y + j, px, bytes);
  }
}

void softmax_cols_online(bool log, const float* x, float* y, ReduceShape s) {
  // Tiles as wide as kOnlineCols, narrower where that leaves a thread without one (the
  // width changes no result: see the Note).
  const int64_t per_thread = (s.inner + get_num_threads() - 1) / std::max(1, get_num_threads());
  const int64_t cols = std::clamp<int64_t>((per_thread + vec::kLanes - 1) / vec::kLanes * vec::kLanes, 4 * vec::kLanes,
                                           kOnlineCols);
  const int64_t blocks = (s.inner + cols - 1) / cols;
  parallel_for(0, s.outer * blocks, 1, [&](int64_t b, int64_t e) {
    alignas(64) float mx[kOnlineCols], shift[kOnlineCols], scale[kOnlineCols];
    alignas(64) double sum[kOnlineCols];
    alignas(64) float neg_inf[kOnlineCols];
    for (int64_t j = 0; j < kOnlineCols; ++j) neg_inf[j] = -std::numeric_limits<float>::infinity();
    for (int64_t k = b; k < e; ++k) {
      const int64_t o = k / blocks, c0 = k % blocks * cols;
      const int64_t w = std::min(cols, s.inner - c0);
      const float* xb = x + o * s.len * s.inner + c0;
      float* yb = y + o * s.len * s.inner + c0;
      for (int64_t j = 0; j < w; ++j) {
        mx[j] = -std::numeric_limits<float>::infinity();
        sum[j] = 0;
      }
      const int64_t whole = w / vec::kLanes * vec::kLanes;
      for (int64_t r = 0; r < s.len; r += 8) {
        const float* rows[8];
        for (int i = 0; i < 8; ++i) rows[i] = r + i < s.len ? xb + (r + i) * s.inner : neg_inf;
        for (int64_t j = 0; j < whole; j += vec::kLanes) {
          const float* at[8];
          for (int i = 0; i < 8; ++i) at[i] = rows[i] + j;
          online_block(at, mx + j, sum + j);
        }
        if (whole < w) {
          alignas(64) float pad[8][vec::kLanes];
          const float* at[8];
          for (int i = 0; i < 8; ++i) {
            std::fill(pad[i], pad[i] + vec::kLanes, -std::numeric_limits<float>::infinity());
            std::memcpy(pad[i], rows[i] + whole, static_cast<size_t>(w - whole) * sizeof(float));
            at[i] = pad[i];
          }
          alignas(64) float pm[vec::kLanes];
          double ps[vec::kLanes] = {};
          std::fill(pm, pm + vec::kLanes, -std::numeric_limits<float>::infinity());
          std::memcpy(pm, mx + whole, static_cast<size_t>(w - whole) * sizeof(float));
          std::memcpy(ps, sum + whole, static_cast<size_t>(w - whole) * sizeof(double));
          online_block(at, pm, ps);
          std::memcpy(mx + whole, pm, static_cast<size_t>(w - whole) * sizeof(float));
          std::memcpy(sum + whole, ps, static_cast<size_t>(w - whole) * sizeof(double));
        }
      }
      for (int64_t j = 0; j < w; ++j) {
        const float sm = std::max(mx[j], -std::numeric_limits<float>::max());
        if (log) {
          shift[j] = static_cast<float>(std::log(sum[j])) + sm;
          scale[j] = 0;  // unused
        } else {
          shift[j] = sm;
          scale[j] = static_cast<float>(1.0 / sum[j]);
        }
      }
      for (int64_t r = 0; r < s.len; ++r) {
        online_write(log, xb + r * s.inner, shift, scale, yb + r * s.inner, w);
      }
    }
  });
}
#endif

void softmax(bool log, const Tensor& out, const Tensor& in, ReduceShape s) {
  dispatch_floating(in.dtype(), log ? "log_softmax" : "softmax", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* x = in.data_ptr<T>();
    T* y = out.data_ptr<T>();
    if constexpr (std::is_same_v<T, C>) {
      if (s.inner == 1) return softmax_rows(log, x, y, s.outer, s.len);
#if EMBER_HAVE_VEC
      // Note [Online column softmax] where a three-pass tile would not stay in L2.
      if constexpr (std::is_same_v<T, float>) {
        if (s.len * std::min(s.inner, kSoftmaxCols) * static_cast<int64_t>(sizeof(float)) > (int64_t{256} << 10)) {
          return softmax_cols_online(log, x, y, s);
        }
      }
#endif
      if (s.len > 0) return softmax_cols(log, x, y, s);
    }
    const int64_t grain = std::max<int64_t>(1, kChunk / std::max<int64_t>(1, s.len));
    parallel_for(0, s.outer * s.inner, grain, [&](int64_t b, int64_t e) {
      std::vector<C> buf(static_cast<size_t>(s.len));
      for (int64_t k = b; k < e; ++k) {
        const int64_t o = k / s.inner, i = k % s.inner;
        const int64_t base = o * s.len * s.inner + i;
        const C mx = load_row_max(x + base, s.len, s.inner, buf.data());
        // exp(x - max) through the vector path for float rows.
        int64_t r = 0;
#if EMBER_HAVE_VEC
        if constexpr (std::is_same_v<C, float>) {
          const vec::VecF vm = vec::set1(mx);
          for (; r + vec::kLanes <= s.len; r += vec::kLanes) {
            vec::store(buf.data() + r, vec::exp(vec::sub(vec::load(buf.data() + r), vm)));
          }
          if (r < s.len) {
            alignas(64) float pad[vec::kLanes] = {};
            std::memcpy(pad, buf.data() + r, static_cast<size_t>(s.len - r) * sizeof(float));
            vec::store(pad, vec::exp(vec::sub(vec::load(pad), vm)));
            std::memcpy(buf.data() + r, pad, static_cast<size_t>(s.len - r) * sizeof(float));
            r = s.len;
          }
        }
#endif
        for (; r < s.len; ++r) buf[r] = std::exp(buf[r] - mx);
        double sum = 0;
        for (int64_t q = 0; q < s.len; ++q) sum += buf[q];
        if (log) {
          const C lse = static_cast<C>(std::log(sum)) + mx;
          for (int64_t q = 0; q < s.len; ++q) y[base + q * s.inner] = static_cast<T>(static_cast<C>(x[base + q * s.inner]) - lse);
        } else {
          const C inv = static_cast<C>(1.0 / sum);
          for (int64_t q = 0; q < s.len; ++q) y[base + q * s.inner] = static_cast<T>(buf[q] * inv);
        }
      }
    });
  });
}

}  // namespace ember::kernels::cpu::EMBER_CPU_NS
