// Backward of the view ops and copies: gradcheck / gradgradcheck on contiguous and
// non-contiguous inputs, node names, multi-output views, in-place writes through views.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autograd/grad_util.h"
#include "test_util.h"

namespace ember {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace autograd_view_grad_test {

using testing::check_grads;
using V = std::vector<Tensor>;

Tensor R(std::vector<int64_t> sizes) { return randn(sizes, TensorOptions(kFloat64)); }
// A non-contiguous tensor of the given sizes (a transposed view of a bigger buffer).
Tensor NC(int64_t a, int64_t b) { return R({b, a + 1}).slice(1, 0, a).t(); }

TEST(ViewGrad, Gradcheck) {
  const Tensor x = R({3, 4}), nc = NC(3, 4);
  ASSERT_FALSE(nc.is_contiguous());
  struct Case {
    const char* name;
    std::function<Tensor(const V&)> fn;
  };
  const std::vector<Case> cases = {
      {"view", [](const V& v) { return v[0].reshape({12}).view({2, 6}); }},
      {"reshape", [](const V& v) { return v[0].reshape({4, 3}); }},
      {"t", [](const V& v) { return v[0].t(); }},
      {"transpose", [](const V& v) { return v[0].unsqueeze(0).transpose(-1, 0); }},
      {"permute", [](const V& v) { return v[0].unsqueeze(1).permute({2, 0, 1}); }},
      {"expand", [](const V& v) { return v[0].unsqueeze(0).expand({2, 3, 4}) * 1.5; }},
      {"squeeze", [](const V& v) { return v[0].unsqueeze(1).squeeze(); }},
      {"squeeze_dim", [](const V& v) { return v[0].unsqueeze(-1).squeeze(-1); }},
      {"flatten", [](const V& v) { return v[0].flatten(); }},
      {"unflatten", [](const V& v) { return v[0].unflatten(1, {2, 2}); }},
      {"narrow", [](const V& v) { return v[0].narrow(1, 1, 2); }},
      {"slice_step", [](const V& v) { return v[0].slice(1, 0, 4, 2); }},
      {"slice_neg", [](const V& v) { return v[0].slice(-1, -3, std::nullopt, 1); }},
      {"select", [](const V& v) { return v[0].select(0, -1); }},
      {"diagonal", [](const V& v) { return v[0].diagonal(1); }},
      {"diagonal_neg", [](const V& v) { return v[0].diagonal(-1); }},
      {"unfold", [](const V& v) { return v[0].unfold(1, 2, 1); }},
      {"as_strided", [](const V& v) { return v[0].contiguous().as_strided({3, 3}, {1, 2}, 1); }},
      {"movedim", [](const V& v) { return v[0].unsqueeze(0).movedim(0, 2); }},
      {"alias", [](const V& v) { return v[0].alias() * 2; }},
      {"clone", [](const V& v) { return v[0].clone(); }},
      {"contiguous", [](const V& v) { return v[0].contiguous(); }},
      {"split", [](const V& v) { return v[0].split(3, 1)[0] * v[0].split(3, 1)[0]; }},
      {"chunk_sum", [](const V& v) {
         auto c = v[0].chunk(2, 0);
         return c[0].sum(0) + c[1].sum(0) * 2;
       }},
      {"unbind", [](const V& v) {
         auto u = v[0].unbind(1);
         return u[0] * u[3];
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(check_grads(c.fn, {x}), "");
    EXPECT_EQ(check_grads(c.fn, {nc}), "");
  }
}

TEST(ViewGrad, NodeNames) {
  Tensor x = R({2, 3}).requires_grad_();
  EXPECT_EQ(x.view({6}).grad_fn()->name(), "ViewBackward0");
  EXPECT_EQ(x.t().grad_fn()->name(), "TBackward0");
  EXPECT_EQ(x.transpose(0, 1).grad_fn()->name(), "TransposeBackward0");
  EXPECT_EQ(x.permute({1, 0}).grad_fn()->name(), "PermuteBackward0");
  EXPECT_EQ(x.expand({4, 2, 3}).grad_fn()->name(), "ExpandBackward0");
  EXPECT_EQ(x.slice(1, 0, 2).grad_fn()->name(), "SliceBackward0");
  EXPECT_EQ(x.select(0, 1).grad_fn()->name(), "SelectBackward0");
  EXPECT_EQ(x.unsqueeze(0).grad_fn()->name(), "UnsqueezeBackward0");
  EXPECT_EQ(x.unsqueeze(0).squeeze(0).grad_fn()->name(), "SqueezeBackward1");
  EXPECT_EQ(x.diagonal().grad_fn()->name(), "DiagonalBackward0");
  EXPECT_EQ(x.as_strided({2}, {1}).grad_fn()->name(), "AsStridedBackward0");
  EXPECT_EQ(x.unfold(1, 2, 1).grad_fn()->name(), "UnfoldBackward0");
  EXPECT_EQ(x.split(1, 0)[1].grad_fn()->name(), "SplitBackward0");
  EXPECT_EQ(x.unbind(0)[0].grad_fn()->name(), "UnbindBackward0");
  EXPECT_EQ(x.clone().grad_fn()->name(), "CloneBackward0");
  EXPECT_EQ(x.to(kFloat32).grad_fn()->name(), "ToCopyBackward0");
  Tensor h = R({3}).requires_grad_();
  h.to(kFloat32).sum().backward();  // the gradient comes back in the input's dtype
  EXPECT_EQ(h.grad().dtype(), kFloat64);
  EXPECT_TRUE(h.grad().equal(ones({3}, kFloat64)));
  EXPECT_EQ(x.contiguous().grad_fn(), nullptr);  // already contiguous: x itself
}

TEST(ViewGrad, SplitOutputsShareOneNodeAndUnusedPartsGetZeros) {
  Tensor x = R({6}).requires_grad_();
  auto parts = x.split(2);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].grad_fn(), parts[2].grad_fn());
  EXPECT_EQ(parts[2].output_nr(), 2u);
  (parts[1] * 3).sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0, 3, 3, 0, 0}));
}

