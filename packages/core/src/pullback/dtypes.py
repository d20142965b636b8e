"""dtypes: pullback uses NumPy dtype objects directly (CuPy shares them), plus bfloat16.

bfloat16 comes from ``ml_dtypes``; where it is not installed, using it raises a clear error.
"""

from __future__ import annotations

import builtins
import threading
from typing import Any

import numpy as np

from .errors import DTypeError

try:  # ml_dtypes gives NumPy a bfloat16; without it bfloat16 is unavailable, not wrong.
    import ml_dtypes as _ml_dtypes

    bfloat16: np.dtype | None = np.dtype(_ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - exercised only without ml_dtypes
    bfloat16 = None

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
    "int64": int64, "long": int64, "uint8": uint8, "bool": bool_, "bfloat16": bfloat16,
}


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
        if dtype not in _NAMES:
            raise DTypeError(f"unknown dtype name '{dtype}' (known: {', '.join(sorted(_NAMES))})")
        dt = _NAMES[dtype]
        if dt is None:
            raise DTypeError("bfloat16 needs the ml_dtypes package: pip install ml_dtypes")
        return dt
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
    return dtype.kind == "f" or (bfloat16 is not None and dtype == bfloat16)


def finfo(dtype: Any) -> Any:
    """Machine limits of a floating dtype (``eps``, ``max``, ``tiny``...), bfloat16 included."""
    dt = to_dtype(dtype)
    if bfloat16 is not None and dt == bfloat16:
        return _ml_dtypes.finfo(dt)
    if not is_floating(dt):
        raise DTypeError(f"finfo: {dt} is not a floating dtype")
    return np.finfo(dt)


def result_float_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype an op that must produce floats (mean, exp of ints...) gives for ``dtype``."""
    return dtype if is_floating(dtype) else _default.value
