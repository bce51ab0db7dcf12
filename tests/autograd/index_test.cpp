// Backward formulas of the indexing family: gradcheck and gradgradcheck for index_select,
// gather, the scatter family, index_add/copy/fill, the masked ops, advanced indexing
// (index / index_put_) and sort/topk/kthvalue, in and out of place, on contiguous and
// non-contiguous inputs with negative dims and duplicate indices; node names; exact
// accumulation of duplicate indices; and the ops that must not record a graph.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "autograd/grad_util.h"
#include "ember/autograd/functions_index.h"

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace autograd_index_test {

using testing::check_grads;
using V = std::vector<Tensor>;
using D = std::vector<double>;

Tensor R(IntArrayRef shape) { return randn(shape, TensorOptions(kFloat64)); }
// Values of `shape` laid out transposed (last two dims swapped in memory).
Tensor RT(std::vector<int64_t> shape) {
  std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  return R(shape).transpose(-1, -2);
}
// Every other element of the last dim (a stepped, non-contiguous view).
Tensor RS(std::vector<int64_t> shape) {
  const int64_t last = shape.back();
  shape.back() = 2 * last;
  return R(shape).slice(-1, 0, 2 * last, 2);
}
Tensor L(std::initializer_list<int64_t> v) { return tensor(std::vector<int64_t>(v)).to(kInt64); }
Tensor L2(std::vector<std::vector<int64_t>> rows) {
  std::vector<Tensor> ts;
  for (auto& r : rows) ts.push_back(tensor(r).to(kInt64));
  return stack(ts, 0);
}
Tensor B(std::vector<std::vector<int>> rows) {
  std::vector<Tensor> ts;
  for (auto& r : rows) {
    std::vector<int64_t> v(r.begin(), r.end());
    ts.push_back(tensor(v).to(kInt64));
  }
  return stack(ts, 0).ne(0);
}
D Vals(const Tensor& t) { return t.to_vector<double>(); }
std::string Name(const Tensor& t) { return t.grad_fn() ? t.grad_fn()->name() : "<none>"; }

// ---------------------------------------------------------------------------------------
// index_select / gather

TEST(AutogradIndex, IndexSelect) {
  const Tensor ix = L({2, 0, 2, 1, 2});  // duplicates
  for (const Tensor& x : {R({4, 3}), RT({4, 3}), RS({4, 3})}) {
    EXPECT_EQ(check_grads([&](const V& v) { return v[0].index_select(0, ix); }, {x}), "");
    EXPECT_EQ(check_grads([&](const V& v) { return index_select(v[0], -1, ix); }, {x.t()}), "");
  }
  const Tensor ix32 = L({1, 1, 0}).to(kInt32);
  EXPECT_EQ(check_grads([&](const V& v) { return v[0].index_select(-2, ix32); }, {R({2, 2, 3})}), "");
  // Scalar index, 0-d self.
  EXPECT_EQ(check_grads([&](const V& v) { return v[0].index_select(1, scalar_tensor(2, kInt64)); }, {R({2, 3})}), "");
  EXPECT_EQ(check_grads([&](const V& v) { return v[0].index_select(0, L({0})); }, {R({})}), "");
}

TEST(AutogradIndex, IndexSelectDuplicatesAccumulate) {
  Tensor x = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  Tensor y = x.index_select(0, L({0, 2, 0, 0}));
  EXPECT_EQ(Name(y), "IndexSelectBackward0");
  y.backward(tensor({1.0, 10.0, 100.0, 1000.0}, kFloat64));
  EXPECT_EQ(Vals(x.grad()), (D{1101, 0, 10}));
}

TEST(AutogradIndex, Gather) {
  const Tensor ix = L2({{0, 3, 3}, {3, 3, 1}});  // duplicates along dim 0
  for (const Tensor& x : {R({4, 3}), RT({4, 3}), RS({4, 3})}) {
    EXPECT_EQ(check_grads([&](const V& v) { return v[0].gather(0, ix); }, {x}), "");
    EXPECT_EQ(check_grads([&](const V& v) { return gather(v[0], -1, ix.clamp(0, 2)); }, {x}), "");
  }
}

// ---------------------------------------------------------------------------------------
// scatter family

TEST(AutogradIndex, Scatter) {
  // A permutation per column (scatter with duplicates picks one writer: not smooth).
  const Tensor ix = L2({{2, 0, 1}, {0, 1, 3}});
  for (const Tensor& x : {R({4, 3}), RT({4, 3})}) {
    for (const Tensor& src : {R({2, 3}), RS({2, 3}), R({3, 4})}) {
      EXPECT_EQ(check_grads([&](const V& v) { return v[0].scatter(0, ix, v[1]); }, {x, src}), "");
      EXPECT_EQ(check_grads([&](const V& v) { return scatter(v[0], -2, ix, v[1]); }, {x, src}), "");
      EXPECT_EQ(check_grads(
                    [&](const V& v) {
                      Tensor y = v[0].clone();
                      y.scatter_(0, ix, v[1]);
                      return y;
                    },
                    {x, src}),
                "");
    }
    EXPECT_EQ(check_grads([&](const V& v) { return v[0].scatter(0, ix, 2.5); }, {x}), "");
    EXPECT_EQ(check_grads(
                  [&](const V& v) {
                    Tensor y = v[0] * 1;
                    y.scatter_(-2, ix, -1.0);
                    return y;
                  },
                  {x}),
              "");
  }
  // In place on a non-contiguous view of a non-leaf.
  EXPECT_EQ(check_grads(
                [&](const V& v) {
                  Tensor base = v[0].clone();
                  base.t().scatter_(0, ix, v[1]);
                  return base;
                },
                {R({3, 4}), R({2, 3})}),
            "");
}

TEST(AutogradIndex, ScatterAdd) {
  const Tensor ix = L2({{2, 0, 2}, {2, 2, 3}, {0, 0, 0}});
  for (const Tensor& x : {R({4, 3}), RT({4, 3})}) {
    for (const Tensor& src : {R({3, 3}), RT({3, 3}), R({4, 5})}) {
      EXPECT_EQ(check_grads([&](const V& v) { return v[0].scatter_add(0, ix, v[1]); }, {x, src}), "");
      EXPECT_EQ(check_grads(
                    [&](const V& v) {
                      Tensor y = v[0].clone();
                      y.scatter_add_(-2, ix, v[1]);
                      return y;
                    },
                    {x, src}),
                "");
    }
  }
  // Duplicates add up exactly.
  Tensor x = zeros({3}, TensorOptions(kFloat64)).requires_grad_();
  Tensor s = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  Tensor y = x.scatter_add(0, L({1, 1, 1}), s);
  EXPECT_EQ(Vals(y), (D{0, 6, 0}));
  y.backward(tensor({1.0, 5.0, 7.0}, kFloat64));
  EXPECT_EQ(Vals(s.grad()), (D{5, 5, 5}));
  EXPECT_EQ(Vals(x.grad()), (D{1, 5, 7}));
}

TEST(AutogradIndex, ScatterReduce) {
  const Tensor ix = L2({{2, 0, 2}, {2, 2, 3}, {0, 0, 0}});
  for (const char* reduce : {"sum", "mean", "amax", "amin", "prod"}) {
    for (bool include_self : {true, false}) {
      SCOPED_TRACE(std::string(reduce) + (include_self ? " include_self" : " exclude_self"));
      for (const Tensor& x : {R({4, 3}), RT({4, 3})}) {
        const Tensor src = RS({3, 3});
        EXPECT_EQ(check_grads([&](const V& v) { return v[0].scatter_reduce(0, ix, v[1], reduce, include_self); },
                              {x, src}),
                  "");
        EXPECT_EQ(check_grads(
                      [&](const V& v) {
                        Tensor y = v[0].clone();
                        y.scatter_reduce_(-2, ix, v[1], reduce, include_self);
                        return y;
                      },
                      {x, src}),
                  "");
      }
      // src larger than index: the unread part gets a zero gradient.
      EXPECT_EQ(check_grads([&](const V& v) { return v[0].scatter_reduce(1, ix.clamp(0, 2), v[1], reduce,
                                                                       include_self); },
                            {R({3, 3}), R({4, 4})}),
                "");
    }
  }
}

TEST(AutogradIndex, ScatterReduceProdWithZeros) {
  // One zero among the factors of an output: its gradient is the product of the others.
  Tensor x = tensor({2.0, 3.0}, kFloat64).requires_grad_();
  Tensor s = tensor({0.0, 5.0, 7.0}, kFloat64).requires_grad_();
  Tensor y = x.scatter_reduce(0, L({0, 0, 1}), s, "prod");
  EXPECT_EQ(Vals(y), (D{0, 21}));
  y.sum().backward();
  EXPECT_EQ(Vals(s.grad()), (D{10, 0, 3}));
  EXPECT_EQ(Vals(x.grad()), (D{0, 7}));
  // A zero in self.
  Tensor x2 = tensor({0.0, 3.0}, kFloat64).requires_grad_();
  Tensor s2 = tensor({4.0, 5.0}, kFloat64).requires_grad_();
  x2.scatter_reduce(0, L({0, 0}), s2, "prod").sum().backward();
  EXPECT_EQ(Vals(x2.grad()), (D{20, 1}));
  EXPECT_EQ(Vals(s2.grad()), (D{0, 0}));
}

TEST(AutogradIndex, ScatterReduceTiesShareTheGradient) {
  Tensor x = tensor({1.0, 9.0}, kFloat64).requires_grad_();
  Tensor s = tensor({4.0, 4.0, 2.0}, kFloat64).requires_grad_();
  Tensor y = x.scatter_reduce(0, L({0, 0, 0}), s, "amax");
  EXPECT_EQ(Vals(y), (D{4, 9}));
  y.backward(tensor({1.0, 1.0}, kFloat64));
  EXPECT_EQ(Vals(s.grad()), (D{0.5, 0.5, 0}));
  EXPECT_EQ(Vals(x.grad()), (D{0, 1}));
}

// ---------------------------------------------------------------------------------------
// index_add / index_copy / index_fill

TEST(AutogradIndex, IndexAdd) {
  const Tensor ix = L({3, 0, 3});
  for (const Tensor& x : {R({4, 3}), RT({4, 3})}) {
    for (const Tensor& src : {R({3, 3}), RS({3, 3})}) {
      EXPECT_EQ(check_grads([&](const V& v) { return v[0].index_add(0, ix, v[1]); }, {x, src}), "");
      EXPECT_EQ(check_grads([&](const V& v) { return v[0].index_add(-2, ix, v[1], 2.5); }, {x, src}), "");
      EXPECT_EQ(check_grads(
                    [&](const V& v) {
                      Tensor y = v[0].clone();
                      y.index_add_(0, ix, v[1], -0.5);
                      return y;
                    },
                    {x, src}),
                "");
    }
    EXPECT_EQ(check_grads([&](const V& v) { return v[0].index_add(-1, ix.clamp(0, 2), v[1]); }, {x, R({4, 3})}), "");
  }
  // index_add_ on a transposed view of a non-leaf.
  EXPECT_EQ(check_grads(
                [&](const V& v) {
                  Tensor base = v[0].clone();
                  base.t().index_add_(0, ix, v[1], 2);
                  return base;
                },
                {R({3, 4}), R({3, 3})}),
            "");
}

TEST(AutogradIndex, IndexCopyAndFill) {
  const Tensor ix = L({3, 0, 1});
  for (const Tensor& x : {R({4, 3}), RT({4, 3})}) {
    const Tensor src = RS({3, 3});
    EXPECT_EQ(check_grads([&](const V& v) { return v[0].index_copy(0, ix, v[1]); }, {x, src}), "");
    EXPECT_EQ(check_grads(
                  [&](const V& v) {
                    Tensor y = v[0].clone();
                    y.index_copy_(-2, ix, v[1]);
                    return y;
                  },
                  {x, src}),
              "");
    const Tensor fix = L({2, -1, 2});  // duplicates and a negative index
    EXPECT_EQ(check_grads([&](const V& v) { return v[0].index_fill(-1, fix, 1.5); }, {x}), "");
    EXPECT_EQ(check_grads(
                  [&](const V& v) {
                    Tensor y = v[0].clone();
                    y.index_fill_(0, fix, 1.5);
                    return y;
                  },
                  {x}),
              "");
    EXPECT_EQ(check_grads([&](const V& v) { return index_fill(v[0], 0, fix, v[1]); }, {x, R({})}), "");
    EXPECT_EQ(check_grads(
                  [&](const V& v) {
                    Tensor y = v[0].clone();
                    index_fill_(y, 1, fix.clamp(0, 2), v[1]);
                    return y;
                  },
                  {x, R({})}),
              "");
  }
  // The value tensor gets each filled slice once, however often it is named.
  Tensor x = R({4, 2}).requires_grad_();
  Tensor value = scalar_tensor(3.0, kFloat64).requires_grad_();
  Tensor y = index_fill(x, 0, L({1, 1, -1, 3}), value);
  EXPECT_EQ(Name(y), "IndexFillBackward1");
  y.backward(ones({4, 2}, TensorOptions(kFloat64)));
  EXPECT_EQ(value.grad().item<double>(), 4.0);
  EXPECT_EQ(Vals(x.grad()), (D{1, 1, 0, 0, 1, 1, 0, 0}));
}

// ---------------------------------------------------------------------------------------
// masked ops

TEST(AutogradIndex, MaskedFill) {
  const Tensor mask = B({{1, 0, 1}, {0, 0, 1}});
  for (const Tensor& x : {R({2, 3}), RT({2, 3}), RS({2, 3})}) {
    EXPECT_EQ(check_grads([&](const V& v) { return v[0].masked_fill(mask, 2.0); }, {x}), "");
    EXPECT_EQ(check_grads([&](const V& v) { return masked_fill(v[0], mask, v[1]); }, {x, R({})}), "");
    EXPECT_EQ(check_grads(
                  [&](const V& v) {
                    Tensor y = v[0].clone();
                    y.masked_fill_(mask, -1.0);
                    return y;
                  },
                  {x}),
              "");
    EXPECT_EQ(check_grads(
                  [&](const V& v) {
                    Tensor y = v[0].clone();
                    masked_fill_(y, mask.select(0, 1), v[1]);  // broadcast mask
                    return y;
                  },
                  {x, R({})}),
              "");
  }
  // self broadcasts with the mask out of place.
  EXPECT_EQ(check_grads([&](const V& v) { return masked_fill(v[0], mask, v[1]); }, {R({3}), R({})}), "");
  EXPECT_EQ(check_grads([&](const V& v) { return v[0].masked_fill(mask, 1.0); }, {R({2, 1})}), "");
}

TEST(AutogradIndex, MaskedSelectAndScatter) {
  const Tensor mask = B({{1, 0, 1}, {0, 1, 1}});
  for (const Tensor& x : {R({2, 3}), RT({2, 3})}) {
    EXPECT_EQ(check_grads([&](const V& v) { return v[0].masked_select(mask); }, {x}), "");
    EXPECT_EQ(check_grads([&](const V& v) { return masked_select(v[0], mask.select(0, 0)); }, {x}), "");
    for (const Tensor& src : {R({2, 3}), RS({2, 3}), R({7})}) {
      EXPECT_EQ(check_grads([&](const V& v) { return v[0].masked_scatter(mask, v[1]); }, {x, src}), "");
      EXPECT_EQ(check_grads(
                    [&](const V& v) {
                      Tensor y = v[0].clone();
                      y.masked_scatter_(mask, v[1]);
                      return y;
                    },
                    {x, src}),
                "");
    }
  }
  // Broadcast self and mask.
  EXPECT_EQ(check_grads([&](const V& v) { return masked_select(v[0], mask); }, {R({3})}), "");
  EXPECT_EQ(check_grads([&](const V& v) { return v[0].masked_scatter(mask, v[1]); }, {R({1, 3}), R({4})}), "");
}

// ---------------------------------------------------------------------------------------
// advanced indexing

TEST(AutogradIndex, Index) {
  const Tensor i = L({2, 0, 2});  // duplicates
  const Tensor j = L({-1, 1, 1});
  for (const Tensor& x : {R({3, 4, 2}), RS({3, 4, 2})}) {
    EXPECT_EQ(check_grads([&](const V& v) { return v[0].index({i}); }, {x}), "");
    EXPECT_EQ(check_grads([&](const V& v) { return v[0].index({Tensor(), j}); }, {x}), "");
    // Non-adjacent indexed dims.
    EXPECT_EQ(check_grads([&](const V& v) { return v[0].index({i, Tensor(), j.clamp(0, 1)}); }, {x}), "");
    EXPECT_EQ(check_grads([&](const V& v) { return v[0].index({i.unsqueeze(1), j}); }, {x}), "");  // broadcast
    EXPECT_EQ(check_grads([&](const V& v) { return v[0].index({B({{1, 0, 1, 1}, {0, 0, 1, 0}, {1, 1, 0, 0}})}); },
                          {x}),
              "");
    EXPECT_EQ(check_grads([&](const V& v) { return v[0].index({Tensor(), L({3}).ne(0).expand({4})}); }, {x}), "");
  }
  Tensor x = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  Tensor y = x.index({L({1, 1, 0, 1})});
  EXPECT_EQ(Name(y), "IndexBackward0");
  y.backward(tensor({1.0, 2.0, 4.0, 8.0}, kFloat64));
  EXPECT_EQ(Vals(x.grad()), (D{4, 11, 0}));
}

TEST(AutogradIndex, IndexPut) {
  const Tensor i = L({2, 0, 1});
  const Tensor dup = L({2, 0, 2});
  for (const Tensor& x : {R({3, 4}), RT({3, 4})}) {
    for (bool acc : {false, true}) {
      for (const Tensor& values : {R({3, 4}), RT({3, 4}), R({4}), R({3, 1}), R({})}) {
        const Tensor& ix = acc ? dup : i;
        EXPECT_EQ(check_grads(
                      [&](const V& v) {
                        Tensor y = v[0].clone();
                        y.index_put_({ix}, v[1], acc);
                        return y;
                      },
                      {x, values}),
                  "");
      }
      EXPECT_EQ(check_grads(
                    [&](const V& v) {
                      Tensor y = v[0].clone();
                      y.index_put_({Tensor(), acc ? L({3, -1, 0}) : L({3, -2, 0})}, v[1], acc);
                      return y;
                    },
                    {x, R({3})}),
                "");
      EXPECT_EQ(check_grads(
                    [&](const V& v) {
                      Tensor y = v[0] * 2;
                      y.index_put_({v[0].detach().gt(0)}, v[1], acc);  // bool mask, scalar value
                      return y;
                    },
                    {x, R({})}),
                "");
    }
  }
  // On a transposed view of a non-leaf.
  EXPECT_EQ(check_grads(
                [&](const V& v) {
                  Tensor base = v[0].clone();
                  base.t().index_put_({i}, v[1], true);
                  return base;
                },
                {R({4, 3}), R({4})}),
            "");
}

TEST(AutogradIndex, IndexPutOverwriteAndAccumulate) {
  // Not accumulating: self loses the written positions; every value, duplicates
  // included, gets the gradient of the position it was written to.
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, kFloat64).requires_grad_();
  Tensor v = tensor({5.0, 6.0, 7.0}, kFloat64).requires_grad_();
  Tensor y = x * 1;
  y.index_put_({L({1, 1, 2})}, v);
  EXPECT_EQ(Name(y), "IndexPutBackward0");
  y.backward(tensor({1.0, 2.0, 3.0, 4.0}, kFloat64));
  EXPECT_EQ(Vals(x.grad()), (D{1, 0, 0, 4}));
  EXPECT_EQ(Vals(v.grad()), (D{2, 2, 3}));
  // Accumulating: self keeps its gradient.
  Tensor x2 = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  Tensor v2 = scalar_tensor(5.0, kFloat64).requires_grad_();
  Tensor y2 = x2 * 1;
  y2.index_put_({L({0, 0, 2})}, v2, true);
  EXPECT_EQ(Vals(y2), (D{11, 2, 8}));
  y2.backward(tensor({1.0, 2.0, 3.0}, kFloat64));
  EXPECT_EQ(Vals(x2.grad()), (D{1, 2, 3}));
  EXPECT_EQ(v2.grad().item<double>(), 5.0);  // 1 + 1 + 3
}

