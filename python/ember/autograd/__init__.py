"""ember.autograd: backward/grad, Function subclasses written in Python, anomaly mode,
gradcheck, as torch.autograd."""

from .. import _C
from .function import Function, FunctionCtx  # noqa: F401
from . import graph  # noqa: F401
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled  # noqa: F401

_ag = _C._autograd


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulates the gradients of tensors (weighted by grad_tensors) into the leaves' .grad."""
    _ag.backward(tensors, grad_tensors, retain_graph, create_graph, inputs)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False,
         only_inputs=True, is_grads_batched=False):
    """d(outputs)/d(inputs) as a tuple, without touching any .grad."""
    if is_grads_batched:
        raise NotImplementedError("grad(is_grads_batched=True) is not supported")
    return _ag.grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused)


class set_detect_anomaly:
    """Anomaly mode on/off: backward names the forward op whose gradient first went NaN/inf."""

    def __init__(self, mode):
        self._prev = _C.is_anomaly_enabled()
        _C._set_detect_anomaly(bool(mode))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C._set_detect_anomaly(self._prev)
        return False


class detect_anomaly(set_detect_anomaly):
    def __init__(self):
        super().__init__(True)


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **kwargs):
    """Compares autograd's gradients of func at inputs (float64) with finite differences."""
    if not isinstance(inputs, (tuple, list)):
        inputs = (inputs,)
    return _ag.gradcheck(func, list(inputs), eps, atol, rtol, raise_exception, False)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
                  **kwargs):
    if not isinstance(inputs, (tuple, list)):
        inputs = (inputs,)
    return _ag.gradcheck(func, list(inputs), eps, atol, rtol, raise_exception, True)
