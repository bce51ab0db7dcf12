"""ember.autocast and ember.amp.GradScaler from Python, against torch 1.13 where torch has
the same thing (CPU autocast with bfloat16)."""

import warnings

import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F

from conftest import to_ember


def test_autocast_nests_and_restores():
    assert not ember.amp.is_autocast_enabled()
    with ember.autocast("cpu", dtype=ember.bfloat16):
        assert ember.amp.is_autocast_enabled()
        with ember.autocast("cpu", enabled=False):
            assert not ember.amp.is_autocast_enabled()
        assert ember.amp.get_autocast_dtype() == ember.bfloat16
    assert not ember.amp.is_autocast_enabled()
    with pytest.raises(ValueError, match="device_type"):
        ember.autocast("cuda")


@pytest.mark.parametrize("op", ["linear", "matmul", "conv2d", "cross_entropy", "relu", "add_mixed"])
def test_result_dtypes_match_torch(op):
    torch.manual_seed(0)
    x, w, b = torch.randn(3, 4), torch.randn(5, 4), torch.randn(5)
    img, k = torch.randn(1, 2, 6, 6), torch.randn(3, 2, 3, 3)
    tgt = torch.tensor([0, 1, 2])
    cases = {
        "linear": (lambda m, f, *a: f.linear(*a), (x, w, b)),
        "matmul": (lambda m, f, a, c: m.matmul(a, c), (x, w.t().contiguous())),
        "conv2d": (lambda m, f, *a: f.conv2d(*a), (img, k)),
        "cross_entropy": (lambda m, f, a, t: f.cross_entropy(a.to(m.bfloat16), t), (x, tgt)),
        "relu": (lambda m, f, a: m.relu(a.to(m.bfloat16)), (x,)),
        "add_mixed": (lambda m, f, a, c: a + c.to(m.bfloat16), (x, x)),
    }
    fn, args = cases[op]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want = fn(torch, TF, *args)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        got = fn(ember, F, *[to_ember(a) for a in args])
    assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]


def test_gradients_arrive_in_float32():
    lin = ember.nn.Linear(4, 3)
    with ember.autocast():
        y = lin(ember.randn(5, 4))
        assert y.dtype == ember.bfloat16
        loss = F.cross_entropy(y, ember.tensor([0, 1, 2, 0, 1]))
    loss.backward()
    assert lin.weight.grad.dtype == ember.float32


def _setup():
    w = ember.ones(2, requires_grad=True)
    return w, ember.optim.SGD([w], lr=0.1)


def _backward(scaler, w, opt, inf):
    opt.zero_grad()
    loss = (w * ember.tensor([1.0, 2.0])).sum()
    if inf:
        loss = loss * float("inf")
    scaler.scale(loss).backward()


def test_grad_scaler_schedule():
    w, opt = _setup()
    scaler = ember.amp.GradScaler(init_scale=1024, growth_interval=3)
    infs = [False, False, False, True, False, False, True, False, False, False, True, True]
    scales = [1024, 1024, 2048, 1024, 1024, 1024, 512, 512, 512, 1024, 512, 256]
    for inf, want in zip(infs, scales):
        _backward(scaler, w, opt, inf)
        before = w.detach().clone()
        scaler.step(opt)
        assert bool((w.detach() == before).all()) == inf  # a skipped step leaves w alone
        scaler.update()
        assert scaler.get_scale() == want
    assert scaler.state_dict()["scale"] == 256


def test_grad_scaler_refuses_double_unscale_and_warns_on_clip():
    w, opt = _setup()
    scaler = ember.amp.GradScaler()
    _backward(scaler, w, opt, False)
    with pytest.warns(UserWarning, match="unscale_"):
        ember.nn.utils.clip_grad_norm_([w], 1.0)
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.nn.utils.clip_grad_norm_([w], 1.0)
    scaler.step(opt)
    scaler.update()
