"""ember.distributed.checkpoint: sharded checkpoints (torch.distributed.checkpoint's
save_state_dict / load_state_dict with FileSystemWriter / FileSystemReader), written by
ember's C++ side (src/ember/distributed/sharded_checkpoint.h, Note [Sharded checkpoint
layout]): every rank writes only what it holds, atomically, and a checkpoint saved with N
ranks loads with M ranks or into one process.

    import ember.distributed.checkpoint as dcp
    dcp.save_sharded("ckpt", fsdp, opt)            # every rank: the model's and optimizer's shards
    dcp.load_sharded("ckpt", fsdp, opt)            # any world size
    model_state, optim_state = dcp.load_full_checkpoint("ckpt")   # one process, no group

save_sharded/load_sharded take a FullyShardedDataParallel (with an optimizer over its
parameters()) or a plain module with a ZeroRedundancyOptimizer; the files are the C++
save_sharded's, so C++ and Python read each other's model state. The lower level,
save_state_dict/load_state_dict, takes any dict of tensors (written whole by the
coordinator rank) and ShardedTensors (each rank's piece).
"""

from collections import OrderedDict

from ... import _C
from ...autograd.grad_mode import no_grad

__all__ = ["FileSystemReader", "FileSystemWriter", "ShardedTensor", "load_full_checkpoint", "load_sharded",
           "load_state_dict", "save_sharded", "save_state_dict"]


class ShardedTensor:
    """A tensor of `shape` and `dtype` of which this rank holds the elements
    [begin, begin + local.numel()) of its row-major flattening (local: a 1-D tensor, or None
    when this rank holds none). save_state_dict writes the piece; load_state_dict fills it."""

    def __init__(self, shape, dtype, begin=0, local=None):
        self.shape, self.dtype, self.begin, self.local = tuple(shape), dtype, int(begin), local

    def __repr__(self):
        n = 0 if self.local is None else self.local.numel()
        return f"ShardedTensor(shape={self.shape}, dtype={self.dtype}, elements [{self.begin}, {self.begin + n}))"


class FileSystemWriter:
    """Where save_state_dict writes: a directory (created if needed) holding one file per rank
    and metadata.safetensors. torch's tuning arguments are accepted and have no effect."""

    def __init__(self, path, single_file_per_rank=True, sync_files=True, thread_count=1,
                 per_thread_copy_ahead=10_000_000):
        self.path = str(path)


class FileSystemReader:
    """What load_state_dict reads: a directory written by save_state_dict (with any number of
    ranks) or by ember's C++ save_sharded."""

    def __init__(self, path):
        self.path = str(path)


def _path(x, op, cls):
    if isinstance(x, cls):
        return x.path
    if isinstance(x, str) or hasattr(x, "__fspath__"):
        return str(x)
    raise TypeError(f"[{op}] expected a {cls.__name__} or a directory path, not {type(x).__name__}")


def _flatten(d, prefix, out, op):
    for k, v in d.items():
        if not isinstance(k, str):
            raise TypeError(f"[{op}] state dict keys must be str, got {k!r}")
        key = prefix + k
        if isinstance(v, dict):
            _flatten(v, key + ".", out, op)
        else:
            out[key] = (d, k, v)
    return out


def _group(process_group):
    if process_group is None:
        return _C._distributed.default_group()
    return process_group


def save_state_dict(state_dict, storage_writer, process_group=None, coordinator_rank=0, no_dist=False):
    """Writes state_dict as a sharded checkpoint: a collective over process_group (the default
    group when None). Tensors are written whole by coordinator_rank (global rank), each
    ShardedTensor's piece by the rank holding it; other values (numbers, str, lists) are
    kept from rank 0. Nested dicts are flattened with '.'-joined keys."""
    op = "save_state_dict"
    path = _path(storage_writer, op, FileSystemWriter)
    if no_dist:
        raise ValueError(f"[{op}] no_dist=True is not supported for saving: call it on every rank of an "
                         "initialized process group (even a group of one)")
    from ... import distributed as dist
    dist._require()
    if not dist.is_initialized():
        raise RuntimeError(f"[{op}] the default process group is not initialized; call "
                           "ember.distributed.init_process_group() first (load_state_dict needs none)")
    group = _group(process_group)
    me = group.global_rank(group.rank())
    entries, replicated = [], {}
    for key, (_, _, v) in _flatten(state_dict, "", OrderedDict(), op).items():
        if isinstance(v, ShardedTensor):
            local = None if v.local is None or v.local.numel() == 0 else v.local.detach().reshape(-1)
            entries.append((key, list(v.shape), v.dtype, v.begin, local))
        elif isinstance(v, _C.Tensor):
            t = v.detach()
            entries.append((key, list(t.shape), t.dtype, 0, t.reshape(-1) if me == coordinator_rank else None))
        else:
            replicated[key] = v
    _C._distributed.save_sharded_state(entries, {"values": replicated}, path, group)


