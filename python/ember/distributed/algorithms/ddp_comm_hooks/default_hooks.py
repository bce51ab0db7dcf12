"""torch.distributed.algorithms.ddp_comm_hooks.default_hooks for ember's
DistributedDataParallel. Pass one to register_comm_hook with a process group (or None, the
default group) as its state:

    ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)

The hooks run in C++ during backward (src/ember/distributed/comm_hooks.h): allreduce_hook
divides each gradient bucket by the world size and all-reduces it (DDP's reduction without a
hook, bit for bit); fp16_compress_hook and bf16_compress_hook reduce a float16 / bfloat16
copy and write the result back. They cannot be called from Python: ember has no Python
GradBucket or Future, so custom Python hooks are not supported (C++ hooks are)."""


def _builtin(name, doc):
    def hook(process_group, bucket):
        raise TypeError(f"{name}_hook runs inside DistributedDataParallel; pass it to "
                        "DistributedDataParallel.register_comm_hook(state, hook) instead of calling it")

    hook.__name__ = hook.__qualname__ = f"{name}_hook"
    hook.__doc__ = doc
    hook._ember_builtin_comm_hook = name
    return hook


allreduce_hook = _builtin("allreduce", "Divides each bucket by the world size and all-reduces it (SUM).")
fp16_compress_hook = _builtin("fp16_compress", "All-reduces a float16 copy of each bucket (divided by the world "
                                               "size) and writes the result back.")
bf16_compress_hook = _builtin("bf16_compress", "All-reduces a bfloat16 copy of each bucket (divided by the world "
                                               "size) and writes the result back.")
