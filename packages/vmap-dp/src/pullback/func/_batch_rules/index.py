"""Batching rules of indexing: slicing and advanced indexing prepend a full slice for the batch
dim; index_select with a batched index becomes a gather (take_along_axis), so that every sample
reads its own rows; gather and scatter give every operand the batch."""

from __future__ import annotations

import math
from typing import Any

from pullback.dispatch import apply
from pullback.registry import Op, get_op

from ._util import (
    advanced_block_in_place, advanced_ndim, front, materialize, move_dim, reshape, shift_axis,
)

GATHER = get_op("gather")
GATHER_SCATTER_ADD = get_op("gather_scatter_add")
BROADCAST_TO = get_op("broadcast_to")


def _basic_index(op: Op, args: Any, bdims: Any, size: int, /, key: tuple[Any, ...]) -> Any:
    return apply(op, front(args[0], bdims[0]), key=(slice(None),) + tuple(key)), 0


def _advanced_bdim(key: tuple[Any, ...]) -> int:
    """Where the batch dim lands in ``x[(slice(None),) + key]``: NumPy puts the advanced
    indices' dims first when something separates them."""
    return 0 if advanced_block_in_place(key) else advanced_ndim(key)


def _advanced_index(op: Op, args: Any, bdims: Any, size: int, /, key: tuple[Any, ...]) -> Any:
    return apply(op, front(args[0], bdims[0]), key=(slice(None),) + tuple(key)), _advanced_bdim(key)


def _getitem_scatter(op: Op, args: Any, bdims: Any, size: int, /, key: tuple[Any, ...],
                     shape: tuple[int, ...]) -> Any:
    g = front(args[0], bdims[0])
    return apply(op, g, key=(slice(None),) + tuple(key), shape=(g.shape[0],) + tuple(shape)), 0


def _index_scatter_add(op: Op, args: Any, bdims: Any, size: int, /, key: tuple[Any, ...],
                       shape: tuple[int, ...]) -> Any:
    g = move_dim(args[0], bdims[0], _advanced_bdim(key))  # the layout x[key] has in the batch
    return apply(op, g, key=(slice(None),) + tuple(key), shape=(size,) + tuple(shape)), 0


def _rows_as_gather(idx: Any, bidx: Any, size: int, rest: int) -> Any:
    """A batched index (B, *ids) as a (B, K, rest) gather index (each row repeated)."""
    i = front(idx, bidx)
    k = math.prod(i.shape[1:])
    return apply(BROADCAST_TO, reshape(i, (size, k, 1)), shape=(size, k, rest))


def _take(op: Op, args: Any, bdims: Any, size: int, /, axis: int) -> Any:
    x, idx = args
    bx, bidx = bdims
    if bidx is None:
        return apply(op, front(x, bx), idx, axis=axis + 1), 0
    # Every sample takes its own rows: gather along the axis, moved next to the batch dim.
    x = materialize(x, bx, size)
    sample = tuple(x.shape[1:])
    ids = tuple(idx.shape[:bidx] + idx.shape[bidx + 1:])
    rest = sample[:axis] + sample[axis + 1:]
    x3 = reshape(move_dim(x, axis + 1, 1), (size, sample[axis], math.prod(rest)))
    out = apply(GATHER, x3, _rows_as_gather(idx, bidx, size, math.prod(rest)), axis=1)
    out = reshape(out, (size,) + ids + rest)
    n = len(ids)
    order = ([0] + [1 + n + j for j in range(axis)] + [1 + i for i in range(n)]
             + [1 + n + j for j in range(axis, len(rest))])
    return apply(get_op("permute"), out, axes=tuple(order)), 0


def _take_scatter_add(op: Op, args: Any, bdims: Any, size: int, /, axis: int,
                      shape: tuple[int, ...]) -> Any:
    g, idx = args
    bg, bidx = bdims
    if bidx is None:
        return apply(op, front(g, bg), idx, axis=axis + 1, shape=(size,) + tuple(shape)), 0
    g = materialize(g, bg, size)
    ids = tuple(idx.shape[:bidx] + idx.shape[bidx + 1:])
    n = len(ids)
    rest = tuple(shape[:axis]) + tuple(shape[axis + 1:])
    # g is (B, *shape[:axis], *ids, *shape[axis+1:]): bring the ids first, then flatten.
    order = ([0] + [1 + axis + i for i in range(n)] + [1 + j for j in range(axis)]
             + [1 + axis + n + j for j in range(len(shape) - axis - 1)])
    g3 = reshape(apply(get_op("permute"), g, axes=tuple(order)),
                 (size, math.prod(ids), math.prod(rest)))
    out = apply(GATHER_SCATTER_ADD, g3, _rows_as_gather(idx, bidx, size, math.prod(rest)),
                axis=1, shape=(size, shape[axis], math.prod(rest)))
    out = reshape(out, (size, shape[axis]) + rest)
    return move_dim(out, 1, axis + 1), 0


