"""One rank of test_distributed_shard.py: `python3 shard_worker.py <scenario> <outdir>`,
started once per rank with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set. Writes what this
rank saw to <outdir>/rank<r>.npz and .json, as dist_worker.py does; the test compares it
with a single-process reference computed in the rank itself or in the test."""

import json
import os
import sys

import numpy as np

import ember
import ember.distributed as dist
import ember.distributed.checkpoint as dcp
import ember.nn as nn
import ember.nn.functional as F
from ember.distributed.fsdp import FSDP, ShardingStrategy
from ember.distributed.optim import ZeroRedundancyOptimizer

STEPS = 3
LR = 0.05


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 7)   # 42 elements: the units' flat sizes are odd, so shards pad
        self.fc2 = nn.Linear(7, 6)
        self.fc3 = nn.Linear(6, 3)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def data():
    rng = np.random.default_rng(7)
    x = ember.from_numpy(rng.standard_normal((12, 5)).astype(np.float32))
    y = ember.from_numpy(rng.integers(0, 3, 12).astype(np.int64))
    return x, y


def arr(t):
    return t.detach().numpy().copy()


def model_for(seed):
    ember.manual_seed(seed)
    return MLP()


def reference(out, steps=STEPS):
    """Plain Adam on the whole batch in this process: what every data-parallel run must equal."""
    model = model_for(1)
    x, y = data()
    opt = ember.optim.Adam(model.parameters(), lr=LR)
    for _ in range(steps):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    for k, v in model.state_dict().items():
        out["ref." + k] = arr(v)
    return model, opt


def share(rank, world):
    x, y = data()
    per = x.shape[0] // world
    return x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]


def zero(rank, world, out, info):
    dist.init_process_group("gloo")
    ref_model, ref_opt = reference(out)
    model = model_for(1 + rank)  # differs per rank: DDP broadcasts rank 0's
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=ember.optim.Adam, lr=LR)
    info["partition"] = [[[list(p.shape) for p in g] for g in r] for r in opt.partition()]
    info["local_params"] = sum(len(g["params"]) for g in opt.optim.param_groups)
    xs, ys = share(rank, world)
    for _ in range(STEPS):
        opt.zero_grad()
        F.cross_entropy(ddp(xs), ys).backward()
        opt.step()
    for k, v in model.state_dict().items():
        out["zero." + k] = arr(v)
    info["local_state_bytes"] = opt.local_state_bytes()
    try:
        opt.state_dict()
    except RuntimeError as e:
        info["state_dict_error"] = str(e)
    opt.consolidate_state_dict(to=0)
    if rank == 0:
        sd = opt.state_dict()
        plain = ref_opt.state_dict()
        info["state_keys"] = sorted(sd["state"].keys())
        for i in sd["state"]:
            for key in ("exp_avg", "exp_avg_sq"):
                out[f"state.{i}.{key}"] = arr(sd["state"][i][key])
                out[f"refstate.{i}.{key}"] = arr(plain["state"][i][key])
            info[f"step.{i}"] = float(sd["state"][i]["step"].item())
        # the consolidated state loads into a plain Adam, which then steps as the reference does
        fresh = model_for(0)
        fresh.load_state_dict(model.state_dict())
        adam = ember.optim.Adam(fresh.parameters(), lr=LR)
        adam.load_state_dict(sd)
        x, y = data()
        for m, o in ((fresh, adam), (ref_model, ref_opt)):
            o.zero_grad()
            F.cross_entropy(m(x), y).backward()
            o.step()
        out["resumed.fc1.weight"] = arr(fresh.fc1.weight)
        out["refnext.fc1.weight"] = arr(ref_model.fc1.weight)
    dcp.save_sharded(os.environ["CKPT"], model, opt)
    dist.destroy_process_group()


