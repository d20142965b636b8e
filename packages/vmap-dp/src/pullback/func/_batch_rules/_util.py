"""Helpers of the batching rules: moving the batch dim, materializing it, shifting axes.

A rule receives each argument's *value* (a tensor of the level below, whose shape includes the
batch dim) and its batch dim (``None`` for arguments the batch does not touch). It computes all
samples with ops of the level below and says where the batch dim of its result is.
"""

from __future__ import annotations

from typing import Any

from pullback.dispatch import apply
from pullback.registry import get_op
from pullback.tensor import Tensor

RESHAPE = get_op("reshape")
PERMUTE = get_op("permute")
BROADCAST_TO = get_op("broadcast_to")


def move_dim(x: Tensor, src: int, dst: int) -> Tensor:
    """``x`` with axis ``src`` moved to position ``dst`` (a view; ``x`` itself when equal)."""
    if src == dst:
        return x
    order = [d for d in range(x.ndim) if d != src]
    order.insert(dst, src)
    return apply(PERMUTE, x, axes=tuple(order))


def front(x: Any, bdim: int | None) -> Any:
    """A batched value with its batch dim first (unbatched values are returned as they are)."""
    if bdim is None or bdim == 0:
        return x
    return move_dim(x, bdim, 0)


def materialize(x: Tensor, bdim: int | None, size: int) -> Tensor:
    """``x`` with its batch dim first; an unbatched ``x`` is broadcast along a new first dim (a
    view: no sample is copied)."""
    if bdim is None:
        return apply(BROADCAST_TO, x, shape=(size,) + tuple(x.shape))
    return front(x, bdim)


def reshape(x: Tensor, shape: tuple[int, ...]) -> Tensor:
    """``x`` reshaped (itself when the shape is already right)."""
    if tuple(x.shape) == tuple(shape):
        return x
    return apply(RESHAPE, x, shape=tuple(shape))


def pad_after_batch(x: Tensor, ndim: int) -> Tensor:
    """A front-batched ``x`` with size-1 dims inserted after the batch dim, so that a sample has
    ``ndim`` dims (it then broadcasts against samples of ``ndim`` dims as NumPy aligns them)."""
    missing = ndim - (x.ndim - 1)
    if missing <= 0:
        return x
    shape = tuple(x.shape)
    return apply(RESHAPE, x, shape=shape[:1] + (1,) * missing + shape[1:])


def logical_ndim(x: Any, bdim: int | None) -> int:
    """The number of dims of one sample."""
    if not isinstance(x, Tensor):
        return 0
    return x.ndim - (bdim is not None)


def shift_axis(axis: int, ndim: int) -> int:
    """A sample's axis (possibly negative) as an axis of the front-batched value."""
    return axis % ndim + 1 if ndim else 1


def shift_axes(axis: Any, ndim: int) -> Any:
    """``axis`` (None, an int or a tuple) of a sample as axes of the front-batched value; None
    (every axis of the sample) becomes the tuple of all of them."""
    if axis is None:
        return tuple(range(1, ndim + 1))
    if isinstance(axis, int):
        return shift_axis(axis, ndim) if ndim else ()
    return tuple(shift_axis(a, ndim) for a in axis) if ndim else ()


def align_front(args: tuple[Any, ...], bdims: tuple[Any, ...]) -> list[Any]:
    """Arguments lined up for broadcasting: batched ones front-batched and padded to the
    largest sample rank, unbatched ones (and numbers, None) unchanged."""
    ndim = max((logical_ndim(a, b) for a, b in zip(args, bdims)), default=0)
    out = []
    for a, b in zip(args, bdims):
        out.append(a if b is None else pad_after_batch(front(a, b), ndim))
    return out


def _is_index_array(k: Any) -> bool:
    import numpy as np

    return (isinstance(k, (Tensor, list)) or
            (hasattr(k, "shape") and not isinstance(k, (bool, int, np.generic))))


def _is_int(k: Any) -> bool:
    import numpy as np

    return isinstance(k, (int, np.integer)) and not isinstance(k, bool)


def advanced_block_in_place(key: tuple[Any, ...]) -> bool:
    """Whether NumPy keeps the result dims of ``key``'s advanced indices where they are (it
    moves them to the front when a slice, None or Ellipsis separates two of them)."""
    if not any(_is_index_array(k) for k in key):
        return True
    positions = [i for i, k in enumerate(key) if _is_index_array(k) or _is_int(k)]
    return positions == list(range(positions[0], positions[-1] + 1))


def advanced_ndim(key: tuple[Any, ...]) -> int:
    """The number of dims NumPy's advanced indices of ``key`` contribute to the result (a
    boolean mask gives one)."""
    ndims = [1 if getattr(k, "dtype", None) is not None and k.dtype.kind == "b" else
             len(getattr(k, "shape", ())) for k in key if _is_index_array(k)]
    return max(ndims, default=0)
