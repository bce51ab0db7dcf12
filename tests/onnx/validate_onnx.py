#!/usr/bin/python3
"""Checks an ONNX file written by ember with runtimes that share no code with it.

usage: validate_onnx.py MODEL.onnx [IN.npy[,IN2.npy...] REF.npy[,REF2.npy...] [--numpy]]

1. onnx.checker.check_model(full_check=True): the ONNX project's own validator, with
   strict shape inference over the whole graph.
2. Prints the model's opset, producer, inputs, outputs (name, element type, dims with
   symbolic dims by name) and metadata, one per line, for the C++ test to assert on.
3. With inputs (one .npy per graph input, in order) and reference outputs (ember's, one
   per graph output), runs the model with OpenCV's dnn module (cv2.dnn.readNetFromONNX)
   and prints, per output, the max absolute difference and the max difference relative to
   the reference's largest magnitude. With --numpy, a small evaluator of the ONNX ops'
   definitions written here in numpy runs it instead: for graphs whose ops OpenCV 4.6 does
   not import (Where, Expand, ReduceSum with axes as an input, Range, Trilu, ...) or
   computes wrongly, and for integer or boolean inputs, which its Python binding cannot
   pass. The ONNX package of Debian 12 (1.12) has no reference runtime of its own yet.
   OpenCV 4.6 cannot run QDQ graphs (QuantizeLinear / DequantizeLinear): a DequantizeLinear of
   an initializer fails to import, and even a lone QuantizeLinear -> DequantizeLinear pair
   returns uninitialised memory; ember's quantized QDQ exports are checked with --numpy, its
   QOperator exports (QLinearConv & co., docs/onnx.md) with OpenCV.
Exits non-zero (with the reason on stderr) when any step fails.
"""
import math
import sys

import numpy as np
import onnx
import onnx.mapping
import onnx.numpy_helper


def dims(value_info):
    out = []
    for d in value_info.type.tensor_type.shape.dim:
        out.append(d.dim_param if d.HasField("dim_param") else str(d.dim_value))
    return "[" + ",".join(out) + "]"


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _axes(a, i, k, rank):
    """Axes from attribute 'axes' or input k (opset 13+ for ReduceSum/Squeeze/Unsqueeze)."""
    if len(i) > k and i[k] is not None:
        ax = [int(v) for v in np.asarray(i[k]).reshape(-1)]
    else:
        ax = list(a.get("axes", []))
    return tuple(v + rank if v < 0 else v for v in ax)


def _reduce(fn, a, i, k):
    x = i[0]
    ax = _axes(a, i, k, x.ndim)
    keep = bool(a.get("keepdims", 1))
    if not ax:
        if a.get("noop_with_empty_axes", 0):
            return x
        ax = tuple(range(x.ndim))
    return fn(x, axis=ax, keepdims=keep)


def _reshape(x, shape, allowzero=0):
    target = [int(v) for v in shape]
    for k, v in enumerate(target):
        if v == 0 and not allowzero:
            target[k] = x.shape[k]
    return x.reshape(target)


def _slice(x, starts, ends, axes=None, steps=None):
    idx = [slice(None)] * x.ndim
    axes = range(len(starts)) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    for s, e, ax, st in zip(starts, ends, axes, steps):
        ax = int(ax) + x.ndim if ax < 0 else int(ax)
        e = int(min(max(int(e), -(2**62)), 2**62))
        idx[ax] = slice(int(s), e, int(st))
    return x[tuple(idx)]


def _softmax(x, axis, log=False):
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    s = np.sum(e, axis=axis, keepdims=True)
    return (x - m - np.log(s)) if log else e / s


def _instance_norm(x, scale, bias, eps):
    ax = tuple(range(2, x.ndim))
    mean = x.mean(axis=ax, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=ax, keepdims=True)
    shape = [1, -1] + [1] * (x.ndim - 2)
    return (x - mean) / np.sqrt(var + eps) * scale.reshape(shape) + bias.reshape(shape)


def _layer_norm(x, scale, bias, axis, eps):
    axis = axis + x.ndim if axis < 0 else axis
    ax = tuple(range(axis, x.ndim))
    mean = x.mean(axis=ax, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=ax, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps) * scale
    return y + bias if bias is not None else y


