"""Large ops, forward + backward, side by side with PyTorch (ratios), plus pullback's peak memory.

* matmul 1024x1024 float32 (target ratio <= 1.1)
* a broadcasting elementwise chain on 4M float32 elements, tanh(a * b + a) * c (target <= 1.5)
* exact GELU on 4M float32 elements (no target: the activation of the GPT's MLP)
* split of a (32, 64, 384) float32 tensor into q, k, v, each weighted and summed (no target:
  the attention input of the GPT benchmark's layers, where the slices' gradients meet)

Run: python benchmarks/core_large_ops.py
"""

from __future__ import annotations

import numpy as np

import pullback as pb
from _common import best_times, emit, peak_memory, torch_or_exit


def main() -> None:
    torch = torch_or_exit()
    rng = np.random.default_rng(0)

    n = 1024
    a0, b0 = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))

    def matmul(lib, a, b):
        (a @ b).sum().backward()

    pa, pb_ = pb.tensor(a0, requires_grad=True), pb.tensor(b0, requires_grad=True)
    ta, tb = torch.tensor(a0, requires_grad=True), torch.tensor(b0, requires_grad=True)
    t_pb, t_torch = best_times(lambda: matmul(pb, pa, pb_), lambda: matmul(torch, ta, tb))
    emit(benchmark="matmul_fwd_bwd", n=n, dtype="float32", pullback_ms=t_pb * 1e3,
         torch_ms=t_torch * 1e3, ratio=t_pb / t_torch, target=1.1,
         pullback_peak_mb=peak_memory(lambda: matmul(pb, pa, pb_)) / 2**20)

    rows, cols = 2048, 2048  # 4M elements
    x0 = rng.standard_normal((rows, cols)).astype(np.float32)
    r0 = rng.standard_normal((1, cols)).astype(np.float32)
    c0 = rng.standard_normal((rows, 1)).astype(np.float32)

    def chain(x, r, c):
        ((x * r + x).tanh() * c).sum().backward()

    px, pr, pc = (pb.tensor(v, requires_grad=True) for v in (x0, r0, c0))
    tx, tr, tc = (torch.tensor(v, requires_grad=True) for v in (x0, r0, c0))
    t_pb, t_torch = best_times(lambda: chain(px, pr, pc), lambda: chain(tx, tr, tc))
    emit(benchmark="elementwise_chain_fwd_bwd", elements=rows * cols, dtype="float32",
         pullback_ms=t_pb * 1e3, torch_ms=t_torch * 1e3, ratio=t_pb / t_torch, target=1.5,
         pullback_peak_mb=peak_memory(lambda: chain(px, pr, pc)) / 2**20)

    t_pb, t_torch = best_times(lambda: pb.gelu(px).sum().backward(),
                               lambda: torch.nn.functional.gelu(tx).sum().backward())
    emit(benchmark="gelu_fwd_bwd", elements=rows * cols, dtype="float32",
         pullback_ms=t_pb * 1e3, torch_ms=t_torch * 1e3, ratio=t_pb / t_torch)

    qkv0 = rng.standard_normal((32, 64, 384)).astype(np.float32)
    w0 = [rng.standard_normal((32, 64, 128)).astype(np.float32) for _ in range(3)]

    def split(x, ws):
        q, k, v = (x * 1.0).split(128, dim=2)
        ((q * ws[0]).sum() + (k * ws[1]).sum() + (v * ws[2]).sum()).backward()

    pq, tq = pb.tensor(qkv0, requires_grad=True), torch.tensor(qkv0, requires_grad=True)
    pws, tws = [pb.tensor(w) for w in w0], [torch.tensor(w) for w in w0]
    t_pb, t_torch = best_times(lambda: split(pq, pws), lambda: split(tq, tws))
    emit(benchmark="split_qkv_fwd_bwd", shape=list(qkv0.shape), dtype="float32",
         pullback_ms=t_pb * 1e3, torch_ms=t_torch * 1e3, ratio=t_pb / t_torch)


if __name__ == "__main__":
    main()
