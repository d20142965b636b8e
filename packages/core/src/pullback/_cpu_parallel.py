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
    """Run ``kernel`` (an elementwise function of arrays) in row blocks on several threads."""

    def run(*arrays: Any, **attrs: Any) -> Any:
        big = False
        for a in arrays:
            if a.__class__ is np.ndarray and a.size >= MIN_PARALLEL_ELEMENTS:
                big = True
                break
        if not big or _threads == 1:
            return kernel(*arrays, **attrs)
        shapes = [a.shape for a in arrays if isinstance(a, np.ndarray)]
        shape = np.broadcast_shapes(*shapes)
        if not shape or shape[0] < 2:
            return kernel(*arrays, **attrs)
        ndim = len(shape)
        blocks = min(_threads, shape[0])
        bounds = [shape[0] * i // blocks for i in range(blocks + 1)]
        first = kernel(*(_row_block(a, ndim, bounds[0], bounds[1]) for a in arrays), **attrs)
        out = np.empty(shape, dtype=first.dtype)

        def work(lo: int, hi: int) -> None:
            out[lo:hi] = kernel(*(_row_block(a, ndim, lo, hi) for a in arrays), **attrs)

        futures = [_executor().submit(work, bounds[i], bounds[i + 1]) for i in range(1, blocks)]
        out[bounds[0]:bounds[1]] = first
        for f in futures:
            f.result()
        return out

    run.__wrapped__ = kernel  # type: ignore[attr-defined]
    return run
