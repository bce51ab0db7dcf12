// The libtorch-parity layers (nn/functional_extra.h) against libtorch 1.13: forward and
// backward of every functional form on the same inputs, some of them non-contiguous.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ember/compat/aten.h>
#include <ember/ember.h>

#include <sstream>
#include <string>
#include <vector>

#include "parity/grad_parity.h"

// Named per file: the parity files are compiled in unity batches (Note [Build time]).
namespace nn_extra_parity {

using ET = ember::Tensor;
using TT = torch::Tensor;
using EV = std::vector<ET>;
using TV = std::vector<TT>;
namespace EF = ember::nn::functional;
namespace TF = torch::nn::functional;

ET R(std::vector<int64_t> s) { return ember::randn(s, ember::TensorOptions(ember::kFloat64)); }
// A non-contiguous tensor of sizes s (the transpose of a contiguous one).
ET RT(std::vector<int64_t> s) {
  std::swap(s[s.size() - 1], s[s.size() - 2]);
  return R(s).transpose(-1, -2);
}

struct Case {
  std::string name;
  parity::EmberFn e;
  parity::TorchFn t;
  EV inputs;
};

void run(const std::vector<Case>& cases) {
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    parity::check_grad_parity(c.name, c.e, c.t, c.inputs, 1e-6, 1e-8);
  }
}

TEST(NNExtraParity, Activations) {
  ET x = RT({3, 4, 5});
  run({
      {"elu", [](const EV& v) { return EF::elu(v[0], EF::ELUFuncOptions().alpha(0.7)); },
       [](const TV& v) { return TF::elu(v[0], TF::ELUFuncOptions().alpha(0.7)); }, {x}},
      {"selu", [](const EV& v) { return EF::selu(v[0]); }, [](const TV& v) { return TF::selu(v[0]); }, {x}},
      {"celu", [](const EV& v) { return EF::celu(v[0], EF::CELUFuncOptions().alpha(1.5)); },
       [](const TV& v) { return TF::celu(v[0], TF::CELUFuncOptions().alpha(1.5)); }, {x}},
      {"glu", [](const EV& v) { return EF::glu(v[0], EF::GLUFuncOptions(1)); },
       [](const TV& v) { return TF::glu(v[0], TF::GLUFuncOptions(1)); }, {x}},
      {"hardshrink", [](const EV& v) { return EF::hardshrink(v[0], EF::HardshrinkFuncOptions(0.3)); },
       [](const TV& v) { return TF::hardshrink(v[0], TF::HardshrinkFuncOptions().lambda(0.3)); }, {x}},
      {"softshrink", [](const EV& v) { return EF::softshrink(v[0], EF::SoftshrinkFuncOptions(0.3)); },
       [](const TV& v) { return TF::softshrink(v[0], TF::SoftshrinkFuncOptions(0.3)); }, {x}},
      {"hardtanh", [](const EV& v) { return EF::hardtanh(v[0], EF::HardtanhFuncOptions().min_val(-0.5).max_val(0.8)); },
       [](const TV& v) { return TF::hardtanh(v[0], TF::HardtanhFuncOptions().min_val(-0.5).max_val(0.8)); }, {x}},
      {"relu6", [](const EV& v) { return EF::relu6(v[0] * 4); }, [](const TV& v) { return TF::relu6(v[0] * 4); }, {x}},
      {"softplus", [](const EV& v) { return EF::softplus(v[0], EF::SoftplusFuncOptions().beta(2).threshold(1)); },
       [](const TV& v) { return TF::softplus(v[0], TF::SoftplusFuncOptions().beta(2).threshold(1)); }, {x}},
      {"threshold", [](const EV& v) { return EF::threshold(v[0], EF::ThresholdFuncOptions(0.1, -2)); },
       [](const TV& v) { return TF::threshold(v[0], TF::ThresholdFuncOptions(0.1, -2)); }, {x}},
      {"softsign", [](const EV& v) { return EF::softsign(v[0]); }, [](const TV& v) { return TF::softsign(v[0]); }, {x}},
      {"tanhshrink", [](const EV& v) { return EF::tanhshrink(v[0]); },
       [](const TV& v) { return TF::tanhshrink(v[0]); }, {x}},
      {"logsigmoid", [](const EV& v) { return EF::logsigmoid(v[0]); },
       [](const TV& v) { return TF::logsigmoid(v[0]); }, {x}},
      {"mish", [](const EV& v) { return EF::mish(v[0]); }, [](const TV& v) { return TF::mish(v[0]); }, {x}},
      {"hardswish", [](const EV& v) { return EF::hardswish(v[0] * 4); },
       [](const TV& v) { return torch::hardswish(v[0] * 4); }, {x}},
      {"hardsigmoid", [](const EV& v) { return EF::hardsigmoid(v[0] * 4); },
       [](const TV& v) { return torch::hardsigmoid(v[0] * 4); }, {x}},
      {"softmin", [](const EV& v) { return EF::softmin(v[0], EF::SoftminFuncOptions(1)); },
       [](const TV& v) { return TF::softmin(v[0], TF::SoftminFuncOptions(1)); }, {x}},
      {"prelu", [](const EV& v) { return EF::prelu(v[0], v[1]); }, [](const TV& v) { return TF::prelu(v[0], v[1]); },
       {x, R({4})}},
  });
}

