"""Input checks shared by layers and functional ops: each error names the layer and the shapes."""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback.errors import ArgumentError, DTypeError, ShapeError
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


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def ntuple(value: Any, n: int, where: str, name: str) -> tuple[int, ...]:
    """An int or ``n`` ints as a tuple of ``n`` Python ints (PyTorch's ``_ntuple``); anything
    else (a float, a bool, the wrong count) is an ArgumentError naming ``where`` and ``name``."""
    if _is_int(value):
        return (int(value),) * n
    if isinstance(value, (tuple, list)) and len(value) == n and all(map(_is_int, value)):
        return tuple(int(v) for v in value)
    what = {1: "an int", 2: "an int or a pair of ints"}.get(n, f"an int or {n} ints")
    raise ArgumentError(f"{where}: {name} must be {what}, got {value!r}")


def pair(value: Any, where: str, name: str) -> tuple[int, int]:
    """An int or a pair of ints as a pair of Python ints (PyTorch's ``_pair``); anything else
    (a float, a bool, three values) is an ArgumentError naming ``where`` and ``name``."""
    return ntuple(value, 2, where, name)  # type: ignore[return-value]
