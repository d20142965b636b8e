"""Indexing operators: ``Slice``, the ``Gather*`` and ``Scatter*`` families, ``NonZero``,
``OneHot``, ``Compress``, ``Unique`` and ``ReverseSequence``. ONNX's indices may be negative
(counted from the end); they are made positive before pullback indexes with them."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import pullback as pb
from pullback.tensor import Tensor

from . import NodeContext, converter, ints, optional, scalar, text
from .shape import _axis


def positive(indices: Tensor, size: int) -> Tensor:
    """``indices`` counted from the start of an axis of ``size``."""
    indices = indices.to(np.int64)
    return pb.where(indices < 0, indices + size, indices)


@converter("Slice")
def _slice(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x = ins[0]
    if "starts" in attrs:  # before opset 10: attributes
        starts, ends = list(attrs["starts"]), list(attrs["ends"])
        axes = list(attrs.get("axes", range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts, ends = ints(ins[1]), ints(ins[2])
        axes = ints(ins[3]) if optional(ins, 3) is not None else list(range(len(starts)))
        steps = ints(ins[4]) if optional(ins, 4) is not None else [1] * len(starts)
    key: list[Any] = [slice(None)] * x.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis = _axis(axis, x.ndim)
        size = x.shape[axis]
        start = start + size if start < 0 else start
        end = end + size if end < 0 else end
        if step > 0:
            start, end = min(max(start, 0), size), min(max(end, 0), size)
        else:
            start, end = min(max(start, -1), size - 1), min(max(end, -1), size - 1)
        key[axis] = slice(start, None if end < 0 else end, step)
    return [x[tuple(key)]]


@converter("Gather")
def _gather(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, indices = ins
    axis = _axis(attrs.get("axis", 0), x.ndim)
    indices = positive(indices, x.shape[axis])
    flat = x.index_select(axis, indices.reshape((-1,)))
    return [flat.reshape(tuple(x.shape[:axis]) + tuple(indices.shape) +
                         tuple(x.shape[axis + 1:]))]


@converter("GatherElements")
def _gather_elements(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, indices = ins
    axis = _axis(attrs.get("axis", 0), x.ndim)
    return [pb.take_along_axis(x, positive(indices, x.shape[axis]), axis)]


def _nd_key(data: Tensor, indices: Tensor, batch_dims: int) -> tuple[Tensor, tuple[Any, ...]]:
    """``data`` with its batch axes merged into one, and the advanced index that picks, for
    each row of ``indices`` (batch axes merged too), the slice it names."""
    batch = math.prod(data.shape[:batch_dims])
    depth = indices.shape[-1]
    data = data.reshape((batch,) + tuple(data.shape[batch_dims:]))
    indices = indices.reshape((batch,) + tuple(indices.shape[batch_dims:]))
    middle = indices.ndim - 2
    rows = pb.arange(batch, dtype=np.int64).reshape((batch,) + (1,) * middle)
    key = (rows,) + tuple(positive(indices[..., i], data.shape[1 + i]) for i in range(depth))
    return data, key


@converter("GatherND")
def _gather_nd(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, indices = ins
    b = int(attrs.get("batch_dims", 0))
    data, key = _nd_key(x, indices, b)
    picked = data[key]
    depth = indices.shape[-1]
    return [picked.reshape(tuple(indices.shape[:-1]) + tuple(x.shape[b + depth:]))]


_REDUCE = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}


@converter("ScatterElements", "Scatter")
def _scatter_elements(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, indices, updates = ins
    axis = _axis(attrs.get("axis", 0), x.ndim)
    indices = positive(indices, x.shape[axis])
    reduction = text(attrs.get("reduction", "none"))
    if reduction == "none":
        return [pb.scatter(x, axis, indices, updates)]
    return [pb.scatter_reduce(x, axis, indices, updates, _REDUCE[reduction], include_self=True)]


@converter("ScatterND")
def _scatter_nd(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    """Through a flat view: the indexed leading axes as one, each update a row of it."""
    x, indices, updates = ins
    depth = indices.shape[-1]
    lead, rest = tuple(x.shape[:depth]), tuple(x.shape[depth:])
    strides = np.cumprod((lead[1:] + (1,))[::-1])[::-1].astype(np.int64)
    flat_index = sum((positive(indices[..., i], lead[i]) * int(strides[i])
                      for i in range(depth)), pb.zeros(tuple(indices.shape[:-1]), dtype=np.int64))
    flat_index = flat_index.reshape((-1,))
    rows = x.reshape((math.prod(lead),) + rest)
    values = updates.reshape((flat_index.shape[0],) + rest)
    reduction = text(attrs.get("reduction", "none"))
    if reduction == "none":
        out = rows.index_copy(0, flat_index, values)
    else:
        spread = pb.broadcast_to(flat_index.reshape((-1,) + (1,) * len(rest)), values.shape)
        out = pb.scatter_reduce(rows, 0, spread, values, _REDUCE[reduction], include_self=True)
    return [out.reshape(tuple(x.shape))]


@converter("NonZero")
def _non_zero(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x = ins[0]
    if x.ndim == 0:
        return [pb.tensor(np.zeros((0, int(bool(scalar(x)))), np.int64))]
    return [pb.tensor(np.stack(np.nonzero(x.detach().numpy())).astype(np.int64))]


@converter("OneHot")
def _one_hot(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    indices, depth, values = ins
    depth = int(scalar(depth))
    axis = int(attrs.get("axis", -1))
    ndim = indices.ndim + 1
    axis = axis % ndim
    indices = indices.to(np.int64) if indices.dtype.kind != "f" else \
        pb.trunc(indices).to(np.int64)
    indices = pb.where(indices < 0, indices + depth, indices).unsqueeze(axis)
    classes = pb.arange(depth, dtype=np.int64).reshape(
        tuple(depth if d == axis else 1 for d in range(ndim)))
    off, on = values[0], values[1]
    return [pb.where(indices == classes, on, off)]


@converter("Compress")
def _compress(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, condition = ins
    keep = np.nonzero(condition.detach().numpy().astype(bool))[0].astype(np.int64)
    if "axis" not in attrs:
        x, axis = x.reshape((-1,)), 0
    else:
        axis = _axis(attrs["axis"], x.ndim)
    return [x.index_select(axis, pb.tensor(keep))]


@converter("Unique")
def _unique(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    """The distinct values (sorted, or in order of first occurrence), the index of each one's
    first occurrence, each element's index among them, and their counts."""
    x = ins[0]
    axis = attrs.get("axis")
    if axis is None:
        x, axis = x.reshape((-1,)), 0
    axis = _axis(axis, x.ndim)
    array = x.detach().numpy()
    _, first, inverse, counts = np.unique(array, return_index=True, return_inverse=True,
                                          return_counts=True, axis=axis)
    inverse = inverse.reshape(-1)
    if not attrs.get("sorted", 1):  # renumber by first occurrence
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        first, counts, inverse = first[order], counts[order], rank[inverse]
    values = x.index_select(axis, pb.tensor(first.astype(np.int64)))
    return [values] + [pb.tensor(a.astype(np.int64)) for a in (first, inverse, counts)]


