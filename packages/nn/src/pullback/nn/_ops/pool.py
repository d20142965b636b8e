"""Max and average pooling over 2-d and 3-d windows (``nn.max_pool2d``, ``nn.avg_pool3d``...),
each with the linear ops that form its backward. The 1-d poolings are 2-d ones of height 1.

Max pooling routes the gradient to the first maximum of each window (PyTorch's choice for ties).
Its backward ``nn.max_pool2d_backward(g, x, out)`` finds those positions by comparing each window
offset of ``x`` with the pooled ``out`` (nothing is saved, so inference never pays for it) and
spreads ``g`` back to them. Its adjoint, ``nn.max_pool2d_select(h, x, out)``, reads ``h`` at the
same positions: the two are each other's gradients, so ``create_graph`` works through max
pooling (``x`` and ``out`` only locate the maxima, which are piecewise constant).
``nn.max_pool2d_indices(x, out)`` gives the same positions as flat indices into each channel's
input (``return_indices=True``).
Average pooling is linear; it and its adjoint ``nn.avg_pool2d_grad`` are each other's gradients.

The NumPy kernels loop over the window offsets with strided views (no im2col copy, no
scatter-add). 2-d max pooling's backward on float32 CPU arrays, and its forward on small ones, run C loops
instead (``_csrc/pool.c``: one pass per plane; the forward gives the NumPy kernel's values bit
for bit, the backward routes each gradient to the same position): the backward's passes
measured about 30 % of a small CNN's per-sample-gradient time, the forward's Python (a padded
copy, a strided view, one call per window offset) most of a batch-1 CNN's pooling.
Attributes: ``kernel_size``, ``stride`` and ``dilation`` have one int per spatial axis,
``padding`` one ``(before, after)`` pair per axis. Padding is symmetric as PyTorch takes it; an
``after`` larger than ``before`` is the room that ``ceil_mode`` gives the last windows, which
average pooling never counts in its divisor.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from pullback import native
from pullback._memo import remembered
from pullback.errors import ShapeError
from pullback.registry import Op

from . import _native
from ._call import op_in
from .conv import add_windows, crop, offset_slices, offsets, pad_input, windows
from .geometry import PaddingNd, Sizes, check_number_dtype, check_output_size, check_windows


def _window_view(xp: Any, x: Any, kernel: Sizes, stride: Sizes, padding: PaddingNd,
                 dilation: Sizes, where: str) -> Any:
    """The (N, C, *kernel, *out) windows of ``x`` padded with the dtype's lowest value."""
    out_hw = check_windows(where, tuple(x.shape), kernel, stride, padding, dilation)
    check_number_dtype(where, x)
    low = -xp.inf if x.dtype.kind in "fV" else xp.iinfo(x.dtype).min
    return windows(xp, pad_input(xp, x, padding, low), kernel, stride, dilation, out_hw)


def _check_pooled(where: str, x: Any, kernel: Sizes, stride: Sizes, padding: PaddingNd,
                  dilation: Sizes, *pooled: Any) -> None:
    """Check that each of ``pooled`` (a gradient, the pooled maxima) has the pooled shape."""
    for p in pooled:
        if p.shape[:2] != x.shape[:2]:
            raise ShapeError(f"{where}: pooled shape {tuple(p.shape)} does not fit input "
                             f"{tuple(x.shape)}")
        check_output_size(where, tuple(x.shape), kernel, stride, padding, dilation,
                          tuple(p.shape[2:]))


def _at(offset: tuple[int, ...]) -> tuple[Any, ...]:
    """The index of one window offset in an (N, C, *kernel, *out) view."""
    return (slice(None), slice(None)) + offset


# The C forward pays below this many pooled values: its cost is the NumPy kernel's Python (a
# padded copy, a strided view, a call per window offset: about 10 us) at batch 1, while on
# large arrays NumPy's strided loops are as fast or faster (batch 64, one thread: 16x28x28
# planes 0.85 ms in C against 1.0, 32x14x14 planes 0.85 against 0.46).
MAX_NATIVE_POOLED = 1 << 15


