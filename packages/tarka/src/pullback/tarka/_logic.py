"""Terms (individuals with free variables) and LogicTensors (truth values with free variables).

Each free variable owns one leading axis of the value, in the order of ``free_vars``; a term's
features follow. Combining objects with different variables aligns them by label: the result
has the union of the variables (in order of first appearance) and is computed by broadcasting,
so ``P(x) & Q(y)`` has shape ``(len(x), len(y))`` and ``R(x, x)`` is the diagonal. This is LTN's
semantics, computed with broadcasts instead of repeated copies.
"""

from __future__ import annotations

import warnings
from typing import Any, Iterable, Sequence

import pullback
from pullback import Tensor
from pullback.errors import ShapeError

from .semantics import Semantics, resolve


class Term:
    """Individuals with free variables: ``value`` has one leading axis per variable in
    ``free_vars``, then the features of one individual."""

    __slots__ = ("value", "free_vars")

    def __init__(self, value: Any, free_vars: Sequence[str] = ()) -> None:
        self.value = value if isinstance(value, Tensor) else pullback.tensor(value)
        self.free_vars = tuple(free_vars)
        if self.value.ndim < len(self.free_vars):
            raise ShapeError(f"Term: a value of shape {tuple(self.value.shape)} cannot hold "
                             f"{len(self.free_vars)} variable axes ({', '.join(self.free_vars)})")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(free_vars={self.free_vars}, shape={tuple(self.value.shape)})"

    @property
    def var_sizes(self) -> dict[str, int]:
        return {v: int(self.value.shape[i]) for i, v in enumerate(self.free_vars)}


class Variable(Term):
    """A variable ranging over individuals: ``Variable("x", individuals)``, where the first
    axis of ``individuals`` indexes them (LTN's ``add_batch_dim``: a 1-d tensor holds scalar
    individuals)."""

    __slots__ = ()

    def __init__(self, label: str, individuals: Any) -> None:
        if not isinstance(label, str) or not label:
            raise ValueError(f"Variable: the label must be a non-empty string, got {label!r}")
        if label.startswith("diag_"):
            raise ValueError("Variable: labels starting with 'diag_' are reserved for diag()")
        value = individuals if isinstance(individuals, Tensor) else pullback.tensor(individuals)
        if value.ndim == 0:
            raise ShapeError(f"Variable {label!r}: individuals need a first axis, got a 0-d "
                             "tensor (use a Constant for one individual)")
        super().__init__(value, (label,))

    @property
    def label(self) -> str:
        return self.free_vars[0]


class Constant(Term):
    """One individual (no free variable); ``trainable=True`` makes its value a leaf that
    requires grad (an embedding to learn)."""

    __slots__ = ()

    def __init__(self, value: Any, trainable: bool = False) -> None:
        value = value if isinstance(value, Tensor) else pullback.tensor(value)
        if trainable:
            value = value.detach().requires_grad_(True)
        super().__init__(value, ())


def diag(*variables: Variable) -> tuple[Variable, ...]:
    """Variables to be iterated together (LTN's ``diag``): they get one shared label, so
    formulas over them see only the pairs (x_i, y_i), and a quantifier over any of them
    aggregates that one axis. All need the same number of individuals."""
    if len(variables) < 2:
        raise ValueError("diag: give at least two variables")
    sizes = {v.label: int(v.value.shape[0]) for v in variables}
    if len(set(sizes.values())) != 1:
        raise ShapeError(f"diag: the variables need equally many individuals, got {sizes}")
    label = "diag_" + "_".join(v.label for v in variables)
    out = []
    for v in variables:
        joined = Variable.__new__(Variable)
        Term.__init__(joined, v.value, (label,))
        out.append(joined)
    return tuple(out)


def union_vars(objects: Iterable[Any]) -> dict[str, int]:
    """The free variables of ``objects`` in order of first appearance, with their sizes; a
    variable with two different sizes is a ShapeError naming it."""
    sizes: dict[str, int] = {}
    for obj in objects:
        for label, n in obj.var_sizes.items():
            if sizes.setdefault(label, n) != n:
                raise ShapeError(f"variable {label!r} has {sizes[label]} individuals in one "
                                 f"operand and {n} in another")
    return sizes


def expand_to(value: Tensor, free_vars: tuple[str, ...], target: Sequence[str]) -> Tensor:
    """``value`` (axes ``free_vars`` then features) with its variable axes permuted into
    ``target``'s order and size-1 axes for the variables it lacks (ready to broadcast);
    ``free_vars`` must be a subset of ``target``."""
    if tuple(free_vars) == tuple(target):
        return value
    n_vars = len(free_vars)
    order = [free_vars.index(v) for v in target if v in free_vars]
    if order != list(range(n_vars)):
        value = value.permute(*order, *range(n_vars, value.ndim))
    sizes = iter(value.shape[:n_vars])
    shape = [next(sizes) if v in free_vars else 1 for v in target]
    return value.reshape(*shape, *value.shape[n_vars:])


