#!/usr/bin/env python3
"""All-reduce bandwidth, ember (Gloo, with and without the fingerprint checks) against
torch.distributed's gloo backend (PyTorch 1.13), float32 tensors of 1 KB to 256 MB on 2 and
then 4 ranks of this machine (loopback). Each side runs in processes of its own, started by
tools/ember-run; rounds alternate between the sides and the best round counts.

    python3 bench/distributed.py --build build [--ranks 2,4] [--rounds 3] [--max-bytes N]
                                 [--only allreduce|ddp] [--batch B] [--steps N]

Prints, per size, microseconds per call of each side (ember, ember without the fingerprint
checks, ember without the sync lane of Note [Sync lane], torch) and torch's time over
ember's (> 1: ember is faster). Then the DDP step: the main
job's MLP and CNN trained with SGD on B random images per rank, on the first of `ranks` processes with
DDP and on one process without it (the same per-rank work, one thread per process), ember
against torch DDP; the overhead is the DDP step minus the single-process step."""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, env=None):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, **env) if env else None)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stdout}\n{out.stderr}")
    res = {}
    for line in out.stdout.splitlines():
        f = line.split()
        if len(f) == 6 and f[0] == "size_bytes":
            res[int(f[1])] = float(f[5])
        if len(f) == 5 and f[0] == "ddp_step":
            res[(f[1], f[2])] = float(f[4])
    return res


def ddp_bench(a, launcher, ember_bin):
    sides = {}
    for model in ("mlp", "cnn"):
        flags = ["--ddp-step", model, "--batch", str(a.batch), "--steps", str(a.steps)]
        torch_cmd = ["/usr/bin/python3", os.path.join(HERE, "distributed_torch.py")] + flags
        for nproc, mode in ((1, "single"), (a.ranks, "ddp")):
            base = [launcher, "--standalone", "--nproc-per-node", str(nproc)]
            extra = ["--single"] if mode == "single" else []
            sides[("ember", model, mode)] = base + [ember_bin] + flags + extra
            sides[("torch", model, mode)] = base + torch_cmd + extra
        # ember's sharded wrappers on the same step (torch 1.13's FSDP needs CUDA).
        for wrap in ("zero", "fsdp", "fsdp_grad_op"):
            base = [launcher, "--standalone", "--nproc-per-node", str(a.ranks)]
            sides[("ember", model, wrap)] = base + [ember_bin] + flags + ["--wrap", wrap]
    best = {}
    for _ in range(a.rounds):
        for key, cmd in sides.items():
            for (model, mode), t in run(cmd).items():
                best[(key[0], model, mode)] = min(best.get((key[0], model, mode), float("inf")), t)
    print(f"\nDDP training step (SGD, batch {a.batch} per rank, 1 thread per process), {a.ranks} ranks against "
          f"1 process, median step of {a.steps}, best of {a.rounds} rounds, ms")
    print(f"{'model':>5} | {'ember 1p':>9} {'ember DDP':>9} {'overhead':>9} | {'torch 1p':>9} {'torch DDP':>9} "
          f"{'overhead':>9}")
    for model in ("mlp", "cnn"):
        row = []
        for lib in ("ember", "torch"):
            s, d = best[(lib, model, "single")] * 1e3, best[(lib, model, "ddp")] * 1e3
            row += [s, d, d - s]
        print(f"{model:>5} | {row[0]:9.2f} {row[1]:9.2f} {row[2]:9.2f} | {row[3]:9.2f} {row[4]:9.2f} {row[5]:9.2f}")
    print(f"\nember's wrappers on the same step, {a.ranks} ranks, ms")
    print(f"{'model':>5} | {'DDP':>9} {'DDP+ZeRO':>9} {'FSDP':>9} {'FSDP, SHARD_GRAD_OP':>20}")
    for model in ("mlp", "cnn"):
        t = [best[("ember", model, w)] * 1e3 for w in ("ddp", "zero", "fsdp", "fsdp_grad_op")]
        print(f"{model:>5} | {t[0]:9.2f} {t[1]:9.2f} {t[2]:9.2f} {t[3]:20.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--ranks", default="2,4", help="comma-separated rank counts for the all-reduce table; "
                    "the DDP step uses the first")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-bytes", type=int, default=256 << 20)
    ap.add_argument("--only", choices=["allreduce", "ddp"], default=None)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=20)
    a = ap.parse_args()
    rank_counts = [int(r) for r in str(a.ranks).split(",") if r]
    launcher = os.path.join(a.build, "tools", "ember-run")
    ember_bin = os.path.join(a.build, "bench", "bench_distributed_ember")
    for p in (launcher, ember_bin):
        if not os.path.exists(p):
            sys.exit(f"{p} is missing: cmake --build {a.build} --target ember-run bench_distributed_ember")
    if a.only != "ddp":
        for ranks in rank_counts:
            a.ranks = ranks
            allreduce_bench(a, launcher, ember_bin)
    if a.only != "allreduce":
        a.ranks = rank_counts[0]
        ddp_bench(a, launcher, ember_bin)


def allreduce_bench(a, launcher, ember_bin):
    base = [launcher, "--standalone", "--nproc-per-node", str(a.ranks)]
    extra = ["--max-bytes", str(a.max_bytes)]
    # ember_nolane: EMBER_DISTRIBUTED_SYNC_LANE=0, Gloo's event-loop path for every size (the
    # path before Note [Sync lane]), for a before/after comparison in one run.
    sides = {
        "ember": (base + [ember_bin] + extra, None),
        "ember_nocheck": (base + [ember_bin, "--no-checks"] + extra, None),
        "ember_nolane": (base + [ember_bin] + extra, {"EMBER_DISTRIBUTED_SYNC_LANE": "0"}),
        "torch": (base + ["/usr/bin/python3", os.path.join(HERE, "distributed_torch.py")] + extra, None),
    }
    best = {k: {} for k in sides}
    for _ in range(a.rounds):
        for name, (cmd, env) in sides.items():
            for size, t in run(cmd, env).items():
                best[name][size] = min(best[name].get(size, float("inf")), t)
    print(f"all_reduce float32, {a.ranks} ranks on one machine (loopback), best of {a.rounds} rounds, "
          f"microseconds per call; nolane: EMBER_DISTRIBUTED_SYNC_LANE=0")
    print(f"{'size':>9} | {'ember':>10} {'no-check':>10} {'nolane':>10} | {'torch':>10} | ember/torch speed")
    for size in sorted(best["torch"]):
        t = [best[name][size] * 1e6 for name in ("ember", "ember_nocheck", "ember_nolane", "torch")]
        label = f"{size // 1024} KB" if size < (1 << 20) else f"{size >> 20} MB"
        print(f"{label:>9} | {t[0]:10.1f} {t[1]:10.1f} {t[2]:10.1f} | {t[3]:10.1f} | {t[3] / t[0]:.2f}x")


if __name__ == "__main__":
    main()
