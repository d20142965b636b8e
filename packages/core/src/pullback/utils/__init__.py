"""``pullback.utils``: what ported code imports from ``torch.utils`` (``pullback.utils.data``)."""

from . import data

__all__ = ["data"]
