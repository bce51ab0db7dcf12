#!/usr/bin/env python3
"""char_lm benchmark (make bench-lm): examples/char_lm's transformer in ember (bench_char_lm)
and the same model in PyTorch 1.13 (char_lm_torch.py), 2 threads. Every (library, task)
runs in its own process, interleaved over rounds; the table gives medians and ratios.

    char_lm.py --build build [--rounds 5] [--steps 10] [--threads 2]

Tasks: a training step (batch 32 x 128 tokens: forward, backward, clip, AdamW) and
generation (112 tokens after an 8-token prompt, top-k sampling) with a KV cache; torch also
generates without a cache (the whole prefix again for every token).
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"summary: \w+=(\S+)", out).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    common = ["--steps", str(args.steps), "--threads", str(args.threads)]
    ember = [os.path.join(args.build, "bench", "bench_char_lm")]
    torch = ["/usr/bin/python3", os.path.join(HERE, "char_lm_torch.py")]
    cmds = {
        ("ember", "train"): ember + ["--what", "train"] + common,
        ("torch", "train"): torch + ["--what", "train"] + common,
        ("ember", "generate"): ember + ["--what", "generate"] + common,
        ("torch", "generate"): torch + ["--what", "generate"] + common,
        ("torch", "generate_nocache"): torch + ["--what", "generate_nocache"] + common,
    }
    results = {k: [] for k in cmds}
    keys = list(cmds)
    for r in range(args.rounds):
        for k in keys if r % 2 == 0 else list(reversed(keys)):
            results[k].append(run(cmds[k]))
        print("round %d done" % (r + 1), file=sys.stderr)

    def med(k):
        xs = sorted(results[k])
        return xs[len(xs) // 2]

    et, tt = med(("ember", "train")), med(("torch", "train"))
    eg, tg, tn = med(("ember", "generate")), med(("torch", "generate")), med(("torch", "generate_nocache"))
    print("| task (%d threads, median of %d rounds) | ember | torch 1.13 | ember/torch |" % (args.threads, args.rounds))
    print("|---|---|---|---|")
    print("| training step, ms (lower is better) | %.1f | %.1f | %.2fx time |" % (et, tt, et / tt))
    print("| generation with KV cache, tokens/s | %.0f | %.0f | %.2fx speed |" % (eg, tg, eg / tg))
    print("| ember with cache vs torch without, tokens/s | %.0f | %.0f | %.2fx speed |" % (eg, tn, eg / tn))


if __name__ == "__main__":
    main()
