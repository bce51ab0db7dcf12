// Indexing ops against libtorch 1.13: index_select, gather, scatter/scatter_add/
// scatter_reduce, index_add/copy/fill, the masked ops, nonzero, bincount, and advanced
// indexing (index / index_put_), on the same random inputs, for every dtype, several
// shapes, negative dims and non-contiguous or expanded inputs.

#include <ember/ember.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "parity/torch_bridge.h"

// Named per file: the parity files are compiled in unity batches (Note [Build time]).
namespace index_parity {

using ember::Tensor;
using TT = torch::Tensor;

const std::vector<ember::DType> kAllTypes = {
    ember::kUInt8,   ember::kInt8,     ember::kInt16,   ember::kInt32,   ember::kInt64,
    ember::kFloat16, ember::kBFloat16, ember::kFloat32, ember::kFloat64, ember::kBool};

std::string Name(ember::DType dt) { return std::string(ember::dtype_name(dt)); }

// Random values of a dtype: normal floats, small integers (so sums and products stay in
// range for every width), fair bools.
Tensor Random(ember::IntArrayRef shape, ember::DType dt) {
  if (ember::is_floating_point(dt)) return ember::randn(shape, ember::TensorOptions(dt));
  if (dt == ember::kBool) return ember::empty(shape, ember::TensorOptions(dt)).bernoulli_(0.5);
  if (dt == ember::kUInt8) return ember::randint(0, 6, shape, ember::TensorOptions(dt));
  return ember::randint(-5, 6, shape, ember::TensorOptions(dt));
}

// The same values in different layouts: contiguous, transposed (reversed dims), a stepped
// slice of the last dim, and expanded from size 1 along dim 0.
std::vector<std::pair<std::string, Tensor>> Layouts(const std::vector<int64_t>& shape,
                                                    ember::DType dt) {
  std::vector<std::pair<std::string, Tensor>> out;
  out.emplace_back("contiguous", Random(shape, dt));
  const int64_t nd = static_cast<int64_t>(shape.size());
  if (nd >= 2) {
    std::vector<int64_t> rev(shape.rbegin(), shape.rend()), perm;
    for (int64_t d = nd - 1; d >= 0; --d) perm.push_back(d);
    out.emplace_back("transposed", Random(rev, dt).permute(perm));
  }
  if (nd >= 1) {
    std::vector<int64_t> wide = shape;
    wide.back() *= 2;
    out.emplace_back("stepped", Random(wide, dt).slice(-1, 0, wide.back(), 2));
  }
  if (nd >= 1 && shape[0] > 1) {
    std::vector<int64_t> one = shape;
    one[0] = 1;
    out.emplace_back("expanded", Random(one, dt).expand(shape));
  }
  return out;
}

// Same sizes and dtype; exact for integers and bools, allclose (NaN equal) for floats.
void ExpectMatch(const Tensor& e, const TT& t, const std::string& what) {
  ASSERT_EQ(e.sizes().vec(), t.sizes().vec()) << what;
  ASSERT_EQ(parity::to_torch(e.dtype()), t.scalar_type()) << what;
  TT et = parity::to_torch(e);
  if (t.is_floating_point()) {
    double rtol = 1e-5, atol = 1e-5;
    if (t.scalar_type() == torch::kHalf || t.scalar_type() == torch::kBFloat16) rtol = atol = 1e-2;
    if (t.scalar_type() == torch::kDouble) rtol = atol = 1e-12;
    EXPECT_TRUE(torch::allclose(et.to(torch::kDouble), t.to(torch::kDouble), rtol, atol, true))
        << what << "\nember:\n"
        << et << "\ntorch:\n"
        << t;
  } else {
    EXPECT_TRUE(torch::equal(et, t.contiguous())) << what << "\nember:\n"
                                                  << et << "\ntorch:\n"
                                                  << t;
  }
}

// Indices along `dim` of a tensor shaped `shape` with no repeats inside any slice (the
// first k of a random permutation per slice), so overwriting ops are well defined.
Tensor DistinctIndex(std::vector<int64_t> shape, int64_t dim, int64_t k) {
  TT perm = torch::rand(shape).argsort(dim).narrow(dim, 0, k);
  return parity::to_ember(perm);
}

const std::vector<std::vector<int64_t>> kShapes = {{7}, {4, 6}, {3, 4, 5}};

// ---------------------------------------------------------------------------------------

TEST(IndexParity, IndexSelect) {
  int n = 0;
  for (auto dt : kAllTypes) {
    for (const auto& shape : kShapes) {
      for (const auto& [layout, x] : Layouts(shape, dt)) {
        const int64_t nd = x.dim();
        for (int64_t dim = -nd; dim < nd; ++dim) {
          const int64_t size = x.size(dim);
          Tensor idx = ember::randint(0, size, {9});
          const std::string what = Name(dt) + " " + layout + " dim " + std::to_string(dim);
          TT tx = parity::to_torch(x);
          ExpectMatch(x.index_select(dim, idx), tx.index_select(dim, parity::to_torch(idx)), what);
          Tensor i32 = idx.to(ember::kInt32);
          ExpectMatch(ember::index_select(x, dim, i32), tx.index_select(dim, parity::to_torch(i32)),
                      what + " int32");
          ++n;
        }
      }
    }
  }
  EXPECT_GT(n, 100);
}

TEST(IndexParity, Gather) {
  for (auto dt : kAllTypes) {
    for (const auto& shape : kShapes) {
      for (const auto& [layout, x] : Layouts(shape, dt)) {
        const int64_t nd = x.dim();
        for (int64_t dim = -nd; dim < nd; ++dim) {
          const int64_t d = dim < 0 ? dim + nd : dim;
          std::vector<int64_t> ishape = shape;
          for (int64_t k = 0; k < nd; ++k)
            ishape[k] = k == d ? shape[k] + 2 : std::max<int64_t>(1, shape[k] - 1);
          Tensor idx = ember::randint(0, shape[d], ishape);
          const std::string what = Name(dt) + " " + layout + " dim " + std::to_string(dim);
          ExpectMatch(x.gather(dim, idx), parity::to_torch(x).gather(dim, parity::to_torch(idx)),
                      what);
          // A transposed index.
          if (nd == 2) {
            std::vector<int64_t> rs = {ishape[1], ishape[0]};
            Tensor it = ember::randint(0, shape[d], rs).t();
            ExpectMatch(ember::gather(x, dim, it),
                        parity::to_torch(x).gather(dim, parity::to_torch(it)),
                        what + " transposed index");
          }
        }
      }
    }
  }
}

TEST(IndexParity, ScatterScatterAddAndScatterReduce) {
  const std::vector<std::string> reduces = {"sum", "prod", "mean", "amax", "amin"};
  int n = 0;
  for (auto dt : kAllTypes) {
    for (const auto& shape : kShapes) {
      for (const auto& [layout, self] : Layouts(shape, dt)) {
        const int64_t nd = self.dim();
        for (int64_t dim = -nd; dim < nd; ++dim) {
          const int64_t d = dim < 0 ? dim + nd : dim;
          // Index: smaller than self off `dim`; src: larger than the index everywhere.
          std::vector<int64_t> ishape = shape, sshape = shape;
          for (int64_t k = 0; k < nd; ++k) {
            if (k != d) ishape[k] = std::max<int64_t>(1, shape[k] - 1);
            sshape[k] = ishape[k] + 1;
          }
          ishape[d] = std::max<int64_t>(1, shape[d] - 1);
          sshape[d] = ishape[d] + 1;
          Tensor src = Random(sshape, dt);
          TT ts = parity::to_torch(src), tself = parity::to_torch(self);
          const std::string what = Name(dt) + " " + layout + " dim " + std::to_string(dim);
          // scatter needs distinct indices per slice to be well defined.
          std::vector<int64_t> pshape = ishape;
          pshape[d] = shape[d];
          Tensor uidx = DistinctIndex(pshape, d, ishape[d]);
          TT tu = parity::to_torch(uidx);
          ExpectMatch(self.scatter(dim, uidx, src), tself.scatter(dim, tu, ts), what + " scatter");
          ExpectMatch(self.scatter(dim, uidx, ember::Scalar(1)), tself.scatter(dim, tu, 1),
                      what + " scatter value");
          // Accumulating ops take repeated indices (more of them than the dim's size).
          std::vector<int64_t> dshape = ishape;
          dshape[d] = shape[d] + 1;
          std::vector<int64_t> dsshape = sshape;
          dsshape[d] = dshape[d];
          Tensor didx = ember::randint(0, shape[d], dshape);
          Tensor dsrc = Random(dsshape, dt);
          TT tdi = parity::to_torch(didx), tds = parity::to_torch(dsrc);
          ExpectMatch(self.scatter_add(dim, didx, dsrc), tself.scatter_add(dim, tdi, tds),
                      what + " scatter_add");
          for (const auto& r : reduces) {
            if (r == "mean" && dt == ember::kBool) continue;  // unsupported in both
            for (bool include_self : {true, false}) {
              ExpectMatch(self.scatter_reduce(dim, didx, dsrc, r, include_self),
                          tself.scatter_reduce(dim, tdi, tds, r, include_self),
                          what + " scatter_reduce " + r + (include_self ? "" : " exclude self"));
            }
          }
          ++n;
        }
      }
    }
  }
  EXPECT_GT(n, 50);
}

TEST(IndexParity, InPlaceScatterOnViews) {
  for (auto dt : {ember::kFloat32, ember::kInt64, ember::kFloat16}) {
    Tensor base = Random({6, 8}, dt);
    TT tbase = parity::to_torch(base);
    Tensor idx = DistinctIndex({3, 4}, 0, 2);
    Tensor src = Random({3, 4}, dt);
    base.slice(1, 0, 8, 2).t().scatter_(1, idx.t(), src.t());
    tbase.slice(1, 0, 8, 2).t().scatter_(1, parity::to_torch(idx).t(), parity::to_torch(src).t());
    ExpectMatch(base, tbase, Name(dt) + " scatter_ through a view");
    Tensor didx = ember::randint(0, 6, {5, 4});
    Tensor dsrc = Random({5, 4}, dt);
    base.slice(1, 1, 8, 2).scatter_add_(0, didx, dsrc);
    tbase.slice(1, 1, 8, 2).scatter_add_(0, parity::to_torch(didx), parity::to_torch(dsrc));
    ExpectMatch(base, tbase, Name(dt) + " scatter_add_ through a view");
    base.t().scatter_reduce_(1, didx.t(), dsrc.t(), "amax", false);
    tbase.t().scatter_reduce_(1, parity::to_torch(didx).t(), parity::to_torch(dsrc).t(), "amax",
                              false);
    ExpectMatch(base, tbase, Name(dt) + " scatter_reduce_ through a view");
  }
}

TEST(IndexParity, IndexAddIndexCopyIndexFill) {
  for (auto dt : kAllTypes) {
    for (const auto& shape : kShapes) {
      for (const auto& [layout, self] : Layouts(shape, dt)) {
        const int64_t nd = self.dim();
        for (int64_t dim = -nd; dim < nd; ++dim) {
          const int64_t d = dim < 0 ? dim + nd : dim, size = shape[d];
          const std::string what = Name(dt) + " " + layout + " dim " + std::to_string(dim);
          TT tself = parity::to_torch(self);
          // index_add: repeated indices.
          Tensor idx = ember::randint(0, size, {size + 2});
          std::vector<int64_t> sshape = shape;
          sshape[d] = size + 2;
          Tensor src = Random(sshape, dt);
          TT ti = parity::to_torch(idx), ts = parity::to_torch(src);
          ExpectMatch(self.index_add(dim, idx, src), tself.index_add(dim, ti, ts),
                      what + " index_add");
          if (dt != ember::kBool) {
            const ember::Scalar alpha =
                ember::is_floating_point(dt) ? ember::Scalar(2.5) : ember::Scalar(2);
            const c10::Scalar talpha =
                ember::is_floating_point(dt) ? c10::Scalar(2.5) : c10::Scalar(2);
            ExpectMatch(self.index_add(dim, idx.to(ember::kInt32), src, alpha),
                        tself.index_add(dim, ti.to(torch::kInt), ts, talpha),
                        what + " index_add alpha");
          }
          // index_copy: distinct indices.
          Tensor perm = ember::randperm(size).slice(0, 0, size - 1);
          std::vector<int64_t> cshape = shape;
          cshape[d] = size - 1;
          Tensor csrc = Random(cshape, dt);
          ExpectMatch(self.index_copy(dim, perm, csrc),
                      tself.index_copy(dim, parity::to_torch(perm), parity::to_torch(csrc)),
                      what + " index_copy");
          // index_fill: negative indices count from the end.
          Tensor fidx = ember::randint(-size, size, {3});
          ExpectMatch(self.index_fill(dim, fidx, 1),
                      tself.index_fill(dim, parity::to_torch(fidx), 1), what + " index_fill");
        }
      }
    }
  }
}

TEST(IndexParity, MaskedFillSelectScatter) {
  for (auto dt : kAllTypes) {
    for (const auto& shape : kShapes) {
      for (const auto& [layout, self] : Layouts(shape, dt)) {
        const std::string what = Name(dt) + " " + layout;
        TT tself = parity::to_torch(self);
        // Masks of the full shape, of the trailing dims, with size-1 dims, and with an
        // extra leading dim (out-of-place ops broadcast self to it).
        std::vector<std::vector<int64_t>> mshapes = {shape, {shape.back()}};
        std::vector<int64_t> ones_shape = shape;
        ones_shape[0] = 1;
        mshapes.push_back(ones_shape);
        std::vector<int64_t> bigger = shape;
        bigger.insert(bigger.begin(), 2);
        mshapes.push_back(bigger);
        for (const auto& ms : mshapes) {
          Tensor mask = Random(ms, ember::kBool);
          TT tm = parity::to_torch(mask);
          const std::string w = what + " mask " + std::to_string(ms.size()) + "-d";
          ExpectMatch(self.masked_fill(mask, 3), tself.masked_fill(tm, 3), w + " masked_fill");
          ExpectMatch(ember::masked_select(self, mask), tself.masked_select(tm),
                      w + " masked_select");
          const int64_t total = ember::masked_select(self, mask).numel() + 3;
          Tensor source = Random({total}, dt);
          ExpectMatch(self.masked_scatter(mask, source),
                      tself.masked_scatter(tm, parity::to_torch(source)), w + " masked_scatter");
          // A transposed mask.
          if (ms.size() == 2) {
            Tensor mt = Random({ms[1], ms[0]}, ember::kBool).t();
            ExpectMatch(self.masked_fill(mt, 1), tself.masked_fill(parity::to_torch(mt), 1),
                        w + " transposed mask");
          }
        }
        if (layout != "expanded") {
          Tensor inplace = self.clone();
          TT tin = tself.clone();
          Tensor mask = Random({shape.back()}, ember::kBool);
          inplace.masked_fill_(mask, 0);
          tin.masked_fill_(parity::to_torch(mask), 0);
          ExpectMatch(inplace, tin, what + " masked_fill_");
          Tensor source = Random({self.numel()}, dt);
          inplace.masked_scatter_(mask, source);
          tin.masked_scatter_(parity::to_torch(mask), parity::to_torch(source));
          ExpectMatch(inplace, tin, what + " masked_scatter_");
        }
      }
    }
  }
}

TEST(IndexParity, NonzeroAndBincount) {
  for (auto dt : kAllTypes) {
    for (const auto& shape :
         std::vector<std::vector<int64_t>>{{}, {9}, {4, 6}, {3, 4, 5}, {0, 3}}) {
      for (const auto& [layout, x] : Layouts(shape, dt)) {
        ExpectMatch(x.nonzero(), parity::to_torch(x).nonzero(),
                    Name(dt) + " " + layout + " nonzero");
      }
    }
  }
  for (auto dt : {ember::kUInt8, ember::kInt8, ember::kInt16, ember::kInt32, ember::kInt64}) {
    for (int64_t n : {0, 1, 50, 1000}) {
      Tensor x = ember::randint(0, 20, {n}, ember::TensorOptions(dt));
      TT tx = parity::to_torch(x);
      ExpectMatch(x.bincount(), tx.bincount(), Name(dt) + " bincount");
      ExpectMatch(ember::bincount(x, {}, 30), tx.bincount({}, 30),
                  Name(dt) + " bincount minlength");
      for (auto wt : kAllTypes) {
        Tensor w = Random({n}, wt);
        ExpectMatch(x.bincount(w, 5), tx.bincount(parity::to_torch(w), 5),
                    Name(dt) + " bincount weights " + Name(wt));
      }
    }
    Tensor stepped = ember::randint(0, 9, {20}, ember::TensorOptions(dt)).slice(0, 0, 20, 3);
    ExpectMatch(stepped.bincount(), parity::to_torch(stepped).bincount(), Name(dt) + " stepped");
  }
}

// Sizes that split into many parallel chunks, along both the index and the positions.
TEST(IndexParity, LargeInputsSplitIntoChunks) {
  for (auto dt : {ember::kFloat32, ember::kInt64, ember::kBFloat16}) {
    const std::string w = Name(dt);
    Tensor x = Random({2000, 3}, dt);
    TT tx = parity::to_torch(x);
    Tensor idx = ember::randint(0, 2000, {40000});
    TT ti = parity::to_torch(idx);
    ExpectMatch(x.index_select(0, idx), tx.index_select(0, ti), w + " index_select, long index");
    ExpectMatch(x.t().index_select(1, idx), tx.t().index_select(1, ti), w + " index_select, .t()");
    Tensor gidx = ember::randint(0, 2000, {40000, 3});
    TT tg = parity::to_torch(gidx);
    ExpectMatch(x.gather(0, gidx), tx.gather(0, tg), w + " gather");
    Tensor src = Random({40000, 3}, dt);
    TT ts = parity::to_torch(src);
    ExpectMatch(x.scatter_add(0, gidx, src), tx.scatter_add(0, tg, ts), w + " scatter_add");
    ExpectMatch(x.scatter_reduce(0, gidx, src, "amax", false),
                tx.scatter_reduce(0, tg, ts, "amax", false), w + " scatter_reduce amax");
    Tensor asrc = Random({40000, 3}, dt);
    ExpectMatch(x.index_add(0, idx, asrc), tx.index_add(0, ti, parity::to_torch(asrc)),
                w + " index_add");
    ExpectMatch(x.index({idx}), tx.index({ti}), w + " x[idx]");
    Tensor cols = ember::randint(0, 3, {40000});
    ExpectMatch(x.index({idx, cols}), tx.index({ti, parity::to_torch(cols)}), w + " x[idx, cols]");
    Tensor y = x.clone();
    TT ty = tx.clone();
    y.index_put_({idx}, asrc, true);
    ty.index_put_(c10::List<c10::optional<TT>>({c10::optional<TT>(ti)}), parity::to_torch(asrc),
                  true);
    ExpectMatch(y, ty, w + " index_put_ accumulate");
    Tensor big = Random({400, 250}, dt);
    Tensor mask = Random({400, 250}, ember::kBool);
    TT tb = parity::to_torch(big), tm = parity::to_torch(mask);
    ExpectMatch(big.masked_select(mask), tb.masked_select(tm), w + " masked_select");
    Tensor source = Random({100000}, dt);
    ExpectMatch(big.masked_scatter(mask, source), tb.masked_scatter(tm, parity::to_torch(source)),
                w + " masked_scatter");
    ExpectMatch(mask.nonzero(), tm.nonzero(), w + " nonzero");
  }
}

// ---------------------------------------------------------------------------------------
// Advanced indexing

// One index entry: an undefined ember tensor is a full slice; a 0-dim bool is Python's
// x[True]; anything else is a tensor index. For the TensorIndex form (used only with 0-dim
// bools here).
using IndexList = std::vector<Tensor>;

std::vector<torch::indexing::TensorIndex> ToTorchIndices(const IndexList& idx) {
  std::vector<torch::indexing::TensorIndex> out;
  for (const auto& e : idx) {
    if (!e.defined()) {
      out.emplace_back(torch::indexing::Slice());
    } else if (e.dtype() == ember::kBool && e.dim() == 0) {
      out.emplace_back(e.item<bool>());
    } else {
      TT t = parity::to_torch(e);
      // libtorch 1.13 takes int64 (not int32) integer indices.
      out.emplace_back(t.scalar_type() == torch::kInt ? t.to(torch::kLong) : t);
    }
  }
  return out;
}

c10::List<c10::optional<TT>> ToTorchList(const IndexList& idx) {
  c10::List<c10::optional<TT>> out;
  for (const auto& e : idx) {
    if (!e.defined()) {
      out.push_back(c10::nullopt);
    } else {
      TT t = parity::to_torch(e);
      out.push_back(t.scalar_type() == torch::kInt ? t.to(torch::kLong) : t);
    }
  }
  return out;
}

// Index lists for a (3, 4, 5) tensor.
std::vector<std::pair<std::string, IndexList>> IndexCases() {
  Tensor u;
  auto ri = [](int64_t lo, int64_t hi, std::vector<int64_t> s) {
    return ember::randint(lo, hi, s);
  };
  auto mask = [](std::vector<int64_t> s) { return Random(s, ember::kBool); };
  return {
      {"[i0]", {ri(-3, 3, {6})}},
      {"[:, i1]", {u, ri(-4, 4, {2, 3})}},
      {"[:, i1, i2] broadcast", {u, ri(0, 4, {2, 1}), ri(-5, 5, {3})}},
      {"[i0, :, i2] separated", {ri(0, 3, {4}), u, ri(0, 5, {4})}},
      {"[i0, i1, i2]", {ri(0, 3, {2, 2}), ri(0, 4, {2, 2}), ri(0, 5, {1, 2})}},
      {"[0-dim, :, i2]", {ember::tensor(int64_t{2}), u, ri(0, 5, {3})}},
      {"[mask01]", {mask({3, 4})}},
      {"[:, mask12]", {u, mask({4, 5})}},
      {"[mask0, :, i2]", {ember::tensor({true, false, true}), u, ri(0, 5, {2})}},
      {"[i0 int32, i1 int32]", {ri(0, 3, {5}).to(ember::kInt32), ri(0, 4, {5}).to(ember::kInt32)}},
      {"[True]", {ember::tensor(true)}},
      {"[:, False]", {u, ember::tensor(false)}},
      {"[i0, True]", {ri(0, 3, {2}), ember::tensor(true)}},
      {"[empty]", {ember::empty({0}, ember::TensorOptions(ember::kInt64))}},
      {"[:, :, :]", {u, u, u}},
  };
}

TEST(IndexParity, AdvancedIndex) {
  int n = 0;
  for (auto dt : kAllTypes) {
    for (const auto& [layout, x] : Layouts({3, 4, 5}, dt)) {
      TT tx = parity::to_torch(x);
      for (const auto& [name, idx] : IndexCases()) {
        if (name == "[:, :, :]") {
          ExpectMatch(x.index(idx), tx, Name(dt) + " " + layout + " " + name);
          continue;
        }
        // aten::index semantics (every tensor, 0-dim ones too, is an advanced index), except
        // that 0-dim bools follow Python's x[True], which aten::index does not take.
        const bool has_bool_scalar =
            name.find("True") != std::string::npos || name.find("False") != std::string::npos;
        TT expect = has_bool_scalar ? tx.index(ToTorchIndices(idx)) : tx.index(ToTorchList(idx));
        ExpectMatch(x.index(idx), expect, Name(dt) + " " + layout + " " + name);
        ++n;
      }
    }
  }
  EXPECT_GT(n, 500);
}

TEST(IndexParity, IndexPut) {
  int n = 0;
  for (auto dt : kAllTypes) {
    for (const auto& [layout, x0] : Layouts({3, 4, 5}, dt)) {
      if (layout == "expanded") continue;  // not writable
      for (const auto& [name, idx] : IndexCases()) {
        if (name == "[:, :, :]" || (name.find("True") != std::string::npos) ||
            name.find("False") != std::string::npos) {
          continue;  // aten::index_put_ takes no 0-dim bools; x[...] covers those in AdvancedIndex
        }
        const std::vector<int64_t> rshape = x0.index(idx).sizes().vec();
        for (bool accumulate : {false, true}) {
          // Without accumulate, repeated indices make the result undefined in PyTorch:
          // write only the first occurrence's value to every repeat (all values equal).
          Tensor values =
              accumulate ? Random(rshape, dt) : ember::full(rshape, 1, ember::TensorOptions(dt));
          Tensor x = x0.clone();
          TT tx = parity::to_torch(x0);
          x.index_put_(idx, values, accumulate);
          tx.index_put_(ToTorchList(idx), parity::to_torch(values), accumulate);
          ExpectMatch(x, tx,
                      Name(dt) + " " + layout + " " + name + (accumulate ? " accumulate" : ""));
          // Broadcast values: only the trailing dim.
          if (!rshape.empty() && rshape.back() > 0) {
            Tensor row = Random({rshape.back()}, dt);
            Tensor y = x0.clone();
            TT ty = parity::to_torch(x0);
            y.index_put_(idx, row, true);
            ty.index_put_(ToTorchList(idx), parity::to_torch(row), true);
            ExpectMatch(y, ty, Name(dt) + " " + layout + " " + name + " broadcast row");
          }
          ++n;
        }
      }
    }
  }
  // Distinct indices with distinct values, no accumulation.
  for (auto dt : kAllTypes) {
    Tensor x = Random({6, 5}, dt);
    TT tx = parity::to_torch(x);
    Tensor rows = ember::randperm(6).slice(0, 0, 4);
    Tensor vals = Random({4, 5}, dt);
    x.t().index_put_({Tensor(), rows}, vals.t());
    tx.t().index_put_(ToTorchList({Tensor(), rows}), parity::to_torch(vals).t());
    ExpectMatch(x, tx, Name(dt) + " distinct rows through a transposed view");
  }
  EXPECT_GT(n, 100);
}

}  // namespace index_parity
