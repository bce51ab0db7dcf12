#!/usr/bin/python3
"""Checks an ONNX file written by ember with runtimes that share no code with it.

usage: validate_onnx.py MODEL.onnx [INPUT.npy REFERENCE.npy [--numpy]]

1. onnx.checker.check_model(full_check=True): the ONNX project's own validator, with
   strict shape inference over the whole graph.
2. Prints the model's opset, producer, inputs, outputs (name, element type, dims with
   symbolic dims by name) and metadata, one per line, for the C++ test to assert on.
3. With an input and a reference output (ember's), runs the model with OpenCV's dnn
   module (cv2.dnn.readNetFromONNX) and prints the max absolute difference and the max
   difference relative to the reference's largest magnitude. With --numpy, a small
   evaluator of the ONNX ops' definitions written here in numpy runs it instead (for
   graphs OpenCV 4.6 gets wrong: its ReduceMean over the last axis).
Exits non-zero (with the reason on stderr) when any step fails.
"""
import sys

import numpy as np
import onnx
import onnx.numpy_helper


def dims(value_info):
    out = []
    for d in value_info.type.tensor_type.shape.dim:
        out.append(d.dim_param if d.HasField("dim_param") else str(d.dim_value))
    return "[" + ",".join(out) + "]"


def run_numpy(model, x):
    """Evaluates the graph with numpy, following the ONNX operator definitions."""
    from onnx import numpy_helper

    env = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    inputs = [vi.name for vi in model.graph.input if vi.name not in env]
    env[inputs[0]] = x
    for n in model.graph.node:
        a = {at.name: onnx.helper.get_attribute_value(at) for at in n.attribute}
        i = [env[k] for k in n.input]
        ops = {
            "MatMul": lambda: i[0] @ i[1],
            "Add": lambda: i[0] + i[1],
            "Sub": lambda: i[0] - i[1],
            "Mul": lambda: i[0] * i[1],
            "Div": lambda: i[0] / i[1],
            "Sqrt": lambda: np.sqrt(i[0]),
            "Relu": lambda: np.maximum(i[0], 0),
            "ReduceMean": lambda: i[0].mean(axis=tuple(a["axes"]), keepdims=bool(a.get("keepdims", 1))),
        }
        if n.op_type not in ops:
            sys.exit(f"the numpy evaluator has no {n.op_type}")
        env[n.output[0]] = ops[n.op_type]().astype(i[0].dtype)
    return env[model.graph.output[0].name]


def main():
    path = sys.argv[1]
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    print("checker: ok")
    print("opset", ",".join(f"{o.domain or 'ai.onnx'}:{o.version}" for o in model.opset_import))
    print("producer", model.producer_name)
    print("doc", model.doc_string)
    initializers = {t.name for t in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name not in initializers:
            elem = onnx.TensorProto.DataType.Name(vi.type.tensor_type.elem_type)
            print("input", vi.name, elem, dims(vi))
    for vi in model.graph.output:
        elem = onnx.TensorProto.DataType.Name(vi.type.tensor_type.elem_type)
        print("output", vi.name, elem, dims(vi))
    print("initializers", " ".join(sorted(initializers)))
    print("ops", " ".join(n.op_type for n in model.graph.node))
    for n in model.graph.node:
        if n.op_type == "Reshape":
            for t in model.graph.initializer:
                if t.name == n.input[1]:
                    target = ",".join(str(v) for v in onnx.numpy_helper.to_array(t))
                    print(f"reshape {n.output[0]} [{target}]")
    for p in model.metadata_props:
        print(f"meta {p.key}={p.value}")
    if len(sys.argv) < 4:
        return
    x = np.load(sys.argv[2])
    ref = np.load(sys.argv[3])
    if "--numpy" in sys.argv[4:]:
        runtime = "numpy"
        y = run_numpy(model, x)
    else:
        import cv2

        runtime = "opencv"
        net = cv2.dnn.readNetFromONNX(path)
        net.setInput(x)
        y = net.forward()
    if tuple(y.shape) != tuple(ref.shape):
        sys.exit(f"{runtime} output shape {tuple(y.shape)} differs from ember's {tuple(ref.shape)}")
    diff = float(np.max(np.abs(y.astype(np.float64) - ref.astype(np.float64))))
    scale = float(np.max(np.abs(ref))) or 1.0
    print(f"{runtime}: shape={list(y.shape)} max_abs={diff:.3e} max_rel={diff / scale:.3e}")


if __name__ == "__main__":
    main()
