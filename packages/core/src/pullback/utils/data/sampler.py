"""Samplers: the order in which a DataLoader visits a map-style dataset, as PyTorch's.

Random samplers draw from a NumPy ``Generator`` (``pullback.Generator().manual_seed(0)``) or,
by default, from the CPU generator that ``pullback.manual_seed`` seeds, fetched at each epoch.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Sequence

import numpy as np


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
    indices drawn with replacement."""

    def __init__(self, data_source: Any, replacement: bool = False,
                 num_samples: int | None = None, generator: Any = None) -> None:
        self.data_source, self.replacement, self.generator = data_source, replacement, generator
        self._num_samples = num_samples
        if num_samples is not None and (not isinstance(num_samples, int) or num_samples <= 0):
            raise ValueError(f"RandomSampler: num_samples should be a positive integer, got "
                             f"{num_samples!r}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n, gen = len(self.data_source), _generator(self.generator)
        if self.replacement:
            return iter(gen.integers(0, n, size=self.num_samples).tolist())
        # Without replacement, num_samples > n walks whole permutations, as PyTorch.
        rounds = -(-self.num_samples // n) if n else 0
        order = np.concatenate([gen.permutation(n) for _ in range(rounds)] or [np.zeros(0, int)])
        return iter(order[:self.num_samples].tolist())

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices, self.generator = indices, generator

    def __iter__(self) -> Iterator[int]:
        order = _generator(self.generator).permutation(len(self.indices))
        return iter([self.indices[i] for i in order.tolist()])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Any = None) -> None:
        self.weights = np.asarray(weights, dtype=np.float64)
        if self.weights.ndim != 1 or (self.weights < 0).any() or not self.weights.sum() > 0:
            raise ValueError("WeightedRandomSampler: weights must be a 1-d sequence of "
                             "non-negative numbers with a positive sum")
        if not replacement and num_samples > np.count_nonzero(self.weights):
            raise ValueError(f"WeightedRandomSampler: cannot draw {num_samples} samples without "
                             f"replacement from {np.count_nonzero(self.weights)} nonzero weights")
        self.num_samples, self.replacement, self.generator = num_samples, replacement, generator

    def __iter__(self) -> Iterator[int]:
        chosen = _generator(self.generator).choice(
            len(self.weights), size=self.num_samples, replace=self.replacement,
            p=self.weights / self.weights.sum())
        return iter(chosen.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler`` (the last one shorter, or dropped)."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"BatchSampler: batch_size should be a positive integer, got "
                             f"{batch_size!r}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for index in self.sampler:
            batch.append(int(index))
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
