// Joining and shaping ops against libtorch 1.13: cat, stack, hstack, vstack, flip, roll,
// repeat, tile, repeat_interleave, tril, triu, pad and one_hot on the same inputs, in every
// dtype and in contiguous, transposed, stepped-slice and expanded layouts. These ops only
// move elements, so results must match byte for byte; bad inputs must fail in both.

#include <ember/ember.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "parity/torch_bridge.h"

// Named per file: the parity files are compiled in unity batches (Note [Build time]).
namespace join_parity {

using I64 = std::vector<int64_t>;

const std::vector<ember::DType> kAllDTypes = {
    ember::kFloat32, ember::kFloat64, ember::kFloat16, ember::kBFloat16, ember::kInt8,
    ember::kUInt8,   ember::kInt16,   ember::kInt32,   ember::kInt64,    ember::kBool};

// Random values of dtype dt (signed integers include negatives, bool both values).
ember::Tensor RandomOf(ember::IntArrayRef shape, ember::DType dt) {
  if (ember::is_floating_point(dt)) return ember::randn(shape).to(dt);
  if (dt == ember::kBool) return ember::randint(0, 2, shape).to(dt);
  if (dt == ember::kUInt8) return ember::randint(0, 250, shape).to(dt);
  return ember::randint(-100, 100, shape).to(dt);
}

// The same tensor in both libraries: a view of a shared random base laid out one of
// several ways, so ember sees strided inputs while torch gets identical values.
struct Pair {
  ember::Tensor e;
  torch::Tensor t;
};

enum class Layout { Contiguous, Transposed, Stepped, Expanded };
const std::vector<Layout> kLayouts = {Layout::Contiguous, Layout::Transposed, Layout::Stepped,
                                      Layout::Expanded};

const char* LayoutName(Layout l) {
  switch (l) {
    case Layout::Contiguous: return "contiguous";
    case Layout::Transposed: return "transposed";
    case Layout::Stepped: return "stepped slice";
    case Layout::Expanded: return "expanded";
  }
  return "?";
}

using Source = std::function<ember::Tensor(ember::IntArrayRef, ember::DType)>;

Pair Make(I64 shape, ember::DType dt, Layout layout = Layout::Contiguous,
          const Source& random = RandomOf) {
  const int64_t n = static_cast<int64_t>(shape.size());
  if (layout == Layout::Transposed && n >= 2) {
    I64 base_shape = shape;
    std::swap(base_shape[n - 1], base_shape[n - 2]);
    ember::Tensor base = random(base_shape, dt);
    torch::Tensor tb = parity::to_torch(base);
    return {base.transpose(-1, -2), tb.transpose(-1, -2)};
  }
  if (layout == Layout::Stepped && n >= 1) {
    I64 base_shape = shape;
    base_shape[n - 1] = 2 * shape[n - 1] + 1;
    ember::Tensor base = random(base_shape, dt);
    torch::Tensor tb = parity::to_torch(base);
    // Odd start: a storage offset as well as a step.
    return {base.slice(-1, 1, base_shape[n - 1], 2), tb.slice(-1, 1, base_shape[n - 1], 2)};
  }
  if (layout == Layout::Expanded && n >= 1) {
    I64 base_shape = shape;
    base_shape[0] = 1;
    ember::Tensor base = random(base_shape, dt);
    torch::Tensor tb = parity::to_torch(base);
    return {base.expand(shape), tb.expand(shape)};
  }
  ember::Tensor base = random(shape, dt);
  return {base, parity::to_torch(base)};
}

// Same dtype, sizes and bytes.
void ExpectSame(const ember::Tensor& e, const torch::Tensor& t) {
  ASSERT_EQ(e.dtype(), parity::to_ember(t.scalar_type()));
  ASSERT_EQ(e.sizes().vec(), t.sizes().vec());
  EXPECT_TRUE(e.is_contiguous());
  ember::Tensor te = parity::to_ember(t);
  if (e.nbytes() == 0) return;
  EXPECT_EQ(std::memcmp(te.data_ptr(), e.data_ptr(), e.nbytes()), 0) << "ember:\n"
                                                                     << e << "\ntorch:\n"
                                                                     << t;
}

// Both libraries must reject the input.
void ExpectBothThrow(const std::function<void()>& ember_fn, const std::function<void()>& torch_fn,
                     const std::string& what) {
  EXPECT_THROW(ember_fn(), ember::Error) << what;
  EXPECT_ANY_THROW(torch_fn()) << what;
}

// libtorch's CPU repeat_interleave and reflect/replicate pads open an OpenMP region even
// for tiny inputs, which costs milliseconds per call on a busy machine; these tests run
// thousands of small cases, so torch runs them on one thread.
class TorchOneThread {
 public:
  TorchOneThread() : before_(torch::get_num_threads()) { torch::set_num_threads(1); }
  ~TorchOneThread() { torch::set_num_threads(before_); }

