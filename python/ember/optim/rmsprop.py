"""RMSprop (torch 1.13's rule), in ember's fused loop."""

from .. import _C
from .optimizer import Optimizer, update_step

_optim = _C._optim


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 foreach=None, maximize=False, differentiable=False):
        for name, v in (("learning rate", lr), ("epsilon value", eps), ("momentum value", momentum),
                        ("weight_decay value", weight_decay), ("alpha value", alpha)):
            if v < 0.0:
                raise ValueError(f"Invalid {name}: {v}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    @update_step
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0  # an int in torch 1.13's RMSprop
                    state["square_avg"] = _C.zeros_like(p)
                    if group["momentum"] > 0:
                        state["momentum_buffer"] = _C.zeros_like(p)
                    if group["centered"]:
                        state["grad_avg"] = _C.zeros_like(p)
                state["step"] += 1
                _optim.rmsprop_step(p, state["square_avg"], state.get("grad_avg"), state.get("momentum_buffer"),
                                    group["lr"], group["alpha"], group["eps"], group["weight_decay"],
                                    group["momentum"], group["centered"], group["maximize"])
