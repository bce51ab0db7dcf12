#!/usr/bin/env python3
"""Profiler overhead (make bench-profiler): the main job's training step (Fashion-MNIST CNN,
batch 64, Adam, 2 threads) with the profiler off, on, and on with shapes, in ember
(bench_profiler) and in PyTorch 1.13 (torch.profiler, profiler_torch.py). Every
(library, mode) runs in its own process, interleaved over rounds; the table gives median
step times and each profiler's overhead over its own library's step.

    profiler.py --build build [--rounds 5] [--steps 60]
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    m = re.search(r"summary: ms=(\S+) min=\S+ max=\S+ events=(\d+)", out)
    return float(m.group(1)), int(m.group(2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    ember = os.path.join(args.build, "bench", "bench_profiler")
    cmds = {}
    for mode in ("off", "on", "shapes"):
        common = ["--mode", mode, "--steps", str(args.steps), "--threads", str(args.threads)]
        cmds[("ember", mode)] = [ember] + common
        cmds[("torch", mode)] = ["/usr/bin/python3", os.path.join(HERE, "profiler_torch.py")] + common
    results = {k: [] for k in cmds}
    events = {}
    keys = list(cmds)
    for r in range(args.rounds):
        order = keys if r % 2 == 0 else list(reversed(keys))
        for k in order:
            ms, ev = run(cmds[k])
            results[k].append(ms)
            events[k] = ev
        print("round %d done" % (r + 1), file=sys.stderr)

    def med(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2]

    print("| library | profiler | step ms (median of %d rounds) | overhead | events |" % args.rounds)
    print("|---|---|---|---|---|")
    for lib in ("ember", "torch"):
        base = med(results[(lib, "off")])
        for mode in ("off", "on", "shapes"):
            m = med(results[(lib, mode)])
            over = "" if mode == "off" else "%+.1f%%" % (100 * (m / base - 1))
            print("| %s | %s | %.3f | %s | %s |" % (lib, mode, m, over, events[(lib, mode)] if mode != "off" else ""))


if __name__ == "__main__":
    main()
