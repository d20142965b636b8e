"""Batching rules of the shape ops: each puts the batch dim first and rewrites its attributes
(a new shape, permuted axes, padding widths...) for the front-batched value."""

from __future__ import annotations

from typing import Any

from pullback.dispatch import apply
from pullback.registry import Op

from ._util import front, materialize, reshape, shift_axes, shift_axis


def _reshape(op: Op, args: Any, bdims: Any, size: int, /, shape: tuple[int, ...]) -> Any:
    x = front(args[0], bdims[0])
    return apply(op, x, shape=(x.shape[0],) + tuple(shape)), 0


def _permute(op: Op, args: Any, bdims: Any, size: int, /, axes: tuple[int, ...]) -> Any:
    x = front(args[0], bdims[0])
    return apply(op, x, axes=(0,) + tuple(a % len(axes) + 1 for a in axes)), 0


def _swapaxes(op: Op, args: Any, bdims: Any, size: int, /, a: int, b: int) -> Any:
    x = front(args[0], bdims[0])
    n = x.ndim - 1
    return apply(op, x, a=shift_axis(a, n), b=shift_axis(b, n)), 0


def _broadcast_to(op: Op, args: Any, bdims: Any, size: int, /, shape: tuple[int, ...]) -> Any:
    x = front(args[0], bdims[0])
    sample = tuple(x.shape[1:])
    x = reshape(x, (x.shape[0],) + (1,) * (len(shape) - len(sample)) + sample)
    return apply(op, x, shape=(x.shape[0],) + tuple(shape)), 0


def _flip(op: Op, args: Any, bdims: Any, size: int, /, axis: Any) -> Any:
    x = front(args[0], bdims[0])
    return apply(op, x, axis=shift_axes(axis, x.ndim - 1)), 0


def _roll(op: Op, args: Any, bdims: Any, size: int, /, shifts: Any, axis: Any) -> Any:
    x = front(args[0], bdims[0])
    if axis is None:  # rolls each sample's flattened elements
        flat = reshape(x, (x.shape[0], -1))
        return reshape(apply(op, flat, shifts=shifts, axis=1), tuple(x.shape)), 0
    return apply(op, x, shifts=shifts, axis=shift_axes(axis, x.ndim - 1)), 0


def _last_two_axes(op: Op, args: Any, bdims: Any, size: int, /, **attrs: Any) -> Any:
    """tril/triu act on the last two axes: the batch dim in front changes nothing."""
    return apply(op, front(args[0], bdims[0]), **attrs), 0


def _join(op: Op, args: Any, bdims: Any, size: int, /, axis: int = 0) -> Any:
    """cat and stack: every input gets the batch (unbatched ones are broadcast to it)."""
    xs = [materialize(x, b, size) for x, b in zip(args, bdims)]
    n = xs[0].ndim - 1 + (op.name == "stack")
    return apply(op, *xs, axis=shift_axis(axis, n)), 0


def _pad(op: Op, args: Any, bdims: Any, size: int, /, widths: Any, value: float = 0.0) -> Any:
    x = front(args[0], bdims[0])
    return apply(op, x, widths=((0, 0),) + tuple(widths), value=value), 0


RULES = {
    "reshape": _reshape, "permute": _permute, "swapaxes": _swapaxes,
    "broadcast_to": _broadcast_to, "flip": _flip, "roll": _roll, "tril": _last_two_axes,
    "triu": _last_two_axes, "cat": _join, "stack": _join, "pad": _pad,
}
