"""``torch.backends.mkldnn``: pullback does not use oneDNN; ``enabled`` and the other switches
are accepted and change nothing."""

from __future__ import annotations

import sys
from typing import Any, ContextManager

from . import _switches

enabled = True
deterministic = False
allow_tf32 = False


def is_available() -> bool:
    """False: pullback does not use oneDNN."""
    return False


def set_flags(_enabled: bool | None = None, _deterministic: bool | None = None,
              _allow_tf32: bool | None = None) -> tuple[Any, ...]:
    """Set the flags given; their values before."""
    before = _switches.set_flags(sys.modules[__name__], enabled=_enabled,
                                 deterministic=_deterministic, allow_tf32=_allow_tf32)
    return tuple(before.values())


def flags(enabled: bool = False, deterministic: bool = False,
          allow_tf32: bool = True) -> ContextManager[None]:
    """The flags set for a ``with`` block."""
    return _switches.flags(sys.modules[__name__], enabled=enabled, deterministic=deterministic,
                           allow_tf32=allow_tf32)
