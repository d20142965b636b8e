"""Kernels on several CPU threads: large elementwise ops and matrix products.

NumPy's ufuncs run on one core but release the GIL, so a large elementwise op split into row
blocks runs on all cores. Small arrays take the direct path: the check costs a few hundred
nanoseconds, which the per-op overhead benchmark keeps honest.

Matrix products split the same way (rows of a matrix, or matrices of a stack) over
single-threaded BLAS calls. OpenBLAS's own threads synchronize on every call, which costs more
than the work on the small matrices of attention (a stack of 192 products of 128x32 by 32x128
measured 10x slower with two OpenBLAS threads than with one on a busy 2-core machine), so the
CPU backend sets BLAS to one thread and owns the parallelism (see :func:`set_num_threads`).
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
    """Set the number of threads for large elementwise kernels and matrix products on the CPU
    (1 turns threading off)."""
    global _threads, _pool
    if n < 1:
        raise ValueError(f"set_num_threads: expected a positive count, got {n}")
    with _lock:
        _threads = int(n)
        if _pool is not None:
            _pool.shutdown(wait=False)
            _pool = None


def single_threaded_blas() -> None:
    """Make BLAS use one thread; :func:`parallel_matmul` splits the work instead."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, user_api="blas")


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


# Below this many multiply-adds a product runs in one call (a thread hand-off costs ~20 us).
MIN_PARALLEL_FLOPS = 1 << 21
_OUT_DTYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.complex64,
                                                 np.complex128))


def _run_split(work: Callable[[int, int], None], n: int) -> None:
    """``work(lo, hi)`` over ``0..n`` in one contiguous share per thread."""
    shares = min(_threads, n)
    bounds = [n * i // shares for i in range(shares + 1)]
    futures = [_executor().submit(work, bounds[i], bounds[i + 1]) for i in range(1, shares)]
    work(bounds[0], bounds[1])
    for f in futures:
        f.result()


def parallel_matmul(x: Any, y: Any) -> Any:
    """``np.matmul(x, y)`` split over threads: rows of a matrix, or matrices of a stack."""
    if (_threads == 1 or x.__class__ is not np.ndarray or y.__class__ is not np.ndarray
            or x.ndim == 0 or y.ndim == 0):
        return np.matmul(x, y)
    dtype = np.result_type(x, y)
    m = x.shape[-2] if x.ndim > 1 else 1
    k = x.shape[-1]
    n = y.shape[-1] if y.ndim > 1 else 1
    batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    if dtype not in _OUT_DTYPES or m * n * k * int(np.prod(batch)) < MIN_PARALLEL_FLOPS:
        return np.matmul(x, y)
    if batch:
        out = np.empty(batch + (m, n), dtype=dtype)
        nd = len(batch) + 2

        def stack_part(lo: int, hi: int) -> None:
            np.matmul(_lead_block(x, nd, lo, hi), _lead_block(y, nd, lo, hi), out=out[lo:hi])

        _run_split(stack_part, batch[0])
        return out
    if x.ndim == 2 and m >= 2 * _threads:
        out = np.empty((m, n) if y.ndim == 2 else (m,), dtype=dtype)

        def row_part(lo: int, hi: int) -> None:
            np.matmul(x[lo:hi], y, out=out[lo:hi])

        _run_split(row_part, m)
        return out
    return np.matmul(x, y)


def _lead_block(a: Any, ndim: int, lo: int, hi: int) -> Any:
    """Slice ``lo:hi`` of the leading stack axis of a matmul operand aligned to ``ndim`` dims."""
    if a.ndim < ndim or a.shape[0] == 1:
        return a
    return a[lo:hi]
