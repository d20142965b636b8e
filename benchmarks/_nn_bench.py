"""Shared timing for the nn benchmarks: the same step in pullback and PyTorch, one process,
interleaved
blocks of steps, the fastest block of each side."""

from __future__ import annotations

import json
import time
from typing import Callable

import numpy as np


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


def report(name: str, ours: float, torch_time: float, target: float, **extra: object) -> dict:
    """Print one JSON line with both times (ms), the ratio and the target; return it."""
    row = {"benchmark": name, "pullback_ms": round(ours * 1e3, 3),
           "torch_ms": round(torch_time * 1e3, 3), "ratio": round(ours / torch_time, 3),
           "target_ratio": target, "meets_target": ours / torch_time <= target, **extra}
    print(json.dumps(row), flush=True)
    return row


def torch_setup():
    """Import torch with 2 threads (these machines' core count) or explain how to get it."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        raise SystemExit("these benchmarks compare against PyTorch: pip install torch==2.13.0")
    torch.set_num_threads(2)
    return torch


def same_weights(pb_model, torch_model) -> None:
    """Copy PyTorch's initial weights into the pullback model (identical starting point)."""
    pb_model.load_state_dict({k: v.detach().numpy() for k, v in torch_model.state_dict().items()})


def rng_batch(shape, classes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape).astype(np.float32),
            rng.integers(0, classes, shape[0]).astype(np.int64))
