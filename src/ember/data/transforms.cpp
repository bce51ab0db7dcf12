#include "ember/data/transforms.h"

#include <cmath>

#include "ember/core/check.h"
#include "ember/core/op_scope.h"
#include "ember/data/sample_rng.h"
#include "ember/ops/creation.h"
#include "ember/ops/join.h"

namespace ember::data::transforms {

namespace {

// (x - mean) / std in T, the same arithmetic as torchvision's sub_(mean).div_(std), so
// results match PyTorch bit for bit.
template <typename T>
void normalize_loop(const T* in, T* out, int64_t channels, int64_t plane, const std::vector<double>& mean,
                    const std::vector<double>& std) {
  for (int64_t c = 0; c < channels; ++c) {
    const size_t k = mean.size() == 1 ? 0 : static_cast<size_t>(c);
    const T m = static_cast<T>(mean[k]);
    const T s = static_cast<T>(std[k]);
    const T* src = in + c * plane;
    T* dst = out + c * plane;
    for (int64_t i = 0; i < plane; ++i) dst[i] = (src[i] - m) / s;
  }
}

}  // namespace

Normalize::Normalize(std::vector<double> mean, std::vector<double> std) : mean_(std::move(mean)), std_(std::move(std)) {
  EMBER_CHECK(!mean_.empty() && mean_.size() == std_.size(), "[Normalize] mean and std must have the same, non-zero length; got ",
              mean_.size(), " and ", std_.size());
  for (double s : std_) {
    EMBER_CHECK(s != 0.0 && std::isfinite(s), "[Normalize] std must be finite and non-zero, got ", s);
  }
}

Tensor Normalize::operator()(const Tensor& x) const {
  OpScope scope("Normalize", {&x});
  EMBER_CHECK(x.defined() && x.is_floating_point() && x.dim() >= 1,
              "[Normalize] expected a floating-point tensor [C, ...], got ",
              x.defined() ? std::string(dtype_name(x.dtype())) : std::string("an undefined tensor"),
              x.defined() ? " of dim " + std::to_string(x.dim()) : std::string());
  const int64_t channels = x.size(0);
  EMBER_CHECK(mean_.size() == 1 || static_cast<int64_t>(mean_.size()) == channels, "[Normalize] got ",
              mean_.size(), " means/stds for a tensor with ", channels, " channels (sizes ", x.sizes(),
              "); give one value per channel or a single value");
  Tensor in = x;
  if (x.dtype() != kFloat32 && x.dtype() != kFloat64) in = x.to(kFloat32);
  in = in.contiguous();
  Tensor out = empty(in.sizes(), in.options());
  const int64_t plane = channels == 0 ? 0 : in.numel() / channels;
  if (in.dtype() == kFloat32) {
    normalize_loop(in.data_ptr<float>(), out.data_ptr<float>(), channels, plane, mean_, std_);
  } else {
    normalize_loop(in.data_ptr<double>(), out.data_ptr<double>(), channels, plane, mean_, std_);
  }
  return x.dtype() == out.dtype() ? out : out.to(x.dtype());
}

RandomHorizontalFlip::RandomHorizontalFlip(double p) : p_(p) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "[RandomHorizontalFlip] p must be in [0, 1], got ", p);
}

Tensor RandomHorizontalFlip::operator()(const Tensor& x) const {
  OpScope scope("RandomHorizontalFlip", {&x});
  EMBER_CHECK(x.defined() && x.dim() >= 1, "[RandomHorizontalFlip] expected a tensor with at least one dim");
  // Always draw, so the stream position of later transforms does not depend on this outcome.
  const bool flip_it = sample_uniform() < p_;
  return flip_it ? flip(x, {-1}) : x;
}

RandomCrop::RandomCrop(std::vector<int64_t> size, int64_t padding, double fill)
    : size_(std::move(size)), padding_(padding), fill_(fill) {
  if (size_.size() == 1) size_.push_back(size_[0]);
  EMBER_CHECK(size_.size() == 2 && size_[0] > 0 && size_[1] > 0,
              "[RandomCrop] size must be {h, w} (or {s}) with positive values");
  EMBER_CHECK(padding_ >= 0, "[RandomCrop] padding must be non-negative, got ", padding_);
}

Tensor RandomCrop::operator()(const Tensor& x) const {
  OpScope scope("RandomCrop", {&x});
  EMBER_CHECK(x.defined() && x.dim() >= 2, "[RandomCrop] expected a tensor [..., H, W] with at least 2 dims");
  Tensor padded = padding_ > 0 ? pad(x, {padding_, padding_, padding_, padding_}, "constant", fill_) : x;
  const int64_t h = padded.size(-2), w = padded.size(-1);
  EMBER_CHECK(h >= size_[0] && w >= size_[1], "[RandomCrop] crop size [", size_[0], ", ", size_[1],
              "] is larger than the padded input [", h, ", ", w, "] (input sizes ", x.sizes(),
              ", padding ", padding_, "); use a smaller size or more padding");
  const int64_t top = sample_randint(0, h - size_[0]);
  const int64_t left = sample_randint(0, w - size_[1]);
  return padded.narrow(-2, top, size_[0]).narrow(-1, left, size_[1]).contiguous();
}

Compose::Compose(std::vector<Transform> transforms) : transforms_(std::move(transforms)) {
  for (const Transform& t : transforms_) EMBER_CHECK(static_cast<bool>(t), "[Compose] got an empty transform");
}

Tensor Compose::operator()(const Tensor& x) const {
  Tensor y = x;
  for (const Transform& t : transforms_) y = t(y);
  return y;
}

}  // namespace ember::data::transforms
