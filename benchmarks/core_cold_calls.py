"""What a Python call costs right after a kernel that streamed megabytes through the caches, as
each node of a compiled step runs after the last one's kernel: each call timed warm (repeated)
and after writing 16 MiB (more than this machine's L2), per call, in microseconds.

    python benchmarks/core_cold_calls.py

Prints one line per call: ``warm_us``, ``after_sweep_us`` and their ratio (the timer's own cost,
an empty call, is the first line)."""

from __future__ import annotations

import time

import numpy as np

from _common import emit
from pullback import native

CALLS = 400


def per_call_us(call, sweep: np.ndarray | None) -> float:
    total = 0.0
    for _ in range(CALLS):
        if sweep is not None:
            sweep += 1.0
        start = time.perf_counter()
        call()
        total += time.perf_counter() - start
    return total / CALLS * 1e6


def main() -> None:
    x = np.ones((2048, 128), np.float32)
    sweep = np.zeros(4 << 20, np.float32)
    calls = {
        "an empty call": lambda: None,
        "np.empty of 4 MiB": lambda: np.empty((2048, 512), np.float32),
        "native.address": lambda: native.address(x),
        "x.shape == (2048, 128)": lambda: x.shape == (2048, 128),
        "x.flags.c_contiguous": lambda: x.flags.c_contiguous,
        "x.reshape(32, 64, 128)": lambda: x.reshape(32, 64, 128),
        "np.reshape(x, (32, 64, 128))": lambda: np.reshape(x, (32, 64, 128)),
    }
    for name, call in calls.items():
        per_call_us(call, None)
        warm = per_call_us(call, None)
        cold = per_call_us(call, sweep)
        emit(benchmark="core_cold_calls", call=name, warm_us=round(warm, 2),
             after_sweep_us=round(cold, 2), ratio=round(cold / warm, 1))


if __name__ == "__main__":
    main()
