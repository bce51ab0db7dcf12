"""optim.Optimizer: param_groups (dicts), per-parameter state (dicts keyed by parameter),
zero_grad, add_param_group, state_dict/load_state_dict in torch's layout. Subclass it in
Python as in torch: define __init__(params, defaults) and step()."""

import functools
import warnings
from collections import defaultdict
from copy import deepcopy

from .. import _C
from .._C import Tensor
from ..autograd.grad_mode import enable_grad, no_grad
from ._grads import zero_grads


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer:
    def __init__(self, params, defaults):
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {type(params).__name__}")
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self):
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"\n    {key}: {group[key]}"
        return s + "\n)"

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError("param group must be a dict")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        for p in param_group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        seen = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
        if any(id(p) in seen for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=False):
        """Clears the gradients (torch 1.13's default zeroes them in place; set_to_none drops them)."""
        zero_grads((p for group in self.param_groups for p in group["params"]), set_to_none)

    def step(self, closure=None):
        raise NotImplementedError

    def set_accumulation_steps(self, steps):
        """Declares gradient accumulation: `steps` backward passes feed each step() (default
        1). The GradAccumulation guard (docs/guards.md) warns when the count differs."""
        if not isinstance(steps, int) or steps < 1:
            raise ValueError(f"set_accumulation_steps: steps must be an int >= 1, got {steps!r}")
        self.__dict__["_accumulation_steps"] = steps
        self.__dict__["_short_steps"] = 0

    def _check_accumulation(self):
        """The GradAccumulation guard for Python optimizers: as ember's C++ Optimizer, more
        backward passes than declared warn at once, fewer only twice in a row."""
        d = self.__dict__
        if d.get("_accumulation_warned"):
            return
        passes = max((p._grad_accumulations for g in self.param_groups for p in g["params"]), default=0)
        if passes == 0:  # gradients set by hand: nothing to judge
            return
        k = d.get("_accumulation_steps", 1)
        d["_short_steps"] = d.get("_short_steps", 0) + 1 if passes < k else 0
        if passes <= k and d["_short_steps"] < 2:
            return
        d["_accumulation_warned"] = True
        name = type(self).__name__
        msg = (f"[{name}.step] the gradients come from {passes} backward passes since they were last cleared, but "
               f"the optimizer expects {k} per step (set_accumulation_steps({k})). ")
        if passes > k:
            msg += ("If this is not deliberate gradient accumulation, zero_grad() is missing: call "
                    f"optimizer.zero_grad() after every step(). If it is, declare it with "
                    f"optimizer.set_accumulation_steps({passes}) and divide each loss by {passes}. ")
        else:
            msg += (f"Call backward() {k} times per step(), or declare the number you use with "
                    f"optimizer.set_accumulation_steps({passes}). ")
        msg += '(disable: ember.guards.set_enabled("GradAccumulation", False))'
        warnings.warn(msg, UserWarning, stacklevel=3)


    def state_dict(self):
        index = {}
        start = 0
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            ids = list(range(start, start + len(group["params"])))
            for i, p in zip(ids, group["params"]):
                index[id(p)] = i
            packed["params"] = ids
            start += len(ids)
            groups.append(packed)
        state = {index[id(p)]: v for p, v in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        state_dict = deepcopy(state_dict)
        groups = self.param_groups
        saved_groups = state_dict["param_groups"]
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of optimizer's "
                             "group")
        id_map = {}
        for g, s in zip(groups, saved_groups):
            for old, p in zip(s["params"], g["params"]):
                id_map[old] = p
        self.state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            k = int(k) if isinstance(k, str) else k
            if k in id_map:
                p = id_map[k]
                self.state[p] = {name: (t.to(p.dtype) if isinstance(t, Tensor) and t.is_floating_point() and name != "step"
                                        else t) for name, t in v.items()}
        for g, s in zip(groups, saved_groups):
            for key, value in s.items():
                if key != "params":
                    g[key] = value



def update_step(update):
    """Makes `update(self)` an optimizer's step(closure=None): the closure (if any) runs
    with grad enabled and its loss is returned; the update runs under no_grad."""

    @functools.wraps(update)
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        if _C._guards.is_enabled("GradAccumulation"):
            self._check_accumulation()
        with no_grad():
            update(self)
        _C._guards.on_optimizer_step(type(self).__name__)  # step count, graph-retention guard
        return loss

    return step


def _step_value(state):
    """torch 1.13 keeps 'step' as a float tensor; ember increments it and returns the int."""
    st = state.get("step")
    if st is None:
        st = _C.scalar_tensor(0.0)
        state["step"] = st
    st.add_(1)
    return int(st.item())
