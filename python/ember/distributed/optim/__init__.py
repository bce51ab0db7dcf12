"""ember.distributed.optim: optimizers for data-parallel training (torch.distributed.optim)."""

from .zero_redundancy_optimizer import ZeroRedundancyOptimizer  # noqa: F401
