"""``torch.nn.modules.flatten``'s path: ``Flatten`` and ``Unflatten`` (defined in ``shape``)."""

from .shape import Flatten, Unflatten

__all__ = ["Flatten", "Unflatten"]
