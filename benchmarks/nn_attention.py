"""nn's scaled-dot-product attention on the CPU at the benchmark GPT's shapes (batch 32, 4
heads, 64 positions, head dim 32, causal, float32), pullback vs PyTorch in one process: the
forward alone and forward + backward. q, k and v are the GPT's head views of one packed QKV
projection, and the output's heads are merged back ((B, H, T, D) -> (B, T, H * D)), as in the
model. Printed per case: pullback, PyTorch (its fused flash-attention CPU kernel) and their
ratio; and nn's fused C kernels (``_csrc/attention.c``) against the op composition they replace
(batched matrix products, nn's C softmax and softmax backward, the heads' merge copy) on the
same arrays. Every side is timed in alternating rounds (best of each). No target of its own:
the GPT step (benchmarks/compiler_gpt_step.py) is the target these kernels serve.

    python benchmarks/nn_attention.py                          # 2 threads, wall clock
    python benchmarks/nn_attention.py --threads 1 --clock cpu  # work per call, on a busy machine
"""

from __future__ import annotations

# Imported first: it applies --threads before NumPy loads.
from _nn_bench import OPTIONS, emit, torch_module

import os
import time

import numpy as np

import pullback
import pullback.nn.functional as F
from _common import best_times
from pullback.nn._ops import attention

BATCH, HEADS, LENGTH, DIM = 32, 4, 64, 32
SCALE = 1.0 / DIM ** 0.5
_clock = time.process_time if OPTIONS.clock == "cpu" else time.perf_counter


def _heads(a: np.ndarray) -> np.ndarray:
    """(B, T, H * D) -> the (B, H, T, D) view the GPT attends over."""
    return a.reshape(BATCH, LENGTH, HEADS, DIM).transpose(0, 2, 1, 3)


def _merged(y: np.ndarray) -> np.ndarray:
    """(B, H, T, D) -> (B, T, H * D): a view when y is laid out (B, T, H, D), else a copy."""
    return y.transpose(0, 2, 1, 3).reshape(BATCH, LENGTH, HEADS * DIM)


def kernel_steps(q, k, v, g, fused: bool):
    """(forward, forward + backward) on raw arrays: nn's fused kernels or the composition."""
    forward, backward = attention._sdpa_kernel(np), attention._sdpa_backward_kernel(np)
    if not fused:
        forward, backward = forward.__wrapped__, backward.__wrapped__

    def run_forward():
        out, saved = forward(q, k, v, None, None, scale=SCALE, causal=True)
        return _merged(out), saved

    def run_both():
        _, (weights,) = run_forward()
        return [_merged(x) for x in backward(g, q, k, v, weights, scale=SCALE, causal=True)]

    return run_forward, run_both


def main() -> None:
    torch = torch_module()
    rng = np.random.default_rng(0)
    width = HEADS * DIM
    qkv = rng.standard_normal((BATCH, LENGTH, 3 * width)).astype(np.float32)
    q, k, v = (_heads(qkv[..., i * width:(i + 1) * width]) for i in range(3))
    g_merged = rng.standard_normal((BATCH, LENGTH, width)).astype(np.float32)
    g = _heads(g_merged)

    ours = [pullback.tensor(np.ascontiguousarray(a), requires_grad=True) for a in (q, k, v)]
    ours_qkv = pullback.tensor(qkv)
    theirs_qkv = torch.from_numpy(qkv.copy())
    theirs = [t.clone().requires_grad_() for t in
              (torch.from_numpy(np.ascontiguousarray(a)) for a in (q, k, v))]
    pb_g, torch_g = pullback.tensor(g_merged), torch.from_numpy(g_merged.copy())

    def pb_forward():
        with pullback.no_grad():
            heads = [ours_qkv[..., i * width:(i + 1) * width].reshape(BATCH, LENGTH, HEADS, DIM)
                     .transpose(1, 2) for i in range(3)]
            y = F.scaled_dot_product_attention(*heads, is_causal=True)
            return y.transpose(1, 2).reshape(BATCH, LENGTH, width)

    def torch_forward():
        with torch.no_grad():
            heads = [theirs_qkv[..., i * width:(i + 1) * width].reshape(BATCH, LENGTH, HEADS, DIM)
                     .transpose(1, 2) for i in range(3)]
            y = torch.nn.functional.scaled_dot_product_attention(*heads, is_causal=True)
            return y.transpose(1, 2).reshape(BATCH, LENGTH, width)

    def pb_both():
        y = F.scaled_dot_product_attention(*ours, is_causal=True)
        y.transpose(1, 2).reshape(BATCH, LENGTH, width).backward(pb_g)

    def torch_both():
        y = torch.nn.functional.scaled_dot_product_attention(*theirs, is_causal=True)
        y.transpose(1, 2).reshape(BATCH, LENGTH, width).backward(torch_g)

    # the same numbers before any timing
    with torch.no_grad():
        np.testing.assert_allclose(pb_forward().numpy(), torch_forward().numpy(), rtol=1e-5,
                                   atol=1e-6)

    fused = kernel_steps(q, k, v, g, fused=True)
    composed = kernel_steps(q, k, v, g, fused=False)
    cases = {"forward": (pb_forward, torch_forward, fused[0], composed[0]),
             "forward_backward": (pb_both, torch_both, fused[1], composed[1])}
    for name, (pb_step, torch_step, fused_step, composed_step) in cases.items():
        pb_t, torch_t, fused_t, composed_t = best_times(
            pb_step, torch_step, fused_step, composed_step, rounds=5, repeat=10, clock=_clock)
        flops = BATCH * HEADS * LENGTH * LENGTH * DIM * 2 * (2 if name == "forward" else 6)
        emit(benchmark=f"nn_attention_{name}", shape=[BATCH, HEADS, LENGTH, DIM], causal=True,
             dtype="float32", pullback_ms=round(pb_t * 1e3, 3), torch_ms=round(torch_t * 1e3, 3),
             ratio=round(pb_t / torch_t, 3), fused_kernel_ms=round(fused_t * 1e3, 3),
             composed_kernel_ms=round(composed_t * 1e3, 3),
             fused_speedup_over_composed=round(composed_t / fused_t, 2),
             # the products' flops without the causal half skipped: a rate to compare with
             # NumPy's batched matmul on the same shapes
             fused_dense_gflops=round(flops / fused_t / 1e9, 1), threads=OPTIONS.threads,
             clock=OPTIONS.clock, load_1min=round(os.getloadavg()[0], 2))
    qc, kc = np.ascontiguousarray(q), np.ascontiguousarray(k)
    (matmul_t,) = best_times(lambda: np.matmul(qc, kc.swapaxes(-1, -2)), rounds=3, repeat=10,
                             clock=_clock)
    emit(benchmark="nn_attention_numpy_matmul", what="q @ k^T, (32, 4, 64, 32) x (32, 4, 32, 64)",
         ms=round(matmul_t * 1e3, 3),
         gflops=round(BATCH * HEADS * LENGTH * LENGTH * DIM * 2 / matmul_t / 1e9, 1),
         threads=OPTIONS.threads, clock=OPTIONS.clock, load_1min=round(os.getloadavg()[0], 2))


if __name__ == "__main__":
    main()
