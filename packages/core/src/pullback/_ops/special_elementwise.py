"""More elementwise math, as PyTorch names it: inverse and hyperbolic trigonometry, base-2 and
base-10 exponentials and logarithms, sinc, atan2, copysign, hypot, logaddexp(2), xlogy; and the
composites lerp, nan_to_num, isclose/allclose, isneginf/isposinf.

Every op is float-valued (``FLOAT``: integer inputs compute in the default dtype, as in
PyTorch) and belongs to the elementwise family, so pullback.func batches it and derives its jvp
from the grad rule. The grad rules are PyTorch's formulas (``derivatives.yaml``), written with
``F`` ops so that higher orders are exact; where a formula divides by an input that may be zero
(sinc, copysign, xlogy) the rule divides by a safe stand-in and masks the result, so neither
backward order produces NaN where PyTorch's gradient is finite.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..promotion import FLOAT
from ..registry import Op
from ._declare import binary_function, declare, unary_function
from .elementwise import _binary_kernel

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def _elementwise(name: str, kernel: Any, doc: str, **flags: Any) -> Op:
    return declare(Op(name, kernel, promotion=FLOAT, family="elementwise", doc=doc, **flags))


def _ufunc(name: str) -> Any:
    return lambda xp: getattr(xp, name)


# -- unary ------------------------------------------------------------------------------------

ACOS = _elementwise("acos", _ufunc("arccos"), "arc cosine")
ASIN = _elementwise("asin", _ufunc("arcsin"), "arc sine")
ATAN = _elementwise("atan", _ufunc("arctan"), "arc tangent")
COSH = _elementwise("cosh", _ufunc("cosh"), "hyperbolic cosine")
SINH = _elementwise("sinh", _ufunc("sinh"), "hyperbolic sine")
TAN = _elementwise("tan", _ufunc("tan"), "tangent", save_output=True)
ASINH = _elementwise("asinh", _ufunc("arcsinh"), "inverse hyperbolic sine")
ACOSH = _elementwise("acosh", _ufunc("arccosh"), "inverse hyperbolic cosine")
ATANH = _elementwise("atanh", _ufunc("arctanh"), "inverse hyperbolic tangent")
EXP2 = _elementwise("exp2", _ufunc("exp2"), "2^x", save_output=True, save_inputs=False)
LOG2 = _elementwise("log2", _ufunc("log2"), "base-2 logarithm")
LOG10 = _elementwise("log10", _ufunc("log10"), "base-10 logarithm")


def _sinc_kernel(xp: Any) -> Any:
    # NumPy's sinc is the normalized one, sin(pi x) / (pi x), 1 at 0, as PyTorch's.
    return lambda x: xp.sinc(x).astype(x.dtype, copy=False)


SINC = _elementwise("sinc", _sinc_kernel, "sin(pi x) / (pi x), 1 at 0")

ACOS.def_grad(lambda F, g, out, x: (-g * F.rsqrt(1.0 - x * x),))
ASIN.def_grad(lambda F, g, out, x: (g * F.rsqrt(1.0 - x * x),))
ATAN.def_grad(lambda F, g, out, x: (g / (x * x + 1.0),))
COSH.def_grad(lambda F, g, out, x: (g * F.sinh(x),))
SINH.def_grad(lambda F, g, out, x: (g * F.cosh(x),))
TAN.def_grad(lambda F, g, out, x: (g * (out * out + 1.0),))
ASINH.def_grad(lambda F, g, out, x: (g * F.rsqrt(x * x + 1.0),))
ACOSH.def_grad(lambda F, g, out, x: (g * F.rsqrt(x * x - 1.0),))
ATANH.def_grad(lambda F, g, out, x: (g / (1.0 - x * x),))
EXP2.def_grad(lambda F, g, out, x: (g * out * _LN2,))
LOG2.def_grad(lambda F, g, out, x: (g / (x * _LN2),))
LOG10.def_grad(lambda F, g, out, x: (g / (x * _LN10),))


@SINC.def_grad
def _sinc_grad(F: Any, g: Any, out: Any, x: Any) -> Any:
    # d/dx sin(pi x)/(pi x) = (cos(pi x) - sinc(x)) / x, and 0 at x = 0 (PyTorch's value).
    zero = F.equal(x, 0)
    safe = F.where(zero, 1.0, x)
    slope = (F.cos(safe * math.pi) - F.sinc(safe)) / safe
    return (F.where(zero, 0.0, g * slope),)


# -- binary -----------------------------------------------------------------------------------

ATAN2 = _elementwise("atan2", _binary_kernel("arctan2"), "atan2(y, x), the angle of (x, y)")
COPYSIGN = _elementwise("copysign", _binary_kernel("copysign"), "|x| with the sign of y",
                        save_output=True)
HYPOT = _elementwise("hypot", _binary_kernel("hypot"), "sqrt(x^2 + y^2)", save_output=True)
LOGADDEXP = _elementwise("logaddexp", _binary_kernel("logaddexp"), "log(e^x + e^y)")
LOGADDEXP2 = _elementwise("logaddexp2", _binary_kernel("logaddexp2"), "log2(2^x + 2^y)")


def _xlogy_kernel(xp: Any) -> Any:
    def xlogy(x: Any, y: Any) -> Any:
        # A Python number takes the tensor's dtype (np.log would make it a float64 scalar).
        if not hasattr(x, "dtype"):
            x = xp.asarray(x, dtype=y.dtype)
        if not hasattr(y, "dtype"):
            y = xp.asarray(y, dtype=x.dtype)
        # 0 where x == 0 (unless y is NaN), log(0) computed without NumPy's warning.
        with np.errstate(divide="ignore", invalid="ignore"):
            prod = xp.multiply(x, xp.log(y))
        return xp.where((x == 0) & ~xp.isnan(y), xp.zeros((), prod.dtype), prod)

    return xlogy


XLOGY = _elementwise("xlogy", _xlogy_kernel, "x * log(y), 0 where x == 0")


@ATAN2.def_grad
def _atan2_grad(F: Any, g: Any, out: Any, y: Any, x: Any, needs: Any) -> Any:
    scale = g / (x * x + y * y)
    return (scale * x if needs[0] else None), (-scale * y if needs[1] else None)


@COPYSIGN.def_grad
def _copysign_grad(F: Any, g: Any, out: Any, x: Any, y: Any, needs: Any) -> Any:
    # out / x is +-1; 0 where x == 0 (PyTorch's convention). y gets no gradient. Nothing is
    # computed from x unless it needs a gradient: a Python-number x would make a CPU tensor.
    gx = None
    if needs[0]:
        zero = F.equal(x, 0)
        gx = g * F.where(zero, 0.0, out / F.where(zero, 1.0, x))
    zeros = F.full(tuple(g.shape), 0.0, like=g) if needs[1] else None
    return gx, zeros


@HYPOT.def_grad
def _hypot_grad(F: Any, g: Any, out: Any, x: Any, y: Any, needs: Any) -> Any:
    scale = g / out
    return (scale * x if needs[0] else None), (scale * y if needs[1] else None)


@LOGADDEXP.def_grad
def _logaddexp_grad(F: Any, g: Any, out: Any, x: Any, y: Any, needs: Any) -> Any:
    return ((g * F.sigmoid(x - y)) if needs[0] else None,
            (g * F.sigmoid(y - x)) if needs[1] else None)


@LOGADDEXP2.def_grad
def _logaddexp2_grad(F: Any, g: Any, out: Any, x: Any, y: Any, needs: Any) -> Any:
    return ((g * F.sigmoid((x - y) * _LN2)) if needs[0] else None,
            (g * F.sigmoid((y - x) * _LN2)) if needs[1] else None)


@XLOGY.def_grad
def _xlogy_grad(F: Any, g: Any, out: Any, x: Any, y: Any, needs: Any) -> Any:
    gx = gy = None
    if needs[0]:
        # PyTorch: xlogy(g, y), with 0 where x == 0 and y <= 0. A Python-number y is compared
        # in Python (an op on it alone would make a CPU tensor, whatever g's device).
        gx = F.xlogy(g, y)
        if isinstance(y, (int, float)):
            if y <= 0:
                gx = F.where(F.equal(x, 0), 0.0, gx)
        else:
            gx = F.where(F.logical_and(F.equal(x, 0), F.less_equal(y, 0)), 0.0, gx)
    if needs[1]:
        gy = g * x / y
    return gx, gy


# -- public functions -------------------------------------------------------------------------

acos, asin, atan, cosh, sinh, tan, asinh, acosh, atanh = map(
    unary_function, (ACOS, ASIN, ATAN, COSH, SINH, TAN, ASINH, ACOSH, ATANH))
exp2, log2, log10, sinc = map(unary_function, (EXP2, LOG2, LOG10, SINC))
atan2, copysign, hypot, logaddexp, logaddexp2, xlogy = map(
    binary_function, (ATAN2, COPYSIGN, HYPOT, LOGADDEXP, LOGADDEXP2, XLOGY))
arccos, arcsin, arctan, arctan2 = acos, asin, atan, atan2  # PyTorch's NumPy-style aliases


def lerp(start: Any, end: Any, weight: Any) -> Any:
    """``start + weight * (end - start)``, broadcast together (``weight`` a number or a Tensor)."""
    from .elementwise import add, mul, sub

    return add(start, mul(weight, sub(end, start)))


def nan_to_num(x: Any, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Any:
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (by default 0 and the
    largest and smallest finite values of the dtype). The gradient passes where ``x`` is finite
    and is 0 elsewhere, as in PyTorch. Integer tensors come back as a copy."""
    from ..dtypes import finfo, is_floating
    from .conversion import clone
    from .elementwise import isnan, where

    if not is_floating(x.dtype):
        return clone(x)
    info = finfo(x.dtype)
    high = float(info.max) if posinf is None else posinf
    low = float(info.min) if neginf is None else neginf
    out = where(isnan(x), nan, x)
    out = where(isposinf(x), high, out)
    return where(isneginf(x), low, out)


