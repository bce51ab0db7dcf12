#!/usr/bin/env python3
"""Cost of the training guards (docs/guards.md; make bench-guards): the main job's training
step (Fashion-MNIST CNN, batch 64, Adam, 2 threads; bench_profiler --mode off) with every
guard on (the default) and with all of them off, each run in its own process, interleaved
over rounds. The bar: all guards together cost at most 2% of the step.

    guards.py --build build [--rounds 7] [--steps 60]
"""
import argparse
import os
import re
import subprocess
import sys


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"summary: ms=(\S+)", out).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    exe = os.path.join(args.build, "bench", "bench_profiler")
    common = ["--mode", "off", "--steps", str(args.steps), "--threads", str(args.threads)]
    results = {"off": [], "on": []}
    for r in range(args.rounds):
        for g in ("off", "on") if r % 2 == 0 else ("on", "off"):
            results[g].append(run([exe] + common + ["--guards", g]))
        print("round %d done" % (r + 1), file=sys.stderr)
    med = {g: sorted(v)[len(v) // 2] for g, v in results.items()}
    print("| guards | step ms (median of %d rounds, %d steps each) | cost |" % (args.rounds, args.steps))
    print("|---|---|---|")
    print("| all off | %.3f | |" % med["off"])
    print("| all on (default) | %.3f | %+.2f%% |" % (med["on"], 100 * (med["on"] / med["off"] - 1)))


if __name__ == "__main__":
    main()
