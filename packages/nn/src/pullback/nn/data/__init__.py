"""Data sets and readers: IDX files and (Fashion-)MNIST; the datasets, samplers and DataLoader
are :mod:`pullback.utils.data`'s, re-exported here."""

from pullback.utils.data import (
    BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset, RandomSampler, Sampler,
    SequentialSampler, Subset, SubsetRandomSampler, TensorDataset, WeightedRandomSampler,
    default_collate, get_worker_info, random_split,
)

from .fashion_mnist import MNIST, FashionMNIST, MNISTFormat
from .idx import read_idx

__all__ = ["BatchSampler", "ConcatDataset", "DataLoader", "Dataset", "FashionMNIST",
           "IterableDataset", "MNIST", "MNISTFormat", "RandomSampler", "Sampler",
           "SequentialSampler", "Subset", "SubsetRandomSampler", "TensorDataset",
           "WeightedRandomSampler", "default_collate", "get_worker_info", "random_split",
           "read_idx"]
