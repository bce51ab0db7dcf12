#!/usr/bin/env python3
"""bench/run.py: the benchmark harness (`make bench`). Times ember and PyTorch 1.13, each in a
process of its own, interleaved over several rounds (Note [Each library in its own process]
in bench/README.md), next to this machine's limits.

Every case is one program per library: the C++ families (bench/ops.cpp, conv.cpp, ...) are
built twice, as bench_<family>_ember and bench_<family>_torch; the data loader and the main
job run against PyTorch in Python, as users run them. Each round starts one process per
library per case, the order alternating between rounds (ember first, then torch first), and
reads the `summary:` line it prints. A case's time is the median over rounds of each
process's median; its spread is the range of the round values around that median.

  /usr/bin/python3 bench/run.py [--build build] [--rounds 5] [--threads 2] [--only TEXT]
                                [--json build/bench/results.json] [--svg build/bench/ratios.svg]

Prints every command it runs with its per-round values, then one table (ember/torch, GB/s or
GFLOP/s, % of the measured limit: for memory-bound cases the bandwidth each process measured
beside the case, Note [Bandwidth beside the case] in harness_main.cpp), writes the table as JSON (also under build/bench/history/
with the commit, for tracking) and the ratios as an SVG bar chart. Exit 1 when a process
fails.
"""
import argparse
import datetime
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# PyTorch runs in Debian's python3 (python3-torch), whatever python3 comes first on PATH.
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
FAMILIES = ["ops", "autograd", "conv", "norm", "rnn", "optim", "step"]


def run_summary(cmd, env=None):
    """Runs cmd, returns (its `summary:` key/values as floats, its `library:` line)."""
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    summary, library = None, ""
    for line in proc.stdout.splitlines():
        if line.startswith("summary:"):
            summary = {}
            for kv in line[len("summary:"):].split():
                k, v = kv.split("=", 1)
                summary[k] = float(v)
        elif line.startswith("library:"):
            library = line[len("library:"):].strip()
    if proc.returncode != 0 or summary is None:
        sys.stdout.write(proc.stdout[-3000:])
        raise RuntimeError(f"failed (exit {proc.returncode}): {shlex.join(cmd)}")
    return summary, library


def list_cases(binary):
    out = subprocess.run([binary, "--list"], stdout=subprocess.PIPE, text=True, check=True).stdout
    cases = []
    for line in out.splitlines():
        if line.startswith("case\t"):
            _, name, nbytes, flops, limit = line.split("\t")
            cases.append({"name": name, "bytes": float(nbytes), "flops": float(flops), "limit": limit})
    return cases


def machine_limits(build, threads):
    """Memory bandwidth and GEMM peak of this machine (bench_stream), best of two runs."""
    cmd = [os.path.join(build, "bench", "bench_stream"), "--threads", str(threads)]
    best = {}
    for _ in range(2):
        s, _ = run_summary(cmd)
        for k, v in s.items():
            best[k] = max(best.get(k, 0.0), v)
    print(f"$ {shlex.join(cmd)}")
    print(f"  limits: read {best['read_gbs']:.1f} GB/s, copy {best['copy_gbs']:.1f} GB/s, "
          f"write {best['write_gbs']:.1f} GB/s (256 MiB buffers); read {best['read64_gbs']:.1f} / "
          f"{best['read16_gbs']:.1f} GB/s, copy {best['copy64_gbs']:.1f} / {best['copy16_gbs']:.1f} GB/s (64 / 16 MiB); "
          f"sgemm {best['gemm_gflops']:.0f} GFLOP/s (OpenBLAS {best['openblas_gflops']:.0f}, oneDNN "
          f"{best['onednn_gflops']:.0f}) ({threads} threads)\n", flush=True)
    return {"read": best["read_gbs"], "copy": best["copy_gbs"], "write": best["write_gbs"],
            "gemm": best["gemm_gflops"],
            # Note [Limits at the case's size] (bench/stream.cpp): by buffer size in MiB.
            "read_at": {16: best["read16_gbs"], 64: best["read64_gbs"], 256: best["read_gbs"]},
            "copy_at": {16: best["copy16_gbs"], 64: best["copy64_gbs"], 256: best["copy_gbs"]}}


