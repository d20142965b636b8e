"""Shape ops. Primitives: reshape, permute, broadcast_to, cat, stack, flip, roll, tril, triu, pad.
Everything else (view, flatten, transpose, squeeze, unsqueeze, expand, split, chunk, tile, reflect
padding) is a composition of primitives and needs no rule of its own.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .._autocast_policy import autocast_function
from .._memo import remembered
from ..dispatch import apply
from ..errors import ArgumentError, AxisError, ShapeError, UnsupportedError
from ..promotion import COMMON
from ..registry import Op
from ._axes import normalize_axes, pick_axis
from ._declare import declare



# On NumPy the array's own methods: np.reshape and np.transpose add two Python calls each
# (dispatch, then _wrapfunc), which a compiled GPT step makes about 80 times, after kernels
# that have pushed the interpreter out of the caches.
def _reshape_kernel(xp: Any) -> Any:
    if xp is np:
        return lambda x, shape: x.reshape(shape)
    return lambda x, shape: xp.reshape(x, shape)


def _permute_kernel(xp: Any) -> Any:
    if xp is np:
        return lambda x, axes: x.transpose(axes)
    return lambda x, axes: xp.transpose(x, axes)


RESHAPE = declare(Op("reshape", _reshape_kernel, view=True, may_copy=True, save_inputs=False,
                     doc="same elements, new shape (a view when the layout allows, else a copy)"))
PERMUTE = declare(Op("permute", _permute_kernel, view=True, save_inputs=False,
                     doc="reorder axes"))
BROADCAST_TO = declare(Op("broadcast_to", lambda xp: lambda x, shape: xp.broadcast_to(x, shape),
                          view=True, save_inputs=False, doc="broadcast to a shape"))
FLIP = declare(Op("flip", lambda xp: lambda x, axis: xp.flip(x, axis), view=True,
                  save_inputs=False, doc="reverse along axes"))
ROLL = declare(Op("roll", lambda xp: lambda x, shifts, axis: xp.roll(x, shifts, axis),
                  save_inputs=False, doc="rotate elements along axes"))
TRIL = declare(Op("tril", lambda xp: lambda x, k=0: xp.tril(x, k), save_inputs=False,
                  doc="lower triangle"))
TRIU = declare(Op("triu", lambda xp: lambda x, k=0: xp.triu(x, k), save_inputs=False,
                  doc="upper triangle"))
# Below this many bytes per row and input, NumPy's concatenate copies a row's chunk element by
# element in a short inner loop: cat([x, y], 1) of two 65,536 x 2 float32 matrices (a relation's
# MLP input) measured 1.05 ms, against 0.19 ms with each chunk copied as one opaque item.
_NARROW_CHUNK_BYTES = 64
_MIN_ROWS = 1024


def _cat_kernel(xp: Any) -> Any:
    def cat(*xs: Any, axis: int = 0) -> Any:
        if xp is np and xs and xs[0].ndim:
            axis %= xs[0].ndim
            if axis and _narrow_rows(xs, axis):
                return _cat_rows(xs, axis)
        return xp.concatenate(xs, axis=axis)

    return cat


def _narrow_rows(xs: Sequence[Any], axis: int) -> bool:
    """Whether ``xs`` are C-contiguous NumPy arrays of one plain dtype and one shape outside
    ``axis``, with many rows (the axes before ``axis``) of narrow chunks."""
    first = xs[0]
    if first.__class__ is not np.ndarray or first.dtype.kind not in "biufc":
        return False
    rows = math.prod(first.shape[:axis])
    if rows < _MIN_ROWS:
        return False
    for x in xs:
        if (x.__class__ is not np.ndarray or x.dtype != first.dtype or x.ndim != first.ndim
                or x.shape[:axis] != first.shape[:axis] or x.shape[axis + 1:] != first.shape[axis + 1:]
                or not x.flags.c_contiguous
                or x.size // rows * x.itemsize > _NARROW_CHUNK_BYTES):
            return False
    return True


def _cat_rows(xs: Sequence[Any], axis: int) -> Any:
    """``concatenate(xs, axis)`` with each input's row chunk copied as one void item."""
    rows = math.prod(xs[0].shape[:axis])
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    out = np.empty(shape, xs[0].dtype)
    flat = out.reshape(rows, -1)
    start = 0
    for x in xs:
        width = x.size // rows
        if width:
            item = np.dtype((np.void, width * x.itemsize))
            flat[:, start:start + width].view(item)[:, 0] = x.reshape(rows, width).view(item)[:, 0]
        start += width
    return out


