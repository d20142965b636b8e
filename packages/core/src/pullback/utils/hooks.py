"""``torch.utils.hooks``: ``RemovableHandle``, what the ``register_*_hook`` methods of modules
return."""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["RemovableHandle"]


class RemovableHandle:
    """A registered hook: ``remove()`` unregisters it; usable as a context manager that removes
    it at the end of the block."""

    def __init__(self, hooks: dict[int, Callable[..., Any]], key: int) -> None:
        self._hooks = hooks
        self._key = key

    def remove(self) -> None:
        """Unregister the hook (a second call does nothing)."""
        self._hooks.pop(self._key, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()
