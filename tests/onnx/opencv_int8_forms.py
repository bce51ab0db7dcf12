#!/usr/bin/python3
"""Which forms of a quantized ONNX model OpenCV's dnn module runs (docs/onnx.md, "Quantized
models and OpenCV"). Not a test: a probe whose printout the docs summarise. It builds small
quantized graphs by hand with onnx.helper and runs them with cv2.dnn.readNetFromONNX against a
numpy/torch reference, in three groups:

  qdq_forms()   QDQ: QuantizeLinear/DequantizeLinear around a float Conv, with the weights as a
                DequantizeLinear of an int8 initializer, a Q/DQ pair of a float initializer, or
                plain floats; per-channel and per-tensor scales; uint8 and int8 activations;
                and a lone Q/DQ pair.
  qoperator()   QOperator with ONNX Runtime's value names: QLinearConv (+MaxPool), QLinearAdd,
                QLinearConcat, QLinearGlobalAveragePool, QLinearAveragePool, Flatten +
                QLinearMatMul.
  torch_fx()    torch.onnx.export of an FX-quantized CNN (PyTorch 1.13).

  /usr/bin/python3 tests/onnx/opencv_int8_forms.py [OUT_DIR]
"""
import os
import sys
import tempfile
import warnings

import cv2
import numpy as np
import onnx
import torch
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

OUT = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="opencv_int8_")
os.makedirs(OUT, exist_ok=True)
warnings.filterwarnings("ignore")


