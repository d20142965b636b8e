"""``torch.backends.opt_einsum``: how ``einsum`` orders its contractions. pullback's ``einsum``
lets NumPy choose the order (``numpy.einsum(optimize=True)``); ``enabled`` and ``strategy`` are
accepted and recorded."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import Any, ContextManager

from . import _switches

enabled = True
strategy = "auto"


def is_available() -> bool:
    """Whether the ``opt_einsum`` package is installed."""
    return importlib.util.find_spec("opt_einsum") is not None


def get_opt_einsum() -> ModuleType | None:
    """The ``opt_einsum`` package, or None when it is not installed."""
    return importlib.import_module("opt_einsum") if is_available() else None


def set_flags(_enabled: bool | None = None, _strategy: str | None = None) -> tuple[Any, ...]:
    """Set the flags given; their values before."""
    before = _switches.set_flags(sys.modules[__name__], enabled=_enabled, strategy=_strategy)
    return tuple(before.values())


def flags(enabled: bool | None = None, strategy: str | None = None) -> ContextManager[None]:
    """The flags set for a ``with`` block."""
    return _switches.flags(sys.modules[__name__], enabled=enabled, strategy=strategy)
