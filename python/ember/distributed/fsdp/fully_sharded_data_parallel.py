"""FullyShardedDataParallel for Python modules: ember's C++ FSDP (src/ember/distributed/fsdp.h,
Note [FSDP units]) over a C++ mirror of the Python module (python/csrc/distributed_shard.cpp,
Note [FSDP over Python modules]). Each rank keeps a 1/world_size shard of every unit's
parameters (the `_flat_param` of the unit's module), of their gradients and, through an
optimizer built on fsdp.parameters(), of the optimizer state."""

import enum
from collections import OrderedDict
from dataclasses import dataclass

from ... import _C
from ...nn.module import Module
from ...nn.parallel.distributed import _output_tensors
from ...nn.parameter import Parameter

_NAME = "FullyShardedDataParallel"


class ShardingStrategy(enum.Enum):
    """What is sharded between uses (torch.distributed.fsdp.ShardingStrategy)."""

    FULL_SHARD = 1     # parameters freed after each unit's forward, gathered again for its backward
    SHARD_GRAD_OP = 2  # parameters kept from a unit's forward until its gradients are reduced
    NO_SHARD = 3       # not supported: use DistributedDataParallel


@dataclass
class FSDPMemoryStats:
    """Bytes held on this rank (FullyShardedDataParallel.memory_stats)."""

    sharded_parameter_bytes: int  # the _flat_param shards (with padding)
    sharded_gradient_bytes: int   # their gradients
    optimizer_state_bytes: int    # the given optimizer's state for the shards
    full_parameter_bytes: int     # the unsharded model's parameters (for comparison)
    gathered_bytes_now: int       # full parameters materialized right now
    peak_gathered_bytes: int      # the most materialized at once so far


def _mirror(module, name, mirrors, path=""):
    """The C++ mirror of `module` and its descendants (Note [FSDP over Python modules])."""
    m = _C._distributed.ModuleMirror(name)
    mirrors[path] = (module, m)
    for n, p in module._parameters.items():
        if p is not None:
            m.add_parameter(n, p)
    for n, b in module._buffers.items():
        if b is not None:
            m.add_buffer(n, b)
    for n, child in module._modules.items():
        if child is not None:
            m.add_child(n, _mirror(child, type(child).__name__, mirrors, f"{path}.{n}" if path else n))
    return m


def _route_forward(module, mirror):
    """Makes module's forward run between its mirror's hooks (gather before, hooks after)."""
    forward = module.forward

    def routed(*args, **kwargs):
        box = []

        def run(_inputs):
            out = forward(*args, **kwargs)
            box.append(out)
            return _output_tensors(out, [])

        mirror.run_with_hooks(_output_tensors(list(args) + list(kwargs.values()), []), run)
        return box[0]

    module.__dict__["forward"] = routed