// ---------------------------------------------------------------------------------------
// sort / topk / kthvalue

TEST(AutogradIndex, SortTopkKthvalue) {
  for (const Tensor& x : {R({3, 5}), RT({3, 5}), RS({3, 5})}) {
    for (int64_t dim : {0, 1, -1, -2}) {
      for (bool desc : {false, true}) {
        EXPECT_EQ(check_grads([&](const V& v) { return std::get<0>(v[0].sort(dim, desc)); }, {x}), "");
        EXPECT_EQ(check_grads([&](const V& v) { return std::get<0>(topk(v[0], 2, dim, desc)); }, {x}), "");
      }
      for (bool keepdim : {false, true}) {
        EXPECT_EQ(check_grads([&](const V& v) { return std::get<0>(v[0].kthvalue(2, dim, keepdim)); }, {x}), "");
      }
    }
  }
  EXPECT_EQ(check_grads([&](const V& v) { return std::get<0>(sort(v[0])); }, {R({})}), "");
  EXPECT_EQ(check_grads([&](const V& v) { return std::get<0>(v[0].topk(1)); }, {R({})}), "");
  EXPECT_EQ(check_grads([&](const V& v) { return std::get<0>(v[0].kthvalue(1, 0, false)); }, {R({})}), "");

  Tensor x = tensor({3.0, 1.0, 2.0}, kFloat64).requires_grad_();
  auto [values, indices] = x.sort(0, true);
  EXPECT_EQ(Name(values), "SortBackward0");
  EXPECT_FALSE(indices.requires_grad());
  values.backward(tensor({1.0, 2.0, 3.0}, kFloat64));
  EXPECT_EQ(Vals(x.grad()), (D{1, 3, 2}));
}

