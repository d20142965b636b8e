"""Elementwise ops: arithmetic, transcendental functions, activations, comparisons.

Each op is declared once with a generic kernel (built from the backend's array namespace ``xp``)
and, when differentiable, its grad rule right below it. Rules see inputs that may be broadcast;
the engine sums each gradient down to its input's shape. The rules of ops that run on large
activations call ``F.mul``/``F.sub``... rather than Python operators: on raw arrays operators
would bypass the backend's kernels (and with them the CPU backend's threading).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..dispatch import apply
from ..dtypes import is_bfloat16, is_floating
from ..errors import ArgumentError, UnsupportedDTypeError
from ..promotion import COMMON, FLOAT, Promotion
from ..registry import Op
from ._declare import binary_function as _binary, declare, unary_function as _unary
from ._erf32 import phi32

_PYTHON_NUMBERS = (bool, int, float)
_NO_DTYPE = np.dtype(object)  # what a dtype-less operand counts as (its kind is "O")


def _weak(x: Any, other: Any) -> Any:
    """A Python number ``x`` meeting a bfloat16 array becomes a bfloat16 scalar.

    NumPy treats Python numbers as "weak" (NEP 50) for its own dtypes, so ``float16 * 0.5``
    stays float16; ml_dtypes' bfloat16 instead promotes with them to float32 or float64.
    """
    dtype = getattr(other, "dtype", None)
    if x.__class__ in _PYTHON_NUMBERS and dtype is not None and is_bfloat16(dtype):
        return dtype.type(x)
    return x


def _binary_kernel(name: str) -> Any:
    """The kernel factory of a binary ufunc, with Python numbers weak against bfloat16 too."""

    def make(xp: Any) -> Any:
        ufunc = getattr(xp, name)

        def kernel(x: Any, y: Any) -> Any:
            # Inlined checks (this runs for every ``x - 0.5``): only a bfloat16 array (kind
            # "V") makes a Python number weak by hand.
            if x.__class__ in _PYTHON_NUMBERS:
                if getattr(y, "dtype", _NO_DTYPE).kind == "V":
                    x = _weak(x, y)
            elif y.__class__ in _PYTHON_NUMBERS and getattr(x, "dtype", _NO_DTYPE).kind == "V":
                y = _weak(y, x)
            return ufunc(x, y)

        kernel.__name__ = name
        kernel.ufunc = ufunc  # type: ignore[attr-defined]  # lets backends call it with out=
        return kernel

    return make


# -- binary arithmetic ------------------------------------------------------------------------

# Promotion (pullback.promotion) as PyTorch: COMMON casts the operands to their result type,
# FLOAT also turns integer results into the default dtype (true division, exp, sigmoid...).
ADD = declare(Op("add", _binary_kernel("add"), save_inputs=False, promotion=COMMON, doc="x + y"))
SUB = declare(Op("sub", _binary_kernel("subtract"), save_inputs=False, promotion=COMMON,
                 doc="x - y"))
MUL = declare(Op("mul", _binary_kernel("multiply"), promotion=COMMON, doc="x * y"))
DIV = declare(Op("div", _binary_kernel("true_divide"), save_output=True, promotion=FLOAT,
                 doc="x / y"))
def _pow_kernel(xp: Any) -> Any:
    power = _binary_kernel("power")(xp)

    def pow(x: Any, y: Any) -> Any:  # noqa: A001
        # PyTorch: a bool tensor to a Python bool stays bool; other bool ** bool is refused
        # (NumPy computes it in int8).
        if getattr(x, "dtype", None) is _BOOL and (y.__class__ is bool or getattr(
                y, "dtype", None) is _BOOL):
            if y.__class__ is bool:
                return x.copy() if y else xp.ones_like(x)
            raise UnsupportedDTypeError("pow: not implemented for bool operands")
        if x.__class__ is bool and getattr(y, "dtype", None) is _BOOL:
            raise UnsupportedDTypeError("pow: not implemented for bool operands")
        return power(x, y)

    return pow


_BOOL = np.dtype(bool)
POW = declare(Op("pow", _pow_kernel, save_output=True, promotion=COMMON, doc="x ** y"))
MAXIMUM = declare(Op("maximum", _binary_kernel("maximum"), promotion=COMMON,
                     doc="elementwise max"))
MINIMUM = declare(Op("minimum", _binary_kernel("minimum"), promotion=COMMON,
                     doc="elementwise min"))


@ADD.def_grad
def _add_grad(F: Any, g: Any, out: Any, x: Any, y: Any) -> tuple[Any, Any]:
    return g, g


@SUB.def_grad
def _sub_grad(F: Any, g: Any, out: Any, x: Any, y: Any, needs: Any) -> tuple[Any, Any]:
    return g, (F.neg(g) if needs[1] else None)  # ``x - 0.5`` needs no negated gradient


@MUL.def_grad
def _mul_grad(F: Any, g: Any, out: Any, x: Any, y: Any, needs: Any) -> tuple[Any, Any]:
    return (F.mul(g, y) if needs[0] else None), (F.mul(g, x) if needs[1] else None)


@DIV.def_grad
def _div_grad(F: Any, g: Any, out: Any, x: Any, y: Any, needs: Any) -> tuple[Any, Any]:
    gx = F.div(g, y) if needs[0] or needs[1] else None
    # d(x/y)/dy = -x/y^2 = -(g/y) * out; in create_graph mode ``out`` is graph-connected.
    gy = F.neg(F.mul(gx, out)) if needs[1] else None
    return (gx if needs[0] else None), gy


@POW.def_grad
def _pow_grad(F: Any, g: Any, out: Any, x: Any, y: Any, needs: Any) -> tuple[Any, Any]:
    gx = gy = None
    if needs[0]:
        # y * x**(y-1), written without dividing by x so that x = 0 works (PyTorch's formula).
        if isinstance(y, (int, float)):
            gx = g * 0.0 if y == 0 else g * (y * F.pow(x, y - 1))
        else:
            gx = F.where(F.equal(y, 0), 0.0, g * y * F.pow(x, y - 1))
    if needs[1]:
        # out * log(x); where x == 0 and y >= 0 the true derivative is 0, not nan.
        if isinstance(x, (int, float)):
            # A number base stays a number: ops on numbers alone would make tensors on the
            # default device, which a create_graph backward on another device cannot mix in.
            log_x = math.log(x) if x > 0 else (-math.inf if x == 0 else math.nan)
            gy = g * out * log_x
            if x == 0:
                gy = F.where(F.greater_equal(y, 0), 0.0, gy)
        else:
            # log(0) is -inf: with a negative exponent out * log(x) is -inf, as in PyTorch
            # (spelled without evaluating log(0), which NumPy warns about).
            zero = F.equal(x, 0)
            log_x = F.where(zero, -math.inf, F.log(F.where(zero, 1.0, x)))
            gy = F.where(F.logical_and(zero, F.greater_equal(y, 0)), 0.0, g * out * log_x)
    return gx, gy


@MAXIMUM.def_grad
def _maximum_grad(F: Any, g: Any, out: Any, x: Any, y: Any) -> tuple[Any, Any]:
    return _extremum_grad(F, g, F.less(x, y), F.greater(x, y), F.equal(x, y))


@MINIMUM.def_grad
def _minimum_grad(F: Any, g: Any, out: Any, x: Any, y: Any) -> tuple[Any, Any]:
    return _extremum_grad(F, g, F.greater(x, y), F.less(x, y), F.equal(x, y))


def _extremum_grad(F: Any, g: Any, x_loses: Any, y_loses: Any, tie: Any) -> tuple[Any, Any]:
    # PyTorch's rule: ties split the gradient evenly, and where a NaN makes every comparison
    # false both operands get it.
    half = g * 0.5
    gx = F.where(x_loses, 0.0, F.where(tie, half, g))
    gy = F.where(y_loses, 0.0, F.where(tie, half, g))
    return gx, gy


# -- unary math -------------------------------------------------------------------------------

# Ops that keep their input's dtype (neg, abs, square) and float-valued ones (FLOAT: integers
# become the default dtype).
NEG = declare(Op("neg", lambda xp: xp.negative, save_inputs=False, doc="-x"))
ABS = declare(Op("abs", lambda xp: xp.abs, doc="|x|"))
EXP = declare(Op("exp", lambda xp: xp.exp, save_inputs=False, save_output=True, promotion=FLOAT,
                 doc="e^x"))
LOG = declare(Op("log", lambda xp: xp.log, promotion=FLOAT, doc="natural log"))
LOG1P = declare(Op("log1p", lambda xp: xp.log1p, promotion=FLOAT, doc="log(1 + x)"))
EXPM1 = declare(Op("expm1", lambda xp: xp.expm1, save_inputs=False, save_output=True,
                   promotion=FLOAT, doc="e^x - 1"))
SQRT = declare(Op("sqrt", lambda xp: xp.sqrt, save_inputs=False, save_output=True,
                  promotion=FLOAT, doc="sqrt"))
RSQRT = declare(Op("rsqrt", lambda xp: lambda x: xp.reciprocal(xp.sqrt(x)), save_inputs=False,
                   save_output=True, promotion=FLOAT, doc="1/sqrt(x)"))
SQUARE = declare(Op("square", lambda xp: xp.square, doc="x^2"))
RECIPROCAL = declare(Op("reciprocal", lambda xp: xp.reciprocal, save_inputs=False,
                        save_output=True, promotion=FLOAT, doc="1/x"))
SIN = declare(Op("sin", lambda xp: xp.sin, promotion=FLOAT, doc="sine"))
COS = declare(Op("cos", lambda xp: xp.cos, promotion=FLOAT, doc="cosine"))
TANH = declare(Op("tanh", lambda xp: xp.tanh, save_inputs=False, save_output=True,
                  promotion=FLOAT, doc="tanh"))


def _erf_kernel(xp: Any) -> Any:
    erf = _special(xp).erf

    def kernel(x: Any) -> Any:
        # SciPy's erf has float32/float64 loops only: float16 and bfloat16 come back float64.
        out = erf(x)
        return out.astype(x.dtype, copy=False) if is_floating(x.dtype) else out

    return kernel


ERF = declare(Op("erf", _erf_kernel, promotion=FLOAT, doc="error function"))


def _special(xp: Any) -> Any:
    """The special-functions module matching an array namespace (SciPy's, or CuPy's)."""
    if xp.__name__ == "cupy":  # pragma: no cover - GPU only
        import cupyx.scipy.special as special
    else:
        import scipy.special as special
    return special


def _activation_phi(xp: Any) -> Any:
    """The normal CDF inside GELU, ``(1 + erf(x / sqrt 2)) / 2``: on float32 NumPy arrays
    ``_erf32.phi32`` (a fitted erf, six times faster than SciPy's); the public ``erf`` op keeps
    SciPy's exact one."""
    erf = _special(xp).erf

    def phi(x: Any) -> Any:
        return 0.5 * (1.0 + erf(x * _INV_SQRT_2))

    if xp.__name__ == "cupy":  # pragma: no cover - GPU only
        return phi
    return lambda x: phi32(x) if x.dtype == xp.float32 else phi(x)


NEG.def_grad(lambda F, g, out, x: (F.neg(g),))
ABS.def_grad(lambda F, g, out, x: (g * F.sign(x),))
EXP.def_grad(lambda F, g, out, x: (F.mul(g, out),))
LOG.def_grad(lambda F, g, out, x: (F.div(g, x),))
LOG1P.def_grad(lambda F, g, out, x: (g / (x + 1.0),))
EXPM1.def_grad(lambda F, g, out, x: (g * (out + 1.0),))
SQRT.def_grad(lambda F, g, out, x: (F.div(F.mul(g, 0.5), out),))
RSQRT.def_grad(lambda F, g, out, x: (g * -0.5 * out * out * out,))
SQUARE.def_grad(lambda F, g, out, x: (g * 2.0 * x,))
RECIPROCAL.def_grad(lambda F, g, out, x: (-g * out * out,))
SIN.def_grad(lambda F, g, out, x: (g * F.cos(x),))
COS.def_grad(lambda F, g, out, x: (-g * F.sin(x),))
TANH.def_grad(lambda F, g, out, x: (F.tanh_backward(g, out),))
ERF.def_grad(lambda F, g, out, x: (g * (2.0 / math.sqrt(math.pi)) * F.exp(-(x * x)),))


# -- activations ------------------------------------------------------------------------------

def _sigmoid_kernel(xp: Any) -> Any:
    def sigmoid(x: Any) -> Any:
        # Split by sign so that exp never overflows: for x < 0, e^x / (1 + e^x).
        e = xp.exp(-xp.abs(x))
        return xp.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(x.dtype, copy=False)

    return sigmoid


def _relu_kernel(xp: Any) -> Any:
    return lambda x: xp.maximum(x, 0).astype(x.dtype, copy=False)


def _leaky_relu_kernel(xp: Any) -> Any:
    return lambda x, negative_slope=0.01: xp.where(x > 0, x, x * negative_slope).astype(
        x.dtype, copy=False
    )


def _softplus_kernel(xp: Any) -> Any:
    def softplus(x: Any, beta: float = 1.0, threshold: float = 20.0) -> Any:
        bx = x * beta
        # log(1 + e^bx) / beta, computed as max(bx, 0) + log1p(e^-|bx|); linear above threshold.
        soft = (xp.maximum(bx, 0) + xp.log1p(xp.exp(-xp.abs(bx)))) / beta
        return xp.where(bx > threshold, x, soft).astype(x.dtype, copy=False)

    return softplus


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _gelu_kernel(xp: Any) -> Any:
    phi = _activation_phi(xp)

    def gelu(x: Any, approximate: str = "none") -> Any:
        if approximate == "tanh":
            inner = _SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
            return (0.5 * x * (1.0 + xp.tanh(inner))).astype(x.dtype, copy=False)
        return (x * phi(x)).astype(x.dtype, copy=False)

    return gelu


# Activations other than relu are float-valued (PyTorch refuses integers for most of them;
# pullback computes them in the default dtype, as it does exp).
SIGMOID = declare(Op("sigmoid", _sigmoid_kernel, save_inputs=False, save_output=True,
                     promotion=FLOAT, doc="1 / (1 + e^-x)"))
RELU = declare(Op("relu", _relu_kernel, save_inputs=False, save_output=True, doc="max(x, 0)"))
LEAKY_RELU = declare(Op("leaky_relu", _leaky_relu_kernel, promotion=FLOAT,
                        doc="x if x > 0 else slope * x"))
SOFTPLUS = declare(Op("softplus", _softplus_kernel, promotion=FLOAT,
                      doc="log(1 + e^(beta x)) / beta"))
GELU = declare(Op("gelu", _gelu_kernel, promotion=FLOAT,
                  doc="x * Phi(x) (exact or tanh approximation)"))


def _silu_kernel(xp: Any) -> Any:
    sigmoid = _sigmoid_kernel(xp)
    return lambda x: x * sigmoid(x)


SILU = declare(Op("silu", _silu_kernel, promotion=FLOAT, doc="x * sigmoid(x)"))

SIGMOID.def_grad(lambda F, g, out, x: (F.sigmoid_backward(g, out),))


# The derivatives of tanh and sigmoid, from their outputs, as single ops: a first-order backward
# is then one cache-blocked pass instead of three full passes over the activations; their own
# rules keep higher orders exact.
TANH_BACKWARD = declare(Op("tanh_backward", lambda xp: lambda g, y: g * (1 - y * y),
                           doc="g * (1 - y^2) (tanh's gradient from its output y)"))
SIGMOID_BACKWARD = declare(Op("sigmoid_backward", lambda xp: lambda g, y: g * y * (1 - y),
                              doc="g * y * (1 - y) (sigmoid's gradient from its output y)"))


@TANH_BACKWARD.def_grad
def _tanh_backward_grad(F: Any, gg: Any, out: Any, g: Any, y: Any, needs: Any) -> Any:
    return (F.tanh_backward(gg, y) if needs[0] else None,
            F.mul(F.mul(gg, g), F.mul(y, -2.0)) if needs[1] else None)


@SIGMOID_BACKWARD.def_grad
def _sigmoid_backward_grad(F: Any, gg: Any, out: Any, g: Any, y: Any, needs: Any) -> Any:
    return (F.sigmoid_backward(gg, y) if needs[0] else None,
            F.mul(F.mul(gg, g), F.sub(1.0, F.mul(y, 2.0))) if needs[1] else None)


# ReLU's gradient as one op: where(y > 0, g, 0) over a mask that is half true at random runs
# np.where's per-element branches at 5 ns an element; the CPU backend's C kernel is a blend.
RELU_BACKWARD = declare(Op("relu_backward",
                           lambda xp: lambda g, y: xp.where(y > 0, g, xp.zeros((), g.dtype)),
                           doc="g where y > 0, else 0 (ReLU's gradient from its output y)"))
RELU.def_grad(lambda F, g, out, x: (F.relu_backward(g, out),))
# y only says where the gradient passes: piecewise constant, no gradient of its own.
RELU_BACKWARD.def_grad(lambda F, gg, out, g, y: (F.relu_backward(gg, y), None))


@LEAKY_RELU.def_grad
def _leaky_relu_grad(F: Any, g: Any, out: Any, x: Any, negative_slope: float = 0.01) -> Any:
    return (F.where(F.greater(x, 0), g, g * negative_slope),)


@SOFTPLUS.def_grad
def _softplus_grad(F: Any, g: Any, out: Any, x: Any, beta: float = 1.0,
                   threshold: float = 20.0) -> Any:
    return (F.where(F.greater(x * beta, threshold), g, g * F.sigmoid(x * beta)),)


@GELU.def_grad
def _gelu_grad(F: Any, g: Any, out: Any, x: Any, approximate: str = "none") -> Any:
    return (F.gelu_backward(g, x, approximate=approximate),)


def _gelu_backward_kernel(xp: Any) -> Any:
    phi = _activation_phi(xp)

    def gelu_backward(g: Any, x: Any, approximate: str = "none") -> Any:
        if approximate == "tanh":
            x2 = x * x
            t = xp.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x2 * x))
            d_inner = _SQRT_2_OVER_PI * (1.0 + 3 * 0.044715 * x2)
            slope = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * d_inner
        else:
            slope = phi(x) + x * (_INV_SQRT_2PI * xp.exp(-0.5 * x * x))
        return (g * slope).astype(g.dtype, copy=False)

    return gelu_backward


