"""Optimizers and schedulers from Python against torch 1.13, step by step, and the
state_dict layout."""

import numpy as np
import pytest
import torch

import ember
from conftest import assert_close, to_ember


def run_steps(make_e, make_t, steps=5, noncontiguous=False):
    w = np.random.randn(4, 3).astype(np.float32)
    b = np.random.randn(3).astype(np.float32)
    ep = [ember.nn.Parameter(ember.from_numpy(w.copy())), ember.nn.Parameter(ember.from_numpy(b.copy()))]
    tp = [torch.nn.Parameter(torch.from_numpy(w.copy())), torch.nn.Parameter(torch.from_numpy(b.copy()))]
    eo, to = make_e(ep), make_t(tp)
    for step in range(steps):
        x = np.random.randn(5, 4).astype(np.float32)
        for params, opt, lib in ((ep, eo, ember), (tp, to, torch)):
            opt.zero_grad()
            weight = params[0].t().t() if noncontiguous else params[0]
            loss = ((lib.from_numpy(x.copy()) @ weight + params[1]).tanh() ** 2).sum()
            loss.backward()
            opt.step()
        for e, t in zip(ep, tp):
            assert_close(e, t, rtol=1e-5, atol=1e-6)
    return eo, to


@pytest.mark.parametrize("name,kwargs", [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.1, momentum=0.5, dampening=0.1, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, betas=(0.8, 0.9), amsgrad=True, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.1)),
])
def test_optimizer_steps_match_torch(name, kwargs):
    eo, to = run_steps(lambda p: getattr(ember.optim, name)(p, **kwargs), lambda p: getattr(torch.optim, name)(p, **kwargs))
    esd, tsd = eo.state_dict(), to.state_dict()
    assert esd["param_groups"][0].keys() == tsd["param_groups"][0].keys()
    assert esd["param_groups"][0]["params"] == tsd["param_groups"][0]["params"]
    assert esd["state"].keys() == tsd["state"].keys()
    for k in tsd["state"]:
        assert esd["state"][k].keys() == tsd["state"][k].keys()
        for name2, v in tsd["state"][k].items():
            assert_close(esd["state"][k][name2], v, rtol=1e-4, atol=1e-5)


def test_optimizer_state_dict_roundtrip_continues_identically():
    e1, _ = run_steps(lambda p: ember.optim.Adam(p, lr=0.01), lambda p: torch.optim.Adam(p, lr=0.01), steps=2)
    params = e1.param_groups[0]["params"]
    clone = [ember.nn.Parameter(p.detach().clone()) for p in params]
    e2 = ember.optim.Adam(clone, lr=0.5)
    e2.load_state_dict(e1.state_dict())
    assert e2.param_groups[0]["lr"] == 0.01
    for opt, ps in ((e1, params), (e2, clone)):
        opt.zero_grad()
        (ps[0].sum() * 2 + ps[1].pow(2).sum()).backward()
        opt.step()
    for a, b in zip(params, clone):
        assert a.detach().equal(b.detach())


def test_noncontiguous_parameter_views_in_the_loss():
    run_steps(lambda p: ember.optim.SGD(p, lr=0.1, momentum=0.9), lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
              noncontiguous=True)


def test_param_groups_with_their_own_options_and_errors():
    a, b = ember.nn.Parameter(ember.ones(2)), ember.nn.Parameter(ember.ones(2))
    opt = ember.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    (a.sum() + b.sum()).backward()
    opt.step()
    assert a.tolist() == pytest.approx([0.9, 0.9]) and b.tolist() == pytest.approx([0.5, 0.5])
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        ember.optim.Adam([a], lr=-1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        ember.optim.SGD([{"params": [a]}, {"params": [a]}], lr=0.1)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        ember.optim.SGD([], lr=0.1)


class Sign(ember.optim.Optimizer):
    """A custom optimizer written in Python: p -= lr * sign(grad)."""

    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr))

    @ember.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.sub_(p.grad.sign() * group["lr"])
                    self.state[p]["n"] = self.state[p].get("n", 0) + 1


