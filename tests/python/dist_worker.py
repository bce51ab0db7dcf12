"""One rank of the multi-process tests in test_distributed.py: `python3 dist_worker.py
<scenario> <outdir>`, started once per rank with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set
(by the test or by ember-run). Each scenario writes what this rank saw to
<outdir>/rank<r>.npz (arrays) and <outdir>/rank<r>.json (messages, flags); the test compares
them with a single-process reference. Imports only ember and numpy (not torch), so that a
rank starts fast."""

import datetime
import json
import os
import sys
import time

import numpy as np

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F


def base(rank, dtype, shape=(2, 3)):
    """Rank r's input of a collective: arange * (r + 1) + r, in dtype."""
    n = int(np.prod(shape))
    return (ember.arange(n).reshape(*shape) * (rank + 1) + rank).to(dtype)


def arr(t):
    t = t.detach()
    if t.dtype == ember.bfloat16:  # numpy has no bfloat16
        t = t.float()
    return t.numpy().copy()


def collectives(rank, world, out, info):
    dist.init_process_group("gloo")
    info["is_initialized"] = dist.is_initialized()
    info["rank"], info["world"] = dist.get_rank(), dist.get_world_size()
    info["backend"] = str(dist.get_backend())
    dtypes = {"float32": ember.float32, "float64": ember.float64, "int64": ember.int64, "int32": ember.int32,
              "float16": ember.float16, "bfloat16": ember.bfloat16, "uint8": ember.uint8}
    for name, dt in dtypes.items():
        for op in ("SUM", "MAX", "MIN", "PRODUCT", "AVG"):
            if op == "AVG" and not dt.is_floating_point:
                continue
            t = base(rank, dt)
            assert dist.all_reduce(t, op=getattr(dist.ReduceOp, op)) is None
            out[f"all_reduce_{op}_{name}"] = arr(t)
        t = base(rank, dt)
        dist.broadcast(t, src=1)
        out[f"broadcast_{name}"] = arr(t)
    # a non-contiguous tensor is reduced and written back through its strides
    t = base(rank, ember.float32, (3, 2)).t()
    dist.all_reduce(t)
    out["all_reduce_transposed"] = arr(t)
    # async: the Work handle
    t = base(rank, ember.float32, (64,))
    w = dist.all_reduce(t, async_op=True)
    info["async_wait"] = w.wait()
    info["async_done"] = [w.is_completed(), w.is_success(), w.exception() is None]
    out["all_reduce_async"] = arr(t)
    t = base(rank, ember.float32)
    dist.reduce(t, dst=2, op=dist.ReduceOp.SUM)
    out["reduce"] = arr(t)
    lst = [ember.zeros(2, 3) for _ in range(world)]
    dist.all_gather(lst, base(rank, ember.float32))
    out["all_gather"] = np.stack([arr(x) for x in lst])
    flat = ember.zeros(world * 2, 3)
    dist.all_gather_into_tensor(flat, base(rank, ember.float32))
    out["all_gather_into_tensor"] = arr(flat)
    o = ember.zeros(2, 3)
    dist.reduce_scatter(o, [base(rank, ember.float32) * (j + 1) for j in range(world)])
    out["reduce_scatter"] = arr(o)
    o = ember.zeros(2)
    dist.reduce_scatter_tensor(o, base(rank, ember.float32, (2 * world,)), op=dist.ReduceOp.MAX)
    out["reduce_scatter_tensor_max"] = arr(o)
    g = [ember.zeros(2, 3) for _ in range(world)] if rank == 0 else None
    dist.gather(base(rank, ember.float32), g, dst=0)
    if rank == 0:
        out["gather"] = np.stack([arr(x) for x in g])
    o = ember.zeros(2, 3)
    dist.scatter(o, [base(j, ember.float32) * 10 for j in range(world)] if rank == 1 else None, src=1)
    out["scatter"] = arr(o)
    outs = [ember.zeros(2) for _ in range(world)]
    dist.all_to_all(outs, [ember.full((2,), float(10 * rank + j)) for j in range(world)])
    out["all_to_all"] = np.stack([arr(x) for x in outs])
    # uneven all_to_all_single: rank r sends j + 1 rows to rank j
    ins = [j + 1 for j in range(world)]
    outs_n = [rank + 1] * world
    src = ember.cat([ember.full((j + 1, 2), float(100 * rank + j)) for j in range(world)])
    dst = ember.zeros(sum(outs_n), 2)
    dist.all_to_all_single(dst, src, output_split_sizes=outs_n, input_split_sizes=ins)
    out["all_to_all_single_uneven"] = arr(dst)
    # point to point around the ring; recv from any rank returns the sender
    right, left = (rank + 1) % world, (rank - 1) % world
    t = ember.zeros(4)
    if rank == 0:
        dist.send(ember.full((4,), 1.0 + rank), dst=right)
        info["recv_from"] = dist.recv(t)
    else:
        info["recv_from"] = dist.recv(t)
        dist.send(ember.full((4,), 1.0 + rank), dst=right)
    out["recv"] = arr(t)
    r = ember.zeros(3)
    ws = [dist.isend(ember.full((3,), 7.0 * rank), dst=right, tag=5), dist.irecv(r, src=left, tag=5)]
    for w in ws:
        w.wait()
    out["irecv"] = arr(r)
    dist.barrier()
    # a subgroup of ranks 0 and 2; rank 1 is not a member
    sub = dist.new_group([0, 2])
    t = base(rank, ember.float32)
    info["sub_result"] = dist.all_reduce(t, group=sub)
    info["sub_rank"], info["sub_size"] = dist.get_rank(sub), dist.get_world_size(sub)
    out["sub_all_reduce"] = arr(t)
    # object collectives (pickled, tensors inside)
    objs = [None] * world
    dist.all_gather_object(objs, {"rank": rank, "t": ember.full((2,), float(rank))})
    info["all_gather_object"] = [[o["rank"], o["t"].tolist()] for o in objs]
    lst = ["hello", {"k": [1, 2]}, 3.5] if rank == 0 else [None, None, None]
    dist.broadcast_object_list(lst, src=0)
    info["broadcast_object_list"] = lst
    got = [None] * world if rank == 2 else None
    dist.gather_object(("from", rank), got, dst=2)
    info["gather_object"] = [list(x) for x in got] if got else None
    mine = [None]
    dist.scatter_object_list(mine, [f"obj{j}" * (j + 1) for j in range(world)] if rank == 1 else None, src=1)
    info["scatter_object_list"] = mine[0]
    dist.destroy_process_group()
    info["initialized_after_destroy"] = dist.is_initialized()