def qdq_forms():

    rng = np.random.default_rng(0)
    N, C, OC, H, W = 2, 3, 8, 9, 9
    x = (rng.standard_normal((N, C, H, W)) * 1.2 + 0.3).astype(np.float32)
    wf = (rng.standard_normal((OC, C, 3, 3)) * 0.3).astype(np.float32)
    bf = (rng.standard_normal(OC) * 0.1).astype(np.float32)
    sx, zx = np.float32(0.04), 60
    sy, zy = np.float32(0.08), 70
    ws_pc = (np.abs(wf).reshape(OC, -1).max(1) / 127.5).astype(np.float32)
    ws_pt = np.float32(np.abs(wf).max() / 127.5)

    def q(v, s, z, lo=0, hi=255):
        return np.clip(np.rint(v / s) + z, lo, hi)

    def conv_ref(xq_vals, wvals, b):
        import torch
        return torch.nn.functional.conv2d(torch.from_numpy(xq_vals), torch.from_numpy(wvals), torch.from_numpy(b), padding=1).numpy()

    def reference(per_channel):
        xv = (q(x, sx, zx) - zx) * sx
        if per_channel:
            wq = np.clip(np.rint(wf / ws_pc[:, None, None, None]), -128, 127)
            wv = wq * ws_pc[:, None, None, None]
        else:
            wq = np.clip(np.rint(wf / ws_pt), -128, 127)
            wv = wq * ws_pt
        y = conv_ref(xv.astype(np.float32), wv.astype(np.float32), bf)
        return ((q(y, sy, zy) - zy) * sy).astype(np.float32), wq.astype(np.int8)

    def scalar(name, dt, v):
        return h.make_tensor(name, dt, [], [v])

    def model(nodes, inits, opset=13, extra_opsets=(), yshape=(N, OC, H, W)):
        g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [N, C, H, W])],
                         [h.make_tensor_value_info("y", T.FLOAT, yshape)], inits)
        m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)] + [h.make_opsetid(d, 1) for d in extra_opsets])
        m.ir_version = 7
        return m

    def act_inits(zdt=T.UINT8):
        return [scalar("sx", T.FLOAT, float(sx)), scalar("zx", zdt, zx), scalar("sy", T.FLOAT, float(sy)), scalar("zy", zdt, zy)]

    def qdq(per_channel, weight_form, opset=13, int8_act=False):
        """weight_form: 'dq_init' (DequantizeLinear of an int8 initializer), 'float' (dequantized float initializer),
        'q_dq' (QuantizeLinear->DequantizeLinear of a float initializer, what torch exports)."""
        ref, wq = reference(per_channel)
        zdt = T.INT8 if int8_act else T.UINT8
        zxv, zyv = (zx - 128, zy - 128) if int8_act else (zx, zy)
        inits = [scalar("sx", T.FLOAT, float(sx)), scalar("zx", zdt, zxv), scalar("sy", T.FLOAT, float(sy)), scalar("zy", zdt, zyv),
                 nh.from_array(bf, "b")]
        nodes = [h.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
                 h.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"])]
        ws = ws_pc if per_channel else np.array(ws_pt, np.float32)
        axis = {"axis": 0} if per_channel else {}
        if weight_form == "dq_init":
            inits += [nh.from_array(wq, "wq"), nh.from_array(ws, "ws"), nh.from_array(np.zeros(ws.shape, np.int8), "wz")]
            nodes.append(h.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], **axis))
            wname = "wd"
        elif weight_form == "q_dq":
            wvals = wf
            inits += [nh.from_array(wvals, "wfl"), nh.from_array(ws, "ws"), nh.from_array(np.zeros(ws.shape, np.int8), "wz")]
            nodes += [h.make_node("QuantizeLinear", ["wfl", "ws", "wz"], ["wq8"], **axis),
                      h.make_node("DequantizeLinear", ["wq8", "ws", "wz"], ["wd"], **axis)]
            wname = "wd"
        else:
            wv = (wq.astype(np.float32) * (ws[:, None, None, None] if per_channel else ws)).astype(np.float32)
            inits.append(nh.from_array(wv, "wv"))
            wname = "wv"
        nodes += [h.make_node("Conv", ["xd", wname, "b"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
                  h.make_node("QuantizeLinear", ["c", "sy", "zy"], ["yq"]),
                  h.make_node("DequantizeLinear", ["yq", "sy", "zy"], ["y"])]
        return model(nodes, inits, opset), ref

    def qoperator(per_channel, int8_act=False):
        """QuantizeLinear -> QLinearConv -> DequantizeLinear (ONNX's operator-oriented int8 form)."""
        ref, wq = reference(per_channel)
        ws = ws_pc if per_channel else np.array([ws_pt], np.float32)
        bq = np.rint(bf / (sx * ws)).astype(np.int32)
        zdt = T.INT8 if int8_act else T.UINT8
        zxv, zyv = (zx - 128, zy - 128) if int8_act else (zx, zy)
        inits = [scalar("sx", T.FLOAT, float(sx)), scalar("zx", zdt, zxv), scalar("sy", T.FLOAT, float(sy)), scalar("zy", zdt, zyv),
                 nh.from_array(wq, "wq"), nh.from_array(ws if per_channel else np.float32(ws_pt), "ws"),
                 nh.from_array(np.zeros(ws.shape, np.int8) if per_channel else np.int8(0), "wz"), nh.from_array(bq, "bq")]
        nodes = [h.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
                 h.make_node("QLinearConv", ["xq", "sx", "zx", "wq", "ws", "wz", "sy", "zy", "bq"], ["yq"], pads=[1, 1, 1, 1],
                             kernel_shape=[3, 3]),
                 h.make_node("DequantizeLinear", ["yq", "sy", "zy"], ["y"])]
        return model(nodes, inits), ref

    def lone_qdq():
        nodes = [h.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]), h.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["y"])]
        ref = ((q(x, sx, zx) - zx) * sx).astype(np.float32)
        return model(nodes, act_inits()[:2], yshape=(N, C, H, W)), ref

    def run(name, m, ref):
        onnx.checker.check_model(m, full_check=True)
        path = os.path.join(OUT, f"{name}.onnx")
        onnx.save(m, path)
        try:
            net = cv2.dnn.readNetFromONNX(path)
        except cv2.error as e:
            print(f"{name:34s} IMPORT FAILS: {' | '.join(l.strip() for l in str(e).splitlines() if l.strip())[:400]}")
            return
        try:
            net.setInput(x)
            y = net.forward()
        except cv2.error as e:
            msg = str(e).strip().splitlines()
            print(f"{name:34s} FORWARD FAILS: {[l for l in msg if l.strip()][-1][:200]}")
            return
        steps = np.abs(y - ref) / sy
        print(f"{name:34s} runs: shape {tuple(y.shape)}, max |cv - ref| = {steps.max():.2f} steps, "
              f"{(steps > 0.5).mean() * 100:.2f}% off by >= 1 step")

    cases = [("lone_qdq", *lone_qdq())]
    for pc in (True, False):
        tag = "perchannel" if pc else "pertensor"
        for form in ("dq_init", "q_dq", "float"):
            cases.append((f"qdq_{tag}_{form}", *qdq(pc, form)))
        cases.append((f"qdq_{tag}_dq_init_int8act", *qdq(pc, "dq_init", int8_act=True)))
        cases.append((f"qlinearconv_other_names_{tag}", *qoperator(pc)))
        cases.append((f"qlinearconv_other_names_{tag}_int8act", *qoperator(pc, int8_act=True)))
    for name, m, ref in cases:
        try:
            run(name, m, ref)
        except Exception as e:
            print(f"{name:34s} ERROR {type(e).__name__}: {str(e)[:200]}")


