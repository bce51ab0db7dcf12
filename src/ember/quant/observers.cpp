// Observers for static quantization (Note [Static quantization scheme], quant.h).

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

#include "ember/core/check.h"
#include "ember/kernels/cpu/qgemm.h"
#include "ember/quant/static_quant.h"

namespace ember::quant {

namespace {

// The smallest and largest value of x (float32); inf or NaN is an error naming `who`.
std::pair<float, float> tensor_range(const Tensor& x, const std::string& who) {
  EMBER_CHECK(x.defined() && x.dtype() == kFloat32, "[quant::", who, "] observes float32 tensors, got ",
              x.defined() ? ::ember::detail::str_cat(x.dtype()) : std::string("undefined"));
  const Tensor c = x.detach().contiguous();
  float lo = 0.0f, hi = 0.0f;
  bool nan = false;
  kernels::cpu::qminmax(c.data_ptr<float>(), c.numel(), &lo, &hi, &nan);
  EMBER_CHECK(!nan && std::isfinite(lo) && std::isfinite(hi), "[quant::", who, "] a tensor of sizes ", x.sizes(),
              " holds inf or NaN; int8 activations cannot represent them (check the calibration data)");
  return {lo, hi};
}

}  // namespace

Observer::Observer(int32_t qmin, int32_t qmax) : qmin_(qmin), qmax_(qmax) {
  EMBER_CHECK(0 <= qmin && qmin < qmax && qmax <= 255, "[quant::Observer] [quant_min, quant_max] = [", qmin, ", ", qmax,
              "] must lie within [0, 255] (quint8)");
}

void Observer::check_calibrated() const {
  EMBER_CHECK(count_ > 0, "[quant::", name(),
              "::calculate_qparams] the observer has seen no data; run the prepared model on calibration data "
              "before asking for its quantization parameters");
}

QParams Observer::qparams_from(float lo_in, float hi_in) const {
  // float32 steps, one IEEE operation each, as torch computes them on float32 tensors.
  const float lo = std::min(lo_in, 0.0f), hi = std::max(hi_in, 0.0f);
  const volatile float span = hi - lo;
  const volatile float q = static_cast<float>(qmax_ - qmin_);
  float scale = span / q;
  scale = std::max(scale, FLT_EPSILON);
  const volatile float ratio = lo / scale;
  const float zp = static_cast<float>(qmin_) - std::nearbyint(ratio);
  QParams p;
  p.scale = scale;
  p.zero_point = static_cast<int32_t>(std::clamp(zp, static_cast<float>(qmin_), static_cast<float>(qmax_)));
  return p;
}

// ---- MinMaxObserver ----

void MinMaxObserver::observe(const Tensor& x) {
  if (x.numel() == 0) return;
  const auto [lo, hi] = tensor_range(x, name());
  if (count_ == 0) {
    min_ = lo;
    max_ = hi;
  } else {
    min_ = std::min(min_, lo);
    max_ = std::max(max_, hi);
  }
  ++count_;
}

QParams MinMaxObserver::calculate_qparams() const {
  check_calibrated();
  return qparams_from(min_, max_);
}

std::unique_ptr<Observer> MinMaxObserver::clone() const { return std::make_unique<MinMaxObserver>(*this); }

// ---- MovingAverageMinMaxObserver ----

MovingAverageMinMaxObserver::MovingAverageMinMaxObserver(float averaging_constant, int32_t quant_min, int32_t quant_max)
    : Observer(quant_min, quant_max), c_(averaging_constant) {
  EMBER_CHECK(averaging_constant > 0.0f && averaging_constant <= 1.0f,
              "[quant::MovingAverageMinMaxObserver] averaging_constant must be in (0, 1], got ", averaging_constant);
}

void MovingAverageMinMaxObserver::observe(const Tensor& x) {
  if (x.numel() == 0) return;
  const auto [lo, hi] = tensor_range(x, name());
  if (count_ == 0) {
    min_ = lo;
    max_ = hi;
  } else {
    // min + c * (lo - min), each step rounded to float32 (no fused multiply-add).
    const volatile float dmin = lo - min_, dmax = hi - max_;
    const volatile float smin = c_ * dmin, smax = c_ * dmax;
    min_ = min_ + smin;
    max_ = max_ + smax;
  }
  ++count_;
}

QParams MovingAverageMinMaxObserver::calculate_qparams() const {
  check_calibrated();
  return qparams_from(min_, max_);
}

std::unique_ptr<Observer> MovingAverageMinMaxObserver::clone() const {
  return std::make_unique<MovingAverageMinMaxObserver>(*this);
}

// ---- PercentileObserver ----

PercentileObserver::PercentileObserver(double percentile, int64_t bins, int32_t quant_min, int32_t quant_max)
    : Observer(quant_min, quant_max), percentile_(percentile), bins_(bins) {
  EMBER_CHECK(percentile > 50.0 && percentile <= 100.0,
              "[quant::PercentileObserver] percentile must be in (50, 100], got ", percentile);
  EMBER_CHECK(bins >= 4 && bins % 4 == 0, "[quant::PercentileObserver] bins must be a positive multiple of 4, got ",
              bins);
  hist_.assign(static_cast<size_t>(bins), 0);
}

void PercentileObserver::observe(const Tensor& x) {
  if (x.numel() == 0) return;
  const auto [lo, hi] = tensor_range(x, name());
  min_ = count_ == 0 ? lo : std::min(min_, lo);
  max_ = count_ == 0 ? hi : std::max(max_, hi);
  ++count_;
  const double amax = std::max(std::abs(static_cast<double>(lo)), std::abs(static_cast<double>(hi)));
  if (radius_ == 0.0 && amax > 0.0) {
    // A power of two, so that doubling it keeps every bin edge exact.
    int e = 0;
    std::frexp(amax, &e);
    radius_ = std::ldexp(1.0, e);
    // Values seen so far were all zero: they sit in the middle bin of any radius.
  }
  while (radius_ > 0.0 && amax > radius_) {
    std::vector<int64_t> merged(static_cast<size_t>(bins_), 0);
    for (int64_t i = 0; i < bins_; ++i) merged[static_cast<size_t>(bins_ / 4 + i / 2)] += hist_[static_cast<size_t>(i)];
    hist_ = std::move(merged);
    radius_ *= 2.0;
  }
  const Tensor c = x.detach().contiguous();
  const float* p = c.data_ptr<float>();
  const double inv_width = radius_ > 0.0 ? static_cast<double>(bins_) / (2.0 * radius_) : 0.0;
  for (int64_t i = 0, n = c.numel(); i < n; ++i) {
    const double pos = radius_ > 0.0 ? (static_cast<double>(p[i]) + radius_) * inv_width : bins_ / 2.0;
    const int64_t b = std::clamp<int64_t>(static_cast<int64_t>(std::floor(pos)), 0, bins_ - 1);
    ++hist_[static_cast<size_t>(b)];
  }
}

std::pair<float, float> PercentileObserver::range() const {
  if (count_ == 0 || radius_ == 0.0) return {min_, max_};
  int64_t total = 0;
  for (int64_t v : hist_) total += v;
  const double width = 2.0 * radius_ / static_cast<double>(bins_);
  const double tail = (100.0 - percentile_) / 100.0 * static_cast<double>(total);
  // Lower: the first bin where more than `tail` values lie at or below it; its lower edge.
  int64_t cum = 0, lo_bin = 0;
  for (; lo_bin < bins_; ++lo_bin) {
    cum += hist_[static_cast<size_t>(lo_bin)];
    if (static_cast<double>(cum) > tail) break;
  }
  cum = 0;
  int64_t hi_bin = bins_ - 1;
  for (; hi_bin >= 0; --hi_bin) {
    cum += hist_[static_cast<size_t>(hi_bin)];
    if (static_cast<double>(cum) > tail) break;
  }
  const float lo = static_cast<float>(-radius_ + static_cast<double>(lo_bin) * width);
  const float hi = static_cast<float>(-radius_ + static_cast<double>(hi_bin + 1) * width);
  return {std::clamp(lo, min_, max_), std::clamp(hi, min_, max_)};
}

QParams PercentileObserver::calculate_qparams() const {
  check_calibrated();
  const auto [lo, hi] = range();
  return qparams_from(lo, hi);
}

std::unique_ptr<Observer> PercentileObserver::clone() const { return std::make_unique<PercentileObserver>(*this); }

std::unique_ptr<Observer> QConfig::make_activation_observer() const {
  switch (activation) {
    case ObserverKind::MinMax:
      return std::make_unique<MinMaxObserver>();
    case ObserverKind::MovingAverageMinMax:
      return std::make_unique<MovingAverageMinMaxObserver>(averaging_constant);
    case ObserverKind::Percentile:
      return std::make_unique<PercentileObserver>(percentile);
  }
  EMBER_ERROR("[quant::QConfig] unknown observer kind");
}

}  // namespace ember::quant