def errors(rank, world, out, info):
    # tcp:// with explicit rank and world size; a short timeout for the missing-rank case
    port = os.environ["MASTER_PORT"]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=3))
    t = ember.ones(4)
    try:
        if rank == 0:
            dist.all_reduce(t)
        else:
            dist.broadcast(t, src=0)
    except RuntimeError as e:
        info["mismatch"] = str(e)
    try:
        w = dist.all_reduce(ember.ones(4 + rank), async_op=True)
        w.wait()
    except RuntimeError as e:
        info["async_shape"] = str(e)
        info["async_flags"] = [w.is_completed(), w.is_success(), str(w.exception())]
    # the group stays usable after a mismatch (every rank saw it)
    t = ember.full((3,), float(rank + 1))
    dist.all_reduce(t)
    out["after_mismatch"] = arr(t)
    for name, fn in {
        "bad_src": lambda: dist.broadcast(ember.ones(2), src=5),
        "avg_int": lambda: dist.all_reduce(ember.ones(2, dtype=ember.int64), op=dist.ReduceOp.AVG),
        "list_len": lambda: dist.all_gather([ember.ones(2)], ember.ones(2)),
        "not_tensor": lambda: dist.all_reduce([1.0, 2.0]),
        "reinit": lambda: dist.init_process_group("gloo"),
        "backend": lambda: dist.new_group([0], backend="nccl"),
    }.items():
        try:
            fn()
            info[name] = None
        except Exception as e:  # noqa: BLE001  (the type is what the test checks)
            info[name] = [type(e).__name__, str(e)]
    # rank 1 skips a collective: rank 0's raises after the timeout, naming rank 1
    flag = os.path.join(os.path.dirname(out["_path"]), "rank0_done")
    if rank == 0:
        start = time.time()
        try:
            dist.all_reduce(ember.ones(16))
        except RuntimeError as e:
            info["timeout"] = str(e)
        info["timeout_seconds"] = time.time() - start
        try:
            dist.all_reduce(ember.ones(16))
        except RuntimeError as e:
            info["after_timeout"] = str(e)
        open(flag, "w").close()
    else:
        deadline = time.time() + 30
        while not os.path.exists(flag) and time.time() < deadline:
            time.sleep(0.05)
    # Leave without destroy_process_group: the group is broken on rank 0 (torch's users exit so too).
    os._exit(finish(rank, out, info))


