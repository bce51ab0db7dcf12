"""The PyTorch side of bench/data.cpp: one epoch of Fashion-MNIST through
torch.utils.data.DataLoader (batch 64, shuffle, 2 worker processes), with the per-sample
work torchvision would do: uint8 -> float / 255 (ToTensor) and Normalize(mean, std).
Prints `load_s <seconds>` and `samples_per_s <rate>` for bench_data to parse."""
import gzip
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

ROOT = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/datasets/fashion-mnist"
WORKERS = int(sys.argv[2]) if len(sys.argv) > 2 else 2
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
    torch.manual_seed(0)
    t0 = time.perf_counter()
    ds = FashionMNIST(ROOT)
    t1 = time.perf_counter()
    loader = DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=WORKERS)
    n = 0
    start = time.perf_counter()
    for x, y in loader:
        n += x.shape[0]
    epoch = time.perf_counter() - start
    assert n == len(ds), n
    print(f"load_s {t1 - t0:.4f}")
    print(f"epoch_s {epoch:.4f}")
    print(f"samples_per_s {n / epoch:.1f}")


if __name__ == "__main__":
    main()
