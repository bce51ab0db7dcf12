#!/usr/bin/env python3
"""bench/profiler_torch.py: the PyTorch 1.13 side of bench/profiler: the Fashion-MNIST CNN's
training step (batch 64, Adam) with torch.profiler off, on, or on with record_shapes.

  /usr/bin/python3 bench/profiler_torch.py --mode off|on|shapes [--steps 60] [--threads 2]
"""
import argparse
import time

import torch
import torch.nn as nn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="off", choices=["off", "on", "shapes"])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(64, 1, 28, 28)
    y = torch.randint(0, 10, (64,))

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(5):
        step()
    prof = None
    if args.mode != "off":
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                      record_shapes=args.mode == "shapes")
        prof.__enter__()
    ms = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        ms.append((time.perf_counter() - t0) * 1e3)
    events = 0
    if prof is not None:
        prof.__exit__(None, None, None)
        events = len(prof.events())
    ms.sort()
    print("summary: ms=%.4f min=%.4f max=%.4f events=%d" % (ms[len(ms) // 2], ms[0], ms[-1], events))


if __name__ == "__main__":
    main()
