"""ember.distributed: torch.distributed's API over ember's process groups (Gloo's TCP
transport, or MPI), docs/distributed.md and docs/python.md.

    import ember.distributed as dist
    dist.init_process_group("gloo")          # env:// (ember-run / torchrun set the variables)
    dist.all_reduce(t)                       # SUM over every rank, in place
    dist.destroy_process_group()

The collectives run in C++ (src/ember/distributed) with the GIL released; every one is
checked against the other ranks' (a rank that calls another collective, or another shape,
makes every rank raise a RuntimeError naming the ranks), and a rank that never arrives is
named when the group's timeout passes. Ranks are global ranks, as in torch.
"""

import datetime as _datetime
import pickle as _pickle

from .. import _C
from .. import tensor as _tensor

_D = _C._distributed


def is_available():
    """True when this build has the distributed library (Gloo was found at build time)."""
    return bool(_D.available)


def is_gloo_available():
    return is_available()


def is_mpi_available():
    """True when this build has the MPI backend (init_process_group("mpi") under mpirun)."""
    return is_available() and bool(getattr(_D, "mpi_available", False))


def is_nccl_available():
    return False


default_pg_timeout = _datetime.timedelta(minutes=30)


if is_available():
    from .._C._distributed import (  # noqa: F401  (re-exported names)
        FileStore, PrefixStore, ProcessGroup, ReduceOp, Store, TCPStore, Work,
    )


class Backend(str):
    """Backend names, as torch.distributed.Backend: Backend("GLOO") == "gloo"."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    MPI = "mpi"
    NCCL = "nccl"

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend name must be a string, but got: {name}")
        return str.__new__(cls, name.lower())


class _NonGroupMember:
    def __repr__(self):
        return "GroupMember.NON_GROUP_MEMBER"


class GroupMember:
    """GroupMember.WORLD: the default group (None before init_process_group);
    GroupMember.NON_GROUP_MEMBER: what new_group returns on ranks outside the group."""

    WORLD = None
    NON_GROUP_MEMBER = _NonGroupMember()


class group:  # noqa: N801  (torch's name)
    WORLD = None


def _set_world(pg):
    GroupMember.WORLD = pg
    group.WORLD = pg


def _require():
    if not is_available():
        raise RuntimeError("[ember.distributed] this build has no distributed support (Gloo, Debian package "
                           "libgloo-dev, was not found when ember was built); run scripts/setup.sh and rebuild")


def _not_member(g):
    return g is GroupMember.NON_GROUP_MEMBER


def _group(g, op):
    if g is None or isinstance(g, ProcessGroup):
        return g
    raise TypeError(f"{op}(): group must be a ProcessGroup (from new_group) or None, not {type(g).__name__}")


def _check_tensor(t, op, name="tensor"):
    if not isinstance(t, _C.Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be an ember Tensor, not {type(t).__name__}")


def _check_list(ts, op, name):
    if not isinstance(ts, (list, tuple)) or any(not isinstance(t, _C.Tensor) for t in ts):
        raise TypeError(f"{op}(): argument '{name}' must be a list of ember Tensors")
    return list(ts)


# ---------------------------------------------------------------- process groups

def init_process_group(backend=None, init_method=None, timeout=default_pg_timeout, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, *, check_collectives=None):
    """Joins this process to the others (torch.distributed.init_process_group).

    backend: "gloo" (the default), or "mpi" when is_mpi_available() (start the processes with
    mpirun; rank and world size then come from MPI, init_method and store are not used). init_method: "env://" (MASTER_ADDR, MASTER_PORT, and RANK and
    WORLD_SIZE unless given), "tcp://host:port" or "file:///path"; or pass a `store` with
    `rank` and `world_size`. timeout: a datetime.timedelta (or seconds) for the rendezvous and
    for every collective. check_collectives (ember only): False skips the fingerprint checks
    (EMBER_DISTRIBUTED_CHECKS=0 does too)."""
    _require()
    backend = Backend(backend if backend is not None else "gloo")
    if store is not None:
        if init_method is not None:
            raise ValueError("Cannot specify both init_method and store.")
        if world_size <= 0:
            raise ValueError("world_size must be positive if using store")
        if rank < 0:
            raise ValueError("rank must be non-negative if using store")
        init_method = ""
    elif init_method is None:
        init_method = "env://"
    _D.init_process_group(str(backend), init_method, rank, world_size, timeout, store, check_collectives)
    _set_world(_D.default_group())


def is_initialized():
    return is_available() and _D.is_initialized()


def destroy_process_group(group=None):
    """Leaves the default group and every subgroup (a group argument is accepted for torch's
    signature; ember destroys everything)."""
    _require()
    _D.destroy_process_group()
    _set_world(None)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None):
    """A group of some global ranks. Every rank must call it, members or not, in the same order;
    ranks outside it get GroupMember.NON_GROUP_MEMBER."""
    _require()
    if backend is not None and Backend(backend) != Backend.GLOO:
        raise ValueError(f"[new_group] backend '{backend}' is not available; this build has 'gloo'")
    g = _D.new_group(list(ranks) if ranks is not None else [], timeout)
    return GroupMember.NON_GROUP_MEMBER if g is None else g


def get_rank(group=None):
    _require()
    if _not_member(group):
        return -1
    return _D.get_rank(_group(group, "get_rank"))


def get_world_size(group=None):
    _require()
    if _not_member(group):
        return -1
    return _D.get_world_size(_group(group, "get_world_size"))


def get_backend(group=None):
    _require()
    if _not_member(group):
        raise RuntimeError("Invalid process group specified")
    return Backend(_D.get_backend(_group(group, "get_backend")))


def get_process_group_ranks(group):
    """The global ranks of a group's members, in group-rank order."""
    _require()
    return list(_group(group, "get_process_group_ranks").ranks) if group is not None else list(
        range(get_world_size()))


