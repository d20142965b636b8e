"""``DataLoader``: batches from a dataset, optionally shuffled with a seeded generator."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Callable, Iterator

import numpy as np

import pullback
from pullback.tensor import Tensor

from .dataset import Dataset


def default_collate(items: list[Any]) -> Any:
    """Stack a list of items into a batch: tensors and arrays stack along a new first axis,
    numbers become a tensor, tuples/lists/dicts are collated field by field."""
    first = items[0]
    if isinstance(first, Tensor):
        return pullback.stack(items)
    if isinstance(first, np.ndarray):
        return pullback.tensor(np.stack(items))
    if isinstance(first, (bool, int, float, np.number)):
        return pullback.tensor(items)
    if isinstance(first, str):
        return list(items)
    if isinstance(first, Mapping):
        return {k: default_collate([it[k] for it in items]) for k in first}
    if isinstance(first, (tuple, list)):
        return type(first)(default_collate(list(field)) for field in zip(*items)) \
            if isinstance(first, tuple) else [default_collate(list(f)) for f in zip(*items)]
    raise TypeError(f"default_collate: cannot batch items of type {type(first).__name__}")


class DataLoader:
    """Iterate over a dataset in batches.

    Args:
        dataset: a :class:`Dataset` (anything with ``__len__`` and ``__getitem__``).
        batch_size: items per batch.
        shuffle: a new random order each epoch.
        drop_last: skip the last batch when it is smaller than ``batch_size``.
        collate_fn: makes a batch from a list of items (default: :func:`default_collate`).
        generator: a NumPy ``Generator`` (or an int seed) for shuffling; by default the CPU
            generator that ``pullback.manual_seed`` seeds.
        sampler: an iterable of dataset indices, drawn anew each epoch (e.g.
            ``pullback.distributed.DistributedSampler``); excludes ``shuffle``.

    Datasets with ``__getitems__`` (such as :class:`TensorDataset`) are batched with one call
    and no collation, unless ``collate_fn`` is given.
    """

    def __init__(self, dataset: Dataset, batch_size: int = 1, shuffle: bool = False,
                 drop_last: bool = False, collate_fn: Callable[[list[Any]], Any] | None = None,
                 generator: Any = None, sampler: Any = None) -> None:
        if batch_size < 1:
            raise ValueError(f"DataLoader: batch_size must be positive, got {batch_size}")
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler and shuffle=True are mutually exclusive (the "
                             "sampler decides the order)")
        self.sampler = sampler
        self.dataset, self.batch_size = dataset, batch_size
        self.shuffle, self.drop_last = shuffle, drop_last
        self.collate_fn = collate_fn
        self.generator = np.random.default_rng(generator) if isinstance(generator, int) \
            else generator

    def _order(self) -> np.ndarray:
        if self.sampler is not None:
            return np.fromiter(iter(self.sampler), dtype=np.int64)
        n = len(self.dataset)
        if not self.shuffle:
            return np.arange(n)
        gen = self.generator
        if gen is None:
            gen = pullback.Device("cpu").backend.generator()
        return gen.permutation(n)

    def __iter__(self) -> Iterator[Any]:
        order = self._order()
        fast = self.collate_fn is None and hasattr(self.dataset, "__getitems__")
        collate = self.collate_fn or default_collate
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            if self.drop_last and len(idx) < self.batch_size:
                break
            if fast:
                yield self.dataset.__getitems__(idx)
            else:
                yield collate([self.dataset[int(i)] for i in idx])

    def __len__(self) -> int:
        n = len(self.sampler) if self.sampler is not None else len(self.dataset)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
