"""Activation checkpointing: keep only the inputs in forward, recompute in backward."""

from .. import _C

_autograd = _C._autograd


def checkpoint(function, *args, use_reentrant=None, preserve_rng_state=True, **kwargs):
    if kwargs:
        raise ValueError("checkpoint(): keyword arguments to the function are not supported; use functools.partial")
    return _autograd.checkpoint(function, *args, preserve_rng_state=preserve_rng_state)
