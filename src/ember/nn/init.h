#pragma once
// nn::init: parameter initialisation, as torch.nn.init. Every function fills the tensor
// in place under NoGradGuard and returns it. Random draws use the default generator
// unless one is given.

#include <string>

#include "ember/core/generator.h"
#include "ember/core/tensor.h"

namespace ember::nn::init {

// Gain for a nonlinearity: linear/conv*/sigmoid 1, tanh 5/3, relu sqrt(2),
// leaky_relu sqrt(2 / (1 + slope^2)) (param = negative slope, default 0.01), selu 3/4.
double calculate_gain(const std::string& nonlinearity, double param = 0.01);
// (fan_in, fan_out) of a weight of >= 2 dims: dim 1 and dim 0 times the receptive field.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);

Tensor uniform_(Tensor t, double a = 0.0, double b = 1.0, Generator gen = {});
Tensor normal_(Tensor t, double mean = 0.0, double std = 1.0, Generator gen = {});
// Normal(mean, std) redrawn until inside [a, b].
Tensor trunc_normal_(Tensor t, double mean = 0.0, double std = 1.0, double a = -2.0, double b = 2.0,
                     Generator gen = {});
Tensor constant_(Tensor t, double value);
Tensor zeros_(Tensor t);
Tensor ones_(Tensor t);
// The identity matrix (2-D tensors only).
Tensor eye_(Tensor t);
Tensor xavier_uniform_(Tensor t, double gain = 1.0, Generator gen = {});
Tensor xavier_normal_(Tensor t, double gain = 1.0, Generator gen = {});
// mode: "fan_in" (default) or "fan_out"; a = negative slope for leaky_relu.
Tensor kaiming_uniform_(Tensor t, double a = 0.0, const std::string& mode = "fan_in",
                        const std::string& nonlinearity = "leaky_relu", Generator gen = {});
Tensor kaiming_normal_(Tensor t, double a = 0.0, const std::string& mode = "fan_in",
                       const std::string& nonlinearity = "leaky_relu", Generator gen = {});
// A (semi-)orthogonal matrix from the QR decomposition of a normal matrix, times gain.
Tensor orthogonal_(Tensor t, double gain = 1.0, Generator gen = {});

}  // namespace ember::nn::init
