"""A small memo for argument checks that a loop meets again and again."""

from __future__ import annotations

from typing import Any, Callable, TypeVar

_T = TypeVar("_T")


def remembered(table: dict[Any, _T], key: Any, size: int, compute: Callable[[], _T]) -> _T:
    """``table[key]``, computed by ``compute()`` the first time and kept (the table emptied
    when it holds ``size`` entries): the checks of a geometry, of a layer's arguments or of a
    target shape, which a training loop or an inference meets again and again. A key that
    cannot be hashed (lists among the arguments) is computed every time; errors are raised
    each time, never kept."""
    try:
        return table[key]
    except KeyError:
        pass
    except TypeError:
        return compute()
    value = compute()
    if len(table) >= size:
        table.clear()
    table[key] = value
    return value
