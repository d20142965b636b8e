"""Shared helpers for side-by-side benchmarks: best-of-N timing and JSON-line output."""

from __future__ import annotations

import csv
import json
import os
import platform
import sys
import time
import tracemalloc
from typing import Any, Callable


def best_time(fn: Callable[[], Any], repeat: int = 20, warmup: int = 3,
              clock: Callable[[], float] = time.perf_counter) -> float:
    """Best time of ``fn()`` in seconds over ``repeat`` runs (after ``warmup`` runs), by
    ``clock`` (wall time; ``time.process_time`` for CPU time on a busy machine)."""
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeat):
        start = clock()
        fn()
        best = min(best, clock() - start)
    return best


def best_per_call(fn: Callable[[], Any], calls: int, runs: int = 5,
                  clock: Callable[[], float] = time.perf_counter) -> float:
    """Best seconds per call of ``fn`` over ``runs`` blocks of ``calls`` calls: a block's mean
    keeps the occasional slow call (a garbage collection) that a best single call would drop."""
    best = float("inf")
    for _ in range(runs):
        start = clock()
        for _ in range(calls):
            fn()
        best = min(best, (clock() - start) / calls)
    return best


def best_times(*fns: Callable[[], Any], rounds: int = 3, repeat: int = 10,
               clock: Callable[[], float] = time.perf_counter) -> list[float]:
    """Best time of each function, in seconds, over ``rounds`` alternating rounds of
    :func:`best_time` (pullback, PyTorch, pullback, ...): a slow spell of the machine, or a
    process's first steps while its allocator warms up, then hits both sides alike."""
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], best_time(fn, repeat=repeat, clock=clock))
    return best


def peak_memory(fn: Callable[[], Any]) -> int:
    """Peak bytes allocated through Python's allocator (NumPy and PyTorch CPU both use it...
    NumPy does; PyTorch's CPU allocator does not, so this is reported for pullback only)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def round_ratios(ours: list[float], theirs: list[float]) -> list[float]:
    """Each round's own ratio ``ours / theirs`` (the two sides' times of a round, in order):
    what a machine whose speed drifts over minutes leaves comparable."""
    return [a / b for a, b in zip(ours, theirs, strict=True)]


def write_csv(path: str, rows: list[dict[str, Any]]) -> None:
    """One row per dict, columns from the first row; the folder is made if missing."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def emit(**record: Any) -> None:
    """Print one JSON line (the benchmark's output format)."""
    record.setdefault("python", platform.python_version())
    print(json.dumps(record), flush=True)


def torch_or_exit() -> Any:
    """Import torch (the reference) with two threads, or explain and exit."""
    try:
        import torch
    except ImportError:
        print(json.dumps({"skipped": "torch is not installed (pip install torch==2.13.0)"}))
        sys.exit(0)
    torch.set_num_threads(2)
    return torch


def gemm_provider() -> str:
    """The library behind pullback's CPU matrix products (``"mkl"`` or ``"numpy"``); revisions
    from before the GEMM provider (run by compare_revisions.py) used NumPy's."""
    from pullback.backends import backends

    cpu = backends()["cpu"]
    return cpu.gemm_provider() if hasattr(cpu, "gemm_provider") else "numpy"