# GELU's derivative as one op: one cache-blocked pass in a first-order backward instead of nine
# full passes over the activations (GELU is the largest elementwise cost of a GPT step).
GELU_BACKWARD = declare(Op("gelu_backward", _gelu_backward_kernel,
                           doc="g * gelu'(x) (GELU's gradient)"))


@GELU_BACKWARD.def_grad
def _gelu_backward_grad(F: Any, gg: Any, out: Any, g: Any, x: Any, needs: Any,
                        approximate: str = "none") -> Any:
    dg = F.gelu_backward(gg, x, approximate=approximate) if needs[0] else None
    dx = None
    if needs[1]:
        if approximate == "tanh":
            # slope = 0.5 (1 + t) + 0.5 x s d, with t = tanh(c (x + a x^3)), s = 1 - t^2,
            # d = c (1 + 3 a x^2): slope' = s d - x t s d^2 + 3 c a x^2 s.
            t = F.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x))
            s = 1.0 - t * t
            d = _SQRT_2_OVER_PI * (1.0 + 3 * 0.044715 * x * x)
            curvature = s * d - x * t * s * d * d + (3 * _SQRT_2_OVER_PI * 0.044715) * x * x * s
        else:
            # gelu = x Phi(x): gelu'' = 2 phi(x) - x^2 phi(x).
            curvature = _INV_SQRT_2PI * F.exp(-0.5 * x * x) * (2.0 - x * x)
        dx = gg * g * curvature
    return dg, dx


