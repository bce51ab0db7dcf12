"""ember: tensors, autograd, nn and optim with PyTorch's Python API.

A PyTorch script ports by changing its import::

    import ember as torch

The heavy lifting is C++ (the extension module ``ember._C``); this package adds the
Python-level pieces torch also writes in Python: ``nn.Module``, the optimizers, the data
loader, grad-mode context managers. See docs/python.md.
"""

import builtins as _builtins
import collections as _collections
import functools as _functools
import os as _os
import pickle as _pickle
import tempfile as _tempfile

from . import _C
from ._C import (  # noqa: F401  (re-exported names)
    Tensor, dtype, float32, float, float64, double, float16, half, bfloat16, int8, uint8, int16, short,
    int32, int, int64, long, bool, get_default_dtype, set_default_dtype, promote_types,
    zeros, ones, empty, full, rand, randn, randint, randperm, arange, linspace, eye, scalar_tensor,
    zeros_like, ones_like, empty_like, full_like, rand_like, randn_like,
    cat, concat, stack, hstack, vstack, broadcast_tensors, where, pow, searchsorted, unique,
    manual_seed, seed, get_rng_state, set_rng_state, set_num_threads, get_num_threads,
    from_numpy, from_dlpack, is_grad_enabled, is_inference_mode_enabled, is_anomaly_enabled,
)

__version__ = "0.1.0"


class Size(tuple):
    """The shape of a tensor: a tuple of ints (torch.Size)."""

    def __repr__(self):
        return "ember.Size([" + ", ".join(str(s) for s in self) + "])"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n


_C._set_size_class(Size)


class return_types:
    """Named results of max/min/sort/topk/kthvalue, as torch.return_types."""
    max = _collections.namedtuple("max", ["values", "indices"])
    min = _collections.namedtuple("min", ["values", "indices"])
    sort = _collections.namedtuple("sort", ["values", "indices"])
    topk = _collections.namedtuple("topk", ["values", "indices"])
    kthvalue = _collections.namedtuple("kthvalue", ["values", "indices"])


_C._set_return_types({k: getattr(return_types, k) for k in ("max", "min", "sort", "topk", "kthvalue")})


class device:
    """ember runs on the CPU; device('cpu') exists so that `.to(device)` code ports."""

    def __init__(self, type="cpu", index=None):
        if isinstance(type, device):
            type = type.type
        type = str(type)
        if type.split(":")[0] != "cpu":
            raise RuntimeError(f"ember runs on the CPU only; device '{type}' is not available")
        self.type = "cpu"
        self.index = index

    def __repr__(self):
        return "device(type='cpu')"

    def __str__(self):
        return "cpu"

    def __eq__(self, other):
        return str(other) == "cpu"

    def __hash__(self):
        return hash("cpu")


class _CudaStub:
    """ember.cuda: there is no GPU backend, so is_available() is False (scripts that check
    it fall back to the CPU path)."""

    @staticmethod
    def is_available():
        return False

    @staticmethod
    def device_count():
        return 0

    @staticmethod
    def manual_seed(seed):
        pass

    @staticmethod
    def manual_seed_all(seed):
        pass


