// Convolution and pooling modules: output shapes, PyTorch's default init bounds, repr,
// state_dict keys, option errors, the Fashion-MNIST CNN end to end (shapes + backward), and
// Sequential's ReLU -> MaxPool2d swap (the same bits as the modules' own order).

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace ember::nn {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace nn_conv_test {

using I64 = std::vector<int64_t>;
using Keys = std::vector<std::string>;

I64 Sizes(const Tensor& t) { return t.sizes().vec(); }

std::string Repr(Module& m) { return m.repr(); }

TEST(ConvModule, ShapesAndParameters) {
  Conv2d conv(Conv2dOptions(1, 32, 3).padding(1));
  EXPECT_EQ(Sizes(conv->weight), (I64{32, 1, 3, 3}));
  EXPECT_EQ(Sizes(conv->bias), (I64{32}));
  EXPECT_EQ(Sizes(conv(randn({4, 1, 28, 28}))), (I64{4, 32, 28, 28}));
  EXPECT_EQ(conv->state_dict().keys(), (Keys{"weight", "bias"}));
  Conv2d grouped(Conv2dOptions(4, 6, {3, 2}).stride(2).groups(2).bias(false));
  EXPECT_EQ(Sizes(grouped->weight), (I64{6, 2, 3, 2}));
  EXPECT_FALSE(grouped->bias.defined());
  EXPECT_EQ(grouped->state_dict().keys(), (Keys{"weight"}));
  EXPECT_EQ(Sizes(grouped(randn({1, 4, 9, 9}))), (I64{1, 6, 4, 4}));
  Conv1d c1(Conv1dOptions(3, 5, 3).padding("same"));
  EXPECT_EQ(Sizes(c1(randn({2, 3, 10}))), (I64{2, 5, 10}));
  ConvTranspose2d ct(ConvTranspose2dOptions(4, 2, 3).stride(2).padding(1).output_padding(1));
  EXPECT_EQ(Sizes(ct->weight), (I64{4, 2, 3, 3}));
  EXPECT_EQ(Sizes(ct(randn({1, 4, 5, 5}))), (I64{1, 2, 10, 10}));
}

TEST(ConvModule, DefaultInitBounds) {
  // fan_in = 32 * 3 * 3; kaiming_uniform_(a = sqrt(5)) and the bias both give 1 / sqrt(fan_in).
  Conv2d conv(Conv2dOptions(32, 64, 3));
  const double bound = 1.0 / std::sqrt(32.0 * 9.0);
  EXPECT_LE(conv->weight.abs().max().item<float>(), bound + 1e-6);
  EXPECT_GT(conv->weight.abs().max().item<float>(), 0.9 * bound);
  EXPECT_LE(conv->bias.abs().max().item<float>(), bound + 1e-6);
  ConvTranspose2d ct(ConvTranspose2dOptions(8, 4, 2));
  const double tbound = 1.0 / std::sqrt(4.0 * 4.0);  // fan_in from weight.size(1) = out channels
  EXPECT_LE(ct->bias.abs().max().item<float>(), tbound + 1e-6);
}

TEST(ConvModule, ReprLikePyTorch) {
  Conv2d a(Conv2dOptions(1, 32, 3).padding(1));
  EXPECT_EQ(Repr(*a), "Conv2d(1, 32, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))");
  Conv2d b(Conv2dOptions(4, 8, {3, 5}).stride(2).dilation(2).groups(4).bias(false));
  EXPECT_EQ(Repr(*b), "Conv2d(4, 8, kernel_size=(3, 5), stride=(2, 2), dilation=(2, 2), groups=4, bias=False)");
  Conv1d c(Conv1dOptions(2, 3, 3).padding("same"));
  EXPECT_EQ(Repr(*c), "Conv1d(2, 3, kernel_size=(3,), stride=(1,), padding=same)");
  ConvTranspose2d d(ConvTranspose2dOptions(4, 2, 3).stride(2).output_padding(1));
  EXPECT_EQ(Repr(*d), "ConvTranspose2d(4, 2, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1))");
  EXPECT_EQ(Repr(*MaxPool2d(MaxPool2dOptions(2))),
            "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)");
  EXPECT_EQ(Repr(*AvgPool2d(AvgPool2dOptions({2, 3}).stride(1))),
            "AvgPool2d(kernel_size=(2, 3), stride=1, padding=0)");
  EXPECT_EQ(Repr(*AdaptiveAvgPool2d(AdaptiveAvgPool2dOptions({2, 3}))), "AdaptiveAvgPool2d(output_size=(2, 3))");
}

TEST(ConvModule, OptionErrors) {
  EXPECT_THROW(Conv2d(Conv2dOptions(3, 4, 3).groups(2)), Error);
  EXPECT_THROW(Conv2d(Conv2dOptions(2, 4, 3).padding_mode("mirror")), Error);
  EXPECT_THROW(Conv2d(Conv2dOptions(2, 4, 3).padding_mode("reflect").padding("same")), Error);
  // Transposed convolutions are built with any mode (libtorch prints them) but run only zeros.
  ConvTranspose2d t(ConvTranspose2dOptions(2, 4, 3).padding_mode("circular"));
  EXPECT_THROW(t(ones({1, 2, 5, 5})), Error);
  EXPECT_THROW(Conv2d(Conv2dOptions(2, 4, 3).stride(2).padding("same")), Error);
}

TEST(PoolModule, Forward) {
  MaxPool2d pool(MaxPool2dOptions(2));
  Tensor x = randn({2, 3, 8, 8});
  EXPECT_TRUE(pool(x).equal(max_pool2d(x, 2)));
  auto [y, idx] = pool->forward_with_indices(x);
  EXPECT_EQ(Sizes(idx), (I64{2, 3, 4, 4}));
  EXPECT_TRUE(AvgPool2d(AvgPool2dOptions(3).stride(2).padding(1))(x).equal(avg_pool2d(x, 3, 2, 1)));
  EXPECT_EQ(Sizes(AdaptiveAvgPool2d(AdaptiveAvgPool2dOptions(1))(x)), (I64{2, 3, 1, 1}));
  EXPECT_EQ(Sizes(MaxPool1d(MaxPool1dOptions(2))(randn({2, 3, 8}))), (I64{2, 3, 4}));
  EXPECT_EQ(Sizes(AvgPool1d(AvgPool1dOptions(2))(randn({2, 3, 8}))), (I64{2, 3, 4}));
}

TEST(ConvModule, FashionMnistCnnTrainsOneStep) {
  Sequential net(Conv2d(Conv2dOptions(1, 32, 3).padding(1)), ReLU(), MaxPool2d(MaxPool2dOptions(2)),
                 Conv2d(Conv2dOptions(32, 64, 3).padding(1)), ReLU(), MaxPool2d(MaxPool2dOptions(2)), Flatten(),
                 Linear(3136, 128), ReLU(), Linear(128, 10));
  Tensor x = randn({4, 1, 28, 28});
  Tensor out = net->forward(x);
  EXPECT_EQ(Sizes(out), (I64{4, 10}));
  out.pow(2).mean().backward();
  for (const auto& p : net->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_GT(p.value().grad().abs().sum().item<float>(), 0.0f) << p.key();
  }
}

// The children one after another, in their own order (what Sequential did before Note [Pool
// before ReLU]).
Tensor InOrder(SequentialImpl& net, const Tensor& x) {
  Tensor y = x;
  for (const auto& m : net) y = (*m)(y);
  return y;
}

// Same bits, NaN included (not just equal values: +0 and -0 differ here).
void ExpectSameBits(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(Sizes(a), Sizes(b)) << what;
  const std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>();
  size_t differ = 0;
  for (size_t i = 0; i < va.size(); ++i) differ += std::memcmp(&va[i], &vb[i], sizeof(double)) != 0;
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " of " << va.size() << " elements differ";
}

// An input whose pooling windows hold every case the swap must get right: all negative,
// all zero (+0 and -0 mixed), ties of a positive maximum, a NaN, -inf, +inf, and random
// values; in a non-contiguous (transposed) layout.
Tensor HardPoolInput(DType dtype) {
  manual_seed(11);
  Tensor x = randn({3, 4, 9, 10}, TensorOptions(dtype));
  std::vector<double> v = x.to_vector<double>();
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  auto at = [&](int64_t n, int64_t c, int64_t h, int64_t w) -> double& { return v[((n * 4 + c) * 9 + h) * 10 + w]; };
  for (int64_t c = 0; c < 4; ++c) {
    at(0, c, 0, 0) = -1.5, at(0, c, 0, 1) = -0.5, at(0, c, 1, 0) = -2, at(0, c, 1, 1) = -0.25;   // all negative
    at(0, c, 0, 2) = -0.0, at(0, c, 0, 3) = 0.0, at(0, c, 1, 2) = -3, at(0, c, 1, 3) = -0.0;     // zeros, -0 first
    at(0, c, 2, 0) = 0.75, at(0, c, 2, 1) = 0.75, at(0, c, 3, 0) = -1, at(0, c, 3, 1) = 0.75;    // positive ties
    at(1, c, 0, 0) = nan, at(1, c, 1, 1) = 2;                                                   // NaN with a larger value
    at(1, c, 2, 2) = -inf, at(1, c, 2, 3) = -inf, at(1, c, 3, 2) = -inf, at(1, c, 3, 3) = -inf;  // all -inf
    at(2, c, 4, 4) = inf;
  }
  Tensor plain = tensor(v, TensorOptions(kFloat64)).reshape({3, 4, 9, 10}).to(dtype);
  return plain.transpose(2, 3).contiguous().transpose(2, 3);  // the same values, strided
}

TEST(SequentialPoolBeforeRelu, SameBitsForwardAndBackward) {
  for (DType dtype : {kFloat32, kFloat64}) {
    for (const MaxPool2dOptions& po :
         {MaxPool2dOptions(2), MaxPool2dOptions(3).stride(2).padding(1).ceil_mode(true),
          MaxPool2dOptions({2, 3}).stride({1, 2}).dilation(2)}) {
      Sequential net{ReLU(), MaxPool2d(po)};
      const Tensor base = HardPoolInput(dtype);
      ASSERT_FALSE(base.is_contiguous());
      Tensor x1 = base.detach().requires_grad_(true), x2 = base.detach().requires_grad_(true);
      Tensor y1 = net->forward(x1), y2 = InOrder(*net, x2);
      // The swap happened: the last op recorded is ReLU, not the pool.
      ASSERT_NE(y1.grad_fn(), nullptr);
      EXPECT_EQ(y1.grad_fn()->name(), "ReluBackward0");
      EXPECT_EQ(y2.grad_fn()->name(), "MaxPool2DWithIndicesBackward0");
      ExpectSameBits(y1, y2, "forward");
      manual_seed(5);
      Tensor dy = randn(y1.sizes(), TensorOptions(dtype));
      y1.backward(dy);
      y2.backward(dy);
      ExpectSameBits(x1.grad(), x2.grad(), "input gradient");
      EXPECT_TRUE(y1.isnan().any().item<bool>());  // the NaN window reached the output
    }
  }
}

TEST(SequentialPoolBeforeRelu, ConvNetTrainsWithTheSameBits) {
  manual_seed(3);
  Sequential net(Conv2d(Conv2dOptions(2, 6, 3).padding(1)), ReLU(), MaxPool2d(MaxPool2dOptions(2)),
                 Conv2d(Conv2dOptions(6, 8, 3).padding(1)), ReLU(), MaxPool2d(MaxPool2dOptions(2)), Flatten(),
                 Linear(8 * 3 * 3, 5), ReLU(), Linear(5, 3));
  Tensor x = randn({5, 2, 12, 12});
  Tensor y1 = net->forward(x);
  y1.pow(2).sum().backward();
  std::vector<Tensor> g1;
  for (const auto& p : net->parameters()) g1.push_back(p.grad().clone());
  net->zero_grad();
  Tensor y2 = InOrder(*net, x);
  y2.pow(2).sum().backward();
  ExpectSameBits(y1, y2, "output");
  const auto params = net->named_parameters();
  for (size_t i = 0; i < params.size(); ++i) ExpectSameBits(g1[i], params[i].value().grad(), params[i].key());
  // Under no_grad too (inference).
  NoGradGuard ng;
  ExpectSameBits(net->forward(x), InOrder(*net, x), "no_grad output");
}

// Small integers (many equal outputs, so pooling windows with ties), a NaN in one image.
Tensor TieHeavy(IntArrayRef shape, uint64_t seed, bool nan) {
  manual_seed(seed);
  std::vector<double> v = randint(-2, 3, shape).to(kFloat64).to_vector<double>();
  if (nan) v[v.size() / 3] = std::numeric_limits<double>::quiet_NaN();
  return tensor(v, TensorOptions(kFloat64)).reshape(shape).to(kFloat32);
}

// The name of the node that produced grad_fn's first input.
std::string FirstInputNode(const Tensor& y) {
  const auto next = y.grad_fn()->next_functions();
  return next.empty() || !next[0].first ? "" : next[0].first->name();
}

// Note [Convolution, then a max-pool]: a Conv2d whose output only a 2x2 / stride-2 MaxPool2d
// reads runs with the pool as one op (few-tap kernels or oneDNN), with the same bits as the
// modules one after another: output, input gradient, weight and bias gradients; without
// the full-size convolution output ever being allocated.
TEST(SequentialConvThenPool, SameBitsAsTheModulesInOrder) {
  struct Case {
    Conv2dOptions conv;
    std::vector<int64_t> input;
    bool relu;
    const char* what;
  };
  const std::vector<Case> cases = {
      {Conv2dOptions(1, 32, 3).padding(1), {6, 1, 28, 28}, true, "1->32 (few taps), the main job's first layer"},
      {Conv2dOptions(3, 8, 3).padding(1).bias(false), {4, 3, 11, 13}, true, "3->8 (few taps), no bias, odd sizes"},
      {Conv2dOptions(2, 5, 3).stride(2), {3, 2, 12, 12}, false, "2->5 (few taps), stride 2, no ReLU"},
      {Conv2dOptions(32, 64, 3).padding(1), {5, 32, 14, 14}, true, "32->64 (oneDNN Winograd), 5 chunks of 1"},
      {Conv2dOptions(16, 32, 3).stride(2), {9, 16, 19, 19}, true, "16->32 (oneDNN direct), odd output 9x9"},
      {Conv2dOptions(16, 16, 1), {3, 16, 6, 6}, false, "1x1 16->16 (oneDNN, also few taps)"},
  };
  for (const Case& c : cases) {
    for (bool input_grad : {true, false}) {
      SCOPED_TRACE(std::string(c.what) + (input_grad ? ", input gradient" : ", no input gradient"));
      manual_seed(7);
      Sequential net = c.relu ? Sequential(Conv2d(c.conv), ReLU(), MaxPool2d(MaxPool2dOptions(2)))
                              : Sequential(Conv2d(c.conv), MaxPool2d(MaxPool2dOptions(2)));
      auto conv = net->ptr<Conv2dImpl>(0);
      {
        NoGradGuard ng;
        conv->weight.copy_(TieHeavy(conv->weight.sizes(), 8, false));
        if (conv->bias.defined()) conv->bias.copy_(TieHeavy(conv->bias.sizes(), 9, false));
      }
      const Tensor base = TieHeavy(c.input, 10, true);
      Tensor x1 = base.detach().requires_grad_(input_grad), x2 = base.detach().requires_grad_(input_grad);
      reset_peak_memory_stats();
      const int64_t before = memory_allocated();
      Tensor y1 = net->forward(x1);
      const int64_t peak = memory_stats().peak_allocated_bytes - before;
      ASSERT_NE(y1.grad_fn(), nullptr);
      EXPECT_EQ(c.relu ? FirstInputNode(y1) : y1.grad_fn()->name(), "ConvolutionMaxPool2DBackward0");
      // The pooled output and its window offsets, never the convolution's whole output.
      const int64_t full = y1.numel() * 4 * static_cast<int64_t>(sizeof(float));
      EXPECT_LT(peak, full) << "peak " << peak << " bytes";
      manual_seed(5);
      const Tensor dy = randn(y1.sizes());
      y1.backward(dy);
      std::vector<Tensor> g1 = {conv->weight.grad().clone()};
      if (conv->bias.defined()) g1.push_back(conv->bias.grad().clone());
      net->zero_grad();
      Tensor y2 = InOrder(*net, x2);
      y2.backward(dy);
      ExpectSameBits(y1, y2, "output");
      EXPECT_TRUE(y1.isnan().any().item<bool>());  // the NaN reached the output
      if (input_grad) ExpectSameBits(x1.grad(), x2.grad(), "input gradient");
      ExpectSameBits(g1[0], conv->weight.grad(), "weight gradient");
      if (conv->bias.defined()) ExpectSameBits(g1[1], conv->bias.grad(), "bias gradient");
      NoGradGuard ng;
      ExpectSameBits(net->forward(x1), InOrder(*net, x1), "no_grad output");
    }
  }
}

// Gradients of gradients go through the modules' own nodes (the pooled gradient scattered
// back), and give what the unfused ops give.
TEST(SequentialConvThenPool, DoubleBackward) {
  manual_seed(4);
  Sequential net(Conv2d(Conv2dOptions(1, 4, 3).padding(1)), ReLU(), MaxPool2d(MaxPool2dOptions(2)));
  Tensor x1 = randn({2, 1, 8, 8}).requires_grad_(true), x2 = x1.detach().requires_grad_(true);
  auto conv = net->ptr<Conv2dImpl>(0);
  auto grad_norm = [&](const Tensor& y, const Tensor& x) {
    const auto g = autograd::grad({y.pow(2).sum()}, {x, conv->weight}, {}, true, true);
    return g[0].pow(2).sum() + g[1].pow(2).sum();
  };
  Tensor y1 = net->forward(x1);
  EXPECT_EQ(FirstInputNode(y1), "ConvolutionMaxPool2DBackward0");
  grad_norm(y1, x1).backward();
  const Tensor w1 = conv->weight.grad().clone(), gx1 = x1.grad().clone();
  net->zero_grad();
  grad_norm(InOrder(*net, x2), x2).backward();
  ExpectSameBits(gx1, x2.grad(), "input gradient of the gradient norm");
  ExpectSameBits(w1, conv->weight.grad(), "weight gradient of the gradient norm");
}

// Bad input through the fused pair raises the errors of the ops the modules call.
TEST(SequentialConvThenPool, ErrorsAreTheModulesOwn) {
  Sequential net(Conv2d(Conv2dOptions(1, 4, 3)), ReLU(), MaxPool2d(MaxPool2dOptions(2)));
  auto message = [&](const Tensor& x) -> std::string {
    try {
      net->forward(x);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string channels = message(randn({2, 3, 8, 8}));
  EXPECT_NE(channels.find("[conv2d]"), std::string::npos) << channels;
  EXPECT_NE(channels.find("to have 1 channels"), std::string::npos) << channels;
  const std::string small = message(randn({2, 1, 3, 3}));  // a 1x1 convolution output
  EXPECT_NE(small.find("[max_pool2d]"), std::string::npos) << small;
  EXPECT_NE(small.find("too small"), std::string::npos) << small;
  const std::string integers = message(ones({2, 1, 8, 8}, TensorOptions(kInt64)));
  EXPECT_NE(integers.find("[conv2d]"), std::string::npos) << integers;
  EXPECT_NE(integers.find("floating-point"), std::string::npos) << integers;
  // An unbatched image takes the modules one by one and works.
  EXPECT_EQ(Sizes(net->forward(randn({1, 8, 8}))), (I64{4, 3, 3}));
}

// Where the fusion would show, or the kernels do not take the case, Sequential runs the
// modules as they are.
TEST(SequentialConvThenPool, LeftAloneWhereItWouldShow) {
  const Tensor x = randn({2, 3, 8, 8}).requires_grad_(true);
  auto node_before_relu = [](const Tensor& y) { return FirstInputNode(y); };
  {  // a hook on the convolution sees its whole output
    Sequential net(Conv2d(Conv2dOptions(3, 4, 3).padding(1)), ReLU(), MaxPool2d(MaxPool2dOptions(2)));
    std::vector<int64_t> seen;
    auto h = net[0]->register_forward_hook([&](Module&, const TensorList&, const TensorList& out) {
      seen = out[0].sizes().vec();
      return std::optional<TensorList>();
    });
    EXPECT_EQ(node_before_relu(net->forward(x)), "MaxPool2DWithIndicesBackward0");
    EXPECT_EQ(seen, (I64{2, 4, 8, 8}));
    h.remove();
    EXPECT_EQ(node_before_relu(net->forward(x)), "ConvolutionMaxPool2DBackward0");
  }
  {  // other pools, and a convolution the kernels do not fuse (im2col + BLAS), keep their order
    Sequential a(Conv2d(Conv2dOptions(3, 4, 3).padding(1)), ReLU(), MaxPool2d(MaxPool2dOptions(3)));
    EXPECT_EQ(node_before_relu(a->forward(x)), "MaxPool2DWithIndicesBackward0");
    Sequential b(Conv2d(Conv2dOptions(3, 4, 3).padding(1)), MaxPool2d(MaxPool2dOptions(2).ceil_mode(true)));
    EXPECT_EQ(b->forward(x).grad_fn()->name(), "MaxPool2DWithIndicesBackward0");
    Sequential c(Conv2d(Conv2dOptions(3, 4, 5).padding(2)), ReLU(), MaxPool2d(MaxPool2dOptions(2)));
    EXPECT_EQ(node_before_relu(c->forward(x)), "MaxPool2DWithIndicesBackward0");  // 75 taps, 3 channels
    Sequential d(Conv2d(Conv2dOptions(3, 4, 3).padding(1).padding_mode("reflect")), MaxPool2d(MaxPool2dOptions(2)));
    EXPECT_EQ(d->forward(x).grad_fn()->name(), "MaxPool2DWithIndicesBackward0");
  }
  {  // float64 takes the two ops, with the same result
    Sequential net(Conv2d(Conv2dOptions(3, 4, 3).padding(1)), MaxPool2d(MaxPool2dOptions(2)));
    net->to(kFloat64);
    const Tensor xd = x.detach().to(kFloat64);
    EXPECT_EQ(net->forward(xd.requires_grad_(true)).grad_fn()->name(), "MaxPool2DWithIndicesBackward0");
  }
  {  // a traced graph keeps the modules
    Sequential net(Conv2d(Conv2dOptions(3, 4, 3).padding(1)), ReLU(), MaxPool2d(MaxPool2dOptions(2)));
    net->eval();
    const Tensor xi = x.detach();
    jit::GraphModule g = jit::trace(*net, xi);
    const std::string text = g.graph().str();
    EXPECT_NE(text.find("conv2d"), std::string::npos) << text;
    EXPECT_NE(text.find("max_pool2d"), std::string::npos) << text;
    ExpectSameBits(g.forward(xi), net->forward(xi), "traced graph");
  }
}

TEST(SequentialPoolBeforeRelu, KeptInOrderWhereTheSwapWouldShow) {
  const Tensor x = randn({2, 3, 6, 6});
  {  // a hook on the ReLU sees the full-size activation
    Sequential net(ReLU(), MaxPool2d(MaxPool2dOptions(2)));
    std::vector<int64_t> seen;
    auto h = net[0]->register_forward_hook([&](Module&, const TensorList&, const TensorList& out) {
      seen = out[0].sizes().vec();
      return std::optional<TensorList>();
    });
    Tensor y = net->forward(x.detach().requires_grad_(true));
    EXPECT_EQ(seen, (I64{2, 3, 6, 6}));
    EXPECT_EQ(y.grad_fn()->name(), "MaxPool2DWithIndicesBackward0");
    h.remove();
    EXPECT_EQ(net->forward(x.detach().requires_grad_(true)).grad_fn()->name(), "ReluBackward0");
  }
  {  // a hook on the pool sees ReLU's output as its input
    Sequential net(ReLU(), MaxPool2d(MaxPool2dOptions(2)));
    std::vector<int64_t> seen;
    auto h = net[1]->register_forward_pre_hook([&](Module&, const TensorList& in) {
      seen = in[0].sizes().vec();
      return std::optional<TensorList>();
    });
    net->forward(x);
    EXPECT_EQ(seen, (I64{2, 3, 6, 6}));
  }
  {  // an in-place ReLU overwrites its input, as it says
    Sequential net(ReLU(ReLUOptions().inplace(true)), MaxPool2d(MaxPool2dOptions(2)));
    Tensor z = randn({2, 3, 6, 6});
    Tensor expect = z.relu();
    Tensor y = net->forward(z);
    EXPECT_TRUE(z.equal(expect));
    EXPECT_TRUE(y.equal(max_pool2d(expect, 2)));
  }
  {  // a traced graph keeps the modules' order (and computes the same bits)
    Sequential net(ReLU(), MaxPool2d(MaxPool2dOptions(2)));
    net->eval();
    jit::GraphModule g = jit::trace(*net, x);
    const std::string text = g.graph().str();
    ASSERT_NE(text.find("relu"), std::string::npos) << text;
    ASSERT_NE(text.find("max_pool2d"), std::string::npos) << text;
    EXPECT_LT(text.find("relu"), text.find("max_pool2d")) << text;
    ExpectSameBits(g.forward(x), net->forward(x), "traced graph");
  }
  {  // other orders and activations are left alone
    Sequential net(MaxPool2d(MaxPool2dOptions(2)), ReLU(), Tanh(), MaxPool2d(MaxPool2dOptions(1)));
    EXPECT_EQ(net->forward(x.detach().requires_grad_(true)).grad_fn()->name(), "MaxPool2DWithIndicesBackward0");
  }
}

}  // namespace
}  // namespace ember::nn