TEST(NNExtraParity, ConvAndPool3d) {
  run({
      {"conv3d", [](const EV& v) {
         return EF::conv3d(v[0], v[1], EF::Conv3dFuncOptions().bias(v[2]).stride({1, 2, 1}).padding({1, 0, 1}).dilation({2, 1, 1}));
       },
       [](const TV& v) {
         return TF::conv3d(v[0], v[1], TF::Conv3dFuncOptions().bias(v[2]).stride({1, 2, 1}).padding({1, 0, 1}).dilation({2, 1, 1}));
       },
       {R({2, 4, 6, 5, 5}), R({6, 4, 2, 3, 2}), R({6})}},
      {"conv3d groups", [](const EV& v) { return EF::conv3d(v[0], v[1], EF::Conv3dFuncOptions().groups(2)); },
       [](const TV& v) { return TF::conv3d(v[0], v[1], TF::Conv3dFuncOptions().groups(2)); },
       {R({1, 4, 4, 4, 4}), R({6, 2, 2, 2, 2})}},
      {"conv_transpose3d", [](const EV& v) {
         return EF::conv_transpose3d(v[0], v[1], EF::ConvTranspose3dFuncOptions().bias(v[2]).stride({2, 1, 2}).padding(1).output_padding({1, 0, 1}));
       },
       [](const TV& v) {
         return TF::conv_transpose3d(v[0], v[1], TF::ConvTranspose3dFuncOptions().bias(v[2]).stride({2, 1, 2}).padding(1).output_padding({1, 0, 1}));
       },
       {R({2, 3, 3, 4, 3}), R({3, 2, 3, 3, 3}), R({2})}},
      {"max_pool3d", [](const EV& v) { return EF::max_pool3d(v[0], EF::MaxPool3dFuncOptions(3).stride(2).padding(1)); },
       [](const TV& v) { return TF::max_pool3d(v[0], TF::MaxPool3dFuncOptions(3).stride(2).padding(1)); },
       {R({2, 3, 5, 6, 7})}},
      {"max_pool3d ceil dilation", [](const EV& v) {
         return EF::max_pool3d(v[0], EF::MaxPool3dFuncOptions(2).stride(2).dilation(2).ceil_mode(true));
       },
       [](const TV& v) { return TF::max_pool3d(v[0], TF::MaxPool3dFuncOptions(2).stride(2).dilation(2).ceil_mode(true)); },
       {R({1, 2, 6, 7, 8})}},
      {"avg_pool3d", [](const EV& v) { return EF::avg_pool3d(v[0], EF::AvgPool3dFuncOptions(3).stride(2).padding(1)); },
       [](const TV& v) { return TF::avg_pool3d(v[0], TF::AvgPool3dFuncOptions(3).stride(2).padding(1)); },
       {R({2, 3, 5, 6, 7})}},
      {"avg_pool3d ceil no-pad-count", [](const EV& v) {
         return EF::avg_pool3d(v[0], EF::AvgPool3dFuncOptions(3).stride(2).padding(1).ceil_mode(true).count_include_pad(false));
       },
       [](const TV& v) {
         return TF::avg_pool3d(v[0], TF::AvgPool3dFuncOptions(3).stride(2).padding(1).ceil_mode(true).count_include_pad(false));
       },
       {R({1, 2, 6, 6, 6})}},
      {"adaptive_avg_pool1d", [](const EV& v) { return EF::adaptive_avg_pool1d(v[0], EF::AdaptiveAvgPool1dFuncOptions(3)); },
       [](const TV& v) { return TF::adaptive_avg_pool1d(v[0], TF::AdaptiveAvgPool1dFuncOptions(3)); }, {RT({2, 3, 7})}},
      {"adaptive_avg_pool3d", [](const EV& v) { return EF::adaptive_avg_pool3d(v[0], EF::AdaptiveAvgPool3dFuncOptions({2, 3, 4})); },
       [](const TV& v) { return TF::adaptive_avg_pool3d(v[0], TF::AdaptiveAvgPool3dFuncOptions({2, 3, 4})); },
       {R({2, 3, 5, 7, 9})}},
      {"adaptive_max_pool2d", [](const EV& v) { return EF::adaptive_max_pool2d(v[0], EF::AdaptiveMaxPool2dFuncOptions({3, 2})); },
       [](const TV& v) { return TF::adaptive_max_pool2d(v[0], TF::AdaptiveMaxPool2dFuncOptions({3, 2})); },
       {RT({2, 3, 7, 5})}},
      {"lp_pool2d", [](const EV& v) { return EF::lp_pool2d(v[0], EF::LPPool2dFuncOptions(2, 2).stride(1)); },
       [](const TV& v) { return TF::lp_pool2d(v[0], TF::LPPool2dFuncOptions(2, 2).stride(1)); }, {R({2, 3, 5, 4})}},
      {"lp_pool1d", [](const EV& v) { return EF::lp_pool1d(v[0], EF::LPPool1dFuncOptions(3, 2)); },
       [](const TV& v) { return TF::lp_pool1d(v[0], TF::LPPool1dFuncOptions(3, 2)); }, {R({2, 3, 6}).abs() + 0.1}},
  });
}