def test_custom_python_optimizer():
    p = ember.nn.Parameter(ember.tensor([1.0, -1.0]))
    opt = Sign([p], lr=0.25)
    (p * ember.tensor([3.0, -2.0])).sum().backward()
    opt.step()
    assert p.tolist() == [0.75, -0.75]
    assert opt.state_dict()["state"] == {0: {"n": 1}}


@pytest.mark.parametrize("name,kwargs", [("StepLR", dict(step_size=2, gamma=0.5)),
                                         ("MultiStepLR", dict(milestones=[2, 5], gamma=0.1)),
                                         ("ExponentialLR", dict(gamma=0.9)),
                                         ("CosineAnnealingLR", dict(T_max=4, eta_min=0.01)),
                                         ("LinearLR", dict(start_factor=0.25, total_iters=4)),
                                         ("LambdaLR", dict(lr_lambda=lambda e: 1.0 / (e + 1)))])
def test_schedulers_match_torch(name, kwargs):
    ep, tp = ember.nn.Parameter(ember.ones(1)), torch.nn.Parameter(torch.ones(1))
    eo, to = ember.optim.SGD([ep], lr=0.1), torch.optim.SGD([tp], lr=0.1)
    es = getattr(ember.optim.lr_scheduler, name)(eo, **kwargs)
    ts = getattr(torch.optim.lr_scheduler, name)(to, **kwargs)
    for _ in range(10):
        assert es.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12)
        eo.step()
        to.step()
        es.step()
        ts.step()


def test_reduce_lr_on_plateau_matches_torch():
    ep, tp = ember.nn.Parameter(ember.ones(1)), torch.nn.Parameter(torch.ones(1))
    eo, to = ember.optim.SGD([ep], lr=0.1), torch.optim.SGD([tp], lr=0.1)
    es = ember.optim.lr_scheduler.ReduceLROnPlateau(eo, patience=1, factor=0.5)
    ts = torch.optim.lr_scheduler.ReduceLROnPlateau(to, patience=1, factor=0.5)
    for metric in [1.0, 0.9, 0.95, 0.96, 0.97, 0.5, 0.6, 0.7, 0.8]:
        es.step(metric)
        ts.step(metric)
        assert eo.param_groups[0]["lr"] == pytest.approx(to.param_groups[0]["lr"])


def test_clip_grad_norm_matches_torch():
    a = np.random.randn(5).astype(np.float32)
    ep, tp = ember.nn.Parameter(ember.from_numpy(a.copy())), torch.nn.Parameter(torch.from_numpy(a.copy()))
    (ep * 10).sum().backward()
    (tp * 10).sum().backward()
    en = ember.nn.utils.clip_grad_norm_([ep], 1.0)
    tn = torch.nn.utils.clip_grad_norm_([tp], 1.0)
    assert en.item() == pytest.approx(tn.item(), rel=1e-6)
    assert_close(ep.grad, tp.grad)


@pytest.mark.parametrize("opt_name,kwargs", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.1)),
                                             ("AdamW", dict(lr=0.1))])
@pytest.mark.parametrize("sched_kwargs", [dict(), dict(anneal_strategy="linear"), dict(three_phase=True)])
def test_one_cycle_lr_matches_torch_including_momentum(opt_name, kwargs, sched_kwargs):
    ep, tp = ember.nn.Parameter(ember.ones(1)), torch.nn.Parameter(torch.ones(1))
    eo, to = getattr(ember.optim, opt_name)([ep], **kwargs), getattr(torch.optim, opt_name)([tp], **kwargs)
    es = ember.optim.lr_scheduler.OneCycleLR(eo, max_lr=1.0, total_steps=20, **sched_kwargs)
    ts = torch.optim.lr_scheduler.OneCycleLR(to, max_lr=1.0, total_steps=20, **sched_kwargs)
    key = "betas" if "betas" in to.defaults else "momentum"
    for _ in range(19):
        assert es.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12)
        assert eo.param_groups[0][key] == pytest.approx(to.param_groups[0][key], rel=1e-12)
        eo.step()
        to.step()
        es.step()
        ts.step()
    with pytest.raises(ValueError, match="must support momentum"):
        ember.optim.lr_scheduler.OneCycleLR(ember.optim.Adagrad([ep]), max_lr=1.0, total_steps=5)