def _along_axis(op: Op, args: Any, bdims: Any, size: int, /, axis: int, **attrs: Any) -> Any:
    """gather, gather_scatter_add, scatter_add, scatter_reduce: every operand gets the batch
    (index ``i`` of the batch dim then reads and writes sample ``i``'s rows only)."""
    xs = [materialize(a, b, size) for a, b in zip(args, bdims)]
    if "shape" in attrs:
        attrs["shape"] = (size,) + tuple(attrs["shape"])
    return apply(op, *xs, axis=shift_axis(axis, xs[0].ndim - 1), **attrs), 0


def _one_hot(op: Op, args: Any, bdims: Any, size: int, /, num_classes: int) -> Any:
    return apply(op, front(args[0], bdims[0]), num_classes=num_classes), 0


RULES = {
    "getitem": _basic_index, "index": _advanced_index, "getitem_scatter": _getitem_scatter,
    "index_scatter_add": _index_scatter_add, "take": _take, "take_scatter_add": _take_scatter_add,
    "gather": _along_axis, "gather_scatter_add": _along_axis, "scatter_add": _along_axis,
    "scatter_reduce": _along_axis,
    "one_hot": _one_hot,
}


def _numpy_like(x: Any) -> Any:
    return x.device.backend.xp


def index_by_batched_key(op: Op, args: tuple[Any, ...], bdims: tuple[Any, ...], size: int,
                         key: tuple[Any, ...], **attrs: Any) -> Any:
    """``index`` / ``index_scatter_add`` whose key holds batched integer index tensors (given
    as ``(value, bdim)`` pairs): the batch joins the key as one more advanced index (an arange
    at position 0), so that sample ``b`` reads (or scatters to) its own positions. Returns the
    result with the batch dim first."""
    from pullback.tensor import Tensor

    from .._errors import VmapError

    phys: list[Any] = []
    adv_ndim = 0
    for k in key:
        if isinstance(k, tuple) and len(k) == 2 and isinstance(k[0], Tensor):
            value = front(k[0], k[1])
            if value.dtype.kind not in "iu":
                raise VmapError("vmap: indexing with a batched boolean mask selects a different "
                                "number of elements per sample, which cannot be batched; use "
                                "pullback.where")
            adv_ndim = max(adv_ndim, value.ndim - 1)
            phys.append(value.array)
        else:
            if _is_array(k):
                adv_ndim = max(adv_ndim, 1 if k.dtype.kind == "b" else k.ndim)
            phys.append(k)
    scatter = op.name == "index_scatter_add"
    sample_ndim = len(attrs["shape"]) if scatter else args[0].ndim - (bdims[0] is not None)
    # The arange is an advanced index at position 0, so NumPy puts every advanced dim first,
    # then the basic dims in order; the sample's own result has its advanced block after the
    # basic dims before it when that block is contiguous.
    before = _basic_dims_before(tuple(phys), sample_ndim) if advanced_block_in_place(
        tuple(phys)) else 0
    xp = args[0].device.backend.xp
    phys_key = (xp.arange(size).reshape((size,) + (1,) * adv_ndim),) + tuple(phys)
    if scatter:
        g = _swap_blocks(front(args[0], bdims[0]), 1, before, adv_ndim)
        return apply(op, g, key=phys_key, shape=(size,) + tuple(attrs["shape"]))
    out = apply(op, materialize(args[0], bdims[0], size), key=phys_key)
    return _swap_blocks(out, 1, adv_ndim, before)


def _is_array(k: Any) -> bool:
    return hasattr(k, "dtype") and hasattr(k, "ndim") and not isinstance(k, (bool, int))


def _basic_dims_before(key: tuple[Any, ...], ndim: int) -> int:
    """How many result dims the basic entries before the first advanced index give (slices
    and None one each, Ellipsis the dims that no entry consumes)."""
    consumed = sum(k.ndim if _is_array(k) and k.dtype.kind == "b" else
                   0 if k is None or k is Ellipsis else 1 for k in key)
    count = 0
    for k in key:
        if _is_array(k) or (isinstance(k, int) and not isinstance(k, bool)):
            break
        if k is Ellipsis:
            count += ndim - consumed
        elif k is None or isinstance(k, slice):
            count += 1
    return count


def _swap_blocks(t: Any, start: int, n1: int, n2: int) -> Any:
    """``t`` with its dims ``[start, start+n1)`` and the ``n2`` dims after them swapped."""
    if not n1 or not n2:
        return t
    dims = list(range(t.ndim))
    order = (dims[:start] + dims[start + n1:start + n1 + n2] + dims[start:start + n1]
             + dims[start + n1 + n2:])
    return apply(get_op("permute"), t, axes=tuple(order))