def limit_for(case, limits):
    """(GB/s or GFLOP/s, label) the case is compared with: for memory-bound cases the kernel
    whose buffer is nearest (log scale) to the case's own array size (Note [Limits at the
    case's size]); a read case's array is its bytes, a copy case moves each byte of its
    arrays twice (read and write), as STREAM counts."""
    kind = case["limit"]
    if kind not in ("read", "copy") or case["bytes"] <= 0:
        return limits[kind], kind
    mib = case["bytes"] / (1 << 20) / (1 if kind == "read" else 2)
    size = min(limits[kind + "_at"], key=lambda m: abs(math.log2(m) - math.log2(max(mib, 1e-9))))
    return limits[kind + "_at"][size], f"{kind} {size} MiB"


def build_cases(args):
    """Every case: a name, a family, the two commands and the summary key to compare."""
    b = os.path.join(args.build, "bench")
    t = ["--threads", str(args.threads)]
    cases = []
    for fam in FAMILIES:
        eb, tb = os.path.join(b, f"bench_{fam}_ember"), os.path.join(b, f"bench_{fam}_torch")
        if not os.path.exists(tb):
            sys.exit(f"{tb} is missing: libtorch was not found when configuring (run scripts/setup.sh)")
        listed = list_cases(eb)
        torch_names = [c["name"] for c in list_cases(tb)]
        if torch_names != [c["name"] for c in listed]:
            sys.exit(f"bench_{fam}_ember and bench_{fam}_torch list different cases")
        for c in listed:
            c.update(family=fam, key="ms", unit="ms",
                     ember=[eb, "--case", c["name"]] + t, torch=[tb, "--case", c["name"]] + t)
            cases.append(c)
    # The data loader: ember's C++ loader (its parallelism is its workers: 1 intra-op thread)
    # against torch.utils.data.DataLoader in Python with the same number of workers.
    data_script = os.path.join(HERE, "data_loader_torch.py")
    for name, workers in [("loader epoch, 2 workers, batch fast path", 2),
                          ("loader epoch, 2 workers, per-sample get + collate", 2),
                          ("loader epoch, 0 workers, per-sample get + collate", 0)]:
        cases.append({"name": name, "family": "data", "key": "ms", "unit": "ms", "bytes": 0, "flops": 0,
                      "limit": "-", "ember": [os.path.join(b, "bench_data_ember"), "--case", name, "--threads", "1"],
                      "torch": [PYTHON, data_script, "--workers", str(workers)]})
    # The main job: one epoch of examples/fashion_mnist against the same model in PyTorch,
    # both loading batches on the training thread (--workers 0, train_fashion_mnist_torch.py's
    # default): the dataset is in memory, and on 2 cores loader threads only take turns with
    # the compute threads (ember's epoch was ~1 s slower with 2 loader threads).
    out_dir = os.path.join(args.build, "bench_train_run")
    cases.append({"name": "main job: Fashion-MNIST CNN, 1 epoch (train s)", "family": "main", "key": "train_seconds",
                  "unit": "s", "bytes": 0, "flops": 0, "limit": "-",
                  "ember": [os.path.join(args.build, "examples", "fashion_mnist"), "--epochs", "1", "--threads",
                            str(args.threads), "--workers", "0", "--out", out_dir],
                  "torch": [PYTHON, os.path.join(HERE, "train_fashion_mnist_torch.py"), "--epochs", "1",
                            "--threads", str(args.threads), "--workers", "0"]})
    if args.only:
        cases = [c for c in cases if any(o in c["name"] or o == c["family"] for o in args.only)]
    return cases


def spread(values, median):
    return (max(values) - min(values)) / 2 / median * 100 if median > 0 else 0.0


def rate(case, seconds):
    """(value, unit) achieved per second: GB/s for memory-bound cases, GFLOP/s for GEMM."""
    if case["limit"] == "gemm" and case["flops"] > 0:
        return case["flops"] / seconds / 1e9, "GFLOP/s"
    if case["limit"] in ("read", "copy") and case["bytes"] > 0:
        return case["bytes"] / seconds / 1e9, "GB/s"
    return None, ""