@SILU.def_grad
def _silu_grad(F: Any, g: Any, out: Any, x: Any) -> Any:
    s = F.sigmoid(x)
    return (g * s * (1.0 + x * (1.0 - s)),)


# -- clamp and selection ----------------------------------------------------------------------

def _clip_kernel(xp: Any) -> Any:
    def clip(x: Any, min: float | None = None, max: float | None = None) -> Any:  # noqa: A002
        if min is None and max is None:
            raise ValueError("clamp: at least one of min and max must be given")
        return xp.clip(x, min, max).astype(x.dtype, copy=False)

    return clip


CLAMP = declare(Op("clamp", _clip_kernel, doc="clip x to [min, max]"))


@CLAMP.def_grad
def _clamp_grad(F: Any, g: Any, out: Any, x: Any, min: Any = None, max: Any = None) -> Any:  # noqa: A002
    inside = None
    if min is not None:
        inside = F.greater_equal(x, min)
    if max is not None:
        upper = F.less_equal(x, max)
        inside = upper if inside is None else F.logical_and(inside, upper)
    return (F.where(inside, g, 0.0),)


def _where_kernel(xp: Any) -> Any:
    def where(cond: Any, x: Any, y: Any) -> Any:
        if getattr(cond, "dtype", None) is not None and cond.dtype.kind != "b":
            raise TypeError(f"where: condition must be bool, got {cond.dtype}")
        return xp.where(cond, _weak(x, y), _weak(y, x))

    return where


