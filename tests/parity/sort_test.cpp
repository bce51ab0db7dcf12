// Sorting and selection against libtorch 1.13: sort/argsort, topk, kthvalue, unique and
// searchsorted on the same random inputs, for every dtype torch supports, several
// shapes, negative dims and non-contiguous or expanded inputs. Where ties make PyTorch's
// index choice unspecified, inputs have distinct values or sort is stable.

#include <ember/ember.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "parity/torch_bridge.h"

// Named per file: the parity files are compiled in unity batches (Note [Build time]).
namespace sort_parity {

using ember::Tensor;
using TT = torch::Tensor;

const std::vector<ember::DType> kAllTypes = {
    ember::kUInt8,   ember::kInt8,     ember::kInt16,   ember::kInt32,   ember::kInt64,
    ember::kFloat16, ember::kBFloat16, ember::kFloat32, ember::kFloat64, ember::kBool};

std::string Name(ember::DType dt) { return std::string(ember::dtype_name(dt)); }

// Values with many ties: small integers (converted to dt), and for floating types a
// sprinkling of NaN and +-inf.
Tensor WithTies(const std::vector<int64_t>& shape, ember::DType dt) {
  if (dt == ember::kBool) return ember::empty(shape, ember::TensorOptions(dt)).bernoulli_(0.5);
  Tensor x = ember::randint(dt == ember::kUInt8 ? 0 : -4, 5, shape).to(dt);
  if (ember::is_floating_point(dt)) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    x.masked_fill_(ember::empty(shape, ember::TensorOptions(ember::kBool)).bernoulli_(0.1), nan);
    x.masked_fill_(ember::empty(shape, ember::TensorOptions(ember::kBool)).bernoulli_(0.05), inf);
    x.masked_fill_(ember::empty(shape, ember::TensorOptions(ember::kBool)).bernoulli_(0.05), -inf);
  }
  return x;
}

// Distinct values (a random permutation of 0..numel-1, exact in every non-bool dtype
// for the small shapes used here).
Tensor Distinct(const std::vector<int64_t>& shape, ember::DType dt) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return ember::randperm(n).reshape(shape).to(dt);
}

// The same values in several layouts: contiguous, transposed, a stepped slice, expanded
// along dim 0 (expanded rows tie with each other, so only for tie-safe checks).
std::vector<std::pair<std::string, Tensor>> Layouts(const Tensor& base, bool with_expanded) {
  std::vector<std::pair<std::string, Tensor>> out;
  out.emplace_back("contiguous", base);
  const int64_t nd = base.dim();
  if (nd >= 2) {
    std::vector<int64_t> perm;
    for (int64_t d = nd - 1; d >= 0; --d) perm.push_back(d);
    out.emplace_back("transposed", base.permute(perm).contiguous().permute(perm));
  }
  if (nd >= 1) {
    std::vector<int64_t> wide = base.sizes().vec();
    wide.back() *= 2;
    Tensor w = ember::zeros(wide, ember::TensorOptions(base.dtype()));
    w.slice(-1, 0, wide.back(), 2).copy_(base);
    out.emplace_back("stepped", w.slice(-1, 0, wide.back(), 2));
  }
  if (with_expanded && nd >= 1 && base.size(0) > 1) {
    out.emplace_back("expanded", base.slice(0, 0, 1).expand(base.sizes()));
  }
  return out;
}

void ExpectSame(const Tensor& e, const TT& t, const std::string& what) {
  ASSERT_EQ(e.sizes().vec(), t.sizes().vec()) << what;
  ASSERT_EQ(parity::to_torch(e.dtype()), t.scalar_type()) << what;
  TT et = parity::to_torch(e);
  if (t.is_floating_point()) {
    // Sorting moves values without arithmetic: exact, NaN matching NaN.
    EXPECT_TRUE(torch::allclose(et.to(torch::kDouble), t.to(torch::kDouble), 0.0, 0.0, true))
        << what << "\nember:\n"
        << et << "\ntorch:\n"
        << t;
  } else {
    EXPECT_TRUE(torch::equal(et, t.contiguous())) << what << "\nember:\n"
                                                  << et << "\ntorch:\n"
                                                  << t;
  }
}

const std::vector<std::vector<int64_t>> kShapes = {{17}, {5, 9}, {3, 4, 6}};

// ---------------------------------------------------------------------------------------

TEST(SortParity, StableSortWithTiesNanAndInf) {
  int n = 0;
  for (auto dt : kAllTypes) {
    for (const auto& shape : kShapes) {
      for (const auto& [layout, x] : Layouts(WithTies(shape, dt), true)) {
        TT tx = parity::to_torch(x);
        for (int64_t dim = -x.dim(); dim < x.dim(); ++dim) {
          for (bool desc : {false, true}) {
            const std::string what = Name(dt) + " " + layout + " dim " + std::to_string(dim) +
                                     (desc ? " descending" : "");
            auto [ev, ei] = x.sort(dim, desc, true);
            auto [tv, ti] = tx.sort(true, dim, desc);
            ExpectSame(ev, tv, what + " values");
            ExpectSame(ei, ti, what + " indices");
            ++n;
          }
        }
      }
    }
  }
  EXPECT_GT(n, 300);
}