TEST(AutogradIndex, OnlyOneInputRequiresGrad) {
  // Nodes skip saving what the wanted gradients do not read; both ways must still work.
  const Tensor ix = L({2, 0, 2});
  const Tensor ix2 = L2({{2, 0, 2}, {1, 1, 3}});
  const Tensor src = R({3, 4}), x = R({4, 4});
  const std::vector<std::function<Tensor(const Tensor&, const Tensor&)>> fns = {
      [&](const Tensor& a, const Tensor& b) { return a.scatter_add(0, ix2, b); },
      [&](const Tensor& a, const Tensor& b) { return a.scatter_reduce(0, ix2, b, "sum"); },
      [&](const Tensor& a, const Tensor& b) { return a.scatter_reduce(0, ix2, b, "sum", false); },
      [&](const Tensor& a, const Tensor& b) { return a.index_add(0, ix, b, 2); },
      [&](const Tensor& a, const Tensor& b) { return a.index_copy(0, L({2, 0, 1}), b); },
      [&](const Tensor& a, const Tensor& b) {
        Tensor y = a.clone();
        y.index_put_({ix}, b, true);
        return y;
      },
      [&](const Tensor& a, const Tensor& b) {
        Tensor y = a * 1;
        y.index_put_({L({2, 0, 1})}, b, false);
        return y;
      },
  };
  for (size_t k = 0; k < fns.size(); ++k) {
    SCOPED_TRACE(k);
    EXPECT_EQ(check_grads([&](const V& v) { return fns[k](v[0], src); }, {x}), "");
    EXPECT_EQ(check_grads([&](const V& v) { return fns[k](x, v[0]); }, {src}), "");
  }
}

