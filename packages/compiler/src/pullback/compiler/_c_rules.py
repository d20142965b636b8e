"""C expressions of elementwise ops: the ``"c_scalar"`` rule of each op, registered through the
plugin hook ``register_rules`` (the C99 exporter reads the same rules).

A rule is called as ``rule(args, ctype, **attrs)``: ``args`` are C expressions of the inputs,
already of the computation type ``ctype`` (``"float"`` or ``"double"``; boolean inputs are
``unsigned char`` 0/1), and it returns the C expression of one element of the output, or
``None`` when it cannot express these attributes (the op then stays a NumPy call).

The expressions follow NumPy's results: IEEE arithmetic is exact in C as in NumPy (the kernels
are built without fast-math and without FMA contraction, ``-std=c99``), ``maximum``/``minimum``
propagate NaN as NumPy does. Float32 ``exp``, ``tanh``, ``sigmoid`` and GELU use the
vectorizable functions of ``pullback_math.h`` and ``_csrc/fused_math.h`` (within 3 ulp of
NumPy's; GELU is the formula pullback's own kernels use); the other transcendental functions,
and every float64 one, are the C library's (within an ulp of NumPy's).
"""

from __future__ import annotations

import math

import numpy as np
from typing import Any, Callable

CScalarRule = Callable[..., "str | None"]


def _f(name: str, ctype: str) -> str:
    """The C library function for the type: ``expf`` for float, ``exp`` for double."""
    return name + "f" if ctype == "float" else name


def c_literal(value: float, ctype: str) -> str:
    """A C literal of ``value`` in ``ctype`` (infinities and NaN through math.h's macros)."""
    value = float(value)
    if math.isnan(value):
        return f"(({ctype})NAN)"
    if math.isinf(value):
        return f"(({ctype}){'-' if value < 0 else ''}INFINITY)"
    text = repr(value)
    return f"{text}f" if ctype == "float" else text


_lit = c_literal


def _binary(symbol: str) -> CScalarRule:
    return lambda args, ctype, **_: f"({args[0]} {symbol} {args[1]})"


def _unary_call(name: str) -> CScalarRule:
    return lambda args, ctype, **_: f"{_f(name, ctype)}({args[0]})"


def _exp(x: str, ctype: str) -> str:
    """exp: pullback_math.h's vectorizable exp32 for float32 (within 2 ulp), libm's for double."""
    return f"pb_exp32({x})" if ctype == "float" else f"exp({x})"


def _tanh(x: str, ctype: str) -> str:
    return f"pbc_tanh32({x})" if ctype == "float" else f"tanh({x})"


def _compare(symbol: str) -> CScalarRule:
    return lambda args, ctype, **_: f"(unsigned char)({args[0]} {symbol} {args[1]})"


def _maximum(args: list[str], ctype: str, **_: Any) -> str:
    a, b = args
    # NumPy: NaN if either is NaN (the first one), else the larger
    return f"(({a} >= {b} || {a} != {a}) ? {a} : {b})"


def _minimum(args: list[str], ctype: str, **_: Any) -> str:
    a, b = args
    return f"(({a} <= {b} || {a} != {a}) ? {a} : {b})"


def _relu(args: list[str], ctype: str, **_: Any) -> str:
    return _maximum([args[0], _lit(0.0, ctype)], ctype)


def _sigmoid(args: list[str], ctype: str, **_: Any) -> str:
    (x,) = args
    # split by sign as pullback's kernel does: exp never overflows
    e = _exp(f"-{_f('fabs', ctype)}({x})", ctype)
    one = _lit(1.0, ctype)
    return f"(({x}) >= 0 ? {one} / ({one} + {e}) : {e} / ({one} + {e}))"


