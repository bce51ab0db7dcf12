// Gradients of the indexing family against libtorch 1.13: the same random inputs and
// output gradient through index_select, gather, the scatter family, index_add/copy/fill,
// the masked ops, advanced indexing and sort/topk/kthvalue (in and out of place), with
// duplicate indices, negative dims, broadcast values and non-contiguous inputs.

#include <ember/ember.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <tuple>
#include <vector>

#include "ember/autograd/functions_index.h"
#include "parity/grad_parity.h"

// Named per file: the parity files are compiled in unity batches (Note [Build time]).
namespace autograd_index_parity {

using ember::Tensor;
using TT = torch::Tensor;
using EV = std::vector<Tensor>;
using TV = std::vector<TT>;
using parity::check_grad_parity;

Tensor R(ember::IntArrayRef shape, ember::DType dt = ember::kFloat64) {
  return ember::randn(shape, ember::TensorOptions(dt));
}
// The same shape, transposed in memory (last two dims).
Tensor RT(std::vector<int64_t> shape, ember::DType dt = ember::kFloat64) {
  std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  return R(shape, dt).transpose(-1, -2);
}
// The same shape as every other element of a twice as long last dim.
Tensor RS(std::vector<int64_t> shape, ember::DType dt = ember::kFloat64) {
  shape.back() *= 2;
  return R(shape, dt).slice(-1, 0, shape.back(), 2);
}
// Random int64 indices in [0, high) (duplicates likely).
Tensor I(ember::IntArrayRef shape, int64_t high) {
  return ember::randint(0, high, shape, ember::TensorOptions(ember::kInt64));
}
Tensor L(std::initializer_list<int64_t> v) { return ember::tensor(std::vector<int64_t>(v)).to(ember::kInt64); }
// A permutation of [0, n) in each column (rows k of a random permutation along dim 0).
Tensor Perm(int64_t rows, int64_t n, int64_t cols) {
  std::vector<Tensor> c;
  for (int64_t j = 0; j < cols; ++j) c.push_back(std::get<1>(ember::rand({n}).sort()).slice(0, 0, rows));
  return ember::stack(c, 1);
}
Tensor Mask(ember::IntArrayRef shape) { return ember::rand(shape).gt(0.5); }

std::vector<std::pair<std::string, Tensor>> Inputs(const std::vector<int64_t>& shape) {
  return {{"contiguous", R(shape)}, {"transposed", RT(shape)}, {"stepped", RS(shape)}};
}

torch::List<c10::optional<TT>> TorchIndices(const TV& v, size_t first, const std::vector<bool>& slice) {
  torch::List<c10::optional<TT>> out;
  size_t k = first;
  for (bool s : slice) {
    if (s) {
      out.push_back(c10::nullopt);
    } else {
      out.push_back(v[k++]);
    }
  }
  return out;
}

TEST(AutogradIndexParity, IndexSelectAndGather) {
  for (const auto& [layout, x] : Inputs({5, 4})) {
    const Tensor ix = L({4, 0, 4, 2, 4});
    check_grad_parity(
        "index_select dim 0 " + layout, [](const EV& v) { return v[0].index_select(0, v[1]); },
        [](const TV& v) { return v[0].index_select(0, v[1]); }, {x, ix});
    check_grad_parity(
        "index_select dim -1 " + layout, [](const EV& v) { return ember::index_select(v[0], -1, v[1]); },
        [](const TV& v) { return v[0].index_select(-1, v[1]); }, {x, L({3, 3, 1})});
    check_grad_parity(
        "gather dim 0 " + layout, [](const EV& v) { return v[0].gather(0, v[1]); },
        [](const TV& v) { return v[0].gather(0, v[1]); }, {x, I({3, 4}, 5)});
    check_grad_parity(
        "gather dim -1 " + layout, [](const EV& v) { return ember::gather(v[0], -1, v[1]); },
        [](const TV& v) { return v[0].gather(-1, v[1]); }, {x, I({4, 6}, 4)});
  }
  // float32 with an int32 index.
  check_grad_parity(
      "index_select float32", [](const EV& v) { return v[0].index_select(1, v[1]); },
      [](const TV& v) { return v[0].index_select(1, v[1]); },
      {R({3, 4}, ember::kFloat32), L({1, 1, 3}).to(ember::kInt32)},
      1e-5, 1e-6);
}

TEST(AutogradIndexParity, ScatterFamily) {
  for (const auto& [layout, x] : Inputs({5, 4})) {
    const Tensor perm = Perm(3, 5, 4);
    const Tensor dup = I({3, 4}, 5);
    const Tensor src = RT({3, 4});
    check_grad_parity(
        "scatter " + layout, [](const EV& v) { return v[0].scatter(0, v[1], v[2]); },
        [](const TV& v) { return v[0].scatter(0, v[1], v[2]); }, {x, perm, src});
    check_grad_parity(
        "scatter value " + layout, [](const EV& v) { return v[0].scatter(-2, v[1], 2.5); },
        [](const TV& v) { return v[0].scatter(-2, v[1], 2.5); }, {x, dup});
    check_grad_parity(
        "scatter_ " + layout,
        [](const EV& v) {
          Tensor y = v[0].clone();
          y.scatter_(0, v[1], v[2]);
          return y;
        },
        [](const TV& v) { return v[0].clone().scatter_(0, v[1], v[2]); }, {x, perm, src});
    check_grad_parity(
        "scatter_ value " + layout,
        [](const EV& v) {
          Tensor y = v[0].clone();
          y.scatter_(0, v[1], -1.0);
          return y;
        },
        [](const TV& v) { return v[0].clone().scatter_(0, v[1], -1.0); }, {x, dup});
    check_grad_parity(
        "scatter_add " + layout, [](const EV& v) { return ember::scatter_add(v[0], -2, v[1], v[2]); },
        [](const TV& v) { return v[0].scatter_add(-2, v[1], v[2]); }, {x, dup, src});
    check_grad_parity(
        "scatter_add_ " + layout,
        [](const EV& v) {
          Tensor y = v[0].clone();
          y.scatter_add_(1, v[1], v[2]);
          return y;
        },
        [](const TV& v) { return v[0].clone().scatter_add_(1, v[1], v[2]); }, {x, I({5, 6}, 4), R({5, 6})});
  }
}

TEST(AutogradIndexParity, ScatterReduce) {
  for (const char* reduce : {"sum", "mean", "amax", "amin", "prod"}) {
    for (bool include_self : {true, false}) {
      const std::string what = std::string(reduce) + (include_self ? " include_self" : " exclude_self");
      for (const auto& [layout, x] : Inputs({4, 5})) {
        const Tensor ix = I({6, 5}, 4);
        const Tensor src = RS({6, 5});
        check_grad_parity(
            "scatter_reduce " + what + " " + layout,
            [&](const EV& v) { return v[0].scatter_reduce(0, v[1], v[2], reduce, include_self); },
            [&](const TV& v) { return v[0].scatter_reduce(0, v[1], v[2], reduce, include_self); }, {x, ix, src});
        check_grad_parity(
            "scatter_reduce_ " + what + " " + layout,
            [&](const EV& v) {
              Tensor y = v[0].clone();
              y.scatter_reduce_(-1, v[1], v[2], reduce, include_self);
              return y;
            },
            [&](const TV& v) { return v[0].clone().scatter_reduce_(-1, v[1], v[2], reduce, include_self); },
            {x, I({4, 7}, 5), R({4, 7})});
      }
    }
  }
  // prod with zeros in self and src (one zero per output, and two).
  for (bool include_self : {true, false}) {
    Tensor x = ember::tensor({2.0, 0.0, 3.0, 4.0}, ember::kFloat64);
    Tensor s = ember::tensor({0.0, 5.0, 7.0, 0.0, 0.0, 1.5}, ember::kFloat64);
    check_grad_parity(
        std::string("scatter_reduce prod zeros") + (include_self ? " include_self" : ""),
        [&](const EV& v) { return v[0].scatter_reduce(0, v[1], v[2], "prod", include_self); },
        [&](const TV& v) { return v[0].scatter_reduce(0, v[1], v[2], "prod", include_self); },
        {x, L({0, 0, 1, 2, 2, 3}), s});
  }
  // amax / amin with ties.
  for (const char* reduce : {"amax", "amin"}) {
    check_grad_parity(
        std::string(reduce) + " ties", [&](const EV& v) { return v[0].scatter_reduce(0, v[1], v[2], reduce); },
        [&](const TV& v) { return v[0].scatter_reduce(0, v[1], v[2], reduce); },
        {ember::tensor({1.0, 4.0, -2.0}, ember::kFloat64), L({0, 0, 1, 2, 2}),
         ember::tensor({4.0, 4.0, 4.0, -2.0, -3.0}, ember::kFloat64)});
  }
}

TEST(AutogradIndexParity, IndexAddCopyFill) {
  for (const auto& [layout, x] : Inputs({5, 4})) {
    const Tensor dup = L({4, 0, 4});
    const Tensor uniq = L({4, 0, 2});
    const Tensor src = RS({3, 4});
    check_grad_parity(
        "index_add " + layout, [](const EV& v) { return v[0].index_add(0, v[1], v[2]); },
        [](const TV& v) { return v[0].index_add(0, v[1], v[2]); }, {x, dup, src});
    check_grad_parity(
        "index_add alpha " + layout, [](const EV& v) { return v[0].index_add(-2, v[1], v[2], -2.5); },
        [](const TV& v) { return v[0].index_add(-2, v[1], v[2], -2.5); }, {x, dup, src});
    check_grad_parity(
        "index_add_ " + layout,
        [](const EV& v) {
          Tensor y = v[0].clone();
          y.index_add_(1, v[1], v[2], 3);
          return y;
        },
        [](const TV& v) { return v[0].clone().index_add_(1, v[1], v[2], 3); }, {x, L({3, 3, 0, 1, 3}), R({5, 5})});
    check_grad_parity(
        "index_copy " + layout, [](const EV& v) { return v[0].index_copy(0, v[1], v[2]); },
        [](const TV& v) { return v[0].index_copy(0, v[1], v[2]); }, {x, uniq, src});
    check_grad_parity(
        "index_copy_ " + layout,
        [](const EV& v) {
          Tensor y = v[0].clone();
          y.index_copy_(-1, v[1], v[2]);
          return y;
        },
        [](const TV& v) { return v[0].clone().index_copy_(-1, v[1], v[2]); }, {x, L({3, 1}), R({5, 2})});
    check_grad_parity(
        "index_fill " + layout, [](const EV& v) { return v[0].index_fill(-1, v[1], 1.5); },
        [](const TV& v) { return v[0].index_fill(-1, v[1], 1.5); }, {x, L({3, 1, 3})});
    check_grad_parity(
        "index_fill_ " + layout,
        [](const EV& v) {
          Tensor y = v[0].clone();
          y.index_fill_(0, v[1], -1);
          return y;
        },
        [](const TV& v) { return v[0].clone().index_fill_(0, v[1], -1); }, {x, dup});
    check_grad_parity(
        "index_fill tensor value " + layout, [](const EV& v) { return ember::index_fill(v[0], 0, v[1], v[2]); },
        [](const TV& v) { return v[0].index_fill(0, v[1], v[2]); }, {x, dup, R({})});
    check_grad_parity(
        "index_fill_ tensor value " + layout,
        [](const EV& v) {
          Tensor y = v[0].clone();
          ember::index_fill_(y, 1, v[1], v[2]);
          return y;
        },
        [](const TV& v) { return v[0].clone().index_fill_(1, v[1], v[2]); }, {x, L({2, 2, 0}), R({})});
  }
}

TEST(AutogradIndexParity, MaskedOps) {
  for (const auto& [layout, x] : Inputs({3, 4})) {
    const Tensor mask = Mask({3, 4});
    check_grad_parity(
        "masked_fill " + layout, [](const EV& v) { return v[0].masked_fill(v[1], 2.0); },
        [](const TV& v) { return v[0].masked_fill(v[1], 2.0); }, {x, mask});
    check_grad_parity(
        "masked_fill tensor value " + layout, [](const EV& v) { return ember::masked_fill(v[0], v[1], v[2]); },
        [](const TV& v) { return v[0].masked_fill(v[1], v[2]); }, {x, mask, R({})});
    check_grad_parity(
        "masked_fill_ " + layout,
        [](const EV& v) {
          Tensor y = v[0].clone();
          y.masked_fill_(v[1], -1.0);
          return y;
        },
        [](const TV& v) { return v[0].clone().masked_fill_(v[1], -1.0); }, {x, Mask({4})});
    check_grad_parity(
        "masked_fill_ tensor value " + layout,
        [](const EV& v) {
          Tensor y = v[0].clone();
          ember::masked_fill_(y, v[1], v[2]);
          return y;
        },
        [](const TV& v) { return v[0].clone().masked_fill_(v[1], v[2]); }, {x, mask, R({})});
    check_grad_parity(
        "masked_select " + layout, [](const EV& v) { return v[0].masked_select(v[1]); },
        [](const TV& v) { return v[0].masked_select(v[1]); }, {x, mask});
    check_grad_parity(
        "masked_scatter " + layout, [](const EV& v) { return v[0].masked_scatter(v[1], v[2]); },
        [](const TV& v) { return v[0].masked_scatter(v[1], v[2]); }, {x, mask, RT({3, 4})});
    check_grad_parity(
        "masked_scatter_ " + layout,
        [](const EV& v) {
          Tensor y = v[0].clone();
          y.masked_scatter_(v[1], v[2]);
          return y;
        },
        [](const TV& v) { return v[0].clone().masked_scatter_(v[1], v[2]); }, {x, mask, R({15})});
  }
  // Broadcasting: self smaller than the mask (out of place), mask smaller than self.
  check_grad_parity(
      "masked_fill broadcast self", [](const EV& v) { return ember::masked_fill(v[0], v[1], v[2]); },
      [](const TV& v) { return v[0].masked_fill(v[1], v[2]); }, {R({4}), Mask({3, 4}), R({})});
  check_grad_parity(
      "masked_select broadcast", [](const EV& v) { return ember::masked_select(v[0], v[1]); },
      [](const TV& v) { return v[0].masked_select(v[1]); }, {R({3, 1}), Mask({4})});
  check_grad_parity(
      "masked_scatter broadcast", [](const EV& v) { return v[0].masked_scatter(v[1], v[2]); },
      [](const TV& v) { return v[0].masked_scatter(v[1], v[2]); }, {R({1, 4}), Mask({3, 4}), R({3, 4})});
}

TEST(AutogradIndexParity, AdvancedIndexing) {
  using torch::indexing::Slice;
  for (const auto& [layout, x] : Inputs({4, 3, 5})) {
    check_grad_parity(
        "index int " + layout, [](const EV& v) { return v[0].index({v[1]}); },
        [](const TV& v) { return v[0].index({v[1]}); }, {x, L({3, 0, 3, -1})});
    check_grad_parity(
        "index slice, int " + layout, [](const EV& v) { return v[0].index({Tensor(), v[1]}); },
        [](const TV& v) { return v[0].index({Slice(), v[1]}); }, {x, I({2, 3}, 3)});
    check_grad_parity(
        "index non-adjacent " + layout, [](const EV& v) { return v[0].index({v[1], Tensor(), v[2]}); },
        [](const TV& v) { return v[0].index({v[1], Slice(), v[2]}); }, {x, I({2, 1}, 4), I({3}, 5)});
    check_grad_parity(
        "index bool " + layout, [](const EV& v) { return v[0].index({v[1]}); },
        [](const TV& v) { return v[0].index({v[1]}); }, {x, Mask({4, 3})});
    check_grad_parity(
        "index slice, bool " + layout, [](const EV& v) { return v[0].index({Tensor(), Tensor(), v[1]}); },
        [](const TV& v) { return v[0].index({Slice(), Slice(), v[1]}); }, {x, Mask({5})});
  }
  for (bool acc : {false, true}) {
    const std::string a = acc ? " accumulate" : "";
    for (const auto& [layout, x] : Inputs({4, 5})) {
      const Tensor ix = acc ? L({3, 0, 3, -1}) : L({3, 0, 2, 1});
      for (const Tensor& values : {R({4, 5}), RT({4, 5}), R({5}), R({4, 1}), R({})}) {
        check_grad_parity(
            "index_put_" + a + " " + layout + " values " + std::to_string(values.dim()) + "-d",
            [acc](const EV& v) {
              Tensor y = v[0].clone();
              y.index_put_({v[1]}, v[2], acc);
              return y;
            },
            [acc](const TV& v) { return v[0].clone().index_put_(TorchIndices(v, 1, {false}), v[2], acc); },
            {x, ix, values});
      }
      check_grad_parity(
          "index_put_ slice, int" + a + " " + layout,
          [acc](const EV& v) {
            Tensor y = v[0].clone();
            y.index_put_({Tensor(), v[1]}, v[2], acc);
            return y;
          },
          [acc](const TV& v) { return v[0].clone().index_put_(TorchIndices(v, 1, {true, false}), v[2], acc); },
          {x, acc ? L({4, 4, 0}) : L({4, 1, 0}), R({4, 3})});
      check_grad_parity(
          "index_put_ bool" + a + " " + layout,
          [acc](const EV& v) {
            Tensor y = v[0].clone();
            y.index_put_({v[1]}, v[2], acc);
            return y;
          },
          [acc](const TV& v) { return v[0].clone().index_put_(TorchIndices(v, 1, {false}), v[2], acc); },
          {x, Mask({4, 5}), R({})});
    }
  }
}

TEST(AutogradIndexParity, SortTopkKthvalue) {
  for (const auto& [layout, x] : Inputs({4, 6})) {
    for (int64_t dim : {0, -1}) {
      const std::string d = " dim " + std::to_string(dim) + " " + layout;
      for (bool desc : {false, true}) {
        check_grad_parity(
            "sort" + d, [&](const EV& v) { return std::get<0>(v[0].sort(dim, desc)); },
            [&](const TV& v) { return std::get<0>(v[0].sort(dim, desc)); }, {x});
        check_grad_parity(
            "topk" + d, [&](const EV& v) { return std::get<0>(ember::topk(v[0], 3, dim, desc)); },
            [&](const TV& v) { return std::get<0>(v[0].topk(3, dim, desc)); }, {x});
      }
      for (bool keepdim : {false, true}) {
        check_grad_parity(
            "kthvalue" + d, [&](const EV& v) { return std::get<0>(v[0].kthvalue(2, dim, keepdim)); },
            [&](const TV& v) { return std::get<0>(v[0].kthvalue(2, dim, keepdim)); }, {x});
      }
    }
  }
}

}  // namespace autograd_index_parity
