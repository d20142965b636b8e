"""Calling an nn op from a grad rule: its name has a dot, so ``F.nn.x`` cannot be spelled."""

from __future__ import annotations

from typing import Any

from pullback.registry import Op


def op_in(F: Any, op: Op) -> Any:
    """``op`` in the namespace ``F`` (raw arrays in first-order backward, Tensors otherwise)."""
    return getattr(F, op.name)
