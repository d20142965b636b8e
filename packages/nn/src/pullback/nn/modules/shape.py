"""Layers that only reshape: ``Identity``, ``Flatten``, ``Unflatten``."""

from __future__ import annotations

import math
from typing import Any, Sequence

from pullback.errors import ShapeError
from pullback.tensor import Tensor

from ..module import Module


class Identity(Module):
    """Returns its input (arguments to the constructor are accepted and ignored)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Flatten(Module):
    """Merge axes ``start_dim..end_dim`` (all but the batch axis by default)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split axis ``dim`` into ``unflattened_size``."""

    def __init__(self, dim: int, unflattened_size: Sequence[int]) -> None:
        super().__init__()
        self.dim = dim
        self.unflattened_size = tuple(unflattened_size)

    def forward(self, input: Tensor) -> Tensor:
        dim = self.dim % input.ndim
        sizes = list(self.unflattened_size)
        if sizes.count(-1) == 0 and math.prod(sizes) != input.shape[dim]:
            raise ShapeError(f"Unflatten: axis {self.dim} of size {input.shape[dim]} cannot be "
                             f"split into {self.unflattened_size}")
        shape = tuple(input.shape[:dim]) + tuple(sizes) + tuple(input.shape[dim + 1:])
        return input.reshape(shape)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
