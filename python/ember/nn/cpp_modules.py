"""Layers whose forward is ember's C++ module (recurrent layers, multi-head attention, the
transformer encoder layer). The C++ module owns the parameters; each is registered here as
a Parameter sharing the same TensorImpl, under torch's name, so state_dict(), optimizers,
.grad and load_state_dict() work as for any Python module."""

from .. import _C
from .module import Module
from .parameter import Parameter

_cpp = _C._cpp_nn


class _CppChild(Module):
    """A submodule path of a C++ layer (e.g. MultiheadAttention's out_proj)."""

    def __init__(self, name, extra=""):
        super().__init__()
        self.__dict__["_name"] = name
        self.__dict__["_extra"] = extra

    def _get_name(self):
        return self._name

    def extra_repr(self):
        return self._extra

    def forward(self, *args):
        raise RuntimeError(f"{self._name} is part of a C++ layer and is not called on its own")


class _CppModule(Module):
    def _adopt(self, cpp, children=None):
        self.__dict__["_cpp"] = cpp
        children = children or {}
        for name, t in cpp.named_parameters():
            owner, leaf = self._owner(name, children)
            owner.register_parameter(leaf, Parameter._share(t))
        for name, t in cpp.named_buffers():
            owner, leaf = self._owner(name, children)
            owner.register_buffer(leaf, t)
        self._cpp.train(self.training)

    def _owner(self, dotted, children):
        parts = dotted.split(".")
        mod = self
        for i, part in enumerate(parts[:-1]):
            if part not in mod._modules:
                path = ".".join(parts[:i + 1])
                name, extra = children.get(path, ("Module", ""))
                mod.add_module(part, _CppChild(name, extra))
            mod = mod._modules[part]
        return mod, parts[-1]

    def train(self, mode=True):
        super().train(mode)
        self._cpp.train(mode)
        return self

    def _apply(self, fn):
        for p in self.parameters():
            new = fn(p)
            if new.dtype != p.dtype:
                raise NotImplementedError(f"{type(self).__name__}: ember's C++-backed layers stay in their dtype "
                                          f"({p.dtype}); converting them to {new.dtype} is not supported yet")
        return self


class _RNNBase(_CppModule):
    _kind = "RNN"

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None, nonlinearity="tanh"):
        super().__init__()
        if proj_size:
            raise NotImplementedError(f"{self._kind}(proj_size=...) is not supported")
        if not isinstance(dropout, (int, float)) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout, self.bidirectional = bias, batch_first, float(dropout), bidirectional
        args = (input_size, hidden_size, num_layers)
        rest = (bias, batch_first, float(dropout), bidirectional)
        if self._kind == "RNN":
            self.nonlinearity = nonlinearity
            cpp = _cpp.RNN(*args, nonlinearity, *rest)
        else:
            cpp = getattr(_cpp, self._kind)(*args, *rest)
        self._adopt(cpp)

    def forward(self, input, hx=None):
        return _cpp.rnn_forward(self._cpp, input, hx)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(_RNNBase):
    _kind = "RNN"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)


class LSTM(_RNNBase):
    _kind = "LSTM"


class GRU(_RNNBase):
    _kind = "GRU"


class MultiheadAttention(_CppModule):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        super().__init__()
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("MultiheadAttention(add_bias_kv/add_zero_attn) is not supported")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self.head_dim = embed_dim // num_heads
        extra = f"in_features={embed_dim}, out_features={embed_dim}, bias={bias}"
        self._adopt(_cpp.MultiheadAttention(embed_dim, num_heads, dropout, bias, kdim, vdim, batch_first),
                    {"out_proj": ("NonDynamicallyQuantizableLinear", extra)})

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        return _cpp.mha_forward(self._cpp, query, key, value, key_padding_mask, need_weights, attn_mask,
                                average_attn_weights, is_causal)


class TransformerEncoderLayer(_CppModule):
    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, device=None, dtype=None):
        super().__init__()
        if not isinstance(activation, str):
            raise NotImplementedError("TransformerEncoderLayer(activation=<callable>) is not supported; use 'relu' or "
                                      "'gelu'")
        self.batch_first, self.norm_first = batch_first, norm_first
        self._adopt(_cpp.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                                                 batch_first, norm_first))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        return _cpp.encoder_layer_forward(self._cpp, src, src_mask, src_key_padding_mask, is_causal)
