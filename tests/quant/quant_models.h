#pragma once
// Small models that are not a plain nn::Sequential, for the static quantization tests
// (tests/quant/quantized_join_test.cpp) and the ONNX export tests (tests/onnx/export_quant_test.cpp).

#include <ember/ember.h>
#include <ember/quant/static_quant.h>

#include "test_util.h"

namespace ember::quant_models {

// conv-bn-relu-conv-bn plus the input, then ReLU (the skip addition in a FloatFunctional).
class BlockImpl : public nn::Cloneable<BlockImpl> {
 public:
  explicit BlockImpl(int64_t c) : Cloneable("Block"), channels(c) { reset(); }
  void reset() override {
    auto conv = [&] { return nn::Conv2d(nn::Conv2dOptions(channels, channels, 3).padding(1).bias(false)); };
    body = register_module("body", nn::Sequential(conv(), nn::BatchNorm2d(channels), nn::ReLU(), conv(),
                                                  nn::BatchNorm2d(channels)));
    skip = register_module("skip", quant::FloatFunctional());
  }
  Tensor forward(const Tensor& x) override { return skip->add_relu(body->forward(x), x); }
  int64_t channels;
  nn::Sequential body{nullptr};
  quant::FloatFunctional skip{nullptr};
};
EMBER_MODULE(Block);

// Two branches (1x1 conv + ReLU, and 3x3 conv) of 8 channels concatenated along the channels.
class TwoBranchImpl : public nn::Cloneable<TwoBranchImpl> {
 public:
  TwoBranchImpl() : Cloneable("TwoBranch") { reset(); }
  void reset() override {
    left = register_module("left", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(8, 4, 1)), nn::ReLU()));
    right = register_module("right", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(8, 6, 3).padding(1))));
    join = register_module("join", quant::FloatFunctional());
  }
  Tensor forward(const Tensor& x) override { return join->cat({left->forward(x), right->forward(x)}, 1); }
  nn::Sequential left{nullptr}, right{nullptr};
  quant::FloatFunctional join{nullptr};
};
EMBER_MODULE(TwoBranch);

// conv-bn-relu (0-2), a residual block (3), a two-branch concatenation (4), conv-relu (5-6),
// global average pooling, flatten, linear (7-9); input [N, 1, H, W]; eval mode.
inline nn::Sequential ResidualNet() {
  nn::Sequential m(nn::Conv2d(nn::Conv2dOptions(1, 8, 3).padding(1)), nn::BatchNorm2d(8), nn::ReLU(), Block(8),
                   TwoBranch(), nn::Conv2d(nn::Conv2dOptions(10, 16, 1)), nn::ReLU(),
                   nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions(1)), nn::Flatten(), nn::Linear(16, 10));
  ember::testing::RandomizeNormStats(*m);
  m->eval();
  return m;
}

}  // namespace ember::quant_models