// ---------------------------------------------------------------------------------------
// names, non-differentiable ops, errors

TEST(AutogradIndex, NodeNames) {
  Tensor x = R({4, 3}).requires_grad_();
  Tensor s = R({2, 3}).requires_grad_();
  Tensor v = R({}).requires_grad_();
  const Tensor ix = L2({{0, 1, 2}, {3, 2, 1}});
  const Tensor i = L({0, 2});
  const Tensor mask = x.detach().gt(0);
  EXPECT_EQ(Name(x.index_select(0, i)), "IndexSelectBackward0");
  EXPECT_EQ(Name(x.gather(0, ix)), "GatherBackward0");
  EXPECT_EQ(Name(x.scatter(0, ix, s)), "ScatterBackward0");
  EXPECT_EQ(Name(x.scatter(0, ix, 1.0)), "ScatterBackward1");
  EXPECT_EQ(Name(x.scatter_add(0, ix, s)), "ScatterAddBackward0");
  EXPECT_EQ(Name(x.scatter_reduce(0, ix, s, "amax")), "ScatterReduceBackward0");
  EXPECT_EQ(Name(x.index_add(0, i, s)), "IndexAddBackward0");
  EXPECT_EQ(Name(x.index_copy(0, i, s)), "IndexCopyBackward0");
  EXPECT_EQ(Name(x.index_fill(0, i, 1.0)), "IndexFillBackward0");
  EXPECT_EQ(Name(index_fill(x, 0, i, v)), "IndexFillBackward1");
  EXPECT_EQ(Name(x.masked_fill(mask, 1.0)), "MaskedFillBackward0");
  EXPECT_EQ(Name(masked_fill(x, mask, v)), "MaskedFillBackward1");
  EXPECT_EQ(Name(x.masked_select(mask)), "MaskedSelectBackward0");
  EXPECT_EQ(Name(x.masked_scatter(mask, R({12}))), "MaskedScatterBackward0");
  EXPECT_EQ(Name(x.index({i})), "IndexBackward0");
  EXPECT_EQ(Name(x.index({mask})), "IndexBackward0");
  EXPECT_EQ(Name(std::get<0>(x.sort())), "SortBackward0");
  EXPECT_EQ(Name(std::get<0>(x.topk(2))), "TopkBackward0");
  EXPECT_EQ(Name(std::get<0>(x.kthvalue(2))), "KthvalueBackward0");
  // In place: the node of the op (self only, or self and the other tensor).
  Tensor y = x * 1;
  y.scatter_(0, ix, s);
  EXPECT_EQ(Name(y), "ScatterBackward0");
  y.scatter_(0, ix, 1.0);
  EXPECT_EQ(Name(y), "ScatterBackward1");
  y.scatter_add_(0, ix, s);
  EXPECT_EQ(Name(y), "ScatterAddBackward0");
  y.scatter_reduce_(0, ix, s, "prod", false);
  EXPECT_EQ(Name(y), "ScatterReduceBackward0");
  y.index_add_(0, i, s);
  EXPECT_EQ(Name(y), "IndexAddBackward0");
  y.index_copy_(0, i, s);
  EXPECT_EQ(Name(y), "IndexCopyBackward0");
  y.index_fill_(0, i, 2.0);
  EXPECT_EQ(Name(y), "IndexFillBackward0");
  index_fill_(y, 0, i, v);
  EXPECT_EQ(Name(y), "IndexFillBackward1");
  y.masked_fill_(mask, 0.5);
  EXPECT_EQ(Name(y), "MaskedFillBackward0");
  masked_fill_(y, mask, v);
  EXPECT_EQ(Name(y), "MaskedFillBackward1");
  y.masked_scatter_(mask, R({12}));
  EXPECT_EQ(Name(y), "MaskedScatterBackward0");
  y.index_put_({i}, s, true);
  EXPECT_EQ(Name(y), "IndexPutBackward0");
  // Only the other tensor requires grad.
  Tensor z = zeros({4, 3}, TensorOptions(kFloat64));
  z.index_put_({i}, s);
  EXPECT_EQ(Name(z), "IndexPutBackward0");
  EXPECT_TRUE(z.requires_grad());
}

