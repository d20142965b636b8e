"""Spatial transformers: ``affine_grid`` (a sampling grid from affine matrices) and
``grid_sample`` (read an input at a grid's points), in 2-d and 3-d, PyTorch's conventions.

``grid_sample`` is written with differentiable ops: each point's neighbours are gathered from
the flattened input (whose gradient scatter-adds back) and weighted by polynomials of the
point's coordinates (whose gradient is the grid's), the coordinate rules (unnormalization,
border clipping, reflection) being ATen's ``GridSampler.h``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

import pullback
from pullback._autocast_policy import autocast_function
from pullback.errors import ArgumentError, ShapeError
from pullback.tensor import Tensor

from .._checks import expect_float

_CUBIC_A = -0.75


def _base_coordinates(size: int, align_corners: bool, like: Tensor) -> Tensor:
    """The normalized coordinates of ``size`` pixels' centres (-1 and 1 at the corner pixels'
    centres with ``align_corners``, at the image's edges otherwise)."""
    if size == 1:
        values = np.zeros(1)
    else:
        values = np.linspace(-1.0, 1.0, size)
        if not align_corners:
            values = values * (size - 1) / size
    return pullback.tensor(values, dtype=like.dtype, device=like.device)


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None) -> Tensor:
    """The sampling grid (N, H, W, 2) of affine maps ``theta`` (N, 2, 3) for an output of
    ``size`` (N, C, H, W), or (N, D, H, W, 3) of ``theta`` (N, 3, 4) for (N, C, D, H, W); the
    last axis holds (x, y[, z]), as :func:`grid_sample` reads it."""
    where = "affine_grid"
    expect_float(where, theta)
    size = tuple(int(s) for s in size)
    rank = len(size) - 2
    if rank not in (2, 3) or tuple(theta.shape) != (size[0], rank, rank + 1):
        raise ShapeError(f"{where}: theta of shape {tuple(theta.shape)} does not fit size "
                         f"{size} (2-d: theta (N, 2, 3), size (N, C, H, W); 3-d: (N, 3, 4) and "
                         "(N, C, D, H, W))")
    if min(size[2:]) < 1:
        raise ShapeError(f"{where}: size {size} has an empty spatial axis")
    spatial = size[2:]
    # columns x (last axis), y, z, then 1; broadcast over the output grid
    axes = [_base_coordinates(s, bool(align_corners), theta) for s in reversed(spatial)]
    columns = []
    for a, coords in enumerate(axes):
        shape = [1] * rank
        shape[rank - 1 - a] = spatial[rank - 1 - a]
        columns.append(coords.reshape(shape).expand(*spatial))
    columns.append(pullback.ones(*spatial, dtype=theta.dtype, device=theta.device))
    base = pullback.stack(columns, axis=-1).reshape(1, -1, rank + 1)
    grid = base @ theta.mT
    return grid.reshape((size[0],) + spatial + (rank,))


