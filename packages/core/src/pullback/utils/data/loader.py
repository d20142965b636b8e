"""``DataLoader``: batches from a dataset, in one process or in worker processes."""

from __future__ import annotations

import math
from typing import Any, Callable, Iterator

import numpy as np

from ._multiprocess import MultiProcessIterator, WorkerPool
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler, _generator


class DataLoader:
    """Iterate over a dataset in batches, as ``torch.utils.data.DataLoader``.

    Args:
        dataset: a map-style dataset (``len`` and ``[i]``) or an :class:`IterableDataset`.
        batch_size: items per batch; ``None`` yields the items themselves, unbatched.
        shuffle: a new random order each epoch (map-style only).
        sampler: an iterable of indices, drawn anew each epoch (e.g.
            ``pullback.distributed.DistributedSampler``); excludes ``shuffle``.
        batch_sampler: an iterable of lists of indices; excludes ``batch_size``, ``shuffle``,
            ``sampler`` and ``drop_last``.
        num_workers: worker processes that make the batches (0: the main process does). They
            are forked, so the dataset is shared, not pickled; batches come back encoded as
            checkpoints are (tensors, NumPy arrays, numbers, strings and their containers).
        collate_fn: makes a batch from a list of items (default: :func:`default_collate`).
        pin_memory: accepted, and a no-op: host memory needs no pinning on the CPU.
        drop_last: skip the last batch when it is smaller than ``batch_size``.
        timeout: seconds to wait for a worker's batch before raising (0: wait forever).
        worker_init_fn: called with the worker's id in each worker, after seeding.
        multiprocessing_context: only ``"fork"`` (or ``None``): other start methods would
            pickle the dataset.
        generator: a NumPy ``Generator`` (``pullback.Generator().manual_seed(0)``) or int seed
            for shuffling and the workers' seeds; by default the CPU generator that
            ``pullback.manual_seed`` seeds.
        prefetch_factor: batches in flight per worker (default 2 with workers).
        persistent_workers: keep the workers from one epoch to the next.

    Datasets with ``__getitems__`` (such as :class:`TensorDataset`) are batched with one call
    and no collation, unless ``collate_fn`` is given. Each worker seeds pullback, NumPy's
    global generator and ``random`` with ``base_seed + worker_id``, as PyTorch does.
    """

    def __init__(self, dataset: Any, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Any = None, batch_sampler: Any = None, num_workers: int = 0,
                 collate_fn: Callable[[list[Any]], Any] | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context: Any = None, generator: Any = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "") -> None:
        _check_arguments(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers,
                         drop_last, timeout, multiprocessing_context, prefetch_factor,
                         persistent_workers)
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.num_workers, self.collate_fn, self.timeout = num_workers, collate_fn, timeout
        self.pin_memory, self.pin_memory_device = pin_memory, pin_memory_device
        self.worker_init_fn, self.persistent_workers = worker_init_fn, persistent_workers
        self.prefetch_factor = 2 if prefetch_factor is None and num_workers else prefetch_factor
        self.generator = np.random.default_rng(generator) if isinstance(generator, int) \
            else generator
        self.shuffle = bool(shuffle)
        self.sampler: Any
        self.batch_sampler: Any
        if isinstance(dataset, IterableDataset):
            self.sampler = self.batch_sampler = None
        else:
            if sampler is None:
                sampler = RandomSampler(dataset, generator=self.generator) if shuffle \
                    else SequentialSampler(dataset)
            if batch_sampler is None and batch_size is not None:
                batch_sampler = BatchSampler(sampler, batch_size, drop_last)
            self.sampler, self.batch_sampler = sampler, batch_sampler
            if batch_sampler is not None and batch_size is None:
                self.batch_size = None  # batches come ready-made from the batch sampler
        self._pool: WorkerPool | None = None

    # -- making batches (in this process or a worker's) -----------------------------------------
    def _generator(self) -> np.random.Generator:
        return _generator(self.generator)

    def _fetch(self, indices: Any) -> Any:
        """The batch at ``indices`` (a list; one index when batching is off)."""
        if self.batch_sampler is None:  # batch_size=None: items one by one
            return (self.collate_fn or default_convert)(self.dataset[indices])
        if self.collate_fn is None and hasattr(self.dataset, "__getitems__"):
            return self.dataset.__getitems__(indices)
        return (self.collate_fn or default_collate)([self.dataset[int(i)] for i in indices])

    def _iterable_batches(self) -> Iterator[Any]:
        """The batches of an IterableDataset (its items grouped by ``batch_size``)."""
        if self.batch_size is None:
            convert = self.collate_fn or default_convert
            for item in self.dataset:
                yield convert(item)
            return
        collate = self.collate_fn or default_collate
        batch: list[Any] = []
        for item in self.dataset:
            batch.append(item)
            if len(batch) == self.batch_size:
                yield collate(batch)
                batch = []
        if batch and not self.drop_last:
            yield collate(batch)

    def _index_tasks(self) -> Iterator[Any]:
        source: Any = self.batch_sampler if self.batch_sampler is not None else self.sampler
        for indices in source:
            yield [int(i) for i in indices] if self.batch_sampler is not None else int(indices)

    # -- iterating ------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Any]:
        iterable = isinstance(self.dataset, IterableDataset)
        # Drawn at every epoch, with or without workers (as PyTorch), so that the shuffled
        # order from a seeded generator does not depend on num_workers.
        base_seed = int(self._generator().integers(0, 1 << 62))
        if self.num_workers == 0:
            if iterable:
                return self._iterable_batches()
            return (self._fetch(indices) for indices in self._index_tasks())
        pool = self._pool
        if pool is None or not pool.processes:
            pool = WorkerPool(self, base_seed)
            if self.persistent_workers:
                self._pool = pool
        elif pool.current is not None:
            pool.current.drain()
        pool.current = MultiProcessIterator(pool, None if iterable else self._index_tasks())
        return pool.current

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)

    def __del__(self) -> None:
        pool = getattr(self, "_pool", None)
        if pool is not None and pool.processes:
            try:
                pool.close()
            except Exception:
                pass  # interpreter shutdown: the daemon workers die with it


