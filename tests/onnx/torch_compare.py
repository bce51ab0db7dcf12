#!/usr/bin/python3
"""ember's ONNX export against PyTorch's own exporter, on the same weights and input.

usage: torch_compare.py EMBER.onnx INPUT.npy REFERENCE.npy {cnn,mlp} TORCH_OUT.onnx OPSET

Builds the same architecture in PyTorch (python3-torch 1.13), loads the weights from the
initializers of ember's file (named after ember's state_dict, which uses PyTorch's
names), checks PyTorch's eager output against ember's (REFERENCE), exports it with
torch.onnx.export (dynamic batch), checks that file with the ONNX checker, and runs both
files in OpenCV's dnn module on the same input. Prints one line per comparison:
  torch_eager: max_rel=...         PyTorch eager vs ember
  opencv_ember: max_rel=...        OpenCV on ember's file vs ember
  opencv_torch: max_rel=...        OpenCV on PyTorch's file vs ember
  opencv_files: max_rel=...        OpenCV on the two files against each other
"""
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch
from torch import nn


def architecture(kind):
    if kind == "cnn":  # tests/onnx/export_test.cpp Cnn()
        return nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 7 * 7, 10))
    if kind == "mlp":  # tests/onnx/export_test.cpp Mlp()
        return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 10))
    sys.exit(f"unknown model kind {kind}")


def rel(y, ref):
    y = np.asarray(y, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if y.shape != ref.shape:
        sys.exit(f"shape {y.shape} differs from {ref.shape}")
    return float(np.max(np.abs(y - ref))) / (float(np.max(np.abs(ref))) or 1.0)


def opencv(path, x):
    import cv2

    net = cv2.dnn.readNetFromONNX(path)
    net.setInput(x)
    return net.forward()


def main():
    ember_path, in_path, ref_path, kind, torch_path, opset = sys.argv[1:7]
    x = np.load(in_path)
    ref = np.load(ref_path)
    ember_model = onnx.load(ember_path)
    weights = {t.name: onnx.numpy_helper.to_array(t) for t in ember_model.graph.initializer}

    model = architecture(kind)
    state = model.state_dict()
    for name, value in state.items():
        if name.endswith("num_batches_tracked"):
            continue
        if name not in weights:
            sys.exit(f"ember's file has no initializer {name} (it has {sorted(weights)})")
        if tuple(weights[name].shape) != tuple(value.shape):
            sys.exit(f"{name}: ember's shape {weights[name].shape}, PyTorch's {tuple(value.shape)}")
        state[name] = torch.from_numpy(weights[name].copy())
    model.load_state_dict(state)
    model.eval()
    with torch.no_grad():
        eager = model(torch.from_numpy(x)).numpy()
    print(f"torch_eager: max_rel={rel(eager, ref):.3e}")

    torch.onnx.export(model, torch.from_numpy(x), torch_path, opset_version=int(opset), input_names=["images"],
                      output_names=["logits"], dynamic_axes={"images": {0: "B"}, "logits": {0: "B"}})
    torch_model = onnx.load(torch_path)
    onnx.checker.check_model(torch_model, full_check=True)
    print("torch_file: checker ok, ops", " ".join(n.op_type for n in torch_model.graph.node))

    y_ember = opencv(ember_path, x)
    y_torch = opencv(torch_path, x)
    print(f"opencv_ember: max_rel={rel(y_ember, ref):.3e}")
    print(f"opencv_torch: max_rel={rel(y_torch, ref):.3e}")
    print(f"opencv_files: max_rel={rel(y_ember, y_torch):.3e}")


if __name__ == "__main__":
    main()
