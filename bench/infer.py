#!/usr/bin/env python3
"""bench/infer.py: inference latency, ember against PyTorch 1.13 (issue 14; `make bench-infer`).

For the Fashion-MNIST CNN, the MLP (784-256-256-10) and a TransformerEncoderLayer (d_model 128,
4 heads, feed-forward 512, sequence 32), at batch 1 and 64, it times
  ember:  eager, the loaded artifact (trace + freeze + save, jit::load), jit::compile
          (build/bench/bench_infer, bench/infer.cpp),
  torch:  eager, torch.jit.trace + torch.jit.freeze (bench/infer_torch.py, Debian's python3),
each mode in a process of its own, interleaved over --rounds rounds (the order alternates: ember
first, then torch first; Note [Each library in its own process] in bench/README.md). A mode's
time is the median over rounds of each process's median call; ±% is half the range of the round
values around it. Each round also starts one fresh process per mode with --cold: the first
call's latency (artifact: jit::load + first forward, in a process that never built the model;
compiled: first call, tracing and freezing included; torch script: trace + freeze + first call;
eager: first forward).

The bar (issue 14): at batch 1 the ember artifact takes at most 0.5x PyTorch eager's time and at
most PyTorch's frozen TorchScript's. The table marks PASS/FAIL per model; the exit status is 0
whatever the bar says (this is a report) and 1 when a process fails (a failed output check
included: every process compares what it timed with eager, max abs diff 1e-4).

  /usr/bin/python3 bench/infer.py [--build build] [--rounds 5] [--threads 2] [--only cnn]
                                  [--batch 1] [--no-cold] [--json build/bench/infer.json]
"""
import argparse
import datetime
import json
import os
import shlex
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run import PYTHON, cpu_model, git_commit, run_summary, spread  # noqa: E402

MODELS = ["cnn", "mlp", "transformer"]
MODEL_NAMES = {"cnn": "Fashion-MNIST CNN", "mlp": "MLP 784-256-256-10",
               "transformer": "TransformerEncoderLayer(128, 4, 512), seq 32"}
EMBER_MODES = ["eager", "artifact", "compiled"]
TORCH_MODES = ["eager", "script"]


def commands(args, model, batch, artifact_path):
    """{(library, mode): (warm command, cold command)} for one model and batch size."""
    exe = os.path.join(args.build, "bench", "bench_infer")
    common = ["--model", model, "--batch", str(batch), "--threads", str(args.threads)]
    cmds = {}
    for mode in EMBER_MODES:
        warm = [exe] + common + ["--mode", mode]
        cold = warm + ["--cold"] + (["--artifact", artifact_path] if mode == "artifact" else [])
        cmds[("ember", mode)] = (warm, cold)
    script = os.path.join(HERE, "infer_torch.py")
    for mode in TORCH_MODES:
        warm = [PYTHON, script] + common + ["--mode", mode]
        cmds[("torch", mode)] = (warm, warm + ["--cold"])
    return cmds