TEST(NNExtraParity, ShapesAndPadding) {
  run({
      {"pad circular", [](const EV& v) { return EF::pad(v[0], EF::PadFuncOptions({1, 2, 2, 1}).mode(ember::kCircular)); },
       [](const TV& v) { return TF::pad(v[0], TF::PadFuncOptions({1, 2, 2, 1}).mode(torch::kCircular)); },
       {RT({2, 3, 4, 5})}},
      {"pad reflect", [](const EV& v) { return EF::pad(v[0], EF::PadFuncOptions({1, 2}).mode(ember::kReflect)); },
       [](const TV& v) { return TF::pad(v[0], TF::PadFuncOptions({1, 2}).mode(torch::kReflect)); }, {R({2, 3, 5})}},
      {"unfold", [](const EV& v) { return EF::unfold(v[0], EF::UnfoldFuncOptions({2, 3}).padding(1).stride(2).dilation({1, 2})); },
       [](const TV& v) { return TF::unfold(v[0], TF::UnfoldFuncOptions({2, 3}).padding(1).stride(2).dilation({1, 2})); },
       {RT({2, 3, 6, 7})}},
      {"fold", [](const EV& v) { return EF::fold(v[0], EF::FoldFuncOptions({5, 6}, {2, 2}).padding(1).stride({2, 1})); },
       [](const TV& v) { return TF::fold(v[0], TF::FoldFuncOptions({5, 6}, {2, 2}).padding(1).stride({2, 1})); },
       {R({2, 12, 21})}},
      {"pixel_shuffle", [](const EV& v) { return EF::pixel_shuffle(v[0], 2); },
       [](const TV& v) { return TF::pixel_shuffle(v[0], 2); }, {R({2, 8, 3, 4})}},
      {"pixel_unshuffle", [](const EV& v) { return EF::pixel_unshuffle(v[0], 2); },
       [](const TV& v) { return TF::pixel_unshuffle(v[0], 2); }, {R({2, 3, 4, 6})}},
      {"interpolate bilinear", [](const EV& v) {
         return EF::interpolate(v[0], EF::InterpolateFuncOptions().size(std::vector<int64_t>{5, 7}).mode(ember::kBilinear).align_corners(false));
       },
       [](const TV& v) {
         return TF::interpolate(v[0], TF::InterpolateFuncOptions().size(std::vector<int64_t>{5, 7}).mode(torch::kBilinear).align_corners(false));
       },
       {RT({2, 3, 4, 3})}},
      {"interpolate trilinear align", [](const EV& v) {
         return EF::interpolate(v[0], EF::InterpolateFuncOptions().scale_factor(std::vector<double>{2, 1.5, 0.5}).mode(ember::kTrilinear).align_corners(true));
       },
       [](const TV& v) {
         return TF::interpolate(v[0], TF::InterpolateFuncOptions().scale_factor(std::vector<double>{2, 1.5, 0.5}).mode(torch::kTrilinear).align_corners(true));
       },
       {R({1, 2, 3, 4, 6})}},
      {"interpolate nearest", [](const EV& v) {
         return EF::interpolate(v[0], EF::InterpolateFuncOptions().scale_factor(std::vector<double>{1.7}));
       },
       [](const TV& v) {
         return TF::interpolate(v[0], TF::InterpolateFuncOptions().scale_factor(std::vector<double>{1.7}).mode(torch::kNearest));
       },
       {R({2, 3, 5})}},
      {"interpolate nearest-exact size", [](const EV& v) {
         return EF::interpolate(v[0], EF::InterpolateFuncOptions().size(std::vector<int64_t>{7, 3}).mode(ember::kNearestExact));
       },
       [](const TV& v) {
         return TF::interpolate(v[0], TF::InterpolateFuncOptions().size(std::vector<int64_t>{7, 3}).mode(torch::kNearestExact));
       },
       {RT({2, 3, 4, 5})}},
      {"interpolate nearest-exact scale", [](const EV& v) {
         return EF::interpolate(v[0], EF::InterpolateFuncOptions().scale_factor(std::vector<double>{1.7}).mode(ember::kNearestExact));
       },
       [](const TV& v) {
         return TF::interpolate(v[0], TF::InterpolateFuncOptions().scale_factor(std::vector<double>{1.7}).mode(torch::kNearestExact));
       },
       {R({2, 3, 5})}},
      {"affine_grid", [](const EV& v) { return EF::affine_grid(v[0], {2, 3, 4, 5}); },
       [](const TV& v) { return TF::affine_grid(v[0], {2, 3, 4, 5}); }, {R({2, 2, 3})}},
  });
}

ET interpolate_aa(const ET& x, const std::string& mode, std::vector<int64_t> size, std::vector<double> scale, bool align) {
  auto o = EF::InterpolateFuncOptions().antialias(true).align_corners(align);
  if (mode == "bicubic") o.mode(ember::kBicubic); else o.mode(ember::kBilinear);
  if (!size.empty()) o.size(size); else o.scale_factor(scale);
  return EF::interpolate(x, o);
}
TT interpolate_aa(const TT& x, const std::string& mode, std::vector<int64_t> size, std::vector<double> scale, bool align) {
  auto o = TF::InterpolateFuncOptions().antialias(true).align_corners(align);
  if (mode == "bicubic") o.mode(torch::kBicubic); else o.mode(torch::kBilinear);
  if (!size.empty()) o.size(size); else o.scale_factor(scale);
  return TF::interpolate(x, o);
}

