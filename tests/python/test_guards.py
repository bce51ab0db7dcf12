"""The training guards from Python: each one reproduces its failure and sees the message
(as a Python UserWarning), correct code stays silent, and the switch turns it off."""

import warnings

import pytest

import ember
import ember.nn as nn


@pytest.fixture(autouse=True)
def _fresh_guards():
    ember.guards.set_all_enabled(True)
    ember.guards.reset()
    yield
    ember.guards.set_all_enabled(True)
    ember.guards.reset()


def caught(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return [str(x.message) for x in w if issubclass(x.category, UserWarning)]


def test_evaluation_without_eval_warns_once_and_eval_is_silent():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.BatchNorm1d(4))

    def evaluate():
        with ember.no_grad():
            model(ember.randn(8, 4))
            model(ember.randn(8, 4))

    msgs = caught(evaluate)
    assert len(msgs) == 1 and "evaluation without model.eval()?" in msgs[0] and "nn.Dropout" in msgs[0]
    ember.guards.reset()
    model.eval()
    assert caught(evaluate) == []
    model.train()
    assert caught(lambda: model(ember.randn(8, 4)).sum().backward()) == []  # training with grad: fine
    ember.guards.set_enabled("EvalMode", False)
    ember.guards.reset()
    assert caught(evaluate) == []


def test_non_finite_loss_names_the_step():
    x = ember.tensor([-1.0, 2.0], requires_grad=True)
    msgs = caught(lambda: x.log().sum().backward())
    assert len(msgs) == 1 and msgs[0].startswith("[backward] the loss is nan at step ")
    ember.guards.reset()
    assert caught(lambda: x.exp().sum().backward()) == []
    ember.guards.set_enabled("NonFiniteLoss", False)
    assert caught(lambda: x.log().sum().backward()) == []


def test_losses_kept_with_their_graphs_across_python_optimizer_steps_warn():
    model = nn.Linear(512, 512)
    opt = ember.optim.SGD(model.parameters(), lr=1e-3)
    kept = []

    def train(keep_graph):
        for _ in range(6):
            opt.zero_grad()
            out = model(ember.randn(512, 512)).relu()
            loss = out.mean()
            loss.backward(retain_graph=keep_graph)
            opt.step()
            kept.append(loss if keep_graph else loss.item())

    msgs = caught(lambda: train(True))
    assert len(msgs) == 1 and "tensors saved for backward grew for 3 consecutive optimizer steps" in msgs[0]
    assert msgs[0].startswith("[SGD.step]")
    kept.clear()
    ember.guards.reset()
    assert caught(lambda: train(False)) == []


def test_unknown_guard_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown guard 'Nope'; the guards are GradAccumulation, EvalMode"):
        ember.guards.set_enabled("Nope", False)


def test_missing_zero_grad_warns_with_the_count_and_declared_accumulation_is_silent():
    model = nn.Linear(3, 1)
    opt = ember.optim.SGD(model.parameters(), lr=0.01)

    def loop(zero, backward_per_step=1, steps=3):
        for _ in range(steps):
            if zero:
                opt.zero_grad()
            for _ in range(backward_per_step):
                model(ember.randn(4, 3)).sum().backward()
            opt.step()

    msgs = caught(lambda: loop(zero=False))
    assert len(msgs) == 1 and msgs[0].startswith("[SGD.step] the gradients come from 2 backward passes")
    assert "zero_grad() is missing" in msgs[0]
    opt2 = ember.optim.SGD(model.parameters(), lr=0.01)
    opt = opt2
    assert caught(lambda: loop(zero=True)) == []
    opt.set_accumulation_steps(3)
    assert caught(lambda: loop(zero=True, backward_per_step=3)) == []
    ember.guards.set_enabled("GradAccumulation", False)
    opt = ember.optim.SGD(model.parameters(), lr=0.01)
    assert caught(lambda: loop(zero=False)) == []
