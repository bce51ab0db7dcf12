#!/usr/bin/env python3
"""bench/train_fashion_mnist: the main job in ember (examples/fashion_mnist, C++) and the same
model, optimizer and batch size in PyTorch 1.13 (bench/train_fashion_mnist_torch.py), run one
after the other on the same machine with the same number of threads. Prints samples/s, epoch
time, test accuracy and peak resident memory of both, and the ratio of epoch times ember/torch.

  /usr/bin/python3 bench/train_fashion_mnist.py [--epochs 1] [--threads 2] [--build build]
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd):
    print("$ " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    summary = None
    for line in proc.stdout.splitlines():
        if line.startswith("summary:"):
            summary = dict(kv.split("=", 1) for kv in line[len("summary:"):].split())
    if proc.returncode != 0 or summary is None:
        sys.stdout.write(proc.stdout[-4000:])
        sys.exit(f"{cmd[0]} failed (exit {proc.returncode})")
    return {k: float(v) for k, v in summary.items()}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--workers", type=int, default=0, help="loader workers of both sides (threads in ember, "
                   "processes in torch); 0 loads on the training thread")
    p.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    args = p.parse_args()

    out_dir = os.path.join(args.build, "bench_train_run")
    ember = run([os.path.join(args.build, "examples", "fashion_mnist"), "--epochs", str(args.epochs),
                 "--threads", str(args.threads), "--workers", str(args.workers), "--out", out_dir])
    torch = run([sys.executable, os.path.join(HERE, "train_fashion_mnist_torch.py"), "--epochs",
                 str(args.epochs), "--threads", str(args.threads), "--workers", str(args.workers)])

    print(f"\nFashion-MNIST CNN, {args.epochs} epoch(s), batch 64, Adam, {args.threads} threads")
    print("| | ember | torch 1.13 | ember/torch |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| train time per epoch (s) | {ember['train_seconds'] / args.epochs:.2f} | "
          f"{torch['train_seconds'] / args.epochs:.2f} | {ember['train_seconds'] / torch['train_seconds']:.2f} |")
    print(f"| samples/s | {ember['samples_per_s']:.0f} | {torch['samples_per_s']:.0f} | "
          f"{ember['samples_per_s'] / torch['samples_per_s']:.2f} |")
    print(f"| test accuracy | {ember['test_accuracy']:.4f} | {torch['test_accuracy']:.4f} | |")
    print(f"| peak RSS (MiB) | {ember['peak_rss_mb']:.0f} | {torch['peak_rss_mb']:.0f} | "
          f"{ember['peak_rss_mb'] / torch['peak_rss_mb']:.2f} |")


if __name__ == "__main__":
    main()
