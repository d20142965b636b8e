"""``interpolate`` (and ``upsample``): resizing (N, C, *spatial) inputs with PyTorch's modes and
coordinate rules.

Every mode but ``area`` is separable: each spatial axis is resampled in turn, output ``i``
reading input entries ``idx[i, t]`` with weights ``w[i, t]`` (1 tap for nearest, 2 for linear, 4
for cubic), as ``sum_t index_select(x, axis, idx[:, t]) * w[:, t]`` whose gradient scatter-adds
back. The index and weight tables follow ATen's ``UpSample.h`` exactly, in the input's precision
(nearest's in float32, as ATen computes them), so that float64 results agree to rounding.
``area`` is adaptive average pooling.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

import numpy as np

import pullback
from pullback.errors import ArgumentError, ShapeError, UnsupportedError
from pullback.tensor import Tensor

from .adaptive import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d

_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")
# The input rank each interpolating mode takes (nearest and area take any of 3, 4 and 5).
_RANK_OF_MODE = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}
_CUBIC_A = -0.75


def _scale(in_size: int, out_size: int, scale: float | None, align_corners: bool,
           dtype: Any) -> Any:
    """ATen's ``area_pixel_compute_scale``: input pixels per output pixel."""
    if align_corners:
        return dtype((in_size - 1) / (out_size - 1)) if out_size > 1 else dtype(0)
    if scale is not None and scale > 0:
        return dtype(1.0 / scale)
    return dtype(in_size) / dtype(out_size)


def _source(out_size: int, scale: Any, align_corners: bool, dtype: Any) -> np.ndarray:
    """ATen's ``area_pixel_compute_source_index`` before clamping: the real input coordinate of
    each output pixel."""
    dst = np.arange(out_size, dtype=dtype)
    if align_corners:
        return scale * dst
    return scale * (dst + dtype(0.5)) - dtype(0.5)


def _nearest_taps(in_size: int, out_size: int, scale: float | None,
                  exact: bool) -> tuple[np.ndarray, np.ndarray]:
    if not exact and out_size == in_size:
        idx = np.arange(out_size)
    elif not exact and out_size == 2 * in_size:
        idx = np.arange(out_size) >> 1
    else:
        s = _scale(in_size, out_size, scale, False, np.float32)
        dst = np.arange(out_size, dtype=np.float32) + (np.float32(0.5) if exact else 0)
        idx = np.minimum(np.floor(dst * s).astype(np.int64), in_size - 1)
    return idx[:, None], np.ones((out_size, 1))


def _linear_taps(in_size: int, out_size: int, scale: float | None, align_corners: bool,
                 dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    src = _source(out_size, _scale(in_size, out_size, scale, align_corners, dtype),
                  align_corners, dtype)
    src = np.maximum(src, dtype(0))
    low = src.astype(np.int64)
    high = low + (low < in_size - 1)
    frac = src - low.astype(dtype)
    return np.stack([low, high], 1), np.stack([1 - frac, frac], 1)


def _cubic_taps(in_size: int, out_size: int, scale: float | None, align_corners: bool,
                dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    src = _source(out_size, _scale(in_size, out_size, scale, align_corners, dtype),
                  align_corners, dtype)
    low = np.floor(src)
    t = src - low
    a = dtype(_CUBIC_A)

    def near(x: np.ndarray) -> np.ndarray:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: np.ndarray) -> np.ndarray:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weights = np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], 1)
    idx = np.clip(low.astype(np.int64)[:, None] + np.arange(-1, 3), 0, in_size - 1)
    return idx, weights


def _resample_axis(x: Tensor, axis: int, out_size: int, mode: str, align_corners: bool,
                   scale: float | None) -> Tensor:
    in_size = x.shape[axis]
    dtype = np.float64 if x.dtype == np.float64 else np.float32
    if mode in ("nearest", "nearest-exact"):
        idx, w = _nearest_taps(in_size, out_size, scale, mode == "nearest-exact")
    elif mode == "bicubic":
        idx, w = _cubic_taps(in_size, out_size, scale, align_corners, dtype)
    else:
        idx, w = _linear_taps(in_size, out_size, scale, align_corners, dtype)
    along = (out_size,) + (1,) * (x.ndim - 1 - axis)
    out = None
    for t in range(idx.shape[1]):
        taken = pullback.index_select(x, axis, pullback.tensor(idx[:, t], device=x.device))
        if mode not in ("nearest", "nearest-exact"):
            taken = taken * pullback.tensor(w[:, t].reshape(along), dtype=x.dtype,
                                            device=x.device)
        out = taken if out is None else out + taken
    return out


