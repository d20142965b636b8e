"""The ops pullback.spanda adds to the op registry (registered by :mod:`pullback.spanda._plugin`):
the spike (Heaviside forward, surrogate backward) and the leaky membrane over time."""

from __future__ import annotations

from .leaky import LEAKY
from .spike import SPIKE

SPANDA_OPS = (SPIKE, LEAKY)

__all__ = ["SPANDA_OPS"]
