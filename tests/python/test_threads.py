"""Heavy calls release the GIL (matmul, conv, norms, backward, optimizer steps, cat/stack),
so Python threads run while ember computes. Python code called back from C++ during
backward (tensor hooks, autograd.Function, checkpoint) takes the GIL again."""

import threading

import numpy as np

import ember
from ember.utils.checkpoint import checkpoint


class Double(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def work(seed, out, errors):
    try:
        rng = np.random.default_rng(seed)
        a = rng.standard_normal((64, 64)).astype(np.float32)
        x = ember.from_numpy(a.copy()).requires_grad_()
        seen = []
        x.register_hook(lambda g: seen.append(1))
        lin = ember.nn.Linear(64, 64)
        opt = ember.optim.Adam(lin.parameters(), lr=1e-3)
        for _ in range(20):
            opt.zero_grad()
            y = checkpoint(lambda t: lin(Double.apply(t)).relu(), x @ x.t())
            y.sum().backward()
            opt.step()
        expected = (a @ a.T).sum()
        out[seed] = (len(seen), float((x @ x.t()).sum().item()), float(expected))
    except Exception as e:  # reported by the main thread
        errors.append(repr(e))


def test_threads_run_ember_concurrently_with_python_callbacks():
    out, errors = {}, []
    threads = [threading.Thread(target=work, args=(s, out, errors)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    assert sorted(out) == [0, 1, 2, 3]
    for hooks, got, expected in out.values():
        assert hooks == 20  # the tensor hook ran in every backward
        assert abs(got - expected) <= 1e-3 * max(1.0, abs(expected))


def test_dataloader_threads_with_stacking_in_cpp():
    ds = ember.utils.data.TensorDataset(ember.randn(256, 32), ember.arange(256))
    batches = list(ember.utils.data.DataLoader(ds, batch_size=16, num_workers=4))
    assert len(batches) == 16
    assert ember.cat([y for _, y in batches]).tolist() == list(range(256))
