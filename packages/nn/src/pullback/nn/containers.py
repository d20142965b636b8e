"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict`` (PyTorch's semantics)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Iterable, Iterator, Mapping

from .module import Module


class Sequential(Module):
    """Modules applied one after the other; built from arguments or from an ordered dict.

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

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return Sequential(OrderedDict(list(self._modules.items())[index]))
        return list(self._modules.values())[_index(index, len(self))]

    def __setitem__(self, index: int, module: Module) -> None:
        key = list(self._modules)[_index(index, len(self))]
        self.add_module(key, module)

    def __delitem__(self, index: int | slice) -> None:
        keys = list(self._modules)
        doomed = keys[index] if isinstance(index, slice) else [keys[_index(index, len(self))]]
        for key in doomed:
            del self._modules[key]
        # Renumber so that integer names stay 0..n-1, as PyTorch does.
        if all(k.isdigit() for k in keys):
            items = list(self._modules.values())
            self._modules.clear()
            for i, m in enumerate(items):
                self._modules[str(i)] = m

    def append(self, module: Module) -> Sequential:
        """Add a module at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self


class ModuleList(Module):
    """A list of modules, registered so that their parameters are found."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return ModuleList(list(self._modules.values())[index])
        return self._modules[str(_index(index, len(self)))]

    def __setitem__(self, index: int, module: Module) -> None:
        self.add_module(str(_index(index, len(self))), module)

    def __delitem__(self, index: int | slice) -> None:
        items = list(self._modules.values())
        del items[index]
        self._modules.clear()
        for i, m in enumerate(items):
            self._modules[str(i)] = m

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList(list(self) + list(other))

    def append(self, module: Module) -> ModuleList:
        """Add one module at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Add modules at the end; returns self."""
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Insert ``module`` before position ``index``."""
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)

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
        return self._modules.pop(key)

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Add or replace modules from a mapping or ``(name, module)`` pairs."""
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for key, module in pairs:
            self.add_module(key, module)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("ModuleDict is a container; index it in your forward()")


def _index(index: int, n: int) -> int:
    if not -n <= index < n:
        raise IndexError(f"index {index} is out of range for a container of {n} modules")
    return index % n
