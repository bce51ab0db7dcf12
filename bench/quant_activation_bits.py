#!/usr/bin/python3
# docs/quantization.md, "Why 7-bit activations": /usr/bin/python3 bench/quant_activation_bits.py 2
# (epochs; 2 took about 12 minutes on 1 thread of the 2-core development machine).
# 7-bit (0..127, reduce_range) against 8-bit (0..255) activations: the same trained residual CNN,
# FX static quantization with each, test accuracy on Fashion-MNIST.
import gzip, sys, time, warnings
import numpy as np, torch, torch.nn as nn
warnings.filterwarnings("ignore")
torch.set_num_threads(1); torch.manual_seed(0)
D = "/usr/share/datasets/fashion-mnist/"
def idx(name, off): return np.frombuffer(gzip.open(D + name).read(), np.uint8, offset=off)
xtr = torch.from_numpy(idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28).astype(np.float32) / 255.0)
ytr = torch.from_numpy(idx("train-labels-idx1-ubyte.gz", 8).astype(np.int64))
xte = torch.from_numpy(idx("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28).astype(np.float32) / 255.0)
yte = torch.from_numpy(idx("t10k-labels-idx1-ubyte.gz", 8).astype(np.int64))
mean, std = 0.2860, 0.3530
xtr, xte = (xtr - mean) / std, (xte - mean) / std
class Block(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.body = nn.Sequential(nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU(),
                               nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c))
        s.skip = torch.nn.quantized.FloatFunctional()
    def forward(s, x): return s.skip.add_relu(s.body(x), x)
def stem(i, o, k): return [nn.Conv2d(i, o, k, padding=k // 2, bias=False), nn.BatchNorm2d(o), nn.ReLU()]
m = nn.Sequential(*stem(1, 16, 3), Block(16), nn.MaxPool2d(2), *stem(16, 32, 3), Block(32), nn.MaxPool2d(2),
                  *stem(32, 64, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
opt = torch.optim.Adam(m.parameters(), 1e-3)
epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 1
t0 = time.time()
for ep in range(epochs):
    perm = torch.randperm(len(xtr))
    m.train()
    for i in range(0, len(xtr), 64):
        b = perm[i:i + 64]
        opt.zero_grad(); nn.functional.cross_entropy(m(xtr[b]), ytr[b]).backward(); opt.step()
print(f"trained {epochs} epoch(s) in {time.time() - t0:.0f} s")
m.eval()
def acc(model):
    with torch.no_grad(): return (model(xte).argmax(1) == yte).float().mean().item()
print(f"fp32 accuracy {acc(m):.4f}")
from torch.ao.quantization import QConfig, MinMaxObserver, PerChannelMinMaxObserver, QConfigMapping
from torch.ao.quantization.quantize_fx import prepare_fx, convert_fx
torch.backends.quantized.engine = "onednn"
for rr in (True, False):
    qc = QConfig(activation=MinMaxObserver.with_args(dtype=torch.quint8, reduce_range=rr),
                 weight=PerChannelMinMaxObserver.with_args(dtype=torch.qint8, qscheme=torch.per_channel_symmetric))
    p = prepare_fx(m, QConfigMapping().set_global(qc), example_inputs=(xtr[:2],))
    with torch.no_grad():
        for i in range(0, 1000, 100): p(xtr[i:i + 100])
    q = convert_fx(p)
    print(f"int8 static ({'7-bit activations, 0..127' if rr else '8-bit activations, 0..255'}): accuracy {acc(q):.4f}")
