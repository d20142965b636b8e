"""Collects the ops core declares, so that core's own plugin registers them through the hooks."""

from __future__ import annotations

from ..registry import Op

CORE_OPS: list[Op] = []


def declare(op: Op) -> Op:
    """Remember ``op`` for registration by :mod:`pullback._plugin` and return it."""
    CORE_OPS.append(op)
    return op