// Antialiased bilinear / bicubic (Note [Antialiased resampling]): downsampling by integer and
// fractional factors, upsampling, align_corners, scale factors; forward and backward.
TEST(NNExtraParity, AntialiasedInterpolation) {
  std::vector<Case> cases;
  struct Geo {
    std::vector<int64_t> size;
    std::vector<double> scale;
    bool align;
  };
  const std::vector<Geo> geos = {{{5, 4}, {}, false}, {{8, 3}, {}, true}, {{23, 20}, {}, false},
                                 {{}, {0.3, 0.45}, false}, {{}, {1.6, 1.3}, false}, {{1, 6}, {}, true}};
  for (const std::string mode : {"bilinear", "bicubic"}) {
    for (const Geo& g : geos) {
      std::ostringstream name;
      name << "interpolate " << mode << " antialias size " << g.size.size() << " scale " << g.scale.size()
           << (g.align ? " align" : "");
      cases.push_back({name.str(), [mode, g](const EV& v) { return interpolate_aa(v[0], mode, g.size, g.scale, g.align); },
                       [mode, g](const TV& v) { return interpolate_aa(v[0], mode, g.size, g.scale, g.align); },
                       {RT({2, 3, 17, 13})}});
    }
  }
  run(cases);
  // float32 through the compat entry points
  const ET xf = ember::rand({2, 3, 32, 32});
  const TT tf = torch::from_blob(xf.contiguous().data_ptr<float>(), {2, 3, 32, 32}).clone();
  const ET e1 = ember::aten::native::_upsample_bilinear2d_aa(xf, std::vector<int64_t>{8, 10}, false, std::nullopt);
  const TT t1 = torch::nn::functional::interpolate(
      tf, TF::InterpolateFuncOptions().size(std::vector<int64_t>{8, 10}).mode(torch::kBilinear).align_corners(false).antialias(true));
  const ET e2 = ember::aten::native::_upsample_bicubic2d_aa(xf, std::nullopt, true, std::vector<double>{0.4, 0.4});
  const TT t2 = torch::nn::functional::interpolate(
      tf, TF::InterpolateFuncOptions().scale_factor(std::vector<double>{0.4, 0.4}).mode(torch::kBicubic).align_corners(true).antialias(true));
  for (const auto& [e, t] : {std::pair{e1, t1}, std::pair{e2, t2}}) {
    ASSERT_EQ(e.sizes().vec(), t.sizes().vec());
    const TT diff = torch::from_blob(e.contiguous().data_ptr<float>(), t.sizes()).sub(t).abs().max();
    EXPECT_LT(diff.item<float>(), 1e-5);
  }
  // Only bilinear and bicubic on 4-D input.
  try {
    EF::interpolate(R({1, 2, 9}), EF::InterpolateFuncOptions().size(std::vector<int64_t>{4}).mode(ember::kLinear).antialias(true));
    ADD_FAILURE() << "linear with antialias did not throw";
  } catch (const ember::Error& err) {
    EXPECT_NE(std::string(err.what()).find("Anti-alias option is only supported for bilinear and bicubic"), std::string::npos)
        << err.what();
  }
}

TEST(NNExtraParity, NormsAndDistances) {
  run({
      {"instance_norm", [](const EV& v) {
         return EF::instance_norm(v[0], EF::InstanceNormFuncOptions().weight(v[1]).bias(v[2]).eps(1e-3));
       },
       [](const TV& v) { return TF::instance_norm(v[0], TF::InstanceNormFuncOptions().weight(v[1]).bias(v[2]).eps(1e-3)); },
       {R({2, 3, 4, 5}), R({3}), R({3})}},
      {"local_response_norm", [](const EV& v) { return EF::local_response_norm(v[0], EF::LocalResponseNormFuncOptions(3)); },
       [](const TV& v) { return TF::local_response_norm(v[0], TF::LocalResponseNormFuncOptions(3)); },
       {R({2, 5, 4, 3})}},
      {"normalize", [](const EV& v) { return EF::normalize(v[0], EF::NormalizeFuncOptions().p(1).dim(-1)); },
       [](const TV& v) { return TF::normalize(v[0], TF::NormalizeFuncOptions().p(1).dim(-1)); }, {RT({3, 4})}},
      {"cosine_similarity", [](const EV& v) { return EF::cosine_similarity(v[0], v[1], EF::CosineSimilarityFuncOptions().dim(1)); },
       [](const TV& v) { return TF::cosine_similarity(v[0], v[1], TF::CosineSimilarityFuncOptions().dim(1)); },
       {R({4, 5}), RT({4, 5})}},
      {"pairwise_distance", [](const EV& v) { return EF::pairwise_distance(v[0], v[1], EF::PairwiseDistanceFuncOptions().p(3)); },
       [](const TV& v) { return TF::pairwise_distance(v[0], v[1], TF::PairwiseDistanceFuncOptions().p(3)); },
       {R({4, 5}), R({4, 5})}},
      {"pdist", [](const EV& v) { return EF::pdist(v[0], 2); }, [](const TV& v) { return TF::pdist(v[0], 2); },
       {R({5, 3})}},
  });
}

