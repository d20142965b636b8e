"""Max pooling's backward on the small CNN's activations (the per-sample-gradient benchmark's
``cnn_small`` at batch 256: (256, 8, 26, 26) and (256, 16, 11, 11), 2x2 windows, stride 2):
pullback's C kernel (``pullback/nn/_ops/_csrc/pool.c``) against its NumPy kernel and against
PyTorch's backward of ``max_pool2d``, in one process, timed in alternating rounds. JSON lines.

    python benchmarks/func_max_pool_backward.py --clock cpu --threads 1
"""

from __future__ import annotations

# Imported first: it applies --threads before NumPy loads.
from _nn_bench import OPTIONS, torch_module

import os
import time
from typing import Any

import numpy as np
from _common import best_times, emit

import pullback.nn  # noqa: F401 - registers the ops
from pullback.nn._ops import pool

_clock = time.process_time if OPTIONS.clock == "cpu" else time.perf_counter
GEOMETRY = dict(kernel_size=(2, 2), stride=(2, 2), padding=((0, 0), (0, 0)), dilation=(1, 1))


def measure(torch: Any, shape: tuple[int, ...], rng: np.random.Generator) -> None:
    """Time the three backwards of one activation shape and print their record."""
    numpy_forward = pool._max_pool_kernel("nn.max_pool2d")(np)
    numpy_backward = pool._max_pool_backward_kernel("nn.max_pool2d_backward")(np).__wrapped__
    x = rng.standard_normal(shape).astype(np.float32)
    y = numpy_forward(x, **GEOMETRY)
    g = rng.standard_normal(y.shape).astype(np.float32)
    tx = torch.from_numpy(x).requires_grad_(True)
    ty = torch.nn.functional.max_pool2d(tx, 2)
    tg = torch.from_numpy(g)
    native = pool.native_max_pool2d_backward(g, x, y, **GEOMETRY)
    if native is NotImplemented:
        emit(benchmark="func_max_pool_backward", shape=list(shape),
             skipped="no native kernel (no compiler, or PULLBACK_NATIVE=0)")
        return
    expected = torch.autograd.grad(ty, tx, tg, retain_graph=True)[0].numpy()
    t_c, t_numpy, t_torch = best_times(
        lambda: pool.native_max_pool2d_backward(g, x, y, **GEOMETRY),
        lambda: numpy_backward(g, x, y, **GEOMETRY),
        lambda: torch.autograd.grad(ty, tx, tg, retain_graph=True),
        rounds=5, repeat=5, clock=_clock)
    emit(benchmark="func_max_pool_backward", shape=list(shape), threads=OPTIONS.threads,
         clock=OPTIONS.clock, load_average=os.getloadavg()[0],
         pullback_c_ms=round(t_c * 1e3, 3), pullback_numpy_ms=round(t_numpy * 1e3, 3),
         torch_ms=round(t_torch * 1e3, 3), speedup_c_vs_numpy=round(t_numpy / t_c, 2),
         time_vs_torch=round(t_c / t_torch, 2),
         max_abs_diff_vs_torch=float(np.abs(native - expected).max()))


def main() -> None:
    torch = torch_module()
    rng = np.random.default_rng(0)
    for shape in ((256, 8, 26, 26), (256, 16, 11, 11)):
        measure(torch, shape, rng)


if __name__ == "__main__":
    main()
