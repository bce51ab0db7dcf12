"""The main job (a CNN on Fashion-MNIST) written as a plain PyTorch script.

Only the imports differ between the two frameworks: the rest of the file is ordinary
PyTorch code (an nn.Module subclass, a DataLoader, zero_grad/backward/step, an eval loop
under no_grad), and with ember it reaches the C++ example's accuracy.

    PYTHONPATH=build/python python3 examples/python/fashion_mnist.py --epochs 2
    python3 examples/python/fashion_mnist.py --framework torch --epochs 2   # the same with PyTorch
"""

import argparse
import gzip
import os
import sys
import time

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("--framework", choices=["ember", "torch"], default="ember")
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("--lr", type=float, default=1e-3)
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--limit", type=int, default=0, help="use only the first N training images")
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
parser.add_argument("--save", default="", help="write the trained state_dict here")
parser.add_argument("--min-accuracy", type=float, default=0.0)
args = parser.parse_args()

# ---- the only framework-specific lines ----
if args.framework == "torch":
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset
else:
    import ember as torch
    import ember.nn as nn
    import ember.nn.functional as F
    from ember.utils.data import DataLoader, TensorDataset
# ---- from here on, ordinary PyTorch code ----


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(split):
    images = read_idx(os.path.join(args.data, f"{split}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(args.data, f"{split}-labels-idx1-ubyte.gz"))
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)
    x = (x - 0.2860) / 0.3530
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc1 = nn.Linear(3136, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


def evaluate(model, loader):
    model.eval()
    correct = 0
    total = 0
    with torch.no_grad():
        for x, y in loader:
            pred = model(x).argmax(dim=1)
            correct += (pred == y).sum().item()
            total += y.shape[0]
    model.train()
    return correct / total


def main():
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    train_x, train_y = load("train")
    test_x, test_y = load("t10k")
    if args.limit:
        train_x, train_y = train_x[:args.limit], train_y[:args.limit]
    train_loader = DataLoader(TensorDataset(train_x, train_y), batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(TensorDataset(test_x, test_y), batch_size=1000)

    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    criterion = nn.CrossEntropyLoss()
    print(f"{args.framework}: {sum(p.numel() for p in model.parameters())} parameters, "
          f"{len(train_loader.dataset)} training images")
    accuracy = 0.0
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        running = 0.0
        for step, (x, y) in enumerate(train_loader):
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            running += loss.item()
        seconds = time.perf_counter() - start
        accuracy = evaluate(model, test_loader)
        print(f"epoch {epoch}: loss {running / (step + 1):.4f}  test accuracy {accuracy:.4f}  ({seconds:.1f} s)")
    if args.save:
        torch.save(model.state_dict(), args.save)
        print(f"saved: {args.save}")
    if accuracy < args.min_accuracy:
        print(f"accuracy {accuracy:.4f} is below --min-accuracy {args.min_accuracy}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
