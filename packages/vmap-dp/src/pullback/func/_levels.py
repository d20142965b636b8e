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

import pullback
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

    # -- reading values: those of the value one level below ------------------------------------
    def item(self) -> Any:
        return self._value.item()

    def tolist(self) -> Any:
        return self._value.tolist()

    def numpy(self) -> Any:
        return self._value.detach().numpy()

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return self._value.__array__(dtype, copy)

    def __bool__(self) -> bool:
        return bool(self._value)

    def __float__(self) -> float:
        return float(self._value)

    def __int__(self) -> int:
        return int(self._value)

    def __index__(self) -> int:
        return self._value.__index__()

    # -- in-place ops: computed out of place, then stored by the level (_assign) ---------------
    def _assign(self, result: Any, name: str) -> Tensor:
        raise NotImplementedError

    def add_(self, other: Any, *, alpha: float = 1) -> Tensor:
        return self._assign(pullback.add(self, other, alpha=alpha), "add_")

    def sub_(self, other: Any, *, alpha: float = 1) -> Tensor:
        return self._assign(pullback.sub(self, other, alpha=alpha), "sub_")

    def mul_(self, other: Any) -> Tensor:
        return self._assign(pullback.mul(self, other), "mul_")

    def div_(self, other: Any) -> Tensor:
        return self._assign(pullback.div(self, other), "div_")

    def pow_(self, other: Any) -> Tensor:
        return self._assign(pullback.pow(self, other), "pow_")

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        return self._assign(pullback.clamp(self, min, max), "clamp_")

    def exp_(self) -> Tensor:
        return self._assign(pullback.exp(self), "exp_")

    def relu_(self) -> Tensor:
        return self._assign(pullback.relu(self), "relu_")

    def neg_(self) -> Tensor:
        return self._assign(pullback.neg(self), "neg_")

    def masked_fill_(self, mask: Any, value: Any) -> Tensor:
        return self._assign(pullback.masked_fill(self, mask, value), "masked_fill_")

    def copy_(self, src: Any) -> Tensor:
        if not isinstance(src, Tensor):
            src = pullback.tensor(src, device=self.device)
        return self._assign(pullback.broadcast_to(src.to(self.dtype), self._shape), "copy_")

    def fill_(self, value: Any) -> Tensor:
        return self._assign(pullback.full(self._shape, value, dtype=self.dtype,
                                          device=self.device), "fill_")

    def zero_(self) -> Tensor:
        return self.fill_(0)

    def uniform_(self, low: float = 0.0, high: float = 1.0) -> Tensor:
        return self._assign(pullback.uniform(low, high, self._shape, dtype=self.dtype,
                                             device=self.device), "uniform_")

    def normal_(self, mean: float = 0.0, std: float = 1.0) -> Tensor:
        return self._assign(pullback.normal(mean, std, self._shape, dtype=self.dtype,
                                            device=self.device), "normal_")

    def __setitem__(self, key: Any, value: Any) -> None:
        """``self[key] = value`` as ``where(selected, value spread out, self)``: differentiable in
        both, whatever the key (the last write wins on repeated positions, as in NumPy)."""
        n = self.numel()
        chosen = pullback.arange(n, device=self.device).reshape(self._shape)[key]
        positions = chosen.reshape(-1)
        selected = pullback.zeros(n, dtype="bool", device=self.device)
        selected[positions] = True
        slot = pullback.zeros(n, dtype="int64", device=self.device)
        slot[positions] = pullback.arange(positions.numel(), device=self.device)
        if not isinstance(value, Tensor):
            value = pullback.tensor(value, dtype=self.dtype, device=self.device)
        values = pullback.broadcast_to(value.to(self.dtype), tuple(chosen.shape)).reshape(-1)
        spread = pullback.index_select(values, 0, slot) if positions.numel() else self
        self._assign(pullback.where(selected.reshape(self._shape), spread.reshape(self._shape),
                                    self), "__setitem__")

    def backward(self, *args: Any, **kwargs: Any) -> None:
        from ._errors import FuncError

        raise FuncError(
            f"backward() on a tensor of {self._level.kind} (level {self._level.index}): inside "
            "a function transform, take gradients with pullback.func.grad / vjp instead"
        )


def split_args(args: tuple[Any, ...], cls: type, level: Level, field: str
               ) -> tuple[list[Any] | None, list[Any]]:
    """The op arguments with the wrappers of ``cls`` at ``level`` replaced by their values, and
    per argument the wrapper's ``field`` (``None`` elsewhere); ``(None, [])`` when no argument
    belongs to the level (the op then passes on untouched)."""
    values = None
    extras: list[Any] = []
    for i, a in enumerate(args):
        if a.__class__ is cls and a._level is level:
            if values is None:
                values = list(args)
                extras = [None] * len(args)
            values[i] = a._value
            extras[i] = getattr(a, field)
    return values, extras


def run_at_level(level: Level, mode: Any, func: Any, *args: Any) -> Any:
    """``func(*args)`` with ``mode`` (the level's dispatch mode) active; the level is closed
    afterwards, whatever happens (its wrappers that escape are then recognized as such)."""
    from pullback.dispatch import pop_mode, push_mode

    push_mode(mode)
    try:
        return func(*args)
    finally:
        pop_mode(mode)
        level.alive = False


def new_level(kind: str) -> Level:
    """Open a level of ``kind`` ("vmap", "jvp", "vjp")."""
    return Level(kind)