def qoperator():

    rng = np.random.default_rng(0)
    N, C, OC, H, W = 2, 3, 8, 9, 9
    x = (rng.standard_normal((N, C, H, W)) * 1.2 + 0.3).astype(np.float32)
    def qp(lo, hi, qmax=255):
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        s = np.float32((hi - lo) / qmax); z = int(np.clip(-np.rint(lo / s), 0, qmax)); return s, z
    def q(v, s, z, hi=255): return np.clip(np.rint(v * np.float32(1 / s)) + z, 0, hi)
    def dq(c, s, z): return ((c - z) * s).astype(np.float32)

    class G:
        def __init__(s): s.nodes, s.inits, s.ms = [], [], False
        def sc(s, name, sc, zp):
            s.inits += [h.make_tensor(name + "_scale", T.FLOAT, [], [float(sc)]), h.make_tensor(name + "_zero_point", T.UINT8, [], [int(zp)])]
            return [name + "_scale", name + "_zero_point"]
        def model(s, out_shape):
            g = h.make_graph(s.nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [N, C, H, W])],
                             [h.make_tensor_value_info("y", T.FLOAT, out_shape)], s.inits)
            ops = [h.make_opsetid("", 13)] + ([h.make_opsetid("com.microsoft", 1)] if s.ms else [])
            m = h.make_model(g, opset_imports=ops); m.ir_version = 7; return m

    def conv_params(cin, cout, k, seed):
        r = np.random.default_rng(seed)
        w = (r.standard_normal((cout, cin, k, k)) * 0.3).astype(np.float32); b = (r.standard_normal(cout) * 0.1).astype(np.float32)
        ws = (np.abs(w).reshape(cout, -1).max(1) / 127.5).astype(np.float32)
        wq = np.clip(np.rint(w / ws[:, None, None, None]), -128, 127).astype(np.int8)
        return wq, ws, b

    def qconv(g, inp, in_s, in_z, wq, ws, b, name, out_s, out_z, pad, per_channel=True):
        bq = np.rint(b / (np.float32(in_s) * ws)).astype(np.int32)
        g.inits += [nh.from_array(wq, name + "_W"), nh.from_array(ws if per_channel else np.float32(ws.max()), name + "_W_scale"),
                    nh.from_array(np.zeros(len(ws), np.int8) if per_channel else np.int8(0), name + "_W_zero_point"),
                    nh.from_array(bq, name + "_B")]
        s = g.sc(name, out_s, out_z)
        g.nodes.append(h.make_node("QLinearConv", [inp, name + "_in_scale", name + "_in_zero_point", name + "_W", name + "_W_scale",
                                                   name + "_W_zero_point", s[0], s[1], name + "_B"], [name + "_quantized"],
                                   pads=[pad] * 4, kernel_shape=list(wq.shape[2:])))
        g.inits += [h.make_tensor(name + "_in_scale", T.FLOAT, [], [float(in_s)]), h.make_tensor(name + "_in_zero_point", T.UINT8, [], [int(in_z)])]
        return name + "_quantized"

    def ref_conv(xv, wq, ws, b, pad):
        wv = torch.from_numpy(wq.astype(np.float32) * ws[:, None, None, None])
        return torch.nn.functional.conv2d(torch.from_numpy(xv), wv, torch.from_numpy(b), padding=pad).numpy()

    def run(name, m, ref, step):
        onnx.checker.check_model(m)
        path = os.path.join(OUT, f"{name}.onnx"); onnx.save(m, path)
        try:
            net = cv2.dnn.readNetFromONNX(path); net.setInput(x); y = net.forward()
        except cv2.error as e:
            print(f"{name:28s} FAILS: {' | '.join(l.strip() for l in str(e).splitlines() if l.strip())[-300:]}"); return
        d = np.abs(y - ref) / step
        print(f"{name:28s} runs: {tuple(y.shape)} max {d.max():.2f} steps, {(d > 0.5).mean() * 100:.3f}% off by a step")

    sx, zx = qp(x.min(), x.max())
    xv = dq(q(x, sx, zx), sx, zx)
    # 1. conv -> conv (+ maxpool between)
    for per_channel in (True, False):
        for pool in (False, True):
            g = G()
            g.nodes.append(h.make_node("QuantizeLinear", ["x"] + g.sc("x", sx, zx), ["x_quantized"]))
            wq, ws, b = conv_params(C, OC, 3, 1)
            if not per_channel:
                w1 = (np.random.default_rng(1).standard_normal((OC, C, 3, 3)) * 0.3).astype(np.float32)
                ws = np.full_like(ws, ws.max()); wq = np.clip(np.rint(w1 / ws.max()), -128, 127).astype(np.int8)
            y1 = ref_conv(xv, wq, ws, b, 1); y1 = np.maximum(y1, 0)
            s1, z1 = qp(0, y1.max()); c1 = q(ref_conv(xv, wq, ws, b, 1), s1, z1)
            t = qconv(g, "x_quantized", sx, zx, wq, ws, b, "c1", s1, z1, 1, per_channel)
            v1 = dq(c1, s1, z1)
            if pool:
                g.nodes.append(h.make_node("MaxPool", [t], ["p1_quantized"], kernel_shape=[2, 2], strides=[2, 2]))
                g.sc("p1", s1, z1); t = "p1_quantized"
                v1 = torch.nn.functional.max_pool2d(torch.from_numpy(v1), 2).numpy()
            wq2, ws2, b2 = conv_params(OC, 4, 3, 2)
            if not per_channel:
                w2 = (np.random.default_rng(2).standard_normal((4, OC, 3, 3)) * 0.3).astype(np.float32)
                ws2 = np.full_like(ws2, ws2.max()); wq2 = np.clip(np.rint(w2 / ws2.max()), -128, 127).astype(np.int8)
            y2 = ref_conv(v1, wq2, ws2, b2, 1); s2, z2 = qp(y2.min(), y2.max())
            t = qconv(g, t, s1, z1, wq2, ws2, b2, "c2", s2, z2, 1, per_channel)
            g.nodes.append(h.make_node("DequantizeLinear", [t, "c2_scale", "c2_zero_point"], ["y"]))
            run(f"qop_conv2_{'pc' if per_channel else 'pt'}{'_pool' if pool else ''}", g.model(list(y2.shape)), dq(q(y2, s2, z2), s2, z2), s2)

    # 2. QLinearAdd / QLinearConcat / QLinearGlobalAveragePool (com.microsoft) after two convs
    wa, wsa, ba = conv_params(C, OC, 3, 3); wb, wsb, bb = conv_params(C, OC, 1, 4)
    ya, yb = ref_conv(xv, wa, wsa, ba, 1), ref_conv(xv, wb, wsb, bb, 0)
    sa, za = qp(ya.min(), ya.max()); sb, zb = qp(yb.min(), yb.max())
    va, vb = dq(q(ya, sa, za), sa, za), dq(q(yb, sb, zb), sb, zb)
    for kind in ("QLinearAdd", "QLinearConcat", "QLinearGlobalAveragePool", "QLinearAveragePool"):
        g = G(); g.ms = True
        g.nodes.append(h.make_node("QuantizeLinear", ["x"] + g.sc("x", sx, zx), ["x_quantized"]))
        ta = qconv(g, "x_quantized", sx, zx, wa, wsa, ba, "ca", sa, za, 1)
        tb = qconv(g, "x_quantized", sx, zx, wb, wsb, bb, "cb", sb, zb, 0)
        if kind == "QLinearAdd":
            r = va + vb; so, zo = qp(r.min(), r.max())
            g.nodes.append(h.make_node(kind, [ta, "ca_scale", "ca_zero_point", tb, "cb_scale", "cb_zero_point"] + g.sc("o", so, zo), ["o_quantized"], domain="com.microsoft"))
        elif kind == "QLinearConcat":
            r = np.concatenate([va, vb], 1); so, zo = qp(r.min(), r.max())
            g.nodes.append(h.make_node(kind, g.sc("o", so, zo) + [ta, "ca_scale", "ca_zero_point", tb, "cb_scale", "cb_zero_point"], ["o_quantized"], axis=1, domain="com.microsoft"))
        elif kind == "QLinearGlobalAveragePool":
            r = va.mean((2, 3), keepdims=True); so, zo = sa, za
            g.nodes.append(h.make_node(kind, [ta, "ca_scale", "ca_zero_point"] + g.sc("o", so, zo), ["o_quantized"], channels_last=0, domain="com.microsoft"))
        else:
            r = torch.nn.functional.avg_pool2d(torch.from_numpy(va), 3, 2, 1).numpy(); so, zo = sa, za
            g.nodes.append(h.make_node(kind, [ta, "ca_scale", "ca_zero_point"] + g.sc("o", so, zo), ["o_quantized"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4, count_include_pad=1, domain="com.microsoft"))
        g.nodes.append(h.make_node("DequantizeLinear", ["o_quantized", "o_scale", "o_zero_point"], ["y"]))
        run(f"qop_{kind}", g.model(list(r.shape)), dq(q(r, so, zo), so, zo), so)

    # 3. Linear: QLinearMatMul (no bias), after Flatten of codes
    for with_flatten in (True,):
        g = G()
        g.nodes.append(h.make_node("QuantizeLinear", ["x"] + g.sc("x", sx, zx), ["x_quantized"]))
        g.nodes.append(h.make_node("Flatten", ["x_quantized"], ["f_quantized"], axis=1)); g.sc("f", sx, zx)
        K = C * H * W; r = np.random.default_rng(5); wl = (r.standard_normal((10, K)) * 0.1).astype(np.float32)
        wls = (np.abs(wl).max(1) / 127.5).astype(np.float32); wlq = np.clip(np.rint(wl / wls[:, None]), -128, 127).astype(np.int8)
        yl = xv.reshape(N, -1) @ (wlq.astype(np.float32) * wls[:, None]).T; sl, zl = qp(yl.min(), yl.max())
        g.inits += [nh.from_array(wlq.T.copy(), "l_W"), nh.from_array(wls, "l_W_scale"), nh.from_array(np.zeros(10, np.int8), "l_W_zero_point")]
        g.nodes.append(h.make_node("QLinearMatMul", ["f_quantized", "f_scale", "f_zero_point", "l_W", "l_W_scale", "l_W_zero_point"] + g.sc("l", sl, zl), ["l_quantized"]))
        g.nodes.append(h.make_node("DequantizeLinear", ["l_quantized", "l_scale", "l_zero_point"], ["y"]))
        run("qop_flatten_matmul", g.model([N, 10]), dq(q(yl, sl, zl), sl, zl), sl)


def torch_fx():
    from torch.ao.quantization import get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import prepare_fx, convert_fx
    torch.manual_seed(0)
    torch.backends.quantized.engine = "onednn"
    m = torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(8 * 14 * 14, 10)).eval()
    x = torch.randn(4, 1, 28, 28)
    for label, qm in (("fx", "x86"), ("fx_qnnpack", "qnnpack")):
        try:
            p = prepare_fx(m, get_default_qconfig_mapping(qm), example_inputs=(x,))
            p(x); q = convert_fx(p)
            ref = q(x)
            path = os.path.join(OUT, f"torch_{label}.onnx")
            torch.onnx.export(q, (x,), path, opset_version=13)
            mo = onnx.load(path)
            print(label, "exported ops:", sorted({n.op_type for n in mo.graph.node}))
            net = cv2.dnn.readNetFromONNX(path); net.setInput(x.numpy()); y = net.forward()
            print(label, "opencv runs, max |cv - torch| =", np.abs(y - ref.numpy()).max())
        except Exception as e:
            print(label, "FAILS:", type(e).__name__, " | ".join(l.strip() for l in str(e).splitlines() if l.strip())[-400:])


if __name__ == "__main__":
    print(f"OpenCV {cv2.__version__}, onnx {onnx.__version__}, torch {torch.__version__}; files in {OUT}")
    for group in (qdq_forms, qoperator, torch_fx):
        print(f"-- {group.__name__}")
        group()
