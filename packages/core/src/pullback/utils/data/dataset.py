"""Datasets, as ``torch.utils.data``'s: map-style and iterable, and their combinations."""

from __future__ import annotations

import bisect
import math
from typing import Any, Iterator, Sequence

import numpy as np

from pullback.errors import ShapeError
from pullback.tensor import Tensor


class Dataset:
    """A map-style dataset: ``len(ds)`` items, ``ds[i]`` the i-th; ``a + b`` concatenates.

    Subclasses may also define ``__getitems__(indices)`` returning a ready batch; the
    :class:`~pullback.utils.data.DataLoader` then skips per-item collation (much faster for
    in-memory data) unless it is given a ``collate_fn``.
    """

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of items (``__iter__``), for data that cannot be indexed. With
    ``num_workers > 0`` every worker iterates its own copy: shard the stream in ``__iter__``
    with :func:`~pullback.utils.data.get_worker_info`, as in PyTorch."""

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")

    def __getitem__(self, index: int) -> Any:
        raise TypeError(f"{type(self).__name__} is an IterableDataset: it is iterated, not indexed")


class TensorDataset(Dataset):
    """Items are ``(t0[i], t1[i], ...)`` for tensors sharing their first dimension."""

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset: give at least one tensor")
        n = tensors[0].shape[0]
        for t in tensors:
            if t.shape[0] != n:
                raise ShapeError("TensorDataset: tensors must share their first dimension, got "
                                 + ", ".join(str(tuple(t.shape)) for t in tensors))
        self.tensors = tensors

    def __getitem__(self, index: int) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __getitems__(self, indices: Sequence[int]) -> tuple[Tensor, ...]:
        idx = np.asarray(indices, dtype=np.int64)
        return tuple(Tensor._wrap(t.array[t.device.backend.asarray(idx)], t.device)
                     for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The items of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Any, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = [int(i) for i in indices]

    def __getitem__(self, index: int) -> Any:
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __getitems__(self, indices: Sequence[int]) -> Any:
        """The batch at ``indices`` (the DataLoader's fast path): the dataset's own
        ``__getitems__`` if it has one, else its items collated."""
        chosen = [self.indices[int(i)] for i in indices]
        if hasattr(self.dataset, "__getitems__"):
            return self.dataset.__getitems__(chosen)
        from .collate import default_collate

        return default_collate([self.dataset[i] for i in chosen])

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """The items of several map-style datasets, one after the other."""

    def __init__(self, datasets: Sequence[Any]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]).tolist())

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int) -> Any:
        if index < 0:
            if -index > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


def random_split(dataset: Any, lengths: Sequence[int | float],
                 generator: Any = None) -> list[Subset]:
    """Split ``dataset`` into non-overlapping random :class:`Subset` s of the given lengths, or
    fractions of its length (rounded down, the remainder given one by one to the first
    subsets, as PyTorch).

    Args:
        generator: a NumPy ``Generator`` (``pullback.Generator().manual_seed(42)``); by default
            the CPU generator that ``pullback.manual_seed`` seeds.
    """
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = [int(math.floor(n * frac)) for frac in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
    else:
        sizes = [int(length) for length in lengths]
    if sum(sizes) != n:
        raise ValueError(f"random_split: the lengths {list(lengths)} sum to {sum(sizes)}, "
                         f"not to the dataset's length {n}")
    if generator is None:
        from pullback.backends import Device

        generator = Device("cpu").backend.generator()
    order = generator.permutation(n).tolist()
    bounds = np.cumsum([0, *sizes]).tolist()
    return [Subset(dataset, order[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:])]
