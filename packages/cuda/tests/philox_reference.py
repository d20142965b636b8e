"""Philox4x32-10 in NumPy: the reference the CUDA kernel is checked against, and the block
source that lets the generator's sampling be tested on the CPU."""

from __future__ import annotations

import numpy as np

M0, M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
W0, W1 = 0x9E3779B9, 0xBB67AE85
LOW32 = np.uint64(0xFFFFFFFF)


def philox4x32_10(counters: np.ndarray, key: tuple[int, int]) -> np.ndarray:
    """Blocks for ``counters`` (n x 4 uint32) under ``key`` (two uint32): n x 4 uint32."""
    c = counters.astype(np.uint64)
    k0, k1 = key
    for r in range(10):
        if r:
            k0, k1 = (k0 + W0) & 0xFFFFFFFF, (k1 + W1) & 0xFFFFFFFF
        p0 = M0 * c[:, 0]
        p1 = M1 * c[:, 2]
        c = np.stack([(p1 >> np.uint64(32)) ^ c[:, 1] ^ np.uint64(k0), p1 & LOW32,
                      (p0 >> np.uint64(32)) ^ c[:, 3] ^ np.uint64(k1), p0 & LOW32], axis=1)
    return c.astype(np.uint32)


def philox_blocks(blocks: int, seed: int, offset: int) -> np.ndarray:
    """The same stream as ``pullback.cuda._kernels.philox.philox_blocks``, on the host."""
    j = np.uint64(offset) + np.arange(blocks, dtype=np.uint64)
    counters = np.stack([j & LOW32, j >> np.uint64(32), np.zeros_like(j), np.zeros_like(j)],
                        axis=1)
    key = (seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF)
    return philox4x32_10(counters, key).reshape(-1)
