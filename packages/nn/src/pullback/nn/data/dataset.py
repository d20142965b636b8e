"""``Dataset`` and ``TensorDataset`` (PyTorch's map-style datasets)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from pullback.errors import ShapeError
from pullback.tensor import Tensor


class Dataset:
    """A map-style dataset: ``len(ds)`` items, ``ds[i]`` the i-th.

    Subclasses may also define ``__getitems__(indices)`` returning a ready batch; the
    :class:`~pullback.nn.data.DataLoader` then skips per-item collation (much faster for
    in-memory data).
    """

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__")


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
