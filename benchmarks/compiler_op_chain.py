"""The 1,000-small-op chain of benchmarks/core_overhead.py (8-element tensors, forward and
backward), compiled, against eager pullback and PyTorch eager. Target: at least 5x faster than
eager pullback (the Python dispatch of 2,500 ops is gone; fusion leaves two C loops).

    python benchmarks/compiler_op_chain.py [--threads 1 --clock cpu]
"""

from __future__ import annotations

# Imported first: it applies --threads before NumPy loads.
from _nn_bench import OPTIONS, torch_module  # isort: skip

import numpy as np

import pullback as pb
import pullback.compiler as pc
from _common import best_times, emit
from compiler_gpt_step import _clock, compile_seconds
from core_overhead import N_OPS, chain

TARGET = 5.0


def main() -> None:
    torch = torch_module()
    rng = np.random.default_rng(0)
    x0, w0 = rng.standard_normal(8).astype(np.float32), rng.standard_normal(8).astype(np.float32)

    def forward_backward(x, w):
        loss = chain(x, w)
        loss.backward()
        return loss

    compiled = pc.compile(forward_backward, fullgraph=True)

    def leaves():
        return pb.tensor(x0, requires_grad=True), pb.tensor(w0, requires_grad=True)

    def run_eager():
        return forward_backward(*leaves())

    def run_compiled():
        return compiled(*leaves())

    def run_torch():
        x, w = torch.tensor(x0, requires_grad=True), torch.tensor(w0, requires_grad=True)
        chain(x, w).backward()

    compile_s = compile_seconds(run_compiled)
    x, w = leaves()
    ex, ew = leaves()
    compiled(x, w)
    forward_backward(ex, ew)
    agree = float(max(np.abs(x.grad.array - ex.grad.array).max(),
                      np.abs(w.grad.array - ew.grad.array).max()))
    t_eager, t_compiled, t_torch = best_times(run_eager, run_compiled, run_torch, repeat=20,
                                              clock=_clock())
    entry = compiled.entries[-1]
    emit(benchmark="compiler_op_chain", ops=N_OPS, elements=8,
         pullback_eager_ms=round(t_eager * 1e3, 3), pullback_compiled_ms=round(t_compiled * 1e3, 3),
         torch_eager_ms=round(t_torch * 1e3, 3),
         speedup_vs_pullback_eager=round(t_eager / t_compiled, 2), target=TARGET,
         meets_target=t_eager / t_compiled >= TARGET,
         compiled_vs_torch_eager=round(t_compiled / t_torch, 3),
         nodes_traced=len(entry.traced_graph.nodes), nodes_compiled=len(entry.graph.nodes),
         max_grad_difference=agree, compile_s=round(compile_s, 2), threads=OPTIONS.threads,
         clock=OPTIONS.clock)


if __name__ == "__main__":
    main()