# cat and stack promote their tensors to one dtype, as PyTorch.
CAT = declare(Op("cat", _cat_kernel, save_inputs=False, promotion=COMMON,
                 doc="concatenate along an axis"))
STACK = declare(Op("stack", lambda xp: lambda *xs, axis=0: xp.stack(xs, axis=axis),
                   save_inputs=False, promotion=COMMON, doc="stack along a new axis"))
PAD = declare(Op("pad", lambda xp: lambda x, widths, value=0.0: xp.pad(
    x, widths, mode="constant", constant_values=value), save_inputs=False,
    doc="constant padding"))

RESHAPE.def_grad(lambda F, g, out, x, shape: (F.reshape(g, shape=tuple(x.shape)),))
BROADCAST_TO.def_grad(lambda F, g, out, x, shape: (F.sum_to(g, shape=tuple(x.shape)),))
FLIP.def_grad(lambda F, g, out, x, axis: (F.flip(g, axis=axis),))
TRIL.def_grad(lambda F, g, out, x, k=0: (F.tril(g, k=k),))
TRIU.def_grad(lambda F, g, out, x, k=0: (F.triu(g, k=k),))


@PERMUTE.def_grad
def _permute_grad(F: Any, g: Any, out: Any, x: Any, axes: tuple[int, ...]) -> Any:
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a] = i
    return (F.permute(g, axes=tuple(inverse)),)


@ROLL.def_grad
def _roll_grad(F: Any, g: Any, out: Any, x: Any, shifts: Any, axis: Any) -> Any:
    back = tuple(-s for s in shifts) if isinstance(shifts, tuple) else -shifts
    return (F.roll(g, shifts=back, axis=axis),)


@CAT.def_grad
def _cat_grad(F: Any, g: Any, out: Any, *xs: Any, axis: int = 0) -> Any:
    axis %= g.ndim  # rules may call F.cat with a negative axis; the public cat normalizes it
    grads, start = [], 0
    for x in xs:
        stop = start + x.shape[axis]
        key = (slice(None),) * axis + (slice(start, stop),)
        grads.append(F.getitem(g, key=key))
        start = stop
    return tuple(grads)


@STACK.def_grad
def _stack_grad(F: Any, g: Any, out: Any, *xs: Any, axis: int = 0) -> Any:
    axis %= g.ndim
    return tuple(F.getitem(g, key=(slice(None),) * axis + (i,)) for i in range(len(xs)))


@PAD.def_grad
def _pad_grad(F: Any, g: Any, out: Any, x: Any, widths: Any, value: float = 0.0) -> Any:
    key = tuple(slice(lo, lo + n) for (lo, _), n in zip(widths, x.shape))
    return (F.getitem(g, key=key),)


# -- public functions -------------------------------------------------------------------------

