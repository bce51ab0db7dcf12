"""ember.nn.functional: the stateless forms of the layers (torch.nn.functional).

The kernels are C++ (ember._C._nn); the few functions torch writes in Python as
compositions of ops are compositions here too.
"""

import math as _math

from .. import _C
from .._C import Tensor

_nn = _C._nn

linear = _nn.linear
bilinear = _nn.bilinear
conv1d = _nn.conv1d
conv2d = _nn.conv2d
conv_transpose1d = _nn.conv_transpose1d
conv_transpose2d = _nn.conv_transpose2d
avg_pool1d = _nn.avg_pool1d
avg_pool2d = _nn.avg_pool2d
adaptive_avg_pool2d = _nn.adaptive_avg_pool2d
group_norm = _nn.group_norm
one_hot = _nn.one_hot
scaled_dot_product_attention = _nn.scaled_dot_product_attention
mse_loss = _nn.mse_loss
l1_loss = _nn.l1_loss
smooth_l1_loss = _nn.smooth_l1_loss
huber_loss = _nn.huber_loss
binary_cross_entropy = _nn.binary_cross_entropy
binary_cross_entropy_with_logits = _nn.binary_cross_entropy_with_logits
kl_div = _nn.kl_div


def _reduction(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    return _nn.cross_entropy(input, target, weight, ignore_index, _reduction(size_average, reduce, reduction),
                             label_smoothing)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    return _nn.nll_loss(input, target, weight, ignore_index, _reduction(size_average, reduce, reduction))


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _nn.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    if return_indices:
        raise NotImplementedError("max_pool1d(return_indices=True) is not supported")
    return _nn.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    return _nn.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _nn.layer_norm(input, normalized_shape, weight, bias, eps)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding(scale_grad_by_freq/sparse) is not supported")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    return _nn.embedding(input, weight, padding_idx, max_norm, norm_type)


def dropout(input, p=0.5, training=True, inplace=False):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    out = _nn.dropout(input, p, training)
    if inplace:
        return input.copy_(out)
    return out


def relu(input, inplace=False):
    return input.relu_() if inplace else input.relu()


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    out = _nn.leaky_relu(input, negative_slope)
    return input.copy_(out) if inplace else out


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    return input.clamp_(min_val, max_val) if inplace else input.clamp(min_val, max_val)


def elu(input, alpha=1.0, inplace=False):
    out = _C.where(input > 0, input, (input.exp() - 1) * alpha)
    return input.copy_(out) if inplace else out


def gelu(input, approximate="none"):
    return input.gelu(approximate)


def silu(input, inplace=False):
    return input.copy_(input.silu()) if inplace else input.silu()


def mish(input, inplace=False):
    out = input * input.softplus().tanh()
    return input.copy_(out) if inplace else out


def softplus(input, beta=1, threshold=20):
    return input.softplus(beta, threshold)


def softsign(input):
    return input / (input.abs() + 1)


def tanh(input):
    return input.tanh()


def sigmoid(input):
    return input.sigmoid()


def logsigmoid(input):
    return -((-input).softplus())


def hardsigmoid(input, inplace=False):
    out = (input / 6 + 0.5).clamp(0.0, 1.0)
    return input.copy_(out) if inplace else out


def hardswish(input, inplace=False):
    out = input * (input + 3).clamp(0.0, 6.0) / 6
    return input.copy_(out) if inplace else out


def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    return input.softmax(dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    return input.log_softmax(dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return softmax(-input, dim, dtype=dtype)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    return input / denom


def pad(input, pad, mode="constant", value=None):
    return _nn.pad(input, pad, mode, value)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    w12 = (x1 * x2).sum(dim)
    n1 = (x1 * x1).sum(dim)
    n2 = (x2 * x2).sum(dim)
    return w12 / (n1 * n2).clamp_min(eps * eps).sqrt()


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return (x1 - x2 + eps).norm(p, -1, keepdim)


def logit(input, eps=None):
    return _nn.logit(input, eps)


def dropout1d(input, p=0.5, training=True, inplace=False):
    return dropout(input, p, training, inplace)


def flatten(input, start_dim=0, end_dim=-1):
    return input.flatten(start_dim, end_dim)