def native_max_pool2d(x: Any, *, kernel_size: Sizes, stride: Sizes, padding: PaddingNd,
                      dilation: Sizes, where: str = "nn.max_pool2d") -> Any:
    """The C forward of 2-d max pooling for a float32 (N, C, H, W) NumPy array (the NumPy
    kernel's values, bit for bit) of fewer than ``MAX_NATIVE_POOLED`` pooled values, or
    ``NotImplemented`` (larger ones, other ranks and dtypes, no compiler). The geometry is
    checked first."""
    if (x.__class__ is not np.ndarray or x.dtype != np.float32 or x.ndim != 4
            or len(kernel_size) != 2):
        return NotImplemented
    plan = remembered(_PLANS, (where, x.shape, kernel_size, stride, padding, dilation), 256,
                      lambda: _plan(where, x.shape, kernel_size, stride, padding, dilation))
    if plan is None:
        return NotImplemented
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    y = np.empty(plan.out_shape, np.float32)
    native.run_rows(plan.kernel, plan.planes, plan.plane_size, native.address(x),
                    native.address(y), plan.geometry_address)
    return y


class _Plan(NamedTuple):
    """A pooling forward's call: pool.c's kernel, the pooled shape, the planes and their size
    (for run_rows), and the ``geometry`` array the kernel takes (h, w, then the window sizes)
    with its address."""

    kernel: Any
    out_shape: tuple[int, ...]
    planes: int
    plane_size: int
    geometry: np.ndarray
    geometry_address: int


def _plan(where: str, shape: tuple[int, ...], kernel_size: Sizes, stride: Sizes,
          padding: PaddingNd, dilation: Sizes) -> _Plan | None:
    """The forward's call on a geometry, checked; ``None`` from ``MAX_NATIVE_POOLED`` pooled
    values on or without a C compiler."""
    out_hw, sizes = _native.window_sizes(where, shape, kernel_size, stride, padding, dilation)
    n, c, h, w = shape
    kernel = _native._function("max_pool2d_f32", 3, 0, source="pool")
    if kernel is None or n * c * out_hw[0] * out_hw[1] >= MAX_NATIVE_POOLED:
        return None
    geometry = np.array((h, w, *sizes), np.int64)
    return _Plan(kernel, (n, c) + out_hw, n * c, h * w, geometry, native.address(geometry))


# The forward's plans, by (where, input shape, kernel, stride, padding, dilation): a batch-1
# pooling's checks and sizes cost more than its C call.
_PLANS: dict[tuple[Any, ...], _Plan | None] = {}


def native_max_pool2d_backward(g: Any, x: Any, out: Any, *, kernel_size: Sizes, stride: Sizes,
                               padding: PaddingNd, dilation: Sizes,
                               where: str = "nn.max_pool2d_backward") -> Any:
    """The C backward of 2-d max pooling for float32 (N, C, H, W) NumPy arrays (``g`` added to
    each window's first maximum in ``x``), or ``NotImplemented`` (other ranks and dtypes, small
    inputs, no compiler). The geometry and the pooled shapes are checked first."""
    if len(kernel_size) != 2:
        return NotImplemented
    check_windows(where, tuple(x.shape), kernel_size, stride, padding, dilation)
    check_number_dtype(where, x)
    _check_pooled(where, x, kernel_size, stride, padding, dilation, g, out)
    inputs = native.float32_inputs(g, x, out)
    kernel = (_native._function("max_pool2d_backward_f32", 4, 12, source="pool") if inputs
              else None)
    if kernel is None:
        return NotImplemented
    sizes = _native._geometry(where, tuple(x.shape), kernel_size, tuple(g.shape[2:]), stride,
                              padding, dilation)
    g, x, out = inputs
    n, c, h, w = x.shape
    dx = np.empty_like(x)
    native.run_rows(kernel, n * c, h * w, native.address(g), native.address(x),
                    native.address(out), native.address(dx), h, w, *sizes)
    return dx