def _gelu(args: list[str], ctype: str, approximate: str = "none", **_: Any) -> str | None:
    (x,) = args
    if approximate == "tanh":
        c = _lit(math.sqrt(2.0 / math.pi), ctype)
        inner = f"{c} * ({x} + {_lit(0.044715, ctype)} * {x} * {x} * {x})"
        return f"({_lit(0.5, ctype)} * {x} * ({_lit(1.0, ctype)} + {_tanh(inner, ctype)}))"
    if ctype == "float":
        return f"({x} * pb_phi32({x}))"
    return f"({x} * (0.5 * (1.0 + erf({x} * {1.0 / math.sqrt(2.0)!r}))))"


def _gelu_slope(args: list[str], ctype: str, approximate: str = "none",
                **_: Any) -> str | None:
    """gelu'(x) = Phi(x) + x phi(x), the expression pullback's own gelu_backward kernel
    multiplies the gradient by (so ``g * slope`` gives its bits)."""
    (x,) = args
    if approximate != "none":
        return None
    if ctype == "float":
        return f"(pb_phi32({x}) + {x} * (0.39894228040143268f * pb_exp32(-0.5f * {x} * {x})))"
    return (f"(0.5 * (1.0 + erf({x} * {1.0 / math.sqrt(2.0)!r})) + {x} * "
            f"({1.0 / math.sqrt(2.0 * math.pi)!r} * exp(-0.5 * {x} * {x})))")


def _gelu_backward(args: list[str], ctype: str, approximate: str = "none",
                   **_: Any) -> str | None:
    g, x = args
    slope = _gelu_slope([x], ctype, approximate)
    return None if slope is None else f"({g} * {slope})"


def _silu(args: list[str], ctype: str, **_: Any) -> str:
    return f"({args[0]} * {_sigmoid(args, ctype)})"


def _softplus(args: list[str], ctype: str, beta: float = 1.0, threshold: float = 20.0,
              **_: Any) -> str:
    """As pullback's kernel: ``max(bx, 0) + log1p(exp(-|bx|))`` over beta, x above the
    threshold (``bx = x * beta``)."""
    (x,) = args
    bx = f"({x} * {_lit(beta, ctype)})"
    tail = _exp(f"-{_f('fabs', ctype)}({bx})", ctype)
    soft = (f"(({_maximum([bx, _lit(0.0, ctype)], ctype)} + {_f('log1p', ctype)}({tail})) / "
            f"{_lit(beta, ctype)})")
    return f"({bx} > {_lit(threshold, ctype)} ? {x} : {soft})"


def _sign(args: list[str], ctype: str, **_: Any) -> str:
    """NumPy's: 1, -1, NaN for NaN, and +0.0 for either zero."""
    (x,) = args
    one, zero = _lit(1.0, ctype), _lit(0.0, ctype)
    return f"({x} > 0 ? {one} : ({x} < 0 ? -{one} : ({x} != {x} ? {x} : {zero})))"


def _pow(args: list[str], ctype: str, **_: Any) -> str:
    return f"{_f('pow', ctype)}({args[0]}, {args[1]})"


def _round(args: list[str], ctype: str, decimals: int = 0, **_: Any) -> str | None:
    # NumPy rounds half to even: rint in C's default rounding mode
    return f"{_f('rint', ctype)}({args[0]})" if decimals == 0 else None


def _logical(symbol: str) -> CScalarRule:
    return lambda args, ctype, **_: (f"(unsigned char)(({args[0]} != 0) {symbol} "
                                     f"({args[1]} != 0))")


def _clamp(args: list[str], ctype: str, min: Any = None, max: Any = None,  # noqa: A002
           **_: Any) -> str | None:
    (x,) = args
    out = x
    # NumPy's clip: max(min(x, hi), lo) with NaN kept
    if max is not None:
        out = _minimum([out, _lit(max, ctype)], ctype)
    if min is not None:
        out = _maximum([out, _lit(min, ctype)], ctype)
    return out


def _leaky_relu(args: list[str], ctype: str, negative_slope: float = 0.01, **_: Any) -> str:
    (x,) = args
    return f"(({x}) > 0 ? ({x}) : ({x}) * {_lit(negative_slope, ctype)})"


