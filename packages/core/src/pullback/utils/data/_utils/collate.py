"""``torch.utils.data._utils.collate``'s path: the collate functions (defined in
:mod:`pullback.utils.data.collate`)."""

from ..collate import default_collate, default_convert

__all__ = ["default_collate", "default_convert"]
