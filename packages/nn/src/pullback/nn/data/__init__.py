"""Data loading: datasets, a batching loader, IDX readers and (Fashion-)MNIST."""

from .dataset import Dataset, TensorDataset
from .fashion_mnist import MNIST, FashionMNIST, MNISTFormat
from .idx import read_idx
from .loader import DataLoader, default_collate

__all__ = ["DataLoader", "Dataset", "FashionMNIST", "MNIST", "MNISTFormat", "TensorDataset",
           "default_collate", "read_idx"]
