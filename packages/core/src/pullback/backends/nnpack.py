"""``torch.backends.nnpack``: pullback does not use NNPACK."""

from __future__ import annotations

import sys
from typing import Any, ContextManager

from . import _switches

enabled = True


def is_available() -> bool:
    """False: pullback does not use NNPACK."""
    return False


def set_flags(_enabled: bool) -> tuple[Any, ...]:
    """Set the flag; its value before."""
    return tuple(_switches.set_flags(sys.modules[__name__], enabled=_enabled).values())


def flags(enabled: bool = False) -> ContextManager[None]:
    """The flag set for a ``with`` block."""
    return _switches.flags(sys.modules[__name__], enabled=enabled)