@converter("ReverseSequence")
def _reverse_sequence(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, lengths = ins[0], ints(ins[1])
    batch_axis, time_axis = int(attrs.get("batch_axis", 1)), int(attrs.get("time_axis", 0))
    steps = x.shape[time_axis]
    index = np.tile(np.arange(steps), (len(lengths), 1))
    for b, n in enumerate(lengths):
        index[b, :n] = index[b, :n][::-1]
    if batch_axis > time_axis:
        index = index.T
    shape = [1] * x.ndim
    shape[batch_axis], shape[time_axis] = len(lengths), steps
    full = np.broadcast_to(index.reshape(shape), x.shape)
    return [pb.take_along_axis(x, pb.tensor(np.ascontiguousarray(full).astype(np.int64)),
                               time_axis)]


@converter("TensorScatter")
def _tensor_scatter(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    """A cache with ``update`` written along ``axis`` from each batch's ``write_indices``
    (wrapping round with ``mode="circular"``)."""
    cache, update = ins[0], ins[1]
    axis = _axis(attrs.get("axis", -2), cache.ndim)
    starts = ints(ins[2]) if optional(ins, 2) is not None else [0] * cache.shape[0]
    size, length = cache.shape[axis], update.shape[axis]
    circular = text(attrs.get("mode", "linear")) == "circular"
    rows = []
    for b, start in enumerate(starts):
        positions = np.arange(start, start + length)
        positions = positions % size if circular else positions
        rows.append(cache[b].index_copy(axis - 1, pb.tensor(positions.astype(np.int64)),
                                        update[b]))
    return [pb.stack(rows, axis=0)]
