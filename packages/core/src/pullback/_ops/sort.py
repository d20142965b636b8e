"""Sorting and searching: sort, argsort, topk, kthvalue, median, nanmedian, mode, quantile,
unique, searchsorted, bucketize, nonzero, argwhere, masked_select.

The ops here compute only indices (or, for unique and searchsorted, values no gradient flows
through) and are not differentiable. Every function returning values reads them from the input
at those indices with ``gather``, so the gradient flows to the elements picked, as PyTorch's
does: ``sort(x).values`` passes each cotangent back to the element sorted there.

Ties: sorts are stable (equal elements keep their order, descending too), so ``sort`` and
``argsort`` agree with PyTorch's CPU results; ``topk``, ``kthvalue`` and ``median`` pick among
equal elements as that stable order does, which PyTorch leaves unspecified. ``mode`` is the
smallest most frequent value at its last occurrence, as PyTorch's.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from .._autocast_policy import autocast_function
from ..dispatch import apply
from ..errors import ArgumentError, DTypeError, ShapeError
from ..registry import Op
from ._axes import normalize_axes
from ._declare import declare


def _argsort_kernel(xp: Any) -> Any:
    def argsort(x: Any, axis: int, descending: bool = False) -> Any:
        if x.dtype.kind == "V":  # bfloat16: NumPy's sort places its NaNs as float32's
            x = x.astype(xp.float32)
        if not descending:
            return xp.argsort(x, axis=axis, kind="stable")
        # Stable descending: sort the reversed axis ascending, then read it back to front.
        n = x.shape[axis]
        rev = xp.argsort(xp.flip(x, axis), axis=axis, kind="stable")
        return (n - 1) - xp.flip(rev, axis)

    return argsort


def _mode_index_kernel(xp: Any) -> Any:
    def mode_index(x: Any, axis: int) -> Any:
        # Per row: sort, find runs of equal values, take the longest (first = smallest value),
        # and return the last position of that value in the row.
        moved = xp.moveaxis(x, axis, -1)
        rows = moved.reshape(-1, moved.shape[-1])
        out = xp.empty(rows.shape[0], dtype=xp.int64)
        for r in range(rows.shape[0]):
            row = rows[r]
            values, counts = xp.unique(row, return_counts=True)
            best = values[int(xp.argmax(counts))]
            out[r] = int(xp.nonzero(row == best)[0][-1])
        return xp.moveaxis(out.reshape(moved.shape[:-1] + (1,)), -1, axis)

    return mode_index


def _unique_kernel(xp: Any) -> Any:
    def unique(x: Any, part: str, axis: Any = None) -> Any:
        values, inverse, counts = xp.unique(x, return_inverse=True, return_counts=True,
                                            axis=axis)
        if part == "values":
            return values
        if part == "inverse":
            return inverse.reshape(x.shape if axis is None else (x.shape[axis],))
        return counts

    return unique


def _searchsorted_kernel(xp: Any) -> Any:
    def searchsorted(seq: Any, values: Any, right: bool = False) -> Any:
        side = "right" if right else "left"
        if seq.ndim == 1:
            return xp.searchsorted(seq, values, side=side).astype(xp.int64)
        # One search per leading index: NumPy searches 1-D sequences only.
        rows = seq.reshape(-1, seq.shape[-1])
        vals = values.reshape(rows.shape[0], -1)
        out = xp.stack([xp.searchsorted(r, v, side=side) for r, v in zip(rows, vals)])
        return out.reshape(values.shape).astype(xp.int64)

    return searchsorted


def _nonzero_kernel(xp: Any) -> Any:
    return lambda x: xp.argwhere(x).astype(xp.int64)


ARGSORT = declare(Op("argsort", _argsort_kernel, differentiable=False, family="sort",
                     doc="indices that sort x along an axis (stable)"))
MODE_INDEX = declare(Op("mode_index", _mode_index_kernel, differentiable=False, family="sort",
                        doc="index of the last occurrence of the most frequent value"))
# No grad rule, as PyTorch's unique has no derivative: a backward through its float values
# raises an error naming the op instead of silently dropping the input's gradient.
UNIQUE = declare(Op("unique", _unique_kernel, family="sort",
                    doc="sorted distinct values, the inverse indices or the counts"))
SEARCHSORTED = declare(Op("searchsorted", _searchsorted_kernel, differentiable=False,
                          family="sort", doc="insertion points of values in sorted rows"))
NONZERO = declare(Op("nonzero", _nonzero_kernel, differentiable=False, family="sort",
                     doc="indices of the nonzero elements, one row each"))

ValuesIndices = namedtuple("ValuesIndices", ["values", "indices"])


def _axis(x: Any, dim: Any, name: str) -> int:
    return normalize_axes(dim, max(x.ndim, 1), name)[0]


def _as_1d(x: Any) -> Any:
    from .shape import reshape

    return reshape(x, (1,)) if x.ndim == 0 else x


def _squeeze_back(t: Any, x: Any, axis: int, keepdim: bool) -> Any:
    """A result with a size-1 ``axis`` shaped as PyTorch returns it."""
    from .shape import reshape

    if x.ndim == 0:
        return reshape(t, ())
    if keepdim:
        return t
    return reshape(t, tuple(n for d, n in enumerate(t.shape) if d != axis))


def argsort(x: Any, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
    """Indices that sort ``x`` along ``dim`` (stable, whatever ``stable`` says)."""
    axis = _axis(x, dim, "argsort")
    out = apply(ARGSORT, _as_1d(x), axis=axis, descending=descending)
    return _squeeze_back(out, x, axis, True)


def sort(x: Any, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
    """``(values, indices)`` of ``x`` sorted along ``dim`` (NaN sorts as the largest)."""
    from .index import GATHER

    axis = _axis(x, dim, "sort")
    x1 = _as_1d(x)
    idx = apply(ARGSORT, x1, axis=axis, descending=descending)
    values = apply(GATHER, x1, idx, axis=axis)
    return ValuesIndices(_squeeze_back(values, x, axis, True), _squeeze_back(idx, x, axis, True))


def _pick(x: Any, positions: Any, axis: int, descending: bool) -> tuple[Any, Any]:
    """The elements at ``positions`` (a slice) of each sorted row, and their indices."""
    from .index import GATHER, getitem

    x1 = _as_1d(x)
    order = apply(ARGSORT, x1, axis=axis, descending=descending)
    idx = getitem(order, (slice(None),) * axis + (positions,))
    return apply(GATHER, x1, idx, axis=axis), idx


def topk(x: Any, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:  # noqa: A002
    """The ``k`` largest (or smallest) elements along ``dim`` and their indices, in order."""
    axis = _axis(x, dim, "topk")
    n = x.shape[axis] if x.ndim else 1
    if not 0 <= k <= n:
        raise ArgumentError(f"topk: k={k} is out of range for dimension {dim} of size {n} "
                            f"(shape {tuple(x.shape)})")
    values, idx = _pick(x, slice(0, k), axis, descending=largest)
    return ValuesIndices(_squeeze_back(values, x, axis, True), _squeeze_back(idx, x, axis, True))


def kthvalue(x: Any, k: int, dim: int = -1, keepdim: bool = False) -> Any:
    """The ``k``-th smallest element (1-based) along ``dim`` and its index."""
    axis = _axis(x, dim, "kthvalue")
    n = x.shape[axis] if x.ndim else 1
    if not 1 <= k <= n:
        raise ArgumentError(f"kthvalue: k={k} is out of range for dimension {dim} of size {n} "
                            f"(shape {tuple(x.shape)})")
    values, idx = _pick(x, slice(k - 1, k), axis, descending=False)
    return ValuesIndices(_squeeze_back(values, x, axis, keepdim),
                         _squeeze_back(idx, x, axis, keepdim))


def median(x: Any, dim: Any = None, keepdim: bool = False) -> Any:
    """The lower median: of all elements (a 0-d tensor), or ``(values, indices)`` along
    ``dim``. NaN, where a row has one, is the median (as in PyTorch)."""
    return _median(x, dim, keepdim, "median", ignore_nan=False)


def nanmedian(x: Any, dim: Any = None, keepdim: bool = False) -> Any:
    """:func:`median` ignoring NaN (NaN only where a row is all NaN)."""
    return _median(x, dim, keepdim, "nanmedian", ignore_nan=True)


def _median(x: Any, dim: Any, keepdim: bool, name: str, ignore_nan: bool) -> Any:
    from .elementwise import isnan, logical_not, maximum, where
    from .index import GATHER
    from .reduce import ANY, sum as sum_
    from .rounding import floor_divide
    from .shape import reshape

    whole = dim is None
    if whole:
        x_in, axis = reshape(x, (-1,)), 0
    else:
        x_in, axis = _as_1d(x), _axis(x, dim, name)
    n = x_in.shape[axis]
    if n == 0:
        raise ShapeError(f"{name}: cannot take the median of an empty dimension "
                         f"(shape {tuple(x.shape)})")
    order = apply(ARGSORT, x_in, axis=axis)
    if ignore_nan and x.dtype.kind in "fV":
        # NaN sorts last: the median of the m leading non-NaN values is at (m - 1) // 2.
        count = sum_(logical_not(isnan(x_in)), axis=axis, keepdims=True)
        pos = maximum(floor_divide(count - 1, 2), 0)
    else:
        pos = _full_index(x_in, axis, (n - 1) // 2)
        if x.dtype.kind in "fV":
            # A row holding NaN has NaN as its median, at the first NaN's index: NaN sorts
            # last, so that is the position after the row's non-NaN values.
            has_nan = apply(ANY, isnan(x_in), axis=axis, keepdims=True)
            pos = where(has_nan, sum_(logical_not(isnan(x_in)), axis=axis, keepdims=True), pos)
    idx = apply(GATHER, order, pos, axis=axis)
    values = apply(GATHER, x_in, idx, axis=axis)
    if whole:
        return _evenly_shared(x_in, reshape(values, ()), ignore_nan)
    return ValuesIndices(_squeeze_back(values, x, axis, keepdim),
                         _squeeze_back(idx, x, axis, keepdim))


def _evenly_shared(x: Any, value: Any, ignore_nan: bool) -> Any:
    """``value`` (an element of ``x``) with its gradient shared evenly among the elements equal
    to it, NaNs among the NaNs: PyTorch's gradient of a median over all elements."""
    from .elementwise import eq, isnan, logical_and, logical_or, where
    from .reduce import sum as sum_

    v = value.detach()
    if x.dtype.kind not in "fV":  # no gradient to share
        return v
    mask = eq(x, v)
    if not ignore_nan:
        mask = logical_or(mask, logical_and(isnan(x), isnan(v)))
    # x - x.detach() is 0 (NaN at NaNs, where the value is NaN anyway): the value stays exact.
    share = sum_(where(mask, x - x.detach(), 0.0)) / sum_(mask)
    return v + share


