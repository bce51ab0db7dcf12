"""ember.nn.utils: gradient clipping and parameter vectors."""

from .. import _C
from .._C import Tensor


def _params(parameters):
    if isinstance(parameters, Tensor):
        return [parameters]
    return [p for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scales the gradients so their total norm is at most max_norm; returns the norm before."""
    from ..amp import _warn_if_scaled
    _warn_if_scaled("clip_grad_norm_")
    return _C._optim.clip_grad_norm_(_params(parameters), float(max_norm), float(norm_type), error_if_nonfinite)


def clip_grad_value_(parameters, clip_value):
    _C._optim.clip_grad_value_(_params(parameters), float(clip_value))


def parameters_to_vector(parameters):
    return _C.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    offset = 0
    for p in parameters:
        n = p.numel()
        p.data.copy_(vec[offset:offset + n].view_as(p))
        offset += n
