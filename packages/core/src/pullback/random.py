"""``torch.random``: seeding and the generator's state, and ``fork_rng`` (random numbers
drawn inside the block leave the generators as they were)."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from ._introspection import get_rng_state, set_rng_state
from .creation import manual_seed

__all__ = ["fork_rng", "get_rng_state", "manual_seed", "set_rng_state"]


@contextlib.contextmanager
def fork_rng(devices: Any = None, enabled: bool = True,
             device_type: str = "cuda") -> Iterator[None]:
    """Save every available backend's generator state, and restore it after the block
    (``devices`` and ``device_type`` are accepted: every device is restored)."""
    if not enabled:
        yield
        return
    from .backends import backends

    saved = {name: backend.get_rng_state() for name, backend in backends().items()
             if backend.is_available()}
    try:
        yield
    finally:
        for name, state in saved.items():
            backends()[name].set_rng_state(state)
