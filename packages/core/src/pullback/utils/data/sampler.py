"""Samplers: the order in which a DataLoader visits a map-style dataset, as PyTorch's.

Random samplers draw from a NumPy ``Generator`` (``pullback.Generator().manual_seed(0)``) or,
by default, from the CPU generator that ``pullback.manual_seed`` seeds, fetched at each epoch.
They draw lazily, as PyTorch's: nothing before the first index is asked for, and indices with
replacement :data:`CHUNK` at a time, so ``RandomSampler(data, replacement=True,
num_samples=10**10)`` holds a few dozen indices, not 80 GB of them.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Sequence

import itertools

import numpy as np

CHUNK = 32
"""How many indices a sampler drawing with replacement draws at once (PyTorch's 32)."""


def _generator(generator: Any) -> np.random.Generator:
    if generator is not None:
        return np.random.default_rng(generator) if isinstance(generator, int) else generator
    from pullback.backends import Device

    return Device("cpu").backend.generator()


class Sampler:
    """Base class: an iterable of dataset indices (or of batches of them), with ``len``."""

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source: Any) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random order of the indices (a new permutation each epoch), or ``num_samples``
    indices drawn with replacement (:data:`CHUNK` at a time)."""

    def __init__(self, data_source: Any, replacement: bool = False,
                 num_samples: int | None = None, generator: Any = None) -> None:
        self.data_source, self.replacement, self.generator = data_source, replacement, generator
        self._num_samples = num_samples
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got "
                            f"replacement={replacement}")
        n = self.num_samples
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={n}")

    @property
    def num_samples(self) -> int:
        # the dataset may grow or shrink between epochs
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n, gen = len(self.data_source), _generator(self.generator)
        if self.replacement:
            for size in _chunks(self.num_samples):
                yield from gen.integers(0, n, size=size).tolist()
            return
        # Without replacement, num_samples > n walks whole permutations, as PyTorch.
        whole, rest = divmod(self.num_samples, n)
        for _ in range(whole):
            yield from gen.permutation(n).tolist()
        if rest:
            yield from gen.permutation(n)[:rest].tolist()

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order (a new one each epoch)."""

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices, self.generator = indices, generator

    def __iter__(self) -> Iterator[int]:
        for i in _generator(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights`` (with
    replacement :data:`CHUNK` at a time; without, all at once, as at most ``len(weights)``)."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Any = None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        self.weights = np.asarray(weights, dtype=np.float64)
        if self.weights.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{self.weights.shape}")
        if (self.weights < 0).any() or not np.isfinite(self.weights).all() or \
                not self.weights.sum() > 0:
            raise ValueError("WeightedRandomSampler: weights must be finite and non-negative, "
                             "with a positive sum")
        if not replacement and num_samples > np.count_nonzero(self.weights):
            raise ValueError(f"WeightedRandomSampler: cannot draw {num_samples} samples without "
                             f"replacement from {np.count_nonzero(self.weights)} nonzero weights")
        self.num_samples, self.replacement, self.generator = num_samples, replacement, generator

    def __iter__(self) -> Iterator[int]:
        gen = _generator(self.generator)
        p = self.weights / self.weights.sum()
        if not self.replacement:
            yield from gen.choice(len(p), size=self.num_samples, replace=False, p=p).tolist()
            return
        cdf = np.cumsum(p)
        cdf[-1] = 1.0
        last = len(p) - 1
        for size in _chunks(self.num_samples):
            # inverse-CDF sampling, as Generator.choice does; side="right" never picks a zero
            # weight (its CDF step is empty)
            yield from np.minimum(np.searchsorted(cdf, gen.random(size), side="right"),
                                  last).tolist()

    def __len__(self) -> int:
        return self.num_samples


def _chunks(total: int) -> Iterator[int]:
    """The sizes of the draws that make ``total`` indices: :data:`CHUNK`, ..., the rest."""
    whole, rest = divmod(total, CHUNK)
    yield from itertools.repeat(CHUNK, whole)
    if rest:
        yield rest


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler`` (the last one shorter, or dropped)."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self) -> Iterator[list[Any]]:
        indices = iter(self.sampler)
        batch = list(itertools.islice(indices, self.batch_size))
        while batch and (len(batch) == self.batch_size or not self.drop_last):
            yield batch
            batch = list(itertools.islice(indices, self.batch_size))

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
