"""``torch.backends.mha``: the switch for PyTorch's fused multi-head-attention inference path;
pullback's attention has one path, so the switch is recorded and changes nothing."""

from __future__ import annotations

_fastpath = True


def get_fastpath_enabled() -> bool:
    """What :func:`set_fastpath_enabled` last set (True by default, as PyTorch)."""
    return _fastpath


def set_fastpath_enabled(value: bool) -> None:
    """Recorded, without effect."""
    global _fastpath
    _fastpath = bool(value)
