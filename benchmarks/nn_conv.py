"""Conv2d 64->64 3x3 (padding 1) on a batch of 32 images 32x32 with 64 channels, forward and
backward (input, weight and bias gradients): pullback vs PyTorch CPU (2 threads) in one process.
Target: at most 2.0x PyTorch's time. Also prints forward-only times.

    python benchmarks/nn_conv.py                          # 2 threads, wall clock (the target)
    python benchmarks/nn_conv.py --threads 1 --clock cpu  # work per step, on a busy machine
"""

from __future__ import annotations

# Imported first: it applies --threads before NumPy loads.
from _nn_bench import report, time_pair, torch_module

import numpy as np

import pullback
import pullback.nn.functional as F

TARGET = 2.0


def main() -> None:
    torch = torch_module()
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((32, 64, 32, 32)).astype(np.float32)
    w_np = (rng.standard_normal((64, 64, 3, 3)) * 0.05).astype(np.float32)
    b_np = np.zeros(64, np.float32)
    g_np = rng.standard_normal((32, 64, 32, 32)).astype(np.float32)

    tx = torch.tensor(x_np, requires_grad=True)
    tw, tb = torch.tensor(w_np, requires_grad=True), torch.tensor(b_np, requires_grad=True)
    tg = torch.from_numpy(g_np)
    x = pullback.tensor(x_np, requires_grad=True)
    w, b = pullback.tensor(w_np, requires_grad=True), pullback.tensor(b_np, requires_grad=True)
    g = pullback.from_numpy(g_np)

    def torch_step():
        tx.grad = tw.grad = tb.grad = None
        torch.nn.functional.conv2d(tx, tw, tb, padding=1).backward(tg)

    def step():
        x.grad = w.grad = b.grad = None
        F.conv2d(x, w, b, padding=1).backward(g)

    ours, theirs = time_pair(step, torch_step, warmup=2, repeats=5, block=3)
    report("nn_conv2d_fwd_bwd", ours, theirs, TARGET, shape="32x64x32x32, 64->64 3x3")

    def torch_forward():
        with torch.no_grad():
            torch.nn.functional.conv2d(tx, tw, tb, padding=1)

    def forward():
        with pullback.no_grad():
            F.conv2d(x, w, b, padding=1)

    ours_f, theirs_f = time_pair(forward, torch_forward, warmup=2, repeats=5, block=3)
    report("nn_conv2d_fwd", ours_f, theirs_f, TARGET, shape="32x64x32x32, 64->64 3x3")


if __name__ == "__main__":
    main()
