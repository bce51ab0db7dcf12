#pragma once
// Gradient parity: run one function in ember and in libtorch on the same inputs, back-
// propagate the same random output gradient, and compare the outputs and every input
// gradient. Floating-point inputs get requires_grad; integer and bool inputs (indices,
// masks) are passed through unchanged.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ember/ember.h>

#include <functional>
#include <string>
#include <vector>

#include "parity/torch_bridge.h"

namespace parity {

using EmberFn = std::function<ember::Tensor(const std::vector<ember::Tensor>&)>;
using TorchFn = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;

// Compares values (and sizes) of an ember and a torch tensor.
inline void expect_tensor_close(const ember::Tensor& e, const torch::Tensor& t, const std::string& what,
                                double rtol, double atol) {
  ASSERT_EQ(e.defined(), t.defined()) << what << ": one gradient is undefined";
  if (!e.defined()) return;
  ASSERT_EQ(e.sizes().vec(), t.sizes().vec()) << what;
  torch::Tensor et = to_torch(e).to(torch::kFloat64);
  torch::Tensor tt = t.detach().to(torch::kFloat64);
  EXPECT_TRUE(torch::allclose(et, tt, rtol, atol, /*equal_nan=*/true))
      << what << ": max |ember - torch| = " << (et - tt).abs().max().item<double>()
      << ", max |torch| = " << tt.abs().max().item<double>() << "\nember:\n" << et << "\ntorch:\n" << tt;
}

// Runs efn/tfn on copies of `inputs` (each input may be a non-contiguous ember view; the
// torch copy is contiguous with the same values), then backward with a random gradient.
inline void check_grad_parity(const std::string& what, const EmberFn& efn, const TorchFn& tfn,
                              const std::vector<ember::Tensor>& inputs, double rtol = 1e-6,
                              double atol = 1e-8) {
  SCOPED_TRACE(what);
  std::vector<ember::Tensor> ein;
  std::vector<torch::Tensor> tin;
  for (const ember::Tensor& x : inputs) {
    const bool diff = ember::is_floating_point(x.dtype());
    ember::Tensor e = x.detach();
    if (diff) e.requires_grad_(true);
    ein.push_back(e);
    torch::Tensor t = to_torch(x);
    if (diff) t.requires_grad_(true);
    tin.push_back(t);
  }
  ember::Tensor eo = efn(ein);
  torch::Tensor to = tfn(tin);
  expect_tensor_close(eo, to, what + " (forward)", rtol, atol);
  if (!to.requires_grad()) return;
  ASSERT_TRUE(eo.requires_grad()) << what << ": torch's output requires grad, ember's does not";
  torch::Tensor g = torch::randn(to.sizes(), torch::TensorOptions().dtype(to.scalar_type()));
  to.backward(g);
  eo.backward(to_ember(g));
  for (size_t i = 0; i < ein.size(); ++i) {
    if (!ember::is_floating_point(ein[i].dtype())) continue;
    torch::Tensor tg = tin[i].grad();
    ember::Tensor eg = ein[i].grad();
    if (!tg.defined()) {
      // torch leaves .grad undefined when no gradient flowed; ember may as well, or zeros.
      if (eg.defined()) {
        EXPECT_TRUE(eg.eq(0).all().item<bool>()) << what << ": input " << i << " should get no gradient";
      }
      continue;
    }
    expect_tensor_close(eg, tg, what + " (gradient of input " + std::to_string(i) + ")", rtol, atol);
  }
}

}  // namespace parity