def _gemm(a, b, c, at):
    A = a.T if at.get("transA", 0) else a
    B = b.T if at.get("transB", 0) else b
    y = at.get("alpha", 1.0) * (A @ B)
    return y + at.get("beta", 1.0) * c if c is not None else y


def _div(x, y):
    if np.issubdtype(x.dtype, np.integer):
        return np.trunc(x / y).astype(x.dtype)
    return x / y


def _batch_norm(x, s, b, m, v, eps):
    shape = [1, -1] + [1] * (x.ndim - 2)
    return (x - m.reshape(shape)) / np.sqrt(v.reshape(shape) + eps) * s.reshape(shape) + b.reshape(shape)


def _pool2d(x, a, kind):
    kh, kw = a["kernel_shape"]
    sh, sw = a.get("strides", [1, 1])
    pt, pl, pb, pr = a.get("pads", [0, 0, 0, 0])
    if a.get("ceil_mode", 0) or a.get("dilations", [1, 1]) != [1, 1]:
        raise NotImplementedError("the numpy evaluator pools without ceil_mode or dilations only")
    fill = (np.iinfo(x.dtype).min if np.issubdtype(x.dtype, np.integer) else -np.inf) if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=fill)
    ones = np.pad(np.ones(x.shape[2:]), ((pt, pb), (pl, pr)))
    oh, ow = (xp.shape[2] - kh) // sh + 1, (xp.shape[3] - kw) // sw + 1
    y = np.empty(x.shape[:2] + (oh, ow), dtype=x.dtype)
    for r in range(oh):
        for c in range(ow):
            win = xp[:, :, r * sh : r * sh + kh, c * sw : c * sw + kw]
            if kind == "max":
                y[:, :, r, c] = win.max(axis=(2, 3))
            else:
                n = kh * kw if a.get("count_include_pad", 0) else ones[r * sh : r * sh + kh, c * sw : c * sw + kw].sum()
                y[:, :, r, c] = win.sum(axis=(2, 3)) / n
    return y


