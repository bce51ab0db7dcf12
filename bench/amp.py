#!/usr/bin/env python3
"""Mixed precision (make bench-amp): the main job's training step (Fashion-MNIST CNN, batch
64, Adam, 2 threads) in float32 and with bf16 autocast, in ember (bench_amp) and in PyTorch
1.13 (torch.autocast("cpu", torch.bfloat16), amp_torch.py); and a 1024^3 matrix product in
float32 and bfloat16 (GFLOP/s). Every (library, workload, mode) runs in its own process,
interleaved over rounds; the table gives medians and bf16's speed-up over each library's
own float32. The last lines say where ember's bf16 products ran (oneDNN with native bf16
instructions, or the float32 fallback: docs/amp.md).

    amp.py --build build [--rounds 5] [--steps 40] [--size 1024]
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    m = re.search(r"summary: ms=(\S+) gflops=(\S+) path=(.*)", out)
    return float(m.group(1)), float(m.group(2)), m.group(3).strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    ember = os.path.join(args.build, "bench", "bench_amp")
    cmds = {}
    for what in ("step", "gemm"):
        for mode in ("fp32", "bf16"):
            common = ["--what", what, "--mode", mode, "--steps", str(args.steps), "--threads", str(args.threads),
                      "--size", str(args.size)]
            cmds[("ember", what, mode)] = [ember] + common
            cmds[("torch", what, mode)] = ["/usr/bin/python3", os.path.join(HERE, "amp_torch.py")] + common
    results = {k: [] for k in cmds}
    paths = {}
    keys = list(cmds)
    for r in range(args.rounds):
        order = keys if r % 2 == 0 else list(reversed(keys))
        for k in order:
            ms, gf, path = run(cmds[k])
            results[k].append((ms, gf))
            paths[k[0]] = path
        print("round %d done" % (r + 1), file=sys.stderr)

    def med(xs, i):
        xs = sorted(x[i] for x in xs)
        return xs[len(xs) // 2]

    print("| library | workload | dtype | median ms (%d rounds) | GFLOP/s | bf16 speed-up |" % args.rounds)
    print("|---|---|---|---|---|---|")
    for lib in ("ember", "torch"):
        for what in ("step", "gemm"):
            base = med(results[(lib, what, "fp32")], 0)
            for mode in ("fp32", "bf16"):
                k = (lib, what, mode)
                m = med(results[k], 0)
                gf = "%.1f" % med(results[k], 1) if what == "gemm" else ""
                speed = "%.2fx" % (base / m) if mode == "bf16" else ""
                label = "train step (CNN, batch 64)" if what == "step" else "matmul %d^3" % args.size
                print("| %s | %s | %s | %.3f | %s | %s |" % (lib, label, mode, m, gf, speed))
    print()
    print("ember bf16 products: %s" % paths.get("ember", "?"))
    print("torch CPU capability: %s" % paths.get("torch", "?").replace("torch-", ""))


if __name__ == "__main__":
    main()
