"""Elementwise kernels on several CPU threads.

NumPy's ufuncs run on one core but release the GIL, so a large elementwise op split into row
blocks runs on all cores. Small arrays take the direct path: the check costs a few hundred
nanoseconds, which the per-op overhead benchmark keeps honest.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

# Below this many elements a thread hand-off costs more than it saves (measured: ~64K float32
# elements break even on the project's 2-core machines).
MIN_PARALLEL_ELEMENTS = 1 << 17
# Rows are processed in blocks of about this many elements (fits a core's L2 cache in float32).
BLOCK_ELEMENTS = 1 << 15

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_threads = int(os.environ.get("PULLBACK_NUM_THREADS", "0")) or (os.cpu_count() or 1)


def get_num_threads() -> int:
    """Threads used for large elementwise CPU kernels."""
    return _threads


def set_num_threads(n: int) -> None:
    """Set the number of threads for large elementwise CPU kernels (1 turns threading off)."""
    global _threads, _pool
    if n < 1:
        raise ValueError(f"set_num_threads: expected a positive count, got {n}")
    with _lock:
        _threads = int(n)
        if _pool is not None:
            _pool.shutdown(wait=False)
            _pool = None


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=max(_threads - 1, 1),
                                       thread_name_prefix="pullback-cpu")
        return _pool


def _row_block(a: Any, ndim: int, lo: int, hi: int) -> Any:
    """Rows ``lo:hi`` of an operand aligned to an ``ndim``-d output (broadcast rows stay whole)."""
    if not isinstance(a, np.ndarray) or a.ndim < ndim or a.shape[0] == 1:
        return a
    return a[lo:hi]


def parallel_elementwise(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``kernel`` (an elementwise function of arrays) in row blocks on several threads.

    Each thread walks its share of rows in blocks of about ``BLOCK_ELEMENTS``: a kernel made of
    several NumPy passes (sigmoid, gelu) then re-reads data from cache instead of memory.
    """

    def run(*arrays: Any, **attrs: Any) -> Any:
        big = False
        for a in arrays:
            if a.__class__ is np.ndarray and a.size >= MIN_PARALLEL_ELEMENTS:
                big = True
                break
        if not big:
            return kernel(*arrays, **attrs)
        shape = np.broadcast_shapes(*(a.shape for a in arrays if isinstance(a, np.ndarray)))
        if not shape or shape[0] < 2:
            return kernel(*arrays, **attrs)
        ndim = len(shape)
        rows = shape[0]
        step = max(1, BLOCK_ELEMENTS * rows // max(int(np.prod(shape)), 1))
        starts = list(range(0, rows, step))
        first = kernel(*(_row_block(a, ndim, 0, min(step, rows)) for a in arrays), **attrs)
        out = np.empty(shape, dtype=first.dtype)
        out[: min(step, rows)] = first

        def work(block_starts: list[int]) -> None:
            for lo in block_starts:
                hi = min(lo + step, rows)
                out[lo:hi] = kernel(*(_row_block(a, ndim, lo, hi) for a in arrays), **attrs)

        rest = starts[1:]
        n = min(_threads, len(rest)) if rest else 0
        shares = [rest[i * len(rest) // n:(i + 1) * len(rest) // n] for i in range(n)] if n else []
        futures = [_executor().submit(work, share) for share in shares[1:]]
        if shares:
            work(shares[0])
        for f in futures:
            f.result()
        return out

    run.__wrapped__ = kernel  # type: ignore[attr-defined]
    return run