def _full_index(x: Any, axis: int, value: int) -> Any:
    from ..creation import full

    shape = tuple(1 if d == axis else n for d, n in enumerate(x.shape))
    return full(shape, value, dtype="int64", device=x.device)


def mode(x: Any, dim: int = -1, keepdim: bool = False) -> Any:
    """The most frequent value along ``dim`` (the smallest among equally frequent ones) and the
    index of its last occurrence."""
    from .index import GATHER

    axis = _axis(x, dim, "mode")
    x1 = _as_1d(x)
    if x1.shape[axis] == 0:
        raise ShapeError(f"mode: cannot take the mode of an empty dimension "
                         f"(shape {tuple(x.shape)})")
    idx = apply(MODE_INDEX, x1, axis=axis)
    values = apply(GATHER, x1, idx, axis=axis)
    return ValuesIndices(_squeeze_back(values, x, axis, keepdim),
                         _squeeze_back(idx, x, axis, keepdim))


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


@autocast_function("quantile")
def quantile(x: Any, q: Any, dim: Any = None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Any:
    """The ``q``-quantiles (``q`` a number or a 1-D tensor in [0, 1]) of all elements or along
    ``dim``, interpolating between the two nearest ranks as ``interpolation`` says. A tensor
    ``q`` puts its axis first in the result; a row holding NaN gives NaN.

    The ranks are computed with ops from ``q``, so a tensor ``q`` may itself be batched (vmap).
    """
    from ..creation import tensor
    from ..dispatch import state
    from ..tensor import Tensor
    from .elementwise import add, isnan, mul, sub, where
    from .index import GATHER, getitem, index_select
    from .reduce import ANY
    from .rounding import ceil, floor, round as round_
    from .shape import reshape, unsqueeze
    from .shape_extra import movedim

    if interpolation not in _INTERPOLATIONS:
        raise ArgumentError(f"quantile: interpolation must be one of {_INTERPOLATIONS}, got "
                            f"{interpolation!r}")
    if x.dtype.kind not in "fV":
        raise DTypeError(f"quantile: input must be floating, got {x.dtype}")
    scalar = not isinstance(q, Tensor) or q.ndim == 0
    if isinstance(q, Tensor) and q.ndim > 1:
        raise ArgumentError(f"quantile: q must be a number or a 1-D tensor, got shape "
                            f"{tuple(q.shape)}")
    # The range is checked on values the host can read (not on samples inside vmap).
    host_q = None if isinstance(q, Tensor) and state.modes else np.asarray(
        q.detach().cpu().numpy() if isinstance(q, Tensor) else q, dtype=np.float64)
    if host_q is not None and host_q.size and (host_q.min() < 0 or host_q.max() > 1):
        raise ArgumentError(f"quantile: q must be in [0, 1], got {host_q.tolist()}")
    qt = q.to(x.dtype) if isinstance(q, Tensor) else tensor(float(q), dtype=x.dtype,
                                                              device=x.device)
    qt = reshape(qt, (-1,))
    whole = dim is None
    x_in, axis = (reshape(x, (-1,)), 0) if whole else (_as_1d(x), _axis(x, dim, "quantile"))
    n = x_in.shape[axis]
    if n == 0:
        raise ShapeError(f"quantile: empty dimension (shape {tuple(x.shape)})")
    ranked = movedim(apply(GATHER, x_in, apply(ARGSORT, x_in, axis=axis), axis=axis), axis, -1)
    pos = mul(qt, n - 1)
    lo, hi = floor(pos), ceil(pos)
    if interpolation == "lower":
        hi = lo
    elif interpolation == "higher":
        lo = hi
    elif interpolation == "nearest":  # half to even, as torch.round
        lo = hi = round_(pos)
    frac = mul(sub(hi, lo), 0.5) if interpolation == "midpoint" else sub(pos, lo)
    below = index_select(ranked, -1, lo.to("int64"))
    above = index_select(ranked, -1, hi.to("int64"))
    value = add(below, mul(sub(above, below), frac))  # torch.lerp(below, above, frac)
    # A row holding NaN gives its last sorted element (a NaN), which takes the gradient, as in
    # PyTorch.
    has_nan = apply(ANY, isnan(ranked), axis=-1, keepdims=True)
    value = where(has_nan, getitem(ranked, (Ellipsis, slice(n - 1, n))), value)
    out = movedim(value, -1, 0)  # (len(q), the other axes)
    if keepdim:
        out = reshape(out, (out.shape[0],) + (1,) * x.ndim) if whole else (
            unsqueeze(out, axis + 1) if x.ndim else out)
    return reshape(out, tuple(out.shape[1:])) if scalar else out


def unique(x: Any, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim: int | None = None) -> Any:
    """The distinct values (sorted), and optionally the inverse indices and the counts; with
    ``dim``, the distinct slices along it."""
    axis = None if dim is None else _axis(x, dim, "unique")
    values = apply(UNIQUE, x, part="values", axis=axis)
    if not (return_inverse or return_counts):
        return values
    out = [values]
    if return_inverse:
        out.append(apply(UNIQUE, x, part="inverse", axis=axis))
    if return_counts:
        out.append(apply(UNIQUE, x, part="counts", axis=axis))
    return tuple(out)


def searchsorted(sorted_sequence: Any, values: Any, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None) -> Any:
    """Where ``values`` would be inserted into ``sorted_sequence`` (its last axis) to keep it
    sorted: the first such place, or the last with ``right=True`` / ``side="right"``."""
    from ..creation import tensor
    from ..tensor import Tensor

    if side is not None:
        if side not in ("left", "right"):
            raise ArgumentError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
        right = side == "right"
    scalar = not isinstance(values, Tensor)
    if scalar:
        values = tensor([values], dtype=sorted_sequence.dtype, device=sorted_sequence.device)
    if sorted_sequence.ndim > 1 and tuple(sorted_sequence.shape[:-1]) != tuple(
            values.shape[:-1]):
        raise ShapeError(f"searchsorted: the leading dims of sorted_sequence "
                         f"{tuple(sorted_sequence.shape)} and values {tuple(values.shape)} "
                         "must match")
    out = apply(SEARCHSORTED, sorted_sequence, values, right=right)
    if scalar:
        out = out[0]
    return out.to("int32") if out_int32 else out


def bucketize(input: Any, boundaries: Any, *, out_int32: bool = False,  # noqa: A002
              right: bool = False) -> Any:
    """The bucket of each element of ``input`` among the 1-D sorted ``boundaries``:
    ``boundaries[i-1] < x <= boundaries[i]`` (``<=`` and ``<`` swapped with ``right=True``)."""
    if boundaries.ndim != 1:
        raise ShapeError(f"bucketize: boundaries must be 1-D, got {tuple(boundaries.shape)}")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def nonzero(x: Any, *, as_tuple: bool = False) -> Any:
    """The indices of the nonzero elements: an ``(n, ndim)`` int64 tensor, or one 1-D tensor
    per dim with ``as_tuple=True``."""
    from .index import getitem
    from .shape import reshape

    idx = apply(NONZERO, _as_1d(x) if as_tuple else x)
    if not as_tuple:
        return idx
    return tuple(reshape(getitem(idx, (slice(None), d)), (-1,)) for d in range(max(x.ndim, 1)))


def argwhere(x: Any) -> Any:
    """``nonzero(x)``: an ``(n, ndim)`` int64 tensor of indices."""
    return apply(NONZERO, x)


def masked_select(x: Any, mask: Any) -> Any:
    """The elements of ``x`` where ``mask`` (bool, broadcast together) is true, as a 1-D
    tensor (the gradient goes back to those elements)."""
    from .index import getitem
    from .shape import broadcast_to

    if mask.dtype.kind != "b":
        raise DTypeError(f"masked_select: mask must be bool, got {mask.dtype}")
    try:
        shape = tuple(np.broadcast_shapes(tuple(x.shape), tuple(mask.shape)))
    except ValueError:
        raise ShapeError(f"masked_select: mask {tuple(mask.shape)} does not broadcast against "
                         f"input {tuple(x.shape)}") from None
    if tuple(x.shape) != shape:
        x = broadcast_to(x, shape)
    if tuple(mask.shape) != shape:
        mask = broadcast_to(mask, shape)
    return getitem(x, mask)


METHODS = ("sort", "argsort", "topk", "kthvalue", "median", "nanmedian", "mode", "quantile",
           "unique", "nonzero", "argwhere", "masked_select")
