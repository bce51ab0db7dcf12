"""ember.amp: mixed precision (docs/amp.md), as torch.autocast and torch.cuda.amp.GradScaler.

    with ember.autocast(device_type="cpu", dtype=ember.bfloat16):
        loss = loss_fn(model(x), y)       # Linear/conv/matmul in bf16, the loss in float32
    scaler = ember.amp.GradScaler()       # for float16
    scaler.scale(loss).backward(); scaler.step(opt); scaler.update()

The autocast state and its op table are the C++ ones (src/ember/amp/autocast.h); the
GradScaler here follows the C++ amp::GradScaler for Python optimizers.
"""

import functools
import math
import warnings
import weakref

from . import _C
from .autograd.grad_mode import no_grad

_a = _C._amp

is_autocast_enabled = _a.is_autocast_enabled
get_autocast_dtype = _a.get_autocast_dtype
clear_autocast_cache = _a.clear_autocast_cache
low_precision_gemm_path = _a.low_precision_gemm_path


class autocast:
    """Context manager (and decorator) turning autocast on for the block, as torch.autocast.

    device_type must be "cpu"; dtype is ember.bfloat16 (default) or ember.float16."""

    def __init__(self, device_type="cpu", dtype=None, enabled=True, cache_enabled=True):
        if device_type != "cpu":
            raise ValueError(f"[autocast] device_type must be 'cpu' (ember runs on the CPU), got {device_type!r}")
        self.fast_dtype = _C.bfloat16 if dtype is None else dtype
        self._enabled = bool(enabled)
        self._cache_enabled = bool(cache_enabled)
        self._guards = []

    def __enter__(self):
        g = _a._AutocastGuard(self.fast_dtype, self._enabled, self._cache_enabled)
        g.enter()
        self._guards.append(g)
        return self

    def __exit__(self, *exc):
        self._guards.pop().exit()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast("cpu", self.fast_dtype, self._enabled, self._cache_enabled):
                return fn(*args, **kwargs)
        return wrapper


_READY, _UNSCALED, _STEPPED = 0, 1, 2
_scalers = weakref.WeakSet()


class GradScaler:
    """Dynamic loss scaling with torch.cuda.amp.GradScaler's rules (docs/amp.md)."""

    def __init__(self, init_scale=65536.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        if not growth_factor > 1.0:
            raise ValueError(f"[GradScaler] growth_factor must be greater than 1, got {growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError(f"[GradScaler] backoff_factor must be in (0, 1), got {backoff_factor}")
        self._enabled = enabled
        self._scale = _f32(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._per_optimizer = {}
        self._pending = False
        self._warned_clip = False
        _scalers.add(self)

    def is_enabled(self):
        return self._enabled

    def get_scale(self):
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def get_growth_interval(self):
        return self._growth_interval

    def _state(self, optimizer):
        return self._per_optimizer.setdefault(id(optimizer), {"stage": _READY, "found_inf": False})

    def scale(self, outputs):
        if not self._enabled:
            return outputs
        self._pending = True
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        return outputs * self._scale

    def unscale_(self, optimizer):
        if not self._enabled:
            return
        st = self._state(optimizer)
        if st["stage"] == _UNSCALED:
            raise RuntimeError("[GradScaler.unscale_] unscale_() has already been called on this optimizer since "
                               "the last update()")
        if st["stage"] == _STEPPED:
            raise RuntimeError("[GradScaler.unscale_] unscale_() is being called after step()")
        inv = _f32(1.0 / self._scale)
        found = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    if g.dtype == _C.float16:
                        raise ValueError("[GradScaler.unscale_] attempting to unscale float16 gradients; keep the "
                                         "parameters in float32 and let autocast cast them")
                    if not found and g.numel() > 0 and not bool(g.isfinite().all()):
                        found = True
                    g.mul_(inv)
        st["found_inf"] = found
        st["stage"] = _UNSCALED
        self._pending = False

    def step(self, optimizer, *args, **kwargs):
        """Steps unless a gradient was inf/NaN; returns the optimizer's result, or None when skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        st = self._state(optimizer)
        if st["stage"] == _STEPPED:
            raise RuntimeError("[GradScaler.step] step() has already been called since the last update()")
        if st["stage"] == _READY:
            self.unscale_(optimizer)
        result = None if st["found_inf"] else optimizer.step(*args, **kwargs)
        st["stage"] = _STEPPED
        return result

    def update(self, new_scale=None):
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = _f32(float(new_scale))
        else:
            checks = [s["found_inf"] for s in self._per_optimizer.values() if s["stage"] != _READY]
            if not checks:
                raise RuntimeError("[GradScaler.update] no inf/NaN check was recorded since the last update(); call "
                                   "scaler.step(optimizer) before update()")
            if any(checks):
                self._scale = _f32(self._scale * self._backoff_factor)
                self._growth_tracker = 0
            elif self._growth_tracker + 1 == self._growth_interval:
                grown = _f32(self._scale * self._growth_factor)
                if math.isfinite(grown):
                    self._scale = grown
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
        self._per_optimizer = {}
        self._pending = False

    def state_dict(self):
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("[GradScaler.load_state_dict] the state dict is empty, possibly because it was saved "
                               "from a disabled GradScaler")
        self._scale = _f32(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])


def _f32(x):
    """x rounded to float32, as torch keeps the scale."""
    import struct
    return struct.unpack("f", struct.pack("f", float(x)))[0] if math.isfinite(x) else float(x)


def _warn_if_scaled(op):
    """clip_grad_norm_ calls this: warns once per scaler whose gradients are still scaled."""
    for s in list(_scalers):
        if s._pending and not s._warned_clip:
            s._warned_clip = True
            warnings.warn(f"[{op}] the gradients are still multiplied by GradScaler's scale ({s._scale:g}): call "
                          "scaler.unscale_(optimizer) before clipping, otherwise max_norm applies to the scaled "
                          "gradients", stacklevel=3)
            return
