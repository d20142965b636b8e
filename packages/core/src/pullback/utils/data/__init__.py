"""``pullback.utils.data``: datasets, samplers and the DataLoader, as ``torch.utils.data``.

The one implementation of data loading in pullback (``pullback.nn.data`` re-exports it next
to its data sets). ``num_workers > 0`` runs real worker processes.

Example:
    >>> import pullback
    >>> from pullback.utils.data import DataLoader, TensorDataset
    >>> data = TensorDataset(pullback.arange(10.0), pullback.arange(10))
    >>> [tuple(x.shape) for x, y in DataLoader(data, batch_size=4)]
    [(4,), (4,), (2,)]
"""

from typing import Any

from ._workers import WorkerInfo, get_worker_info
from .collate import default_collate, default_convert
from .dataset import ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split
from .loader import DataLoader
from .sampler import (
    BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [  # noqa: F822 - DistributedSampler is pullback-distributed's, on first use
    "BatchSampler", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
    "IterableDataset",
    "RandomSampler", "Sampler", "SequentialSampler", "Subset", "SubsetRandomSampler",
    "TensorDataset", "WeightedRandomSampler", "WorkerInfo", "default_collate", "default_convert",
    "get_worker_info", "random_split",
]


def __getattr__(name: str) -> Any:
    if name == "DistributedSampler":  # pullback-distributed's: imported when used
        from .distributed import DistributedSampler

        return DistributedSampler
    raise AttributeError(f"module 'pullback.utils.data' has no attribute '{name}'")