def _resolve_shape(shape: Sequence[int], numel: int, old: tuple[int, ...]) -> tuple[int, ...]:
    shape = tuple(map(int, shape))
    if shape.count(-1) > 1:
        raise ShapeError(f"reshape: only one dimension can be -1, got {shape}")
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or numel % known:
            raise ShapeError(f"reshape: cannot reshape {old} ({numel} elements) into {shape}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    if math.prod(shape) != numel:
        raise ShapeError(f"reshape: cannot reshape {old} ({numel} elements) into {shape}")
    return shape


def _shape_args(shape: Any) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


def reshape(x: Any, *shape: Any) -> Any:
    """Same elements in a new shape (one dimension may be -1)."""
    target = _resolve_shape(_shape_args(shape), x.numel(), tuple(x.shape))
    if target == tuple(x.shape):
        return x
    return apply(RESHAPE, x, shape=target)


def permute(x: Any, *axes: Any) -> Any:
    """Reorder the axes (a view)."""
    axes = _shape_args(axes)
    if sorted(a % max(x.ndim, 1) for a in axes) != list(range(x.ndim)):
        raise ShapeError(f"permute: {axes} is not a permutation of the {x.ndim} axes of {tuple(x.shape)}")
    return apply(PERMUTE, x, axes=tuple(a % x.ndim for a in axes))


def transpose(x: Any, axis0: int = -2, axis1: int = -1) -> Any:
    """Swap two axes (PyTorch's ``transpose(dim0, dim1)``)."""
    nd = x.ndim
    a, b = normalize_axes(axis0, nd, "transpose")[0], normalize_axes(axis1, nd, "transpose")[0]
    if nd < 2:
        return x
    axes = list(range(nd))
    axes[a], axes[b] = axes[b], axes[a]
    return apply(PERMUTE, x, axes=tuple(axes))


swapaxes = transpose


def t(x: Any) -> Any:
    """PyTorch's ``t()``: the transpose of a matrix; 0-d and 1-d tensors as they are."""
    if x.ndim > 2:
        raise ShapeError(f"t: expects a tensor with at most 2 dims, got shape {tuple(x.shape)} "
                         "(use transpose(dim0, dim1) or mT)")
    return transpose(x, 0, -1) if x.ndim == 2 else x


def _view_strides(shape: tuple[int, ...], strides: tuple[int, ...],
                  target: tuple[int, ...]) -> bool:
    """Whether an array of ``shape`` and ``strides`` can be seen as ``target`` without a copy
    (PyTorch's rule for ``view``: each run of merged axes must be one contiguous chunk)."""
    if math.prod(shape) == 0 or not shape:
        return True
    view_d = len(target) - 1
    chunk_base = strides[-1]
    tensor_numel = view_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or target[view_d] == 1):
                view_numel *= target[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return False
            if d > 0:
                chunk_base = strides[d - 1]
                tensor_numel = view_numel = 1
    return view_d == -1


def view(x: Any, *shape: Any) -> Any:
    """PyTorch's ``view``: the same memory in a new shape. Where the layout allows no view (a
    transpose merged into one axis), a ShapeError says to use :func:`reshape`, which copies:
    a silent copy would lose every write made through the "view"."""
    target = _resolve_shape(_shape_args(shape), x.numel(), tuple(x.shape))
    strides = getattr(getattr(x, "array", None), "strides", None)  # none under some modes
    if strides is not None and not _view_strides(tuple(x.shape), tuple(strides), target):
        raise ShapeError(
            f"view: a tensor of shape {tuple(x.shape)} and strides "
            f"{tuple(s // x.element_size() for s in strides)} cannot be viewed as {target} "
            "(at least one dimension spans across two contiguous subspaces); use "
            ".reshape(...) instead, which copies")
    return reshape(x, target)


def flatten(x: Any, start_dim: int = 0, end_dim: int = -1) -> Any:
    """Merge axes ``start_dim..end_dim`` into one."""
    shape = tuple(x.shape)
    if start_dim.__class__ is int and end_dim.__class__ is int:  # (a 0-d tensor may change)
        target = remembered(_FLATTENED, (shape, start_dim, end_dim), 256,
                            lambda: _flattened(shape, start_dim, end_dim))
    else:
        target = _flattened(shape, start_dim, end_dim)
    return x if target == shape else apply(RESHAPE, x, shape=target)


# The shapes flatten gives, by (shape, start_dim, end_dim): a model flattens tensors of one
# shape every step, and the axis checks cost more than the reshape (a batch-1 CNN's flatten).
_FLATTENED: dict[tuple[Any, ...], tuple[int, ...]] = {}


def _flattened(shape: tuple[int, ...], start_dim: Any, end_dim: Any) -> tuple[int, ...]:
    ndim = len(shape)
    if ndim == 0:
        normalize_axes(start_dim, 0, "flatten")
        normalize_axes(end_dim, 0, "flatten")
        return (1,)
    s = normalize_axes(start_dim, ndim, "flatten")[0]
    e = normalize_axes(end_dim, ndim, "flatten")[0]
    if s > e:
        raise ShapeError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim} for a "
                         f"{ndim}-d tensor of shape {shape}")
    return shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:]


def squeeze(x: Any, axis: Any = None, *, dim: Any = None) -> Any:
    """Drop size-1 axes (all of them, or those named)."""
    axis = pick_axis(axis, dim)
    shape = tuple(x.shape)
    if axis is None:
        return reshape(x, tuple(s for s in shape if s != 1))
    axes = normalize_axes(axis, x.ndim, "squeeze")
    return reshape(x, tuple(s for i, s in enumerate(shape) if not (i in axes and s == 1)))


def unsqueeze(x: Any, axis: int | None = None, *, dim: int | None = None) -> Any:
    """Insert a size-1 axis at ``axis``."""
    axis = pick_axis(axis, dim)
    nd = x.ndim + 1
    if not -nd <= axis < nd:
        raise AxisError(f"unsqueeze: axis {axis} is out of range for a {nd - 1}-d tensor "
                        f"(expected in [{-nd}, {nd - 1}])")
    shape = list(x.shape)
    shape.insert(axis % nd, 1)
    return reshape(x, tuple(shape))


def broadcast_to(x: Any, *shape: Any) -> Any:
    """Broadcast to ``shape`` (a read-only view)."""
    shape = _shape_args(shape)
    if tuple(shape) == tuple(x.shape):
        return x
    return apply(BROADCAST_TO, x, shape=tuple(shape))


