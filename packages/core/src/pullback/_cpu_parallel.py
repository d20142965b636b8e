"""Large elementwise kernels, sums and stacks of small matrix products on several CPU threads.

NumPy's ufuncs and reductions run on one core but release the GIL, so a large elementwise op or
sum split into row blocks runs on all cores. Small arrays take the direct path: the check costs a
few hundred nanoseconds, which the per-op overhead benchmark keeps honest. A large matrix product
needs nothing here: BLAS threads it itself, and OpenBLAS's threading measured faster than
splitting rows over single-threaded calls (129 against 71 GFLOP/s for (2048, 128) @ (128, 384)
on 2 cores). A stack of small products is another matter: each runs on one core (below).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

# Handing work to the other thread costs 0.1-0.2 ms on the project's 2-vCPU machines (the idle
# vCPU has to be woken), so only large arrays are split. Measured on float32, one thread against
# two (one-off timings of np.exp and np.add on 2-d arrays): exp breaks even near 2^18 elements
# (2^19: 0.91 against 0.70 ms), add only near 2^21 (2^20: 0.16 against 0.26 ms; 2^22: 1.03
# against 0.89 ms).
MIN_PARALLEL_ELEMENTS = 1 << 19  # composite kernels and transcendental ufuncs
MIN_PARALLEL_CHEAP = 1 << 21  # one arithmetic ufunc, a sum
# Ufuncs that cost several nanoseconds per element (the rest are a few tenths).
_COSTLY_UFUNCS = frozenset({np.exp, np.expm1, np.log, np.log1p, np.sin, np.cos, np.tanh,
                            np.power, np.arctan2})
# Composite kernels walk rows in blocks of about this many elements: a core's L2 cache (512 KiB)
# in float32. Measured on the project's machines, GELU forward+backward on 4M float32: 42 ms with
# 2^17-element blocks, 64 ms with 2^15 (more blocks cost more per-call overhead and GIL hand-offs).
BLOCK_ELEMENTS = 1 << 17

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_threads = int(os.environ.get("PULLBACK_NUM_THREADS", "0")) or (os.cpu_count() or 1)


def _forget_parent_pool() -> None:
    """In a forked child (a DataLoader worker) the parent's pool threads do not exist: drop
    the pool (and a lock a parent thread may have held) so that the child starts its own."""
    global _pool, _lock
    _pool = None
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_parent_pool)


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

    A kernel that is one ufunc (``kernel.ufunc``, or the kernel itself) writes each thread's
    rows straight into the output (``out=``). Any other kernel is several NumPy passes (sigmoid,
    gelu, a fused backward): each thread walks its rows in blocks of about ``BLOCK_ELEMENTS``,
    so the later passes re-read data from cache instead of memory.
    """
    ufunc = kernel if isinstance(kernel, np.ufunc) else getattr(kernel, "ufunc", None)
    if ufunc is not None:
        return _parallel_ufunc(kernel, ufunc)

    def run(*arrays: Any, **attrs: Any) -> Any:
        for a in arrays:
            if a.__class__ is np.ndarray and a.size >= MIN_PARALLEL_ELEMENTS:
                return _blocked(kernel, arrays, attrs)
        return kernel(*arrays, **attrs)

    run.__wrapped__ = kernel  # type: ignore[attr-defined]
    return run


