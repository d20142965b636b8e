"""Shared pieces of the nn benchmarks (on top of _common.py): interleaved timing of the same step
in pullback and PyTorch, and identical starting weights."""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from _common import emit


def time_pair(ours: Callable[[], object], theirs: Callable[[], object], warmup: int = 5,
              repeats: int = 9, block: int = 10) -> tuple[float, float]:
    """Seconds per call of each step: the fastest block of ``block`` calls, with the two sides'
    blocks interleaved so that a busy machine slows both alike."""
    for _ in range(warmup):
        ours()
        theirs()
    best = [float("inf"), float("inf")]
    for _ in range(repeats):
        for side, step in enumerate((ours, theirs)):
            start = time.perf_counter()
            for _ in range(block):
                step()
            best[side] = min(best[side], (time.perf_counter() - start) / block)
    return best[0], best[1]


def report(name: str, ours: float, torch_time: float, target: float, **extra: object) -> None:
    """One JSON line with both times (ms), the ratio and whether it meets ``target``."""
    emit(benchmark=name, pullback_ms=round(ours * 1e3, 3), torch_ms=round(torch_time * 1e3, 3),
         ratio=round(ours / torch_time, 3), target_ratio=target,
         meets_target=ours / torch_time <= target, **extra)


def same_weights(pb_model, torch_model) -> None:
    """Copy PyTorch's initial weights into the pullback model (identical starting point)."""
    pb_model.load_state_dict({k: v.detach().numpy() for k, v in torch_model.state_dict().items()})


def rng_batch(shape, classes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape).astype(np.float32),
            rng.integers(0, classes, shape[0]).astype(np.int64))
