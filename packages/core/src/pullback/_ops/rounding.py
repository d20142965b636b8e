"""Rounding and integer division: sign, floor, ceil, round, trunc, frac, floor_divide,
remainder, fmod, and true division with a rounding mode.

As in PyTorch, the piecewise-constant ops (sign, floor, ceil, round, trunc, and division with a
rounding mode) have zero gradients: their outputs take part in the graph, so a backward through
them runs and gives 0 there instead of failing or silently skipping the path. ``floor_divide``
(``//``) has no derivative, as in PyTorch: a backward through it is an error naming the op.
``remainder`` and ``fmod`` have their true derivatives, 1 and ``-floor(x / y)`` (resp.
``-trunc(x / y)``).
"""

from __future__ import annotations

from typing import Any

from ..dispatch import apply
from ..errors import ArgumentError, UnsupportedDTypeError
from ..promotion import COMMON
from ..registry import Op
from ._declare import binary_function, declare, unary_function
from ._zero_division import refusing_zero_divisors
from .elementwise import SUB, _binary_kernel, _weak


def refusing_bool(op_name: str, make: Any) -> Any:
    """The binary kernel factory ``make`` refusing two bool operands, as PyTorch does for
    division and powers (NumPy computes them in int8)."""

    def checked_make(xp: Any) -> Any:
        kernel = make(xp)

        def checked(x: Any, y: Any, **attrs: Any) -> Any:
            if _is_bool(x) and _is_bool(y):
                raise UnsupportedDTypeError(f"{op_name}: not implemented for bool operands")
            return kernel(x, y, **attrs)

        checked.__name__ = op_name
        return checked

    return checked_make


def _is_bool(v: Any) -> bool:
    dtype = getattr(v, "dtype", None)
    return v.__class__ is bool if dtype is None else dtype.kind == "b"


def _zero_grad(F: Any, g: Any, out: Any, x: Any, **attrs: Any) -> tuple[Any]:
    # Zeros, not g * 0: PyTorch's gradient is 0 even where g is inf or nan.
    return (F.full(tuple(g.shape), 0.0, like=g),)


def _keeping_integers(fn: Any) -> Any:
    """``fn`` for floats; integer and bool inputs come back as they are (a copy)."""

    def kernel(x: Any, **attrs: Any) -> Any:
        return x.copy() if x.dtype.kind in "biu" else fn(x, **attrs)

    return kernel


SIGN = declare(Op("sign", lambda xp: xp.sign, save_inputs=False, doc="sign of x"))
FLOOR = declare(Op("floor", lambda xp: _keeping_integers(xp.floor), save_inputs=False,
                   doc="round down"))
CEIL = declare(Op("ceil", lambda xp: _keeping_integers(xp.ceil), save_inputs=False,
                  doc="round up"))
TRUNC = declare(Op("trunc", lambda xp: _keeping_integers(xp.trunc), save_inputs=False,
                   doc="round toward zero"))
ROUND = declare(Op("round", lambda xp: lambda x, decimals=0: xp.round(x, decimals),
                   save_inputs=False, doc="round half to even"))
for _op in (SIGN, FLOOR, CEIL, TRUNC, ROUND):
    _op.def_grad(_zero_grad)


def _div_rounded_kernel(xp: Any) -> Any:
    def div_rounded(x: Any, y: Any, rounding_mode: str) -> Any:
        # A Python number stays weak against bfloat16 (ml_dtypes would widen to float32).
        x, y = _weak(x, y), _weak(y, x)
        if rounding_mode == "floor":
            return xp.floor_divide(x, y)
        dtype = getattr(x, "dtype", None)
        if (y.dtype if dtype is None else dtype).kind in "biu":
            # C division truncates: the floor quotient, plus one where a remainder is left and
            # the signs differ.
            q = xp.floor_divide(x, y)
            return q + ((xp.remainder(x, y) != 0) & ((xp.less(x, 0)) != (xp.less(y, 0))))
        return xp.trunc(xp.true_divide(x, y))

    return div_rounded


DIV_ROUNDED = declare(Op("div_rounded", refusing_bool("div", refusing_zero_divisors(
                             "div", _div_rounded_kernel)),
                         save_inputs=False,
                         promotion=COMMON, doc="x / y rounded toward zero or down"))
DIV_ROUNDED.def_grad(lambda F, g, out, x, y, rounding_mode: (
    F.full(tuple(g.shape), 0.0, like=g), F.full(tuple(g.shape), 0.0, like=g)))

# No grad rule: like PyTorch's floor_divide, a backward through it raises, naming the op.
# Integer division by zero raises (DivisionByZeroError), as in PyTorch; NumPy returns 0.
FLOOR_DIVIDE = declare(Op("floor_divide", refusing_bool("floor_divide", refusing_zero_divisors(
    "floor_divide", _binary_kernel("floor_divide"))), save_inputs=False, promotion=COMMON,
    doc="x // y"))
REMAINDER = declare(Op("remainder", refusing_bool("remainder", refusing_zero_divisors(
    "remainder", _binary_kernel("remainder"))), promotion=COMMON, doc="x % y (sign of y)"))
FMOD = declare(Op("fmod", refusing_bool("fmod", refusing_zero_divisors(
    "fmod", _binary_kernel("fmod"))), promotion=COMMON,
    doc="C's fmod: the remainder with the sign of x"))


@REMAINDER.def_grad
def _remainder_grad(F: Any, g: Any, out: Any, x: Any, y: Any, needs: Any) -> Any:
    gy = F.neg(F.mul(g, F.floor(F.div(x, y)))) if needs[1] else None
    return (g if needs[0] else None), gy


@FMOD.def_grad
def _fmod_grad(F: Any, g: Any, out: Any, x: Any, y: Any, needs: Any) -> Any:
    gy = F.neg(F.mul(g, F.trunc(F.div(x, y)))) if needs[1] else None
    return (g if needs[0] else None), gy


_ROUNDING_MODES = (None, "trunc", "floor")


def div(x: Any, y: Any, *, rounding_mode: str | None = None) -> Any:
    """``x / y``; ``rounding_mode="trunc"`` rounds the quotient toward zero, ``"floor"`` down
    (both keep integer dtypes and have zero gradients, as in PyTorch)."""
    from .elementwise import DIV

    if rounding_mode is None:
        return apply(DIV, x, y)
    if rounding_mode not in _ROUNDING_MODES:
        raise ArgumentError(f"div: rounding_mode must be None, 'trunc' or 'floor', got "
                            f"{rounding_mode!r}")
    return apply(DIV_ROUNDED, x, y, rounding_mode=rounding_mode)


def round(x: Any, decimals: int = 0) -> Any:  # noqa: A001
    """Round half to even (zero gradient)."""
    return apply(ROUND, x, decimals=decimals)


def frac(x: Any) -> Any:
    """``x - trunc(x)``: the fractional part, with the sign of ``x`` (gradient 1)."""
    return apply(SUB, x, apply(TRUNC, x))


sign, floor, ceil, trunc = (unary_function(op, " (zero gradient)")
                            for op in (SIGN, FLOOR, CEIL, TRUNC))
floor_divide, remainder, fmod = map(binary_function, (FLOOR_DIVIDE, REMAINDER, FMOD))
