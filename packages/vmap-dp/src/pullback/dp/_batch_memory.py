"""``BatchMemoryManager``: logical batches larger than memory allows, as virtual steps
(Opacus's ``BatchMemoryManager``).

Each logical batch (one Poisson sample: one step of the mechanism) is split into physical
batches of at most ``max_physical_batch_size`` rows. The optimizer is told, batch by batch,
whether the logical batch goes on: for all but its last physical batch ``optimizer.step()``
only clips and sums the per-sample gradients, and the last one adds the noise, averages, steps
and accounts once. The accountant therefore sees exactly the steps it would see without the
manager, and the update is the same up to rounding.

Splitting happens on the loaded batch (any loader's: tensors, or tuples, lists and dicts of
them, batched along dim 0), so memory is bounded by the physical batch's per-sample gradients,
which dominate it; the logical batch's inputs are loaded whole.
"""

from __future__ import annotations

import math
from typing import Any, Iterator

from pullback.func._pytree import tree_flatten, tree_map
from pullback.tensor import Tensor

from ._errors import PrivacyParameterError
from ._optimizer import DPOptimizer


def _rows(batch: Any) -> int:
    for leaf in tree_flatten(batch)[0]:
        if isinstance(leaf, Tensor) and leaf.ndim > 0:
            return leaf.shape[0]
    raise PrivacyParameterError("BatchMemoryManager: a batch without a tensor to split "
                                "(batches are split along dim 0 of their tensors)")


class _PhysicalBatches:
    """The batches of ``loader``, each split into nearly equal chunks of at most ``limit`` rows,
    signalling the optimizer before each chunk whether its logical batch continues."""

    def __init__(self, loader: Any, limit: int, optimizer: DPOptimizer) -> None:
        self.loader, self.limit, self.optimizer = loader, limit, optimizer

    def __iter__(self) -> Iterator[Any]:
        for batch in self.loader:
            rows = _rows(batch)
            chunks = max(1, math.ceil(rows / self.limit))  # an empty batch is one (empty) step
            base, extra = divmod(rows, chunks)
            start = 0
            for k in range(chunks):
                stop = start + base + (1 if k < extra else 0)
                self.optimizer.signal_skip_step(k < chunks - 1)
                yield tree_map(lambda x, a=start, b=stop: x[a:b] if isinstance(x, Tensor) else x,
                               batch)
                start = stop

    def __len__(self) -> int:
        """The expected number of physical batches per epoch."""
        expected = getattr(self.loader, "expected_batch_size", None) \
            or getattr(self.loader, "batch_size", self.limit)
        return len(self.loader) * max(1, math.ceil(expected / self.limit))


class BatchMemoryManager:
    """A context that yields the loader's batches split into physical batches.

    Args:
        data_loader: the (Poisson) loader of logical batches.
        max_physical_batch_size: the most rows one forward/backward pass sees.
        optimizer: the :class:`DPOptimizer` that steps once per logical batch.

    Example:
        >>> with BatchMemoryManager(data_loader=loader, max_physical_batch_size=64,
        ...                         optimizer=optimizer) as batches:  # doctest: +SKIP
        ...     for x, y in batches:
        ...         optimizer.zero_grad()
        ...         criterion(model(x), y).backward()
        ...         optimizer.step()    # a real step at the end of each logical batch
    """

    def __init__(self, *, data_loader: Any, max_physical_batch_size: int,
                 optimizer: DPOptimizer) -> None:
        if not isinstance(max_physical_batch_size, int) or max_physical_batch_size < 1:
            raise PrivacyParameterError(f"BatchMemoryManager: max_physical_batch_size must be a "
                                        f"positive int, got {max_physical_batch_size!r}")
        if not isinstance(optimizer, DPOptimizer):
            raise PrivacyParameterError(f"BatchMemoryManager: optimizer must be a DPOptimizer "
                                        f"(from make_private), got {type(optimizer).__name__}")
        self.data_loader = data_loader
        self.max_physical_batch_size = max_physical_batch_size
        self.optimizer = optimizer

    def __enter__(self) -> _PhysicalBatches:
        return _PhysicalBatches(self.data_loader, self.max_physical_batch_size, self.optimizer)

    def __exit__(self, *exc: Any) -> None:
        return None
