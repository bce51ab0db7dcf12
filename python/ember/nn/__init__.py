"""ember.nn: Module, Parameter, the layers, losses, functional, init and parallel (torch.nn)."""

from . import functional  # noqa: F401
from . import init  # noqa: F401
from . import utils  # noqa: F401
from . import parallel  # noqa: F401
from .layers import *  # noqa: F401,F403
from .cpp_modules import GRU, LSTM, RNN, MultiheadAttention, TransformerEncoderLayer  # noqa: F401
from .module import Module  # noqa: F401
from .parameter import Parameter  # noqa: F401
