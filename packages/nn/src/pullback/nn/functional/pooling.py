"""Pooling over 1, 2 and 3 spatial axes: max and average pooling (fused ops; 1-d runs as 2-d of
height 1) with ``ceil_mode``, ``count_include_pad``, ``divisor_override`` and
``return_indices``; power-average (LP) pooling; and max unpooling. Adaptive pooling lives in
:mod:`.adaptive`."""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import Any, Mapping, Sequence

import pullback
from pullback._memo import remembered
from pullback.dispatch import apply
from pullback.errors import ArgumentError, ShapeError
from pullback.tensor import Tensor

from .._checks import expect_integer, expect_ndim, ntuple
from .._ops.geometry import check_geometry, check_number_dtype, check_windows
from .._ops.pool import (
    AVG_POOL2D, AVG_POOL3D, MAX_POOL2D, MAX_POOL2D_INDICES, MAX_POOL3D, MAX_POOL3D_INDICES,
)
from .activation import relu

# The ops of each spatial rank; 1-d pooling runs as 2-d pooling of height 1.
_MAX = {2: MAX_POOL2D, 3: MAX_POOL3D}
_MAX_INDICES = {2: MAX_POOL2D_INDICES, 3: MAX_POOL3D_INDICES}
_AVG = {2: AVG_POOL2D, 3: AVG_POOL3D}


