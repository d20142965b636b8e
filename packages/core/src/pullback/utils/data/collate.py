"""``default_collate`` and ``default_convert``: items into batches, as ``torch.utils.data``'s."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

import pullback
from pullback.tensor import Tensor


def default_collate(items: list[Any]) -> Any:
    """Stack a list of items into a batch: tensors and arrays stack along a new first axis,
    numbers become a tensor (int64, float64 or bool, as PyTorch's), strings stay a list, and
    tuples, lists, dicts and namedtuples are collated field by field."""
    first = items[0]
    if isinstance(first, Tensor):
        return pullback.stack(items)
    if isinstance(first, np.ndarray):
        return pullback.tensor(np.stack(items))
    if isinstance(first, (bool, np.bool_)):
        return pullback.tensor(items, dtype=pullback.bool)
    if isinstance(first, (int, np.integer)):
        return pullback.tensor(items, dtype=pullback.int64)
    if isinstance(first, (float, np.floating)):
        return pullback.tensor(items, dtype=pullback.float64)
    if isinstance(first, str):
        return list(items)
    if isinstance(first, Mapping):
        return {k: default_collate([it[k] for it in items]) for k in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):  # a namedtuple
        return type(first)(*(default_collate(list(field)) for field in zip(*items)))
    if isinstance(first, (tuple, list)):
        lengths = {len(it) for it in items}
        if len(lengths) != 1:
            raise RuntimeError("default_collate: each element in the list of items should be of "
                               f"equal size, got sizes {sorted(lengths)}")
        fields = [default_collate(list(field)) for field in zip(*items)]
        return tuple(fields) if isinstance(first, tuple) else fields
    raise TypeError(f"default_collate: cannot batch items of type {type(first).__name__} "
                    "(tensors, NumPy arrays, numbers, strings, dicts, lists and tuples)")


def default_convert(item: Any) -> Any:
    """An unbatched item with its NumPy arrays as tensors (``batch_size=None`` loaders)."""
    if isinstance(item, np.ndarray):
        return pullback.tensor(item)
    if isinstance(item, Mapping):
        return {k: default_convert(v) for k, v in item.items()}
    if isinstance(item, tuple) and hasattr(item, "_fields"):
        return type(item)(*(default_convert(v) for v in item))
    if isinstance(item, (tuple, list)):
        return type(item)(default_convert(v) for v in item)
    return item
