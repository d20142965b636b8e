"""Turn a kernel's exception (NumPy's wording) into a typed error that names the op, the input
shapes, dtypes and the attributes."""

from __future__ import annotations

from typing import Any

from .errors import DTypeError, IndexOutOfRangeError, PullbackError, ShapeError
from .registry import Op


def _describe(args: tuple[Any, ...]) -> str:
    parts = []
    for a in args:
        shape = getattr(a, "shape", None)
        if shape is not None and hasattr(a, "dtype"):
            parts.append(f"{tuple(shape)} {a.dtype}")
        else:
            parts.append(repr(a))
    return ", ".join(parts)


def kernel_error(op: Op, args: tuple[Any, ...], attrs: dict[str, Any], exc: Exception) -> PullbackError:
    """The typed error to raise for ``exc`` raised by ``op``'s kernel."""
    shown = {k: v for k, v in attrs.items() if k != "key"}
    where = f"{op.name}: inputs ({_describe(args)})" + (f", attributes {shown}" if shown else "")
    message = str(exc)
    if isinstance(exc, IndexError):
        return IndexOutOfRangeError(f"{where}: {message}")
    if "broadcast" in message or "shape" in message or "dimension" in message or "axis" in message:
        return ShapeError(f"{where}: {message}")
    if isinstance(exc, TypeError) or "dtype" in message or "cast" in message:
        return DTypeError(f"{where}: {message}")
    return ShapeError(f"{where}: {message}") if isinstance(exc, ValueError) else PullbackError(
        f"{where}: {type(exc).__name__}: {message}"
    )