TEST(SortParity, SortAndArgsortOfDistinctValues) {
  for (auto dt : kAllTypes) {
    if (dt == ember::kBool) continue;
    for (const auto& shape : kShapes) {
      for (const auto& [layout, x] : Layouts(Distinct(shape, dt), false)) {
        TT tx = parity::to_torch(x);
        for (int64_t dim = -x.dim(); dim < x.dim(); ++dim) {
          for (bool desc : {false, true}) {
            const std::string what = Name(dt) + " " + layout + " dim " + std::to_string(dim);
            auto [ev, ei] = ember::sort(x, dim, desc);
            auto [tv, ti] = tx.sort(dim, desc);
            ExpectSame(ev, tv, what + " values");
            ExpectSame(ei, ti, what + " indices");
            ExpectSame(x.argsort(dim, desc), tx.argsort(dim, desc), what + " argsort");
          }
        }
      }
    }
  }
  // 0-dim and empty.
  Tensor z = ember::tensor(2.5);
  auto [zv, zi] = z.sort();
  auto [tzv, tzi] = parity::to_torch(z).sort();
  ExpectSame(zv, tzv, "0-dim");
  ExpectSame(zi, tzi, "0-dim indices");
  auto [ev, ei] = ember::zeros({0, 4}).sort(0);
  auto [tv, ti] = torch::zeros({0, 4}).sort(0);
  ExpectSame(ev, tv, "empty");
  ExpectSame(ei, ti, "empty indices");
}

