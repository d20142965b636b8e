"""Checkpoints of data-parallel runs: written once, by rank 0, atomically."""

from __future__ import annotations

import os
from typing import Any

import pullback

from ._collectives import barrier
from ._group import ProcessGroup, is_initialized, resolve


def save_checkpoint(obj: Any, path: str | os.PathLike[str],
                    group: ProcessGroup | None = None) -> None:
    """Rank 0 saves ``obj`` (a state dict; :func:`pullback.save`, atomic: a crash leaves the
    previous file) and every rank waits until it is on disk. Without a process group it is
    a plain save, so the same script runs alone."""
    if not is_initialized() and group is None:
        pullback.save(obj, path)
        return
    g = resolve(group, "save_checkpoint")
    if g.rank == 0:
        pullback.save(obj, path)
    barrier(g)
