#include "ember/nn/init.h"

#include <cmath>
#include <vector>

#include "ember/autograd/grad_mode.h"
#include "ember/core/check.h"
#include "ember/ops/creation.h"
#include "ember/ops/pointwise.h"

namespace ember::nn::init {

namespace {

void check_defined(const Tensor& t, const char* fn) {
  EMBER_CHECK(t.defined(), "[nn.init.", fn, "] called on an undefined tensor");
}

int64_t fan(const Tensor& t, const std::string& mode, const char* fn) {
  auto [in, out] = calculate_fan_in_and_fan_out(t);
  EMBER_CHECK(mode == "fan_in" || mode == "fan_out", "[nn.init.", fn, "] mode must be 'fan_in' or 'fan_out', got '",
              mode, "'");
  return mode == "fan_in" ? in : out;
}

}  // namespace

double calculate_gain(const std::string& nl, double param) {
  if (nl == "linear" || nl == "conv1d" || nl == "conv2d" || nl == "conv3d" || nl == "conv_transpose1d" ||
      nl == "conv_transpose2d" || nl == "conv_transpose3d" || nl == "sigmoid") {
    return 1.0;
  }
  if (nl == "tanh") return 5.0 / 3.0;
  if (nl == "relu") return std::sqrt(2.0);
  if (nl == "leaky_relu") return std::sqrt(2.0 / (1 + param * param));
  if (nl == "selu") return 3.0 / 4.0;
  EMBER_ERROR("[nn.init.calculate_gain] unsupported nonlinearity '", nl,
              "' (use linear, conv1d/2d/3d, conv_transpose1d/2d/3d, sigmoid, tanh, relu, leaky_relu or selu)");
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  check_defined(t, "calculate_fan_in_and_fan_out");
  EMBER_CHECK(t.dim() >= 2, "[nn.init] fan in and fan out can not be computed for a tensor with fewer than 2 "
              "dimensions (sizes ", t.sizes(), ")");
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

Tensor uniform_(Tensor t, double a, double b, Generator gen) {
  check_defined(t, "uniform_");
  NoGradGuard no_grad;
  t.uniform_(a, b, gen);
  return t;
}

Tensor normal_(Tensor t, double mean, double std, Generator gen) {
  check_defined(t, "normal_");
  NoGradGuard no_grad;
  t.normal_(mean, std, gen);
  return t;
}

Tensor trunc_normal_(Tensor t, double mean, double std, double a, double b, Generator gen) {
  check_defined(t, "trunc_normal_");
  EMBER_CHECK(a < b, "[nn.init.trunc_normal_] the interval [a, b] = [", a, ", ", b, "] is empty");
  NoGradGuard no_grad;
  // Inverse-CDF sampling of the truncated normal: uniform in [cdf(a), cdf(b)], then erfinv.
  auto cdf = [](double x) { return 0.5 * (1 + std::erf(x / std::sqrt(2.0))); };
  const double lo = cdf((a - mean) / std), hi = cdf((b - mean) / std);
  t.uniform_(2 * lo - 1, 2 * hi - 1, gen);
  Tensor v = t.erfinv().mul_(std * std::sqrt(2.0)).add_(mean).clamp_(a, b);
  t.copy_(v);
  return t;
}

Tensor constant_(Tensor t, double value) {
  check_defined(t, "constant_");
  NoGradGuard no_grad;
  t.fill_(value);
  return t;
}

Tensor zeros_(Tensor t) { return constant_(std::move(t), 0.0); }
Tensor ones_(Tensor t) { return constant_(std::move(t), 1.0); }

Tensor eye_(Tensor t) {
  check_defined(t, "eye_");
  EMBER_CHECK(t.dim() == 2, "[nn.init.eye_] only 2-D tensors are supported, got sizes ", t.sizes());
  NoGradGuard no_grad;
  t.copy_(eye(t.size(0), t.size(1), TensorOptions(t.dtype())));
  return t;
}

Tensor xavier_uniform_(Tensor t, double gain, Generator gen) {
  auto [in, out] = calculate_fan_in_and_fan_out(t);
  const double std = gain * std::sqrt(2.0 / static_cast<double>(in + out));
  const double a = std::sqrt(3.0) * std;
  return uniform_(std::move(t), -a, a, gen);
}

Tensor xavier_normal_(Tensor t, double gain, Generator gen) {
  auto [in, out] = calculate_fan_in_and_fan_out(t);
  return normal_(std::move(t), 0.0, gain * std::sqrt(2.0 / static_cast<double>(in + out)), gen);
}

Tensor kaiming_uniform_(Tensor t, double a, const std::string& mode, const std::string& nl, Generator gen) {
  check_defined(t, "kaiming_uniform_");
  if (t.numel() == 0) return t;
  const double std = calculate_gain(nl, a) / std::sqrt(static_cast<double>(fan(t, mode, "kaiming_uniform_")));
  const double bound = std::sqrt(3.0) * std;
  return uniform_(std::move(t), -bound, bound, gen);
}

Tensor kaiming_normal_(Tensor t, double a, const std::string& mode, const std::string& nl, Generator gen) {
  check_defined(t, "kaiming_normal_");
  if (t.numel() == 0) return t;
  const double std = calculate_gain(nl, a) / std::sqrt(static_cast<double>(fan(t, mode, "kaiming_normal_")));
  return normal_(std::move(t), 0.0, std, gen);
}

Tensor orthogonal_(Tensor t, double gain, Generator gen) {
  check_defined(t, "orthogonal_");
  EMBER_CHECK(t.dim() >= 2, "[nn.init.orthogonal_] only tensors with 2 or more dimensions are supported, got sizes ",
              t.sizes());
  if (t.numel() == 0) return t;
  NoGradGuard no_grad;
  const int64_t rows = t.size(0), cols = t.numel() / rows;
  // Orthonormalise the columns of a (max x min) normal matrix with modified
  // Gram-Schmidt in double precision, fixing signs like QR with a positive diagonal R.
  const bool transpose = rows < cols;
  const int64_t m = transpose ? cols : rows, n = transpose ? rows : cols;
  std::vector<double> q = randn({m, n}, gen, TensorOptions(kFloat64)).to_vector<double>();
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t k = 0; k < j; ++k) {
      double dot = 0;
      for (int64_t i = 0; i < m; ++i) dot += q[i * n + k] * q[i * n + j];
      for (int64_t i = 0; i < m; ++i) q[i * n + j] -= dot * q[i * n + k];
    }
    double norm = 0;
    for (int64_t i = 0; i < m; ++i) norm += q[i * n + j] * q[i * n + j];
    norm = std::sqrt(norm);
    EMBER_CHECK(norm > 0, "[nn.init.orthogonal_] degenerate random matrix; try again");
    for (int64_t i = 0; i < m; ++i) q[i * n + j] /= norm;
  }
  Tensor qt = tensor(q, TensorOptions(kFloat64)).view({m, n});
  if (transpose) qt = qt.t();
  t.copy_((qt * gain).reshape(t.sizes()));
  return t;
}

}  // namespace ember::nn::init
