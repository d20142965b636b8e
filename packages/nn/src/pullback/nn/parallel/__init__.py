"""``pullback.nn.parallel`` (``torch.nn.parallel``): ``DataParallel`` and ``data_parallel`` as
PyTorch's behave on a machine without GPUs (the module runs once, unchanged), and
``DistributedDataParallel`` from pullback-distributed, imported when first used."""

from typing import Any

from .data_parallel import DataParallel, data_parallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]


def __getattr__(name: str) -> Any:
    if name == "DistributedDataParallel":
        from .distributed import DistributedDataParallel

        return DistributedDataParallel
    raise AttributeError(f"module 'pullback.nn.parallel' has no attribute '{name}'")
