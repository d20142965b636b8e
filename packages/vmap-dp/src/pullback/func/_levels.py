"""Transform levels and the wrapper tensors that carry values between them.

Every call of a transform (vmap, jvp, vjp/grad) opens a *level*: a number larger than every
level still open, a dispatch mode pushed on pullback's mode stack, and wrapper tensors that
belong to it (a batched tensor, a dual number, a tracked value). A wrapper of level ``k`` holds a
value of a lower level (a wrapper of an enclosing transform, or a plain tensor), and the mode of
level ``k`` is the only one that looks inside it: it unwraps the arguments of its level, runs
the op's rule on the values (which reaches the enclosing levels' modes), and wraps the result.
This is how ``torch.func`` and JAX compose transforms; it keeps apart the levels of
``vmap(grad(f))`` or ``jacfwd(jacrev(f))`` without any of them knowing the others.
"""

from __future__ import annotations

import itertools
from typing import Any

from pullback.tensor import Tensor

_counter = itertools.count(1)


class Level:
    """One open (or closed) transform call."""

    __slots__ = ("index", "kind", "alive")

    def __init__(self, kind: str) -> None:
        self.index = next(_counter)
        self.kind = kind
        self.alive = True

    def __repr__(self) -> str:
        return f"<{self.kind} level {self.index}{'' if self.alive else ' (closed)'}>"


class WrapperTensor(Tensor):
    """A tensor of one transform level, around ``_value`` (a tensor of a lower level).

    Shape, dtype and device are the *logical* ones that user code sees; the metadata methods of
    Tensor read the backend array, so they are answered here from the value instead.
    """

    __slots__ = ("_value", "_level", "_shape")

    _value: Tensor
    _level: Level
    _shape: tuple[int, ...]

    def _init_wrapper(self, value: Tensor, level: Level, shape: tuple[int, ...]) -> None:
        self._value = value
        self._level = level
        self._shape = shape
        self.device = value.device
        self.grad = None
        self._node = None
        self._base = None
        self._hooks = None
        self._version = value._version
        self._requires_grad = False

    # -- logical metadata ----------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return len(self._shape)

    @property
    def dtype(self) -> Any:
        return self._value.dtype

    def size(self, axis: int | None = None) -> Any:
        return self._shape if axis is None else self._shape[axis]

    def numel(self) -> int:
        n = 1
        for s in self._shape:
            n *= s
        return n

    def element_size(self) -> int:
        return int(self._value.dtype.itemsize)

    @property
    def nbytes(self) -> int:
        return self.numel() * self.element_size()

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def backward(self, *args: Any, **kwargs: Any) -> None:
        from ._errors import FuncError

        raise FuncError(
            f"backward() on a tensor of {self._level.kind} (level {self._level.index}): inside "
            "a function transform, take gradients with pullback.func.grad / vjp instead"
        )


def new_level(kind: str) -> Level:
    """Open a level of ``kind`` ("vmap", "jvp", "vjp")."""
    return Level(kind)
