"""A name-to-class table (one for optimizers, one for schedulers), filled by a decorator."""

from __future__ import annotations

from typing import Callable, TypeVar

from pullback.errors import RegistryError

T = TypeVar("T", bound=type)


class Registry(dict[str, type]):
    """Classes by name. Looking up an unknown name raises a ``RegistryError`` (a ``LookupError``)
    that lists the known names; registering a taken name is an error too."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def __missing__(self, name: str) -> type:
        raise RegistryError(f"no {self.kind} named {name!r}; known: {', '.join(sorted(self))}")

    def register(self, name: str) -> Callable[[T], T]:
        """Class decorator: ``@OPTIMIZERS.register("adamw")``."""

        def add(cls: T) -> T:
            if name in self:
                raise RegistryError(
                    f"{self.kind} name {name!r} is taken by {self[name].__qualname__}; "
                    f"cannot register {cls.__qualname__} under it"
                )
            self[name] = cls
            return cls

        return add