def expand(x: Any, *sizes: Any) -> Any:
    """PyTorch's ``expand``: broadcast, with -1 meaning "keep this size"."""
    sizes = _shape_args(sizes)
    lead = len(sizes) - x.ndim
    if lead < 0:
        raise ShapeError(f"expand: {len(sizes)} sizes for a {x.ndim}-d tensor {tuple(x.shape)}")
    shape = tuple(
        x.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes)
    )
    return broadcast_to(x, shape)


def _axis_or_dim(axis: int | None, dim: int | None) -> int:
    """NumPy's ``axis=`` or PyTorch's ``dim=`` (not both), 0 when neither is given."""
    axis = pick_axis(axis, dim)
    return 0 if axis is None else axis


def cat(tensors: Sequence[Any], axis: int | None = None, *, dim: int | None = None) -> Any:
    """Concatenate along an existing axis (0 by default)."""
    axis = _axis_or_dim(axis, dim)
    tensors = list(tensors)
    if not tensors:
        raise ShapeError("cat: expected a non-empty sequence of tensors")
    axis = normalize_axes(axis, tensors[0].ndim, "cat")[0]
    return apply(CAT, *tensors, axis=axis)


concatenate = cat


def stack(tensors: Sequence[Any], axis: int | None = None, *, dim: int | None = None) -> Any:
    """Stack along a new axis (0 by default)."""
    axis = _axis_or_dim(axis, dim)
    tensors = list(tensors)
    if not tensors:
        raise ShapeError("stack: expected a non-empty sequence of tensors")
    axis = normalize_axes(axis, tensors[0].ndim + 1, "stack")[0]
    return apply(STACK, *tensors, axis=axis)


def _slice_along(x: Any, axis: int, start: int, stop: int) -> Any:
    from .index import getitem

    return getitem(x, (slice(None),) * axis + (slice(start, stop),))