cuda = _CudaStub()
_device = device  # the class, for functions whose `device` argument shadows it


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor (always a copy) from a number, a nested list/tuple, an ndarray or a tensor."""
    if device is not None:
        _device(device)  # refuses anything but the CPU
    t = _C._tensor(data, dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def as_tensor(data, dtype=None, device=None):
    """Shares memory with an ndarray or tensor when the dtype matches, as torch.as_tensor."""
    if device is not None:
        _device(device)
    if isinstance(data, Tensor):
        return data if dtype is None or data.dtype == dtype else data.to(dtype)
    try:
        import numpy as _np
        if isinstance(data, _np.ndarray):
            t = from_numpy(data)
            return t if dtype is None or t.dtype == dtype else t.to(dtype)
    except ImportError:
        pass
    return tensor(data, dtype=dtype)


def is_tensor(obj):
    return isinstance(obj, Tensor)


def numel(t):
    return t.numel()


def is_floating_point(t):
    return t.is_floating_point()


# ---- functions that are Tensor methods with the tensor first: ember.exp(x), ember.sum(x, 1) ----
abs = Tensor.abs
neg = Tensor.neg
negative = Tensor.negative
sign = Tensor.sign
exp = Tensor.exp
exp2 = Tensor.exp2
expm1 = Tensor.expm1
log = Tensor.log
log2 = Tensor.log2
log10 = Tensor.log10
log1p = Tensor.log1p
sqrt = Tensor.sqrt
rsqrt = Tensor.rsqrt
reciprocal = Tensor.reciprocal
sin = Tensor.sin
cos = Tensor.cos
tan = Tensor.tan
asin = Tensor.asin
acos = Tensor.acos
atan = Tensor.atan
sinh = Tensor.sinh
cosh = Tensor.cosh
tanh = Tensor.tanh
sigmoid = Tensor.sigmoid
relu = Tensor.relu
gelu = Tensor.gelu
silu = Tensor.silu
softplus = Tensor.softplus
erf = Tensor.erf
erfinv = Tensor.erfinv
floor = Tensor.floor
ceil = Tensor.ceil
round = Tensor.round
trunc = Tensor.trunc
frac = Tensor.frac
clamp = Tensor.clamp
clamp_min = Tensor.clamp_min
clamp_max = Tensor.clamp_max
nan_to_num = Tensor.nan_to_num
logical_not = Tensor.logical_not
isnan = Tensor.isnan
isinf = Tensor.isinf
isfinite = Tensor.isfinite
square = Tensor.square
add = Tensor.add
sub = Tensor.sub
subtract = Tensor.subtract
mul = Tensor.mul
multiply = Tensor.multiply
div = Tensor.div
divide = Tensor.divide
true_divide = Tensor.true_divide
floor_divide = Tensor.floor_divide
remainder = Tensor.remainder
fmod = Tensor.fmod
float_power = Tensor.float_power
maximum = Tensor.maximum
minimum = Tensor.minimum
atan2 = Tensor.atan2
lerp = Tensor.lerp
eq = Tensor.eq
ne = Tensor.ne
lt = Tensor.lt
le = Tensor.le
gt = Tensor.gt
ge = Tensor.ge
greater = Tensor.greater
less = Tensor.less
logical_and = Tensor.logical_and
logical_or = Tensor.logical_or
logical_xor = Tensor.logical_xor
isclose = Tensor.isclose
allclose = Tensor.allclose
equal = Tensor.equal
sum = Tensor.sum
mean = Tensor.mean
prod = Tensor.prod
max = Tensor.max
min = Tensor.min
amax = Tensor.amax
amin = Tensor.amin
argmax = Tensor.argmax
argmin = Tensor.argmin
var = Tensor.var
std = Tensor.std
norm = Tensor.norm
logsumexp = Tensor.logsumexp
all = Tensor.all
any = Tensor.any
count_nonzero = Tensor.count_nonzero
cumsum = Tensor.cumsum
cumprod = Tensor.cumprod
softmax = Tensor.softmax
log_softmax = Tensor.log_softmax
matmul = Tensor.matmul
mm = Tensor.mm
bmm = Tensor.bmm
dot = Tensor.dot
outer = Tensor.outer
addmm = Tensor.addmm
baddbmm = Tensor.baddbmm
flip = Tensor.flip
roll = Tensor.roll
repeat_interleave = Tensor.repeat_interleave
tril = Tensor.tril
triu = Tensor.triu
index_select = Tensor.index_select
gather = Tensor.gather
scatter = Tensor.scatter
scatter_add = Tensor.scatter_add
scatter_reduce = Tensor.scatter_reduce
index_add = Tensor.index_add
index_copy = Tensor.index_copy
index_fill = Tensor.index_fill
masked_fill = Tensor.masked_fill
masked_select = Tensor.masked_select
masked_scatter = Tensor.masked_scatter
nonzero = Tensor.nonzero
bincount = Tensor.bincount
sort = Tensor.sort
argsort = Tensor.argsort
topk = Tensor.topk
kthvalue = Tensor.kthvalue
reshape = Tensor.reshape
transpose = Tensor.transpose
swapaxes = Tensor.swapaxes
movedim = Tensor.movedim
permute = Tensor.permute
squeeze = Tensor.squeeze
unsqueeze = Tensor.unsqueeze
flatten = Tensor.flatten
unflatten = Tensor.unflatten
narrow = Tensor.narrow
select = Tensor.select
unfold = Tensor.unfold
diagonal = Tensor.diagonal
split = Tensor.split
chunk = Tensor.chunk
unbind = Tensor.unbind
t = Tensor.t
clone = Tensor.clone
detach = Tensor.detach
tile = Tensor.tile


def _tensor_unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
    if dim is not None:
        raise NotImplementedError("unique(dim=...) is not supported; flatten or loop over the dim")
    return unique(self, sorted, return_inverse, return_counts)


Tensor.unique = _tensor_unique


def _tensor_format(self, spec):
    """f"{t:.3f}" formats a one-element tensor's value, as torch."""
    if self.dim() == 0:
        return self.item().__format__(spec)
    return object.__format__(repr(self), spec)


