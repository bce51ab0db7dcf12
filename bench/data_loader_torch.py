"""The PyTorch side of bench/data.cpp: epochs of Fashion-MNIST through
torch.utils.data.DataLoader (batch 64, shuffle, N worker processes), with the per-sample
work torchvision would do: uint8 -> float / 255 (ToTensor) and Normalize(mean, std).

  python3 bench/data_loader_torch.py [--root DIR] [--workers 2] [--reps 3]

Prints `summary: ms=<median epoch ms> min=.. max=.. reps=..` as the C++ benchmark programs
do (bench/harness.h), after one untimed epoch."""
import argparse
import gzip
import os
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

BATCH = 64
MEAN, STD = 0.2860, 0.3530


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


class FashionMNIST(Dataset):
    def __init__(self, root):
        self.images = read_idx(f"{root}/train-images-idx3-ubyte.gz")
        self.labels = read_idx(f"{root}/train-labels-idx1-ubyte.gz").astype(np.int64)
        self.mean = torch.tensor([MEAN]).view(1, 1, 1)
        self.std = torch.tensor([STD]).view(1, 1, 1)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        x = torch.from_numpy(self.images[i].copy()).unsqueeze(0).float().div(255)  # ToTensor
        x = x.sub_(self.mean).div_(self.std)  # Normalize
        return x, int(self.labels[i])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", default=os.environ.get("EMBER_FASHION_MNIST", "/usr/share/datasets/fashion-mnist"))
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args()
    torch.manual_seed(0)
    ds = FashionMNIST(args.root)
    loader = DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=args.workers)
    times = []
    for rep in range(args.reps + 1):
        n = 0
        start = time.perf_counter()
        for x, y in loader:
            n += x.shape[0]
        if rep > 0:  # the first epoch warms up
            times.append((time.perf_counter() - start) * 1000)
        assert n == len(ds), n
    times.sort()
    print(f"library: torch {torch.__version__} (Python), {args.workers} loader workers")
    print(f"summary: ms={times[len(times) // 2]:.6g} min={times[0]:.6g} max={times[-1]:.6g} reps={args.reps}")


if __name__ == "__main__":
    main()
