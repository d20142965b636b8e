"""Batching rules of reductions: one family rule for ops reducing over ``axis`` (``keepdims``),
and per-op rules where an op's axis means something else (argmax over all elements, cumsum,
sum_to)."""

from __future__ import annotations

from typing import Any

from pullback.dispatch import apply
from pullback.registry import Op, get_op

from .._errors import missing_rule
from ._util import front, logical_ndim, reshape, shift_axes, shift_axis

_REDUCTION_ATTRS = frozenset({"axis", "keepdims"})
SUM = get_op("sum")


def reduction(op: Op, args: tuple[Any, ...], bdims: tuple[Any, ...], size: int, /,
              **attrs: Any) -> tuple[Any, int]:
    """Reduce each sample over its ``axis`` (None: all of its axes), batch dim first."""
    if set(attrs) - _REDUCTION_ATTRS or len(args) != 1:
        # Only ops of the sum(x, axis, keepdims) shape are covered by the family rule.
        raise missing_rule(op.name, op.family, "batch", "vmap")
    x = front(args[0], bdims[0])
    n = x.ndim - 1
    attrs["axis"] = shift_axes(attrs.get("axis"), n)
    return apply(op, x, **attrs), 0


def arg_reduction(op: Op, args: tuple[Any, ...], bdims: tuple[Any, ...], size: int, /,
                  axis: Any = None, keepdims: bool = False) -> tuple[Any, int]:
    """argmax/argmin: without an axis they index each sample's flattened elements."""
    x = front(args[0], bdims[0])
    n = x.ndim - 1
    if axis is not None:
        return apply(op, x, axis=shift_axis(axis, n), keepdims=keepdims), 0
    out = apply(op, reshape(x, (x.shape[0], -1)), axis=1, keepdims=keepdims)
    return (reshape(out, (x.shape[0],) + (1,) * n) if keepdims else out), 0


def cumsum(op: Op, args: tuple[Any, ...], bdims: tuple[Any, ...], size: int, /,
           axis: int) -> tuple[Any, int]:
    """cumsum along one axis of each sample (a 0-d sample is its own cumulative sum)."""
    x = front(args[0], bdims[0])
    n = x.ndim - 1
    if n == 0:
        return x, 0
    return apply(op, x, axis=shift_axis(axis, n)), 0


def sum_to(op: Op, args: tuple[Any, ...], bdims: tuple[Any, ...], size: int, /,
           shape: tuple[int, ...]) -> tuple[Any, int]:
    """Sum each sample down to ``shape``: the leading dims it lacks and its size-1 dims."""
    x = front(args[0], bdims[0])
    sample = tuple(x.shape[1:])
    lead = len(sample) - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and sample[lead + i] != 1)
    if axes:
        x = apply(SUM, x, axis=tuple(a + 1 for a in axes), keepdims=True)
    return reshape(x, (x.shape[0],) + tuple(shape)), 0


RULES = {
    "argmax": arg_reduction, "argmin": arg_reduction, "cumsum": cumsum, "sum_to": sum_to,
}

__all__ = ["RULES", "logical_ndim", "reduction"]
