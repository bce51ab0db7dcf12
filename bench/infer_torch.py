#!/usr/bin/env python3
"""bench/infer_torch.py: the PyTorch 1.13 side of bench/infer (issue 14): inference latency of
the models bench/infer.cpp builds, one mode per process. bench/infer.py runs both.

  /usr/bin/python3 bench/infer_torch.py --model cnn|mlp|transformer --batch N --mode eager|script
                                        [--reps N] [--threads 2] [--cold]

Modes (model built with torch.manual_seed(0), eval mode; input drawn with manual_seed(1)):
  eager   model(x) under torch.inference_mode() (the TransformerEncoderLayer takes torch's
          fused "fast path" there, as it does for users).
  script  torch.jit.trace(model, x) + torch.jit.freeze under torch.no_grad(), called under
          torch.no_grad() (TorchScript's recommended inference setup).
Warm runs: 2 calls and at least 0.2 s of warm-up (TorchScript's profiling executor optimises
the graph during its first calls), then --reps timed calls (0: as many as fit in ~1 s, 20 to
5000), one call per sample; prints `summary: ms=<median> min=.. max=.. reps=.. cold_ms=..`.
--cold: one call in a fresh process, timed from just before the first torch call that mode
makes on the model (script: trace + freeze + first call; eager: first call); prints
`summary: cold_ms=.. ms=..`. The output is checked against eager (max abs diff <= 1e-4;
eager: a second call equals the first); exit 1 otherwise.
"""
import argparse
import sys
import time

import torch
import torch.nn as nn


def make_model(name):
    torch.manual_seed(0)
    if name == "cnn":  # examples/fashion_mnist make_model()
        m = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
    elif name == "mlp":
        m = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    else:
        m = nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=512, dropout=0.1, batch_first=True)
    return m.eval()


def make_input(name, batch):
    torch.manual_seed(1)
    shape = {"cnn": (batch, 1, 28, 28), "mlp": (batch, 784), "transformer": (batch, 32, 128)}[name]
    return torch.randn(shape)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["cnn", "mlp", "transformer"], required=True)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--mode", choices=["eager", "script"], required=True)
    p.add_argument("--reps", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--cold", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(args.threads)

    model = make_model(args.model)
    x = make_input(args.model, args.batch)

    def eager():
        with torch.inference_mode():
            return model(x)

    if args.mode == "script":
        t0 = time.perf_counter()
        with torch.no_grad():
            frozen = torch.jit.freeze(torch.jit.trace(model, x))
            first = frozen(x)
        cold_ms = (time.perf_counter() - t0) * 1e3

        def call():
            with torch.no_grad():
                return frozen(x)
    else:
        t0 = time.perf_counter()
        first = eager()
        cold_ms = (time.perf_counter() - t0) * 1e3
        call = eager

    # What is timed computes the model: the first and a later output equal eager's.
    want = eager()
    diff_first = (first - want).abs().max().item()
    diff = max(diff_first, (call() - want).abs().max().item())
    print(f"library: torch {torch.__version__} (python), {torch.get_num_threads()} threads")
    print(f"check: {args.model} {args.mode} batch {args.batch}: max |{args.mode} - eager| = {diff:.3g} "
          f"(first call {diff_first:.3g})")
    if not diff <= 1e-4:
        print(f"check failed: {args.mode} output differs from eager by {diff:g} (> 1e-4)", file=sys.stderr)
        return 1
    if args.cold:
        print(f"summary: cold_ms={cold_ms:.6g} ms={cold_ms:.6g} min={cold_ms:.6g} max={cold_ms:.6g} reps=1")
        return 0

    t0 = time.perf_counter()
    warm = 0
    while warm < 2 or time.perf_counter() - t0 < 0.2:
        call()
        warm += 1
    per_call = (time.perf_counter() - t0) * 1e3 / warm
    n = args.reps if args.reps > 0 else int(min(max(1000.0 / per_call, 20), 5000))
    ms = []
    for _ in range(n):
        a = time.perf_counter()
        call()
        ms.append((time.perf_counter() - a) * 1e3)
    ms.sort()
    print(f"summary: ms={ms[len(ms) // 2]:.6g} min={ms[0]:.6g} max={ms[-1]:.6g} reps={n} cold_ms={cold_ms:.6g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
