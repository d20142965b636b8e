"""Setting a ``torch.backends`` module's flags for a block (``with cudnn.flags(...):``)."""

from __future__ import annotations

import contextlib
from types import ModuleType
from typing import Any, Iterator


def set_flags(module: ModuleType, **values: Any) -> dict[str, Any]:
    """Set the module's flags that are given (not None); their values before."""
    before = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        if value is not None:
            setattr(module, name, value)
    return before


@contextlib.contextmanager
def flags(module: ModuleType, **values: Any) -> Iterator[None]:
    """The flags set inside the block, put back after it."""
    before = set_flags(module, **values)
    try:
        yield
    finally:
        set_flags(module, **before)