def fsdp(rank, world, out, info):
    dist.init_process_group("gloo")
    reference(out)
    xs, ys = share(rank, world)
    results = {}
    for strategy in (ShardingStrategy.FULL_SHARD, ShardingStrategy.SHARD_GRAD_OP):
        model = model_for(1 + rank)  # FSDP broadcasts rank 0's
        m = FSDP(model, sharding_strategy=strategy)
        opt = ember.optim.Adam(m.parameters(), lr=LR)
        for _ in range(STEPS):
            opt.zero_grad()
            F.cross_entropy(m(xs), ys).backward()
            opt.step()
        results[strategy.name] = (m, opt)
        for k, v in m.full_state_dict().items():
            out[f"{strategy.name}." + k] = arr(v)
    # the same with DDP, for comparison
    model = model_for(1 + rank)
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = ember.optim.Adam(ddp.parameters(), lr=LR)
    for _ in range(STEPS):
        opt.zero_grad()
        F.cross_entropy(ddp(xs), ys).backward()
        opt.step()
    for k, v in model.state_dict().items():
        out["ddp." + k] = arr(v)
    m, opt = results["FULL_SHARD"]
    info["names"] = [n for n, _ in m.named_parameters()]
    info["units"] = m.unit_names()
    info["shard_sizes"] = [p.numel() for p in m.parameters()]
    s = m.memory_stats(opt)
    info["stats"] = {k: getattr(s, k) for k in ("sharded_parameter_bytes", "sharded_gradient_bytes",
                                                 "optimizer_state_bytes", "full_parameter_bytes",
                                                 "gathered_bytes_now", "peak_gathered_bytes")}
    dcp.save_sharded(os.environ["CKPT"], m, opt)
    # the lower level: any dict of ShardedTensors, tensors and plain values
    dcp.save_state_dict({"model": m.sharded_state_dict(), "epoch": 3}, dcp.FileSystemWriter(os.environ["CKPT"] + "_sd"))
    for k, v in m.full_state_dict().items():
        out["saved." + k] = arr(v)
    dist.destroy_process_group()


def fsdp_load(rank, world, out, info):
    """Loads the 2-rank checkpoint of `fsdp` with this world size, then saves it again."""
    dist.init_process_group("gloo")
    model = model_for(50 + rank)
    m = FSDP(model)
    opt = ember.optim.Adam(m.parameters(), lr=0.5)
    dcp.load_sharded(os.environ["CKPT"], m, opt)
    info["lr"] = opt.param_groups[0]["lr"]
    for k, v in m.full_state_dict().items():
        out["loaded." + k] = arr(v)
    dcp.save_sharded(os.environ["CKPT2"], m, opt)
    # one more step on each rank's share of the batch
    xs, ys = share(rank, world)
    opt.zero_grad()
    F.cross_entropy(m(xs), ys).backward()
    opt.step()
    for k, v in m.full_state_dict().items():
        out["next." + k] = arr(v)
    dist.destroy_process_group()


def zero_load(rank, world, out, info):
    """Loads the 2-rank ZeRO checkpoint of `zero` with this world size and steps once more."""
    dist.init_process_group("gloo")
    model = model_for(60 + rank)
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=ember.optim.Adam, lr=0.5)
    dcp.load_sharded(os.environ["CKPT"], model, opt)
    info["lr"] = [opt.param_groups[0]["lr"], opt.optim.param_groups[0]["lr"]]
    info["local_params"] = len(opt.optim.state)
    for k, v in model.state_dict().items():
        out["loaded." + k] = arr(v)
    opt.consolidate_state_dict(to=0)
    if rank == 0:
        for i, st in opt.state_dict()["state"].items():
            out[f"state.{i}.exp_avg"] = arr(st["exp_avg"])
    xs, ys = share(rank, world)
    opt.zero_grad()
    F.cross_entropy(ddp(xs), ys).backward()
    opt.step()
    for k, v in model.state_dict().items():
        out["next." + k] = arr(v)
    dist.destroy_process_group()


def main():
    scenario, outdir = sys.argv[1], sys.argv[2]
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    out, info = {}, {}
    {"zero": zero, "zero_load": zero_load, "fsdp": fsdp, "fsdp_load": fsdp_load}[scenario](rank, world, out, info)
    path = os.path.join(outdir, f"rank{rank}")
    np.savez(path + ".npz", **out)
    with open(path + ".json", "w") as f:
        json.dump(info, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
