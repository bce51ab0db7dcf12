#!/usr/bin/env python3
"""Python overhead (make bench-python): tiny ops, a tiny backward, an MLP training step and
one epoch of the ported Fashion-MNIST script (examples/python/fashion_mnist.py), ember
against PyTorch 1.13. Each library runs in its own process, interleaved over rounds
(their thread pools would fight on 2 cores otherwise); the table gives medians, the ratio
ember/torch, and the floor: the cost of calling an empty Python function.

    python.py --build build [--rounds 5] [--epoch-rounds 3] [--limit 20000]
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def med(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--epoch-rounds", type=int, default=3)
    ap.add_argument("--limit", type=int, default=20000, help="training images in the timed epoch (0: all 60000)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=os.path.abspath(os.path.join(args.build, "python")),
               OMP_NUM_THREADS=str(args.threads))
    results = {}
    libs = ["ember", "torch"]
    for r in range(args.rounds):
        for lib in (libs if r % 2 == 0 else libs[::-1]):
            out = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "python_worker.py"), "--lib", lib,
                                  "--threads", str(args.threads)], capture_output=True, text=True, check=True,
                                 env=env).stdout
            for line in out.strip().splitlines():
                name, ns = line.split("\t")
                results.setdefault(name, {}).setdefault(lib, []).append(float(ns))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    epoch = {}
    script = os.path.join(ROOT, "examples", "python", "fashion_mnist.py")
    for r in range(args.epoch_rounds):
        for lib in (libs if r % 2 == 0 else libs[::-1]):
            out = subprocess.run(["/usr/bin/python3", script, "--framework", lib, "--epochs", "1", "--limit",
                                  str(args.limit), "--threads", str(args.threads)], capture_output=True, text=True,
                                 check=True, env=env).stdout
            m = re.search(r"test accuracy (\S+)\s+\((\S+) s\)", out)
            epoch.setdefault(lib, []).append((float(m.group(2)), float(m.group(1))))
        print(f"epoch round {r + 1}/{args.epoch_rounds} done", file=sys.stderr)

    floor = med(results["python call floor"]["ember"] + results["python call floor"]["torch"])
    print(f"| case (median of {args.rounds} rounds, {args.threads} threads) | ember | torch | ember/torch | "
          f"ember - floor | torch - floor |")
    print("|---|---|---|---|---|---|")
    for name, per in results.items():
        e, t = med(per["ember"]), med(per["torch"])
        unit = "us" if e > 20000 else "ns"
        div = 1000.0 if unit == "us" else 1.0
        if name == "python call floor":
            print(f"| {name} (the limit) | {e / div:.0f} {unit} | {t / div:.0f} {unit} | | | |")
            continue
        print(f"| {name} | {e / div:.0f} {unit} | {t / div:.0f} {unit} | {e / t:.2f}x | {(e - floor) / div:.0f} {unit} | "
              f"{(t - floor) / div:.0f} {unit} |")
    e = med([s for s, _ in epoch["ember"]])
    t = med([s for s, _ in epoch["torch"]])
    n = args.limit or 60000
    print(f"| Fashion-MNIST CNN, 1 epoch of {n} images (median of {args.epoch_rounds}) | {e:.1f} s | {t:.1f} s | "
          f"{e / t:.2f}x | | |")
    print(f"accuracy after that epoch: ember {med([a for _, a in epoch['ember']]):.4f}, "
          f"torch {med([a for _, a in epoch['torch']]):.4f}")


if __name__ == "__main__":
    main()