TEST(SortParity, TopK) {
  int n = 0;
  for (auto dt : kAllTypes) {
    // libtorch 1.13 has no CPU topk for float16 and bool.
    if (dt == ember::kBool || dt == ember::kFloat16) continue;
    for (const auto& shape : kShapes) {
      for (const auto& [layout, x] : Layouts(Distinct(shape, dt), false)) {
        TT tx = parity::to_torch(x);
        for (int64_t dim = -x.dim(); dim < x.dim(); ++dim) {
          const int64_t size = x.size(dim);
          for (int64_t k : {int64_t{0}, int64_t{1}, size / 2, size}) {
            for (bool largest : {true, false}) {
              const std::string what = Name(dt) + " " + layout + " dim " + std::to_string(dim) +
                                       " k " + std::to_string(k) +
                                       (largest ? " largest" : " smallest");
              auto [ev, ei] = x.topk(k, dim, largest, true);
              auto [tv, ti] = tx.topk(k, dim, largest, true);
              ExpectSame(ev, tv, what + " values");
              ExpectSame(ei, ti, what + " indices");
              // sorted=false: any order is allowed; compare as sets.
              auto [uv, ui] = x.topk(k, dim, largest, false);
              auto [tuv, tui] = tx.topk(k, dim, largest, false);
              ExpectSame(uv, std::get<0>(tuv.sort(dim, largest)), what + " unsorted values");
              ExpectSame(x.gather(dim, ui), parity::to_torch(uv), what + " unsorted indices");
              ++n;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(n, 300);
}

TEST(SortParity, TopKWithNanAndTiesPicksTheSameValues) {
  for (auto dt : {ember::kFloat32, ember::kFloat64, ember::kBFloat16, ember::kInt32}) {
    for (const auto& shape : kShapes) {
      Tensor x = WithTies(shape, dt);
      TT tx = parity::to_torch(x);
      for (int64_t dim = -x.dim(); dim < x.dim(); ++dim) {
        const int64_t k = (x.size(dim) + 1) / 2;
        for (bool largest : {true, false}) {
          const std::string what = Name(dt) + " dim " + std::to_string(dim);
          auto [ev, ei] = x.topk(k, dim, largest);
          ExpectSame(ev, std::get<0>(tx.topk(k, dim, largest)), what + " values");
          ExpectSame(x.gather(dim, ei), parity::to_torch(ev),
                     what + " indices point at the values");
        }
      }
    }
  }
}

TEST(SortParity, KthValue) {
  for (auto dt : kAllTypes) {
    if (dt == ember::kBool || dt == ember::kFloat16) continue;  // no CPU kernel in 1.13
    for (const auto& shape : kShapes) {
      for (const auto& [layout, x] : Layouts(Distinct(shape, dt), false)) {
        TT tx = parity::to_torch(x);
        for (int64_t dim = -x.dim(); dim < x.dim(); ++dim) {
          const int64_t size = x.size(dim);
          for (int64_t k : {int64_t{1}, (size + 1) / 2, size}) {
            for (bool keepdim : {false, true}) {
              const std::string what = Name(dt) + " " + layout + " dim " + std::to_string(dim) +
                                       " k " + std::to_string(k) + (keepdim ? " keepdim" : "");
              auto [ev, ei] = x.kthvalue(k, dim, keepdim);
              auto [tv, ti] = tx.kthvalue(k, dim, keepdim);
              ExpectSame(ev, tv, what + " values");
              ExpectSame(ei, ti, what + " indices");
            }
          }
        }
      }
      // Ties and NaN: the same value, and an index that points at an equal element.
      Tensor y = WithTies(shape, dt);
      TT ty = parity::to_torch(y);
      for (int64_t dim = -y.dim(); dim < y.dim(); ++dim) {
        for (int64_t k = 1; k <= y.size(dim); k += 2) {
          const std::string what =
              Name(dt) + " ties dim " + std::to_string(dim) + " k " + std::to_string(k);
          auto [ev, ei] = y.kthvalue(k, dim, true);
          ExpectSame(ev, std::get<0>(ty.kthvalue(k, dim, true)), what + " values");
          ExpectSame(y.gather(dim, ei), parity::to_torch(ev), what + " index points at the value");
        }
      }
    }
  }
}

TEST(SortParity, Unique) {
  for (auto dt : kAllTypes) {
    if (dt == ember::kFloat16) continue;  // no CPU kernel in 1.13
    for (const auto& shape : std::vector<std::vector<int64_t>>{{}, {0}, {17}, {5, 9}, {3, 4, 6}}) {
      // Ties, no NaN (PyTorch 1.13's CPU unique misorders NaN).
      Tensor base = dt == ember::kBool ? WithTies(shape, dt) : ember::randint(0, 7, shape).to(dt);
      for (const auto& [layout, x] : Layouts(base, true)) {
        TT tx = parity::to_torch(x);
        const std::string what =
            Name(dt) + " " + layout + " " + std::to_string(shape.size()) + "-d";
        auto [ev, ei, ec] = ember::unique(x, true, true, true);
        auto [tv, ti, tc] = torch::_unique2(tx, true, true, true);
        ExpectSame(ev, tv, what + " values");
        ExpectSame(ei, ti, what + " inverse");
        ExpectSame(ec, tc, what + " counts");
        auto [ov, oi, oc] = ember::unique(x);
        ExpectSame(ov, tv, what + " values only");
        EXPECT_FALSE(oi.defined());
        EXPECT_FALSE(oc.defined());
      }
    }
  }
}

TEST(SortParity, SearchSorted) {
  int n = 0;
  for (auto dt : kAllTypes) {
    if (dt == ember::kBool) continue;  // no CPU kernel in 1.13
    for (const auto& sshape : std::vector<std::vector<int64_t>>{{9}, {4, 7}, {2, 3, 8}, {0}}) {
      // A sorted sequence with repeats, and values that hit, miss and repeat it.
      TT ts = std::get<0>(parity::to_torch(ember::randint(-6, 7, sshape).to(dt)).sort(-1));
      if (dt == ember::kUInt8)
        ts = std::get<0>(parity::to_torch(ember::randint(0, 7, sshape).to(dt)).sort(-1));
      Tensor seq = parity::to_ember(ts);
      std::vector<std::vector<int64_t>> vshapes;
      std::vector<int64_t> batched(sshape.begin(), sshape.end() - 1);
      batched.push_back(5);
      vshapes.push_back(batched);
      if (sshape.size() == 1) vshapes.push_back({3, 4});
      if (sshape.size() == 1) vshapes.push_back({});
      for (const auto& vs : vshapes) {
        Tensor vals = ember::randint(dt == ember::kUInt8 ? 0 : -8, 9, vs).to(dt);
        for (const auto& [layout, v] : Layouts(vals, true)) {
          for (bool right : {false, true}) {
            for (bool out_int32 : {false, true}) {
              const std::string what = Name(dt) + " seq " + std::to_string(sshape.size()) + "-d " +
                                       layout + (right ? " right" : " left") +
                                       (out_int32 ? " int32" : "");
              ExpectSame(ember::searchsorted(seq, v, out_int32, right),
                         torch::searchsorted(ts, parity::to_torch(v), out_int32, right), what);
              ++n;
            }
          }
        }
      }
      // A non-contiguous sequence.
      if (sshape.size() == 2) {
        Tensor seq_t = seq.t().contiguous().t();
        Tensor v = ember::randint(0, 5, {sshape[0], 3}).to(dt);
        ExpectSame(ember::searchsorted(seq_t, v), torch::searchsorted(ts, parity::to_torch(v)),
                   Name(dt) + " transposed sequence");
      }
    }
  }
  // Mixed dtypes and NaN.
  Tensor fseq = ember::tensor({1.0, 2.0, 2.5, 4.0});
  Tensor ivals = ember::tensor(std::vector<int64_t>{2, 3, 0, 9});
  ExpectSame(ember::searchsorted(fseq, ivals),
             torch::searchsorted(parity::to_torch(fseq), parity::to_torch(ivals)),
             "float sequence, int values");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor nseq = ember::tensor({1.0, 2.0, nan});
  Tensor nvals = ember::tensor({nan, 3.0, 1.0, 2.0});
  for (bool right : {false, true}) {
    ExpectSame(ember::searchsorted(nseq, nvals, false, right),
               torch::searchsorted(parity::to_torch(nseq), parity::to_torch(nvals), false, right),
               "nan");
  }
  EXPECT_GT(n, 200);
}

}  // namespace sort_parity
