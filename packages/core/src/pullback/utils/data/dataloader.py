"""``torch.utils.data.dataloader``'s path: ``DataLoader`` and the collate functions (defined in
:mod:`pullback.utils.data.loader` and :mod:`pullback.utils.data.collate`)."""

from ._workers import get_worker_info
from .collate import default_collate, default_convert
from .loader import DataLoader

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]
