"""ember.distributed.algorithms.ddp_comm_hooks (torch's module path): the built-in
communication hooks of DistributedDataParallel.register_comm_hook, in default_hooks."""

from . import default_hooks  # noqa: F401
