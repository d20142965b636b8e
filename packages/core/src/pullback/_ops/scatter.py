"""The scatter family by PyTorch's names: scatter (with ``reduce``), scatter_reduce (sum, prod,
mean, amax, amin; ``include_self``), index_add, index_copy, index_fill, masked_scatter, put and
take.

The writes (scatter, index_copy, index_fill, masked_scatter, put) are compositions: a mask of
the written positions picks between the input and the scattered values, so the gradient of
the input is zero where it was overwritten and the written values get theirs back by gather.
As in PyTorch, writing one position twice is undefined there; here the values add up.
scatter_reduce is an op of its own: its rules are PyTorch's (ties of amax/amin share the
gradient evenly, prod divides by the factor, so exact only away from zeros).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dispatch import apply
from ..errors import (
    ArgumentError, ArgumentTypeError, DTypeError, IndexOutOfRangeError, ShapeError,
)
from ..registry import Op
from ._axes import normalize_axes
from ._declare import declare
from .index import _along_index, _as_index_tensor, _check_index

_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _scatter_reduce_kernel(xp: Any) -> Any:
    def scatter_reduce(x: Any, idx: Any, src: Any, axis: int, reduce: str,
                       include_self: bool) -> Any:
        key = _along_index(xp, idx, axis)
        src = src[tuple(slice(0, n) for n in idx.shape)]
        hit = xp.zeros(x.shape, dtype=bool)
        hit[key] = True
        identity: float | None = {"sum": 0, "mean": 0, "prod": 1}.get(reduce)
        if identity is None:  # amax/amin: the first write must win whatever x holds
            identity = -np.inf if reduce == "amax" else np.inf
            if x.dtype.kind in "iub":
                info = np.iinfo(x.dtype)
                identity = info.min if reduce == "amax" else info.max
        out = x.copy()
        if not include_self:
            out[hit] = identity
        ufunc = {"sum": xp.add, "mean": xp.add, "prod": xp.multiply, "amax": xp.maximum,
                 "amin": xp.minimum}[reduce]
        ufunc.at(out, key, src)
        if reduce == "mean":
            count = xp.zeros(x.shape, dtype=x.dtype)
            xp.add.at(count, key, 1)
            if include_self:
                count = count + 1
            count = xp.where(count == 0, 1, count)
            out = out / count if x.dtype.kind == "f" else out // count
        return out.astype(x.dtype, copy=False)

    return scatter_reduce


SCATTER_REDUCE = declare(Op("scatter_reduce", _scatter_reduce_kernel, save_output=True,
                            family="scatter",
                            doc="x with src reduced into it at index along an axis"))


def _counts(F: Any, x: Any, idx: Any, axis: int, include_self: bool) -> Any:
    """How many values meet at each position of x (1 where nothing was scattered)."""
    ones = F.full(tuple(idx.shape), 1.0, like=x)
    base = F.full(tuple(x.shape), 1.0 if include_self else 0.0, like=x)
    count = F.scatter_add(base, idx, ones, axis=axis)
    return F.where(F.equal(count, 0), 1.0, count)


@SCATTER_REDUCE.def_grad
def _scatter_reduce_grad(F: Any, g: Any, out: Any, x: Any, idx: Any, src: Any, axis: int,
                         reduce: str, include_self: bool) -> Any:
    key = tuple(slice(0, n) for n in idx.shape)
    src = F.getitem(src, key=key) if tuple(src.shape) != tuple(idx.shape) else src
    hit = F.greater(F.scatter_add(F.full(tuple(x.shape), 0.0, like=x), idx,
                                  F.full(tuple(idx.shape), 1.0, like=x), axis=axis), 0)
    if reduce == "sum":
        gx, gsrc = g, F.gather(g, idx, axis=axis)
    elif reduce == "mean":
        scaled = g / _counts(F, x, idx, axis, include_self)
        gx, gsrc = scaled, F.gather(scaled, idx, axis=axis)
    elif reduce == "prod":
        # d out / d v = out / v for each factor v (PyTorch's formula away from zeros).
        gx = g * out / x
        gsrc = F.gather(g * out, idx, axis=axis) / src
    else:  # amax/amin: shared evenly among the values equal to the result
        picked = F.gather(out, idx, axis=axis)
        src_ties = F.cast(F.equal(src, picked), dtype=x.dtype)
        self_ties = F.cast(F.equal(x, out), dtype=x.dtype)
        if not include_self:
            self_ties = F.where(hit, 0.0, self_ties)
        count = F.scatter_add(self_ties, idx, src_ties, axis=axis)
        share = g / F.where(F.equal(count, 0), 1.0, count)
        return share * self_ties, None, F.gather(share, idx, axis=axis) * src_ties
    if not include_self:
        gx = F.where(hit, 0.0, gx)
    return gx, None, gsrc


def _checked(name: str, x: Any, dim: int, index: Any, src: Any = None) -> tuple[int, Any]:
    index = _as_index_tensor(x, index)
    _check_index(name, index)
    axis = normalize_axes(dim, max(x.ndim, 1), name)[0]
    if index.ndim != x.ndim:
        raise ShapeError(f"{name}: index has {index.ndim} dims, input {tuple(x.shape)} has "
                         f"{x.ndim}")
    if index.array.size:
        low, high = int(index.array.min()), int(index.array.max())
        if low < 0 or high >= x.shape[axis]:
            raise IndexOutOfRangeError(f"{name}: index {low if low < 0 else high} is out of "
                                       f"range for dimension {dim} of size {x.shape[axis]}")
    if src is not None and hasattr(src, "shape"):
        for d, (m, n) in enumerate(zip(index.shape, src.shape)):
            if m > n:
                raise ShapeError(f"{name}: index shape {tuple(index.shape)} exceeds src "
                                 f"{tuple(src.shape)} in dimension {d}")
    return axis, index


def scatter_reduce(x: Any, dim: int, index: Any, src: Any, reduce: str, *,
                   include_self: bool = True) -> Any:
    """``x`` with each ``src[i][j]`` reduced into ``x[index[i][j]][j]`` (for ``dim=0``) by
    ``reduce`` ("sum", "prod", "mean", "amax", "amin"); with ``include_self=False`` the
    written positions of ``x`` do not take part."""
    if reduce not in _REDUCES:
        raise ArgumentError(f"scatter_reduce: reduce must be one of {_REDUCES}, got {reduce!r}")
    axis, index = _checked("scatter_reduce", x, dim, index, src)
    if src.dtype != x.dtype:
        raise DTypeError(f"scatter_reduce: src dtype {src.dtype} differs from input {x.dtype}")
    return apply(SCATTER_REDUCE, x, index, src, axis=axis, reduce=reduce,
                 include_self=include_self)


def _written(x: Any, axis: int, index: Any) -> Any:
    """The bool mask of the positions of ``x`` that ``index`` writes along ``axis``."""
    from ..creation import ones, zeros
    from .index import scatter_add

    base = zeros(tuple(x.shape), dtype="int64", device=x.device)
    return scatter_add(base, axis, index, ones(tuple(index.shape), dtype="int64",
                                               device=x.device)) > 0


def scatter(x: Any, dim: int, index: Any, src: Any = None, *, value: Any = None,
            reduce: str | None = None) -> Any:
    """``x`` with ``src`` (a tensor) or ``value`` (a number) written at ``index`` along ``dim``;
    ``reduce="add"`` or ``"multiply"`` combines instead of overwriting."""
    from ..tensor import Tensor
    from .elementwise import where
    from .index import scatter_add

    if src is not None and not isinstance(src, Tensor):
        src, value = None, src
    if (src is None) == (value is None):
        raise ArgumentTypeError("scatter: give exactly one of src (a tensor) and value (a "
                                "number)")
    axis, index = _checked("scatter", x, dim, index, src)
    if src is None:
        src = x.new_full(tuple(index.shape), value)
    if reduce is not None:
        names = {"add": "sum", "multiply": "prod"}
        if reduce not in names:
            raise ArgumentError(f"scatter: reduce must be 'add' or 'multiply', got {reduce!r}")
        return apply(SCATTER_REDUCE, x, index, src.to(x.dtype), axis=axis,
                     reduce=names[reduce], include_self=True)
    placed = scatter_add(x.new_zeros(tuple(x.shape)), axis, index, src.to(x.dtype))
    return where(_written(x, axis, index), placed, x)


def _along(x: Any, dim: int, index: Any, name: str) -> tuple[int, Any]:
    """The axis, and ``index`` as a 1-D int64 tensor with negative entries counted from the
    end. Kept a tensor (not read into Python) so that vmap batches these functions."""
    from ..dispatch import state
    from .elementwise import add, lt, where

    axis = normalize_axes(dim, max(x.ndim, 1), name)[0]
    index = _as_index_tensor(x, index)
    _check_index(name, index)
    if index.ndim > 1:
        raise ShapeError(f"{name}: index must be 1-D, got shape {tuple(index.shape)}")
    n = x.shape[axis] if x.ndim else 1
    if not state.modes and index.numel():  # a range check the host can read
        values = index.numpy()
        bad = values[(values < -n) | (values >= n)]
        if bad.size:
            raise IndexOutOfRangeError(f"{name}: index {int(bad[0])} is out of range for "
                                       f"dimension {dim} of size {n}")
    index = index.to("int64")
    return axis, where(lt(index, 0), add(index, n), index)


def _scattered(values: Any, idx: Any, axis: int, shape: tuple[int, ...]) -> Any:
    """Zeros of ``shape`` with the slices of ``values`` added at ``idx`` along ``axis``."""
    return apply(_take_scatter_add(), values, idx, axis=axis, shape=shape)


def _mask_along(x: Any, axis: int, idx: Any) -> Any:
    """Where ``idx`` writes along ``axis``: a bool tensor broadcasting against ``x``."""
    from ..creation import ones
    from .shape import reshape

    n = x.shape[axis] if x.ndim else 1
    hits = _scattered(ones(tuple(idx.shape), dtype="int64", device=x.device), idx, 0, (n,))
    shape = [1] * max(x.ndim, 1)
    shape[axis] = n
    return reshape(hits > 0, tuple(shape))


def _take_scatter_add() -> Op:
    from .index import TAKE_SCATTER_ADD

    return TAKE_SCATTER_ADD


def index_add(x: Any, dim: int, index: Any, source: Any, *, alpha: float = 1) -> Any:
    """``x`` with the slices of ``source`` added at ``index`` along ``dim`` (repeats add)."""
    from .elementwise import add, mul

    axis, idx = _along(x, dim, index, "index_add")
    src = source if alpha == 1 else mul(source, alpha)
    return add(x, _scattered(src.to(x.dtype), idx, axis, tuple(x.shape)))


def index_copy(x: Any, dim: int, index: Any, source: Any) -> Any:
    """``x`` with its slices at ``index`` along ``dim`` replaced by those of ``source``."""
    from .elementwise import where

    axis, idx = _along(x, dim, index, "index_copy")
    placed = _scattered(source.to(x.dtype), idx, axis, tuple(x.shape))
    return where(_mask_along(x, axis, idx), placed, x)


def index_fill(x: Any, dim: int, index: Any, value: Any) -> Any:
    """``x`` with its slices at ``index`` along ``dim`` set to ``value``."""
    from .elementwise import where

    axis, idx = _along(x, dim, index, "index_fill")
    value = value.to(x.dtype) if hasattr(value, "dtype") else x.dtype.type(value)
    return where(_mask_along(x, axis, idx), value, x)


def masked_scatter(x: Any, mask: Any, source: Any) -> Any:
    """``x`` with the positions where ``mask`` (bool, broadcast) is true filled, in order,
    from the leading elements of ``source``."""
    from ..dispatch import state
    from .elementwise import maximum, sub, where
    from .index import TAKE
    from .reduce import cumsum
    from .shape import broadcast_to, reshape

    if mask.dtype.kind != "b":
        raise DTypeError(f"masked_scatter: mask must be bool, got {mask.dtype}")
    try:
        shape = tuple(np.broadcast_shapes(tuple(x.shape), tuple(mask.shape)))
    except ValueError:
        shape = None
    if shape != tuple(x.shape):
        raise ShapeError(f"masked_scatter: mask {tuple(mask.shape)} must broadcast to the input "
                         f"{tuple(x.shape)}")
    flat_mask = reshape(broadcast_to(mask, shape), (-1,))
    if not state.modes:
        count = int(flat_mask.numpy().sum())
        if count > source.numel():
            raise ShapeError(f"masked_scatter: the mask selects {count} elements, source has "
                             f"only {source.numel()}")
    # The k-th selected position takes source's k-th element: its rank among the selected.
    rank = maximum(sub(cumsum(flat_mask, 0), 1), 0)
    values = apply(TAKE, reshape(source, (-1,)).to(x.dtype), rank, axis=0)
    return reshape(where(flat_mask, values, reshape(x, (-1,))), tuple(x.shape))


def put(x: Any, index: Any, source: Any, accumulate: bool = False) -> Any:
    """``x`` (as if flattened) with ``source`` written at the flat ``index`` (negative from the
    end), or added with ``accumulate=True``."""
    from .elementwise import add, where
    from .shape import reshape

    flat = reshape(x, (-1,))
    if index.numel() != source.numel():
        raise ShapeError(f"put: index has {index.numel()} elements, source {source.numel()}")
    _, idx = _along(flat, 0, reshape(_as_index_tensor(x, index), (-1,)), "put")
    placed = _scattered(reshape(source, (-1,)).to(x.dtype), idx, 0, (flat.shape[0],))
    out = add(flat, placed) if accumulate else where(_mask_along(flat, 0, idx), placed, flat)
    return reshape(out, tuple(x.shape))


def take(x: Any, index: Any) -> Any:
    """The elements of ``x`` (as if flattened) at ``index``, in ``index``'s shape."""
    from .index import TAKE
    from .shape import reshape

    index = _as_index_tensor(x, index)
    _check_index("take", index)
    n = x.numel()
    if index.array.size:
        low, high = int(index.array.min()), int(index.array.max())
        if low < -n or high >= n:
            raise IndexOutOfRangeError(f"take: index {high if high >= n else low} is out of "
                                       f"range for a tensor of {n} elements")
    flat_idx = reshape(index, (-1,))
    out = apply(TAKE, reshape(x, (-1,)), flat_idx, axis=0)
    return reshape(out, tuple(index.shape))


METHODS = ("scatter", "scatter_reduce", "index_add", "index_copy", "index_fill",
           "masked_scatter", "put", "take")
