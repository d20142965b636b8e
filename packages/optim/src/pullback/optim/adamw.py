"""``torch.optim.adamw``'s path: ``AdamW`` (defined with ``Adam`` in :mod:`.adam`)."""

from .adam import AdamW

__all__ = ["AdamW"]