def isposinf(x: Any) -> Any:
    """Where ``x`` is +inf (bool)."""
    from .elementwise import eq

    return eq(x, math.inf)


def isneginf(x: Any) -> Any:
    """Where ``x`` is -inf (bool)."""
    from .elementwise import eq

    return eq(x, -math.inf)


def isclose(x: Any, y: Any, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Any:
    """Where ``|x - y| <= atol + rtol * |y|`` (bool, broadcast); an infinity is close only to
    itself, and NaNs are close to each other only with ``equal_nan``."""
    from .elementwise import abs, eq, isfinite, isnan, le, logical_and, logical_or, mul, sub

    finite = logical_and(isfinite(x), isfinite(y))
    near = logical_and(finite, le(abs(sub(x, y)), atol + mul(abs(y), rtol)))
    close = logical_or(eq(x, y), near)
    if equal_nan:
        close = logical_or(close, logical_and(isnan(x), isnan(y)))
    return close


def allclose(x: Any, y: Any, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """Whether every element of ``x`` is close to ``y`` (see :func:`isclose`): a Python bool."""
    return bool(isclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan).all())


METHODS = (
    "acos", "asin", "atan", "cosh", "sinh", "tan", "asinh", "acosh", "atanh", "exp2", "log2",
    "log10", "sinc", "atan2", "copysign", "hypot", "logaddexp", "logaddexp2", "xlogy", "lerp",
    "nan_to_num", "isposinf", "isneginf", "isclose", "allclose", "arccos", "arcsin", "arctan",
    "arctan2",
)