TEST(NNExtraParity, Losses) {
  ET x = R({4, 5}), y = R({4, 5});
  ET sign = ember::tensor({1.0, -1.0, 1.0, -1.0}, ember::TensorOptions(ember::kFloat64));
  ET cls = ember::tensor(std::vector<int64_t>{1, 0, 4, 2});
  ET ml = ember::tensor(std::vector<int64_t>{3, 0, -1, 1, 2, 1, 4, -1, 0, 0, 2, -1, 0, 0, 0, 4, 1, 2, 3, 0}).view({4, 5});
  ET bin = (R({4, 5}).gt(0)).to(ember::kFloat64);
  ET mw = R({5}).abs();
  ET py = y.abs() * 3, px = y.abs();
  TT tsign = parity::to_torch(sign), tbin = parity::to_torch(bin), tpy = parity::to_torch(py), tpx = parity::to_torch(px);
  run({
      {"hinge_embedding", [=](const EV& v) { return EF::hinge_embedding_loss(v[0], sign, EF::HingeEmbeddingLossFuncOptions().margin(0.5)); },
       [=](const TV& v) { return TF::hinge_embedding_loss(v[0], tsign, TF::HingeEmbeddingLossFuncOptions().margin(0.5)); },
       {R({4})}},
      {"multi_margin", [mw](const EV& v) { return EF::multi_margin_loss(v[0], v[1], EF::MultiMarginLossFuncOptions().p(2).margin(0.7).weight(mw)); },
       [mw](const TV& v) { return TF::multi_margin_loss(v[0], v[1], TF::MultiMarginLossFuncOptions().p(2).margin(0.7).weight(parity::to_torch(mw))); },
       {x, cls}},
      {"cosine_embedding", [=](const EV& v) {
         return EF::cosine_embedding_loss(v[0], v[1], sign, EF::CosineEmbeddingLossFuncOptions().margin(0.2));
       },
       [=](const TV& v) { return TF::cosine_embedding_loss(v[0], v[1], tsign, TF::CosineEmbeddingLossFuncOptions().margin(0.2)); },
       {x, y}},
      {"multilabel_margin", [=](const EV& v) { return EF::multilabel_margin_loss(v[0], v[1]); },
       [=](const TV& v) { return TF::multilabel_margin_loss(v[0], v[1]); }, {x, ml}},
      {"soft_margin", [=](const EV& v) { return EF::soft_margin_loss(v[0], sign, EF::SoftMarginLossFuncOptions(ember::kSum)); },
       [=](const TV& v) { return TF::soft_margin_loss(v[0], tsign, TF::SoftMarginLossFuncOptions(torch::kSum)); },
       {R({4})}},
      {"multilabel_soft_margin", [=](const EV& v) {
         return EF::multilabel_soft_margin_loss(v[0], bin, EF::MultilabelSoftMarginLossFuncOptions().weight(mw).reduction(ember::kNone));
       },
       [=](const TV& v) {
         return TF::multilabel_soft_margin_loss(v[0], tbin, TF::MultilabelSoftMarginLossFuncOptions().weight(parity::to_torch(mw)).reduction(torch::kNone));
       },
       {x}},
      {"triplet_margin swap", [=](const EV& v) { return EF::triplet_margin_loss(v[0], v[1], v[2], EF::TripletMarginLossFuncOptions().swap(true).p(1)); },
       [=](const TV& v) { return TF::triplet_margin_loss(v[0], v[1], v[2], TF::TripletMarginLossFuncOptions().swap(true).p(1)); },
       {x, y, R({4, 5})}},
      {"triplet_margin_with_distance", [=](const EV& v) { return EF::triplet_margin_with_distance_loss(v[0], v[1], v[2]); },
       [=](const TV& v) { return TF::triplet_margin_with_distance_loss(v[0], v[1], v[2]); }, {x, y, R({4, 5})}},
      {"poisson_nll full", [=](const EV& v) {
         return EF::poisson_nll_loss(v[0], py, EF::PoissonNLLLossFuncOptions().full(true));
       },
       [=](const TV& v) { return TF::poisson_nll_loss(v[0], tpy, TF::PoissonNLLLossFuncOptions().full(true)); },
       {x}},
      {"poisson_nll no log", [=](const EV& v) {
         return EF::poisson_nll_loss(v[0], px, EF::PoissonNLLLossFuncOptions().log_input(false));
       },
       [=](const TV& v) { return TF::poisson_nll_loss(v[0], tpx, TF::PoissonNLLLossFuncOptions().log_input(false)); },
       {x.abs() + 0.1}},
      {"margin_ranking", [=](const EV& v) { return EF::margin_ranking_loss(v[0], v[1], sign, EF::MarginRankingLossFuncOptions().margin(0.3)); },
       [=](const TV& v) { return TF::margin_ranking_loss(v[0], v[1], tsign, TF::MarginRankingLossFuncOptions().margin(0.3)); },
       {R({4}), R({4})}},
  });
}

TEST(NNExtraParity, EmbeddingBag) {
  ET idx = ember::tensor(std::vector<int64_t>{1, 2, 4, 5, 4, 3, 2, 9});
  ET off = ember::tensor(std::vector<int64_t>{0, 3, 3, 6});
  for (std::string mode : {"sum", "mean", "max"}) {
    parity::check_grad_parity(
        "embedding_bag " + mode,
        [&](const EV& v) { return EF::embedding_bag(v[1], v[0], EF::EmbeddingBagFuncOptions().offsets(v[2]).mode(mode)); },
        [&](const TV& v) {
          TF::EmbeddingBagFuncOptions o;
          o.offsets(v[2]);
          if (mode == "sum") o.mode(torch::kSum);
          if (mode == "mean") o.mode(torch::kMean);
          if (mode == "max") o.mode(torch::kMax);
          return TF::embedding_bag(v[1], v[0], o);
        },
        {R({10, 3}), idx, off});
  }
}

