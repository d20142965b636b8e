"""Arrays in the memory layouts that native kernels must handle (or refuse): the same values
seen contiguously, through a transpose, every other element, with negative strides, or
broadcast with zero strides. Used by the fuzz tests of the native kernels."""

from __future__ import annotations

import numpy as np

LAYOUTS = ("contiguous", "transposed", "strided", "reversed", "broadcast")


def laid_out(values: np.ndarray, layout: str) -> np.ndarray:
    """``values`` in ``layout`` (layouts that need more dims or elements than ``values`` has
    give ``values`` itself). ``"broadcast"`` repeats the first element of the last axis."""
    if layout not in LAYOUTS:
        raise ValueError(f"laid_out: layout must be one of {LAYOUTS}, got {layout!r}")
    shape = values.shape
    if layout == "transposed" and values.ndim >= 2:
        return np.ascontiguousarray(values.swapaxes(-1, -2)).swapaxes(-1, -2)
    if layout == "strided" and values.ndim >= 1:
        wide = np.zeros(shape[:-1] + (2 * shape[-1],), dtype=values.dtype)
        wide[..., ::2] = values
        return wide[..., ::2]
    if layout == "reversed" and values.ndim >= 1:
        return np.ascontiguousarray(values[..., ::-1])[..., ::-1]
    if layout == "broadcast" and values.ndim >= 1 and shape[-1]:
        return np.broadcast_to(values[..., :1], shape)
    return values


def fuzz_values(shape: tuple[int, ...], dtype: str, seed: int, special: bool) -> np.ndarray:
    """Normal values (scale 3) from ``seed``; with ``special``, one element in fifty replaced
    by NaN, an infinity, +-1e38 or 0."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape) * 3
    if special and values.size:
        flat = values.reshape(-1)
        picks = rng.integers(0, flat.size, size=max(1, flat.size // 50))
        flat[picks] = rng.choice([np.nan, np.inf, -np.inf, 1e38, -1e38, 0.0], size=picks.size)
    with np.errstate(all="ignore"):
        return values.astype(dtype)
