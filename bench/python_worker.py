"""One process of bench/python.py: times tiny ops, a tiny backward and an MLP training
step from Python with ember or torch (--lib), 2 threads, and prints `name ns` lines."""
import argparse
import timeit

ap = argparse.ArgumentParser()
ap.add_argument("--lib", choices=["ember", "torch"], required=True)
ap.add_argument("--threads", type=int, default=2)
args = ap.parse_args()

if args.lib == "torch":
    import torch as T
else:
    import ember as T

T.set_num_threads(args.threads)
T.manual_seed(0)
a, b, m = T.randn(4), T.randn(4), T.randn(4, 4)
x = T.randn(4, requires_grad=True)
mlp = T.nn.Sequential(T.nn.Linear(784, 256), T.nn.ReLU(), T.nn.Linear(256, 10))
opt = T.optim.Adam(mlp.parameters(), lr=1e-3)
loss_fn = T.nn.CrossEntropyLoss()
data, target = T.randn(64, 784), T.randint(0, 10, (64,))


def mlp_step():
    opt.zero_grad()
    loss = loss_fn(mlp(data), target)
    loss.backward()
    opt.step()


def noop():
    pass


cases = [
    ("python call floor", noop, 200000),
    ("a + b", lambda: a + b, 100000),
    ("a.sum()", lambda: a.sum(), 100000),
    ("a[0]", lambda: m[0], 100000),
    ("a.relu()", lambda: a.relu(), 100000),
    ("a * 2", lambda: a * 2, 100000),
    ("(x*x).sum().backward()", lambda: (x * x).sum().backward(), 20000),
    ("MLP step (784-256-10, batch 64, Adam)", mlp_step, 300),
]
for name, fn, n in cases:
    fn()
    best = min(timeit.repeat(fn, number=n, repeat=5)) / n
    print(f"{name}\t{best * 1e9:.1f}")