def _read_into(reader, key, v, op):
    if not reader.contains(key):
        raise RuntimeError(f"[{op}] the checkpoint in '{reader.dir}' has no tensor '{key}'; load a checkpoint of the "
                           "same model (its tensors: " + ", ".join(reader.names()[:10]) + ")")
    shape = tuple(reader.shape(key))
    if isinstance(v, ShardedTensor):
        if shape != v.shape:
            raise RuntimeError(f"[{op}] '{key}' is {list(shape)} in the checkpoint but {list(v.shape)} here; load a "
                               "checkpoint of the same model")
        if v.local is not None and v.local.numel() > 0:
            v.local.copy_(reader.read(key, v.begin, v.begin + v.local.numel()).to(v.local.dtype))
    else:
        if shape != tuple(v.shape):
            raise RuntimeError(f"[{op}] '{key}' is {list(shape)} in the checkpoint but {list(v.shape)} here; load a "
                               "checkpoint of the same model")
        v.copy_(reader.read_full(key).to(v.dtype))


def load_state_dict(state_dict, storage_reader, process_group=None, coordinator_rank=0, no_dist=False):
    """Fills state_dict in place from a sharded checkpoint saved with any number of ranks:
    each tensor is read whole, each ShardedTensor's piece reads the elements it holds, other
    values are replaced by the saved ones. Reads only; no communication."""
    op = "load_state_dict"
    reader = _C._distributed.ShardedCheckpointReader(_path(storage_reader, op, FileSystemReader))
    values = (reader.replicated() or {}).get("values", {})
    with no_grad():
        for key, (d, k, v) in _flatten(state_dict, "", OrderedDict(), op).items():
            if isinstance(v, (ShardedTensor, _C.Tensor)):
                _read_into(reader, key, v, op)
            elif key in values:
                d[k] = values[key]
            else:
                raise RuntimeError(f"[{op}] the checkpoint in '{reader.dir}' has no value '{key}'; load a checkpoint "
                                   "of the same model")


# ---------------------------------------------------------------- models and optimizers
# Names as the C++ save_sharded writes them (Note [Sharded checkpoint layout]): model
# tensors "model.<state_dict key>", optimizer state "optim.<parameter name>.<state key>"
# (step as a float scalar), and in the replicated part "model_keys" and
# "optim": {"param_groups": [{options..., "params": [parameter names]}]}.

def _options(group):
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in group.items() if k != "params"}


def _kind(model, optimizer, op):
    from ..fsdp import FullyShardedDataParallel
    from ..optim import ZeroRedundancyOptimizer
    if isinstance(model, FullyShardedDataParallel):
        if isinstance(optimizer, ZeroRedundancyOptimizer):
            raise TypeError(f"[{op}] a FullyShardedDataParallel model takes a plain optimizer over its parameters(), "
                            "not a ZeroRedundancyOptimizer")
        return "fsdp"
    if isinstance(optimizer, ZeroRedundancyOptimizer):
        return "zero"
    raise TypeError(f"[{op}] expected a FullyShardedDataParallel model, or a module with a ZeroRedundancyOptimizer "
                    f"(got {type(model).__name__} and {type(optimizer).__name__}); for anything else build the "
                    "state dict yourself and call save_state_dict")


def _step_tensor(state):
    st = state.get("step")
    if st is None:
        return None
    return _C.scalar_tensor(float(st.item() if isinstance(st, _C.Tensor) else st))


