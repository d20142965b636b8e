"""The list and dict types of a Node's ``args`` and ``kwargs`` (torch.fx's names).

A Node keeps track of which nodes it reads (its inputs, and their ``users``). Changing an
argument list in place would bypass that bookkeeping, so the containers are read-only: edit a
node by assigning ``node.args``/``node.kwargs`` (or with ``update_arg``/``update_kwarg``), which
updates the uses.
"""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["immutable_dict", "immutable_list"]


def _refuse(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(f"'{type(self).__name__}' object is read-only: a Node's args and kwargs are "
                    "changed by assigning node.args / node.kwargs (or node.update_arg)")


class immutable_list(list):  # noqa: N801 - torch.fx's name
    """A list that refuses changes in place (a Node's argument list)."""

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))

    def __reduce__(self) -> Any:  # copy.deepcopy rebuilds it from its items, not by appending
        return (immutable_list, (tuple(self),))


class immutable_dict(dict):  # noqa: N801 - torch.fx's name
    """A dict that refuses changes in place (a Node's keyword arguments)."""

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self.items()))

    def __reduce__(self) -> Any:  # copy.deepcopy rebuilds it from its items
        return (immutable_dict, (tuple(self.items()),))
