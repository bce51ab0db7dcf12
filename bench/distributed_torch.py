"""The torch.distributed (gloo) side of bench/distributed.py: the same all-reduce timing
loop as bench/distributed.cpp, started by ember-run (env://)."""
import sys
import time

import torch
import torch.distributed as dist


def make_model(kind):
    nn = torch.nn
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                             nn.Linear(256, 10))
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))


def ddp_steps(kind, single, batch, steps):
    """The same training step as bench/distributed.cpp's --ddp-step, with torch DDP."""
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = make_model(kind)
    net = model if single else torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    g = torch.Generator().manual_seed(dist.get_rank() + 1)
    x = torch.randn(batch, 1, 28, 28, generator=g)
    y = torch.randint(0, 10, (batch,), generator=g)
    times = []
    for i in range(steps + 3):
        start = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
        if i >= 3:
            times.append(time.perf_counter() - start)
    times.sort()
    if dist.get_rank() == 0:
        print(f"ddp_step {kind} {'single' if single else 'ddp'} seconds_per_step {times[len(times) // 2]:.9f}",
              flush=True)
    dist.destroy_process_group()


def main():
    args = sys.argv[1:]
    if "--ddp-step" in args:
        torch.set_num_threads(1)
        batch = int(args[args.index("--batch") + 1]) if "--batch" in args else 64
        steps = int(args[args.index("--steps") + 1]) if "--steps" in args else 20
        ddp_steps(args[args.index("--ddp-step") + 1], "--single" in args, batch, steps)
        return
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