def save_sharded(dir, model, optimizer=None):
    """Writes the model's (and the optimizer's) state as a sharded checkpoint, on every rank.
    model: a FullyShardedDataParallel (optimizer: one built on its parameters()), or a module
    replicated on every rank with a ZeroRedundancyOptimizer (each parameter and its state
    written by the rank that owns it)."""
    op = "save_sharded"
    kind = _kind(model, optimizer, op)
    state, replicated = OrderedDict(), {}
    if kind == "fsdp":
        group = model.process_group
        for k, v in model.sharded_state_dict().items():
            state["model." + k] = v
        replicated["model_keys"] = list(model._core.original_state_keys())
        if optimizer is not None:
            units = model._unit_pieces()
            unit_of = {id(f): k for k, f in enumerate(model._flat_params)}
            names_of = model.unit_parameter_names()
            groups = []
            for g in optimizer.param_groups:
                names = []
                for p in g["params"]:
                    k = unit_of.get(id(p))
                    if k is None:
                        raise ValueError(f"[{op}] the optimizer holds a tensor (shape {tuple(p.shape)}) that is not "
                                         "one of the model's shards; build the optimizer on fsdp.parameters()")
                    names += names_of[k]
                    st = optimizer.state.get(p, {})
                    for name, shape, begin, end, offset in units[k]:
                        for key, t in st.items():
                            if key == "step" or not isinstance(t, _C.Tensor):
                                continue
                            if t.numel() != p.numel():
                                raise ValueError(f"[{op}] optimizer state '{key}' has {t.numel()} elements, not the "
                                                 f"shard's {p.numel()}: only state shaped like the parameter can be "
                                                 "sharded")
                            flat = t.detach().reshape(-1)
                            state[f"optim.{name}.{key}"] = ShardedTensor(
                                shape, t.dtype, begin, flat[offset:offset + end - begin] if end > begin else None)
                        step = _step_tensor(st)
                        if step is not None:
                            state[f"optim.{name}.step"] = step
                groups.append(dict(_options(g), params=names))
            replicated["optim"] = {"param_groups": groups}
    else:
        group = optimizer.process_group
        me = group.rank()
        named = OrderedDict(model.named_parameters())
        name_of = {id(p): n for n, p in named.items()}
        keys = list(model.state_dict().keys())
        for key, t in model.state_dict().items():
            t = t.detach()
            writer = optimizer.owner(named[key]) if key in named else 0
            state["model." + key] = ShardedTensor(t.shape, t.dtype, 0, t.reshape(-1) if writer == me else None)
        replicated["model_keys"] = keys
        groups = []
        for g in optimizer.param_groups:
            for p in g["params"]:
                if id(p) not in name_of:
                    raise ValueError(f"[{op}] the optimizer holds a tensor (shape {tuple(p.shape)}) that is not a "
                                     "parameter of the model; build it on model.parameters()")
            groups.append(dict(_options(g), params=[name_of[id(p)] for p in g["params"]]))
        for p in (p for groups_ in optimizer._partition[me] for p in groups_):
            st = optimizer.optim.state.get(p, {})
            for key, t in st.items():
                if key != "step" and isinstance(t, _C.Tensor):
                    t = t.detach()
                    state[f"optim.{name_of[id(p)]}.{key}"] = ShardedTensor(t.shape, t.dtype, 0, t.reshape(-1))
            step = _step_tensor(st)
            if step is not None:
                state[f"optim.{name_of[id(p)]}.step"] = ShardedTensor((), step.dtype, 0, step.reshape(-1))
        replicated["optim"] = {"param_groups": groups}
    me = group.global_rank(group.rank())
    entries = []
    for key, v in state.items():
        if isinstance(v, ShardedTensor):
            entries.append((key, list(v.shape), v.dtype, v.begin, v.local))
        else:  # replicated tensors (the step): the group's first rank writes them
            entries.append((key, list(v.shape), v.dtype, 0, v.reshape(-1) if me == group.global_rank(0) else None))
    if optimizer is None:
        replicated.pop("optim", None)
    _C._distributed.save_sharded_state(entries, replicated, str(dir), group)


def _saved_groups(reader, op):
    rep = reader.replicated() or {}
    if "optim" not in rep:
        raise RuntimeError(f"[{op}] the checkpoint in '{reader.dir}' holds no optimizer state; load it without an "
                           "optimizer")
    return rep["optim"]["param_groups"]


def _apply_options(optimizer, saved, op):
    if len(saved) != len(optimizer.param_groups):
        raise RuntimeError(f"[{op}] the checkpoint has {len(saved)} optimizer parameter groups, the optimizer "
                           f"{len(optimizer.param_groups)}; load it into an optimizer built like the saved one")
    for g, s in zip(optimizer.param_groups, saved):
        for k, v in s.items():
            if k != "params" and k in g:
                g[k] = tuple(v) if isinstance(g[k], tuple) and isinstance(v, list) else v