def _parallel_ufunc(kernel: Callable[..., Any], ufunc: Any) -> Callable[..., Any]:
    """The runner of a one-ufunc kernel. On small arrays it is a few checks and the ufunc
    itself (this is every ``x + y`` of the per-op overhead benchmark): one- and two-operand
    ufuncs get runners of fixed arity, whose checks cost half of a loop over ``*arrays``."""

    threshold = MIN_PARALLEL_ELEMENTS if ufunc in _COSTLY_UFUNCS else MIN_PARALLEL_CHEAP
    ndarray = np.ndarray

    def run(*arrays: Any) -> Any:
        big = number = False
        for a in arrays:
            if a.__class__ is not ndarray:
                number = True  # a Python number: the kernel applies its promotion rules
            elif a.size >= threshold:
                big = True
        if not big or _threads == 1:
            # the ufunc itself where no promotion rule applies (bfloat16's weak scalars)
            return kernel(*arrays) if number else ufunc(*arrays)
        if number:
            return _blocked(kernel, arrays, {})
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        if len(shape) == 0 or shape[0] < 2:
            return ufunc(*arrays)
        ndim, rows = len(shape), shape[0]
        out = np.empty(shape, dtype=ufunc(*(a.reshape(-1)[:1] for a in arrays)).dtype)

        def rows_into_out(lo: int, hi: int) -> None:
            ufunc(*(_row_block(a, ndim, lo, hi) for a in arrays), out=out[lo:hi])

        run_split(rows_into_out, rows)
        return out

    def run_unary(x: Any) -> Any:
        if x.__class__ is ndarray and x.size < threshold:
            return ufunc(x)
        return run(x)

    def run_binary(x: Any, y: Any) -> Any:
        if x.__class__ is ndarray:
            if y.__class__ is ndarray:
                if x.size < threshold and y.size < threshold:
                    return ufunc(x, y)
            elif x.size < threshold:
                return kernel(x, y)
        elif y.__class__ is ndarray and y.size < threshold:
            return kernel(x, y)
        return run(x, y)

    if ufunc.nin == 2:
        runner = run_binary
    elif ufunc.nin == 1 and kernel is ufunc:
        runner = run_unary
    else:
        runner = run
    runner.__wrapped__ = kernel  # type: ignore[attr-defined]
    return runner


