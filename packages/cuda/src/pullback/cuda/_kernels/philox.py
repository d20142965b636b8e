"""Raw Philox4x32-10 blocks on the current GPU (``philox.cu``), for :mod:`pullback.cuda._random`."""

from __future__ import annotations

from typing import Any

import numpy as np

THREADS = 256


def philox_blocks(blocks: int, seed: int, offset: int) -> Any:
    """``4 * blocks`` uint32 words: blocks ``offset .. offset + blocks - 1`` of ``seed``'s
    stream, on the current device."""
    import cupy

    from ._module import launch

    out = cupy.empty(4 * blocks, dtype=np.uint32)
    if blocks:
        launch("philox", "philox4x32_10", (-(-blocks // THREADS),), (THREADS,), (
            out, np.int64(blocks), np.uint64(seed), np.uint64(offset)))
    return out
