"""``pullback.cuda.amp``: PyTorch's older CUDA-only spellings of :mod:`pullback.amp`
(``torch.cuda.amp.autocast(enabled, dtype)``, ``torch.cuda.amp.GradScaler(init_scale, ...)``),
with PyTorch's deprecation warning. Without a GPU both disable themselves with PyTorch's
warning, so a script written for a GPU runs on the CPU."""

from __future__ import annotations

import warnings
from typing import Any

from pullback.dtypes import float16

from . import autocast_mode, grad_scaler


class autocast(autocast_mode.autocast):  # noqa: N801 - torch.cuda.amp.autocast's name
    """``autocast("cuda", dtype, enabled)`` with ``torch.cuda.amp.autocast``'s signature."""

    def __init__(self, enabled: bool = True, dtype: Any = float16,
                 cache_enabled: bool = True) -> None:
        warnings.warn("`pullback.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`pullback.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(grad_scaler.GradScaler):
    """``GradScaler("cuda", ...)`` with ``torch.cuda.amp.GradScaler``'s signature."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        warnings.warn("`pullback.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`pullback.amp.GradScaler('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


__all__ = ["GradScaler", "autocast"]
