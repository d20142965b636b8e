"""``torch.nn.modules.utils``: the argument helpers custom layers import (``_pair(3)`` is
``(3, 3)``) and ``consume_prefix_in_state_dict_if_present`` (a ``DataParallel`` checkpoint's
``"module."`` keys, loaded into the bare model)."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat
from typing import Any, Callable

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n: int, name: str = "parse") -> Callable[[Any], tuple[Any, ...]]:
    """A function making an ``n``-tuple of one value (an iterable is kept as a tuple)."""

    def parse(x: Any) -> tuple[Any, ...]:
        if isinstance(x, Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t: tuple[Any, ...], n: int) -> tuple[Any, ...]:
    """Each element of ``t`` ``n`` times, last first (padding widths from a size tuple)."""
    return tuple(x for x in reversed(t) for _ in range(n))


def consume_prefix_in_state_dict_if_present(state_dict: dict[str, Any], prefix: str) -> None:
    """Strip ``prefix`` from the keys of ``state_dict`` that have it, in place (their order
    kept)."""
    keys = list(state_dict)
    for key in keys:
        value = state_dict.pop(key)
        state_dict[key[len(prefix):] if key.startswith(prefix) else key] = value
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata):
            if key.startswith(prefix) or key == prefix.rstrip("."):
                metadata[key[len(prefix):] if key.startswith(prefix) else ""] = metadata.pop(key)
