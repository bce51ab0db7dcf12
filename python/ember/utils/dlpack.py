"""DLPack exchange (torch.utils.dlpack): zero-copy to and from torch, NumPy, CuPy, ..."""

from .. import _C


def from_dlpack(ext_tensor):
    """A tensor sharing memory with ext_tensor (anything with __dlpack__, or a capsule)."""
    return _C.from_dlpack(ext_tensor)


def to_dlpack(tensor):
    """A DLPack capsule viewing tensor's memory (consumable once)."""
    return _C._to_dlpack(tensor)
