"""Grad-mode context managers (also usable as decorators), as torch's: no_grad,
enable_grad, set_grad_enabled, inference_mode."""

import functools

from .. import _C


class _GradModeContext:
    """Sets grad mode to `self._mode` inside a `with` block or a decorated function."""

    _mode = True

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(self._mode)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def _clone(self):
        return self.__class__()

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self._clone():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradModeContext):
    """Operations inside record no graph: `with ember.no_grad(): ...` or `@ember.no_grad()`."""

    _mode = False


class enable_grad(_GradModeContext):
    _mode = True


class set_grad_enabled(_GradModeContext):
    """Sets grad mode now (called as a function) or for a `with` block."""

    def __init__(self, mode):
        self._mode = bool(mode)
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(self._mode)

    def __enter__(self):
        pass

    def _clone(self):
        return set_grad_enabled(self._mode)


class inference_mode(_GradModeContext):
    """No graph, no version counting: the fastest mode for inference."""

    def __init__(self, mode=True):
        self._mode = bool(mode)
        self._guard = _C._InferenceMode(self._mode)

    def __enter__(self):
        self._guard.__enter__()

    def __exit__(self, *exc):
        self._guard.__exit__(*exc)
        return False

    def _clone(self):
        return inference_mode(self._mode)
