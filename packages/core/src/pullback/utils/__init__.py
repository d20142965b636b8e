"""``pullback.utils``: what ported code imports from ``torch.utils`` (``data``, ``checkpoint``,
``hooks``, ``dlpack``)."""

from . import checkpoint, data, dlpack, hooks

__all__ = ["checkpoint", "data", "dlpack", "hooks"]
