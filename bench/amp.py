#!/usr/bin/env python3
"""Mixed precision (make bench-amp): the main job's training step (Fashion-MNIST CNN, batch
64, Adam, 2 threads) in float32 and with bf16 autocast, in ember (bench_amp) and in PyTorch
1.13 (torch.autocast("cpu", torch.bfloat16), amp_torch.py); one whole training epoch of the
main job (examples/fashion_mnist --amp bf16 against bench/train_fashion_mnist_torch.py
--amp bf16, with test accuracy); and a 1024^3 matrix product in float32 and bfloat16
(GFLOP/s). Every (library, workload, mode) runs in its own process, interleaved over
rounds; the table gives medians and bf16's speed-up over each library's own float32. The
last lines say where ember's bf16 products ran (oneDNN with native bf16 instructions, or
the float32 fallback: docs/amp.md). Then, unless --no-profiler, the profiler's overhead on
the same step against torch.profiler (bench/profiler.py), so one run answers issue 19's
benchmark.

    amp.py --build build [--rounds 5] [--steps 40] [--size 1024] [--epoch-rounds 3]
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
    if m:
        return float(m.group(1)), float(m.group(2)), m.group(3).strip()
    # An epoch run (examples/fashion_mnist or train_fashion_mnist_torch.py): seconds and accuracy.
    m = re.search(r"summary: epochs=\S+ train_seconds=(\S+) \S+ test_accuracy=(\S+)", out)
    return float(m.group(1)) * 1000.0, float(m.group(2)), ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epoch-rounds", type=int, default=3, help="rounds of the one-epoch runs (0: skip them)")
    ap.add_argument("--no-profiler", action="store_true", help="skip the profiler-overhead table")
    args = ap.parse_args()
    ember = os.path.join(args.build, "bench", "bench_amp")
    example = os.path.join(args.build, "examples", "fashion_mnist")
    cmds = {}
    epoch_cmds = {}
    for mode in ("fp32", "bf16"):
        amp = [] if mode == "fp32" else ["--amp", "bf16"]
        epoch_cmds[("ember", "epoch", mode)] = [example, "--epochs", "1", "--threads", str(args.threads),
                                                "--out", "/tmp/ember_bench_amp"] + amp
        epoch_cmds[("torch", "epoch", mode)] = ["/usr/bin/python3", os.path.join(HERE, "train_fashion_mnist_torch.py"),
                                                "--epochs", "1", "--threads", str(args.threads)] + amp
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
    epoch_keys = list(epoch_cmds)
    for r in range(args.epoch_rounds):
        order = epoch_keys if r % 2 == 0 else list(reversed(epoch_keys))
        for k in order:
            print("  " + " ".join(epoch_cmds[k]), file=sys.stderr)
            ms, acc, _ = run(epoch_cmds[k])
            results.setdefault(k, []).append((ms, acc))
        print("epoch round %d done" % (r + 1), file=sys.stderr)

    def med(xs, i):
        xs = sorted(x[i] for x in xs)
        return xs[len(xs) // 2]

    print("| library | workload | dtype | median ms (%d rounds; epoch: %d) | GFLOP/s or test accuracy | bf16 speed-up |"
          % (args.rounds, args.epoch_rounds))
    print("|---|---|---|---|---|---|")
    for lib in ("ember", "torch"):
        for what in ("step", "epoch", "gemm"):
            if (lib, what, "fp32") not in results:
                continue
            base = med(results[(lib, what, "fp32")], 0)
            for mode in ("fp32", "bf16"):
                k = (lib, what, mode)
                m = med(results[k], 0)
                extra = {"gemm": "%.1f GFLOP/s" % med(results[k], 1), "epoch": "acc %.4f" % med(results[k], 1)}
                speed = "%.2fx" % (base / m) if mode == "bf16" else ""
                label = {"step": "train step (CNN, batch 64)", "epoch": "1 epoch, main job",
                         "gemm": "matmul %d^3" % args.size}[what]
                print("| %s | %s | %s | %.3f | %s | %s |" % (lib, label, mode, m, extra.get(what, ""), speed))
    print()
    print("ember bf16 products: %s" % paths.get("ember", "?"))
    print("torch CPU capability: %s" % paths.get("torch", "?").replace("torch-", ""))
    if not args.no_profiler:
        print()
        sys.stdout.flush()
        subprocess.run(["/usr/bin/python3", os.path.join(HERE, "profiler.py"), "--build", args.build,
                        "--rounds", str(args.rounds), "--threads", str(args.threads)], check=True)


if __name__ == "__main__":
    main()
