"""Records of the op database: what to call, with which inputs, and what PyTorch calls it.

A record describes one public function of pullback (or one internal registry op). Its samples are
framework-neutral: tensor arguments are :class:`Arg` objects holding NumPy arrays, and
:meth:`Sample.bind` turns them into the tensors of one framework through a
:class:`TensorFactory` (pullback's is :class:`PullbackFactory`; PyTorch's lives in
:mod:`pullback.testing.oracle`, so that this package never imports torch).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Protocol

import numpy as np

from ...dtypes import is_floating, to_dtype

LAYOUTS = ("contiguous", "transposed", "strided")
# Dtypes whose every sample runs in the quick test suite (see OpRecord.sample_list): float64
# carries the 1e-10 parity and the finite-difference checks.
PRIMARY_DTYPES = frozenset({"float64", "int64", "bool"})

# What fills the gaps of a strided leaf: a kernel that reads them gives visibly wrong results.
_GAP_FILL = 100


@dataclass(frozen=True)
class Arg:
    """A tensor argument: its values and how the tensor handed to the op is laid out.

    ``layout="transposed"`` hands the op a permuted view of a leaf holding the values
    transposed; ``layout="strided"`` hands it ``leaf[..., ::2]`` of a leaf twice as wide. Either
    way the op sees ``value`` in a non-contiguous tensor, and gradients are taken with respect
    to the leaf. ``requires_grad=False`` keeps a floating argument constant.
    """

    value: np.ndarray
    layout: str = "contiguous"
    requires_grad: bool = True

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise ValueError(f"Arg: layout must be one of {LAYOUTS}, got {self.layout!r}")
        if self.layout == "transposed" and self.value.ndim < 2:
            raise ValueError("Arg: a transposed layout needs at least 2 dims")
        if self.layout == "strided" and self.value.ndim < 1:
            raise ValueError("Arg: a strided layout needs at least 1 dim")

    @property
    def differentiable(self) -> bool:
        """Whether this argument becomes a leaf that requires grad."""
        return self.requires_grad and is_floating(self.value.dtype)

    def leaf_array(self) -> np.ndarray:
        """The values of the leaf tensor the argument is a view of."""
        v = self.value
        if self.layout == "transposed":
            return np.ascontiguousarray(v.transpose(tuple(reversed(range(v.ndim)))))
        if self.layout == "strided":
            leaf = np.full(v.shape[:-1] + (2 * v.shape[-1],), _GAP_FILL, dtype=v.dtype)
            leaf[..., ::2] = v
            return leaf
        return v

    def describe(self) -> str:
        shape = "(" + ",".join(str(s) for s in self.value.shape) + ("," if self.value.ndim == 1 else "") + ")"
        return shape + {"contiguous": "", "transposed": ".T", "strided": "[::2]"}[self.layout]


class TensorFactory(Protocol):
    """Makes the tensors of one framework from NumPy arrays."""

    def leaf(self, array: np.ndarray, requires_grad: bool) -> Any:
        """A leaf tensor holding a copy of ``array``."""

    def permute(self, t: Any, axes: tuple[int, ...]) -> Any:
        """A permuted view of ``t``."""

    def every_other(self, t: Any) -> Any:
        """The view ``t[..., ::2]``."""


def view_of(factory: TensorFactory, leaf: Any, layout: str) -> Any:
    """The tensor an op receives for a leaf made from :meth:`Arg.leaf_array`."""
    if layout == "transposed":
        return factory.permute(leaf, tuple(reversed(range(leaf.ndim))))
    if layout == "strided":
        return factory.every_other(leaf)
    return leaf


class PullbackFactory:
    """pullback tensors on ``device``: made on the CPU, then moved with ``.to(device)``."""

    def __init__(self, device: Any = "cpu") -> None:
        from ...backends import Device

        self.device = Device(device)

    def leaf(self, array: np.ndarray, requires_grad: bool) -> Any:
        from ...creation import tensor

        t = tensor(array)
        if self.device.type != "cpu":
            t = t.to(self.device)
        if requires_grad:
            t.requires_grad_(True)
        return t

    def permute(self, t: Any, axes: tuple[int, ...]) -> Any:
        from ..._ops import permute

        return permute(t, axes)

    def every_other(self, t: Any) -> Any:
        return t[..., ::2]


@dataclass(frozen=True)
class _Slot:
    """Where a differentiable leaf goes in a bound sample's arguments."""

    index: int
    layout: str


