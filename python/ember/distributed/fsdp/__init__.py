"""ember.distributed.fsdp: FullyShardedDataParallel (torch.distributed.fsdp)."""

from .fully_sharded_data_parallel import (  # noqa: F401
    FSDPMemoryStats, FullyShardedDataParallel, ShardingStrategy,
)

FSDP = FullyShardedDataParallel
