#!/usr/bin/env python3
"""The PyTorch 1.13 side of bench/train_fashion_mnist: the main job's model, optimizer and
batch size (examples/fashion_mnist), trained for N epochs on Fashion-MNIST, then evaluated.

Prints one line `summary: key=value ...` that bench/train_fashion_mnist.py reads.
Run with Debian's python3 (python3-torch): /usr/bin/python3 bench/train_fashion_mnist_torch.py
"""
import argparse
import gzip
import resource
import struct
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(root, train):
    prefix = "train" if train else "t10k"
    images = read_idx(f"{root}/{prefix}-images-idx3-ubyte.gz")
    labels = read_idx(f"{root}/{prefix}-labels-idx1-ubyte.gz")
    # torchvision's ToTensor (uint8 -> float32 in [0, 1], shape (1, 28, 28)), then
    # Normalize((0.2860,), (0.3530,)) as the ember example does.
    x = (torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1) - 0.2860) / 0.3530
    y = torch.from_numpy(labels.astype(np.int64))
    return TensorDataset(x, y)


def make_model():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--amp", choices=["bf16"], default=None,
                   help="train under torch.autocast('cpu', torch.bfloat16) (evaluation stays float32)")
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    train_set, test_set = load(args.data, True), load(args.data, False)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, num_workers=args.workers)
    test_loader = DataLoader(test_set, batch_size=1000)
    model = make_model()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)

    train_seconds = 0.0
    samples = 0
    acc = 0.0
    for epoch in range(args.epochs):
        model.train()
        start = time.perf_counter()
        for x, y in train_loader:
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.amp == "bf16"):
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            samples += x.shape[0]
        train_seconds += time.perf_counter() - start
        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in test_loader:
                correct += (model(x).argmax(1) == y).sum().item()
        acc = correct / len(test_set)
        print(f"torch epoch {epoch + 1}: test accuracy {acc:.4f}", flush=True)

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(f"summary: epochs={args.epochs} train_seconds={train_seconds:.3f} "
          f"samples_per_s={samples / train_seconds:.1f} test_accuracy={acc:.4f} peak_rss_mb={peak_mb:.1f}",
          flush=True)


if __name__ == "__main__":
    main()