WHERE = declare(Op("where", _where_kernel, promotion=Promotion("common", args=(1, 2)),
                   doc="cond ? x : y"))


@WHERE.def_grad
def _where_grad(F: Any, g: Any, out: Any, cond: Any, x: Any, y: Any, needs: Any) -> Any:
    return (
        None,
        F.where(cond, g, 0.0) if needs[1] else None,
        F.where(cond, 0.0, g) if needs[2] else None,
    )


# -- dtype cast -------------------------------------------------------------------------------

CAST = declare(Op("cast", lambda xp: lambda x, dtype: x.astype(dtype), save_inputs=False,
                  doc="convert to dtype"))


@CAST.def_grad
def _cast_grad(F: Any, g: Any, out: Any, x: Any, dtype: Any) -> Any:
    return (F.cast(g, dtype=x.dtype),)


# -- ops without gradient ---------------------------------------------------------------------

def _no_grad_op(name: str, make: Any, doc: str) -> Op:
    return declare(Op(name, make, differentiable=False, doc=doc))


# Comparisons compare in the operands' result type (a float32 tensor against a float64 0-d
# tensor compares in float32, as in PyTorch).
def _comparison(name: str, ufunc: str, doc: str) -> Op:
    return declare(Op(name, _binary_kernel(ufunc), differentiable=False, promotion=COMMON,
                      doc=doc))


