"""ember.nn.init: in-place initialisers (torch.nn.init), run under no-grad."""

import math

from .. import _C

_init = _C._init

calculate_gain = _init.calculate_gain
uniform_ = _init.uniform_
normal_ = _init.normal_
trunc_normal_ = _init.trunc_normal_
constant_ = _init.constant_
zeros_ = _init.zeros_
ones_ = _init.ones_
eye_ = _init.eye_
xavier_uniform_ = _init.xavier_uniform_
xavier_normal_ = _init.xavier_normal_
kaiming_uniform_ = _init.kaiming_uniform_
kaiming_normal_ = _init.kaiming_normal_
orthogonal_ = _init.orthogonal_
_calculate_fan_in_and_fan_out = _init._calculate_fan_in_and_fan_out


def _bound(fan_in):
    return 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