def split(x: Any, split_size_or_sections: Any, axis: int | None = None, *,
          dim: int | None = None) -> tuple:
    """PyTorch's ``split``: pieces of one size (the last may be smaller) or of given sizes."""
    axis = normalize_axes(_axis_or_dim(axis, dim), x.ndim, "split")[0]
    n = x.shape[axis]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size <= 0:
            raise ShapeError(f"split: split size must be positive, got {size}")
        sizes = [size] * (n // size) + ([n % size] if n % size else [])
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != n:
            raise ShapeError(f"split: sizes {sizes} do not sum to {n} (axis {axis} of {tuple(x.shape)})")
    out, start = [], 0
    for s in sizes:
        out.append(_slice_along(x, axis, start, start + s))
        start += s
    return tuple(out)


def chunk(x: Any, chunks: int, axis: int | None = None, *, dim: int | None = None) -> tuple:
    """PyTorch's ``chunk``: up to ``chunks`` pieces of size ``ceil(n / chunks)``."""
    axis = normalize_axes(_axis_or_dim(axis, dim), x.ndim, "chunk")[0]
    if not isinstance(chunks, int) or isinstance(chunks, bool) or chunks < 1:
        raise ArgumentError(f"chunk: chunks must be a positive int, got {chunks!r}")
    n = x.shape[axis]
    size = max(1, -(-n // chunks))
    return split(x, size, axis)


def unbind(x: Any, axis: int | None = None, *, dim: int | None = None) -> tuple:
    """The slices along ``axis`` (0 by default), with that axis removed."""
    from .index import getitem

    axis = normalize_axes(_axis_or_dim(axis, dim), x.ndim, "unbind")[0]
    return tuple(getitem(x, (slice(None),) * axis + (i,)) for i in range(x.shape[axis]))


def flip(x: Any, axis: Any = None, *, dims: Any = None) -> Any:
    """Reverse the order of elements along ``axis`` (all axes by default)."""
    axis = dims if dims is not None else axis
    return apply(FLIP, x, axis=normalize_axes(axis, x.ndim, "flip"))


def roll(x: Any, shifts: Any, axis: Any = None, *, dims: Any = None) -> Any:
    """Rotate elements along ``axis`` (the flattened tensor when no axis is given)."""
    axis = dims if dims is not None else axis
    if isinstance(shifts, list):
        shifts = tuple(shifts)
    if isinstance(axis, list):
        axis = tuple(axis)
    n_shifts = len(shifts) if isinstance(shifts, tuple) else 1
    n_axes = 0 if axis is None else len(axis) if isinstance(axis, tuple) else 1
    if axis is None and n_shifts != 1 or axis is not None and n_shifts != n_axes:
        raise ShapeError(f"roll: shifts and dims must have the same length, got shifts "
                         f"{shifts} and dims {axis}")
    if axis is not None:
        normalize_axes(axis, x.ndim, "roll")
    return apply(ROLL, x, shifts=shifts, axis=axis)


def _check_matrix(x: Any, name: str) -> None:
    # NumPy's tril/triu quietly turn a 1-D input into a matrix; PyTorch refuses it.
    if x.ndim < 2:
        raise ShapeError(f"{name}: expects at least 2 dims, got shape {tuple(x.shape)}")


def tril(x: Any, diagonal: int = 0) -> Any:
    """Zero everything above the ``diagonal``-th diagonal of the last two axes."""
    _check_matrix(x, "tril")
    return apply(TRIL, x, k=diagonal)


def triu(x: Any, diagonal: int = 0) -> Any:
    """Zero everything below the ``diagonal``-th diagonal of the last two axes."""
    _check_matrix(x, "triu")
    return apply(TRIU, x, k=diagonal)


def tile(x: Any, reps: Any) -> Any:
    """Repeat the whole tensor ``reps`` times per axis (NumPy's ``tile``)."""
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    nd = max(len(reps), x.ndim)
    reps = (1,) * (nd - len(reps)) + reps
    shape = (1,) * (nd - x.ndim) + tuple(x.shape)
    # (s0, s1) -> (1, s0, 1, s1) -> broadcast (r0, s0, r1, s1) -> (r0*s0, r1*s1)
    interleaved = tuple(v for s in shape for v in (1, s))
    target = tuple(v for r, s in zip(reps, shape) for v in (r, s))
    out = broadcast_to(reshape(x, interleaved), target)
    return reshape(out, tuple(r * s for r, s in zip(reps, shape)))


def repeat(x: Any, *sizes: Any) -> Any:
    """PyTorch's ``Tensor.repeat(*sizes)`` (same as :func:`tile`)."""
    sizes = _shape_args(sizes)
    if len(sizes) < x.ndim:
        raise ShapeError(f"repeat: {len(sizes)} sizes for a {x.ndim}-d tensor")
    return tile(x, sizes)


_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(x: Any, pad: Sequence[int], mode: str = "constant", value: float = 0.0) -> Any:
    """PyTorch's ``F.pad``: ``pad`` lists (left, right) pairs starting from the last axis."""
    if mode not in _PAD_MODES:
        raise UnsupportedError(f"pad: mode must be one of {_PAD_MODES}, got {mode!r}")
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise ShapeError(f"pad: {len(pad)} values do not fit a {x.ndim}-d tensor {tuple(x.shape)}")
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (int(pad[2 * i]), int(pad[2 * i + 1]))
    if mode == "constant":
        return apply(PAD, x, widths=tuple(widths), value=value)
    return _PAD_BY_INDEX[mode](x, widths, mode)


def _pad_by_index(x: Any, widths: list[tuple[int, int]], mode: str) -> Any:
    out = x
    for axis, (lo, hi) in enumerate(widths):
        if lo or hi:
            out = _index_pad(out, axis, lo, hi, mode)
    return out


# PyTorch's CPU autocast runs reflection and replication padding in float32
_PAD_BY_INDEX = {"reflect": autocast_function("pad:reflect")(_pad_by_index),
                 "replicate": autocast_function("pad:replicate")(_pad_by_index),
                 "circular": _pad_by_index}


def _index_pad(x: Any, axis: int, lo: int, hi: int, mode: str) -> Any:
    """Reflect/replicate/circular padding as a gather along ``axis`` (its gradient scatter-adds)."""
    import numpy as np

    from .index import index_select

    n = x.shape[axis]
    if mode == "reflect" and (lo >= n or hi >= n):
        raise ShapeError(f"pad: reflect padding ({lo}, {hi}) must be smaller than size {n} of axis {axis}")
    if mode == "circular" and (lo > n or hi > n):
        # PyTorch's limit: wrapping around more than once would repeat the axis.
        raise ShapeError(f"pad: circular padding ({lo}, {hi}) must be at most size {n} of axis "
                         f"{axis} (it would wrap around more than once)")
    pos = np.arange(-lo, n + hi)
    if mode == "reflect":
        period = 2 * (n - 1)
        pos = np.abs(pos) % period if period else np.zeros_like(pos)
        pos = np.where(pos >= n, period - pos, pos)
    elif mode == "replicate":
        pos = np.clip(pos, 0, n - 1)
    else:
        pos = pos % n
    from ..tensor import Tensor

    idx = Tensor._wrap(x.device.backend.asarray(pos.astype(np.int64), index=x.device.index or 0),
                       x.device)
    return index_select(x, axis, idx)
