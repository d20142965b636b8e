"""``compiler.scatter_slices`` in C where the slices cut the last axis (a q/k/v projection's
gradient): one pass over the output, its rows split over the threads (NumPy writes each slice
on one core). Anything else keeps the NumPy kernel."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from pullback import native

_KERNELS = {np.dtype(np.float32): "scatter_columns_f32", np.dtype(np.float64): "scatter_columns_f64"}


@lru_cache(maxsize=None)
def _kernel(name: str) -> Any:
    library = native.load("compiler_slices", Path(__file__).parent / "_csrc" / "slices.c")
    return None if library is None else native.declare(library, name, 4, 2)


def column_range(key: Any, ndim: int, cols: int) -> tuple[int, int] | None:
    """``(start, stop)`` of a key that takes every element but a unit-step range of the last
    axis, else ``None``."""
    if not isinstance(key, tuple) or len(key) != ndim:
        return None
    if any(k != slice(None) for k in key[:-1]) or not isinstance(key[-1], slice):
        return None
    start, stop, step = key[-1].indices(cols)
    return (start, stop) if step == 1 else None


def _tile(ranges: list[tuple[int, int]], cols: int) -> bool:
    """Whether the column ranges cover ``0..cols`` once each (every element written once)."""
    end = 0
    for start, stop in sorted(ranges):
        if start != end or stop <= start:
            return False
        end = stop
    return end == cols


def scatter_columns(grads: tuple[Any, ...], keys: tuple[Any, ...], shape: tuple[int, ...]
                    ) -> Any:
    """The assembled buffer, or ``NotImplemented`` where the C kernel does not apply."""
    dtype = grads[0].dtype
    name = _KERNELS.get(dtype)
    if name is None or len(shape) < 2 or not all(
            g.__class__ is np.ndarray and g.dtype == dtype and g.flags.c_contiguous
            for g in grads):
        return NotImplemented
    cols = shape[-1]
    ranges = [column_range(key, len(shape), cols) for key in keys]
    if None in ranges or not _tile(ranges, cols):  # type: ignore[arg-type]
        return NotImplemented
    if any(g.shape != shape[:-1] + (stop - start,) for g, (start, stop) in zip(grads, ranges)):
        return NotImplemented
    kernel = _kernel(name)
    if kernel is None:
        return NotImplemented
    out = np.empty(shape, dtype=dtype)
    pieces = np.array([native.address(g) for g in grads], dtype=np.int64)
    offsets = np.array([start for start, _ in ranges], dtype=np.int64)
    widths = np.array([stop - start for start, stop in ranges], dtype=np.int64)
    rows = out.size // cols
    native.run_rows(kernel, rows, cols, native.address(out), native.address(pieces),
                    native.address(offsets), native.address(widths), len(grads), cols)
    return out
