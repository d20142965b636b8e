"""Shared pieces of the nn benchmarks (on top of _common.py): interleaved timing of the same step
in pullback and PyTorch, and identical starting weights.

Two options, read from the command line when this module is imported (before NumPy is, so that
the thread counts take effect):

``--threads N`` (default 2): threads for PyTorch (``torch.set_num_threads``), OpenBLAS and
pullback's elementwise kernels.
``--clock wall|cpu`` (default wall): ``cpu`` measures process CPU time instead of wall time. With
``--threads 1`` that is the work each side does, which stays meaningful when other jobs share
the machine (wall-clock ratios on a busy machine mostly measure the scheduler).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Callable

_parser = argparse.ArgumentParser(add_help=False)
_parser.add_argument("--threads", type=int, default=2)
_parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
OPTIONS, _ = _parser.parse_known_args(sys.argv[1:])
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "PULLBACK_NUM_THREADS"):
    os.environ[_var] = str(OPTIONS.threads)

import numpy as np  # noqa: E402 - after the thread settings

from _common import emit  # noqa: E402

_clock = time.process_time if OPTIONS.clock == "cpu" else time.perf_counter


def torch_module():
    """PyTorch with ``--threads`` threads, or a JSON line saying it is missing (and exit)."""
    from _common import torch_or_exit

    torch = torch_or_exit()
    torch.set_num_threads(OPTIONS.threads)
    return torch


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
            start = _clock()
            for _ in range(block):
                step()
            best[side] = min(best[side], (_clock() - start) / block)
    return best[0], best[1]


def report(name: str, ours: float, torch_time: float, target: float, **extra: object) -> None:
    """One JSON line with both times (ms), the ratio and whether it meets ``target``."""
    emit(benchmark=name, pullback_ms=round(ours * 1e3, 3), torch_ms=round(torch_time * 1e3, 3),
         ratio=round(ours / torch_time, 3), target_ratio=target,
         meets_target=ours / torch_time <= target, threads=OPTIONS.threads, clock=OPTIONS.clock,
         **extra)


def same_weights(pb_model, torch_model) -> None:
    """Copy PyTorch's initial weights into the pullback model (identical starting point)."""
    pb_model.load_state_dict({k: v.detach().numpy() for k, v in torch_model.state_dict().items()})


def rng_batch(shape, classes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape).astype(np.float32),
            rng.integers(0, classes, shape[0]).astype(np.int64))
