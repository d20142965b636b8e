"""Bitwise ops on integer and bool tensors: and, or, xor, not, and the shifts ``<<`` and ``>>``.

They promote as PyTorch (bool with an int8 tensor gives int8; a Python int outside an integer
tensor's range wraps to it, see :mod:`pullback.promotion`) and refuse floats with an
:class:`~pullback.errors.UnsupportedDTypeError` (PyTorch's NotImplementedError). A shift by the
bit width or more gives 0 (or -1 for a right shift of a negative value), as in PyTorch.
"""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedDTypeError
from ..promotion import COMMON
from ..registry import Op
from ._declare import binary_function, declare, unary_function
from .elementwise import _binary_kernel


def _integer_kernel(name: str, arity: int) -> Any:
    """The ufunc ``name``, refusing floating operands with the error PyTorch raises."""

    def make(xp: Any) -> Any:
        ufunc = _binary_kernel(name)(xp) if arity == 2 else getattr(xp, name)

        def kernel(*operands: Any) -> Any:
            for a in operands:
                kind = getattr(a, "dtype", None)
                kind = kind.kind if kind is not None else ("f" if a.__class__ is float else "i")
                if kind not in "biu":
                    raise UnsupportedDTypeError(
                        f"{kernel.__name__}: not implemented for dtype "
                        f"{getattr(a, 'dtype', type(a).__name__)} (integers and bool only)")
            return ufunc(*operands)

        kernel.__name__ = _OP_NAMES[name]
        return kernel

    return make


_OP_NAMES = {
    "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor",
    "invert": "bitwise_not", "left_shift": "bitwise_left_shift",
    "right_shift": "bitwise_right_shift",
}


def _declare_bitwise(numpy_name: str, arity: int, doc: str) -> Op:
    return declare(Op(_OP_NAMES[numpy_name], _integer_kernel(numpy_name, arity),
                      differentiable=False, promotion=COMMON if arity == 2 else None, doc=doc))


BITWISE_AND = _declare_bitwise("bitwise_and", 2, "x & y")
BITWISE_OR = _declare_bitwise("bitwise_or", 2, "x | y")
BITWISE_XOR = _declare_bitwise("bitwise_xor", 2, "x ^ y")
BITWISE_NOT = _declare_bitwise("invert", 1, "~x")
LEFT_SHIFT = _declare_bitwise("left_shift", 2, "x << y")
RIGHT_SHIFT = _declare_bitwise("right_shift", 2, "x >> y (arithmetic for signed types)")


_INTEGERS = " (integer and bool tensors)"
bitwise_not = unary_function(BITWISE_NOT, _INTEGERS)
bitwise_and, bitwise_or, bitwise_xor, bitwise_left_shift, bitwise_right_shift = (
    binary_function(op, _INTEGERS)
    for op in (BITWISE_AND, BITWISE_OR, BITWISE_XOR, LEFT_SHIFT, RIGHT_SHIFT))
