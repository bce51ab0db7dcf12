"""Sharded data-parallel training from Python: FSDP, ZeroRedundancyOptimizer and a sharded
checkpoint that one process loads back as a plain model and optimizer.

    build/tools/ember-run --standalone --nproc-per-node 2 \\
        /usr/bin/python3 examples/python/distributed_sharded.py [--ckpt DIR]

(PYTHONPATH=build/python.) Each rank trains on its share of a synthetic batch; the ranks
must see the same --ckpt directory."""

import argparse
import os
import tempfile

import ember
import ember.distributed as dist
import ember.distributed.checkpoint as dcp
import ember.nn as nn
import ember.nn.functional as F
from ember.distributed.fsdp import FullyShardedDataParallel as FSDP
from ember.distributed.optim import ZeroRedundancyOptimizer
from ember.nn.parallel import DistributedDataParallel as DDP


def mlp():
    return nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))


def train(model, opt, xs, ys, steps=30):
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(xs), ys)
        loss.backward()
        opt.step()
    return loss.item()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ckpt", default=os.path.join(tempfile.gettempdir(), "ember-sharded-example"))
    args = p.parse_args()
    dist.init_process_group("gloo")  # env:// from ember-run (or torchrun)
    rank, world = dist.get_rank(), dist.get_world_size()
    ember.manual_seed(0)
    x = ember.randn(256, 10)
    y = (x[:, 0] + x[:, 1] > 0).long()
    per = x.shape[0] // world
    xs, ys = x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]

    # FSDP: each rank holds 1/world of every layer's parameters, gradients and Adam state.
    model = FSDP(mlp())
    opt = ember.optim.Adam(model.parameters(), lr=1e-2)
    loss = train(model, opt, xs, ys)
    stats = model.memory_stats(opt)
    if rank == 0:
        print(f"fsdp: loss {loss:.4f}; parameters held here {stats.sharded_parameter_bytes} B of "
              f"{stats.full_parameter_bytes} B, Adam state {stats.optimizer_state_bytes} B")
    dcp.save_sharded(args.ckpt, model, opt)  # every rank writes its shards
    trained = model.full_state_dict()        # a collective: every rank calls it

    # ZeRO-1: DDP replicas, the Adam state split between the ranks.
    ddp = DDP(mlp())
    zero = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=ember.optim.Adam, lr=1e-2)
    loss = train(ddp, zero, xs, ys)
    zero.consolidate_state_dict(to=0)
    if rank == 0:
        print(f"zero: loss {loss:.4f}; Adam state for {len(zero.optim.state)} of "
              f"{len(list(ddp.parameters()))} parameters here, {len(zero.state_dict()['state'])} consolidated")

    dist.barrier()
    if rank == 0:
        # The checkpoint in one process, whatever the number of ranks that wrote it.
        state, optim_state = dcp.load_full_checkpoint(args.ckpt)
        plain = mlp()
        plain.load_state_dict(state)
        adam = ember.optim.Adam(plain.parameters())
        adam.load_state_dict(optim_state)
        same = all(bool((state[k] == v).all()) for k, v in trained.items())
        print(f"checkpoint equals the trained model: {same}; plain model loss "
              f"{F.cross_entropy(plain(x), y).item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
