"""Shared pieces of the nn benchmarks (on top of _common.py): timing of the same step in pullback
and PyTorch, and identical starting weights.

Three options, read from the command line when this module is imported (before NumPy is, so that
the thread counts take effect):

``--threads N`` (default 2): threads for PyTorch (``torch.set_num_threads``), OpenBLAS and
pullback's elementwise kernels.
``--clock wall|cpu`` (default wall): ``cpu`` measures process CPU time instead of wall time. With
``--threads 1`` that is the work each side does, which stays meaningful when other jobs share
the machine (wall-clock ratios on a busy machine mostly measure the scheduler).
``--order sequential|interleaved`` (default sequential): time one side's blocks, then the
other's; or alternate them (fairer on a busy machine, but each side's spinning worker threads
then slow the other's next block).
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
# sequential: all of pullback's blocks, then all of PyTorch's. interleaved: alternate blocks, so a
# busy machine slows both alike, but each side's still-spinning BLAS/OpenMP threads then slow the
# block after it (the LeNet step measured 11.7 vs 12.1 ms interleaved, 16.7 vs 6.2 ms apart).
_parser.add_argument("--order", choices=("sequential", "interleaved"), default="sequential")
OPTIONS, _ = _parser.parse_known_args(sys.argv[1:])
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "PULLBACK_NUM_THREADS"):
    os.environ[_var] = str(OPTIONS.threads)

import numpy as np  # noqa: E402 - after the thread settings

from _common import emit, gemm_provider  # noqa: E402

_clock = time.process_time if OPTIONS.clock == "cpu" else time.perf_counter


def torch_module():
    """PyTorch with ``--threads`` threads, or a JSON line saying it is missing (and exit)."""
    from _common import torch_or_exit

    torch = torch_or_exit()
    torch.set_num_threads(OPTIONS.threads)
    return torch


def time_pair(ours: Callable[[], object], theirs: Callable[[], object], warmup: int = 5,
              repeats: int = 9, block: int = 10) -> tuple[float, float]:
    """Seconds per call of each step: the fastest of ``repeats`` blocks of ``block`` calls, the
    sides timed one after the other or with their blocks interleaved (``--order``)."""
    steps = (ours, theirs)
    best = [float("inf"), float("inf")]

    def timed_block(side: int) -> None:
        start = _clock()
        for _ in range(block):
            steps[side]()
        best[side] = min(best[side], (_clock() - start) / block)

    if OPTIONS.order == "interleaved":
        for _ in range(warmup):
            ours()
            theirs()
        for _ in range(repeats):
            timed_block(0)
            timed_block(1)
        return best[0], best[1]
    for side, step in enumerate(steps):
        for _ in range(warmup):  # also lets the other side's worker threads go idle
            step()
        for _ in range(repeats):
            timed_block(side)
    return best[0], best[1]


def report(name: str, ours: float, torch_time: float, target: float, **extra: object) -> None:
    """One JSON line with both times (ms), the ratio and whether it meets ``target``."""
    emit(benchmark=name, pullback_ms=round(ours * 1e3, 3), torch_ms=round(torch_time * 1e3, 3),
         ratio=round(ours / torch_time, 3), target_ratio=target,
         meets_target=ours / torch_time <= target, threads=OPTIONS.threads, clock=OPTIONS.clock,
         order=OPTIONS.order, gemm=gemm_provider(),
         **extra)


def same_weights(pb_model, torch_model) -> None:
    """Copy PyTorch's initial weights into the pullback model (identical starting point)."""
    pb_model.load_state_dict({k: v.detach().numpy() for k, v in torch_model.state_dict().items()})


def rng_batch(shape, classes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape).astype(np.float32),
            rng.integers(0, classes, shape[0]).astype(np.int64))