def _max_pool_kernel(where: str) -> Any:
    def factory(xp: Any) -> Any:
        def max_pool(x: Any, *, kernel_size: Sizes, stride: Sizes, padding: PaddingNd,
                     dilation: Sizes) -> Any:
            win = _window_view(xp, x, kernel_size, stride, padding, dilation, where)
            first, *rest = offsets(kernel_size)
            best = win[_at(first)].copy()
            for offset in rest:
                xp.maximum(best, win[_at(offset)], out=best)
            return best

        if xp is np:
            def native_or_numpy(x: Any, *, kernel_size: Sizes, stride: Sizes,
                                padding: PaddingNd, dilation: Sizes) -> Any:
                y = native_max_pool2d(x, kernel_size=kernel_size, stride=stride,
                                      padding=padding, dilation=dilation, where=where)
                if y is NotImplemented:
                    return max_pool(x, kernel_size=kernel_size, stride=stride,
                                    padding=padding, dilation=dilation)
                return y

            native_or_numpy.__wrapped__ = max_pool  # type: ignore[attr-defined]
            return native_or_numpy
        return max_pool

    return factory


def _first_max_masks(xp: Any, win: Any, out: Any, kernel: Sizes) -> Any:
    """For each window offset in order, yield (offset, mask of windows whose first maximum sits
    there): equal to the max and not claimed by an earlier offset (PyTorch's tie rule)."""
    taken = None
    for offset in offsets(kernel):
        hit = win[_at(offset)] == out
        if taken is None:
            taken = hit
        else:
            hit &= ~taken
            taken |= hit
        yield offset, hit


def _max_pool_backward_kernel(where: str) -> Any:
    def factory(xp: Any) -> Any:
        def max_pool_backward(g: Any, x: Any, out: Any, *, kernel_size: Sizes, stride: Sizes,
                              padding: PaddingNd, dilation: Sizes) -> Any:
            win = _window_view(xp, x, kernel_size, stride, padding, dilation, where)
            _check_pooled(where, x, kernel_size, stride, padding, dilation, g, out)
            padded = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], padding))
            dxpad = xp.zeros(tuple(x.shape[:2]) + padded, dtype=g.dtype)
            out_hw = tuple(g.shape[2:])
            # Windows that do not overlap write disjoint positions: multiply straight into place.
            disjoint = all(s >= d * (k - 1) + 1 for s, d, k in zip(stride, dilation, kernel_size))
            for offset, hit in _first_max_masks(xp, win, out, kernel_size):
                target = dxpad[offset_slices(offset, stride, dilation, out_hw)]
                if disjoint:
                    xp.multiply(g, hit, out=target)
                else:
                    target += g * hit
            return crop(xp, dxpad, padding, tuple(x.shape[2:]))

        if xp is np:
            return native.native_first(
                lambda g, x, out, **geometry: native_max_pool2d_backward(g, x, out, where=where,
                                                                         **geometry),
                max_pool_backward)
        return max_pool_backward

    return factory


def _max_pool_select_kernel(where: str) -> Any:
    def factory(xp: Any) -> Any:
        def max_pool_select(h: Any, x: Any, out: Any, *, kernel_size: Sizes, stride: Sizes,
                            padding: PaddingNd, dilation: Sizes) -> Any:
            win = _window_view(xp, x, kernel_size, stride, padding, dilation, where)
            _check_pooled(where, x, kernel_size, stride, padding, dilation, out)
            if h.shape != x.shape:
                raise ShapeError(f"{where}: h of shape {tuple(h.shape)} must have the input's "
                                 f"shape {tuple(x.shape)}")
            values = windows(xp, pad_input(xp, h, padding), kernel_size, stride, dilation,
                             out.shape[2:])
            picked = xp.zeros(out.shape, dtype=h.dtype)
            for offset, hit in _first_max_masks(xp, win, out, kernel_size):
                xp.copyto(picked, values[_at(offset)], where=hit)
            return picked

        return max_pool_select

    return factory