TEST(AutogradIndex, NotDifferentiable) {
  Tensor x = R({2, 3}).requires_grad_();
  EXPECT_FALSE(x.argsort().requires_grad());
  EXPECT_FALSE(std::get<0>(unique(x)).requires_grad());
  EXPECT_FALSE(x.nonzero().requires_grad());
  EXPECT_FALSE(std::get<1>(x.sort()).requires_grad());
  EXPECT_FALSE(std::get<1>(x.topk(2)).requires_grad());
  EXPECT_FALSE(std::get<1>(x.kthvalue(1)).requires_grad());
  Tensor seq = std::get<0>(R({5}).sort()).requires_grad_();
  EXPECT_FALSE(searchsorted(seq, x).requires_grad());
  EXPECT_FALSE(L({0, 1, 1}).bincount(R({3}).requires_grad_()).requires_grad());
  // Nothing requires grad: no graph.
  Tensor c = R({3}).index_select(0, L({0}));
  EXPECT_FALSE(c.requires_grad());
  EXPECT_EQ(c.grad_fn(), nullptr);
  // Grad mode off: no graph either.
  {
    AutoGradMode off(false);
    EXPECT_FALSE(x.gather(1, L2({{0}, {1}})).requires_grad());
  }
}

TEST(AutogradIndex, InPlaceOnLeafRequiringGradFails) {
  Tensor x = R({3}).requires_grad_();
  EXPECT_THROW(x.index_fill_(0, L({0}), 1.0), Error);
  EXPECT_THROW(x.index_put_({L({0})}, R({})), Error);
  EXPECT_THROW(x.masked_fill_(x.detach().gt(0), 1.0), Error);
  EXPECT_THROW(x.scatter_(0, L({0}), 1.0), Error);
  // A failed forward check records nothing and leaves self as it was.
  Tensor y = x * 1;
  EXPECT_THROW(y.index_add_(0, L({7}), R({1})), Error);
  EXPECT_EQ(Name(y), "MulBackward1");
}

TEST(AutogradIndex, BackwardSeesModifiedIndexOrSelf) {
  // The saved old self of scatter_reduce_ (amax) is a copy: changing self later is caught
  // by the version check of the saved output, not silently used.
  Tensor x = R({3}).requires_grad_();
  Tensor y = x * 1;
  y.scatter_reduce_(0, L({0, 0}), R({2}), "amax");
  Tensor z = y * 1;
  y.mul_(2);
  EXPECT_THROW(z.sum().backward(), Error);
}

}  // namespace
}  // namespace ember
