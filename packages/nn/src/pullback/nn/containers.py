"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict`` (PyTorch's semantics)."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, Iterator, Mapping

from .module import Module


class Sequential(Module):
    """Modules applied one after the other; built from arguments or from an ordered dict.

    Indexing, ``append``/``insert``/``extend``/``pop``, ``del``, ``+``, ``+=`` and ``*`` behave
    as PyTorch's: the modules stay numbered ``0..n-1`` after a deletion.

    Example:
        >>> from pullback import nn
        >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        >>> len(net), type(net[1]).__name__
        (3, 'ReLU')
    """

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], (OrderedDict, dict)):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def forward(self, x: Any) -> Any:
        for module in self._modules.values():
            x = module(x)
        return x

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __dir__(self) -> list[str]:
        return [key for key in super().__dir__() if not key.isdigit()]

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return type(self)(OrderedDict(list(self._modules.items())[index]))
        return list(self._modules.values())[_index(index, len(self))]

    def __setitem__(self, index: int, module: Module) -> None:
        setattr(self, list(self._modules)[_index(index, len(self))], module)

    def __delitem__(self, index: int | slice) -> None:
        keys = list(self._modules)
        for key in (keys[index] if isinstance(index, slice) else [keys[_index(index, len(self))]]):
            delattr(self, key)
        _renumber(self)

    def pop(self, index: int | slice) -> Any:
        """Remove and return the module at ``index`` (a Sequential for a slice)."""
        value = self[index]
        del self[index]
        return value

    def append(self, module: Module) -> Sequential:
        """Add a module at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Insert ``module`` before position ``index`` (``-n <= index <= n``); returns self."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        _insert(self, index + n if index < 0 else index, module)
        return self

    def extend(self, modules: Iterable[Module]) -> Sequential:
        """Append every module of ``modules``; returns self."""
        for module in modules:
            self.append(module)
        return self

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        return Sequential(*self, *other)

    def __iadd__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        return self.extend(list(other))

    def __mul__(self, times: int) -> Sequential:
        _check_factor(self, times)
        return Sequential(*(list(self) * times))

    __rmul__ = __mul__

    def __imul__(self, times: int) -> Sequential:
        _check_factor(self, times)
        return self.extend(list(self) * (times - 1))


class ModuleList(Module):
    """A list of modules, registered so that their parameters are found (PyTorch's
    indexing, ``append``/``insert``/``extend``/``pop``, ``del``, ``+`` and ``+=``)."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __dir__(self) -> list[str]:
        return [key for key in super().__dir__() if not key.isdigit()]

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return type(self)(list(self._modules.values())[index])
        return self._modules[str(_index(index, len(self)))]

    def __setitem__(self, index: int, module: Module) -> None:
        setattr(self, str(_index(index, len(self))), module)

    def __delitem__(self, index: int | slice) -> None:
        positions = range(len(self))[index] if isinstance(index, slice) \
            else [_index(index, len(self))]
        for k in positions:
            delattr(self, str(k))
        _renumber(self)

    def pop(self, index: int | slice) -> Any:
        """Remove and return the module at ``index`` (a ModuleList for a slice)."""
        value = self[index]
        del self[index]
        return value

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList([*self, *other])

    def append(self, module: Module) -> ModuleList:
        """Add one module at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Add modules at the end; returns self."""
        if not isinstance(modules, Iterable):
            raise TypeError(f"ModuleList.extend should be called with an iterable, but got "
                            f"{type(modules).__name__}")
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Insert ``module`` before position ``index``, as ``list.insert`` (a negative index
        counts from the end; PyTorch's ModuleList mis-shifts its modules there and fails with
        a KeyError, leaving a module twice in the list)."""
        n = len(self)
        _insert(self, max(0, min(n, index + n if index < 0 else index)), module)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("ModuleList is a container; iterate over it in your forward()")


class ModuleDict(Module):
    """An ordered dict of modules, registered so that their parameters are found."""

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None
                 ) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def keys(self) -> Iterable[str]:
        """The names."""
        return self._modules.keys()

    def values(self) -> Iterable[Module]:
        """The modules."""
        return self._modules.values()

    def items(self) -> Iterable[tuple[str, Module]]:
        """``(name, module)`` pairs."""
        return self._modules.items()

    def pop(self, key: str) -> Module:
        """Remove and return the module under ``key``."""
        value = self[key]
        del self[key]
        return value

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Add or replace modules from a mapping or ``(name, module)`` pairs."""
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleDict.update should be called with an iterable of key/value "
                            f"pairs, but got {type(modules).__name__}")
        if isinstance(modules, (Mapping, ModuleDict)):
            for key, module in modules.items():
                self[key] = module
            return
        for j, pair in enumerate(modules):
            if not isinstance(pair, Iterable):
                raise TypeError(f"ModuleDict update sequence element #{j} should be Iterable; "
                                f"is {type(pair).__name__}")
            if len(pair) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} has length "
                                 f"{len(pair)}; 2 is required")
            self[pair[0]] = pair[1]

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("ModuleDict is a container; index it in your forward()")


def _index(index: int, n: int) -> int:
    index = operator.index(index)
    if not -n <= index < n:
        raise IndexError(f"index {index} is out of range")
    return index % n


def _renumber(container: Module) -> None:
    """Name the modules ``0..n-1`` again in their order (after a deletion), as PyTorch."""
    modules = list(container._modules.values())
    container._modules.clear()
    for i, m in enumerate(modules):
        container._modules[str(i)] = m


def _insert(container: Module, index: int, module: Module) -> None:
    """Shift the modules from ``index`` on one place up and put ``module`` at ``index``."""
    for i in range(len(container._modules), index, -1):
        container._modules[str(i)] = container._modules[str(i - 1)]
    container._modules[str(index)] = module


def _check_factor(container: Module, times: Any) -> None:
    if not isinstance(times, int):
        raise TypeError(f"unsupported operand type(s) for *: {type(container)} and {type(times)}")
    if times <= 0:
        raise ValueError(f"Non-positive multiplication factor {times} for {type(container)}")