 private:
  int before_;
};

std::string Trace(ember::DType dt, Layout l, const I64& shape) {
  std::string s = std::string(ember::dtype_name(dt)) + ", " + LayoutName(l) + ", [";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// ======================================================================================

TEST(JoinParity, CatEveryDtypeLayoutAndDim) {
  ember::manual_seed(11);
  for (ember::DType dt : kAllDTypes) {
    for (Layout l : kLayouts) {
      for (const I64& shape : {I64{5}, I64{3, 4}, I64{2, 3, 5}}) {
        SCOPED_TRACE(Trace(dt, l, shape));
        const int64_t nd = static_cast<int64_t>(shape.size());
        for (int64_t dim = -nd; dim < nd; ++dim) {
          Pair a = Make(shape, dt, l);
          I64 other = shape;
          other[dim < 0 ? dim + nd : dim] = 2;
          Pair b = Make(other, dt, Layout::Contiguous);
          Pair c = Make(shape, dt, Layout::Stepped);
          ExpectSame(ember::cat({a.e, b.e, c.e}, dim), torch::cat({a.t, b.t, c.t}, dim));
          ExpectSame(ember::concat({b.e, a.e}, dim), torch::cat({b.t, a.t}, dim));
        }
      }
    }
  }
}

TEST(JoinParity, CatMixedDtypesPromoteLikeTorch) {
  ember::manual_seed(12);
  for (ember::DType da : kAllDTypes) {
    for (ember::DType db : kAllDTypes) {
      SCOPED_TRACE(std::string(ember::dtype_name(da)) + " + " + std::string(ember::dtype_name(db)));
      Pair a = Make({2, 3}, da, Layout::Transposed);
      Pair b = Make({2, 2}, db);
      ExpectSame(ember::cat({a.e, b.e}, 1), torch::cat({a.t, b.t}, 1));
      // Skipped empty 1-D tensors still take part in the promotion.
      Pair e = Make({0}, db);
      ExpectSame(ember::cat({e.e, a.e, e.e}, 0), torch::cat({e.t, a.t, e.t}, 0));
    }
  }
  Pair x = Make({0}, ember::kInt32), y = Make({0}, ember::kFloat16);
  ExpectSame(ember::cat({x.e, y.e}, 3), torch::cat({x.t, y.t}, 3));
}

TEST(JoinParity, CatEmptyAndLarge) {
  ember::manual_seed(13);
  Pair z = Make({0, 3}, ember::kFloat32);
  Pair a = Make({2, 3}, ember::kFloat32);
  ExpectSame(ember::cat({z.e, a.e, z.e}), torch::cat({z.t, a.t, z.t}));
  Pair w = Make({2, 0}, ember::kInt64);
  ExpectSame(ember::cat({w.e, a.e}, 1), torch::cat({w.t, a.t}, 1));
  // Big enough for the parallel copies, with a strided partner.
  Pair big = Make({257, 1031}, ember::kFloat32);
  Pair big2 = Make({257, 517}, ember::kFloat32, Layout::Stepped);
  ExpectSame(ember::cat({big.e, big2.e}, 1), torch::cat({big.t, big2.t}, 1));
  ExpectSame(ember::cat({big.e, big.e}, 0), torch::cat({big.t, big.t}, 0));
  Pair flat = Make({400000}, ember::kInt16);
  ExpectSame(ember::cat({flat.e, flat.e}), torch::cat({flat.t, flat.t}));
}

TEST(JoinParity, StackHstackVstack) {
  ember::manual_seed(14);
  for (ember::DType dt : kAllDTypes) {
    for (Layout l : kLayouts) {
      for (const I64& shape : {I64{}, I64{4}, I64{3, 4}, I64{2, 3, 2}}) {
        SCOPED_TRACE(Trace(dt, l, shape));
        Pair a = Make(shape, dt, l);
        Pair b = Make(shape, dt);
        const int64_t nd = static_cast<int64_t>(shape.size());
        for (int64_t dim = -nd - 1; dim <= nd; ++dim) {
          ExpectSame(ember::stack({a.e, b.e, a.e}, dim), torch::stack({a.t, b.t, a.t}, dim));
        }
        ExpectSame(ember::hstack({a.e, b.e}), torch::hstack({a.t, b.t}));
        ExpectSame(ember::vstack({a.e, b.e}), torch::vstack({a.t, b.t}));
      }
    }
  }
  Pair i = Make({3, 2}, ember::kInt32), h = Make({3, 2}, ember::kFloat16);
  ExpectSame(ember::stack({i.e, h.e}, 1), torch::stack({i.t, h.t}, 1));
  Pair v1 = Make({3}, ember::kUInt8), v2 = Make({2, 3}, ember::kInt8);
  ExpectSame(ember::vstack({v1.e, v2.e}), torch::vstack({v1.t, v2.t}));
  Pair h1 = Make({2, 1}, ember::kBool), h2 = Make({2, 3}, ember::kBFloat16);
  ExpectSame(ember::hstack({h1.e, h2.e}), torch::hstack({h1.t, h2.t}));
}

TEST(JoinParity, FlipAndRoll) {
  ember::manual_seed(15);
  const std::vector<I64> flip_dims = {{}, {0}, {-1}, {0, 1}, {-2, -1}, {2, 0, 1}};
  const std::vector<std::pair<I64, I64>> rolls = {
      {{1}, {}},   {{-7}, {}},        {{2}, {0}},         {{-1}, {-1}},
      {{13}, {1}}, {{1, -2}, {0, 1}}, {{3, 2}, {-1, -1}}, {{-5, 4, 1}, {2, 0, 1}}};
  for (ember::DType dt : kAllDTypes) {
    for (Layout l : kLayouts) {
      for (const I64& shape : {I64{4, 5}, I64{3, 4, 6}, I64{1, 7, 2}}) {
        SCOPED_TRACE(Trace(dt, l, shape));
        Pair a = Make(shape, dt, l);
        for (const I64& dims : flip_dims) {
          if (shape.size() < 3 && dims.size() == 3) continue;
          ExpectSame(ember::flip(a.e, dims), torch::flip(a.t, dims));
        }
        for (const auto& [shifts, dims] : rolls) {
          bool ok = true;
          for (int64_t d : dims) ok = ok && d < static_cast<int64_t>(shape.size());
          if (!ok) continue;
          ExpectSame(a.e.roll(shifts, dims), torch::roll(a.t, shifts, dims));
        }
      }
    }
  }
  Pair s = Make({}, ember::kFloat32);
  ExpectSame(s.e.flip({}), torch::flip(s.t, {}));
  ExpectSame(s.e.roll({3}), torch::roll(s.t, {3}));
  Pair empty = Make({0, 3}, ember::kInt64);
  ExpectSame(empty.e.roll({1}, {0}), torch::roll(empty.t, {1}, {0}));
  ExpectSame(empty.e.flip({0, 1}), torch::flip(empty.t, {0, 1}));
  Pair longrow = Make({3, 40000}, ember::kFloat16, Layout::Stepped);
  ExpectSame(longrow.e.flip({1}), torch::flip(longrow.t, {1}));
  ExpectSame(longrow.e.roll({12345}, {1}), torch::roll(longrow.t, {12345}, {1}));
  ExpectSame(longrow.e.roll({-70001}), torch::roll(longrow.t, {-70001}));
}

TEST(JoinParity, RepeatAndTile) {
  ember::manual_seed(16);
  const std::vector<I64> reps = {{1, 1}, {2, 3}, {3, 1, 2}, {0, 2}, {2, 1, 1, 2}};
  const std::vector<I64> tiles = {{}, {2}, {3, 1}, {2, 1, 2}, {0}};
  for (ember::DType dt : kAllDTypes) {
    for (Layout l : kLayouts) {
      for (const I64& shape : {I64{3, 4}, I64{1, 5}}) {
        SCOPED_TRACE(Trace(dt, l, shape));
        Pair a = Make(shape, dt, l);
        for (const I64& r : reps) ExpectSame(a.e.repeat(r), a.t.repeat(r));
        for (const I64& r : tiles) {
          ExpectSame(ember::tile(a.e, r), torch::tile(a.t, r));
          ExpectSame(a.e.tile(r), a.t.tile(r));
        }
      }
    }
  }
  Pair s = Make({}, ember::kBool);
  ExpectSame(s.e.repeat({}), s.t.repeat(torch::IntArrayRef{}));
  ExpectSame(s.e.repeat({4, 2}), s.t.repeat({4, 2}));
  ExpectSame(s.e.tile({3}), s.t.tile({3}));
  Pair e = Make({0, 2}, ember::kFloat64);
  ExpectSame(e.e.repeat({3, 2}), e.t.repeat({3, 2}));
  Pair big = Make({100, 300}, ember::kInt32, Layout::Transposed);
  ExpectSame(big.e.repeat({3, 2}), big.t.repeat({3, 2}));
}

TEST(JoinParity, RepeatInterleave) {
  TorchOneThread one_thread;
  ember::manual_seed(17);
  for (ember::DType dt : kAllDTypes) {
    for (Layout l : kLayouts) {
      for (const I64& shape : {I64{5}, I64{3, 4}, I64{2, 3, 2}}) {
        SCOPED_TRACE(Trace(dt, l, shape));
        Pair a = Make(shape, dt, l);
        const int64_t nd = static_cast<int64_t>(shape.size());
        for (int64_t r : {0, 1, 3}) {
          ExpectSame(a.e.repeat_interleave(r), a.t.repeat_interleave(r));
          ExpectSame(ember::repeat_interleave(a.e, r), torch::repeat_interleave(a.t, r));
          for (int64_t d = -nd; d < nd; ++d) {
            ExpectSame(a.e.repeat_interleave(r, d), a.t.repeat_interleave(r, d));
          }
        }
        for (int64_t d = -nd; d < nd; ++d) {
          const int64_t size = shape[d < 0 ? d + nd : d];
          ember::Tensor counts = ember::randint(0, 4, {size});
          for (ember::DType cdt : {ember::kInt64, ember::kInt32}) {
            ember::Tensor c = counts.to(cdt);
            ExpectSame(a.e.repeat_interleave(c, d), a.t.repeat_interleave(parity::to_torch(c), d));
          }
          ember::Tensor one = ember::tensor(std::vector<int64_t>{2});
          ExpectSame(a.e.repeat_interleave(one, d),
                     a.t.repeat_interleave(parity::to_torch(one), d));
          ember::Tensor zero_dim = ember::tensor(int64_t{3});
          ExpectSame(a.e.repeat_interleave(zero_dim, d),
                     a.t.repeat_interleave(parity::to_torch(zero_dim), d));
        }
        ember::Tensor flat_counts = ember::randint(0, 3, {a.e.numel()});
        ExpectSame(a.e.repeat_interleave(flat_counts),
                   a.t.repeat_interleave(parity::to_torch(flat_counts)));
      }
    }
  }
  Pair s = Make({}, ember::kFloat32);
  ExpectSame(s.e.repeat_interleave(3), s.t.repeat_interleave(3));
  Pair e = Make({0, 3}, ember::kFloat32);
  ExpectSame(e.e.repeat_interleave(2), e.t.repeat_interleave(2));
  ExpectSame(e.e.repeat_interleave(2, 1), e.t.repeat_interleave(2, 1));
}

TEST(JoinParity, TrilTriu) {
  TorchOneThread one_thread;
  ember::manual_seed(18);
  for (ember::DType dt : kAllDTypes) {
    for (Layout l : kLayouts) {
      for (const I64& shape : {I64{4, 4}, I64{3, 5}, I64{5, 2}, I64{2, 3, 4}, I64{2, 1, 3, 3}}) {
        SCOPED_TRACE(Trace(dt, l, shape));
        Pair a = Make(shape, dt, l);
        for (int64_t k : {-6, -2, -1, 0, 1, 2, 7}) {
          ExpectSame(ember::tril(a.e, k), torch::tril(a.t, k));
          ExpectSame(a.e.triu(k), a.t.triu(k));
        }
      }
    }
  }
  Pair e = Make({0, 2, 3}, ember::kInt8);
  ExpectSame(e.e.tril(), e.t.tril());
  Pair big = Make({3, 200, 300}, ember::kFloat64, Layout::Transposed);
  ExpectSame(big.e.triu(-17), big.t.triu(-17));
  ExpectSame(big.e.tril(40), big.t.tril(40));
}

namespace F = torch::nn::functional;

torch::Tensor TorchPad(const torch::Tensor& t, const I64& p, const std::string& mode,
                       double value = 0.0) {
  F::PadFuncOptions o(p);
  if (mode == "reflect") {
    o.mode(torch::kReflect);
  } else if (mode == "replicate") {
    o.mode(torch::kReplicate);
  } else {
    o.mode(torch::kConstant).value(value);
  }
  return F::pad(t, o);
}

TEST(JoinParity, PadConstant) {
  ember::manual_seed(19);
  const std::vector<I64> pads = {{},
                                 {1, 1},
                                 {0, 2},
                                 {2, 0, 1, 3},
                                 {-1, 2},
                                 {-1, -1},
                                 {1, 1, -1, 0},
                                 {3, 3, 0, 0, 1, 2},
                                 {-2, 0, 0, 0},
                                 {0, 0, 0, 0},
                                 {-3, 1}};
  for (ember::DType dt : kAllDTypes) {
    for (Layout l : kLayouts) {
      for (const I64& shape : {I64{3, 4}, I64{2, 3, 5}}) {
        SCOPED_TRACE(Trace(dt, l, shape));
        Pair a = Make(shape, dt, l);
        for (const I64& p : pads) {
          if (p.size() > 2 * shape.size()) continue;
          for (double v : {0.0, 1.0, -2.75, 7.0}) {
            if (dt == ember::kUInt8 && v < 0) continue;
            ExpectSame(ember::pad(a.e, p, "constant", v), TorchPad(a.t, p, "constant", v));
          }
        }
      }
    }
  }
  Pair s = Make({}, ember::kFloat32);
  ExpectSame(ember::pad(s.e, {}), TorchPad(s.t, {}, "constant"));
  Pair z = Make({0, 2}, ember::kInt32);
  ExpectSame(ember::pad(z.e, {1, 1}), TorchPad(z.t, {1, 1}, "constant"));
  ExpectSame(ember::pad(z.e, {1, 1, 2, 0}, "constant", 5),
             TorchPad(z.t, {1, 1, 2, 0}, "constant", 5));
  Pair v = Make({6}, ember::kFloat16);
  ExpectSame(ember::pad(v.e, {-2, 3}, "constant", 0.1), TorchPad(v.t, {-2, 3}, "constant", 0.1));
  ExpectSame(ember::pad(v.e, {1, 0}, "constant", INFINITY),
             TorchPad(v.t, {1, 0}, "constant", INFINITY));
}

TEST(JoinParity, PadReflectAndReplicate) {
  TorchOneThread one_thread;
  ember::manual_seed(20);
  struct Case {
    I64 shape;
    I64 pad;
  };
  const std::vector<Case> cases = {{{2, 5}, {2, 3}},
                                   {{2, 3, 5}, {4, 0}},
                                   {{3, 5}, {-1, 2}},
                                   {{2, 3, 5}, {-2, -2}},
                                   {{2, 4, 5}, {1, 2, 3, 0}},
                                   {{1, 2, 4, 5}, {0, 4, 3, 3}},
                                   {{2, 4, 5}, {-1, 2, 1, -2}},
                                   {{2, 3, 4, 5}, {1, 1, 2, 2, 2, 0}},
                                   {{1, 2, 3, 4, 5}, {2, 1, 0, 3, 1, 2}},
                                   {{2, 3, 4, 5}, {-1, 1, 0, -1, 1, 1}},
                                   {{0, 3, 5}, {2, 2}},       {{2, 3}, {-4, 2}},          {{2, 3}, {2, -4}},
      {{3, 4, 5}, {-6, 4, 3, -5}}};
  for (ember::DType dt : {ember::kFloat32, ember::kFloat64}) {
    for (Layout l : kLayouts) {
      for (const Case& c : cases) {
        SCOPED_TRACE(Trace(dt, l, c.shape));
        Pair a = Make(c.shape, dt, l);
        ExpectSame(ember::pad(a.e, c.pad, "reflect"), TorchPad(a.t, c.pad, "reflect"));
        I64 rp = c.pad;
        for (int64_t& x : rp) x = x > 0 ? 3 * x : x;  // replicate may pad past the size
        ExpectSame(ember::pad(a.e, rp, "replicate"), TorchPad(a.t, rp, "replicate"));
      }
    }
  }
  // PyTorch's CPU reflect kernel takes float16/bfloat16 for 3 padded dims only.
  for (ember::DType dt : {ember::kFloat16, ember::kBFloat16}) {
    Pair a = Make({2, 3, 4, 5}, dt, Layout::Transposed);
    ExpectSame(ember::pad(a.e, {1, 2, 3, 0, 2, 2}, "reflect"),
               TorchPad(a.t, {1, 2, 3, 0, 2, 2}, "reflect"));
  }
  // Every padded dim but one empties: allowed for 2-D and 3-D padding, as in PyTorch.
  Pair x = Make({2, 3, 4}, ember::kFloat32);
  ExpectSame(ember::pad(x.e, {1, 1, -3, 0}, "reflect"), TorchPad(x.t, {1, 1, -3, 0}, "reflect"));
  ExpectSame(ember::pad(x.e, {1, 1, -3, 0}, "replicate"),
             TorchPad(x.t, {1, 1, -3, 0}, "replicate"));
}

TEST(JoinParity, OneHot) {
  ember::manual_seed(21);
  for (Layout l : kLayouts) {
    for (const I64& shape : {I64{7}, I64{3, 4}, I64{2, 3, 2}}) {
      SCOPED_TRACE(Trace(ember::kInt64, l, shape));
      Pair a = Make(shape, ember::kInt64, l,
                    [](ember::IntArrayRef sz, ember::DType) { return ember::randint(0, 6, sz); });
      const ember::Tensor& e = a.e;
      const torch::Tensor& t = a.t;
      ExpectSame(ember::one_hot(e), torch::one_hot(t));
      ExpectSame(ember::one_hot(e, 9), torch::one_hot(t, 9));
    }
  }
  ember::Tensor s = ember::tensor(int64_t{4});
  ExpectSame(ember::one_hot(s), torch::one_hot(parity::to_torch(s)));
  ember::Tensor z = ember::zeros({0, 3}, ember::kInt64);
  ExpectSame(ember::one_hot(z, 4), torch::one_hot(parity::to_torch(z), 4));
}

TEST(JoinParity, BadInputsFailInBoth) {
  Pair a = Make({2, 3}, ember::kFloat32);
  Pair s = Make({}, ember::kFloat32);
  Pair i = Make({3}, ember::kInt64);
  ExpectBothThrow([&] { ember::cat({}); }, [&] { torch::cat(std::vector<torch::Tensor>{}); },
                  "cat of nothing");
  ExpectBothThrow([&] { ember::cat({a.e, s.e}); }, [&] { torch::cat({a.t, s.t}); }, "cat 0-dim");
  ExpectBothThrow(
      [&] {
        ember::cat({a.e, a.e.t()});
      },
      [&] {
        torch::cat({a.t, a.t.t()});
      },
      "cat sizes");
  ExpectBothThrow(
      [&] {
        ember::cat({a.e, a.e}, 2);
      },
      [&] {
        torch::cat({a.t, a.t}, 2);
      },
      "cat dim");
  ExpectBothThrow([&] { ember::cat({a.e, i.e}); }, [&] { torch::cat({a.t, i.t}); }, "cat ndim");
  ExpectBothThrow(
      [&] {
        ember::stack({a.e, a.e.t()});
      },
      [&] {
        torch::stack({a.t, a.t.t()});
      },
      "stack sizes");
  ExpectBothThrow([&] { ember::stack({a.e}, 3); }, [&] { torch::stack({a.t}, 3); }, "stack dim");
  ExpectBothThrow([&] { ember::hstack({i.e, a.e}); }, [&] { torch::hstack({i.t, a.t}); }, "hstack");
  ExpectBothThrow(
      [&] {
        ember::flip(a.e, {0, -2});
      },
      [&] {
        torch::flip(a.t, {0, -2});
      },
      "flip dup");
  ExpectBothThrow(
      [&] {
        ember::roll(a.e, {1, 2});
      },
      [&] {
        torch::roll(a.t, {1, 2});
      },
      "roll align");
  ExpectBothThrow([&] { ember::roll(a.e, {}); }, [&] { torch::roll(a.t, torch::IntArrayRef{}); },
                  "roll no shifts");
  ExpectBothThrow([&] { ember::roll(s.e, {1}, {0}); }, [&] { torch::roll(s.t, {1}, {0}); },
                  "roll 0-dim dim");
  ExpectBothThrow([&] { a.e.repeat({2}); }, [&] { a.t.repeat({2}); }, "repeat short");
  ExpectBothThrow([&] { a.e.repeat({-1, 1}); }, [&] { a.t.repeat({-1, 1}); }, "repeat neg");
  ExpectBothThrow([&] { a.e.repeat_interleave(-1); }, [&] { a.t.repeat_interleave(-1); },
                  "repeat_interleave neg");
  ExpectBothThrow([&] { s.e.repeat_interleave(2, 0); }, [&] { s.t.repeat_interleave(2, 0); },
                  "repeat_interleave 0-dim dim");
  ExpectBothThrow([&] { a.e.repeat_interleave(i.e, 0); }, [&] { a.t.repeat_interleave(i.t, 0); },
                  "repeat_interleave sizes");
  ExpectBothThrow([&] { a.e.repeat_interleave(a.e.to(ember::kInt64), 0); },
                  [&] { a.t.repeat_interleave(a.t.to(torch::kInt64), 0); },
                  "repeat_interleave 2-D repeats");
  ExpectBothThrow([&] { ember::tril(i.e); }, [&] { torch::tril(i.t); }, "tril 1-D");
  ExpectBothThrow([&] { ember::pad(a.e, {1}); }, [&] { TorchPad(a.t, {1}, "constant"); },
                  "pad odd");
  ExpectBothThrow(
      [&] {
        ember::pad(a.e, {1, 1, 1, 1, 1, 1});
      },
      [&] {
        TorchPad(a.t, {1, 1, 1, 1, 1, 1}, "constant");
      },
      "pad long");
  ExpectBothThrow(
      [&] {
        ember::pad(a.e, {-4, 1});
      },
      [&] {
        TorchPad(a.t, {-4, 1}, "constant");
      },
      "pad crop");
  ExpectBothThrow(
      [&] {
        ember::pad(a.e, {-3, 0, 1, 0});
      },
      [&] {
        TorchPad(a.t, {-3, 0, 1, 0}, "constant");
      },
      "pad empty output");
  ExpectBothThrow(
      [&] {
        ember::pad(a.e.to(ember::kUInt8), {1, 1}, "constant", -1);
      },
      [&] {
        TorchPad(a.t.to(torch::kUInt8), {1, 1}, "constant", -1);
      },
      "pad value overflow");
  ExpectBothThrow(
      [&] {
        ember::pad(a.e, {3, 0}, "reflect");
      },
      [&] {
        TorchPad(a.t, {3, 0}, "reflect");
      },
      "reflect too wide");
  ExpectBothThrow(
      [&] {
        ember::pad(a.e, {-2, -1}, "reflect");
      },
      [&] {
        TorchPad(a.t, {-2, -1}, "reflect");
      },
      "reflect empty");
  ExpectBothThrow(
      [&] {
        ember::pad(a.e[0], {1, 1}, "replicate");
      },
      [&] {
        TorchPad(a.t[0], {1, 1}, "replicate");
      },
      "replicate 1-D");
  ExpectBothThrow(
      [&] {
        ember::pad(a.e, {1, 1, 1, 1}, "reflect");
      },
      [&] {
        TorchPad(a.t, {1, 1, 1, 1}, "reflect");
      },
      "reflect 2 dims of 2-D");
  Pair e = Make({2, 0, 4}, ember::kFloat32);
  ExpectBothThrow(
      [&] {
        ember::pad(e.e, {1, 1}, "reflect");
      },
      [&] {
        TorchPad(e.t, {1, 1}, "reflect");
      },
      "reflect empty channel");
  ExpectBothThrow([&] { ember::one_hot(i.e.to(ember::kInt32)); },
                  [&] { torch::one_hot(i.t.to(torch::kInt32)); }, "one_hot dtype");
  ember::Tensor neg = ember::tensor({0, -1});
  ExpectBothThrow([&] { ember::one_hot(neg); }, [&] { torch::one_hot(parity::to_torch(neg)); },
                  "one_hot negative");
  ember::Tensor big = ember::tensor({0, 5});
  ExpectBothThrow([&] { ember::one_hot(big, 5); },
                  [&] { torch::one_hot(parity::to_torch(big), 5); }, "one_hot too many");
  ember::Tensor none = ember::zeros({0}, ember::kInt64);
  ExpectBothThrow([&] { ember::one_hot(none); }, [&] { torch::one_hot(parity::to_torch(none)); },
                  "one_hot empty");
}

}  // namespace join_parity
