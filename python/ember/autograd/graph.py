"""ember.autograd.graph: the graph node type (grad_fn objects)."""

from .. import _C

Node = _C.Node
