"""The fused LayerNorm (``layer_norm.cu``): the ``nn.layer_norm`` op's cuda kernel (float32),
and the backward (input gradient per row; weight and bias gradients as column sums)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._rows import MAX_ROWS, row_threads

PARAM_COLS, PARAM_ROWS = 32, 8  # LN_COLS, LN_ROWS: the block of layer_norm_backward_params
PARAM_TARGET_BLOCKS = 1024  # enough blocks to fill a large GPU several times over


def _rows_cols(x: Any, normalized_ndim: int, *params: Any) -> tuple[int, int] | None:
    """(rows, cols) when ``x`` and the given parameters are float32 and fit, else ``None``."""
    if x.dtype != np.float32 or not 0 < normalized_ndim <= x.ndim:
        return None
    normalized = x.shape[x.ndim - normalized_ndim:]
    for p in params:
        if p is not None and (p.dtype != np.float32 or p.shape != normalized):
            return None
    cols = math.prod(normalized)
    rows = x.size // cols if cols else 0
    if rows == 0 or rows > MAX_ROWS:
        return None
    return rows, cols


def param_grid(rows: int, cols: int) -> tuple[int, int, int]:
    """(column blocks, row chunks, rows per chunk) of the weight/bias gradient kernel: 32 columns
    per block, rows split so that about :data:`PARAM_TARGET_BLOCKS` blocks run, each chunk at
    least 32 rows long (shorter chunks would cost more in partial sums than they save)."""
    col_blocks = -(-cols // PARAM_COLS)
    chunks = max(1, min(-(-rows // 32), -(-PARAM_TARGET_BLOCKS // col_blocks)))
    per_chunk = -(-rows // chunks)
    return col_blocks, -(-rows // per_chunk), per_chunk


def layer_norm(x: Any, w: Any, b: Any, *, normalized_ndim: int, eps: float) -> Any:
    """``((x - mean) * rstd * w + b, (mean, rstd))`` with mean and rstd kept as
    ``x.shape[:-normalized_ndim] + (1,) * normalized_ndim`` (what the generic kernel saves), or
    ``NotImplemented``."""
    import cupy

    from ._module import launch

    shape = _rows_cols(x, normalized_ndim, w, b)
    if shape is None:
        return NotImplemented
    rows, cols = shape
    x = cupy.ascontiguousarray(x)
    w_arg = cupy.ascontiguousarray(w) if w is not None else x  # unread when has_w is 0
    b_arg = cupy.ascontiguousarray(b) if b is not None else x
    y = cupy.empty_like(x)
    kept = x.shape[:x.ndim - normalized_ndim] + (1,) * normalized_ndim
    mean = cupy.empty(kept, dtype=np.float32)
    rstd = cupy.empty(kept, dtype=np.float32)
    launch("layer_norm", "layer_norm_forward", (rows,), (row_threads(cols),), (
        x, w_arg, b_arg, y, mean, rstd, np.int32(cols), np.float32(eps),
        np.int32(w is not None), np.int32(b is not None)))
    return y, (mean, rstd)


def layer_norm_backward(dy: Any, x: Any, w: Any, mean: Any, rstd: Any, *, normalized_ndim: int,
                        param_grads: bool = True) -> Any:
    """``(dx, dw, db)`` of :func:`layer_norm`, or ``NotImplemented``. ``dw`` and ``db`` (the
    sums over rows of ``dy * xhat`` and ``dy``) are ``None`` unless ``param_grads``."""
    import cupy

    from ._module import launch

    shape = _rows_cols(x, normalized_ndim, w)
    if shape is None or dy.dtype != np.float32 or dy.shape != x.shape:
        return NotImplemented
    rows, cols = shape
    dy, x = cupy.ascontiguousarray(dy), cupy.ascontiguousarray(x)
    mean, rstd = cupy.ascontiguousarray(mean), cupy.ascontiguousarray(rstd)
    w_arg = cupy.ascontiguousarray(w) if w is not None else x
    dx = cupy.empty_like(x)
    launch("layer_norm", "layer_norm_backward_input", (rows,), (row_threads(cols),), (
        dy, x, w_arg, mean, rstd, dx, np.int32(cols), np.int32(w is not None)))
    if not param_grads:
        return dx, None, None
    col_blocks, chunks, per_chunk = param_grid(rows, cols)
    dw_part = cupy.empty((chunks, cols), dtype=np.float32)
    db_part = cupy.empty((chunks, cols), dtype=np.float32)
    launch("layer_norm", "layer_norm_backward_params", (col_blocks, chunks),
           (PARAM_COLS * PARAM_ROWS,), (dy, x, mean, rstd, dw_part, db_part, np.int32(rows),
                                        np.int32(cols), np.int32(per_chunk)))
    normalized = x.shape[x.ndim - normalized_ndim:]
    return dx, dw_part.sum(axis=0).reshape(normalized), db_part.sum(axis=0).reshape(normalized)
