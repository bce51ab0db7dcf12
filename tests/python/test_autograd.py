"""Autograd from Python against torch 1.13: gradients, grad_fn names, modes, hooks,
autograd.grad with create_graph, custom Functions written in Python, checkpointing."""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_close, to_ember, to_torch


def leaf_pair(*shape):
    arr = np.random.randn(*shape).astype(np.float32)
    return ember.from_numpy(arr.copy()).requires_grad_(), torch.from_numpy(arr.copy()).requires_grad_()


def test_backward_matches_torch_through_broadcast_and_noncontiguous_views():
    ea, ta = leaf_pair(3, 4)
    eb, tb = leaf_pair(4, 1)
    for lib, a, b in (("e", ea, eb), ("t", ta, tb)):
        y = (a.t() * b).sigmoid().sum(0).pow(2).mean() + (a @ b).tanh().sum()
        y.backward()
    assert_close(ea.grad, ta.grad, rtol=1e-4, atol=1e-6)
    assert_close(eb.grad, tb.grad, rtol=1e-4, atol=1e-6)


def test_grad_fn_names_match_torch():
    ea, ta = leaf_pair(2, 3)
    # (A Python number operand gives libtorch's C++ names, MulBackward1/DivBackward1, where
    # torch's Python binding wraps the number in a tensor and says MulBackward0.)
    cases = [lambda x: x * x, lambda x: x + x, lambda x: x + 2, lambda x: x.sum(), lambda x: x.exp(), lambda x: x.t(), lambda x: x[0],
             lambda x: x.view(6), lambda x: x.relu(), lambda x: x @ x.t(), lambda x: x.mean(1), lambda x: x.softmax(1),
             lambda x: x.pow(3), lambda x: x / x]
    for f in cases:
        assert f(ea).grad_fn.name() == f(ta).grad_fn.name()
    assert ea.grad_fn is None and ea.is_leaf
    y = ea * ea
    assert not y.is_leaf and y.requires_grad
    assert "MulBackward0" in repr(y.grad_fn)
    acc = y.grad_fn.next_functions[0][0]
    assert acc.name() == "AccumulateGrad" and acc.variable is not None


def test_no_grad_enable_grad_inference_mode_and_set_grad_enabled():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        y = x * 2
        assert not ember.is_grad_enabled()
        with ember.enable_grad():
            z = x * 2
    assert not y.requires_grad and z.requires_grad and ember.is_grad_enabled()

    @ember.no_grad()
    def f(t):
        return t * 3

    assert not f(x).requires_grad
    with ember.inference_mode():
        w = x * 2
        assert ember.is_inference_mode_enabled()
    assert not w.requires_grad and w.is_inference
    ember.set_grad_enabled(False)
    assert not (x * 2).requires_grad
    ember.set_grad_enabled(True)
    with ember.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad


def test_autograd_grad_with_create_graph_gives_second_derivatives():
    ex, tx = leaf_pair(5)
    for x, lib in ((ex, ember), (tx, torch)):
        y = (x ** 3).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        x.gg = gg
    assert_close(ex.gg, tx.gg, rtol=1e-5)
    assert ex.grad is None


def test_tensor_hooks_and_retain_grad():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    h = x.register_hook(lambda g: seen.append(g.tolist()))
    y = x * 3
    y.retain_grad()
    y.register_hook(lambda g: g * 2)  # replaces the gradient flowing down
    y.sum().backward()
    assert seen == [[6.0, 6.0]]
    assert y.grad.tolist() == [1.0, 1.0]  # torch 1.13 retains the gradient before the tensor's hooks
    assert x.grad.tolist() == [6.0, 6.0]
    h.remove()
    x.grad = None
    (x * 1).sum().backward()
    assert seen == [[6.0, 6.0]] and x.grad.tolist() == [1.0, 1.0]


def test_gradients_accumulate_and_backward_twice_needs_retain_graph():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 8.0]
    z = (x * x).sum()
    z.backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        z.backward()


class ScaledExp(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        y = x.exp() * scale
        ctx.save_for_backward(y)
        ctx.scale = scale
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y, None


class TorchScaledExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        y = x.exp() * scale
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y, None


def test_python_autograd_function_matches_torch():
    ex, tx = leaf_pair(4)
    ey = ScaledExp.apply(ex, 2.0)
    ty = TorchScaledExp.apply(tx, 2.0)
    assert ey.grad_fn.name() == "ScaledExpBackward"
    (ey.sin().sum()).backward()
    (ty.sin().sum()).backward()
    assert_close(ey, ty)
    assert_close(ex.grad, tx.grad, rtol=1e-5)


def test_python_function_needs_input_grad_and_wrong_gradient_count():
    class Two(ember.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.flags = ctx.needs_input_grad
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g  # one gradient for two inputs: an error naming the function

    a = ember.ones(2, requires_grad=True)
    b = ember.ones(2)
    y = Two.apply(a, b)
    assert y.tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match=r"TwoBackward.*returned 1 gradients, but forward took 2 arguments"):
        y.sum().backward()


def test_gradcheck_passes_for_correct_and_fails_for_wrong_gradients():
    x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: (t * t).sin(), (x,))

    class Wrong(ember.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3

    assert not ember.autograd.gradcheck(lambda t: Wrong.apply(t), (x,), raise_exception=False)


def test_checkpoint_gives_the_same_gradients():
    from ember.utils.checkpoint import checkpoint
    lin = ember.nn.Linear(4, 4)
    x = ember.randn(2, 4, requires_grad=True)
    (lin(x).relu().sum()).backward()
    g_plain = lin.weight.grad.clone()
    lin.zero_grad()
    checkpoint(lambda t: lin(t).relu(), x).sum().backward()
    assert_close(lin.weight.grad, to_torch(g_plain))


def test_numpy_requires_grad_error_matches_torch():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Use tensor.detach\(\).numpy\(\) instead"):
        x.numpy()
    assert x.detach().numpy().tolist() == [1.0, 1.0]
