"""Input checks shared by layers and functional ops: each error names the layer and the shapes."""

from __future__ import annotations

from typing import Any

from pullback.errors import DTypeError, ShapeError
from pullback.tensor import Tensor


def expect_tensor(where: str, name: str, x: Any) -> Tensor:
    """``x`` itself when it is a Tensor; a TypeError naming ``where`` otherwise."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{where}: {name} must be a pullback Tensor, got {type(x).__name__}")
    return x


def expect_ndim(where: str, x: Any, ndims: tuple[int, ...], what: str = "input") -> None:
    """Raise a ShapeError unless ``x.ndim`` is one of ``ndims``."""
    if x.ndim not in ndims:
        wanted = " or ".join(f"{n}-d" for n in ndims)
        raise ShapeError(f"{where}: expected a {wanted} {what}, got shape {tuple(x.shape)}")


def expect_float(where: str, x: Any, what: str = "input") -> None:
    """Raise a DTypeError unless ``x`` has a floating dtype."""
    if x.dtype.kind not in "fV":
        raise DTypeError(f"{where}: {what} must be floating point, got dtype {x.dtype}")


def expect_integer(where: str, x: Any, what: str = "indices") -> None:
    """Raise a DTypeError unless ``x`` has an integer dtype."""
    if x.dtype.kind not in "iu":
        raise DTypeError(f"{where}: {what} must be an integer tensor, got dtype {x.dtype}")


def pair(value: Any, where: str, name: str) -> tuple[int, int]:
    """An int or a pair of ints as a pair (PyTorch's ``_pair``)."""
    if isinstance(value, int):
        return (value, value)
    value = tuple(int(v) for v in value)
    if len(value) != 2:
        raise ValueError(f"{where}: {name} must be an int or a pair of ints, got {value}")
    return (value[0], value[1])
