"""``pullback.multiprocessing``: Python's multiprocessing, with tensors and modules that cross
processes through shared memory (``import torch.multiprocessing as mp``).

Everything of :mod:`multiprocessing` is here (``Process``, ``Queue``, ``set_start_method``,
``get_context``...), plus PyTorch's ``spawn``/``start_processes`` and sharing-strategy
functions. ``tensor.share_memory_()`` and ``module.share_memory()`` move CPU tensors into
shared memory, so that processes started afterwards (``fork`` or ``spawn``) update the same
numbers: a Hogwild! trainer. A tensor or module passed to a spawned process, or a tensor put
on a ``Queue``, is moved into shared memory and sent as data (see
:mod:`pullback.multiprocessing._reductions`: never as a pickled object).

Example::

    import pullback.multiprocessing as mp

    def train(rank, model):
        ...  # an optimizer over model.parameters() updates the parent's model

    if __name__ == "__main__":
        model = Net()
        model.share_memory()
        workers = [mp.Process(target=train, args=(rank, model)) for rank in range(2)]
        for p in workers:
            p.start()
        for p in workers:
            p.join()
"""

from __future__ import annotations

import multiprocessing
from multiprocessing import *  # noqa: F403 - torch.multiprocessing re-exports all of it

from . import _reductions
from ._spawn import (
    ProcessContext, ProcessException, ProcessExitedException, ProcessRaisedException,
    spawn, start_processes,
)

__all__ = [
    "ProcessContext", "ProcessExitedException", "ProcessRaisedException",
    "get_all_sharing_strategies", "get_sharing_strategy", "set_sharing_strategy", "spawn",
    "start_processes", *multiprocessing.__all__,
]

_STRATEGIES = frozenset({"file_descriptor"})


def get_all_sharing_strategies() -> set[str]:
    """The ways shared memory reaches other processes: ``{"file_descriptor"}`` (anonymous
    files passed as descriptors; PyTorch's ``file_system`` strategy, named files, is not
    implemented)."""
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    """The sharing strategy in use: always ``"file_descriptor"``."""
    return "file_descriptor"


def set_sharing_strategy(new_strategy: str) -> None:
    """Accept ``"file_descriptor"``, the only strategy (as PyTorch's default on Linux).

    Raises:
        UnsupportedError: another strategy (PyTorch's ``file_system``).
    """
    if new_strategy not in _STRATEGIES:
        from ..errors import UnsupportedError

        raise UnsupportedError(f"set_sharing_strategy: {new_strategy!r} is not supported; "
                               "pullback shares memory by file descriptors ('file_descriptor')")


_reductions.register_tensor_classes()
