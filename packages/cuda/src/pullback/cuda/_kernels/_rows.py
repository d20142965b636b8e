"""Launch shapes shared by the row-wise kernels (softmax, LayerNorm): one block per row."""

from __future__ import annotations

MAX_ROWS = 2**31 - 1  # gridDim.x limit


def row_threads(cols: int) -> int:
    """Threads per row: the power of two from 32 (one warp) to 1024 closest above ``cols``, so
    short rows leave no thread idle and long rows loop."""
    threads = 32
    while threads < cols and threads < 1024:
        threads *= 2
    return threads
