"""``torch.utils.hooks``: ``RemovableHandle``, what the ``register_*_hook`` methods return."""

from typing import Any

__all__ = ["RemovableHandle"]  # noqa: F822 - pullback.nn's, on first use


def __getattr__(name: str) -> Any:
    if name == "RemovableHandle":
        from pullback.nn.module import RemovableHandle

        return RemovableHandle
    raise AttributeError(f"module 'pullback.utils.hooks' has no attribute '{name}'")