EQUAL = _comparison("equal", "equal", "x == y")
NOT_EQUAL = _comparison("not_equal", "not_equal", "x != y")
LESS = _comparison("less", "less", "x < y")
LESS_EQUAL = _comparison("less_equal", "less_equal", "x <= y")
GREATER = _comparison("greater", "greater", "x > y")
GREATER_EQUAL = _comparison("greater_equal", "greater_equal", "x >= y")
LOGICAL_AND = _no_grad_op("logical_and", lambda xp: xp.logical_and, "x and y")
LOGICAL_OR = _no_grad_op("logical_or", lambda xp: xp.logical_or, "x or y")
LOGICAL_XOR = _no_grad_op("logical_xor", lambda xp: xp.logical_xor, "x xor y")
LOGICAL_NOT = _no_grad_op("logical_not", lambda xp: xp.logical_not, "not x")
ISNAN = _no_grad_op("isnan", lambda xp: xp.isnan, "x is NaN")
ISINF = _no_grad_op("isinf", lambda xp: xp.isinf, "x is +-Inf")
ISFINITE = _no_grad_op("isfinite", lambda xp: xp.isfinite, "x is finite")


# -- public functions -------------------------------------------------------------------------

def add(x: Any, y: Any, *, alpha: float = 1) -> Any:
    """``x + alpha * y`` with broadcasting."""
    return apply(ADD, x, y if alpha == 1 else apply(MUL, y, alpha))