def get_global_rank(group, group_rank):
    _require()
    return _group(group, "get_global_rank").global_rank(group_rank)


def get_group_rank(group, global_rank):
    _require()
    return _group(group, "get_group_rank").group_rank(global_rank)


# ---------------------------------------------------------------- collectives

def all_reduce(tensor, op=None, group=None, async_op=False):
    _require()
    if _not_member(group):
        return None
    _check_tensor(tensor, "all_reduce")
    return _D.all_reduce(tensor, ReduceOp.SUM if op is None else op, _group(group, "all_reduce"), async_op)


def broadcast(tensor, src, group=None, async_op=False):
    _require()
    if _not_member(group):
        return None
    _check_tensor(tensor, "broadcast")
    return _D.broadcast(tensor, src, _group(group, "broadcast"), async_op)


def reduce(tensor, dst, op=None, group=None, async_op=False):
    _require()
    if _not_member(group):
        return None
    _check_tensor(tensor, "reduce")
    return _D.reduce(tensor, dst, ReduceOp.SUM if op is None else op, _group(group, "reduce"), async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    _require()
    if _not_member(group):
        return None
    _check_tensor(tensor, "all_gather")
    return _D.all_gather(_check_list(tensor_list, "all_gather", "tensor_list"), tensor,
                         _group(group, "all_gather"), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    _require()
    if _not_member(group):
        return None
    _check_tensor(output_tensor, "all_gather_into_tensor", "output_tensor")
    _check_tensor(input_tensor, "all_gather_into_tensor", "input_tensor")
    return _D.all_gather_into_tensor(output_tensor, input_tensor, _group(group, "all_gather_into_tensor"), async_op)


_all_gather_base = all_gather_into_tensor


def reduce_scatter(output, input_list, op=None, group=None, async_op=False):
    _require()
    if _not_member(group):
        return None
    _check_tensor(output, "reduce_scatter", "output")
    return _D.reduce_scatter(output, _check_list(input_list, "reduce_scatter", "input_list"),
                             ReduceOp.SUM if op is None else op, _group(group, "reduce_scatter"), async_op)


def reduce_scatter_tensor(output, input, op=None, group=None, async_op=False):
    _require()
    if _not_member(group):
        return None
    _check_tensor(output, "reduce_scatter_tensor", "output")
    _check_tensor(input, "reduce_scatter_tensor", "input")
    return _D.reduce_scatter_tensor(output, input, ReduceOp.SUM if op is None else op,
                                    _group(group, "reduce_scatter_tensor"), async_op)


_reduce_scatter_base = reduce_scatter_tensor


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    _require()
    if _not_member(group):
        return None
    _check_tensor(tensor, "gather")
    lst = [] if gather_list is None else _check_list(gather_list, "gather", "gather_list")
    return _D.gather(tensor, lst, dst, _group(group, "gather"), async_op)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    _require()
    if _not_member(group):
        return None
    _check_tensor(tensor, "scatter")
    lst = [] if scatter_list is None else _check_list(scatter_list, "scatter", "scatter_list")
    return _D.scatter(tensor, lst, src, _group(group, "scatter"), async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    _require()
    if _not_member(group):
        return None
    return _D.all_to_all(_check_list(output_tensor_list, "all_to_all", "output_tensor_list"),
                         _check_list(input_tensor_list, "all_to_all", "input_tensor_list"),
                         _group(group, "all_to_all"), async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False):
    _require()
    if _not_member(group):
        return None
    _check_tensor(output, "all_to_all_single", "output")
    _check_tensor(input, "all_to_all_single", "input")
    return _D.all_to_all_single(output, input, list(output_split_sizes or []), list(input_split_sizes or []),
                                _group(group, "all_to_all_single"), async_op)


def barrier(group=None, async_op=False, device_ids=None):
    _require()
    if _not_member(group):
        return None
    return _D.barrier(_group(group, "barrier"), async_op)


def send(tensor, dst, group=None, tag=0):
    _require()
    if _not_member(group):
        return None
    _check_tensor(tensor, "send")
    _D.send(tensor, dst, _group(group, "send"), tag)


def recv(tensor, src=None, group=None, tag=0):
    """Receives into tensor from src (None: any rank); returns the sender's rank."""
    _require()
    if _not_member(group):
        return -1
    _check_tensor(tensor, "recv")
    return _D.recv(tensor, -1 if src is None else src, _group(group, "recv"), tag)


def isend(tensor, dst, group=None, tag=0):
    _require()
    if _not_member(group):
        return None
    _check_tensor(tensor, "isend")
    return _D.isend(tensor, dst, _group(group, "isend"), tag)


def irecv(tensor, src=None, group=None, tag=0):
    _require()
    if _not_member(group):
        return None
    _check_tensor(tensor, "irecv")
    return _D.irecv(tensor, -1 if src is None else src, _group(group, "irecv"), tag)


# ---------------------------------------------------------------- object collectives
# Objects travel pickled in uint8 tensors, as in torch (so unpickling runs whatever the
# sender's pickle names: use them only between processes you trust).

def _to_bytes_tensor(obj):
    import numpy as np
    data = _pickle.dumps(obj)
    return _C.from_numpy(np.frombuffer(data, dtype=np.uint8).copy()), len(data)


def _from_bytes_tensor(t, n):
    return _pickle.loads(t.numpy()[:n].tobytes())


def _sizes(n, g, world):
    mine = _tensor([n], dtype=_C.int64)
    sizes = [_C.zeros(1, dtype=_C.int64) for _ in range(world)]
    all_gather(sizes, mine, group=g)
    return [int(s.item()) for s in sizes]


def all_gather_object(object_list, obj, group=None):
    """object_list (len world_size) receives every rank's obj."""
    _require()
    if _not_member(group):
        return
    world = get_world_size(group)
    if len(object_list) != world:
        raise ValueError(f"[all_gather_object] object_list has {len(object_list)} entries; it needs one per rank "
                         f"({world})")
    t, n = _to_bytes_tensor(obj)
    sizes = _sizes(n, group, world)
    longest = max(sizes)
    padded = _C.zeros(longest, dtype=_C.uint8)
    padded[:n] = t
    out = [_C.zeros(longest, dtype=_C.uint8) for _ in range(world)]
    all_gather(out, padded, group=group)
    for i in range(world):
        object_list[i] = _from_bytes_tensor(out[i], sizes[i])


def gather_object(obj, object_gather_list=None, dst=0, group=None):
    """On dst, object_gather_list (len world_size) receives every rank's obj; None elsewhere."""
    _require()
    if _not_member(group):
        return
    world = get_world_size(group)
    me = get_rank()
    if me == dst and (object_gather_list is None or len(object_gather_list) != world):
        raise ValueError(f"[gather_object] object_gather_list on dst (rank {dst}) must have one entry per rank "
                         f"({world})")
    t, n = _to_bytes_tensor(obj)
    sizes = _sizes(n, group, world)
    longest = max(sizes)
    padded = _C.zeros(longest, dtype=_C.uint8)
    padded[:n] = t
    out = [_C.zeros(longest, dtype=_C.uint8) for _ in range(world)] if me == dst else None
    gather(padded, out, dst=dst, group=group)
    if me == dst:
        for i in range(world):
            object_gather_list[i] = _from_bytes_tensor(out[i], sizes[i])


def broadcast_object_list(object_list, src=0, group=None, device=None):
    """Every rank's object_list (the same length everywhere) receives src's objects."""
    _require()
    if _not_member(group):
        return
    me = get_rank()
    lengths = _C.zeros(len(object_list), dtype=_C.int64)
    parts = []
    if me == src:
        for i, o in enumerate(object_list):
            t, n = _to_bytes_tensor(o)
            parts.append(t)
            lengths[i] = n
    broadcast(lengths, src=src, group=group)
    total = int(lengths.sum().item())
    data = _C.cat(parts) if me == src and parts else _C.zeros(total, dtype=_C.uint8)
    if total:
        broadcast(data, src=src, group=group)
    if me != src:
        off = 0
        for i, n in enumerate(lengths.tolist()):
            object_list[i] = _from_bytes_tensor(data[off:off + n], n)
            off += n


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=0, group=None):
    """scatter_object_output_list[0] receives src's scatter_object_input_list[rank]."""
    _require()
    if _not_member(group):
        return
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    world = get_world_size(group)
    me = get_rank()
    if me == src:
        if scatter_object_input_list is None or len(scatter_object_input_list) != world:
            raise ValueError(f"[scatter_object_list] scatter_object_input_list on src (rank {src}) must have one "
                             f"entry per rank ({world})")
        encoded = [_to_bytes_tensor(o) for o in scatter_object_input_list]
        longest = max(n for _, n in encoded)
        sizes = [_tensor([n], dtype=_C.int64) for _, n in encoded]
        bufs = []
        for t, n in encoded:
            b = _C.zeros(longest, dtype=_C.uint8)
            b[:n] = t
            bufs.append(b)
    else:
        sizes, bufs, longest = None, None, 0
    longest_t = _tensor([longest], dtype=_C.int64)
    broadcast(longest_t, src=src, group=group)
    my_size = _C.zeros(1, dtype=_C.int64)
    scatter(my_size, sizes, src=src, group=group)
    mine = _C.zeros(int(longest_t.item()), dtype=_C.uint8)
    scatter(mine, bufs, src=src, group=group)
    scatter_object_output_list[0] = _from_bytes_tensor(mine, int(my_size.item()))