def _cast(args: list[str], ctype: str, dtype: Any = None, **_: Any) -> str | None:
    """Between float32, float64 and bool: C's conversions round as NumPy's astype does (to
    nearest), and a float is true where it is not 0 (NaN included)."""
    target = np.dtype(dtype)
    if target.kind == "b":
        return f"(unsigned char)({args[0]} != 0)"
    if target.kind == "f":
        return f"(({ctype})({args[0]}))"
    return None


C_SCALAR_RULES: dict[str, CScalarRule] = {
    "cast": _cast,
    "add": _binary("+"),
    "sub": _binary("-"),
    "mul": _binary("*"),
    "div": _binary("/"),
    "neg": lambda args, ctype, **_: f"(-{args[0]})",
    "abs": _unary_call("fabs"),
    "exp": lambda args, ctype, **_: _exp(args[0], ctype),
    "log": _unary_call("log"),
    "log1p": _unary_call("log1p"),
    "expm1": _unary_call("expm1"),
    "sqrt": _unary_call("sqrt"),
    "rsqrt": lambda args, ctype, **_: f"({_lit(1.0, ctype)} / {_f('sqrt', ctype)}({args[0]}))",
    "square": lambda args, ctype, **_: f"({args[0]} * {args[0]})",
    "reciprocal": lambda args, ctype, **_: f"({_lit(1.0, ctype)} / {args[0]})",
    "sin": _unary_call("sin"),
    "cos": _unary_call("cos"),
    "tanh": lambda args, ctype, **_: _tanh(args[0], ctype),
    "sigmoid": _sigmoid,
    "relu": _relu,
    "leaky_relu": _leaky_relu,
    "gelu": _gelu,
    "gelu_backward": _gelu_backward,
    "compiler.gelu_slope": _gelu_slope,
    "tanh_backward": lambda args, ctype, **_: (
        f"({args[0]} * ({_lit(1.0, ctype)} - {args[1]} * {args[1]}))"),
    "sigmoid_backward": lambda args, ctype, **_: (
        f"({args[0]} * {args[1]} * ({_lit(1.0, ctype)} - {args[1]}))"),
    "relu_backward": lambda args, ctype, **_: f"(({args[1]}) > 0 ? ({args[0]}) : "
                                             f"{_lit(0.0, ctype)})",
    "maximum": _maximum,
    "minimum": _minimum,
    "clamp": _clamp,
    "silu": _silu,
    "softplus": _softplus,
    "erf": lambda args, ctype, **_: (f"pb_erf32({args[0]})" if ctype == "float"
                                     else f"erf({args[0]})"),
    "pow": _pow,
    "sign": _sign,
    "floor": _unary_call("floor"),
    "ceil": _unary_call("ceil"),
    "trunc": _unary_call("trunc"),
    "round": _round,
    "where": lambda args, ctype, **_: f"({args[0]} ? {args[1]} : {args[2]})",
    "logical_and": _logical("&&"),
    "logical_or": _logical("||"),
    "logical_xor": _logical("!="),
    "logical_not": lambda args, ctype, **_: f"(unsigned char)({args[0]} == 0)",
    "isnan": lambda args, ctype, **_: f"(unsigned char)({args[0]} != {args[0]})",
    "isinf": lambda args, ctype, **_: f"(unsigned char)(isinf({args[0]}) != 0)",
    "isfinite": lambda args, ctype, **_: f"(unsigned char)(isfinite({args[0]}) != 0)",
    "greater": _compare(">"),
    "greater_equal": _compare(">="),
    "less": _compare("<"),
    "less_equal": _compare("<="),
    "equal": _compare("=="),
    "not_equal": _compare("!="),
}

# ops whose output is boolean (the others compute in the float type of their inputs)
BOOLEAN_OUTPUT = frozenset({"greater", "greater_equal", "less", "less_equal", "equal",
                            "not_equal", "logical_and", "logical_or", "logical_xor",
                            "logical_not", "isnan", "isinf", "isfinite"})