def sub(x: Any, y: Any, *, alpha: float = 1) -> Any:
    """``x - alpha * y`` with broadcasting."""
    return apply(SUB, x, y if alpha == 1 else apply(MUL, y, alpha))


def mul(x: Any, y: Any) -> Any:
    """``x * y`` with broadcasting."""
    return apply(MUL, x, y)


def pow(x: Any, y: Any) -> Any:  # noqa: A001
    """``x ** y``; either may be a Tensor or a Python number."""
    return apply(POW, x, y)


def clamp(x: Any, min: Any = None, max: Any = None) -> Any:  # noqa: A002
    """Clip to ``[min, max]``; bounds may be numbers or Tensors (broadcast against ``x``).

    As in PyTorch, where ``x`` sits exactly on a bound the gradient goes to ``x``, and where
    ``min > max`` the result is ``max``.
    """
    from ..dtypes import result_type
    from ..tensor import Tensor

    if min is None and max is None:
        raise ArgumentError("clamp: at least one of min and max must be given")
    # As PyTorch, x and its bounds promote together: clamp(int_tensor, min=2.5) is float32.
    dtype = result_type(x, *(b for b in (min, max) if b is not None))
    if dtype != x.dtype:
        x = apply(CAST, x, dtype=dtype)
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        # where(), not maximum/minimum: those split the gradient with the bound on ties.
        out = x
        if min is not None:
            out = apply(WHERE, apply(LESS, out, min), min, out)
        if max is not None:
            out = apply(WHERE, apply(GREATER, out, max), max, out)
        return out
    return apply(CLAMP, x, min=min, max=max)


