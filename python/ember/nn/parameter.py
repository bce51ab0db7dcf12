"""nn.Parameter: a tensor that a Module registers as one of its parameters."""

from .._C import Tensor


class Parameter(Tensor):
    """A leaf tensor that requires grad (by default) and that Module attribute assignment
    registers as a parameter. It shares memory with the tensor it was made from."""

    _ember_parameter = True

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            from .. import empty
            data = empty(0)
        super().__init__(data.detach())
        self.requires_grad_(requires_grad)

    @classmethod
    def _share(cls, tensor):
        """A Parameter that is `tensor` itself (the same TensorImpl: gradients accumulate
        in one place), for parameters owned by ember's C++ modules."""
        p = cls.__new__(cls)
        Tensor.__init__(p, tensor)
        return p

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


class Buffer:
    """Marker type for register_buffer-compatible assignment (torch 2.x's nn.Buffer)."""

    def __init__(self, data, persistent=True):
        self.data = data
        self.persistent = persistent