class FullyShardedDataParallel(Module):
    """Shards `module` over `process_group` (the default group when None):

        fsdp = FullyShardedDataParallel(model)
        opt = ember.optim.Adam(fsdp.parameters(), lr=1e-3)   # the local shards
        F.cross_entropy(fsdp(x), y).backward()               # this rank's share of a batch
        opt.step()

    Units: each direct child that has parameters, or the modules auto_wrap_policy picks;
    auto_wrap_policy is called as policy(module=m, recurse=False, unwrapped_params=n) for each
    descendant, depth first, and a module it accepts becomes a unit (its own descendants are
    not visited). The parameters left over form the root unit. sharding_strategy: FULL_SHARD
    or SHARD_GRAD_OP. sync_module_states (default True here, unlike torch) broadcasts rank
    0's parameters and buffers at construction. full_state_dict() gives the unsharded state
    under the module's own names. cpu_offload, backward_prefetch, mixed_precision,
    ignored_modules, param_init_fn, device_id, forward_prefetch, limit_all_gathers and
    use_orig_params=True are not supported."""

    def __init__(self, module, process_group=None, sharding_strategy=None, cpu_offload=None, auto_wrap_policy=None,
                 backward_prefetch=None, mixed_precision=None, ignored_modules=None, param_init_fn=None,
                 device_id=None, sync_module_states=True, forward_prefetch=False, limit_all_gathers=False,
                 use_orig_params=False):
        super().__init__()
        from ... import distributed as dist
        dist._require()
        if not isinstance(module, Module):
            raise TypeError(f"[{_NAME}] module must be an ember.nn.Module, not {type(module).__name__}")
        unsupported = dict(cpu_offload=cpu_offload, backward_prefetch=backward_prefetch,
                           mixed_precision=mixed_precision, ignored_modules=ignored_modules,
                           param_init_fn=param_init_fn, device_id=device_id, forward_prefetch=forward_prefetch,
                           limit_all_gathers=limit_all_gathers, use_orig_params=use_orig_params)
        given = [k for k, v in unsupported.items() if v not in (None, False)]
        if given:
            raise ValueError(f"[{_NAME}] {', '.join(given)} {'is' if len(given) == 1 else 'are'} not supported by "
                             "ember; leave them at their defaults")
        strategy = ShardingStrategy.FULL_SHARD if sharding_strategy is None else sharding_strategy
        if not isinstance(strategy, ShardingStrategy):
            raise TypeError(f"[{_NAME}] sharding_strategy must be a ShardingStrategy, not {strategy!r}")
        if strategy is ShardingStrategy.NO_SHARD:
            raise ValueError(f"[{_NAME}] ShardingStrategy.NO_SHARD is not supported; use "
                             "ember.nn.parallel.DistributedDataParallel, which is what it amounts to")
        if process_group is dist.GroupMember.NON_GROUP_MEMBER:
            raise ValueError(f"[{_NAME}] this rank is not a member of process_group")
        if not any(True for _ in module.parameters()):
            raise ValueError(f"[{_NAME}] the module ({type(module).__name__}) has no parameters, so there is nothing "
                             "to shard; wrap a module that has parameters, or run this one without FSDP")
        if not dist.is_initialized():
            raise RuntimeError(f"[{_NAME}] the default process group is not initialized; call "
                               "ember.distributed.init_process_group() first")
        group = process_group if process_group is not None else _C._distributed.default_group()
        mirrors = {}
        root = _mirror(module, type(module).__name__, mirrors)
        policy = None
        if auto_wrap_policy is not None:
            def policy(path):
                m = mirrors[path][0]
                return bool(auto_wrap_policy(module=m, recurse=False,
                                             unwrapped_params=sum(p.numel() for p in m.parameters())))
        core = _C._distributed.FSDPCore(root, group, _C._distributed.ShardingStrategy.__members__[strategy.name],
                                        bool(sync_module_states), policy)
        self._fsdp_wrapped_module = module
        d = self.__dict__
        d["process_group"] = group
        d["sharding_strategy"] = strategy
        d["_core"] = core
        d["_mirrors"] = mirrors
        self._take_parameters()

    def _take_parameters(self):
        """Moves the original parameters out of the Python modules' registries (they stay
        attributes, which the forwards read) and registers each unit's shard as `_flat_param`."""
        core, mirrors = self._core, self._mirrors
        taken = set()
        self.__dict__["_flat_params"] = []
        for k, path in enumerate(core.unit_names()):
            owner, _ = mirrors[path]
            for name in core.unit_parameter_names()[k]:
                prefix, _, leaf = name.rpartition(".")
                taken.add(id(mirrors[prefix][0]._parameters[leaf]))
            flat = Parameter._share(core.shard(k))
            self._flat_params.append(flat)
            owner.register_parameter("_flat_param", flat)
            if path:
                _route_forward(owner, mirrors[path][1])
        for m, _ in mirrors.values():
            for leaf, p in list(m._parameters.items()):
                if p is not None and id(p) in taken:
                    del m._parameters[leaf]
                    m.__dict__[leaf] = p

    @property
    def module(self):
        """The wrapped module."""
        return self._fsdp_wrapped_module

    def forward(self, *args, **kwargs):
        self._core.prepare_forward()
        out = self._fsdp_wrapped_module(*args, **kwargs)
        self._core.after_forward(_output_tensors(out, []))
        return out

    def unit_names(self):
        """The units' module paths ("" for the root unit), in order."""
        return list(self._core.unit_names())

    def unit_parameter_names(self):
        """The original parameter names of each unit."""
        return [list(n) for n in self._core.unit_parameter_names()]

    def full_state_dict(self):
        """The unsharded parameters and buffers under the wrapped module's own names (what its
        state_dict() gave before wrapping). A collective: call it on every rank."""
        return OrderedDict(self._core.full_state_dict())

    def load_full_state_dict(self, state_dict, strict=True):
        """Loads such a dict on every rank (no communication): each rank keeps its shard."""
        self._core.load_full_state_dict(list(state_dict.items()), bool(strict))

    def sharded_state_dict(self):
        """This rank's part of the state for ember.distributed.checkpoint.save_state_dict: each
        parameter as a ShardedTensor (the elements of its flattening held here), each buffer
        as the tensor itself, under the wrapped module's own names."""
        from ..checkpoint import ShardedTensor
        out = OrderedDict()
        pieces = {}
        for name, shape, begin, end, unit, offset in self._core.local_pieces():
            shard = self._flat_params[unit].detach()
            local = shard[offset:offset + end - begin] if end > begin else None
            pieces[name] = ShardedTensor(tuple(shape), shard.dtype, begin, local)
        buffers = dict(self._fsdp_wrapped_module.named_buffers())
        for key in self._core.original_state_keys():
            out[key] = pieces[key] if key in pieces else buffers[key]
        return out

    def _unit_pieces(self):
        """Per unit, the (name, shape, begin, end, shard_offset) it holds on this rank."""
        units = [[] for _ in self._flat_params]
        for name, shape, begin, end, unit, offset in self._core.local_pieces():
            units[unit].append((name, tuple(shape), begin, end, offset))
        return units

    def memory_stats(self, optimizer=None):
        """This rank's memory (FSDPMemoryStats); with the optimizer built on parameters(), its
        state for the shards too."""
        s = self._core.memory_stats()
        opt_bytes = 0
        if optimizer is not None:
            for flat in self._flat_params:
                for v in optimizer.state.get(flat, {}).values():
                    if isinstance(v, _C.Tensor):
                        opt_bytes += v.numel() * v.element_size()
        return FSDPMemoryStats(s["sharded_parameter_bytes"], s["sharded_gradient_bytes"], opt_bytes,
                               s["full_parameter_bytes"], s["gathered_bytes_now"], s["peak_gathered_bytes"])
