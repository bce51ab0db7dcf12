"""SGD with momentum, dampening, Nesterov, weight decay and maximize (torch 1.13's rule)."""

from .. import _C
from .optimizer import Optimizer, required, update_step

_optim = _C._optim


class SGD(Optimizer):
    def __init__(self, params, lr=required, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False):
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    @update_step
    def step(self):
        for group in self.param_groups:
            momentum = group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                buf, init = None, False
                state = self.state[p]
                if momentum == 0:
                    state["momentum_buffer"] = None  # as torch 1.13 records it
                else:
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = _C.zeros_like(p)
                        state["momentum_buffer"] = buf
                        init = True
                _optim.sgd_step(p, buf, init, group["lr"], momentum, group["dampening"], group["weight_decay"],
                                group["nesterov"], group["maximize"])
