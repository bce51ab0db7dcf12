"""Adagrad (torch 1.13's rule), written with tensor ops as torch's single-tensor path."""

from .. import _C
from .optimizer import Optimizer, _step_value, update_step


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False):
        for name, v in (("learning rate", lr), ("lr_decay value", lr_decay), ("weight_decay value", weight_decay),
                        ("initial_accumulator_value value", initial_accumulator_value), ("epsilon value", eps)):
            if v < 0.0:
                raise ValueError(f"Invalid {name}: {v}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _C.scalar_tensor(0.0)
                state["sum"] = _C.full_like(p, group["initial_accumulator_value"])

    @update_step
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                grad = -p.grad if group["maximize"] else p.grad
                step = _step_value(state)
                if group["weight_decay"] != 0:
                    grad = grad.add(p, alpha=group["weight_decay"])
                clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
                state["sum"].add_(grad * grad)
                std = state["sum"].sqrt().add_(group["eps"])
                p.add_((grad * -clr) / std)
