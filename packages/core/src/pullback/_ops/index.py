"""Indexing: slicing, integer-array and boolean-mask indexing, gather/scatter, one-hot.

Gradients of indexing scatter-*add* into zeros, so repeated indices accumulate correctly. Each
scatter op is itself differentiable (its gradient is the matching gather), which keeps
``create_graph`` exact through indexing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dispatch import apply
from ..errors import DTypeError, IndexOutOfRangeError, IndexShapeError, ShapeError
from ..promotion import Promotion
from ..registry import Op
from ._axes import normalize_axes
from ._declare import declare
from ._keys import normalize_key, split_key


def _add_at(xp: Any) -> Any:
    """``ufunc.at``-style scatter-add for the namespace (NumPy's ``add.at``, CuPy's scatter_add)."""
    if xp.__name__ == "cupy":  # pragma: no cover - GPU only
        import cupyx

        return cupyx.scatter_add
    return xp.add.at


def _along_index(xp: Any, idx: Any, axis: int) -> tuple[Any, ...]:
    """The full advanced index that ``take_along_axis(x, idx, axis)`` reads."""
    nd = idx.ndim
    key = []
    for d in range(nd):
        if d == axis:
            key.append(idx)
        else:
            shape = [1] * nd
            shape[d] = idx.shape[d]
            key.append(xp.arange(idx.shape[d]).reshape(shape))
    return tuple(key)


# -- basic and advanced indexing --------------------------------------------------------------

def _getitem_kernel(xp: Any) -> Any:
    ndarray = xp.ndarray

    def getitem(x: Any, key: Any) -> Any:
        out = x[key]
        if out.__class__ is not ndarray:
            # NumPy answers an int for every dim with a scalar, a copy: a trailing Ellipsis
            # gives the 0-d view PyTorch returns (t[i].add_(1) must write into t).
            out = x[(*key, Ellipsis) if isinstance(key, tuple) else (key, Ellipsis)]
        return out

    return getitem


GETITEM = declare(Op("getitem", _getitem_kernel, view=True, save_inputs=False,
                     doc="basic indexing (slices, ints, None, Ellipsis): a view"))
INDEX = declare(Op("index", lambda xp: lambda x, key: x[key], save_inputs=False,
                   doc="advanced indexing (integer arrays, boolean masks): a copy"))


def _getitem_scatter_kernel(xp: Any) -> Any:
    def getitem_scatter(g: Any, key: Any, shape: tuple[int, ...]) -> Any:
        out = xp.zeros(shape, dtype=g.dtype)
        out[key] = g
        return out

    return getitem_scatter


def _index_scatter_add_kernel(xp: Any) -> Any:
    add_at = _add_at(xp)

    def index_scatter_add(g: Any, key: Any, shape: tuple[int, ...]) -> Any:
        out = xp.zeros(shape, dtype=g.dtype)
        add_at(out, key, g)
        return out

    return index_scatter_add


GETITEM_SCATTER = declare(Op("getitem_scatter", _getitem_scatter_kernel, save_inputs=False,
                             doc="zeros with g written at a basic index (getitem's gradient)"))
INDEX_SCATTER_ADD = declare(Op("index_scatter_add", _index_scatter_add_kernel, save_inputs=False,
                               doc="zeros with g added at an advanced index (index's gradient)"))

GETITEM.def_grad(lambda F, g, out, x, key: (
    F.getitem_scatter(g, key=key, shape=tuple(x.shape)),))
INDEX.def_grad(lambda F, g, out, x, key: (
    F.index_scatter_add(g, key=key, shape=tuple(x.shape)),))
GETITEM_SCATTER.def_grad(lambda F, g, out, x, key, shape: (F.getitem(g, key=key),))


def _add_at_basic_index(target: Any, g: Any, key: Any) -> None:
    target[key] += g  # a basic index selects each element once: no repeated indices to lose


# The engine adds a slice's gradient straight into the buffer that already holds the other
# slices' (split's q, k and v), instead of a zero-filled full-size array per slice plus a sum.
GETITEM.set_rule("accumulate_into", _add_at_basic_index)
INDEX_SCATTER_ADD.def_grad(lambda F, g, out, x, key, shape: (F.index(g, key=key),))


# -- index_select (take), gather (take_along_axis), scatter_add ----------------------------------

TAKE = declare(Op("take", lambda xp: lambda x, idx, axis: xp.take(x, idx, axis=axis),
                  save_inputs=False, doc="select entries along an axis (index_select)"))


def _sum_rows_by_index(g: Any, idx: Any, rows: int) -> Any:
    """NumPy: ``out[idx[i]] += g[i]`` for the rows of ``g`` (an embedding's gradient) by sorting:
    one gather and one ``add.reduceat`` over runs of equal indices. ``np.add.at`` does the same
    row by row through a generic loop, about 10x slower for a GPT batch (2,048 rows of 128)."""
    flat = idx.reshape(-1)
    flat = np.where(flat < 0, flat + rows, flat)  # one row, one run, however it was spelled
    order = np.argsort(flat, kind="stable")  # stable: the sums add in the original order
    ordered = flat[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    out = np.zeros((rows,) + g.shape[idx.ndim:], dtype=g.dtype)
    if flat.size:
        values = g.reshape((flat.size,) + g.shape[idx.ndim:])[order]
        out[ordered[starts]] = np.add.reduceat(values, starts, axis=0)
    return out


def _take_scatter_add_kernel(xp: Any) -> Any:
    add_at = _add_at(xp)

    def take_scatter_add(g: Any, idx: Any, axis: int, shape: tuple[int, ...]) -> Any:
        if xp is np and axis == 0 and g.dtype.kind == "f":
            return _sum_rows_by_index(g, idx, shape[0])
        out = xp.zeros(shape, dtype=g.dtype)
        add_at(out, (slice(None),) * axis + (idx,), g)
        return out

    return take_scatter_add


TAKE_SCATTER_ADD = declare(Op("take_scatter_add", _take_scatter_add_kernel, save_inputs=False,
                              doc="add rows of g at indices along an axis (take's gradient)"))
TAKE.def_grad(lambda F, g, out, x, idx, axis: (
    F.take_scatter_add(g, idx, axis=axis, shape=tuple(x.shape)), None))
TAKE_SCATTER_ADD.def_grad(lambda F, g, out, x, idx, axis, shape: (
    F.take(g, idx, axis=axis), None))

GATHER = declare(Op("gather", lambda xp: lambda x, idx, axis: xp.take_along_axis(x, idx, axis),
                    save_inputs=False, doc="take_along_axis"))


def _gather_scatter_add_kernel(xp: Any) -> Any:
    add_at = _add_at(xp)

    def gather_scatter_add(g: Any, idx: Any, axis: int, shape: tuple[int, ...]) -> Any:
        out = xp.zeros(shape, dtype=g.dtype)
        add_at(out, _along_index(xp, idx, axis), g)
        return out

    return gather_scatter_add


def _scatter_add_kernel(xp: Any) -> Any:
    add_at = _add_at(xp)

    def scatter_add(x: Any, idx: Any, src: Any, axis: int) -> Any:
        out = x.copy()
        add_at(out, _along_index(xp, idx, axis), src)
        return out

    return scatter_add


GATHER_SCATTER_ADD = declare(Op("gather_scatter_add", _gather_scatter_add_kernel,
                                save_inputs=False, doc="gather's gradient"))
SCATTER_ADD = declare(Op("scatter_add", _scatter_add_kernel, save_inputs=False,
                         promotion=Promotion("same", args=(0, 2)),
                         doc="x with src added at index along an axis"))
GATHER.def_grad(lambda F, g, out, x, idx, axis: (
    F.gather_scatter_add(g, idx, axis=axis, shape=tuple(x.shape)), None))
GATHER_SCATTER_ADD.def_grad(lambda F, g, out, x, idx, axis, shape: (
    F.gather(g, idx, axis=axis), None))
@SCATTER_ADD.def_grad
def _scatter_add_grad(F: Any, g: Any, out: Any, x: Any, idx: Any, src: Any, axis: int) -> Any:
    # The index may be smaller than x off the scatter axis (PyTorch's rule): crop g to it first.
    key = tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(idx.shape))
    return g, None, F.gather(F.getitem(g, key=key), idx, axis=axis)


def _one_hot_kernel(xp: Any) -> Any:
    return lambda idx, num_classes: (idx[..., None] == xp.arange(num_classes)).astype(xp.int64)


ONE_HOT = declare(Op("one_hot", _one_hot_kernel, differentiable=False,
                     doc="integer classes to one-hot int64 rows"))


# -- public functions -------------------------------------------------------------------------

def _tensor_cls() -> Any:
    from ..tensor import Tensor

    return Tensor


def getitem(x: Any, key: Any) -> Any:
    """``x[key]`` as in PyTorch (integers beside advanced indices are applied first, see
    :mod:`._keys`); gradients scatter-add, so repeated indices accumulate."""
    nkey, advanced = normalize_key(x, key)
    if not advanced:
        return apply(GETITEM, x, key=nkey)
    basic, rest = split_key(nkey)
    if basic is not None:
        x = apply(GETITEM, x, key=basic)
    return apply(INDEX, x, key=rest)


def _check_index(name: str, idx: Any) -> None:
    if idx.dtype.kind not in "iu":
        raise DTypeError(f"{name}: index must be an integer tensor, got {idx.dtype}")


def _check_nonnegative(name: str, index: Any, x: Any, axis: int) -> None:
    """PyTorch's gather and scatter_add refuse negative indices (NumPy would wrap them)."""
    if index.array.size:
        low = int(index.array.min())
        if low < 0:
            raise IndexOutOfRangeError(f"{name}: index {low} is out of range for axis {axis} "
                                       f"of size {x.shape[axis]} (negative indices are refused)")


def index_select(x: Any, axis: int, index: Any) -> Any:
    """Entries of ``x`` at ``index`` (1-D integers) along ``axis`` (PyTorch's index_select)."""
    index = _as_index_tensor(x, index)
    _check_index("index_select", index)
    if index.ndim != 1:
        raise IndexShapeError(f"index_select: index must be 1-D, got shape {tuple(index.shape)}")
    return apply(TAKE, x, index, axis=normalize_axes(axis, x.ndim, "index_select")[0])


def take_along_axis(x: Any, indices: Any, axis: int) -> Any:
    """NumPy's ``take_along_axis`` (index broadcasts against ``x``)."""
    from .shape import broadcast_to

    indices = _as_index_tensor(x, indices)
    _check_index("take_along_axis", indices)
    if indices.ndim != x.ndim:
        raise ShapeError(
            f"take_along_axis: index has {indices.ndim} dims, input {tuple(x.shape)} has {x.ndim}"
        )
    axis = normalize_axes(axis, x.ndim, "take_along_axis")[0]
    # Broadcast the two off the axis here, so that the gradient's scatter sees full shapes.
    try:
        common = np.broadcast_shapes(
            tuple(1 if d == axis else n for d, n in enumerate(x.shape)),
            tuple(1 if d == axis else n for d, n in enumerate(indices.shape)))
    except ValueError:
        raise ShapeError(f"take_along_axis: index {tuple(indices.shape)} does not broadcast "
                         f"against input {tuple(x.shape)} off axis {axis}") from None
    x = broadcast_to(x, tuple(x.shape[d] if d == axis else n for d, n in enumerate(common)))
    indices = broadcast_to(
        indices, tuple(indices.shape[d] if d == axis else n for d, n in enumerate(common)))
    return apply(GATHER, x, indices, axis=axis)


def gather(x: Any, axis: int, index: Any) -> Any:
    """PyTorch's ``gather``: ``out[i][j] = x[index[i][j]][j]`` (for ``axis=0``)."""
    index = _as_index_tensor(x, index)
    _check_index("gather", index)
    if index.ndim != x.ndim:
        raise ShapeError(f"gather: index has {index.ndim} dims, input {tuple(x.shape)} has {x.ndim}")
    axis = normalize_axes(axis, x.ndim, "gather")[0]
    _check_nonnegative("gather", index, x, axis)
    x = _crop_to(x, index, axis, "gather")
    return apply(GATHER, x, index, axis=axis)


def scatter_add(x: Any, axis: int, index: Any, src: Any) -> Any:
    """PyTorch's ``scatter_add``: ``x`` with ``src`` added at ``index`` along ``axis``."""
    index = _as_index_tensor(x, index)
    _check_index("scatter_add", index)
    axis = normalize_axes(axis, x.ndim, "scatter_add")[0]
    _check_nonnegative("scatter_add", index, x, axis)
    src = _crop_to(src, index, None, "scatter_add")
    return apply(SCATTER_ADD, x, index, src, axis=axis)


def _crop_to(x: Any, index: Any, skip_axis: int | None, name: str) -> Any:
    """PyTorch's gather/scatter use only the leading ``index.shape`` part of the other tensor."""
    key = []
    for d, (n, m) in enumerate(zip(x.shape, index.shape)):
        if d != skip_axis and m > n:
            raise ShapeError(
                f"{name}: index shape {tuple(index.shape)} exceeds {tuple(x.shape)} in axis {d}"
            )
        key.append(slice(None) if d == skip_axis or m == n else slice(0, m))
    if all(k == slice(None) for k in key):
        return x
    return getitem(x, tuple(key))


def masked_fill(x: Any, mask: Any, value: Any) -> Any:
    """``x`` with ``value`` where ``mask`` (bool, broadcast against ``x``) is true.

    The result keeps ``x``'s dtype, as in PyTorch: ``value`` is cast to it.
    """
    from .elementwise import where

    if mask.dtype.kind != "b":
        raise DTypeError(f"masked_fill: mask must be bool, got {mask.dtype} "
                         f"(shape {tuple(mask.shape)})")
    if isinstance(value, _tensor_cls()):
        value = value.to(x.dtype)
    else:
        value = x.dtype.type(value)
    return where(mask, value, x)


def one_hot(indices: Any, num_classes: int = -1) -> Any:
    """One-hot int64 rows (``num_classes=-1``: one more than the largest index)."""
    _check_index("one_hot", indices)
    if indices.array.size:
        low, high = int(indices.array.min()), int(indices.array.max())
        if num_classes < 0:
            num_classes = high + 1
        if low < 0 or high >= num_classes:
            bad = low if low < 0 else high
            raise IndexOutOfRangeError(
                f"one_hot: class index {bad} is out of range for {num_classes} classes")
    elif num_classes < 0:
        num_classes = 0
    return apply(ONE_HOT, indices, num_classes=num_classes)


def _as_index_tensor(x: Any, index: Any) -> Any:
    Tensor = _tensor_cls()
    if isinstance(index, Tensor):
        return index
    return Tensor._wrap(x.device.backend.asarray(np.asarray(index), index=x.device.index or 0),
                        x.device)