class Net(nn.Module):
    def __init__(self, spare=False):
        super().__init__()
        self.fc1 = nn.Linear(5, 8)
        self.fc2 = nn.Linear(8, 3)
        if spare:
            self.spare = nn.Linear(3, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def ddp(rank, world, out, info):
    dist.init_process_group()  # env:// from ember-run
    info["env"] = [os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE")]
    ember.manual_seed(100 + rank)  # different on every rank: DDP must broadcast rank 0's
    model = Net()
    if rank == 0:
        for k, v in model.state_dict().items():
            out["init." + k] = arr(v)
    m = nn.parallel.DistributedDataParallel(model)
    info["bucket_names"] = m.bucket_names()
    info["state_dict_keys"] = list(m.state_dict().keys())
    x = ember.from_numpy(np.load(os.environ["DDP_DATA"])["x"])
    y = ember.from_numpy(np.load(os.environ["DDP_DATA"])["y"])
    per = x.shape[0] // world
    xs, ys = x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    # step 1: gradients equal the single-process gradients of the whole batch
    opt.zero_grad()
    F.cross_entropy(m(xs), ys).backward()
    for k, p in model.named_parameters():
        out["grad1." + k] = arr(p.grad)
    opt.step()
    for k, p in model.named_parameters():
        out["param1." + k] = arr(p)
    # step 2: gradient accumulation, first half of this rank's rows under no_sync
    opt.zero_grad()
    h = per // 2
    with m.no_sync():
        F.cross_entropy(m(xs[:h]), ys[:h]).backward()
    for k, p in model.named_parameters():
        out["local2." + k] = arr(p.grad)
    F.cross_entropy(m(xs[h:]), ys[h:]).backward()
    for k, p in model.named_parameters():
        out["grad2." + k] = arr(p.grad)
    # a parameter without gradient: the next forward raises, naming it
    spare = Net(spare=True)
    ms = nn.parallel.DistributedDataParallel(spare)
    F.cross_entropy(ms(xs), ys).backward()
    try:
        ms(xs)
    except RuntimeError as e:
        info["unused_error"] = str(e)
    # find_unused_parameters: the spare layer keeps no gradient, the rest is averaged
    spare2 = Net(spare=True)
    mu = nn.parallel.DistributedDataParallel(spare2, find_unused_parameters=True)
    for _ in range(2):
        spare2.zero_grad()
        F.cross_entropy(mu(xs), ys).backward()
    info["unused_grad_is_none"] = spare2.spare.weight.grad is None
    out["unused_fc1_grad"] = arr(spare2.fc1.weight.grad)
    # DistributedSampler takes num_replicas and rank from the group
    s = ember.utils.data.DistributedSampler(list(range(11)), shuffle=True, seed=3)
    s.set_epoch(2)
    info["sampler"] = list(s)
    dist.destroy_process_group()


def ddp_hooks(rank, world, out, info):
    """Comm hooks, gradient_as_bucket_view and static_graph: twin models (seed 0) under each,
    three SGD steps on this rank's rows; the test compares them with plain DDP's."""
    from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
    dist.init_process_group()
    rng = np.random.default_rng(5)
    x = ember.from_numpy(rng.standard_normal((4 * world, 5)).astype(np.float32))[4 * rank:4 * rank + 4]
    y = ember.from_numpy(rng.integers(0, 3, 4 * world).astype(np.int64))[4 * rank:4 * rank + 4]
    kinds = {"plain": {}, "allreduce": {}, "fp16": {}, "view": {"gradient_as_bucket_view": True},
             "dynamic": {"find_unused_parameters": True}, "static": {"static_graph": True}}
    models = {}
    for kind, kw in kinds.items():
        ember.manual_seed(0)
        net = Net(spare=kind in ("dynamic", "static"))
        models[kind] = (net, nn.parallel.DistributedDataParallel(net, **kw))
    models["allreduce"][1].register_comm_hook(dist.GroupMember.WORLD, default_hooks.allreduce_hook)
    models["fp16"][1].register_comm_hook(None, default_hooks.fp16_compress_hook)
    try:
        models["fp16"][1].register_comm_hook(None, default_hooks.allreduce_hook)
    except RuntimeError as e:
        info["twice_error"] = str(e)
    try:
        models["plain"][1].register_comm_hook(None, lambda state, bucket: None)
    except NotImplementedError as e:
        info["custom_error"] = str(e)
    opts = {k: ember.optim.SGD(m.parameters(), lr=0.1) for k, (m, _) in models.items()}
    for step in range(3):
        for kind, (net, m) in models.items():
            opts[kind].zero_grad()
            F.cross_entropy(m(x), y).backward()
            for k, p in net.named_parameters():
                if p.grad is not None:
                    out[f"grad{step}.{kind}.{k}"] = arr(p.grad)
            if kind == "view":
                # fc2.bias and fc2.weight (3 + 24 floats) lead the one bucket, in that order
                info[f"view_adjacent{step}"] = net.fc2.weight.grad.data_ptr() - net.fc2.bias.grad.data_ptr()
            if kind == "static":
                info[f"static_rebuilt{step}"] = m.reducer.buckets_rebuilt
            opts[kind].step()
    dist.destroy_process_group()


def finish(rank, out, info):
    path = out.pop("_path")
    np.savez(path + ".npz", **out)
    with open(path + ".json", "w") as f:
        json.dump(info, f)
    return 0


def main():
    scenario, outdir = sys.argv[1], sys.argv[2]
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    out, info = {"_path": os.path.join(outdir, f"rank{rank}")}, {}
    {"collectives": collectives, "errors": errors, "ddp": ddp, "ddp_hooks": ddp_hooks}[scenario](rank, world, out,
                                                                                              info)
    return finish(rank, out, info)


if __name__ == "__main__":
    sys.exit(main())
