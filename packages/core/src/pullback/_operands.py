"""What an op and Tensor's operators take besides Tensors, as PyTorch draws the line.

Ops take Tensors, Python numbers (bool, int, float, complex), NumPy arrays and scalars, and
arrays of a backend (anything that speaks DLPack, as CuPy's arrays do). Anything else used to
reach NumPy, which made an object-dtype array of it; now:

- Tensor's binary operators return ``NotImplemented`` for it, so that Python runs the other
  object's reflected operator (``tensor + thing`` calls ``thing.__radd__``), as PyTorch does,
  and otherwise raises its own "unsupported operand type(s)" TypeError;
- :func:`pullback.dispatch.apply` raises :class:`~pullback.errors.ArgumentTypeError` naming the
  op (``None`` passes: it stands for an absent optional input, as linear's bias).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import ArgumentTypeError
from .tensor import Tensor

_OPERAND_BASES = (Tensor, bool, int, float, complex, np.ndarray, np.generic)
# Classes already seen to be operands: one set look-up on the hot path instead of isinstance
# over the bases (Tensor subclasses and NumPy's scalar classes join at first sight).
OPERAND_CLASSES: set[type] = {Tensor, bool, int, float, complex, np.ndarray}


def is_operand(value: Any) -> bool:
    """Whether ``value`` is something an op takes: a Tensor, a Python number, a NumPy array or
    scalar, or another array library's array (it has ``__dlpack__``)."""
    cls = value.__class__
    if cls in OPERAND_CLASSES:
        return True
    if isinstance(value, _OPERAND_BASES) or hasattr(cls, "__dlpack__"):
        OPERAND_CLASSES.add(cls)
        return True
    return False


def operand_type_error(op_name: str, position: int, value: Any) -> ArgumentTypeError:
    """The error for an argument of ``op_name`` (0-based ``position``) that is no operand."""
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return ArgumentTypeError(
        f"{op_name}: argument {position} is a {type(value).__qualname__} ({shown}); ops take "
        f"Tensors, Python numbers and NumPy arrays (convert it with pullback.tensor(...))")
