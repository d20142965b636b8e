"""nn's softmax forward on CPU float32 rows, pullback vs PyTorch in one process, on rows as wide
as the benchmark GPT's attention weights (32 x 4 heads x 64 x 64) and on wide rows (700 x
10,000). Printed per shape: both times and their ratio, and pullback's C kernel against NumPy's
composed kernel (max, subtract, exp, sum, divide: five passes) on the same array. No target: it
shows where nn's softmax stands (the GPT step and attention call it).

    python benchmarks/nn_softmax.py                          # 2 threads, wall clock
    python benchmarks/nn_softmax.py --threads 1 --clock cpu  # work per call, on a busy machine
"""

from __future__ import annotations

# Imported first: it applies --threads before NumPy loads.
from _nn_bench import OPTIONS, emit, time_pair, torch_module

import os

import numpy as np

import pullback
import pullback.nn.functional as F
from pullback.nn._ops import softmax

SHAPES = {"attention_rows": (32, 4, 64, 64), "wide_rows": (700, 10_000)}


def measure(torch, name: str, x: np.ndarray) -> None:
    """One JSON line for the rows of ``x``: pullback against PyTorch, C against NumPy."""
    c_softmax = softmax._softmax_kernel(np)
    numpy_softmax = c_softmax.__wrapped__
    ours, theirs = pullback.tensor(x), torch.from_numpy(x.copy())
    np.testing.assert_allclose(F.softmax(ours, dim=-1).numpy(), theirs.softmax(-1).numpy(),
                               rtol=1e-5, atol=1e-7)
    pb_time, torch_time = time_pair(lambda: F.softmax(ours, dim=-1), lambda: theirs.softmax(-1))
    c_time, numpy_time = time_pair(lambda: c_softmax(x, axis=-1),
                                   lambda: numpy_softmax(x, axis=-1))
    emit(benchmark=f"nn_softmax_{name}", shape=list(x.shape),
         pullback_ms=round(pb_time * 1e3, 3), torch_ms=round(torch_time * 1e3, 3),
         ratio=round(pb_time / torch_time, 3), c_kernel_ms=round(c_time * 1e3, 3),
         numpy_kernel_ms=round(numpy_time * 1e3, 3),
         c_speedup_over_numpy=round(numpy_time / c_time, 2), threads=OPTIONS.threads,
         clock=OPTIONS.clock, order=OPTIONS.order, load_1min=round(os.getloadavg()[0], 2))


def main() -> None:
    torch = torch_module()
    rng = np.random.default_rng(0)
    for name, shape in SHAPES.items():
        measure(torch, name, (rng.standard_normal(shape) * 3).astype(np.float32))


if __name__ == "__main__":
    main()
