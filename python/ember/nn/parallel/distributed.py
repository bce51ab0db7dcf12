"""DistributedDataParallel for Python modules: the wrapper is Python (it calls the module),
the gradient averaging is ember's C++ Reducer (src/ember/distributed/reducer.h, Note [DDP
buckets]): hooks on the parameters copy each gradient into a bucket during backward, full
buckets are all-reduced asynchronously, and when backward returns every .grad holds the
average over the ranks."""

from contextlib import contextmanager

from ... import _C
from ..module import Module


def _output_tensors(out, acc):
    if isinstance(out, _C.Tensor):
        acc.append(out)
    elif isinstance(out, (list, tuple)):
        for o in out:
            _output_tensors(o, acc)
    elif isinstance(out, dict):
        for o in out.values():
            _output_tensors(o, acc)
    return acc


class DistributedDataParallel(Module):
    """Data-parallel training: each rank holds a replica of `module` and its share of each
    batch; backward averages the gradients over the ranks of `process_group` (the default
    group when None), so that an optimizer step gives the same parameters everywhere.

    Construction broadcasts the parameters and buffers of the group's first rank; with
    broadcast_buffers, every forward broadcasts the buffers again. bucket_cap_mb sizes the
    buckets (the first closes at 1 MB); find_unused_parameters lets parts of the model go
    without gradients. gradient_as_bucket_view makes each .grad a view of its bucket (no copy
    in or out); static_graph fixes the unused parameters and the bucket order after the first
    iteration (ddp.h, Notes [Gradients as bucket views] and [Static graph]).
    device_ids/output_device must be None (ember runs on the CPU)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=25, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False):
        super().__init__()
        from ... import distributed as dist
        if not dist.is_available():
            dist._require()
        if not isinstance(module, Module):
            raise TypeError(f"[DistributedDataParallel] module must be an ember.nn.Module, not {type(module).__name__}")
        if device_ids or output_device is not None:
            raise ValueError("[DistributedDataParallel] device_ids and output_device must be None: ember runs on the "
                             f"CPU (got device_ids={device_ids}, output_device={output_device})")
        if dim != 0:
            raise ValueError(f"[DistributedDataParallel] dim={dim} is not supported; batches are split along dim 0")
        if process_group is dist.GroupMember.NON_GROUP_MEMBER:
            raise ValueError("[DistributedDataParallel] this rank is not a member of process_group")
        group = process_group if process_group is not None else _C._distributed.default_group()
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("[DistributedDataParallel] the module has no parameter that requires grad, so there is "
                               "nothing to average; train it without DistributedDataParallel")
        self.module = module
        self.process_group = group
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self._root = group.global_rank(0)
        from ...autograd.grad_mode import no_grad
        with no_grad():
            for p in module.parameters():
                dist.broadcast(p, self._root, group=group)
            for b in module.buffers():
                dist.broadcast(b, self._root, group=group)
        self.gradient_as_bucket_view = bool(gradient_as_bucket_view)
        self.static_graph = bool(static_graph)
        self.reducer = _C._distributed.Reducer([n for n, _ in named], [p for _, p in named], group,
                                               float(bucket_cap_mb), 1.0, bool(find_unused_parameters),
                                               self.gradient_as_bucket_view, self.static_graph)

    def forward(self, *inputs, **kwargs):
        self.reducer.prepare_forward(self.require_backward_grad_sync)
        if self.broadcast_buffers and self.process_group.size() > 1:
            buffers = list(self.module.buffers())
            if buffers:
                from ... import distributed as dist
                from ...autograd.grad_mode import no_grad
                with no_grad():
                    for b in buffers:
                        dist.broadcast(b, self._root, group=self.process_group)
        out = self.module(*inputs, **kwargs)
        if (self.find_unused_parameters or self.static_graph) and self.require_backward_grad_sync:
            self.reducer.after_forward(_output_tensors(out, []))
        return out

    @contextmanager
    def no_sync(self):
        """Backward passes of forwards run inside this block are not followed by a gradient
        reduction (gradient accumulation); the next synchronized backward averages the sum."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def register_comm_hook(self, state, hook):
        """Replaces each gradient bucket's reduction by `hook` (torch's register_comm_hook): one
        of ember.distributed.algorithms.ddp_comm_hooks.default_hooks' allreduce_hook,
        fp16_compress_hook, bf16_compress_hook, with a process group (None: the default group)
        as `state`. Once, before the first backward. Custom Python hooks are not supported."""
        name = getattr(hook, "_ember_builtin_comm_hook", None)
        if name is None:
            raise NotImplementedError(
                "[DistributedDataParallel.register_comm_hook] ember runs only the built-in hooks of "
                "ember.distributed.algorithms.ddp_comm_hooks.default_hooks (allreduce_hook, fp16_compress_hook, "
                f"bf16_compress_hook) from Python, not {getattr(hook, '__name__', hook)!r}; write custom hooks in C++ "
                "(DistributedDataParallel::register_comm_hook, src/ember/distributed/comm_hooks.h)")
        from ... import distributed as dist
        if state is dist.GroupMember.NON_GROUP_MEMBER:
            raise ValueError("[DistributedDataParallel.register_comm_hook] this rank is not a member of the state's group")
        self.reducer.register_builtin_comm_hook(name, state)

    def bucket_names(self):
        """The parameter names of each gradient bucket, bucket 0 (reduced first) first."""
        return self.reducer.bucket_names()
