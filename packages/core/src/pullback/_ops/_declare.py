"""Collects the ops core declares, so that core's own plugin registers them through the hooks.

A core op's family is the module that declares it (``elementwise``, ``reduce``, ``shape``,
``index``, ``linalg``); the copy op of ``conversion`` and the ops of ``rounding`` and ``bitwise``
count as elementwise.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

from ..dispatch import apply
from ..registry import Op

CORE_OPS: list[Op] = []

_FAMILY_OF_MODULE = {"conversion": "elementwise", "rounding": "elementwise",
                     "bitwise": "elementwise"}


def declare(op: Op) -> Op:
    """Remember ``op`` for registration by :mod:`pullback._plugin`, set its family from the
    declaring module, and return it."""
    if op.family == "other":
        module = sys._getframe(1).f_globals["__name__"].rsplit(".", 1)[-1]
        op.family = _FAMILY_OF_MODULE.get(module, module)
    CORE_OPS.append(op)
    return op


def unary_function(op: Op, note: str = "") -> Callable[[Any], Any]:
    """The public function ``name(x)`` of a one-input op, named and documented after it."""

    def fn(x: Any) -> Any:
        return apply(op, x)

    fn.__name__ = op.name
    fn.__doc__ = f"Elementwise {op.doc}{note}."
    return fn


def binary_function(op: Op, note: str = "") -> Callable[[Any, Any], Any]:
    """The public function ``name(x, y)`` of a two-input op, named and documented after it."""

    def fn(x: Any, y: Any) -> Any:
        return apply(op, x, y)

    fn.__name__ = op.name
    fn.__doc__ = f"Elementwise {op.doc}, with broadcasting{note}."
    return fn
