"""``torch.utils.data._utils``'s path, for the one module ported code imports from it
(``from torch.utils.data._utils.collate import default_collate``)."""

from . import collate

__all__ = ["collate"]