def _unnormalize(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """ATen's ``reflect_coordinates``: mirror ``coord`` into [low, high] (given doubled)."""
    if twice_low == twice_high:
        return coord * 0
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    distance = pullback.abs(coord - low)
    extra = pullback.fmod(distance, span)
    flips = pullback.floor(distance.detach() / span)
    even = pullback.remainder(flips, 2) == 0
    return pullback.where(even, extra + low, span - extra + low)


def _apply_padding(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """ATen's ``compute_coordinates``: border clips to the image, reflection mirrors then
    clips; zeros leaves coordinates as they are (out-of-bounds taps read 0)."""
    if padding_mode == "border":
        return pullback.clamp(coord, 0, size - 1)
    if padding_mode == "reflection":
        if align_corners:
            coord = _reflect(coord, 0, 2 * (size - 1))
        else:
            coord = _reflect(coord, -1, 2 * size - 1)
        return pullback.clamp(coord, 0, size - 1)
    return coord


def _gather(flat: Tensor, spatial: tuple[int, ...], taps: list[Tensor]) -> Tensor:
    """``input[n, :, taps...]`` for integer tap coordinates (N, P) per axis, 0 outside."""
    inside = None
    index = None
    for coord, size in zip(taps, spatial):
        ok = (coord >= 0) & (coord <= size - 1)
        inside = ok if inside is None else inside & ok
        clipped = pullback.clamp(coord, 0, size - 1).to("int64")
        index = clipped if index is None else index * size + clipped
    values = pullback.take_along_axis(flat, index.unsqueeze(1), axis=2)
    return values * inside.unsqueeze(1).to(flat.dtype)


def _cubic_weights(t: Tensor) -> list[Tensor]:
    a = _CUBIC_A

    def near(x: Tensor) -> Tensor:
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: Tensor) -> Tensor:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


@autocast_function("grid_sample")
def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Sample (N, C, H, W) at the points of ``grid`` (N, Ho, Wo, 2), whose last axis holds
    normalized (x, y) in [-1, 1]; or (N, C, D, H, W) at (N, Do, Ho, Wo, 3).

    ``mode``: ``"bilinear"`` (trilinear in 3-d), ``"nearest"`` (ties to even) or ``"bicubic"``
    (2-d). ``padding_mode`` for points outside: ``"zeros"``, ``"border"`` (the edge value),
    ``"reflection"``. Gradients flow to the input and to the grid.
    """
    where = "grid_sample"
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ArgumentError(f"{where}: mode must be 'bilinear', 'nearest' or 'bicubic', got "
                            f"{mode!r}")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ArgumentError(f"{where}: padding_mode must be 'zeros', 'border' or 'reflection', "
                            f"got {padding_mode!r}")
    expect_float(where, input)
    rank = input.ndim - 2
    if rank not in (2, 3) or grid.ndim != input.ndim or grid.shape[0] != input.shape[0] \
            or grid.shape[-1] != rank:
        raise ShapeError(f"{where}: input of shape {tuple(input.shape)} and grid of shape "
                         f"{tuple(grid.shape)} do not fit ((N, C, H, W) with (N, Ho, Wo, 2), "
                         "or (N, C, D, H, W) with (N, Do, Ho, Wo, 3))")
    if mode == "bicubic" and rank != 2:
        raise ArgumentError(f"{where}: mode='bicubic' needs a 4-d input, got shape "
                            f"{tuple(input.shape)}")
    if grid.dtype != input.dtype:
        raise ShapeError(f"{where}: grid has dtype {grid.dtype}, input {input.dtype}")
    align = bool(align_corners)
    n, c = input.shape[:2]
    spatial = tuple(input.shape[2:])
    out_spatial = tuple(grid.shape[1:-1])
    points = grid.reshape(n, -1, rank)
    flat = input.reshape(n, c, -1)
    # grid's last axis is (x, y[, z]): the input's axes from the last
    coords = [_unnormalize(points[..., rank - 1 - a], spatial[a], align) for a in range(rank)]
    if mode == "bicubic":
        out = _bicubic(flat, spatial, coords, padding_mode, align)
    else:
        coords = [_apply_padding(x, s, padding_mode, align) for x, s in zip(coords, spatial)]
        if mode == "nearest":
            out = _gather(flat, spatial, [pullback.round(x.detach()) for x in coords])
        else:
            out = _linear(flat, spatial, coords)
    return out.reshape((n, c) + out_spatial)


def _linear(flat: Tensor, spatial: tuple[int, ...], coords: list[Tensor]) -> Tensor:
    lows = [pullback.floor(x.detach()) for x in coords]
    fracs = [x - low for x, low in zip(coords, lows)]
    out = None
    for corner in range(2 ** len(spatial)):
        bits = [(corner >> (len(spatial) - 1 - a)) & 1 for a in range(len(spatial))]
        weight = None
        for bit, frac in zip(bits, fracs):
            w = frac if bit else 1 - frac
            weight = w if weight is None else weight * w
        value = _gather(flat, spatial, [low + bit for low, bit in zip(lows, bits)])
        term = value * weight.unsqueeze(1)
        out = term if out is None else out + term
    return out


def _bicubic(flat: Tensor, spatial: tuple[int, ...], coords: list[Tensor], padding_mode: str,
             align: bool) -> Tensor:
    # ATen pads each tap's integer coordinate, not the point's: the weights see the raw point.
    (h, w), (y, x) = spatial, coords
    y0, x0 = pullback.floor(y.detach()), pullback.floor(x.detach())
    wy, wx = _cubic_weights(y - y0), _cubic_weights(x - x0)
    out = None
    for i in range(4):
        ty = _apply_padding(y0 + (i - 1), h, padding_mode, align)
        for j in range(4):
            tx = _apply_padding(x0 + (j - 1), w, padding_mode, align)
            value = _gather(flat, spatial, [ty, tx])
            term = value * (wy[i] * wx[j]).unsqueeze(1)
            out = term if out is None else out + term
    return out
