"""DistributedSampler: each rank's disjoint share of a dataset, reshuffled per epoch."""

from __future__ import annotations

import math
from typing import Any, Iterator

import numpy as np

from ._group import get_rank, get_world_size


class DistributedSampler:
    """The indices of rank ``rank``'s shard of ``dataset``, for ``DataLoader(sampler=...)``,
    with torch's ``DistributedSampler`` semantics.

    Args:
        dataset: anything with ``len()``.
        num_replicas, rank: the shard count and this shard (default: the world's size and
            this process's rank).
        shuffle: a new permutation each epoch, the same on every rank (seeded with
            ``seed + epoch``; call :meth:`set_epoch` at the start of each epoch).
        seed: the shuffling seed.
        drop_last: drop the tail so that shards are equal without repeating indices; otherwise
            the first indices are repeated to pad the last shards.
    """

    def __init__(self, dataset: Any, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        num_replicas = get_world_size() if num_replicas is None else num_replicas
        rank = get_rank() if rank is None else rank
        if num_replicas < 1 or not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedSampler: rank {rank} is outside 0..{num_replicas - 1}")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last
        self.epoch = 0
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def set_epoch(self, epoch: int) -> None:
        """Use ``epoch``'s permutation (every rank must call it with the same epoch)."""
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        order = (np.random.default_rng(self.seed + self.epoch).permutation(n) if self.shuffle
                 else np.arange(n))
        if self.drop_last:
            order = order[:self.total_size]
        elif self.total_size > n:
            order = np.concatenate([order, np.resize(order, self.total_size - n)])
        return iter(order[self.rank:self.total_size:self.num_replicas].tolist())

    def __len__(self) -> int:
        return self.num_samples