Tensor.__format__ = _tensor_format


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return input.var(dim, unbiased, keepdim, correction=correction), input.mean(dim, keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return input.std(dim, unbiased, keepdim, correction=correction), input.mean(dim, keepdim)


# ---- grad modes (context managers and decorators, as torch's) ----
from .autograd.grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled  # noqa: E402,F401


# ---- checkpoints: ember.save / ember.load ----
def save(obj, f, pickle_protocol=4):
    """Pickles obj (a state_dict, a tensor, any picklable object) to f.

    A path is written atomically: to a temporary file in the same directory, flushed to
    disk, then renamed over the target, so a crash mid-save never leaves a torn file.
    """
    if hasattr(f, "write"):
        _pickle.dump(obj, f, protocol=pickle_protocol)
        return
    path = _os.fspath(f)
    d = _os.path.dirname(_os.path.abspath(path))
    fd, tmp = _tempfile.mkstemp(prefix=".ember-save-", dir=d)
    try:
        with _os.fdopen(fd, "wb") as out:
            _pickle.dump(obj, out, protocol=pickle_protocol)
            out.flush()
            _os.fsync(out.fileno())
        _os.replace(tmp, path)
    except BaseException:
        if _os.path.exists(tmp):
            _os.unlink(tmp)
        raise


class _WeightsUnpickler(_pickle.Unpickler):
    """Loads only tensors, Parameters, dtypes, numbers, strings and containers: a pickle can
    run any code it names, so an untrusted file is read with weights_only=True."""

    _ALLOWED = {
        ("ember", "_rebuild_tensor"), ("ember", "_rebuild_subclass"), ("ember._C", "dtype"),
        ("ember.nn.parameter", "Parameter"), ("collections", "OrderedDict"),
        ("numpy.core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"), ("numpy", "ndarray"),
        ("numpy", "dtype"), ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "complex"),
    }

    def find_class(self, module, name):
        if (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        raise _pickle.UnpicklingError(
            f"ember.load(weights_only=True) refuses to load {module}.{name}: only tensors, numbers, strings and "
            "containers are allowed; load a file you trust with weights_only=False")


def load(f, map_location=None, weights_only=False):
    """Reads what save() wrote (map_location is accepted for torch compatibility: CPU only).

    weights_only=True refuses anything but tensors, numbers, strings and containers: use it
    for files from elsewhere (a pickle can otherwise run arbitrary code, as with torch.load)."""
    def read(fh):
        return _WeightsUnpickler(fh).load() if weights_only else _pickle.load(fh)

    if hasattr(f, "read"):
        return read(f)
    with open(_os.fspath(f), "rb") as fh:
        return read(fh)


def _rebuild_tensor(array, dtype_name, requires_grad):
    t = from_numpy(array.copy()) if array.dtype.name != "object" else tensor(array)
    dt = getattr(_C, dtype_name)
    if t.dtype != dt:
        t = t.to(dt)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _tensor_reduce_ex(self, protocol):
    dt = str(self.dtype).split(".")[1]
    arr = self.detach().numpy(force=True).copy()
    if type(self) is not Tensor:  # Parameter and other subclasses rebuild themselves
        return (_rebuild_subclass, (type(self), arr, dt, self.requires_grad, dict(getattr(self, "__dict__", {}))))
    return (_rebuild_tensor, (arr, dt, self.requires_grad))


def _rebuild_subclass(cls, array, dtype_name, requires_grad, state):
    t = cls(_rebuild_tensor(array, dtype_name, False), requires_grad) if hasattr(cls, "_ember_parameter") \
        else cls(_rebuild_tensor(array, dtype_name, requires_grad))
    t.__dict__.update(state)
    return t


Tensor.__reduce_ex__ = _tensor_reduce_ex
Tensor.__deepcopy__ = lambda self, memo: _deepcopy_tensor(self, memo)


def _deepcopy_tensor(self, memo):
    if id(self) in memo:
        return memo[id(self)]
    with no_grad():
        c = self.clone()
    if type(self) is not Tensor:
        c = type(self)(c, self.requires_grad) if hasattr(type(self), "_ember_parameter") else type(self)(c)
    elif self.requires_grad:
        c.requires_grad_(True)
    if self.grad is not None:
        c.grad = self.grad.clone()
    memo[id(self)] = c
    return c


def typename(obj):
    if isinstance(obj, Tensor):
        return obj.type()
    return type(obj).__name__


from . import autograd  # noqa: E402
from . import amp  # noqa: E402
from .amp import autocast  # noqa: E402,F401
from . import guards  # noqa: E402,F401
from . import nn  # noqa: E402
from . import optim  # noqa: E402
from . import utils  # noqa: E402
from . import distributed  # noqa: E402,F401
