"""``torch.nn.attention``: the attention backend choice. pullback's
``scaled_dot_product_attention`` has one kernel per device, so ``sdpa_kernel`` accepts any choice
of backends and changes nothing."""

from __future__ import annotations

import contextlib
import enum
from typing import Any, Iterator

__all__ = ["SDPBackend", "sdpa_kernel"]


class SDPBackend(enum.IntEnum):
    """PyTorch's attention backends (the values are PyTorch's)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


@contextlib.contextmanager
def sdpa_kernel(backends: Any, set_priority: bool = False) -> Iterator[None]:
    """``with sdpa_kernel(SDPBackend.FLASH_ATTENTION):``: accepted, without effect."""
    for backend in backends if isinstance(backends, (list, tuple)) else [backends]:
        if not isinstance(backend, SDPBackend):
            raise ValueError(f"sdpa_kernel: expected SDPBackend values, got {backend!r}")
    yield