def _ceil_room(size: int, k: int, stride: int, pad: int, dilation: int) -> int:
    """How much further than the padding the last window of ``ceil_mode`` reaches: PyTorch
    rounds the window count up, but drops a last window that would start in the right padding."""
    reach = dilation * (k - 1) + 1
    out = -(-(size + 2 * pad - reach) // stride) + 1
    if (out - 1) * stride >= size + pad:
        out -= 1
    return max(0, (out - 1) * stride + reach - (size + 2 * pad))


# Geometries checked before, by everything they depend on: a model pools tensors of one shape
# with one set of arguments every step, and the checks below are a quarter of a batch-1 LeNet's
# forward (about 25 us of 225, one thread). Only hashable arguments (ints, tuples) are kept.
_CHECKED: dict[tuple[Any, ...], Mapping[str, Any]] = {}
_MAX_CHECKED = 256


def pool_geometry(where: str, rank: int, x: Tensor, kernel_size: Any, stride: Any,
                  padding: Any, dilation: Any = 1, ceil_mode: bool = False,
                  floating_only: bool = False) -> Mapping[str, Any]:
    """The checked attributes of a pooling op over ``x`` (N, C, *spatial), as the op takes them:
    ``stride`` defaults to the kernel size, padding is at most half the kernel, and
    ``ceil_mode`` becomes extra room after the last axis entries. The mapping is the one kept
    for these arguments, read-only: callers copy it to change it."""
    key = (where, rank, tuple(x.shape), x.dtype, kernel_size, stride, padding, dilation,
           ceil_mode, floating_only)  # (the logical shape under vmap, not the array's)
    return remembered(_CHECKED, key, _MAX_CHECKED, lambda: _pool_geometry(
        where, rank, x, kernel_size, stride, padding, dilation, ceil_mode, floating_only))


def _pool_geometry(where: str, rank: int, x: Tensor, kernel_size: Any, stride: Any,
                   padding: Any, dilation: Any, ceil_mode: bool,
                   floating_only: bool) -> Mapping[str, Any]:
    expect_ndim(where, x, (rank + 2,))
    check_number_dtype(where, x, floating_only)
    kernel = ntuple(kernel_size, rank, where, "kernel_size")
    no_stride = stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0)
    step = kernel if no_stride else ntuple(stride, rank, where, "stride")
    pad = ntuple(padding, rank, where, "padding")
    dil = ntuple(dilation, rank, where, "dilation")
    check_geometry(where, kernel, step, tuple((p, p) for p in pad), dil)
    if any(p > k // 2 for p, k in zip(pad, kernel)):
        raise ArgumentError(f"{where}: padding {pad} must be at most half the kernel size "
                            f"{kernel}")
    room = [_ceil_room(s, k, st, p, d) if ceil_mode else 0
            for s, k, st, p, d in zip(x.shape[2:], kernel, step, pad, dil)]
    pads = tuple((p, p + r) for p, r in zip(pad, room))
    check_windows(where, tuple(x.shape), kernel, step, pads, dil)
    return MappingProxyType(dict(kernel_size=kernel, stride=step, padding=pads, dilation=dil))


def _lift(geometry: Mapping[str, Any]) -> dict[str, Any]:
    """1-d attributes as the 2-d op's (a height-1 image, a height-1 window)."""
    return {k: ((0, 0) if k == "padding" else 1,) + v if isinstance(v, tuple) else v
            for k, v in geometry.items()}


def _pool(where: str, rank: int, ops: dict[int, Any], x: Tensor, **attrs: Any) -> Tensor:
    """Run the ``rank``-d pooling op ``ops[rank]`` (``ops[2]`` on a height-1 image in 1-d)."""
    if rank == 1:
        return apply(ops[2], x.unsqueeze(2), **_lift(attrs)).squeeze(2)
    return apply(ops[rank], x, **attrs)


def _max_pool(where: str, rank: int, input: Tensor, kernel_size: Any, stride: Any,
              padding: Any, dilation: Any, ceil_mode: bool, return_indices: bool) -> Any:
    if input.ndim == rank + 1:  # one unbatched sample
        out = _max_pool(where, rank, input.unsqueeze(0), kernel_size, stride, padding,
                        dilation, ceil_mode, return_indices)
        return (out[0][0], out[1][0]) if return_indices else out[0]
    geometry = pool_geometry(where, rank, input, kernel_size, stride, padding, dilation,
                             bool(ceil_mode))
    out = apply(_MAX[rank], input, **geometry) if rank > 1 else _pool(where, rank, _MAX, input,
                                                                       **geometry)
    if not return_indices:
        return out
    if rank == 1:
        indices = apply(_MAX_INDICES[2], input.unsqueeze(2), out.unsqueeze(2),
                        **_lift(geometry)).squeeze(2)
    else:
        indices = apply(_MAX_INDICES[rank], input, out, **geometry)
    return out, indices


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over windows of (N, C, L); the gradient goes to each window's first maximum. With
    ``return_indices`` also the position of each maximum (for :func:`max_unpool1d`)."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over windows of (N, C, H, W); the gradient goes to each window's first maximum.
    With ``return_indices`` also the flat position (``h * W + w``) of each maximum."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over windows of (N, C, D, H, W); the gradient goes to each window's first maximum.
    With ``return_indices`` also the flat position (``(d * H + h) * W + w``) of each maximum."""
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def _avg_pool(where: str, rank: int, input: Tensor, kernel_size: Any, stride: Any,
              padding: Any, ceil_mode: bool, count_include_pad: bool,
              divisor_override: int | None) -> Tensor:
    if input.ndim == rank + 1:  # one unbatched sample
        return _avg_pool(where, rank, input.unsqueeze(0), kernel_size, stride, padding,
                         ceil_mode, count_include_pad, divisor_override)[0]
    if divisor_override is not None and (not isinstance(divisor_override, int)
                                         or divisor_override == 0):
        raise ArgumentError(f"{where}: divisor_override must be a non-zero int, got "
                            f"{divisor_override!r}")
    geometry = dict(pool_geometry(where, rank, input, kernel_size, stride, padding, 1,
                                  bool(ceil_mode), floating_only=True))
    del geometry["dilation"]
    return _pool(where, rank, _AVG, input, count_include_pad=bool(count_include_pad),
                 divisor_override=divisor_override, **geometry)


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """Mean over windows of (N, C, L); padded zeros count unless ``count_include_pad`` is
    false (the room ``ceil_mode`` adds never counts)."""
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean over windows of (N, C, H, W); padded zeros count unless ``count_include_pad`` is
    false; ``divisor_override`` replaces the window size as the divisor."""
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean over windows of (N, C, D, H, W); padded zeros count unless ``count_include_pad``
    is false; ``divisor_override`` replaces the window size as the divisor."""
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


_AVG_OF_RANK = {1: avg_pool1d, 2: avg_pool2d, 3: avg_pool3d}


def _lp_pool(where: str, rank: int, input: Tensor, norm_type: float, kernel_size: Any,
             stride: Any, ceil_mode: bool) -> Tensor:
    kernel = ntuple(kernel_size, rank, where, "kernel_size")
    mean = _AVG_OF_RANK[rank](input.pow(norm_type), kernel, stride, 0, ceil_mode)
    # PyTorch's formula, kept as is so that values and gradients match at 0 as well.
    return (pullback.sign(mean) * relu(pullback.abs(mean))).mul(math.prod(kernel)).pow(
        1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling ``(sum x^p)^(1/p)`` over windows of (N, C, L)."""
    return _lp_pool("lp_pool1d", 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling ``(sum x^p)^(1/p)`` over windows of (N, C, H, W)."""
    return _lp_pool("lp_pool2d", 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling ``(sum x^p)^(1/p)`` over windows of (N, C, D, H, W)."""
    return _lp_pool("lp_pool3d", 3, input, norm_type, kernel_size, stride, ceil_mode)


def _max_unpool(where: str, rank: int, input: Tensor, indices: Tensor, kernel_size: Any,
                stride: Any, padding: Any, output_size: Sequence[int] | None) -> Tensor:
    if input.ndim == rank + 1:  # one unbatched sample
        return _max_unpool(where, rank, input.unsqueeze(0), indices.unsqueeze(0), kernel_size,
                           stride, padding, output_size)[0]
    expect_ndim(where, input, (rank + 2,))
    expect_integer(where, indices)
    if tuple(indices.shape) != tuple(input.shape):
        raise ShapeError(f"{where}: indices of shape {tuple(indices.shape)} must have the "
                         f"input's shape {tuple(input.shape)}")
    kernel = ntuple(kernel_size, rank, where, "kernel_size")
    step = kernel if stride is None else ntuple(stride, rank, where, "stride")
    pad = ntuple(padding, rank, where, "padding")
    default = tuple((s - 1) * st - 2 * p + k
                    for s, st, p, k in zip(input.shape[2:], step, pad, kernel))
    if output_size is None:
        spatial = default
    else:
        spatial = tuple(int(s) for s in output_size)[-rank:]
        if len(output_size) not in (rank, rank + 2):
            raise ShapeError(f"{where}: output_size must have {rank} or {rank + 2} elements, "
                             f"got {list(output_size)}")
        if any(not d - st < s < d + st for s, d, st in zip(spatial, default, step)):
            raise ShapeError(f"{where}: output_size {list(spatial)} is not within one stride "
                             f"{step} of the default size {list(default)}")
    n, c = input.shape[:2]
    size = math.prod(spatial)
    flat = indices.reshape(n, c, -1)
    if flat.numel() and (int(flat.array.min()) < 0 or int(flat.array.max()) >= size):
        raise ShapeError(f"{where}: indices must lie in [0, {size}) for an output of spatial "
                         f"size {spatial}, got [{int(flat.array.min())}, "
                         f"{int(flat.array.max())}]")
    out = pullback.zeros(n, c, size, dtype=input.dtype, device=input.device)
    out = pullback.scatter_add(out, 2, flat.to("int64"), input.reshape(n, c, -1))
    return out.reshape((n, c) + spatial)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Sequence[int] | None = None) -> Tensor:
    """The inverse of :func:`max_pool1d` with ``return_indices``: each value put back at its
    index, zeros elsewhere."""
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Sequence[int] | None = None) -> Tensor:
    """The inverse of :func:`max_pool2d` with ``return_indices``: each value put back at its
    flat index, zeros elsewhere."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Sequence[int] | None = None) -> Tensor:
    """The inverse of :func:`max_pool3d` with ``return_indices``: each value put back at its
    flat index, zeros elsewhere."""
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding,
                       output_size)