clip = clamp


def where(cond: Any, x: Any, y: Any) -> Any:
    """``x`` where ``cond`` is true, else ``y`` (broadcast together)."""
    return apply(WHERE, cond, x, y)


def leaky_relu(x: Any, negative_slope: float = 0.01) -> Any:
    """``x`` for positive inputs, ``negative_slope * x`` otherwise."""
    return apply(LEAKY_RELU, x, negative_slope=negative_slope)


def gelu(x: Any, approximate: str = "none") -> Any:
    """Gaussian error linear unit; ``approximate="tanh"`` for the GPT-2 approximation."""
    if approximate not in ("none", "tanh"):
        raise ArgumentError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return apply(GELU, x, approximate=approximate)


def softplus(x: Any, beta: float = 1.0, threshold: float = 20.0) -> Any:
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``."""
    return apply(SOFTPLUS, x, beta=beta, threshold=threshold)


neg, abs, exp, log, log1p, expm1 = map(_unary, (NEG, ABS, EXP, LOG, LOG1P, EXPM1))  # noqa: A001
sqrt, rsqrt, square, reciprocal = map(_unary, (SQRT, RSQRT, SQUARE, RECIPROCAL))
sin, cos, tanh, erf, sigmoid, relu, silu = map(_unary, (SIN, COS, TANH, ERF, SIGMOID, RELU, SILU))
logical_not, isnan, isinf, isfinite = map(_unary, (LOGICAL_NOT, ISNAN, ISINF, ISFINITE))
maximum, minimum = map(_binary, (MAXIMUM, MINIMUM))
eq, ne, lt, le, gt, ge = map(
    _binary, (EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL)
)
logical_and, logical_or, logical_xor = map(_binary, (LOGICAL_AND, LOGICAL_OR, LOGICAL_XOR))
