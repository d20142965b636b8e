"""dtypes: pullback uses NumPy dtype objects directly (CuPy shares them), plus bfloat16.

bfloat16 comes from ``ml_dtypes``, imported on first use of ``bfloat16`` (ml_dtypes 0.7 takes half
a second to import, more than the rest of pullback); where it is not installed, using it raises a
clear error. A bfloat16 array can only exist once ml_dtypes is imported, so the checks below test
a dtype's name and never need the module.
"""

from __future__ import annotations

import builtins
import threading
from typing import Any

import numpy as np

from .errors import DTypeError

DType = np.dtype

float16 = np.dtype("float16")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
int8 = np.dtype("int8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
uint8 = np.dtype("uint8")
bool_ = np.dtype("bool")

half, float, double = float16, float32, float64  # noqa: A001 - PyTorch's aliases
long, int = int64, int32  # noqa: A001

_NAMES: dict[str, np.dtype | None] = {
    "float16": float16, "half": float16, "float32": float32, "float": float32,
    "float64": float64, "double": float64, "int8": int8, "int16": int16, "int32": int32,
    "int64": int64, "long": int64, "uint8": uint8, "bool": bool_,
}


def _bfloat16() -> np.dtype:
    """ml_dtypes' bfloat16 as a NumPy dtype, importing ml_dtypes the first time."""
    try:
        import ml_dtypes
    except ImportError:  # pragma: no cover - exercised only without ml_dtypes
        raise DTypeError("bfloat16 needs the ml_dtypes package: pip install ml_dtypes") from None
    return np.dtype(ml_dtypes.bfloat16)


def __getattr__(name: str) -> Any:
    if name == "bfloat16":  # pullback.dtypes.bfloat16, resolved on first use
        return _bfloat16()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def is_bfloat16(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is ml_dtypes' bfloat16 (without importing ml_dtypes)."""
    return dtype.kind == "V" and dtype.name == "bfloat16"


class _DefaultDType(threading.local):
    value: np.dtype = float32


_default = _DefaultDType()


def get_default_dtype() -> np.dtype:
    """The floating dtype of tensors made from Python floats (float32 unless changed)."""
    return _default.value


def set_default_dtype(dtype: Any) -> None:
    """Set the default floating dtype (float32 or float64, as in PyTorch)."""
    dt = to_dtype(dtype)
    if dt.kind != "f":
        raise DTypeError(f"set_default_dtype: expected a floating dtype, got {dt}")
    _default.value = dt


def to_dtype(dtype: Any) -> np.dtype:
    """Normalize a dtype spec (dtype, name, Python type, NumPy type) to a NumPy dtype."""
    if dtype is None:
        return _default.value
    if isinstance(dtype, np.dtype):
        return dtype
    if isinstance(dtype, str):
        if dtype == "bfloat16":
            return _bfloat16()
        if dtype not in _NAMES:
            known = ", ".join(sorted([*_NAMES, "bfloat16"]))
            raise DTypeError(f"unknown dtype name '{dtype}' (known: {known})")
        return _NAMES[dtype]
    if dtype is builtins.float:
        return _default.value
    if dtype is builtins.int:
        return int64
    try:
        return np.dtype(dtype)
    except TypeError:
        raise DTypeError(f"not a dtype: {dtype!r}") from None


def is_floating(dtype: np.dtype) -> bool:
    """True for float16/32/64 and bfloat16 (the dtypes that can carry gradients)."""
    return dtype.kind == "f" or is_bfloat16(dtype)


def finfo(dtype: Any) -> Any:
    """Machine limits of a floating dtype (``eps``, ``max``, ``tiny``...), bfloat16 included."""
    dt = to_dtype(dtype)
    if is_bfloat16(dt):
        import ml_dtypes

        return ml_dtypes.finfo(dt)
    if not is_floating(dt):
        raise DTypeError(f"finfo: {dt} is not a floating dtype")
    return np.finfo(dt)


def is_floating_or_complex(dtype: np.dtype) -> bool:
    """True for the dtypes a float-valued op (exp, true division, mean...) keeps as they are."""
    return dtype.kind in _FLOAT_KINDS


_FLOAT_KINDS = "fcV"  # float, complex, and ml_dtypes' bfloat16 (kind "V")

# -- type promotion, as PyTorch ---------------------------------------------------------------
#
# Categories order the kinds: a higher category wins over a lower one whatever the sizes (an
# int64 tensor meeting a float16 one gives float16), and within a category the larger type wins.

_BOOL, _INTEGRAL, _FLOATING, _COMPLEX = 0, 1, 2, 3


def category(dtype: np.dtype) -> builtins.int:
    """0 for bool, 1 for integers, 2 for floats (bfloat16 included), 3 for complex."""
    kind = dtype.kind
    if kind == "b":
        return _BOOL
    if kind in "iu":
        return _INTEGRAL
    if kind == "c":
        return _COMPLEX
    if kind == "f" or is_bfloat16(dtype):
        return _FLOATING
    raise DTypeError(f"dtype {dtype} takes no part in type promotion")


_PROMOTED: dict[tuple[np.dtype, np.dtype], np.dtype] = {}


def promote_types(type1: Any, type2: Any) -> np.dtype:
    """The smallest dtype both ``type1`` and ``type2`` convert to, as ``torch.promote_types``.

    Unlike NumPy, a float wins over an integer without widening (int64 and float16 give float16)
    and float16 with bfloat16 gives float32.

    Example::

        >>> import pullback as pb
        >>> pb.promote_types(pb.int64, pb.float16)
        dtype('float16')
    """
    a, b = to_dtype(type1), to_dtype(type2)
    key = (a, b)
    out = _PROMOTED.get(key)
    if out is None:
        out = _PROMOTED[key] = _promote_pair(a, b)
    return out


def _promote_pair(a: np.dtype, b: np.dtype) -> np.dtype:
    if a == b:
        return a
    ca, cb = category(a), category(b)
    if ca != cb:
        high, low = (a, b) if ca > cb else (b, a)
        if category(high) == _COMPLEX and category(low) == _FLOATING and low.itemsize * 2 > \
                high.itemsize:
            return np.dtype(np.complex128)  # complex64 with float64 keeps float64's precision
        return high
    if ca == _FLOATING:
        if a.itemsize == b.itemsize:  # float16 and bfloat16: neither holds the other
            return float32
        return a if a.itemsize > b.itemsize else b
    # Integers (uint8 with a signed type widens it as NumPy does) and complex types.
    return np.promote_types(a, b)


def number_dtype(value: Any) -> np.dtype:
    """The dtype a Python number stands for in promotion (PyTorch's "wrapped numbers"): bool,
    int64 for ints, the default dtype for floats, the matching complex type for complex."""
    if isinstance(value, builtins.bool):
        return bool_
    if isinstance(value, builtins.int):
        return int64
    if isinstance(value, builtins.float):
        return _default.value
    if isinstance(value, complex):
        return np.dtype(np.complex128 if _default.value == float64 else np.complex64)
    raise DTypeError(f"result_type: {type(value).__name__} is not a tensor or a Python number")


def _combine_categories(higher: np.dtype | None, lower: np.dtype | None) -> np.dtype | None:
    """PyTorch's rule for joining two priority groups (tensors with dims over 0-d tensors over
    Python numbers): the higher group keeps its dtype unless the lower one is of a higher
    category."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    high, low = category(higher), category(lower)
    if high >= low:
        return higher
    if high == _FLOATING and low == _COMPLEX:  # the float's precision, made complex
        return np.dtype(np.complex128 if higher == float64 else np.complex64)
    return promote_types(higher, lower)


def result_dtype_of(dims: Any, zero_dims: Any, numbers: Any) -> np.dtype | None:
    """The result dtype of operands given as three groups of dtypes: tensors with at least one
    dim, 0-d tensors, and the dtypes of Python numbers (see :func:`result_type`)."""
    groups = []
    for group in (dims, zero_dims, numbers):
        out = None
        for dt in group:
            out = dt if out is None else promote_types(out, dt)
        groups.append(out)
    return _combine_categories(groups[0], _combine_categories(groups[1], groups[2]))


def result_type(*operands: Any) -> np.dtype:
    """The dtype an elementwise op on ``operands`` computes and returns, as ``torch.result_type``.

    Operands are Tensors (or arrays) and Python numbers. Tensors with dims decide unless a 0-d
    tensor or a number is of a higher category (bool < integer < float < complex): then the
    result is the promotion of the two. A Python float stands for the default dtype, a Python int
    for int64. So an int32 tensor plus 0.5 is float32, float32 plus a float64 0-d tensor stays
    float32, and int32 plus an int64 0-d tensor stays int32.

    Example::

        >>> import pullback as pb
        >>> pb.result_type(pb.tensor([1, 2], dtype=pb.int32), 0.5)
        dtype('float32')
    """
    if not operands:
        raise DTypeError("result_type: needs at least one operand")
    dims: list[np.dtype] = []
    zero_dims: list[np.dtype] = []
    numbers: list[np.dtype] = []
    for x in operands:
        dtype = getattr(x, "dtype", None)  # NumPy scalars count as 0-d tensors
        if dtype is None:
            numbers.append(number_dtype(x))
        elif len(x.shape):
            dims.append(to_dtype(dtype))
        else:
            zero_dims.append(to_dtype(dtype))
    out = result_dtype_of(dims, zero_dims, numbers)
    assert out is not None
    return out


def can_cast(from_: Any, to: Any) -> bool:
    """Whether ``from_`` may be stored into ``to`` by an in-place op, as ``torch.can_cast``:
    anything but a float or complex into an integer or bool, a complex into a non-complex, or a
    non-bool into bool."""
    a, b = category(to_dtype(from_)), category(to_dtype(to))
    if a == _COMPLEX and b != _COMPLEX:
        return False
    if a == _FLOATING and b <= _INTEGRAL:
        return False
    return not (a != _BOOL and b == _BOOL)