def _blocked(kernel: Callable[..., Any], arrays: tuple[Any, ...], attrs: dict[str, Any]) -> Any:
    """``kernel`` over row blocks of about ``BLOCK_ELEMENTS``, the blocks shared by threads."""
    shape = np.broadcast_shapes(*(a.shape for a in arrays if isinstance(a, np.ndarray)))
    if _threads == 1 or not shape or shape[0] < 2:
        return kernel(*arrays, **attrs)
    ndim, rows = len(shape), shape[0]
    # at least one block per thread, so arrays of a few blocks still use every core
    step = max(1, min(BLOCK_ELEMENTS * rows // max(int(np.prod(shape)), 1), -(-rows // _threads)))
    first = kernel(*(_row_block(a, ndim, 0, min(step, rows)) for a in arrays), **attrs)
    out = np.empty(shape, dtype=first.dtype)
    out[: min(step, rows)] = first

    def blocks(lo: int, hi: int) -> None:
        for start in range(lo, hi, step):
            stop = min(start + step, hi)
            out[start:stop] = kernel(*(_row_block(a, ndim, start, stop) for a in arrays), **attrs)

    block_starts = range(min(step, rows), rows, step)  # the blocks after the first

    def block_range(i: int, j: int) -> None:
        blocks(block_starts[i], min(block_starts[j - 1] + step, rows))

    if block_starts:
        run_split(block_range, len(block_starts))
    return out


def _row_split_worthwhile(x: Any) -> bool:
    return (x.__class__ is np.ndarray and _threads > 1 and x.size >= MIN_PARALLEL_CHEAP
            and x.shape[0] >= 2 and x.dtype.kind == "f" and x.dtype.itemsize >= 4)


def _sum_row_blocks(block_sum: Callable[[int, int], Any], rows: int, rows_reduced: bool) -> Any:
    """A sum computed as ``block_sum(lo, hi)`` over one row block per thread: the blocks' partial
    sums are added when the leading axis is reduced, else they are the output's row blocks."""
    parts: dict[int, Any] = {}

    def work(lo: int, hi: int) -> None:
        parts[lo] = block_sum(lo, hi)

    run_split(work, rows)
    ordered = [parts[lo] for lo in sorted(parts)]  # a fixed order: reproducible rounding
    if not rows_reduced:
        return np.concatenate(ordered, axis=0)
    total = ordered[0]
    for part in ordered[1:]:
        total = total + part
    return total


def parallel_sum(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """``sum(x, axis, keepdims)`` with large inputs split by rows over the threads (NumPy's
    reductions use one core; the reduction of a broadcast gradient is in every backward)."""

    def run(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        if not _row_split_worthwhile(x):
            return kernel(x, axis=axis, keepdims=keepdims)
        axes = range(x.ndim) if axis is None else (axis,) if isinstance(axis, int) else axis
        rows_reduced = any(a % x.ndim == 0 for a in axes)
        return _sum_row_blocks(lambda lo, hi: kernel(x[lo:hi], axis=axis, keepdims=keepdims),
                               x.shape[0], rows_reduced)

    run.__wrapped__ = kernel  # type: ignore[attr-defined]
    return run


def parallel_sum_to(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """``sum_to(x, shape)`` (the gradient of broadcasting) split by rows like ``parallel_sum``."""

    def run(x: Any, shape: tuple[int, ...]) -> Any:
        if not _row_split_worthwhile(x) or x.shape == tuple(shape):
            return kernel(x, shape=shape)
        rows_reduced = x.ndim > len(shape) or shape[0] == 1
        rest = tuple(shape[1:])
        return _sum_row_blocks(
            lambda lo, hi: kernel(x[lo:hi], shape=shape if rows_reduced else (hi - lo,) + rest),
            x.shape[0], rows_reduced)

    run.__wrapped__ = kernel  # type: ignore[attr-defined]
    return run


# OpenBLAS runs a product of fewer multiply-adds than this on one thread, and NumPy's matmul
# loops over a stack of them: attention's (batch, heads) stacks of 64 x 32 x 64 products stay on
# one core unless the stack is split.
SMALL_GEMM = 1 << 18
# ... and the stack is split only when its work pays for the hand-off: (32, 4, 64, 32) @
# (32, 4, 32, 64), 2^24 multiply-adds, measured 0.51 ms on one thread, 0.36 ms split.
MIN_PARALLEL_MACS = 1 << 23


def parallel_batched_matmul(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """``matmul(x, y)`` over two equal stacks of small float matrices, the stack split over the
    threads (each product is one BLAS call either way: the results are the same bits)."""

    def run(x: Any, y: Any) -> Any:
        if (_threads > 1 and x.__class__ is np.ndarray and y.__class__ is np.ndarray
                and x.ndim >= 3 and x.ndim == y.ndim and x.shape[:-2] == y.shape[:-2]
                and x.shape[0] >= 2 and x.dtype == y.dtype and x.dtype.kind == "f"
                and x.dtype.itemsize >= 4):
            (m, k), n = x.shape[-2:], y.shape[-1]
            macs = m * k * n
            if macs < SMALL_GEMM and macs * (x.size // (m * k or 1)) >= MIN_PARALLEL_MACS:
                out = np.empty(x.shape[:-1] + (n,), dtype=x.dtype)

                def rows_into_out(lo: int, hi: int) -> None:
                    np.matmul(x[lo:hi], y[lo:hi], out=out[lo:hi])

                run_split(rows_into_out, x.shape[0])
                return out
        return kernel(x, y)

    run.__wrapped__ = kernel  # type: ignore[attr-defined]
    return run


def run_split(work: Callable[[int, int], None], n: int) -> None:
    """``work(lo, hi)`` over ``0..n`` in one contiguous share per thread."""
    shares = min(_threads, n)
    bounds = [n * i // shares for i in range(shares + 1)]
    futures = [_executor().submit(work, bounds[i], bounds[i + 1]) for i in range(1, shares)]
    work(bounds[0], bounds[1])
    for f in futures:
        f.result()