// scale_grad_by_freq: each weight row's gradient divided by its index's count in the batch.
TEST(NNExtraParity, EmbeddingScaleGradByFreq) {
  ET idx = ember::tensor(std::vector<int64_t>{1, 2, 4, 1, 4, 1, 9, 0}).reshape({2, 4});
  parity::check_grad_parity(
      "embedding scale_grad_by_freq",
      [](const EV& v) {
        return EF::embedding(v[1], v[0], EF::EmbeddingFuncOptions().scale_grad_by_freq(true).padding_idx(0));
      },
      [](const TV& v) {
        return TF::embedding(v[1], v[0], TF::EmbeddingFuncOptions().scale_grad_by_freq(true).padding_idx(0));
      },
      {R({10, 3}), idx});
}

// The libtorch-shaped free functions of ember/compat/aten.h (torch::elu with scale and
// input_scale, torch::max(a, b), torch::layer_norm / group_norm with positional arguments).
TEST(NNExtraParity, AtenFunctions) {
  ET x = RT({3, 4, 5});
  run({
      {"aten elu", [](const EV& v) { return ember::aten::elu(v[0], 0.7, 1.3, 0.5); },
       [](const TV& v) { return torch::elu(v[0], 0.7, 1.3, 0.5); }, {x}},
      {"aten max", [](const EV& v) { return ember::aten::max(v[0], v[1]); },
       [](const TV& v) { return torch::max(v[0], v[1]); }, {x, R({4, 5})}},
      {"aten min", [](const EV& v) { return ember::aten::min(v[0], v[1]); },
       [](const TV& v) { return torch::min(v[0], v[1]); }, {x, R({4, 5})}},
      {"aten layer_norm", [](const EV& v) { return ember::aten::layer_norm(v[0], {5}, v[1], v[2], 2e-5); },
       [](const TV& v) { return torch::layer_norm(v[0], {5}, v[1], v[2], 2e-5); }, {x, R({5}), R({5})}},
      {"aten group_norm", [](const EV& v) { return ember::aten::group_norm(v[0], 2, v[1], v[2], 2e-5); },
       [](const TV& v) { return torch::group_norm(v[0], 2, v[1], v[2], 2e-5); }, {R({2, 4, 3}), R({4}), R({4})}},
      {"aten pairwise_distance", [](const EV& v) { return ember::aten::pairwise_distance(v[0], v[1], 1.5); },
       [](const TV& v) { return torch::pairwise_distance(v[0], v[1], 1.5); }, {R({4, 5}), RT({4, 5})}},
      {"operator%", [](const EV& v) { return v[0] % 0.7; }, [](const TV& v) { return torch::remainder(v[0], 0.7); },
       {x}},
  });
  ET w = R({10, 3});
  ET idx = ember::tensor(std::vector<int64_t>{1, 2, 4, 5, 4, 3, 2, 9});
  ET off = ember::tensor(std::vector<int64_t>{0, 3, 3, 6});
  for (int64_t mode : {0, 1, 2}) {
    parity::check_grad_parity(
        "aten embedding_bag " + std::to_string(mode),
        [mode](const EV& v) { return std::get<0>(ember::aten::embedding_bag(v[0], v[1], v[2], false, mode)); },
        [mode](const TV& v) { return std::get<0>(torch::embedding_bag(v[0], v[1], v[2], false, mode)); },
        {w, idx, off});
  }
}


// Convolutions with padding_mode reflect / replicate / circular (the module pads the input
// by that mode, then convolves): forward and input gradient against libtorch's modules.
template <typename EM, typename TM, typename TOptions>
void check_padding_mode(const std::string& what, EM em, TOptions to, const std::string& mode, const ET& x) {
  if (mode == "reflect") to.padding_mode(torch::kReflect);
  if (mode == "replicate") to.padding_mode(torch::kReplicate);
  if (mode == "circular") to.padding_mode(torch::kCircular);
  TM tm(to);
  em->to(ember::kFloat64);
  tm->to(torch::kFloat64);
  {
    torch::NoGradGuard no_grad;
    tm->weight.copy_(parity::to_torch(em->weight));
    tm->bias.copy_(parity::to_torch(em->bias));
  }
  parity::check_grad_parity(
      what + " padding_mode " + mode, [&](const EV& v) { return em(v[0]); }, [&](const TV& v) { return tm(v[0]); },
      {x});
}

TEST(NNExtraParity, ConvPaddingModes) {
  for (const std::string mode : {"reflect", "replicate", "circular"}) {
    check_padding_mode<ember::nn::Conv2d, torch::nn::Conv2d>(
        "conv2d", ember::nn::Conv2d(ember::nn::Conv2dOptions(3, 4, 3).padding(1).padding_mode(mode)),
        torch::nn::Conv2dOptions(3, 4, 3).padding(1), mode, RT({2, 3, 6, 5}));
    check_padding_mode<ember::nn::Conv1d, torch::nn::Conv1d>(
        "conv1d", ember::nn::Conv1d(ember::nn::Conv1dOptions(3, 2, 2).padding(1).padding_mode(mode)),
        torch::nn::Conv1dOptions(3, 2, 2).padding(1), mode, R({2, 3, 7}));
  }
}


