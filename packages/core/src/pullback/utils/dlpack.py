"""``torch.utils.dlpack``: zero-copy exchange with NumPy, CuPy, PyTorch and JAX through DLPack
(``from_dlpack(other)``; the other way, ``other.from_dlpack(pullback_tensor)``)."""

from ..creation import from_dlpack

__all__ = ["from_dlpack"]
