"""Rearranging windows and pixels: ``unfold`` (im2col) and ``fold`` (col2im), the fused
``nn.im2col``/``nn.col2im`` ops, and ``pixel_shuffle``/``pixel_unshuffle`` (a reshape and a
permutation)."""

from __future__ import annotations

import math
from typing import Any

from pullback.dispatch import apply
from pullback.errors import ArgumentError, ShapeError
from pullback.tensor import Tensor

from .._checks import expect_ndim, ntuple
from .._ops.geometry import check_geometry, check_number_dtype, check_windows
from .._ops.unfold import COL2IM, IM2COL


def _geometry(where: str, kernel_size: Any, dilation: Any, padding: Any,
              stride: Any) -> dict[str, Any]:
    kernel = ntuple(kernel_size, 2, where, "kernel_size")
    pads = tuple((p, p) for p in ntuple(padding, 2, where, "padding"))
    geometry = dict(kernel_size=kernel, stride=ntuple(stride, 2, where, "stride"),
                    padding=pads, dilation=ntuple(dilation, 2, where, "dilation"))
    check_geometry(where, geometry["kernel_size"], geometry["stride"], pads,
                   geometry["dilation"])
    return geometry


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
           stride: Any = 1) -> Tensor:
    """The sliding windows of (N, C, H, W) as columns: (N, C * kh * kw, L) with L the number of
    windows (PyTorch's ``F.unfold``; a 3-d input is one image)."""
    where = "unfold"
    if input.ndim == 3:
        return unfold(input.unsqueeze(0), kernel_size, dilation, padding, stride)[0]
    expect_ndim(where, input, (4,))
    check_number_dtype(where, input)
    geometry = _geometry(where, kernel_size, dilation, padding, stride)
    check_windows(where, tuple(input.shape), geometry["kernel_size"], geometry["stride"],
                  geometry["padding"], geometry["dilation"])
    cols = apply(IM2COL, input, **geometry)
    n, c, kh, kw, ho, wo = cols.shape
    return cols.reshape(n, c * kh * kw, ho * wo)


def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1,
         padding: Any = 0, stride: Any = 1) -> Tensor:
    """The inverse arrangement of :func:`unfold`: columns (N, C * kh * kw, L) summed back into
    an (N, C, *output_size) image, overlapping windows adding up (PyTorch's ``F.fold``)."""
    where = "fold"
    if input.ndim == 2:
        return fold(input.unsqueeze(0), output_size, kernel_size, dilation, padding, stride)[0]
    expect_ndim(where, input, (3,))
    check_number_dtype(where, input)
    geometry = _geometry(where, kernel_size, dilation, padding, stride)
    size = ntuple(output_size, 2, where, "output_size")
    kh, kw = geometry["kernel_size"]
    n, rows, length = input.shape
    if rows % (kh * kw):
        raise ShapeError(f"{where}: input of shape {tuple(input.shape)} has {rows} rows, not a "
                         f"multiple of the kernel's {kh * kw} positions")
    c = rows // (kh * kw)
    shape = (n, c) + size
    windows = check_windows(where, shape, geometry["kernel_size"], geometry["stride"],
                            geometry["padding"], geometry["dilation"])
    if math.prod(windows) != length:
        raise ShapeError(f"{where}: an output of size {size} has {math.prod(windows)} windows "
                         f"{windows}, but the input of shape {tuple(input.shape)} has {length} "
                         "columns")
    cols = input.reshape((n, c, kh, kw) + tuple(windows))
    return apply(COL2IM, cols, input_shape=shape, **geometry)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C * r^2, H, W) -> (*, C, H * r, W * r): sub-pixel convolution's rearrangement."""
    r = _factor("pixel_shuffle", upscale_factor, "upscale_factor")
    if input.ndim < 3 or input.shape[-3] % (r * r):
        raise ShapeError(f"pixel_shuffle: input of shape {tuple(input.shape)} needs at least 3 "
                         f"dims and channels divisible by upscale_factor^2 = {r * r}")
    *lead, c, h, w = input.shape
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    k = len(lead)
    x = x.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H * r, W * r) -> (*, C * r^2, H, W): the inverse of :func:`pixel_shuffle`."""
    r = _factor("pixel_unshuffle", downscale_factor, "downscale_factor")
    if input.ndim < 3 or input.shape[-2] % r or input.shape[-1] % r:
        raise ShapeError(f"pixel_unshuffle: input of shape {tuple(input.shape)} needs at least 3 "
                         f"dims and a height and width divisible by downscale_factor = {r}")
    *lead, c, h, w = input.shape
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    k = len(lead)
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the channels of (N, C, *) from ``groups`` groups: channel ``g * (C / groups)
    + i`` moves to ``i * groups + g`` (ShuffleNet's channel shuffle)."""
    g = _factor("channel_shuffle", groups, "groups")
    if input.ndim < 3 or input.shape[1] % g:
        raise ShapeError(f"channel_shuffle: input of shape {tuple(input.shape)} needs at least 3 "
                         f"dims and channels divisible by groups = {g}")
    n, c, *rest = input.shape
    x = input.reshape(n, g, c // g, *rest).swapaxes(1, 2)
    return x.reshape(n, c, *rest)


def _factor(where: str, value: Any, name: str) -> int:
    (r,) = ntuple(value, 1, where, name)
    if r < 1:
        raise ArgumentError(f"{where}: {name} must be positive, got {value}")
    return r
