"""The torch.distributed (gloo) side of bench/distributed.py: the same all-reduce timing
loop as bench/distributed.cpp, started by ember-run (env://)."""
import sys
import time

import torch
import torch.distributed as dist


def main():
    max_bytes = 64 << 20
    min_bytes = 1024
    args = sys.argv[1:]
    if "--max-bytes" in args:
        max_bytes = int(args[args.index("--max-bytes") + 1])
    if "--min-bytes" in args:
        min_bytes = int(args[args.index("--min-bytes") + 1])
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    size = min_bytes
    while size <= max_bytes:
        t = torch.ones(size // 4)
        for _ in range(3):
            dist.all_reduce(t)
        iters = max(5, min(2000, (64 << 20) // size))
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t)
        s = time.perf_counter() - start
        if dist.get_rank() == 0:
            print(f"size_bytes {size} iters {iters} seconds_per_call {s / iters:.9f}", flush=True)
        size *= 4
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
