"""ZeroRedundancyOptimizer (torch.distributed.optim.ZeroRedundancyOptimizer, ZeRO stage 1)
for ember's Python optimizers.

ember's optimizers are Python classes (ember/optim), so this wrapper is Python too, and any
of them, subclasses included, can be wrapped. It follows the C++ class
(src/ember/distributed/zero_redundancy_optimizer.h) rule for rule: the partition is Note
[ZeRO partition] (groups in order, largest parameter first, each to the rank with the
fewest elements so far, the lowest on ties), so a model splits the same way from C++ and
from Python; step() runs the wrapped optimizer on this rank's share and then every rank
receives every updated parameter from its owner, so all ranks end identical and equal to
running the wrapped optimizer everywhere."""

from collections import defaultdict

from ... import _C
from ...autograd.grad_mode import enable_grad, no_grad
from ...optim.optimizer import Optimizer

_NAME = "ZeroRedundancyOptimizer"


class ZeroRedundancyOptimizer(Optimizer):
    """Wraps `optimizer_class` so that each rank of `process_group` (the default group when
    None) keeps optimizer state only for its share of `params`:

        ddp = DistributedDataParallel(model)
        opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=ember.optim.Adam, lr=1e-3)
        loss.backward(); opt.step()          # the same parameters on every rank afterwards

    `defaults` are the wrapped optimizer's keyword arguments. state_dict() needs
    consolidate_state_dict(to) on every rank first and then works on rank `to`.
    parameters_as_bucket_view and overlap_with_ddp (torch's options) are not supported."""

    def __init__(self, params, optimizer_class, process_group=None, parameters_as_bucket_view=False,
                 overlap_with_ddp=False, **defaults):
        from ... import distributed as dist
        dist._require()
        if parameters_as_bucket_view or overlap_with_ddp:
            raise ValueError(f"[{_NAME}] parameters_as_bucket_view and overlap_with_ddp are not supported by ember; "
                             "leave them False")
        if not (isinstance(optimizer_class, type) and issubclass(optimizer_class, Optimizer)):
            raise TypeError(f"[{_NAME}] optimizer_class must be an ember.optim.Optimizer subclass (e.g. "
                            f"ember.optim.Adam), not {optimizer_class!r}")
        if process_group is dist.GroupMember.NON_GROUP_MEMBER:
            raise ValueError(f"[{_NAME}] this rank is not a member of process_group")
        if not dist.is_initialized():
            raise RuntimeError(f"[{_NAME}] the default process group is not initialized; call "
                               "ember.distributed.init_process_group() first")
        self.__dict__["_building"] = True
        super().__init__(params, dict(defaults))
        self.process_group = process_group if process_group is not None else _C._distributed.default_group()
        self.rank = self.process_group.rank()
        self.world_size = self.process_group.size()
        self._optimizer_class = optimizer_class
        self._check_same_parameters_everywhere()
        self._load = [0] * self.world_size
        self._partition = [[] for _ in range(self.world_size)]  # [rank][group] -> params
        self._owner = {}
        for g in range(len(self.param_groups)):
            self._partition_group(g)
        local = [dict(self._options(g), params=self._partition[self.rank][g]) for g in range(len(self.param_groups))]
        self.optim = optimizer_class(local, **defaults)
        # The wrapped class's defaults (betas, eps, ...) become the global groups' too.
        for gg, lg in zip(self.param_groups, self.optim.param_groups):
            for k, v in lg.items():
                if k != "params":
                    gg.setdefault(k, v)
        self._consolidated = None
        self._consolidated_on = -1
        self.__dict__["_building"] = False

    # ---- partition (Note [ZeRO partition]) ----
    def _options(self, g):
        return {k: v for k, v in self.param_groups[g].items() if k != "params"}

    def _partition_group(self, g):
        for r in range(self.world_size):
            self._partition[r].append([])
        params = sorted(self.param_groups[g]["params"], key=lambda p: -p.numel())  # stable
        for p in params:
            r = min(range(self.world_size), key=lambda i: (self._load[i], i))
            self._load[r] += p.numel()
            self._partition[r][g].append(p)
            self._owner[id(p)] = r
        # Each rank's share in the group's own order (the wrapped optimizer's numbering).
        order = {id(p): i for i, p in enumerate(self.param_groups[g]["params"])}
        for r in range(self.world_size):
            self._partition[r][g].sort(key=lambda p: order[id(p)])

    def _check_same_parameters_everywhere(self):
        from ... import distributed as dist
        shapes = [[tuple(p.shape) for p in g["params"]] for g in self.param_groups]
        everyone = [None] * self.world_size
        dist.all_gather_object(everyone, shapes, group=self._group_arg())
        for r, theirs in enumerate(everyone):
            if theirs != shapes:
                raise RuntimeError(f"[{_NAME}] rank {self.process_group.global_rank(r)} passed other parameters "
                                   f"(shapes {theirs}) than rank {self.process_group.global_rank(self.rank)} "
                                   f"({shapes}); build the optimizer over the same model on every rank")

    def _group_arg(self):
        return self.process_group

    def partition(self):
        """Rank r's parameters, per group: partition()[r][g] (Note [ZeRO partition])."""
        return [[list(ps) for ps in groups] for groups in self._partition]

    def owner(self, param):
        """The rank (within the group) whose optimizer updates `param`."""
        r = self._owner.get(id(param))
        if r is None:
            raise ValueError(f"[{_NAME}.owner] the tensor (shape {tuple(param.shape)}) is not one of the optimizer's "
                             "parameters")
        return r

    def local_state_bytes(self):
        """Bytes of optimizer state held on this rank (the wrapped optimizer's state tensors)."""
        return sum(v.numel() * v.element_size() for st in self.optim.state.values() for v in st.values()
                   if isinstance(v, _C.Tensor))

    # ---- the optimizer API ----
    def add_param_group(self, param_group):
        super().add_param_group(param_group)
        if self.__dict__.get("_building"):
            return
        g = len(self.param_groups) - 1
        self._partition_group(g)
        self.optim.add_param_group(dict(self._options(g), params=self._partition[self.rank][g]))
        for k, v in self.optim.param_groups[-1].items():
            if k != "params":
                self.param_groups[g].setdefault(k, v)

    def step(self, closure=None, **kwargs):
        """Steps this rank's share with the wrapped optimizer (after copying the global groups'
        options into it, so lr schedulers on this object work), then sends each parameter from
        its owner to every rank."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for gg, lg in zip(self.param_groups, self.optim.param_groups):
            for k, v in gg.items():
                if k != "params":
                    lg[k] = v
        self.optim.step(**kwargs)
        self._sync_parameters()
        return loss

    def _sync_parameters(self):
        if self.world_size == 1:
            return
        from ... import distributed as dist
        with no_grad():
            for r in range(self.world_size):
                by_dtype = defaultdict(list)
                for group in self._partition[r]:
                    for p in group:
                        by_dtype[str(p.dtype)].append(p)
                for params in by_dtype.values():
                    flat = _C.cat([p.detach().reshape(-1) for p in params])
                    dist.broadcast(flat, src=self.process_group.global_rank(r), group=self._group_arg())
                    if r != self.rank:
                        off = 0
                        for p in params:
                            n = p.numel()
                            p.copy_(flat[off:off + n].view(p.shape))
                            off += n

    def consolidate_state_dict(self, to=0):
        """Collects every rank's optimizer state on rank `to` (a collective: call it on every
        rank); state_dict() then returns it there."""
        from ... import distributed as dist
        if not 0 <= to < self.world_size:
            raise ValueError(f"[{_NAME}.consolidate_state_dict] to={to} is not a rank of the group (0..."
                             f"{self.world_size - 1})")
        index = {}
        i = 0
        for g in self.param_groups:
            for p in g["params"]:
                index[id(p)] = i
                i += 1
        local = self.optim.state_dict()
        mine = {}
        li = 0
        for g in range(len(self.param_groups)):
            for p in self._partition[self.rank][g]:
                if li in local["state"]:
                    mine[index[id(p)]] = local["state"][li]
                li += 1
        gathered = [None] * self.world_size if self.rank == to else None
        dist.gather_object(mine, gathered, dst=self.process_group.global_rank(to), group=self._group_arg())
        self._consolidated_on = to
        if self.rank == to:
            state = {}
            for part in gathered:
                state.update(part)
            self._consolidated = dict(sorted(state.items()))
        else:
            self._consolidated = None

    def state_dict(self):
        """The full state in the wrapped optimizer's layout (parameters numbered across the
        groups), loadable into a plain optimizer or into a ZeroRedundancyOptimizer of any world
        size. Only on the rank given to the last consolidate_state_dict()."""
        if self._consolidated is None:
            where = ("never called" if self._consolidated_on < 0 else
                     f"last called with to={self._consolidated_on}, so only that rank has the state")
            raise RuntimeError(f"[{_NAME}.state_dict] call consolidate_state_dict(to={self.rank}) on every rank "
                               f"first (it was {where})")
        groups = []
        start = 0
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = list(range(start, start + len(g["params"])))
            start += len(g["params"])
            groups.append(packed)
        return {"state": dict(self._consolidated), "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Loads a full state dict (from state_dict() or from the wrapped optimizer class); each
        rank keeps the state of its own share."""
        saved = state_dict["param_groups"]
        if len(saved) != len(self.param_groups) or any(
                len(s["params"]) != len(g["params"]) for s, g in zip(saved, self.param_groups)):
            raise ValueError(f"[{_NAME}.load_state_dict] the state dict has groups of "
                             f"{[len(s['params']) for s in saved]} parameters, this optimizer "
                             f"{[len(g['params']) for g in self.param_groups]}; load a state dict of the same model")
        index = {}
        for s, g in zip(saved, self.param_groups):
            for old, p in zip(s["params"], g["params"]):
                index[id(p)] = old
        state = {int(k) if isinstance(k, str) else k: v for k, v in state_dict["state"].items()}
        local_state, local_groups, li = {}, [], 0
        for g, s in enumerate(saved):
            ids = []
            for p in self._partition[self.rank][g]:
                if index[id(p)] in state:
                    local_state[li] = state[index[id(p)]]
                ids.append(li)
                li += 1
            local_groups.append(dict({k: v for k, v in s.items() if k != "params"}, params=ids))
        self.optim.load_state_dict({"state": local_state, "param_groups": local_groups})
        for g, s in zip(self.param_groups, saved):
            for k, v in s.items():
                if k != "params":
                    g[k] = v
