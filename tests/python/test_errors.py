"""Bad input raises the same Python exception type in ember as in torch 1.13, and ember's
message names the op and the fix."""

import numpy as np
import pytest
import torch

import ember


def both(fn):
    """Runs fn with each library; returns the two exceptions."""
    errs = []
    for lib in (ember, torch):
        with pytest.raises(Exception) as info:
            fn(lib)
        errs.append(info.value)
    return errs


CASES = {
    "mm shapes": lambda T: T.zeros(2, 3).mm(T.zeros(4, 5)),
    "matmul shapes": lambda T: T.zeros(2, 3) @ T.zeros(2, 3),
    "broadcast": lambda T: T.zeros(2, 3) + T.zeros(4),
    "view incompatible": lambda T: T.zeros(3, 4).t().view(12),
    "view numel": lambda T: T.zeros(3, 4).view(5, 3),
    "cat shapes": lambda T: T.cat([T.zeros(2, 3), T.zeros(2, 4)], 0),
    "cat empty list": lambda T: T.cat([], 0),
    "stack shapes": lambda T: T.stack([T.zeros(2), T.zeros(3)]),
    "index out of range": lambda T: T.zeros(3)[3],
    "too many indices": lambda T: T.zeros(3)[0, 0],
    "float index tensor": lambda T: T.zeros(3)[T.tensor([0.5])],
    "dim out of range": lambda T: T.zeros(2, 3).sum(5),
    "item of many": lambda T: T.zeros(2).item(),
    "bool of many": lambda T: bool(T.zeros(2)),
    "backward non-scalar": lambda T: T.zeros(2, requires_grad=True).mul(2).backward(),
    "requires_grad on int": lambda T: T.zeros(2, dtype=T.int64).requires_grad_(),
    "cross_entropy target": lambda T: T.nn.functional.cross_entropy(T.zeros(2, 3), T.tensor([0, 5])),
    "linear shapes": lambda T: T.nn.functional.linear(T.zeros(2, 3), T.zeros(4, 5)),
    "conv2d channels": lambda T: T.nn.functional.conv2d(T.zeros(1, 3, 5, 5), T.zeros(4, 2, 3, 3)),
    "embedding out of range": lambda T: T.nn.functional.embedding(T.tensor([7]), T.zeros(5, 2)),
    "sub bool": lambda T: T.tensor([True]) - T.tensor([False]),
    "numpy with grad": lambda T: T.zeros(2, requires_grad=True).numpy(),
    "len of 0-d": lambda T: len(T.tensor(1.0)),
    "optimizer lr": lambda T: T.optim.SGD([T.nn.Parameter(T.zeros(1))], lr=-1),
    "load_state_dict missing": lambda T: T.nn.Linear(2, 2).load_state_dict({}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_same_exception_type_as_torch(name):
    e, t = both(CASES[name])
    assert type(e) is type(t), \
        f"{name}: ember raised {type(e).__name__} ({e}), torch {type(t).__name__} ({t})"


def test_ember_messages_name_the_op_and_shapes():
    with pytest.raises(RuntimeError, match=r"^\[cat\].*"):
        ember.cat([ember.zeros(2, 3), ember.zeros(2, 4)], 0)
    with pytest.raises(RuntimeError, match=r"\[view\].*reshape"):
        ember.zeros(3, 4).t().view(12)
    with pytest.raises(IndexError, match=r"\[cross_entropy\] target contains a class index outside \[0, 3\)"):
        ember.nn.functional.cross_entropy(ember.zeros(2, 3), ember.tensor([0, 5]))
    with pytest.raises(RuntimeError, match=r"\[add\].*\[2, 3\].*\[4\]"):
        ember.zeros(2, 3) + ember.zeros(4)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "int16", "bool", "float16"])
def test_ops_on_every_dtype_match_torch(dtype):
    rng = np.random.default_rng(1)
    if dtype == "bool":
        a, b = rng.random((3, 4)) > 0.5, rng.random((3, 4)) > 0.5
    elif dtype.startswith("float"):
        a, b = rng.standard_normal((3, 4)).astype(dtype), rng.standard_normal((3, 4)).astype(dtype)
    else:
        a, b = rng.integers(1, 9, (3, 4)).astype(dtype), rng.integers(1, 9, (3, 4)).astype(dtype)
    ea, eb = ember.from_numpy(a.copy()), ember.from_numpy(b.copy())
    ta, tb = torch.from_numpy(a.copy()), torch.from_numpy(b.copy())
    tol = dict(rtol=1e-2, atol=1e-2) if dtype == "float16" else dict(rtol=1e-6, atol=1e-6)

    def same(x, y):
        assert str(x.dtype).split(".")[1] == str(y.dtype).split(".")[1], (x.dtype, y.dtype)
        np.testing.assert_allclose(x.numpy().astype(np.float64), y.numpy().astype(np.float64), **tol)

    same(ea == eb, ta == tb)
    same(ea.t().contiguous(), ta.t().contiguous())
    same(ea.sum(0), ta.sum(0))
    same(ember.cat([ea, eb]), torch.cat([ta, tb]))
    same(ea[1:, ::2], ta[1:, ::2])
    if dtype != "bool":
        same(ea + eb, ta + tb)
        same(ea * eb, ta * tb)
        same(ea.max(1).values, ta.max(1).values)
        same(ea * 2, ta * 2)
        same(ea / eb if dtype.startswith("float") else ea.float() / eb.float(),
             ta / tb if dtype.startswith("float") else ta.float() / tb.float())
    else:
        same(ea & eb, ta & tb)
        same(ea | eb, ta | tb)


@pytest.mark.parametrize("make", [lambda: ember.zeros(2, device="cuda"), lambda: ember.arange(3, device="cuda:0"),
                                  lambda: ember.ones_like(ember.zeros(2), device="meta"),
                                  lambda: ember.zeros(2).new_ones(3, device="cuda"),
                                  lambda: ember.zeros(2).to("cuda"), lambda: ember.tensor([1.0], device="cuda")])
def test_a_device_other_than_the_cpu_is_refused_not_ignored(make):
    with pytest.raises((ValueError, RuntimeError), match="CPU only"):
        make()
    assert ember.zeros(2, device="cpu").shape == (2,)
    assert ember.arange(2, device=ember.device("cpu")).tolist() == [0, 1]