TEST(NNExtraParity, GridSampleModesAndPaddings) {
  // Grid values beyond [-1, 1] too, so every padding mode has work to do.
  ET grid = R({2, 3, 6, 2}) * 0.9;
  ET input = RT({2, 3, 5, 4});
  for (const bool align : {false, true}) {
    for (const std::string padding : {"zeros", "border", "reflection"}) {
      for (const std::string mode : {"bilinear", "bicubic"}) {
        const std::string name = mode + " " + padding + (align ? " aligned" : "");
        auto eopt = EF::GridSampleFuncOptions().mode(mode).padding_mode(padding).align_corners(align);
        // libtorch 1.13's F::grid_sample options have no bicubic: call ATen's grid_sampler
        // (interpolation 0 bilinear, 2 bicubic; padding 0 zeros, 1 border, 2 reflection).
        const int64_t tmode = mode == "bicubic" ? 2 : 0;
        const int64_t tpad = padding == "zeros" ? 0 : padding == "border" ? 1 : 2;
        run({{name, [eopt](const EV& v) { return EF::grid_sample(v[0], v[1], eopt); },
              [tmode, tpad, align](const TV& v) { return torch::grid_sampler(v[0], v[1], tmode, tpad, align); },
              {input, grid}}});
      }
      // nearest: no gradient to the grid, so it is a constant here.
      auto eopt = EF::GridSampleFuncOptions().mode("nearest").padding_mode(padding).align_corners(align);
      auto topt = TF::GridSampleFuncOptions().mode(torch::kNearest).align_corners(align);
      if (padding == "border") topt.padding_mode(torch::kBorder);
      if (padding == "reflection") topt.padding_mode(torch::kReflection);
      TT tgrid = parity::to_torch(grid);
      run({{"nearest " + padding + (align ? " aligned" : ""),
            [eopt, grid](const EV& v) { return EF::grid_sample(v[0], grid, eopt); },
            [topt, tgrid](const TV& v) { return TF::grid_sample(v[0], tgrid, topt); }, {input}}});
    }
  }
  // Default options are bilinear, zeros, align_corners false.
  run({{"defaults", [](const EV& v) { return EF::grid_sample(v[0], v[1]); },
        [](const TV& v) { return TF::grid_sample(v[0], v[1], TF::GridSampleFuncOptions().align_corners(false)); },
        {input, grid}}});
  try {
    EF::grid_sample(R({1, 2, 3, 3, 3}), R({1, 2, 2, 2, 3}));
    ADD_FAILURE() << "5-D input should be refused";
  } catch (const ember::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[grid_sample]"), std::string::npos) << e.what();
  }
}

TEST(NNExtraParity, BicubicInterpolation) {
  ET x = RT({2, 3, 5, 7});
  for (const bool align : {false, true}) {
    run({{std::string("bicubic size") + (align ? " aligned" : ""),
          [align](const EV& v) {
            return EF::interpolate(v[0], EF::InterpolateFuncOptions().size(std::vector<int64_t>{9, 4}).mode("bicubic").align_corners(align));
          },
          [align](const TV& v) {
            return TF::interpolate(v[0], TF::InterpolateFuncOptions().size(std::vector<int64_t>{9, 4}).mode(torch::kBicubic).align_corners(align));
          },
          {x}},
         {std::string("bicubic scale") + (align ? " aligned" : ""),
          [align](const EV& v) {
            return EF::interpolate(v[0], EF::InterpolateFuncOptions().scale_factor(std::vector<double>{1.5, 0.6}).mode("bicubic").align_corners(align));
          },
          [align](const TV& v) {
            return TF::interpolate(v[0], TF::InterpolateFuncOptions().scale_factor(std::vector<double>{1.5, 0.6}).mode(torch::kBicubic).align_corners(align));
          },
          {x}}});
  }
}


