"""``torch.backends.cudnn``: pullback uses no cuDNN.

The switches ported scripts set (``benchmark = True``, ``deterministic = True``, ``enabled``,
``allow_tf32``) are accepted and change nothing: pullback's kernels pick no algorithm by timing
and give the same bits on every run. ``is_available()`` is False and ``version()`` None, as
PyTorch's without cuDNN.
"""

from __future__ import annotations

import sys
from typing import Any, ContextManager

from . import _switches

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: pullback does not use cuDNN."""
    return False


def version() -> None:
    """None: no cuDNN."""
    return None


def is_acceptable(tensor: Any) -> bool:
    """False: no tensor runs through cuDNN."""
    return False


def set_flags(_enabled: bool | None = None, _benchmark: bool | None = None,
              _benchmark_limit: int | None = None, _deterministic: bool | None = None,
              _allow_tf32: bool | None = None) -> tuple[Any, ...]:
    """Set the flags given; their values before (PyTorch's signature)."""
    before = _switches.set_flags(sys.modules[__name__], enabled=_enabled, benchmark=_benchmark,
                                 benchmark_limit=_benchmark_limit, deterministic=_deterministic,
                                 allow_tf32=_allow_tf32)
    return tuple(before.values())


def flags(enabled: bool = False, benchmark: bool = False, benchmark_limit: int | None = 10,
          deterministic: bool = False, allow_tf32: bool = True) -> ContextManager[None]:
    """The flags set for a ``with`` block."""
    return _switches.flags(sys.modules[__name__], enabled=enabled, benchmark=benchmark,
                           benchmark_limit=benchmark_limit, deterministic=deterministic,
                           allow_tf32=allow_tf32)