@dataclass
class BoundSample:
    """A sample's arguments as one framework's tensors.

    ``leaves`` are the tensors that require grad; :meth:`call` runs a function on the arguments
    rebuilt from any leaves of the same shapes (that is how gradcheck perturbs them).
    """

    factory: TensorFactory
    leaves: list[Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    def call(self, fn: Callable[..., Any], leaves: Iterable[Any] | None = None) -> Any:
        """``fn(*args, **kwargs)`` with the views of ``leaves`` (default: this sample's leaves)."""
        current = list(self.leaves if leaves is None else leaves)

        def fill(obj: Any) -> Any:
            if isinstance(obj, _Slot):
                return view_of(self.factory, current[obj.index], obj.layout)
            if isinstance(obj, (tuple, list)):
                return type(obj)(fill(o) for o in obj)
            return obj

        return fn(*fill(self.args), **{k: fill(v) for k, v in self.kwargs.items()})


def _describe(obj: Any) -> str:
    if isinstance(obj, Arg):
        return obj.describe()
    if isinstance(obj, list):
        return "[" + ",".join(_describe(o) for o in obj) + "]"
    if isinstance(obj, tuple):
        return "(" + ",".join(_describe(o) for o in obj) + ("," if len(obj) == 1 else "") + ")"
    if isinstance(obj, slice):
        parts = ["" if v is None else str(v) for v in (obj.start, obj.stop, obj.step)]
        return ":".join(parts[:2] if obj.step is None else parts)
    if obj is Ellipsis:
        return "..."
    if isinstance(obj, np.ndarray):
        return "array" + _describe(Arg(obj))
    if isinstance(obj, np.dtype):
        return str(obj)
    return repr(obj)


@dataclass(frozen=True)
class Sample:
    """One way to call an op.

    Attributes:
        args: positional arguments: :class:`Arg`, Python scalars, sequences of them, index keys.
        kwargs: keyword arguments (attributes such as ``axis``; may hold :class:`Arg` too).
        label: a word for the test id when the shapes do not tell the case apart ("ties").
        gradcheck: ``False`` at points where the op is not twice differentiable (ties, kinks,
            zeros of a norm): finite differences and second derivatives are skipped there, and
            values and first derivatives are compared with PyTorch (whose conventions for
            such points pullback follows).
        dtype_note: non-empty where pullback's result dtype deliberately differs from
            PyTorch's (see docs/semantics.md); it says why, and only the values are compared.
    """

    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""
    gradcheck: bool = True
    dtype_note: str = ""

    @property
    def has_grad_inputs(self) -> bool:
        """Whether some argument becomes a leaf that requires grad."""

        def any_grad(obj: Any) -> bool:
            if isinstance(obj, Arg):
                return obj.differentiable
            if isinstance(obj, (tuple, list)):
                return any(any_grad(o) for o in obj)
            return False

        return any_grad(self.args) or any_grad(tuple(self.kwargs.values()))

    @property
    def id(self) -> str:
        """A readable id: the argument shapes, scalars and attributes."""
        parts = [_describe(a) for a in self.args]
        parts += [f"{k}={_describe(v)}" for k, v in self.kwargs.items()]
        text = ",".join(parts)
        return f"{text},{self.label}" if self.label else text

    def bind(self, factory: TensorFactory, differentiable: bool = True) -> BoundSample:
        """Make the tensors; floating :class:`Arg` become leaves that require grad when
        ``differentiable``."""
        leaves: list[Any] = []

        def build(obj: Any) -> Any:
            if isinstance(obj, Arg):
                wants = differentiable and obj.differentiable
                leaf = factory.leaf(obj.leaf_array(), requires_grad=wants)
                if wants:
                    leaves.append(leaf)
                    return _Slot(len(leaves) - 1, obj.layout)
                return view_of(factory, leaf, obj.layout)
            if isinstance(obj, (tuple, list)):
                return type(obj)(build(o) for o in obj)
            return obj

        args = build(tuple(self.args))
        kwargs = {k: build(v) for k, v in self.kwargs.items()}
        return BoundSample(factory, leaves, args, kwargs)


@dataclass(frozen=True)
class ErrorCase:
    """Bad input and what it must raise: ``error`` with a message matching the regex ``match``
    (which names the op and, where it helps, the shapes or dtypes)."""

    args: tuple[Any, ...]
    error: type[BaseException]
    match: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""

    @property
    def id(self) -> str:
        base = Sample(self.args, self.kwargs).id
        return f"{self.label}:{base}" if self.label else base


def _no_errors(rng: np.random.Generator) -> list[ErrorCase]:
    return []


@dataclass(frozen=True)
class OpRecord:
    """Everything the generated tests need to know about one public function or op.

    Attributes:
        name: the record's name in test ids (the public name, e.g. ``"add"``, ``"Tensor.T"``,
            or the registry name for internal ops, e.g. ``"sum_to"``).
        fn: the pullback callable under test.
        torch: ``lambda torch: callable`` giving PyTorch's equivalent; it takes the same
            arguments (PyTorch tensors in place of pullback's). ``None`` only where PyTorch has
            no equivalent (then the record is checked by gradcheck alone).
        ops: the registry ops the record exercises (the coverage test checks every core op
            appears in some record, and that running the record dispatches them).
        dtypes: dtype names the samples are generated for.
        samples: ``samples(dtype, rng)`` returns the :class:`Sample` list for one dtype.
        errors: ``errors(rng)`` returns the :class:`ErrorCase` list.
        differentiable: whether gradients flow (gradcheck, backward parity).
        tolerance: per dtype name, ``(rtol, atol)`` replacing the default where an op needs it
            (the reason goes in ``note``).
        note: documented differences from PyTorch, and why a tolerance was changed.
    """

    name: str
    fn: Callable[..., Any]
    torch: Callable[[Any], Callable[..., Any]] | None
    ops: tuple[str, ...]
    dtypes: tuple[str, ...]
    samples: Callable[[np.dtype, np.random.Generator], Iterable[Sample]]
    errors: Callable[[np.random.Generator], Iterable[ErrorCase]] = _no_errors
    differentiable: bool = True
    tolerance: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    note: str = ""

    def rng(self, salt: str) -> np.random.Generator:
        """A generator seeded from the record's name and ``salt``: ids and values are stable."""
        return np.random.default_rng(zlib.crc32(f"{self.name}/{salt}".encode()))

    def sample_list(self, dtype: str, thorough: bool = True) -> list[Sample]:
        """The samples for the dtype named ``dtype``.

        With ``thorough=False``, dtypes outside :data:`PRIMARY_DTYPES` keep their labelled
        samples (special values) and every third of the others: shapes and layouts run the
        same code in every dtype, and the primary dtypes cover all of them.
        """
        samples = list(self.samples(to_dtype(dtype), self.rng(dtype)))
        if thorough or dtype in PRIMARY_DTYPES:
            return samples
        plain = [s for s in samples if not s.label]
        kept = {id(s) for s in plain[::3]}
        return [s for s in samples if s.label or id(s) in kept]

    def error_list(self) -> list[ErrorCase]:
        """The error cases."""
        return list(self.errors(self.rng("errors")))