def _max_pool_indices_kernel(where: str) -> Any:
    def factory(xp: Any) -> Any:
        def max_pool_indices(x: Any, out: Any, *, kernel_size: Sizes, stride: Sizes,
                             padding: PaddingNd, dilation: Sizes) -> Any:
            win = _window_view(xp, x, kernel_size, stride, padding, dilation, where)
            _check_pooled(where, x, kernel_size, stride, padding, dilation, out)
            spatial, out_hw = tuple(x.shape[2:]), tuple(out.shape[2:])
            rank = len(spatial)
            # Flat index (row-major over the spatial axes) of each window's first position.
            row_sizes = [math.prod(spatial[a + 1:]) for a in range(rank)]
            start = xp.zeros((1, 1) + out_hw, dtype=xp.int64)
            for a in range(rank):
                first = xp.arange(out_hw[a], dtype=xp.int64) * stride[a] - padding[a][0]
                start = start + (first * row_sizes[a]).reshape(
                    (1, 1) + tuple(-1 if b == a else 1 for b in range(rank)))
            indices = xp.zeros(out.shape, dtype=xp.int64)
            for offset, hit in _first_max_masks(xp, win, out, kernel_size):
                step = sum(o * d * r for o, d, r in zip(offset, dilation, row_sizes))
                xp.copyto(indices, start + step, where=hit)
            return indices

        return max_pool_indices

    return factory


def _declare_max(rank: int) -> tuple[Op, Op, Op, Op]:
    name = f"nn.max_pool{rank}d"
    pool = Op(name, _max_pool_kernel(name), save_output=True,
              doc=f"max over {rank}-d windows")
    backward = Op(f"{name}_backward", _max_pool_backward_kernel(f"{name}_backward"),
                  doc="g(out) spread back to each window's first max in x")
    select = Op(f"{name}_select", _max_pool_select_kernel(f"{name}_select"),
                doc="h read at each window's first max in x (adjoint of the backward)")
    indices = Op(f"{name}_indices", _max_pool_indices_kernel(f"{name}_indices"),
                 differentiable=False,
                 doc="flat index of each window's first max in x (return_indices)")

    @pool.def_grad
    def _max_pool_grad(F: Any, g: Any, out: Any, x: Any, **geometry: Any) -> Any:
        return (op_in(F, backward)(g, x, out, **geometry),)

    @backward.def_grad
    def _max_pool_backward_grad(F: Any, h: Any, out: Any, g: Any, x: Any, pooled: Any,
                                **geometry: Any) -> Any:
        # x and the pooled maxima only say *where* the maxima are: piecewise constant.
        return (op_in(F, select)(h, x, pooled, **geometry), None, None)

    @select.def_grad
    def _max_pool_select_grad(F: Any, g: Any, out: Any, h: Any, x: Any, pooled: Any,
                              **geometry: Any) -> Any:
        return (op_in(F, backward)(g, x, pooled, **geometry), None, None)

    return pool, backward, select, indices


MAX_POOL2D, MAX_POOL2D_BACKWARD, MAX_POOL2D_SELECT, MAX_POOL2D_INDICES = _declare_max(2)
MAX_POOL3D, MAX_POOL3D_BACKWARD, MAX_POOL3D_SELECT, MAX_POOL3D_INDICES = _declare_max(3)


def _divisor(xp: Any, where: str, shape: tuple[int, ...], kernel: Sizes, stride: Sizes,
             padding: PaddingNd, count_include_pad: bool, divisor_override: int | None,
             dtype: Any) -> Any:
    """What each window's sum is divided by: ``divisor_override``; or the number of the
    window's positions inside the input and, with ``count_include_pad``, its explicit padding
    (never the room ``ceil_mode`` adds), as PyTorch counts."""
    if divisor_override is not None:
        return divisor_override
    spatial = tuple(shape[2:])
    if count_include_pad and all(lo == hi for lo, hi in padding):
        return math.prod(kernel)
    out_hw = check_windows(where, tuple(shape), kernel, stride, padding, (1,) * len(kernel))
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(spatial, padding))
    counted = xp.zeros((1, 1) + padded, dtype=dtype)
    if count_include_pad:
        region = tuple(slice(0, min(s + 2 * lo, s + lo + hi)) for s, (lo, hi) in zip(spatial, padding))
    else:
        region = tuple(slice(lo, lo + s) for s, (lo, _) in zip(spatial, padding))
    counted[(slice(None), slice(None)) + region] = 1
    return _window_sums(xp, counted, kernel, stride, out_hw)


