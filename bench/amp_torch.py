#!/usr/bin/env python3
"""bench/amp_torch.py: the PyTorch 1.13 side of bench/amp: the Fashion-MNIST CNN's training
step (batch 64, Adam) in float32 or under torch.autocast("cpu", torch.bfloat16), or a
size^3 matrix product in float32 or bfloat16.

  /usr/bin/python3 bench/amp_torch.py --what step|gemm --mode fp32|bf16 [--steps 40] [--threads 2]
"""
import argparse
import re
import time

import torch
import torch.nn as nn


def median_ms(reps, fn):
    ms = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t0) * 1e3)
    ms.sort()
    return ms[len(ms) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--what", default="step", choices=["step", "gemm"])
    ap.add_argument("--mode", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--size", type=int, default=1024)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    bf16 = args.mode == "bf16"
    cap = re.search(r"CPU capability usage: (\S+)", torch.__config__.show())
    isa = cap.group(1) if cap else "?"
    if args.what == "gemm":
        dt = torch.bfloat16 if bf16 else torch.float32
        a = torch.randn(args.size, args.size).to(dt)
        b = torch.randn(args.size, args.size).to(dt)
        for _ in range(2):
            torch.matmul(a, b)
        ms = median_ms(max(3, args.steps // 4), lambda: torch.matmul(a, b))
        print("summary: ms=%.4f gflops=%.2f path=torch-%s" % (ms, 2.0 * args.size ** 3 / ms / 1e6, isa))
        return
    model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(64, 1, 28, 28)
    y = torch.randint(0, 10, (64,))

    def step():
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(5):
        step()
    ms = median_ms(args.steps, step)
    print("summary: ms=%.4f gflops=0 path=torch-%s" % (ms, isa))


if __name__ == "__main__":
    main()
