#!/usr/bin/env python3
"""bench/quant.py: int8 quantization, ember against PyTorch 1.13 (issue 15; `make bench-quant`).

For the MLP 784-512-256-10, the Fashion-MNIST CNN and the residual CNN of examples/fashion_mnist
(--model resnet: two residual blocks, global average pooling) at batch 1 and 64, it times
  ember:  float32, quant::quantize_dynamic int8 ("dynamic": Linear layers only) and static int8
          (quant::prepare -> calibrate -> convert: int8 convolutions and Linear layers, uint8
          codes between them) (build/bench/bench_quant, bench/quant.cpp),
  torch:  float32, torch.quantization.quantize_dynamic int8 with per-channel weights, and FX
          static int8 (prepare_fx / convert_fx with the engine's default qconfig mapping), on each
          quantized engine this PyTorch build has (bench/quant_torch.py; Debian's 1.13 has onednn
          and qnnpack, no fbgemm or x86),
each in a process of its own, interleaved over --rounds rounds (the order alternates; Note [Each
library in its own process] in bench/README.md). A time is the median over rounds of each
process's median call (--stat min: of its fastest call); ±% is half the range of the round values
around it.

The bars (issue 15), for each int8 scheme: ember int8 >= 2x ember fp32 at batch 64, and ember
int8 faster than PyTorch's int8 of the same scheme (its fastest engine) on the same model. The exit status is 0 whatever the bars
say (this is a report) and 1 when a process fails (its output check included).

  /usr/bin/python3 bench/quant.py [--build build] [--rounds 5] [--threads 2] [--only mlp]
                                  [--batch 1] [--scheme dynamic] [--stat median|min]
                                  [--json build/bench/quant.json]
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

MODELS = ["mlp", "cnn", "resnet"]  # the default set; lstm (dynamic only) on request: --only lstm
MODEL_NAMES = {"mlp": "MLP 784-512-256-10", "cnn": "Fashion-MNIST CNN", "resnet": "residual CNN",
               "lstm": "LSTM 2x256, 50 steps"}
SCHEMES = ["dynamic", "static"]
# bench_quant's / quant_torch.py's --mode for each scheme
MODE = {"dynamic": "int8", "static": "static"}


def torch_engines():
    out = subprocess.run([PYTHON, "-c", "import torch; print(' '.join(torch.backends.quantized.supported_engines))"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.split()
    return [e for e in ("fbgemm", "onednn", "qnnpack") if e in out]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(os.path.dirname(HERE), "build"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--only", action="append", default=[], choices=MODELS + ["lstm"],
                   help="models to run (default: mlp, cnn, resnet; lstm runs the dynamic scheme only)")
    p.add_argument("--scheme", action="append", default=[], choices=SCHEMES,
                   help="int8 schemes to run (default: both)")
    p.add_argument("--batch", action="append", type=int, default=[], help="batch sizes (default 1 and 64)")
    p.add_argument("--stat", choices=["median", "min"], default="median",
                   help="each process's value: its median call (default) or its fastest call (on a machine "
                        "shared with other jobs, where preempted threads stall parallel regions)")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    args.build = os.path.abspath(args.build)
    json_path = args.json or os.path.join(args.build, "bench", "quant.json")
    exe = os.path.join(args.build, "bench", "bench_quant")
    if not os.path.exists(exe):
        sys.exit(f"{exe} is missing: cmake --build {args.build} --target bench_quant")
    models = args.only or MODELS
    schemes = args.scheme or SCHEMES
    if "lstm" in models and "static" in schemes:
        if args.scheme:
            sys.exit("bench/quant.py: the lstm model has no static int8 version; run it with --scheme dynamic")
        schemes = ["dynamic"]
    batches = args.batch or [1, 64]
    engines = torch_engines()
    env = dict(os.environ, GLOG_minloglevel="2")  # qnnpack logs a warning on every call

    print(f"bench/quant.py: {cpu_model()}, {os.cpu_count()} CPUs, {args.threads} threads, {args.rounds} rounds, "
          f"torch quantized engines: {', '.join(engines)}; each library and mode in its own process", flush=True)
    rows, failures = [], 0
    for model in models:
        for batch in batches:
            print(f"{MODEL_NAMES[model]}, batch {batch}", flush=True)
            common = ["--model", model, "--batch", str(batch), "--threads", str(args.threads)]
            cmds = {("ember", "fp32"): [exe] + common + ["--mode", "fp32"]}
            for sc in schemes:
                cmds[("ember", sc)] = [exe] + common + ["--mode", MODE[sc]]
            cmds[("torch", "fp32")] = [PYTHON, os.path.join(HERE, "quant_torch.py")] + common + ["--mode", "fp32"]
            for sc in schemes:
                for e in engines:
                    cmds[("torch", f"{sc} {e}")] = [PYTHON, os.path.join(HERE, "quant_torch.py")] + common + [
                        "--mode", MODE[sc], "--engine", e]
            keys = list(cmds)
            times = {k: [] for k in keys}
            size = {}
            failed = False
            for r in range(args.rounds):
                ember_keys = [k for k in keys if k[0] == "ember"]
                torch_keys = [k for k in keys if k[0] == "torch"]
                order = ember_keys + torch_keys if r % 2 == 0 else torch_keys + ember_keys
                for k in order:
                    try:
                        s, _ = run_summary(cmds[k], env=env)
                    except RuntimeError as e:
                        print(f"  {e}", flush=True)
                        failed = True
                        break
                    times[k].append(s["ms"] if args.stat == "median" else s["min"])
                    size[k] = s.get("bytes")
                if failed:
                    break
            if failed:
                failures += 1
                continue
            row = {"model": model, "batch": batch, "rounds": args.rounds, "threads": args.threads}
            for k in keys:
                print(f"  $ {shlex.join(cmds[k])}")
                print(f"    {k[0]} {k[1]} ms per round: " + ", ".join(f"{v:.4g}" for v in times[k]))
                med = statistics.median(times[k])
                row[f"{k[0]} {k[1]}"] = {"ms": med, "spread_pct": spread(times[k], med), "rounds_ms": times[k],
                                         "state_dict_bytes": size[k]}
            e32 = row["ember fp32"]["ms"]
            for sc in schemes:
                e8 = row[f"ember {sc}"]["ms"]
                t8 = min(row[f"torch {sc} {e}"]["ms"] for e in engines) if engines else None
                row[f"{sc}_speedup"] = e32 / e8
                row[f"{sc}_over_torch"] = e8 / t8 if t8 else None
                print(f"  ember {sc} int8 speed-up over fp32 {row[f'{sc}_speedup']:.2f}x, ember / best torch {sc} "
                      f"int8 {row[f'{sc}_over_torch']:.2f}", flush=True)
            print(flush=True)
            rows.append(row)

    if rows:
        cols = ["ember fp32"] + [f"ember {sc}" for sc in schemes] + ["torch fp32"] + [
            f"torch {sc} {e}" for sc in schemes for e in engines]
        print("| model | batch | " + " | ".join(f"{c} ms" for c in cols) + " | " +
              " | ".join(f"ember {sc} speed-up | ember {sc} / best torch {sc}" for sc in schemes) + " | bars |")
        print("| --- | ---: | " + " | ".join("---:" for _ in cols) + " | " +
              " | ".join("---: | ---:" for _ in schemes) + " | --- |")
        for row in rows:
            bars = []
            for sc in schemes:
                if row["batch"] >= 64:
                    bars.append(f"{sc} 2x " + ("PASS" if row[f"{sc}_speedup"] >= 2.0 else "FAIL"))
                if row[f"{sc}_over_torch"] is not None:
                    bars.append(f"{sc} vs torch " + ("PASS" if row[f"{sc}_over_torch"] < 1.0 else "FAIL"))
            row["bars"] = ", ".join(bars)
            cells = " | ".join(f"{row[c]['ms']:.4g} ±{row[c]['spread_pct']:.0f}%" for c in cols)
            ratios = " | ".join(f"**{row[f'{sc}_speedup']:.2f}x** | **{row[f'{sc}_over_torch']:.2f}**"
                                if row[f"{sc}_over_torch"] is not None else f"**{row[f'{sc}_speedup']:.2f}x** | -"
                                for sc in schemes)
            print(f"| {row['model']} | {row['batch']} | {cells} | {ratios} | {row['bars']} |")
        print("\nstate_dict bytes (ember: tensors' bytes; torch: torch.save of the state_dict):")
        for model in models:
            r = next((x for x in rows if x["model"] == model), None)
            if r is None:
                continue
            e32 = r["ember fp32"]["state_dict_bytes"]
            parts = [f"ember fp32 {e32:.0f}"]
            for sc in schemes:
                e8 = r[f"ember {sc}"]["state_dict_bytes"]
                parts.append(f"ember {sc} {e8:.0f} ({e32 / e8:.2f}x smaller)")
            if engines:
                t32 = r["torch fp32"]["state_dict_bytes"]
                parts.append(f"torch fp32 {t32:.0f}")
                for sc in schemes:
                    t8 = r[f"torch {sc} {engines[0]}"]["state_dict_bytes"]
                    parts.append(f"torch {sc} {t8:.0f} ({t32 / t8:.2f}x smaller)")
            print(f"  {model}: " + ", ".join(parts))
        os.makedirs(os.path.dirname(json_path), exist_ok=True)
        with open(json_path, "w") as f:
            json.dump({"date": datetime.datetime.now().isoformat(timespec="seconds"), "commit": git_commit(),
                       "cpu": cpu_model(), "cpus": os.cpu_count(), "threads": args.threads, "rounds": args.rounds,
                       "stat": args.stat,
                       "torch_engines": engines, "rows": rows}, f, indent=1)
        print(f"wrote {json_path}")
    if failures:
        print(f"{failures} case(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
