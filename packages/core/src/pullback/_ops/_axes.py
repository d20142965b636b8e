"""Axis helpers shared by reductions, shape ops and indexing."""

from __future__ import annotations

import operator
from typing import Any, Sequence

from ..errors import AxisError, ShapeError


def normalize_axes(axis: Any, ndim: int, op: str) -> tuple[int, ...]:
    """``axis`` (None, int or sequence) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for a in axes:
        try:
            a = operator.index(a)
        except TypeError:
            raise TypeError(f"{op}: an axis must be an int, got {a!r} "
                            f"({type(a).__name__})") from None
        if not -max(ndim, 1) <= a < max(ndim, 1):
            raise AxisError(f"{op}: axis {a} is out of range for a tensor with {ndim} dims "
                            f"(expected in [{-max(ndim, 1)}, {max(ndim, 1) - 1}])")
        out.append(a % max(ndim, 1))
    if len(set(out)) != len(out):
        raise ShapeError(f"{op}: repeated axis in {axis}")
    return tuple(sorted(out))


def kept_shape(shape: Sequence[int], axis: Any, op: str = "reduce") -> tuple[int, ...]:
    """The shape a reduction over ``axis`` gives with ``keepdims=True``."""
    axes = normalize_axes(axis, len(shape), op)
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def pick_axis(axis: Any, dim: Any) -> Any:
    """Accept NumPy's ``axis=`` and PyTorch's ``dim=`` spellings (not both)."""
    if dim is not None:
        if axis is not None:
            raise TypeError("give axis= or dim=, not both")
        return dim
    return axis


def to_axis_attr(axis: Any) -> Any:
    """Attributes must be hashable and JSON-friendly: lists become tuples."""
    if isinstance(axis, list):
        return tuple(axis)
    return axis
