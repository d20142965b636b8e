"""Dropout, with masks drawn from the device's seeded generator (``pullback.manual_seed``)."""

from __future__ import annotations

from typing import Any

import pullback
from pullback.tensor import Tensor


def keep_mask(shape: tuple[int, ...], p: float, like: Tensor) -> Tensor:
    """A tensor of ``1/(1-p)`` (kept, with probability ``1-p``) and ``0`` (dropped)."""
    u = pullback.rand(*shape, dtype="float32", device=like.device)
    # Ops, not array code: under vmap(randomness="different") u holds one draw per sample.
    return (u >= p).to(like.dtype) * (1.0 / (1.0 - p))


def check_p(where: str, p: Any) -> float:
    """``p`` as a float in [0, 1]."""
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{where}: dropout probability must be in [0, 1], got {p}")
    return p


def dropout(input: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)`` (identity
    when not ``training`` or ``p == 0``)."""
    p = check_p("dropout", p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    return input * keep_mask(tuple(input.shape), p, input)