TEST(NNExtraParity, CTCLoss) {
  const int64_t T = 12, N = 3, C = 6;
  ET logits = RT({T, N, C});  // non-contiguous
  ET padded = ember::tensor(std::vector<int64_t>{1, 2, 2, 5, 3, 3, 3, 0, 4, 1, 0, 0}).view({N, 4});
  ET concat = ember::tensor(std::vector<int64_t>{1, 2, 2, 5, 3, 3, 3, 4, 1});
  ET in_len = ember::tensor(std::vector<int64_t>{12, 9, 7});
  ET tg_len = ember::tensor(std::vector<int64_t>{4, 3, 2});
  using Red = ember::nn::Reduction;
  for (const ET& targets : {padded, concat}) {
    for (int r = 0; r < 3; ++r) {
      const std::string name = std::string(targets.dim() == 2 ? "padded" : "concatenated") + " reduction " +
                               std::to_string(r);
      auto eopt = EF::CTCLossFuncOptions().reduction(r == 0 ? Red::None : r == 1 ? Red::Sum : Red::Mean);
      auto topt = TF::CTCLossFuncOptions();
      if (r == 0) topt.reduction(torch::kNone);
      if (r == 1) topt.reduction(torch::kSum);
      run({{name, [eopt](const EV& v) { return EF::ctc_loss(v[0].log_softmax(2), v[1], v[2], v[3], eopt); },
            [topt](const TV& v) { return TF::ctc_loss(v[0].log_softmax(2), v[1], v[2], v[3], topt); },
            {logits, targets, in_len, tg_len}}});
    }
  }
  // A leaf log_probs gets PyTorch's gradient directly; blank elsewhere than 0.
  ET lp = R({T, N, C}).log_softmax(2);
  ET t5 = ember::tensor(std::vector<int64_t>{1, 2, 2, 0, 3, 3, 3, 4, 1});
  run({{"blank 5, leaf log_probs", [](const EV& v) { return EF::ctc_loss(v[0], v[1], v[2], v[3], EF::CTCLossFuncOptions().blank(5)); },
        [](const TV& v) { return TF::ctc_loss(v[0], v[1], v[2], v[3], TF::CTCLossFuncOptions().blank(5)); },
        {lp, t5, in_len, tg_len}}});
  // Too short an input for its target: inf, or 0 with zero_infinity (and a zero gradient).
  ET short_len = ember::tensor(std::vector<int64_t>{12, 2, 7});
  run({{"zero_infinity", [](const EV& v) {
          return EF::ctc_loss(v[0].log_softmax(2), v[1], v[2], v[3], EF::CTCLossFuncOptions().zero_infinity(true).reduction(ember::nn::Reduction::None));
        },
        [](const TV& v) {
          return TF::ctc_loss(v[0].log_softmax(2), v[1], v[2], v[3], TF::CTCLossFuncOptions().zero_infinity(true).reduction(torch::kNone));
        },
        {logits, padded, short_len, tg_len}}});
  // Unbatched: [T, C] with a 1-D target.
  run({{"unbatched", [](const EV& v) { return EF::ctc_loss(v[0].log_softmax(1), v[1], v[2], v[3]); },
        [](const TV& v) { return TF::ctc_loss(v[0].log_softmax(1), v[1], v[2], v[3]); },
        {R({T, C}), ember::tensor(std::vector<int64_t>{2, 3, 3}), ember::tensor(std::vector<int64_t>{10}).view({}),
         ember::tensor(std::vector<int64_t>{3}).view({})}}});
  auto err = [&](auto f) {
    try {
      f();
    } catch (const ember::Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(err([&] { EF::ctc_loss(lp, padded, in_len.to(ember::kFloat32), tg_len); }).find("input_lengths must be integral"),
            std::string::npos);
  EXPECT_NE(err([&] { EF::ctc_loss(lp, padded.narrow(1, 0, 3), in_len, tg_len); })
                .find("Expected tensor to have size at least 4 at dimension 1"),
            std::string::npos);
  EXPECT_NE(err([&] { EF::ctc_loss(lp, padded, ember::tensor(std::vector<int64_t>{13, 9, 7}), tg_len); })
                .find("[ctc_loss]"),
            std::string::npos);
}

TEST(NNExtraParity, AdaptiveLogSoftmaxWithLoss) {
  ember::nn::AdaptiveLogSoftmaxWithLoss e(ember::nn::AdaptiveLogSoftmaxWithLossOptions(8, 10, {4, 8}).div_value(2.).head_bias(true));
  torch::nn::AdaptiveLogSoftmaxWithLoss t(torch::nn::AdaptiveLogSoftmaxWithLossOptions(8, 10, {4, 8}).div_value(2.).head_bias(true));
  auto ep = e->named_parameters();
  auto tp = t->named_parameters();
  ASSERT_EQ(ep.keys(), tp.keys());
  {
    torch::NoGradGuard ng;
    for (auto& item : tp) item.value().copy_(parity::to_torch(ep[item.key()]));
  }
  ET x = ember::randn({8, 7}).t();  // [7, 8], non-contiguous
  ET y = ember::tensor(std::vector<int64_t>{0, 3, 4, 7, 8, 9, 2});
  x.requires_grad_(true);
  TT tx = parity::to_torch(x).requires_grad_(true);
  auto eo = e(x, y);
  auto to = t(tx, parity::to_torch(y));
  parity::expect_tensor_close(eo.output, to.output, "output", 1e-5, 1e-6);
  EXPECT_NEAR(eo.loss, to.loss, 1e-5);
  eo.output.sum().backward();
  to.output.sum().backward();
  parity::expect_tensor_close(x.grad(), tx.grad(), "input grad", 1e-4, 1e-6);
  for (auto& item : t->named_parameters()) {
    parity::expect_tensor_close(ep[item.key()].grad(), item.value().grad(), "grad of " + item.key(), 1e-4, 1e-6);
  }
  parity::expect_tensor_close(e->log_prob(x.detach()), t->log_prob(tx.detach()), "log_prob", 1e-5, 1e-6);
  parity::expect_tensor_close(e->predict(x.detach()), t->predict(tx.detach()), "predict", 0, 0);
  std::ostringstream os;
  os << *e;
  EXPECT_NE(os.str().find("(head): torch::nn::Linear(in_features=8, out_features=6, bias=true)"), std::string::npos)
      << os.str();
  try {
    e(x, ember::tensor(std::vector<int64_t>{0, 3, 4, 7, 8, 9, 10}));
    ADD_FAILURE() << "out-of-range target accepted";
  } catch (const ember::Error& err) {
    EXPECT_NE(std::string(err.what()).find("Target values should be in [0, 9]"), std::string::npos) << err.what();
  }
}

}  // namespace nn_extra_parity
