"""Adam and AdamW: torch 1.13's update, in ember's fused C++ loop (one call per parameter)."""

from .. import _C
from .optimizer import Optimizer, _step_value, update_step

_optim = _C._optim


class Adam(Optimizer):
    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    @update_step
    def step(self):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _C.scalar_tensor(0.0)
                    state["exp_avg"] = _C.zeros_like(p)
                    state["exp_avg_sq"] = _C.zeros_like(p)
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = _C.zeros_like(p)
                step = _step_value(state)
                _optim.adam_step(p, state["exp_avg"], state["exp_avg_sq"], state.get("max_exp_avg_sq"), step,
                                 group["lr"], beta1, beta2, group["eps"], group["weight_decay"], group["amsgrad"],
                                 group["maximize"], self._decoupled)


class AdamW(Adam):
    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused)
        for group in self.param_groups:  # torch 1.13's AdamW groups have neither key
            group.pop("differentiable", None)
            group.pop("fused", None)
        self.defaults.pop("differentiable", None)
        self.defaults.pop("fused", None)
