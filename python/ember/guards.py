"""ember.guards: warnings for silent training failures (docs/guards.md), on by default.

    ember.guards.set_enabled("EvalMode", False)     # one guard off
    ember.guards.set_all_enabled(False)             # all off

From Python: NonFiniteLoss (backward from a NaN/inf loss), GraphRetention and
GradAccumulation (Python optimizers report their steps and check the backward passes
behind each .grad; optimizer.set_accumulation_steps(k) declares accumulation) work as in
C++; EvalMode fires for ember.nn's Dropout/BatchNorm called in training mode under
no_grad/inference_mode. DataLoaderWait is C++-only for now (ember's C++ DataLoader).
"""

from . import _C

_g = _C._guards

names = _g.names
set_enabled = _g.set_enabled
is_enabled = _g.is_enabled
set_all_enabled = _g.set_all_enabled
reset = _g.reset
optimizer_steps = _g.optimizer_steps
saved_tensor_bytes = _g.saved_tensor_bytes


def _eval_mode_check(module_name):
    """Called by Dropout/BatchNorm in training mode: warns once when grad mode is off."""
    if not _C.is_grad_enabled() and _g.is_enabled("EvalMode"):
        _g.eval_mode_warning(module_name)
