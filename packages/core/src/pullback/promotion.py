"""Type promotion in dispatch: how an op brings its inputs to one dtype, as PyTorch does.

An op declares a :class:`Promotion` (``Op("add", ..., promotion=COMMON)``). Dispatch looks at it
only when something could change a dtype: the op's tensors do not all share one dtype, a Python
float meets an integer or bool tensor, or a float-valued op (``FLOAT``) gets integers. Then
:func:`promote` decides which input to cast to which dtype. The decision depends only on the
inputs' dtypes, which of them are 0-d, the classes of the Python numbers and the default dtype,
so it is made once per such signature and kept in a small table: promotion costs no per-element
work and, on the common path (one dtype throughout), no table look-up at all.

Tensor inputs are cast with the ``cast`` op, recorded in the graph like any other op, so their
gradients come back in their own dtypes.

Example::

    from pullback.promotion import FLOAT
    from pullback.registry import Op

    HYPOT = Op("my.hypot", lambda xp: xp.hypot, promotion=FLOAT)  # int inputs give float32
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .dtypes import get_default_dtype, is_floating_or_complex, number_dtype, result_dtype_of
from .errors import DTypeError
from .tensor import Tensor

_KINDS = ("common", "float", "same")
_NUMBERS = (bool, int, float, complex)


class Promotion:
    """An op's dtype rule.

    Args:
        kind: ``"common"``: the inputs are cast to their result type
            (:func:`pullback.result_type`); ``"float"``: the same, and integer or bool results
            become the default dtype (true division, exp, mean...); ``"same"``: the tensors
            must already share one dtype (matmul, linear: PyTorch refuses to mix them there).
        args: the positions of the arguments that take part (``where``'s condition does not);
            all of them by default.
    """

    __slots__ = ("kind", "args", "to_float")

    def __init__(self, kind: str, args: Sequence[int] | None = None) -> None:
        if kind not in _KINDS:
            raise ValueError(f"Promotion: kind must be one of {_KINDS}, got {kind!r}")
        self.kind = kind
        self.args = None if args is None else tuple(args)
        self.to_float = kind == "float"  # read by dispatch on every call of the op

    def __repr__(self) -> str:
        extra = "" if self.args is None else f", args={self.args}"
        return f"Promotion({self.kind!r}{extra})"


COMMON = Promotion("common")
FLOAT = Promotion("float")
SAME = Promotion("same")

# (promotion, default dtype, signature) -> (result dtype, ((position, target dtype), ...)) or
# the message of the error the signature must raise.
_PLANS: dict[tuple[Any, ...], Any] = {}
_NOTHING_TO_DO: tuple[tuple[int, np.dtype], ...] = ()


def _signature(value: Any) -> Any:
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return value.__class__
    return dtype, value.ndim == 0


def promote(op: Any, args: tuple[Any, ...], arrays: list[Any]) -> tuple[tuple[Any, ...], list[Any]] | None:
    """``args`` and ``arrays`` (their backend arrays) brought to the op's result dtype, or
    ``None`` when nothing changes. Raises :class:`DTypeError` where the op refuses the mix."""
    rule = op.promotion
    key = (rule, get_default_dtype(), tuple(map(_signature, arrays)))
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = _plan(op.name, rule, key[2])
    if plan.__class__ is str:
        raise DTypeError(plan)
    result, casts = plan
    wraps = _wrapped_ints(rule, arrays, result)
    if not casts and not wraps:
        return None
    new_args, new_arrays = list(args), list(arrays)
    for i, target in casts:
        a = args[i]
        if isinstance(a, Tensor):
            cast = _cast_op()
            from .dispatch import apply

            a = apply(cast, a, dtype=target)
            new_args[i], new_arrays[i] = a, a.array
        else:
            new_args[i] = new_arrays[i] = target.type(a)
    for i in wraps:
        new_args[i] = new_arrays[i] = wrap_int(arrays[i], result)
    return tuple(new_args), new_arrays


def _plan(name: str, rule: Promotion, signature: tuple[Any, ...]) -> Any:
    positions = range(len(signature)) if rule.args is None else rule.args
    dims: list[np.dtype] = []
    zero_dims: list[np.dtype] = []
    numbers: list[np.dtype] = []
    tensors: list[int] = []
    for i in positions:
        if i >= len(signature):
            continue
        s = signature[i]
        if s.__class__ is tuple:
            (zero_dims if s[1] else dims).append(s[0])
            tensors.append(i)
        elif s in _NUMBERS:
            numbers.append(number_dtype(s()))
    if rule.kind == "same":
        found = list(dict.fromkeys(dims + zero_dims))
        if len(found) > 1:
            return (f"{name}: expected all tensors to have the same dtype, got "
                    f"{', '.join(str(d) for d in found)}; convert them with .to(dtype)")
        return (found[0] if found else None), _NOTHING_TO_DO
    result = result_dtype_of(dims, zero_dims, numbers)
    if result is None:
        return None, _NOTHING_TO_DO
    if rule.to_float and not is_floating_or_complex(result):
        result = get_default_dtype()
    casts = []
    for i in positions:
        if i >= len(signature):
            continue
        s = signature[i]
        if s.__class__ is tuple:
            if s[0] != result:
                casts.append((i, result))
        elif s in _NUMBERS and (not tensors or s is complex):
            # A Python number beside a tensor of the result dtype is weak in NumPy too (it
            # takes that dtype); alone, or complex (NumPy's weak complex is complex128), it
            # becomes a number of the result dtype.
            casts.append((i, result))
    return result, tuple(casts)


def _wrapped_ints(rule: Promotion, arrays: list[Any], result: Any) -> list[int]:
    """Positions of Python ints outside the range of an integer result dtype."""
    if result is None or result.kind not in "iu":
        return []
    info = np.iinfo(result)
    positions = range(len(arrays)) if rule.args is None else rule.args
    return [i for i in positions if i < len(arrays) and arrays[i].__class__ is int
            and not info.min <= arrays[i] <= info.max]


def wrap_int(value: int, dtype: np.dtype) -> Any:
    """A Python int as a number of an integer ``dtype``, wrapped modulo 2**bits as PyTorch's
    conversion does (``int8`` tensor ``+ 1000`` adds -24). Beyond 64 bits: OverflowError."""
    if not -2**63 <= value < 2**64:
        raise OverflowError(f"Python integer {value} is too large for any integer dtype")
    bits = dtype.itemsize * 8
    wrapped = value % (1 << bits)
    if dtype.kind == "i" and wrapped >= 1 << (bits - 1):
        wrapped -= 1 << bits
    return dtype.type(wrapped)


_CAST: Any = None


def _cast_op() -> Any:
    global _CAST
    if _CAST is None:
        from .registry import OPS

        _CAST = OPS["cast"]
    return _CAST


def clear_cache() -> None:
    """Forget the decisions made so far (for tests that count them)."""
    _PLANS.clear()
