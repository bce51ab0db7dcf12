"""ember.utils: data loading (utils.data) and activation checkpointing (utils.checkpoint)."""

from . import data  # noqa: F401
from . import checkpoint  # noqa: F401
from . import dlpack  # noqa: F401