def _conv(x, w, b, a):
    """Conv (any rank, groups, dilations, pads) by unfolding windows."""
    n = w.ndim - 2
    strides = a.get("strides", [1] * n)
    dil = a.get("dilations", [1] * n)
    pads = a.get("pads", [0] * 2 * n)
    g = a.get("group", 1)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[k], pads[k + n]) for k in range(n)])
    out_sp = [(xp.shape[2 + k] - dil[k] * (w.shape[2 + k] - 1) - 1) // strides[k] + 1 for k in range(n)]
    cin_g, cout = w.shape[1], w.shape[0]
    y = np.zeros((x.shape[0], cout) + tuple(out_sp), dtype=np.float64)
    for off in np.ndindex(*w.shape[2:]):
        idx = [slice(None), slice(None)]
        for k in range(n):
            st = off[k] * dil[k]
            idx.append(slice(st, st + strides[k] * (out_sp[k] - 1) + 1, strides[k]))
        patch = xp[tuple(idx)]  # [N, Cin, *out]
        for gi in range(g):
            pg = patch[:, gi * cin_g : (gi + 1) * cin_g]
            wg = w[gi * cout // g : (gi + 1) * cout // g][(slice(None), slice(None)) + off]  # [Cout_g, Cin_g]
            y[:, gi * cout // g : (gi + 1) * cout // g] += np.einsum("nc...,oc->no...", pg, wg)
    if b is not None:
        y += b.reshape([1, -1] + [1] * n)
    return y.astype(x.dtype)


def _conv_transpose(x, w, b, a):
    """ConvTranspose as a scatter of each input element's kernel-sized contribution."""
    n = w.ndim - 2
    strides = a.get("strides", [1] * n)
    dil = a.get("dilations", [1] * n)
    pads = a.get("pads", [0] * 2 * n)
    opad = a.get("output_padding", [0] * n)
    g = a.get("group", 1)
    cin, cout_g = w.shape[0], w.shape[1]
    full = [(x.shape[2 + k] - 1) * strides[k] + dil[k] * (w.shape[2 + k] - 1) + 1 + opad[k] for k in range(n)]
    y = np.zeros((x.shape[0], cout_g * g) + tuple(full), dtype=np.float64)
    for off in np.ndindex(*w.shape[2:]):
        idx = [slice(None), None]
        for k in range(n):
            st = off[k] * dil[k]
            idx.append(slice(st, st + strides[k] * (x.shape[2 + k] - 1) + 1, strides[k]))
        for gi in range(g):
            xg = x[:, gi * cin // g : (gi + 1) * cin // g]
            wg = w[gi * cin // g : (gi + 1) * cin // g][(slice(None), slice(None)) + off]  # [Cin_g, Cout_g]
            idx[1] = slice(gi * cout_g, (gi + 1) * cout_g)
            y[tuple(idx)] += np.einsum("nc...,co->no...", xg, wg)
    crop = [slice(None), slice(None)] + [slice(pads[k], full[k] - pads[k + n]) for k in range(n)]
    y = y[tuple(crop)]
    if b is not None:
        y += b.reshape([1, -1] + [1] * n)
    return y.astype(x.dtype)


def _trilu(x, k, upper):
    return np.triu(x, k) if upper else np.tril(x, k)


def _zp(i, k):
    """Zero point input k (absent: uint8 0)."""
    return np.asarray(i[k]) if len(i) > k and i[k] is not None else np.zeros((), np.uint8)


def _centered(q, zp):
    """Codes minus their zero point, as exact integers."""
    return q.astype(np.int64) - np.asarray(zp).astype(np.int64)


def _requantize(v, y_scale, y_zp):
    """saturate(rint(v / y_scale) + y_zp), in float32."""
    info = np.iinfo(y_zp.dtype)
    q = np.rint(np.asarray(v, np.float32) / np.float32(y_scale)) + y_zp.astype(np.float32)
    return np.clip(q, info.min, info.max).astype(y_zp.dtype)


def _qlinear_product(acc, x_scale, w_scale, y_scale, y_zp, channel_shape):
    """Integer sums onto the output grid with ONNX Runtime's float32 multiplier per channel:
    saturate(rint(float(acc) * (x_scale * w_scale / y_scale)) + y_zp)."""
    m = (np.float32(x_scale) * np.asarray(w_scale, np.float32)) / np.float32(y_scale)
    v = acc.astype(np.float32) * m.reshape(channel_shape if m.ndim else ())
    info = np.iinfo(y_zp.dtype)
    return np.clip(np.rint(v) + y_zp.astype(np.float32), info.min, info.max).astype(y_zp.dtype)


def eval_qoperator(t, a, i):
    """The int8 operators of the QOperator form (ONNX's QLinearConv / QLinearMatMul and
    ONNX Runtime's com.microsoft QLinearAdd / QLinearConcat / QLinearAveragePool /
    QLinearGlobalAveragePool): integer sums exact, every rounding half to even in float32."""
    if t == "QLinearConv":
        x, xs, xz, w, ws, wz, ys, yz = i[:8]
        wz = np.asarray(wz)
        acc = _conv(_centered(x, xz), _centered(w, wz.reshape([-1, 1, 1, 1]) if wz.ndim else wz), None, a)
        if len(i) > 8 and i[8] is not None:
            acc = acc + i[8].astype(np.int64).reshape(1, -1, 1, 1)
        return [_qlinear_product(acc, xs, ws, ys, np.asarray(yz), (1, -1, 1, 1))]
    if t == "QLinearMatMul":
        x, xs, xz, w, ws, wz, ys, yz = i[:8]
        acc = np.matmul(_centered(x, xz), _centered(w, wz))
        return [_qlinear_product(acc, xs, ws, ys, np.asarray(yz), (-1,))]
    if t == "QLinearAdd":
        va = np.float32(i[1]) * _centered(i[0], _zp(i, 2)).astype(np.float32)
        vb = np.float32(i[4]) * _centered(i[3], _zp(i, 5)).astype(np.float32)
        return [_requantize(va + vb, i[6], _zp(i, 7))]
    if t == "QLinearConcat":
        ys, yz = i[0], np.asarray(i[1])
        parts = [_requantize(np.float32(i[k + 1]) * _centered(i[k], i[k + 2]).astype(np.float32), ys, yz)
                 for k in range(2, len(i), 3)]
        return [np.concatenate(parts, axis=a.get("axis", 0))]
    if t in ("QLinearAveragePool", "QLinearGlobalAveragePool"):
        x, xs = i[0], i[1]
        c = _centered(x, _zp(i, 2))
        if t == "QLinearGlobalAveragePool":
            sums = c.sum(axis=(2, 3), keepdims=True)
            n = np.full(sums.shape, x.shape[2] * x.shape[3])
        else:
            if a.get("ceil_mode", 0) or a.get("dilations", [1, 1]) != [1, 1]:
                raise NotImplementedError("the numpy evaluator pools without ceil_mode or dilations only")
            kh, kw = a["kernel_shape"]
            sh, sw = a.get("strides", [1, 1])
            pt, pl, pb, pr = a.get("pads", [0, 0, 0, 0])
            cp = np.pad(c, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
            ones = np.pad(np.ones(x.shape[2:], np.int64), ((pt, pb), (pl, pr)))
            oh, ow = (cp.shape[2] - kh) // sh + 1, (cp.shape[3] - kw) // sw + 1
            sums = np.empty(x.shape[:2] + (oh, ow), np.int64)
            n = np.empty(sums.shape, np.int64)
            for r in range(oh):
                for q in range(ow):
                    sums[:, :, r, q] = cp[:, :, r * sh : r * sh + kh, q * sw : q * sw + kw].sum(axis=(2, 3))
                    inside = ones[r * sh : r * sh + kh, q * sw : q * sw + kw].sum()
                    n[:, :, r, q] = kh * kw if a.get("count_include_pad", 0) else inside
        mean = (np.float32(xs) * sums.astype(np.float32)) / n.astype(np.float32)
        return [_requantize(mean, i[3], _zp(i, 4))]
    return None


def eval_node(n, a, i):
    """One node's outputs, following the ONNX operator definitions."""
    t = n.op_type
    x = i[0] if i else None
    unary = {
        "Identity": lambda: x.copy(),
        "Relu": lambda: np.maximum(x, 0).astype(x.dtype),
        "Sigmoid": lambda: 1.0 / (1.0 + np.exp(-x)),
        "Tanh": lambda: np.tanh(x),
        "Exp": lambda: np.exp(x),
        "Neg": lambda: -x,
        "Abs": lambda: np.abs(x),
        "Sqrt": lambda: np.sqrt(x),
        "Log": lambda: np.log(x),
        "Erf": lambda: _erf(x),
        "Sin": lambda: np.sin(x),
        "Cos": lambda: np.cos(x),
        "Tan": lambda: np.tan(x),
        "Asin": lambda: np.arcsin(x),
        "Acos": lambda: np.arccos(x),
        "Atan": lambda: np.arctan(x),
        "Sinh": lambda: np.sinh(x),
        "Cosh": lambda: np.cosh(x),
        "Reciprocal": lambda: 1.0 / x,
        "Floor": lambda: np.floor(x),
        "Ceil": lambda: np.ceil(x),
        "Round": lambda: np.round(x),
        "Sign": lambda: np.sign(x),
        "IsNaN": lambda: np.isnan(x),
        "IsInf": lambda: np.isinf(x),
        "Not": lambda: np.logical_not(x),
        "Softplus": lambda: np.log1p(np.exp(x)),
        "LeakyRelu": lambda: np.where(x >= 0, x, a.get("alpha", 0.01) * x),
    }
    if t in unary:
        return [np.asarray(unary[t]()).astype(x.dtype if t not in ("IsNaN", "IsInf", "Not") else bool)]
    binary = {
        "Add": np.add,
        "Sub": np.subtract,
        "Mul": np.multiply,
        "Div": _div,
        "Pow": np.power,
        "Max": np.maximum,
        "Min": np.minimum,
        "Equal": np.equal,
        "Less": np.less,
        "LessOrEqual": np.less_equal,
        "Greater": np.greater,
        "GreaterOrEqual": np.greater_equal,
        "And": np.logical_and,
        "Or": np.logical_or,
        "Xor": np.logical_xor,
    }
    if t in binary:
        y = np.asarray(binary[t](i[0], i[1]))
        return [y if y.dtype == bool else y.astype(i[0].dtype)]
    if t == "Mod":
        return [(np.fmod(i[0], i[1]) if a.get("fmod", 0) else np.mod(i[0], i[1])).astype(i[0].dtype)]
    if t == "Cast":
        to = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[a["to"]]
        return [x.astype(to)]
    if t == "Where":
        return [np.where(i[0], i[1], i[2])]
    if t == "Clip":
        lo = i[1] if len(i) > 1 and i[1] is not None else None
        hi = i[2] if len(i) > 2 and i[2] is not None else None
        y = x if lo is None else np.maximum(x, lo)
        return [(y if hi is None else np.minimum(y, hi)).astype(x.dtype)]
    if t == "MatMul":
        return [np.matmul(i[0], i[1])]
    if t == "Gemm":
        return [_gemm(i[0], i[1], i[2] if len(i) > 2 else None, a).astype(x.dtype)]
    if t in ("Softmax", "LogSoftmax"):
        return [_softmax(x, a.get("axis", -1), t == "LogSoftmax").astype(x.dtype)]
    if t == "Reshape":
        return [_reshape(x, i[1], a.get("allowzero", 0))]
    if t == "Flatten":
        ax = a.get("axis", 1)
        return [x.reshape(int(np.prod(x.shape[:ax])), -1)]
    if t == "Transpose":
        return [np.transpose(x, a.get("perm"))]
    if t == "Unsqueeze":
        y = x
        for ax in sorted(_axes(a, i, 1, x.ndim + len(np.asarray(i[1]).reshape(-1))) if len(i) > 1 else a["axes"]):
            y = np.expand_dims(y, ax)
        return [y]
    if t == "Squeeze":
        ax = _axes(a, i, 1, x.ndim)
        return [np.squeeze(x, axis=ax) if ax else np.squeeze(x)]
    if t == "Concat":
        return [np.concatenate(i, axis=a["axis"])]
    if t == "Slice":
        return [_slice(x, *[None if v is None else [int(e) for e in np.asarray(v).reshape(-1)] for v in i[1:]])]
    if t == "Gather":
        return [np.take(x, i[1], axis=a.get("axis", 0))]
    if t == "Split":
        ax = a.get("axis", 0)
        sizes = [int(v) for v in i[1]] if len(i) > 1 else a["split"]
        return np.split(x, np.cumsum(sizes)[:-1], axis=ax)
    reductions = {"ReduceSum": np.sum, "ReduceMean": np.mean, "ReduceMax": np.max, "ReduceMin": np.min,
                  "ReduceProd": np.prod}
    if t in reductions:
        k = 1 if t == "ReduceSum" else 99  # axes is an input only for ReduceSum before opset 18
        return [np.asarray(_reduce(reductions[t], a, i, k)).astype(x.dtype)]
    if t == "Expand":
        shape = np.broadcast_shapes(x.shape, tuple(int(v) for v in i[1]))
        return [np.broadcast_to(x, shape).copy()]
    if t == "Shape":
        return [np.array(x.shape, dtype=np.int64)]
    if t == "ConstantOfShape":
        v = onnx.numpy_helper.to_array(a["value"]) if "value" in a else np.zeros(1, np.float32)
        return [np.full([int(s) for s in x], v.reshape(-1)[0], dtype=v.dtype)]
    if t == "Range":
        return [np.arange(i[0], i[1], i[2]).astype(i[0].dtype)]
    if t == "Trilu":
        k = int(i[1]) if len(i) > 1 and i[1] is not None else 0
        return [_trilu(x, k, a.get("upper", 1))]
    if t == "InstanceNormalization":
        return [_instance_norm(x, i[1], i[2], a.get("epsilon", 1e-5)).astype(x.dtype)]
    if t == "LayerNormalization":
        b = i[2] if len(i) > 2 else None
        return [_layer_norm(x, i[1], b, a.get("axis", -1), a.get("epsilon", 1e-5)).astype(x.dtype)]
    if t == "BatchNormalization":
        return [_batch_norm(x, i[1], i[2], i[3], i[4], a.get("epsilon", 1e-5)).astype(x.dtype)]
    if t == "Conv":
        return [_conv(x, i[1], i[2] if len(i) > 2 else None, a)]
    if t == "ConvTranspose":
        return [_conv_transpose(x, i[1], i[2] if len(i) > 2 else None, a)]
    if t in ("MaxPool", "AveragePool"):
        return [_pool2d(x, a, "max" if t == "MaxPool" else "avg")]
    if t.startswith("QLinear"):
        out = eval_qoperator(t, a, i)
        if out is not None:
            return out
    if t in ("QuantizeLinear", "DequantizeLinear"):
        # Per tensor (rank-0 scale) or per axis (1-D scale along attribute axis); float32 math.
        scale = np.asarray(i[1], np.float32)
        zp = np.asarray(i[2]) if len(i) > 2 and i[2] is not None else np.zeros((), np.uint8)
        if scale.ndim == 1:
            shape = [1] * x.ndim
            shape[a.get("axis", 1) % x.ndim] = -1
            scale, zp = scale.reshape(shape), zp.reshape(shape)
        if t == "QuantizeLinear":
            info = np.iinfo(zp.dtype)
            q = np.rint(x.astype(np.float32) / scale) + zp.astype(np.float32)
            return [np.clip(q, info.min, info.max).astype(zp.dtype)]
        return [((x.astype(np.int32) - zp.astype(np.int32)).astype(np.float32) * scale).astype(np.float32)]
    if t == "GlobalAveragePool":
        return [x.mean(axis=tuple(range(2, x.ndim)), keepdims=True)]
    raise NotImplementedError(f"the numpy evaluator has no {t}")


def run_numpy(model, xs):
    """Evaluates the graph with numpy, following the ONNX operator definitions."""
    env = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    inputs = [vi.name for vi in model.graph.input if vi.name not in env]
    for name, x in zip(inputs, xs):
        env[name] = x
    for n in model.graph.node:
        a = {at.name: onnx.helper.get_attribute_value(at) for at in n.attribute}
        i = [env[k] if k else None for k in n.input]
        try:
            outs = eval_node(n, a, i)
        except NotImplementedError as e:
            sys.exit(str(e))
        for name, y in zip(n.output, outs):
            env[name] = np.asarray(y)
    return [env[o.name] for o in model.graph.output]


def run_opencv(model, path, xs):
    import cv2

    net = cv2.dnn.readNetFromONNX(path)
    initializers = {t.name for t in model.graph.initializer}
    inputs = [vi.name for vi in model.graph.input if vi.name not in initializers]
    if len(xs) == 1:
        net.setInput(xs[0])
    else:
        for name, x in zip(inputs, xs):
            net.setInput(x, name)
    names = [o.name for o in model.graph.output]
    if len(names) == 1:
        return [net.forward()]
    return list(net.forward(names))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    path = args[0]
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
    if len(args) < 3:
        return
    xs = [np.load(p) for p in args[1].split(",")]
    refs = [np.load(p) for p in args[2].split(",")]
    if "--numpy" in sys.argv[1:]:
        runtime = "numpy"
        ys = run_numpy(model, xs)
    else:
        runtime = "opencv"
        ys = run_opencv(model, path, xs)
    if len(ys) != len(refs):
        sys.exit(f"{runtime} gave {len(ys)} outputs, ember {len(refs)}")
    for k, (y, ref) in enumerate(zip(ys, refs)):
        y = np.asarray(y)
        if tuple(y.shape) != tuple(ref.shape):
            sys.exit(f"{runtime} output {k} shape {tuple(y.shape)} differs from ember's {tuple(ref.shape)}")
        if ref.dtype == bool or np.issubdtype(ref.dtype, np.integer):
            diff = float(np.sum(y.astype(np.int64) != ref.astype(np.int64)))
            scale = 1.0
        else:
            yf, rf = y.astype(np.float64), ref.astype(np.float64)
            same_inf = np.isinf(rf) & (yf == rf)
            diff = float(np.max(np.where(same_inf, 0.0, np.abs(yf - rf)), initial=0.0))
            scale = float(np.max(np.abs(np.where(np.isinf(rf), 0.0, rf)), initial=0.0)) or 1.0
        print(f"{runtime}: shape={list(y.shape)} max_abs={diff:.3e} max_rel={diff / scale:.3e}")
        if not (ref.dtype == bool or np.issubdtype(ref.dtype, np.integer)):
            off = float(np.mean(np.abs(y.astype(np.float64) - ref.astype(np.float64)) > 1e-6 * scale))
            print(f"{runtime}: fraction_differing={off:.4e}")


if __name__ == "__main__":
    main()
