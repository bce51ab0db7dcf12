// ember's dtype lattice and result_type against libtorch 1.13's, for every pair.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ember/ember.h>

#include "parity/torch_bridge.h"

// Named per file: the parity files are compiled in unity batches (Note [Build time]).
namespace type_promotion_parity {

TEST(TypePromotionParity, PromoteTypesMatchesTorchForEveryPair) {
  for (int a = 0; a < ember::kNumDTypes; ++a) {
    for (int b = 0; b < ember::kNumDTypes; ++b) {
      auto ea = static_cast<ember::DType>(a), eb = static_cast<ember::DType>(b);
      auto expected = parity::to_ember(torch::promote_types(parity::to_torch(ea), parity::to_torch(eb)));
      EXPECT_EQ(ember::promote_types(ea, eb), expected) << ea << " with " << eb;
    }
  }
}

// result_type with a tensor (1-D or 0-D) and a second operand that is a tensor of
// either rank or a Python-style scalar of each kind.
TEST(TypePromotionParity, ResultTypeMatchesTorch) {
  const std::vector<ember::Scalar> scalars = {ember::Scalar(true), ember::Scalar(int64_t(3)),
                                              ember::Scalar(2.5)};
  const std::vector<c10::Scalar> tscalars = {c10::Scalar(true), c10::Scalar(int64_t(3)),
                                             c10::Scalar(2.5)};
  int checked = 0;
  for (int a = 0; a < ember::kNumDTypes; ++a) {
    const auto ea = static_cast<ember::DType>(a);
    for (bool a_zero_dim : {false, true}) {
      ember::Tensor et = a_zero_dim ? ember::zeros({}, ea) : ember::zeros({2}, ea);
      torch::Tensor tt = a_zero_dim ? torch::zeros({}, parity::to_torch(ea))
                                    : torch::zeros({2}, parity::to_torch(ea));
      for (size_t s = 0; s < scalars.size(); ++s) {
        EXPECT_EQ(ember::result_type(et, scalars[s]), parity::to_ember(torch::result_type(tt, tscalars[s])))
            << ea << (a_zero_dim ? " 0-dim" : " 1-dim") << " with scalar " << scalars[s];
        ++checked;
      }
      for (int b = 0; b < ember::kNumDTypes; ++b) {
        const auto eb = static_cast<ember::DType>(b);
        for (bool b_zero_dim : {false, true}) {
          ember::Tensor eu = b_zero_dim ? ember::zeros({}, eb) : ember::zeros({2}, eb);
          torch::Tensor tu = b_zero_dim ? torch::zeros({}, parity::to_torch(eb))
                                        : torch::zeros({2}, parity::to_torch(eb));
          EXPECT_EQ(ember::result_type(et, eu), parity::to_ember(torch::result_type(tt, tu)))
              << ea << (a_zero_dim ? " 0-dim" : " 1-dim") << " with " << eb
              << (b_zero_dim ? " 0-dim" : " 1-dim");
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, ember::kNumDTypes * 2 * (3 + ember::kNumDTypes * 2));
}

}  // namespace type_promotion_parity
