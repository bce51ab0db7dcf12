"""Zero-copy exchange with NumPy and torch (DLPack), the data loader, and the ported
scripts in examples/python."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.utils.dlpack

import ember
from ember.utils.data import DataLoader, Dataset, TensorDataset, random_split


def test_numpy_is_zero_copy_both_ways():
    e = ember.arange(6, dtype=ember.float32).reshape(2, 3)
    n = e.numpy()
    n[0, 1] = 42
    assert e[0, 1].item() == 42
    assert n.dtype == np.float32 and n.shape == (2, 3)
    t = e.t()
    assert t.numpy().strides == (4, 12)  # a view keeps its strides
    a = np.zeros((2, 2), dtype=np.float64)
    f = ember.from_numpy(a)
    f += 1
    assert a.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert f.dtype == ember.float64
    assert np.asarray(ember.ones(2)).tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="negative"):
        ember.from_numpy(np.arange(4)[::-1])
    with pytest.raises(TypeError, match="can't convert np.ndarray of type complex128"):
        ember.from_numpy(np.zeros(2, dtype=np.complex128))


def test_numpy_view_keeps_the_storage_alive():
    n = ember.arange(1000).numpy()
    import gc
    gc.collect()
    assert n[999] == 999


def test_dlpack_exchange_with_torch_is_zero_copy():
    e = ember.zeros(3, 4)
    t = torch.utils.dlpack.from_dlpack(e)
    t[1, 2] = 5
    assert e[1, 2].item() == 5
    assert t.shape == (3, 4) and t.dtype == torch.float32
    src = torch.arange(10, dtype=torch.int64)[::2]
    back = ember.from_dlpack(src)
    src[0] = -7
    assert back.tolist() == [-7, 2, 4, 6, 8] and back.dtype == ember.int64
    cap = ember.utils.dlpack.to_dlpack(ember.ones(2))
    assert torch.utils.dlpack.from_dlpack(cap).tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="already consumed"):
        ember.from_dlpack(cap)


class Squares(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return ember.tensor([float(i)]), i * i


def test_dataloader_batches_shuffles_and_drops_last():
    loader = DataLoader(Squares(), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [b[0].shape[0] for b in batches] == [4, 4, 2]
    assert batches[0][1].tolist() == [0, 1, 4, 9] and batches[0][1].dtype == ember.int64
    assert len(list(DataLoader(Squares(), batch_size=4, drop_last=True))) == 2
    ember.manual_seed(1)
    seen = sorted(int(x.item()) for b, _ in DataLoader(Squares(), batch_size=3, shuffle=True) for x in b)
    assert seen == list(range(10))
    ember.manual_seed(1)
    order1 = [b[1].tolist() for b in DataLoader(Squares(), batch_size=10, shuffle=True)]
    ember.manual_seed(1)
    order2 = [b[1].tolist() for b in DataLoader(Squares(), batch_size=10, shuffle=True)]
    assert order1 == order2 and order1[0] != [i * i for i in range(10)]


def test_dataloader_thread_workers_keep_the_order():
    ds = TensorDataset(ember.arange(100), ember.arange(100) * 2)
    plain = [(x.tolist(), y.tolist()) for x, y in DataLoader(ds, batch_size=7)]
    threaded = [(x.tolist(), y.tolist()) for x, y in DataLoader(ds, batch_size=7, num_workers=3)]
    assert plain == threaded and len(plain) == 15


def test_random_split_partitions_the_dataset():
    a, b = random_split(TensorDataset(ember.arange(10)), [7, 3])
    got = sorted([int(a[i][0].item()) for i in range(7)] + [int(b[i][0].item()) for i in range(3)])
    assert got == list(range(10))


ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"


@pytest.mark.skipif(not os.path.exists(DATA), reason="dataset-fashion-mnist is not installed")
def test_fashion_mnist_script_trains_with_ember(tmp_path):
    """The plain-PyTorch script runs on ember and learns (a short run on 4000 images)."""
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "python", "fashion_mnist.py"), "--epochs", "1",
                          "--limit", "4000", "--min-accuracy", "0.65", "--save", str(tmp_path / "model.pt")],
                         capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ember: 421642 parameters" in out.stdout
    state = ember.load(tmp_path / "model.pt")
    assert list(state.keys()) == ["conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc1.weight", "fc1.bias",
                                  "fc2.weight", "fc2.bias"]


def test_custom_function_example_runs():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "python", "custom_function.py")],
                         capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "gradcheck: True" in out.stdout and "max |custom - built-in softplus| grad:" in out.stdout


def test_quickstart_example_prints_what_the_docs_show():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "python", "quickstart.py")],
                         capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert out.returncode == 0, out.stdout + out.stderr
    docs = open(os.path.join(ROOT, "docs", "python.md")).read()
    for line in out.stdout.strip().splitlines():
        assert line in docs, f"docs/python.md does not show the example's output line {line!r}"
    assert "train accuracy 1.00" in out.stdout