class LogicTensor:
    """Truth values in [0, 1] with free variables and a semantics, inside autograd.

    Args:
        values: the truth values (one leading axis per free variable).
        free_vars: the variables' labels, in axis order.
        semantics: ``"product"`` (default), ``"lukasiewicz"``, ``"goedel"`` or a
            :class:`~pullback.tarka.semantics.Semantics`.
        clamp: clip values outside [0, 1] into it with a warning, instead of raising.

    ``&``, ``|``, ``~``, ``>>`` (implies) and ``^`` (equivalence, also ``.iff()``) follow the
    semantics and broadcast over the variables of both operands.
    """

    __slots__ = ("values", "free_vars", "semantics")

    def __init__(self, values: Any, free_vars: Sequence[str] = (), semantics: Any = "product",
                 clamp: bool = False) -> None:
        values = values if isinstance(values, Tensor) else pullback.tensor(values)
        if values.dtype.kind != "f":
            values = values.to(pullback.get_default_dtype())
        if values.ndim != len(free_vars):
            raise ShapeError(f"LogicTensor: values of shape {tuple(values.shape)} need one axis "
                             f"per free variable, got free_vars={tuple(free_vars)}")
        values = check_truth(values, "LogicTensor", clamp)
        self.values, self.free_vars = values, tuple(free_vars)
        self.semantics = resolve(semantics)

    @classmethod
    def _new(cls, values: Tensor, free_vars: Sequence[str], semantics: Semantics) -> LogicTensor:
        out = cls.__new__(cls)
        out.values, out.free_vars, out.semantics = values, tuple(free_vars), semantics
        return out

    def __repr__(self) -> str:
        return (f"LogicTensor(free_vars={self.free_vars}, shape={tuple(self.values.shape)}, "
                f"semantics={self.semantics.name!r})")

    @property
    def var_sizes(self) -> dict[str, int]:
        return {v: int(self.values.shape[i]) for i, v in enumerate(self.free_vars)}

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.values.shape)

    def item(self) -> float:
        return self.values.item()

    # -- connectives ------------------------------------------------------------------------
    def _binary(self, other: Any, op: Any) -> LogicTensor:
        other = as_logic(other, self.semantics)
        sizes = union_vars((self, other))
        target = tuple(sizes)
        a = expand_to(self.values, self.free_vars, target)
        b = expand_to(other.values, other.free_vars, target)
        return LogicTensor._new(op(a, b), target, self.semantics)

    def __and__(self, other: Any) -> LogicTensor:
        return self._binary(other, self.semantics.and_)

    def __or__(self, other: Any) -> LogicTensor:
        return self._binary(other, self.semantics.or_)

    def __rshift__(self, other: Any) -> LogicTensor:
        return self._binary(other, self.semantics.implies)

    def __xor__(self, other: Any) -> LogicTensor:
        return self._binary(other, self.semantics.equiv)

    def iff(self, other: Any) -> LogicTensor:
        """Equivalence, ``(self >> other) & (other >> self)``."""
        return self ^ other

    def implies(self, other: Any) -> LogicTensor:
        return self >> other

    def __rand__(self, other: Any) -> LogicTensor:
        return as_logic(other, self.semantics) & self

    def __ror__(self, other: Any) -> LogicTensor:
        return as_logic(other, self.semantics) | self

    def __rrshift__(self, other: Any) -> LogicTensor:
        return as_logic(other, self.semantics) >> self

    def __invert__(self) -> LogicTensor:
        return LogicTensor._new(self.semantics.not_(self.values), self.free_vars, self.semantics)


def check_truth(values: Tensor, where: str, clamp: bool) -> Tensor:
    """``values`` if they lie in [0, 1]; clipped with a warning when ``clamp``; else a
    ValueError naming ``where`` and the offending range."""
    if not values.numel():
        return values
    detached = values.detach()
    low, high = float(detached.min()), float(detached.max())
    if low >= 0.0 and high <= 1.0:
        return values
    if not clamp:
        raise ValueError(f"{where}: truth values must lie in [0, 1], got values in "
                         f"[{low:g}, {high:g}] (pass clamp=True to clip them, with a warning)")
    warnings.warn(f"{where}: truth values in [{low:g}, {high:g}] were clipped to [0, 1]",
                  RuntimeWarning, stacklevel=3)
    return pullback.clamp(values, 0.0, 1.0)


def as_logic(value: Any, semantics: Semantics) -> LogicTensor:
    """A LogicTensor, or a closed formula from a number or 0-d Tensor (a constant truth)."""
    if isinstance(value, LogicTensor):
        if value.semantics != semantics:
            raise ValueError(f"cannot combine formulas of semantics {semantics.name!r} and "
                             f"{value.semantics.name!r}")
        return value
    t = value if isinstance(value, Tensor) else pullback.tensor(float(value))
    if t.ndim != 0:
        raise ShapeError("a plain Tensor in a formula must be a 0-d truth value; wrap a tensor "
                         "over individuals in a LogicTensor with its free variables")
    return LogicTensor._new(check_truth(t, "formula", False), (), semantics)