TEST(ViewGrad, OverlappingAsStridedAccumulates) {
  // Windows of size 3, step 1, over 5 elements: the middle element is in all three.
  Tensor x = R({5}).requires_grad_();
  x.as_strided({3, 3}, {1, 1}).sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{1, 2, 3, 2, 1}));
}

TEST(ViewGrad, CopyAndFillInPlace) {
  Tensor a = R({2, 3}).requires_grad_();
  Tensor src = R({3}).requires_grad_();
  Tensor b = a * 2;
  b.copy_(src);  // broadcast copy: b's old value no longer matters
  EXPECT_EQ(b.grad_fn()->name(), "CopyBackwards");
  (b * b).sum().backward();
  EXPECT_TRUE(a.grad().equal(zeros({2, 3}, kFloat64)));
  EXPECT_TRUE(src.grad().allclose(src.detach() * 4, 1e-12, 1e-12));

  Tensor c = R({4}).requires_grad_();
  Tensor d = c * 1;
  d.slice(0, 1, 3).fill_(5);
  EXPECT_EQ(d.grad_fn()->name(), "CopySlices");
  d.sum().backward();
  EXPECT_EQ(c.grad().to_vector<double>(), (std::vector<double>{1, 0, 0, 1}));
  // copy_ into a slice of a buffer that does not require grad gives the buffer a history.
  Tensor w = R({2}).requires_grad_();
  Tensor buf = zeros({4}, kFloat64);
  buf.slice(0, 2, 4).copy_(w);
  EXPECT_TRUE(buf.requires_grad());
  (buf * tensor({1.0, 2.0, 3.0, 4.0}, kFloat64)).sum().backward();
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{3, 4}));
}

TEST(ViewGrad, InplaceOnViewOfViewAndSecondOrder) {
  Tensor x = R({3, 4}).requires_grad_();
  auto fn = [](const V& v) {
    Tensor y = v[0] * 1;
    y.select(0, 1).slice(0, 1, 3).mul_(v[0].select(0, 0).slice(0, 0, 2));
    return y * y;
  };
  EXPECT_EQ(check_grads(fn, {x}), "");
}

// Views taken with grad mode off (NoGradGuard or InferenceMode) of tensors that require grad:
// in-place changes with grad mode on, and changes to their base, are refused naming the mode
// (libtorch's CreationMeta checks); views of inference tensors are not views.
TEST(ViewGrad, ViewsTakenWithGradModeOff) {
  using ember::testing::ErrorOf;
  const Tensor leaf = R({2, 3}).requires_grad_();
  const Tensor a = leaf * 2;
  Tensor nograd_view, inference_view, view_of_inference_view;
  {
    NoGradGuard guard;
    nograd_view = a.view({6});
  }
  {
    InferenceMode guard;
    inference_view = a.view({6});
    EXPECT_FALSE(inference_view.is_inference());
    EXPECT_TRUE(inference_view.requires_grad());
    EXPECT_TRUE(inference_view.is_leaf());
    inference_view.view({3, 2}).mul_(1.0);  // fine with grad mode off
  }
  {
    NoGradGuard guard;
    view_of_inference_view = inference_view.view({3, 2});  // keeps the inference-mode origin
  }
  EXPECT_NE(ErrorOf([&] { nograd_view.mul_(2); }).find("A view was created in no_grad mode and is being modified "
                                                       "inplace"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { inference_view.add_(1); }).find("A view was created in inference mode and is being modified "
                                                         "inplace"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { view_of_inference_view.add_(1); }).find("A view was created in inference mode"),
            std::string::npos);
  // The base changes in grad mode: the views' gradients could not reach it any more.
  a.add_(leaf);
  EXPECT_NE(ErrorOf([&] { (void)nograd_view.grad_fn(); }).find("A view was created in no_grad mode and its base or "
                                                               "another view of its base has been modified inplace"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { (void)(inference_view * 2); }).find("A view was created in inference mode and its base"),
            std::string::npos);
  // Not when the base needs no gradient.
  const Tensor plain = R({4});
  Tensor plain_view;
  {
    NoGradGuard guard;
    plain_view = plain.view({2, 2});
  }
  plain.add_(1);
  EXPECT_FALSE((plain_view * 2).requires_grad());
  // A view of an inference tensor is not a view and never requires grad.
  Tensor inference_tensor;
  {
    InferenceMode guard;
    inference_tensor = ones({2, 3}).requires_grad_();
    const Tensor v = inference_tensor.view({6});
    EXPECT_TRUE(v.is_inference());
    EXPECT_FALSE(v.is_view());
    EXPECT_FALSE(v.requires_grad());
  }
  const Tensor outside = inference_tensor.view({6});
  EXPECT_FALSE(outside.is_view());
  EXPECT_FALSE(outside.requires_grad());
  EXPECT_TRUE(outside.is_leaf());
}

}  // namespace
}  // namespace ember