def fmt_ms(v):
    if v is None:
        return "-"
    return f"{v:.3f}" if v < 10 else f"{v:.1f}" if v < 1000 else f"{v:.0f}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(os.path.dirname(HERE), "build"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--only", action="append", default=[], choices=MODELS, help="models to run (repeatable)")
    p.add_argument("--batch", action="append", type=int, default=[], help="batch sizes (default 1 and 64)")
    p.add_argument("--no-cold", action="store_true", help="skip the first-call (cold) processes")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    args.build = os.path.abspath(args.build)
    json_path = args.json or os.path.join(args.build, "bench", "infer.json")
    exe = os.path.join(args.build, "bench", "bench_infer")
    if not os.path.exists(exe):
        sys.exit(f"{exe} is missing: cmake --build {args.build} --target bench_infer")
    models = args.only or MODELS
    batches = args.batch or [1, 64]
    art_dir = os.path.join(args.build, "bench", "infer_artifacts")
    os.makedirs(art_dir, exist_ok=True)

    print(f"bench/infer.py: {cpu_model()}, {os.cpu_count()} CPUs, {args.threads} threads, {args.rounds} rounds; "
          "each library and mode in its own process, alternating order", flush=True)
    try:
        load = os.getloadavg()
        print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    except OSError:
        load = None

    rows, failures = [], 0
    for model in models:
        # The artifact the cold processes load: written once by a process of its own.
        artifact = os.path.join(art_dir, f"{model}.ember")
        export = [exe, "--model", model, "--mode", "export", "--artifact", artifact, "--threads", str(args.threads)]
        print(f"$ {shlex.join(export)}", flush=True)
        proc = subprocess.run(export, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            sys.stdout.write(proc.stdout[-3000:])
            print(f"  FAILED (exit {proc.returncode})\n", flush=True)
            failures += 1
            continue
        for batch in batches:
            print(f"{MODEL_NAMES[model]}, batch {batch}", flush=True)
            cmds = commands(args, model, batch, artifact)
            keys = [("ember", m) for m in EMBER_MODES] + [("torch", m) for m in TORCH_MODES]
            warm = {k: [] for k in keys}
            cold = {k: [] for k in keys}
            checks = {}
            failed = False
            for r in range(args.rounds):
                # Alternate which library goes first; within a library the modes rotate too.
                ember_keys = [("ember", m) for m in EMBER_MODES[r % 3:] + EMBER_MODES[:r % 3]]
                torch_keys = [("torch", m) for m in TORCH_MODES[r % 2:] + TORCH_MODES[:r % 2]]
                order = ember_keys + torch_keys if r % 2 == 0 else torch_keys + ember_keys
                for k in order:
                    runs = [(warm, 0)] + ([] if args.no_cold else [(cold, 1)])
                    for store, which in runs:
                        try:
                            s, _ = run_summary(cmds[k][which])
                        except RuntimeError as e:
                            print(f"  {e}", flush=True)
                            failed = True
                            break
                        store[k].append(s["cold_ms"] if which else s["ms"])
                    if failed:
                        break
                if failed:
                    break
            if failed:
                failures += 1
                continue
            for k in keys:
                print(f"  $ {shlex.join(cmds[k][0])}")
                print(f"    {k[0]} {k[1]} ms per round: " + ", ".join(f"{v:.4g}" for v in warm[k]))
                if cold[k]:
                    print(f"    cold (--cold) ms per round: " + ", ".join(f"{v:.4g}" for v in cold[k]))
            row = {"model": model, "batch": batch, "rounds": args.rounds, "threads": args.threads}
            for k in keys:
                name = f"{k[0]}_{k[1]}"
                med = statistics.median(warm[k])
                row[name] = {"ms": med, "spread_pct": spread(warm[k], med), "rounds_ms": warm[k]}
                if cold[k]:
                    row[name]["cold_ms"] = statistics.median(cold[k])
                    row[name]["cold_rounds_ms"] = cold[k]
            art = row["ember_artifact"]["ms"]
            row["artifact_over_torch_eager"] = art / row["torch_eager"]["ms"]
            row["artifact_over_torch_script"] = art / row["torch_script"]["ms"]
            row["compiled_over_torch_eager"] = row["ember_compiled"]["ms"] / row["torch_eager"]["ms"]
            row["eager_over_torch_eager"] = row["ember_eager"]["ms"] / row["torch_eager"]["ms"]
            if batch == 1:
                row["bar"] = ("PASS" if row["artifact_over_torch_eager"] <= 0.5 and row["artifact_over_torch_script"] <= 1.0
                              else "FAIL")
            print(f"  artifact/torch eager {row['artifact_over_torch_eager']:.2f}, artifact/torch script "
                  f"{row['artifact_over_torch_script']:.2f}" + (f"  bar: {row['bar']}" if "bar" in row else "") + "\n",
                  flush=True)
            rows.append(row)

    if rows:
        print("| model | batch | ember eager ms | ember artifact ms | ember compiled ms | torch eager ms | "
              "torch script ms | artifact / torch eager | artifact / torch script | bar (batch 1) |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        for row in rows:
            cell = lambda k: f"{fmt_ms(row[k]['ms'])} ±{row[k]['spread_pct']:.0f}%"
            print(f"| {model_label(row['model'])} | {row['batch']} | {cell('ember_eager')} | {cell('ember_artifact')} | "
                  f"{cell('ember_compiled')} | {cell('torch_eager')} | {cell('torch_script')} | "
                  f"**{row['artifact_over_torch_eager']:.2f}** | **{row['artifact_over_torch_script']:.2f}** | "
                  f"{row.get('bar', '')} |")
        if not args.no_cold:
            print("\nFirst call (cold, fresh process), median ms:\n")
            print("| model | batch | ember eager | ember artifact (load + call) | ember compiled (trace + freeze + call) | "
                  "torch eager | torch script (trace + freeze + call) |")
            print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
            for row in rows:
                c = lambda k: fmt_ms(row[k].get("cold_ms"))
                print(f"| {model_label(row['model'])} | {row['batch']} | {c('ember_eager')} | {c('ember_artifact')} | "
                      f"{c('ember_compiled')} | {c('torch_eager')} | {c('torch_script')} |")
        bars = [r["bar"] for r in rows if "bar" in r]
        if bars:
            print(f"\nbar (batch 1: artifact <= 0.5x torch eager and <= torch script): "
                  + ", ".join(f"{r['model']} {r['bar']}" for r in rows if "bar" in r))
        try:
            load_end = os.getloadavg()
        except OSError:
            load_end = None
        os.makedirs(os.path.dirname(json_path), exist_ok=True)
        with open(json_path, "w") as f:
            json.dump({"date": datetime.datetime.now().isoformat(timespec="seconds"), "commit": git_commit(),
                       "cpu": cpu_model(), "cpus": os.cpu_count(), "threads": args.threads, "rounds": args.rounds,
                       "load_average_start": load, "load_average_end": load_end, "rows": rows}, f, indent=1)
        print(f"wrote {json_path}")
    if failures:
        print(f"{failures} case(s) failed", file=sys.stderr)
        return 1
    return 0


def model_label(model):
    return {"cnn": "CNN", "mlp": "MLP", "transformer": "Transformer layer"}[model]


if __name__ == "__main__":
    sys.exit(main())