def _state_keys(reader, name):
    prefix = f"optim.{name}."
    return [n[len(prefix):] for n in reader.names()
            if n.startswith(prefix) and "." not in n[len(prefix):] and n[len(prefix):] != "step"]


def load_sharded(dir, model, optimizer=None):
    """Loads a checkpoint of save_sharded (saved with any number of ranks) into the model (and
    the optimizer): each rank reads only what it holds. No communication."""
    op = "load_sharded"
    kind = _kind(model, optimizer, op)
    reader = _C._distributed.ShardedCheckpointReader(str(dir))
    with no_grad():
        if kind == "fsdp":
            sd = OrderedDict(("model." + k, v) for k, v in model.sharded_state_dict().items())
            load_state_dict(sd, reader.dir)
            if optimizer is None:
                return
            _apply_options(optimizer, _saved_groups(reader, op), op)
            units = model._unit_pieces()
            unit_of = {id(f): k for k, f in enumerate(model._flat_params)}
            for g in optimizer.param_groups:
                for p in g["params"]:
                    k = unit_of.get(id(p))
                    if k is None:
                        raise ValueError(f"[{op}] the optimizer holds a tensor (shape {tuple(p.shape)}) that is not "
                                         "one of the model's shards; build the optimizer on fsdp.parameters()")
                    first = model.unit_parameter_names()[k][0]
                    keys = _state_keys(reader, first)
                    if not keys and not reader.contains(f"optim.{first}.step"):
                        optimizer.state.pop(p, None)
                        continue
                    st = {}
                    for key in keys:
                        t = _C.zeros(p.numel(), dtype=reader.dtype(f"optim.{first}.{key}"))
                        for name, shape, begin, end, offset in units[k]:
                            if end > begin:
                                t[offset:offset + end - begin] = reader.read(f"optim.{name}.{key}", begin, end)
                        st[key] = t.view(p.shape)
                    if reader.contains(f"optim.{first}.step"):
                        st["step"] = reader.read_full(f"optim.{first}.step").float()
                    optimizer.state[p] = st
        else:
            sd = OrderedDict(("model." + k, v) for k, v in model.state_dict().items())
            load_state_dict(sd, reader.dir)
            _apply_options(optimizer, _saved_groups(reader, op), op)
            _apply_options(optimizer.optim, _saved_groups(reader, op), op)
            name_of = {id(p): n for n, p in model.named_parameters()}
            local = optimizer.optim
            for groups_ in optimizer._partition[optimizer.rank]:
                for p in groups_:
                    name = name_of[id(p)]
                    keys = _state_keys(reader, name)
                    st = {key: reader.read_full(f"optim.{name}.{key}").to(p.dtype if key != "step" else _C.float32)
                          for key in keys}
                    if reader.contains(f"optim.{name}.step"):
                        st["step"] = reader.read_full(f"optim.{name}.step").float()
                    if st:
                        local.state[p] = st
                    else:
                        local.state.pop(p, None)


def load_full_checkpoint(dir):
    """A checkpoint of save_sharded (either kind, any number of ranks) as one process sees it:
    (the unsharded model's state_dict, the optimizer's state dict in a plain optimizer's
    layout over model.parameters(), or None when none was saved). Needs no process group."""
    op = "load_full_checkpoint"
    reader = _C._distributed.ShardedCheckpointReader(str(dir))
    rep = reader.replicated() or {}
    if "model_keys" not in rep:
        raise RuntimeError(f"[{op}] the checkpoint in '{reader.dir}' was not written by save_sharded (it lists no "
                           "model keys); read it with load_state_dict")
    model = OrderedDict((k, reader.read_full("model." + k)) for k in rep["model_keys"])
    if "optim" not in rep:
        return model, None
    groups, state, start = [], {}, 0
    for s in rep["optim"]["param_groups"]:
        names = list(s["params"])
        for i, name in enumerate(names):
            st = {key: reader.read_full(f"optim.{name}.{key}") for key in _state_keys(reader, name)}
            if reader.contains(f"optim.{name}.step"):
                st["step"] = reader.read_full(f"optim.{name}.step").float()
            if st:
                state[start + i] = st
        groups.append(dict({k: (tuple(v) if k == "betas" else v) for k, v in s.items() if k != "params"},
                           params=list(range(start, start + len(names)))))
        start += len(names)
    return model, {"state": state, "param_groups": groups}
