"""Per-op overhead: a chain of 1,000 ops on 8-element tensors, forward + backward.

pullback time / PyTorch time (target, issue 41: at most 1.1; eager_targets.py times it in separate
processes). Run: python benchmarks/core_overhead.py
[--clock cpu] (``cpu``: process CPU time, steadier than wall time on a busy machine).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import pullback as pb
from _common import best_times, emit, torch_or_exit

N_OPS = 1000
TARGET = 1.1


def chain(x, w):
    for _ in range(N_OPS // 4):
        x = x * w
        x = x + w
        x = x.tanh()
        x = x - 0.5
    return x.sum()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    clock = time.process_time if parser.parse_args().clock == "cpu" else time.perf_counter
    torch = torch_or_exit()
    rng = np.random.default_rng(0)
    x0, w0 = rng.standard_normal(8).astype(np.float32), rng.standard_normal(8).astype(np.float32)

    def run_pb():
        x, w = pb.tensor(x0, requires_grad=True), pb.tensor(w0, requires_grad=True)
        chain(x, w).backward()

    def run_torch():
        x, w = torch.tensor(x0, requires_grad=True), torch.tensor(w0, requires_grad=True)
        chain(x, w).backward()

    def run_pb_forward():
        with pb.no_grad():
            chain(pb.tensor(x0), pb.tensor(w0))

    def run_torch_forward():
        with torch.no_grad():
            chain(torch.tensor(x0), torch.tensor(w0))

    t_pb, t_torch = best_times(run_pb, run_torch, repeat=20, clock=clock)
    emit(benchmark="op_chain_fwd_bwd", ops=N_OPS, elements=8, pullback_ms=t_pb * 1e3,
         torch_ms=t_torch * 1e3, ratio=t_pb / t_torch, target=TARGET,
         meets_target=t_pb / t_torch <= TARGET)
    f_pb, f_torch = best_times(run_pb_forward, run_torch_forward, repeat=20, clock=clock)
    emit(benchmark="op_chain_fwd_no_grad", ops=N_OPS, elements=8, pullback_ms=f_pb * 1e3,
         torch_ms=f_torch * 1e3, ratio=f_pb / f_torch)


if __name__ == "__main__":
    main()
