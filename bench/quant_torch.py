#!/usr/bin/env python3
"""bench/quant_torch.py: the PyTorch 1.13 side of bench/quant (issue 15): int8 quantization
against float32 on the models bench/quant.cpp builds, one mode per process. bench/quant.py runs
both.

  /usr/bin/python3 bench/quant_torch.py --model mlp|cnn|resnet|lstm --batch N --mode fp32|int8|static
                                        [--engine onednn|qnnpack|fbgemm] [--reps N] [--threads 2]

The model is built with torch.manual_seed(0) (MLP 784-512-256-10, or the Fashion-MNIST CNN),
eval mode; the input drawn with manual_seed(1). int8: torch.quantization.quantize_dynamic(model,
{nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8) -- per-channel int8 weights as
ember's -- with torch.backends.quantized.engine = --engine (default: this build's default;
Debian's python3-torch 1.13 has no fbgemm, its engines are onednn and qnnpack). static: FX
graph-mode post-training quantization, torch.ao.quantization.quantize_fx.prepare_fx with
get_default_qconfig_mapping(engine), calibration on 4 batches of 64 random inputs
(manual_seed(2)), convert_fx -- quantized conv2d_relu / linear_relu kernels of the engine, quint8
activations between them. All modes run under torch.inference_mode(). Warm-up: 2 calls and at least 0.2 s, then --reps timed calls (0:
as many as fit in ~1 s, 20 to 5000); prints `summary: ms=<median> min=.. max=.. reps=..
bytes=<state_dict bytes>` (bytes: the size of torch.save(model.state_dict())).
lstm: a 2-layer nn.LSTM, input and hidden 256, over 50 steps ([50, N, 256]), its output sequence
the result; int8 quantizes {nn.Linear, nn.LSTM} with per-channel weights (nn.quantized.dynamic.LSTM).
"""
import argparse
import io
import sys
import time

import torch
import torch.nn as nn


class Block(nn.Module):
    """examples/fashion_mnist's residual block: conv-bn-relu-conv-bn, plus the input, then ReLU."""

    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU(),
                                  nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        return torch.relu(self.body(x) + x)


class SequenceModel(nn.Module):
    """A 2-layer LSTM whose output sequence is the result."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(256, 256, num_layers=2)

    def forward(self, x):
        return self.lstm(x)[0]


def make_model(name):
    torch.manual_seed(0)
    if name == "lstm":
        m = SequenceModel()
    elif name == "resnet":
        def stem(i, o, k):
            return [nn.Conv2d(i, o, k, padding=k // 2, bias=False), nn.BatchNorm2d(o), nn.ReLU()]
        m = nn.Sequential(*stem(1, 16, 3), Block(16), nn.MaxPool2d(2), *stem(16, 32, 3), Block(32), nn.MaxPool2d(2),
                          *stem(32, 64, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
    elif name == "mlp":
        m = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    else:  # examples/fashion_mnist make_model()
        m = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
    return m.eval()


def make_input(name, batch):
    torch.manual_seed(1)
    if name == "lstm":
        return torch.randn(50, batch, 256)
    return torch.randn((batch, 784) if name == "mlp" else (batch, 1, 28, 28))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["mlp", "cnn", "resnet", "lstm"], required=True)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--mode", choices=["fp32", "int8", "static"], required=True)
    p.add_argument("--engine", default=None)
    p.add_argument("--reps", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    if args.engine:
        if args.engine not in torch.backends.quantized.supported_engines:
            print(f"engine {args.engine} is not in this build's {torch.backends.quantized.supported_engines}",
                  file=sys.stderr)
            return 1
        torch.backends.quantized.engine = args.engine

    model = make_model(args.model)
    x = make_input(args.model, args.batch)
    with torch.inference_mode():
        fp = model(x)
    if args.mode == "int8":
        qconfig = torch.quantization.per_channel_dynamic_qconfig
        model = torch.quantization.quantize_dynamic(model, {nn.Linear: qconfig, nn.LSTM: qconfig}, dtype=torch.qint8)
    elif args.mode == "static" and args.model == "lstm":
        print("lstm has no static int8 mode", file=sys.stderr)
        return 2
    elif args.mode == "static":
        from torch.ao.quantization import get_default_qconfig_mapping
        from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx
        qmap = get_default_qconfig_mapping(torch.backends.quantized.engine)
        prepared = prepare_fx(model, qmap, example_inputs=(x,))
        torch.manual_seed(2)
        with torch.no_grad():
            for _ in range(4):
                prepared(torch.randn((64,) + tuple(x.shape[1:])))
        model = convert_fx(prepared)

    def call():
        with torch.inference_mode():
            return model(x)

    rel = ((call() - fp).abs().max() / fp.abs().max()).item()
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    print(f"library: torch {torch.__version__} (python), {torch.get_num_threads()} threads, "
          f"quantized engine {torch.backends.quantized.engine}")
    print(f"check: {args.model} {args.mode} batch {args.batch}: max |out - fp32| / max |fp32| = {rel:.3g}")
    if not rel <= (0.25 if args.mode == "static" else 0.05):
        print(f"check failed: the output is {rel:.3g} (relative) away from float32's", file=sys.stderr)
        return 1

    t0 = time.perf_counter()
    warm = 0
    while warm < 2 or time.perf_counter() - t0 < 0.2:
        call()
        warm += 1
    per_call = (time.perf_counter() - t0) * 1e3 / warm
    n = args.reps if args.reps > 0 else int(min(max(1000.0 / per_call, 20), 5000))
    ms = []
    for _ in range(n):
        a = time.perf_counter()
        call()
        ms.append((time.perf_counter() - a) * 1e3)
    ms.sort()
    print(f"summary: ms={ms[len(ms) // 2]:.6g} min={ms[0]:.6g} max={ms[-1]:.6g} reps={n} bytes={len(buf.getvalue())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
