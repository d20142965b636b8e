"""``torch.nn.parallel.distributed``: ``DistributedDataParallel``, provided by
pullback-distributed and imported when first used (without it, the one-line error names the
distribution to install)."""

from typing import Any

__all__ = ["DistributedDataParallel"]  # noqa: F822 - defined on first use, below


def __getattr__(name: str) -> Any:
    if name == "DistributedDataParallel":
        from pullback.distributed import DistributedDataParallel

        return DistributedDataParallel
    raise AttributeError(f"module 'pullback.nn.parallel.distributed' has no attribute '{name}'")
