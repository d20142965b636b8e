"""``torch.utils.data.distributed``: ``DistributedSampler``, provided by pullback-distributed
and imported when first used (without it, the one-line error names the distribution)."""

from typing import Any

__all__ = ["DistributedSampler"]  # noqa: F822 - defined on first use, below


def __getattr__(name: str) -> Any:
    if name == "DistributedSampler":
        from pullback.distributed import DistributedSampler

        return DistributedSampler
    raise AttributeError(f"module 'pullback.utils.data.distributed' has no attribute '{name}'")
