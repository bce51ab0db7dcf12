"""Shared helpers of the Python parity suite: ember and torch 1.13 run in this process on
the same inputs (copied through NumPy)."""

import numpy as np
import pytest
import torch

import ember


def to_torch(t):
    return torch.from_numpy(t.detach().numpy().copy())


def to_ember(t):
    return ember.from_numpy(t.detach().numpy().copy())


def assert_close(e, t, rtol=1e-5, atol=1e-6):
    """Values, shape and dtype of an ember result against torch's."""
    if isinstance(t, (tuple, list)):
        assert len(e) == len(t)
        for a, b in zip(e, t):
            assert_close(a, b, rtol, atol)
        return
    if isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), f"expected a Tensor, got {type(e)}"
        assert tuple(e.shape) == tuple(t.shape), f"shape {tuple(e.shape)} != torch's {tuple(t.shape)}"
        assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1], f"dtype {e.dtype} != torch's {t.dtype}"
        np.testing.assert_allclose(e.detach().numpy().astype(np.float64), t.detach().numpy().astype(np.float64),
                                   rtol=rtol, atol=atol)
        return
    assert e == pytest.approx(t, rel=rtol, abs=atol)


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    torch.manual_seed(0)
    ember.manual_seed(0)
    yield