def _window_sums(xp: Any, xpad: Any, kernel: Sizes, stride: Sizes, out_hw: Sizes) -> Any:
    """Sum over each window (N, C, *out): one strided add per kernel offset (faster than a
    reduction over a strided view)."""
    win = windows(xp, xpad, kernel, stride, (1,) * len(kernel), out_hw)
    first, *rest = offsets(kernel)
    total = win[_at(first)].copy()
    for offset in rest:
        total += win[_at(offset)]
    return total


def _avg_pool_kernel(where: str) -> Any:
    def factory(xp: Any) -> Any:
        def avg_pool(x: Any, *, kernel_size: Sizes, stride: Sizes, padding: PaddingNd,
                     count_include_pad: bool, divisor_override: int | None = None) -> Any:
            out_hw = check_windows(where, tuple(x.shape), kernel_size, stride, padding,
                                   (1,) * len(kernel_size))
            check_number_dtype(where, x, floating_only=True)
            total = _window_sums(xp, pad_input(xp, x, padding), kernel_size, stride, out_hw)
            total /= _divisor(xp, where, x.shape, kernel_size, stride, padding,
                              count_include_pad, divisor_override, x.dtype)
            return total

        return avg_pool

    return factory


def _avg_pool_grad_kernel(where: str) -> Any:
    def factory(xp: Any) -> Any:
        def avg_pool_grad(g: Any, *, input_shape: tuple[int, ...], kernel_size: Sizes,
                          stride: Sizes, padding: PaddingNd, count_include_pad: bool,
                          divisor_override: int | None = None) -> Any:
            rank = len(kernel_size)
            check_output_size(where, tuple(input_shape), kernel_size, stride, padding,
                              (1,) * rank, tuple(g.shape[2:]))
            check_number_dtype(where, g, floating_only=True)
            share = g / _divisor(xp, where, input_shape, kernel_size, stride, padding,
                                 count_include_pad, divisor_override, g.dtype)
            spatial = tuple(input_shape[2:])
            padded = tuple(s + lo + hi for s, (lo, hi) in zip(spatial, padding))
            dxpad = xp.zeros(tuple(input_shape[:2]) + padded, dtype=g.dtype)
            spread = (slice(None), slice(None)) + (None,) * rank
            cols = xp.broadcast_to(share[spread],
                                   tuple(g.shape[:2]) + tuple(kernel_size) + g.shape[2:])
            add_windows(xp, dxpad, cols, stride, (1,) * rank)
            return crop(xp, dxpad, padding, spatial)

        return avg_pool_grad

    return factory


def _declare_avg(rank: int) -> tuple[Op, Op]:
    name = f"nn.avg_pool{rank}d"
    pool = Op(name, _avg_pool_kernel(name), save_inputs=False,
              doc=f"mean over {rank}-d windows")
    grad = Op(f"{name}_grad", _avg_pool_grad_kernel(f"{name}_grad"), save_inputs=False,
              doc=f"adjoint of avg_pool{rank}d (spreads each output back over its window)")

    @pool.def_grad
    def _avg_pool_grad(F: Any, g: Any, out: Any, x: Any, **attrs: Any) -> Any:
        return (op_in(F, grad)(g, input_shape=tuple(x.shape), **attrs),)

    @grad.def_grad
    def _avg_pool_grad_grad(F: Any, h: Any, out: Any, g: Any, *, input_shape: Any,
                            **attrs: Any) -> Any:
        return (op_in(F, pool)(h, **attrs),)

    return pool, grad


AVG_POOL2D, AVG_POOL2D_GRAD = _declare_avg(2)
AVG_POOL3D, AVG_POOL3D_GRAD = _declare_avg(3)
