"""``DPDataLoader``: batches by Poisson sampling, the sampling the privacy analysis assumes
(Opacus's ``DPDataLoader``): at each step every example is in the batch with probability
``sample_rate``, independently, so batch sizes vary and a batch may be empty."""

from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

import pullback
from pullback.func._pytree import tree_map
from pullback.nn.data import DataLoader, default_collate
from pullback.tensor import Tensor

from ._accountants import check_sample_rate


def fetch_batch(dataset: Any, indices: np.ndarray,
                collate_fn: Callable[[list[Any]], Any] | None = None) -> Any:
    """The batch of ``dataset`` at ``indices``, as :class:`pullback.nn.data.DataLoader` makes
    it; an empty one has the structure of a one-item batch with zero rows."""
    if collate_fn is None and hasattr(dataset, "__getitems__"):
        return dataset.__getitems__(indices)
    collate = collate_fn or default_collate
    if len(indices) == 0:  # the structure of a batch, without its rows
        return tree_map(lambda x: x[:0] if isinstance(x, Tensor) else x, collate([dataset[0]]))
    return collate([dataset[int(i)] for i in indices])


class DPDataLoader:
    """Poisson-sampled batches of ``dataset``: ``steps`` batches per epoch (``__iter__``), each
    holding every example with probability ``sample_rate``.

    Args:
        dataset: a map-style dataset (``len`` and ``[i]``, or ``__getitems__``).
        sample_rate: the probability that an example is in a batch, in (0, 1].
        steps: batches per epoch (default ``round(1 / sample_rate)``).
        generator: a NumPy ``Generator`` or int seed; by default the CPU generator that
            ``pullback.manual_seed`` seeds.
        collate_fn: makes a batch from a list of items (default: the DataLoader's).
    """

    def __init__(self, dataset: Any, *, sample_rate: float, steps: int | None = None,
                 generator: Any = None, collate_fn: Callable[[list[Any]], Any] | None = None
                 ) -> None:
        self.dataset = dataset
        self.sample_rate = check_sample_rate(sample_rate, "DPDataLoader")
        self.steps = round(1 / self.sample_rate) if steps is None else int(steps)
        self.generator = np.random.default_rng(generator) if isinstance(generator, int) \
            else generator
        self.collate_fn = collate_fn

    @classmethod
    def from_data_loader(cls, loader: DataLoader, generator: Any = None) -> DPDataLoader:
        """The Poisson version of ``loader``: the same dataset and collation, sample rate
        ``1 / len(loader)`` and ``len(loader)`` steps (an epoch sees each example once on
        average)."""
        steps = len(loader)
        return cls(loader.dataset, sample_rate=1 / steps, steps=steps,
                   generator=generator if generator is not None else loader.generator,
                   collate_fn=loader.collate_fn)

    @property
    def expected_batch_size(self) -> float:
        """``sample_rate * len(dataset)``."""
        return self.sample_rate * len(self.dataset)

    def __iter__(self) -> Iterator[Any]:
        n = len(self.dataset)
        for _ in range(self.steps):
            generator = self.generator
            if generator is None:  # fetched each step: pullback.manual_seed replaces it
                generator = pullback.Device("cpu").backend.generator()
            chosen = np.flatnonzero(generator.random(n) < self.sample_rate)
            yield fetch_batch(self.dataset, chosen, self.collate_fn)

    def __len__(self) -> int:
        return self.steps