def _check_arguments(dataset: Any, batch_size: int | None, shuffle: bool | None, sampler: Any,
                     batch_sampler: Any, num_workers: int, drop_last: bool, timeout: float,
                     context: Any, prefetch_factor: int | None,
                     persistent_workers: bool) -> None:
    """PyTorch's refusals of contradictory DataLoader arguments, with its messages' sense."""
    if not isinstance(num_workers, int) or num_workers < 0:
        raise ValueError(f"DataLoader: num_workers option should be a non-negative integer, "
                         f"got {num_workers!r}")
    if timeout < 0:
        raise ValueError(f"DataLoader: timeout option should be non-negative, got {timeout}")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("DataLoader: prefetch_factor option could only be specified in "
                         "multiprocessing; let num_workers > 0 to enable multiprocessing")
    if prefetch_factor is not None and prefetch_factor < 1:
        raise ValueError(f"DataLoader: prefetch_factor must be positive, got {prefetch_factor}")
    if persistent_workers and num_workers == 0:
        raise ValueError("DataLoader: persistent_workers option needs num_workers > 0")
    if context not in (None, "fork") and getattr(context, "get_start_method",
                                                  lambda: None)() != "fork":
        raise ValueError(f"DataLoader: multiprocessing_context {context!r} is not supported: "
                         "workers are forked, as other start methods would pickle the dataset")
    if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
        raise ValueError(f"DataLoader: batch_size should be a positive integer, got "
                         f"{batch_size!r}")
    if isinstance(dataset, IterableDataset):
        for name, value in (("shuffle", shuffle), ("sampler", sampler),
                            ("batch_sampler", batch_sampler)):
            if value:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} "
                                 f"option, but got {name}={value!r}")
        return
    if sampler is not None and shuffle:
        raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None
                                      or drop_last):
        raise ValueError("DataLoader: batch_sampler option is mutually exclusive with "
                         "batch_size, shuffle, sampler, and drop_last")
