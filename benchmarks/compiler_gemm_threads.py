"""The matrix products of one GPT layer's training step (benchmarks/gpt_step.py's width 128,
2,048 tokens) as eager and compiled programs run them on core's GEMM provider (MKL sequential,
each product's rows split over pullback's threads on core's C thread pool), against
``torch.matmul`` (MKL on PyTorch's OpenMP threads) on the same operands, and against the same
products on one thread. Requires MKL as the provider (the ``mkl`` wheel, a dependency of pullback
on x86-64 Linux).

    python benchmarks/compiler_gemm_threads.py              # 2 threads, wall clock
    python benchmarks/compiler_gemm_threads.py --threads 1
"""

from __future__ import annotations

# Imported first: it applies --threads before NumPy loads.
from _nn_bench import OPTIONS, torch_module  # isort: skip

from typing import Any, Callable

import numpy as np

import pullback as pb
from _common import best_time, emit
from pullback import _gemm

TOKENS = 2048
# (inputs, outputs) of the layer's four linears: QKV, attention output, MLP up, MLP down
LINEARS = [(128, 384), (128, 128), (128, 512), (512, 128)]


def best_ms(fn: Callable[[], Any]) -> float:
    return best_time(fn, repeat=100) * 1e3


def products(rng: np.random.Generator) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Each linear's forward, input gradient and weight gradient (a transposed left operand,
    as the compiled backward passes it)."""
    cases = []
    for i, o in LINEARS:
        cases.append((f"forward {i}->{o}", rng.standard_normal((TOKENS, i), dtype=np.float32),
                      rng.standard_normal((i, o), dtype=np.float32)))
        cases.append((f"input gradient {i}->{o}", rng.standard_normal((TOKENS, o),
                                                                       dtype=np.float32),
                      rng.standard_normal((o, i), dtype=np.float32)))
        cases.append((f"weight gradient {i}->{o}", rng.standard_normal((TOKENS, o),
                                                                        dtype=np.float32).T,
                      rng.standard_normal((TOKENS, i), dtype=np.float32)))
    return cases


def main() -> None:
    torch = torch_module()
    if _gemm.provider() != "mkl":
        raise SystemExit("MKL is not the GEMM provider: pip install mkl (and PULLBACK_GEMM unset)")
    totals = {"pullback": 0.0, "pullback_one_thread": 0.0, "torch": 0.0}
    threads = pb.get_num_threads()
    for name, x, y in products(np.random.default_rng(0)):
        tx, ty = torch.from_numpy(np.ascontiguousarray(x.T)).T, torch.from_numpy(y)
        ours = best_ms(lambda x=x, y=y: _gemm.matmul(x, y))
        pb.set_num_threads(1)
        one = best_ms(lambda x=x, y=y: _gemm.matmul(x, y))
        pb.set_num_threads(threads)
        theirs = best_ms(lambda tx=tx, ty=ty: torch.matmul(tx, ty))
        gflop = 2 * x.shape[0] * x.shape[1] * y.shape[1] / 1e9
        for key, ms in (("pullback", ours), ("pullback_one_thread", one), ("torch", theirs)):
            totals[key] += ms
        emit(benchmark="compiler_gemm_threads", product=name, m_k_n=[*x.shape, y.shape[1]],
             pullback_ms=round(ours, 3), pullback_one_thread_ms=round(one, 3),
             torch_ms=round(theirs, 3), pullback_gflops=round(gflop / ours * 1e3, 1),
             torch_gflops=round(gflop / theirs * 1e3, 1), ratio=round(ours / theirs, 3),
             threads=OPTIONS.threads)
    emit(benchmark="compiler_gemm_threads", product="the layer's twelve",
         **{f"{k}_ms": round(v, 2) for k, v in totals.items()},
         ratio=round(totals["pullback"] / totals["torch"], 3),
         speedup_over_one_thread=round(totals["pullback_one_thread"] / totals["pullback"], 2),
         threads=OPTIONS.threads)


if __name__ == "__main__":
    main()
