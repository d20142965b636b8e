"""The fused softmax (``softmax.cu``): the ``nn.softmax`` op's cuda kernel for float32 along the
last axis, and the matching backward."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._rows import MAX_ROWS, row_threads


def _rows_cols(x: Any, axis: int) -> tuple[int, int] | None:
    """(rows, cols) of a float32 softmax along the last axis, else ``None``."""
    if x.dtype != np.float32 or x.ndim == 0 or axis % x.ndim != x.ndim - 1:
        return None
    cols = x.shape[-1]
    rows = x.size // cols if cols else 0
    if rows == 0 or rows > MAX_ROWS:
        return None
    return rows, cols


def softmax(x: Any, *, axis: int) -> Any:
    """``exp(x) / sum(exp(x))`` along ``axis``, or ``NotImplemented`` when not float32 along the
    last axis."""
    import cupy

    from ._module import launch

    shape = _rows_cols(x, axis)
    if shape is None:
        return NotImplemented
    rows, cols = shape
    x = cupy.ascontiguousarray(x)
    y = cupy.empty_like(x)
    launch("softmax", "softmax_forward", (rows,), (row_threads(cols),), (x, y, np.int32(cols)))
    return y


def softmax_backward(dy: Any, y: Any, *, axis: int) -> Any:
    """``y * (dy - sum(dy * y))`` along ``axis`` (the input gradient of softmax, given its output
    ``y``), or ``NotImplemented``."""
    import cupy

    from ._module import launch

    shape = _rows_cols(y, axis)
    if shape is None or dy.dtype != np.float32 or dy.shape != y.shape:
        return NotImplemented
    rows, cols = shape
    dy, y = cupy.ascontiguousarray(dy), cupy.ascontiguousarray(y)
    dx = cupy.empty_like(y)
    launch("softmax", "softmax_backward", (rows,), (row_threads(cols),),
                                            (dy, y, dx, np.int32(cols)))
    return dx
