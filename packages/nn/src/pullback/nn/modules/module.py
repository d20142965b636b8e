"""``torch.nn.modules.module``'s path: ``Module`` (defined in ``pullback.nn.module``)."""

from ..module import Module

__all__ = ["Module"]
