// Convolution and pooling modules: output shapes, PyTorch's default init bounds, repr,
// state_dict keys, option errors, and the Fashion-MNIST CNN end to end (shapes + backward).

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <cmath>
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

}  // namespace
}  // namespace ember::nn
