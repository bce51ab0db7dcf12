"""autograd.Function subclasses written in Python.

    class Exp(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    y = Exp.apply(x)

forward runs with grad mode off; backward gets one gradient per output and returns one
per forward argument (None for non-tensors). The graph node is ember's C++ CustomNode,
named "<ClassName>Backward", and calls back into Python during backward.
"""

from .. import _C


class FunctionCtx:
    """The `ctx` of forward/backward. Attributes set on it are kept for backward."""

    _ctx = None
    needs_input_grad = ()

    def save_for_backward(self, *tensors):
        self._ctx.save_for_backward(*tensors)

    @property
    def saved_tensors(self):
        return self._ctx.saved_tensors()

    def mark_dirty(self, *tensors):
        self._ctx.mark_dirty(*tensors)

    def mark_non_differentiable(self, *tensors):
        self._ctx.mark_non_differentiable(*tensors)

    def set_materialize_grads(self, value):
        self._ctx.set_materialize_grads(bool(value))


class Function:
    """Base class of custom differentiable operations (torch.autograd.Function)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement the backward function for custom autograd.Function.")

    @classmethod
    def apply(cls, *args):
        return _C._autograd.function_apply(cls, *args)