def _output_size(x: Tensor, rank: int, size: Any, scale_factor: Any) -> tuple[tuple[int, ...],
                                                                              tuple[Any, ...]]:
    """(output sizes, scale factors or Nones) from ``size`` or ``scale_factor``."""
    if (size is None) == (scale_factor is None):
        raise ArgumentError("interpolate: give exactly one of size and scale_factor")
    if size is not None:
        sizes = (size,) * rank if isinstance(size, int) else tuple(size)
        if len(sizes) != rank:
            raise ShapeError(f"interpolate: size {size!r} has {len(sizes)} values for the "
                             f"{rank} spatial axes of an input of shape {tuple(x.shape)}")
        return tuple(int(s) for s in sizes), (None,) * rank
    factors = (scale_factor,) * rank if isinstance(scale_factor, (int, float)) \
        else tuple(scale_factor)
    if len(factors) != rank:
        raise ShapeError(f"interpolate: scale_factor {scale_factor!r} has {len(factors)} values "
                         f"for the {rank} spatial axes of an input of shape {tuple(x.shape)}")
    factors = tuple(float(f) for f in factors)
    sizes = tuple(math.floor(float(s) * f) for s, f in zip(x.shape[2:], factors))
    return sizes, factors


def interpolate(input: Tensor, size: int | Sequence[int] | None = None,
                scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize (N, C, L), (N, C, H, W) or (N, C, D, H, W) to ``size`` or by ``scale_factor``.

    ``mode``: ``"nearest"`` (PyTorch's legacy floor rule), ``"nearest-exact"`` (pixel
    centres), ``"linear"`` (3-d input), ``"bilinear"`` and ``"bicubic"`` (4-d),
    ``"trilinear"`` (5-d), ``"area"`` (adaptive average pooling). ``align_corners`` (linear
    modes and bicubic) maps the corner pixels' centres onto each other. Given a
    ``scale_factor``, coordinates use ``1 / scale_factor`` unless ``recompute_scale_factor``,
    which uses input size over output size, as PyTorch does.

    Example:
        >>> import pullback
        >>> import pullback.nn.functional as F
        >>> x = pullback.tensor([[[0.0, 1.0]]])
        >>> F.interpolate(x, scale_factor=2, mode="linear").tolist()
        [[[0.0, 0.25, 0.75, 1.0]]]
    """
    if mode not in _MODES:
        raise UnsupportedError(f"interpolate: mode must be one of {_MODES}, got {mode!r}")
    if antialias:
        raise UnsupportedError("interpolate: antialias=True is not supported")
    if input.ndim not in (3, 4, 5):
        raise ShapeError(f"interpolate: expected a 3-d, 4-d or 5-d input (N, C, *spatial), got "
                         f"shape {tuple(input.shape)}")
    wanted = _RANK_OF_MODE.get(mode)
    if wanted is not None and input.ndim != wanted:
        raise ShapeError(f"interpolate: mode {mode!r} needs a {wanted}-d input, got shape "
                         f"{tuple(input.shape)}")
    if align_corners is not None and wanted is None:
        raise ArgumentError("interpolate: align_corners can only be set with the interpolating "
                            f"modes linear, bilinear, bicubic and trilinear, not {mode!r}")
    if input.dtype.kind not in "fV":
        raise UnsupportedError(f"interpolate: input must be floating point, got dtype "
                               f"{input.dtype}")
    rank = input.ndim - 2
    sizes, factors = _output_size(input, rank, size, scale_factor)
    if min(sizes) < 1:
        raise ShapeError(f"interpolate: output size {sizes} must be positive (input of shape "
                         f"{tuple(input.shape)})")
    if mode == "area":
        pool = {1: adaptive_avg_pool1d, 2: adaptive_avg_pool2d, 3: adaptive_avg_pool3d}[rank]
        return pool(input, sizes)
    if recompute_scale_factor:
        factors = (None,) * rank
    out = input
    for a, (o, f) in enumerate(zip(sizes, factors)):
        out = _resample_axis(out, 2 + a, o, mode, bool(align_corners), f)
    return out


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """PyTorch's deprecated ``F.upsample``: :func:`interpolate` (with PyTorch's warning)."""
    _deprecated("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """PyTorch's deprecated ``F.upsample_nearest``: nearest :func:`interpolate`."""
    _deprecated("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """PyTorch's deprecated ``F.upsample_bilinear``: bilinear with ``align_corners=True``."""
    _deprecated("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def _deprecated(name: str) -> None:
    warnings.warn(f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", UserWarning, stacklevel=3)
