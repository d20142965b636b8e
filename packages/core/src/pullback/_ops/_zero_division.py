"""Integer division by zero is an error, as in PyTorch.

NumPy's integer ``//``, ``%`` and ``fmod`` by zero return 0 with a RuntimeWarning, a silently
wrong result; floating division keeps its IEEE meaning (inf, NaN) and is not checked.
"""

from __future__ import annotations

from typing import Any, Callable

from ..errors import DivisionByZeroError

_INTEGER_KINDS = "biu"


def _is_integer(v: Any) -> bool:
    dtype = getattr(v, "dtype", None)
    if dtype is not None:
        return dtype.kind in _INTEGER_KINDS
    return isinstance(v, int)  # a Python int (or bool) operand


def check_integer_divisor(op_name: str, x: Any, y: Any) -> None:
    """Raise a DivisionByZeroError when ``x`` and ``y`` are integers and ``y`` holds a zero."""
    if not (_is_integer(x) and _is_integer(y)):
        return
    if hasattr(y, "dtype"):
        if not bool((y == 0).any()):
            return
        shown = f"divisor of shape {tuple(y.shape)} {y.dtype} holds 0"
    elif y != 0:
        return
    else:
        shown = "divisor 0"
    raise DivisionByZeroError(f"{op_name}: integer division by zero ({shown}); PyTorch raises "
                              "here too (floats give inf or NaN)")


def refusing_zero_divisors(op_name: str, make: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """The kernel factory ``make`` (``make(xp)`` gives ``kernel(x, y, **attrs)``) with the
    divisor ``y`` checked first."""

    def checked_make(xp: Any) -> Any:
        kernel = make(xp)

        def checked(x: Any, y: Any, **attrs: Any) -> Any:
            check_integer_divisor(op_name, x, y)
            return kernel(x, y, **attrs)

        # No ``ufunc`` attribute on purpose: the CPU backend would call the ufunc directly.
        checked.__name__ = op_name
        return checked

    return checked_make