def write_svg(path, rows):
    """Horizontal bars of ember/torch per case, with lines at 0.5 and 1.0."""
    top, left, width, bar = 30, 420, 420, 16
    scale_max = max(2.0, max(r["ratio"] for r in rows) * 1.05)
    height = top + bar * len(rows) + 30
    x = lambda v: left + v / scale_max * width
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 60}" height="{height}" '
           'font-family="sans-serif" font-size="11">',
           f'<text x="8" y="18" font-size="13">ember / PyTorch 1.13 time (below 1: ember faster)</text>']
    for i, r in enumerate(rows):
        y = top + i * bar
        colour = "#2b8a3e" if r["ratio"] <= 1.0 else "#c92a2a"
        name = r["name"].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        out.append(f'<text x="{left - 6}" y="{y + 12}" text-anchor="end">{name}</text>')
        out.append(f'<rect x="{left}" y="{y + 2}" width="{x(r["ratio"]) - left:.1f}" height="{bar - 4}" '
                   f'fill="{colour}"/>')
        out.append(f'<text x="{x(r["ratio"]) + 4:.1f}" y="{y + 12}">{r["ratio"]:.2f}</text>')
    for v in (0.5, 1.0):
        out.append(f'<line x1="{x(v):.1f}" y1="{top - 4}" x2="{x(v):.1f}" y2="{height - 24}" stroke="#555" '
                   'stroke-dasharray="3,3"/>')
        out.append(f'<text x="{x(v):.1f}" y="{height - 10}" text-anchor="middle">{v}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def git_commit():
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--only", action="append", default=[],
                   help="run the cases whose name contains TEXT or whose family is TEXT (repeatable)")
    p.add_argument("--json", default=None)
    p.add_argument("--svg", default=None)
    args = p.parse_args()
    args.build = os.path.abspath(args.build)
    json_path = args.json or os.path.join(args.build, "bench", "results.json")
    svg_path = args.svg or os.path.join(args.build, "bench", "ratios.svg")

    print(f"bench/run.py: {cpu_model()}, {os.cpu_count()} CPUs, {args.threads} threads, {args.rounds} rounds; "
          "each library in its own process, alternating order", flush=True)
    limits = machine_limits(args.build, args.threads)
    cases = build_cases(args)
    rows, failures = [], 0
    for c in cases:
        print(f"{c['family']}: {c['name']}")
        vals = {"ember": [], "torch": []}
        summaries = {"ember": [], "torch": []}
        libs = {}
        failed = False
        for r in range(args.rounds):
            for side in (("ember", "torch") if r % 2 == 0 else ("torch", "ember")):
                try:
                    s, libs[side] = run_summary(c[side])
                except RuntimeError as e:
                    print(f"  {e}")
                    failures, failed = failures + 1, True
                    break
                vals[side].append(s[c["key"]])
                summaries[side].append(s)
            if failed:
                break
        if len(vals["ember"]) != args.rounds or len(vals["torch"]) != args.rounds:
            continue
        med = {k: statistics.median(v) for k, v in vals.items()}
        for side in ("ember", "torch"):
            rounds = " ".join(f"{v:.4g}" for v in vals[side])
            print(f"  $ {shlex.join(c[side])}\n      [{libs.get(side, '')}] rounds: {rounds} {c['unit']}")
        row = {"family": c["family"], "name": c["name"], "unit": c["unit"], "bytes": c["bytes"], "flops": c["flops"],
               "limit": c["limit"], "ember": {"rounds": vals["ember"], "median": med["ember"],
                                              "spread_pct": spread(vals["ember"], med["ember"]), "command": c["ember"]},
               "torch": {"rounds": vals["torch"], "median": med["torch"],
                         "spread_pct": spread(vals["torch"], med["torch"]), "command": c["torch"]},
               "ratio": med["ember"] / med["torch"]}
        seconds = {k: med[k] / (1000.0 if c["unit"] == "ms" else 1.0) for k in med}
        for side in ("ember", "torch"):
            v, unit = rate(c, seconds[side])
            if v is not None:
                row[side]["rate"], row["rate_unit"] = v, unit
                lim, used = limit_for(c, limits)
                row[side]["pct_of_stream_limit"] = 100.0 * v / lim
                # Note [Bandwidth beside the case] (harness_main.cpp): each round's rate against
                # the bandwidth its own process measured around the case's samples.
                beside = [s.get("bw_gbs") for s in summaries[side]]
                if all(beside):
                    pcts = [100.0 * c["bytes"] / (t / (1000.0 if c["unit"] == "ms" else 1.0)) / 1e9 / b
                            for t, b in zip(vals[side], beside)]
                    row[side]["pct_of_limit"] = statistics.median(pcts)
                    row[side]["bw_gbs"] = statistics.median(beside)
                    row["limit_used"] = f"{c['limit']} beside"
                else:
                    row[side]["pct_of_limit"] = 100.0 * v / lim
                    row["limit_used"] = used
        for side in ("ember", "torch"):
            row[side]["summaries"] = summaries[side]
        if c["family"] == "main":
            acc = {k: statistics.median(x.get("test_accuracy", 0) for x in summaries[k]) for k in summaries}
            rss = {k: statistics.median(x.get("peak_rss_mb", 0) for x in summaries[k]) for k in summaries}
            row["note"] = (f"test accuracy ember {acc['ember']:.4f} / torch {acc['torch']:.4f}; "
                           f"peak RSS ember {rss['ember']:.0f} MiB / torch {rss['torch']:.0f} MiB")
            print(f"  {row['note']}")
        print(f"  ember/torch {row['ratio']:.2f}\n", flush=True)
        rows.append(row)

    # The table.
    width = max([len(r["name"]) for r in rows] + [4])
    print(f"\n{'case':<{width}} {'ember':>10} {'±%':>4} {'torch':>10} {'±%':>4} {'e/t':>6} "
          f"{'ember rate':>16} {'%lim e':>7} {'%lim t':>7}  limit")
    for r in rows:
        rate_s, pe, pt = "", "", ""
        if "rate" in r["ember"]:
            rate_s = f"{r['ember']['rate']:.1f} {r['rate_unit']}"
            pe, pt = f"{r['ember']['pct_of_limit']:.0f}%", f"{r['torch']['pct_of_limit']:.0f}%"
        unit = r["unit"]
        print(f"{r['name']:<{width}} {r['ember']['median']:>8.4g}{unit:<2} {r['ember']['spread_pct']:>4.0f} "
              f"{r['torch']['median']:>8.4g}{unit:<2} {r['torch']['spread_pct']:>4.0f} {r['ratio']:>6.2f} "
              f"{rate_s:>16} {pe:>7} {pt:>7}  {r.get('limit_used', '')}")
    for r in rows:
        if "note" in r:
            print(f"{r['name']}: {r['note']}")
    slower = [r["name"] for r in rows if r["ratio"] > 1.0]
    print(f"\nlimits: read {limits['read']:.1f} GB/s, copy {limits['copy']:.1f} GB/s (256 MiB); read "
          f"{limits['read_at'][64]:.1f} / {limits['read_at'][16]:.1f} GB/s, copy {limits['copy_at'][64]:.1f} / "
          f"{limits['copy_at'][16]:.1f} GB/s (64 / 16 MiB; each case against the size nearest its arrays'); "
          f"sgemm {limits['gemm']:.0f} GFLOP/s. \"read/copy beside\": each round against the bandwidth its own "
          f"process measured around the case's samples (Note [Bandwidth beside the case]). ±%: half the range "
          f"of the {args.rounds} round values.")
    print(f"cases where ember is slower than torch: {len(slower)}" + (": " + "; ".join(slower) if slower else ""))

    result = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "commit": git_commit(),
              "cpu": cpu_model(), "cpus": os.cpu_count(), "threads": args.threads, "rounds": args.rounds,
              "limits": limits, "cases": rows}
    os.makedirs(os.path.dirname(json_path), exist_ok=True)
    with open(json_path, "w") as f:
        json.dump(result, f, indent=1)
    history = os.path.join(os.path.dirname(json_path), "history")
    os.makedirs(history, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    with open(os.path.join(history, f"{stamp}-{result['commit']}.json"), "w") as f:
        json.dump(result, f, indent=1)
    if rows:
        write_svg(svg_path, rows)
    print(f"wrote {json_path} and {svg_path}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
