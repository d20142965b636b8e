"""The ``"onnx"`` rules of elementwise ops: one ONNX operator where one has the op's semantics,
else the op's formula in ONNX operators (``gelu`` through ``Erf``, ``softplus`` as pullback's
kernel computes it, ``expm1``...).

Operands follow NumPy's rules as the op's kernel does: a Python number takes the dtype of the
array it meets (NEP 50), and arrays of different dtypes are cast to the output's (arithmetic)
or to their common type (comparisons), since ONNX operators take one type.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .._ir import Node, Value
from .builder import OnnxBuilder

OnnxRule = Callable[[Node, OnnxBuilder], None]

UNARY = {"relu": "Relu", "tanh": "Tanh", "sigmoid": "Sigmoid", "exp": "Exp", "log": "Log",
         "sqrt": "Sqrt", "abs": "Abs", "neg": "Neg", "erf": "Erf", "floor": "Floor",
         "ceil": "Ceil", "sin": "Sin", "cos": "Cos", "tan": "Tan", "asin": "Asin",
         "acos": "Acos", "atan": "Atan", "sinh": "Sinh", "cosh": "Cosh", "asinh": "Asinh",
         "acosh": "Acosh", "atanh": "Atanh", "sign": "Sign", "reciprocal": "Reciprocal",
         "logical_not": "Not", "copy": "Identity"}
BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow",
          "maximum": "Max", "minimum": "Min"}
COMPARE = {"greater": "Greater", "greater_equal": "GreaterOrEqual", "less": "Less",
           "less_equal": "LessOrEqual", "equal": "Equal"}
LOGICAL = {"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"}


def _x(node: Node, b: OnnxBuilder) -> str:
    return b.operand(node.inputs[0], node.output.dtype)


def _unary(op_type: str) -> OnnxRule:
    def rule(node: Node, b: OnnxBuilder) -> None:
        b.emit(op_type, [_x(node, b)], [b.output(node.output)])
    return rule


def _binary(op_type: str) -> OnnxRule:
    def rule(node: Node, b: OnnxBuilder) -> None:
        dtype = node.output.dtype
        b.emit(op_type, [b.operand(a, dtype) for a in node.inputs[:2]], [b.output(node.output)])
    return rule


def _common_dtype(args: tuple[Any, ...]) -> np.dtype:
    arrays = [a.dtype for a in args if isinstance(a, Value)]
    return np.result_type(*arrays) if arrays else np.dtype(np.float64)


def _compare(op_type: str) -> OnnxRule:
    def rule(node: Node, b: OnnxBuilder) -> None:
        dtype = _common_dtype(node.inputs[:2])
        b.emit(op_type, [b.operand(a, dtype) for a in node.inputs[:2]], [b.output(node.output)])
    return rule


def _not_equal(node: Node, b: OnnxBuilder) -> None:
    dtype = _common_dtype(node.inputs[:2])
    equal = b.emit("Equal", [b.operand(a, dtype) for a in node.inputs[:2]])
    b.emit("Not", [equal], [b.output(node.output)])


def _logical(op_type: str) -> OnnxRule:
    def rule(node: Node, b: OnnxBuilder) -> None:
        b.emit(op_type, [b.operand(a, np.bool_) for a in node.inputs[:2]],
               [b.output(node.output)])
    return rule


def _where(node: Node, b: OnnxBuilder) -> None:
    cond, x, y = node.inputs[:3]
    dtype = node.output.dtype
    b.emit("Where", [b.operand(cond, np.bool_), b.operand(x, dtype), b.operand(y, dtype)],
           [b.output(node.output)])


def _gelu(node: Node, b: OnnxBuilder) -> None:
    """``x/2 (1 + erf(x/sqrt 2))``, or the tanh form when ``approximate='tanh'``."""
    dtype = node.output.dtype
    x = _x(node, b)
    one, half = b.scalar(1.0, dtype), b.scalar(0.5, dtype)
    if node.attrs.get("approximate", "none") == "tanh":
        cube = b.emit("Mul", [b.emit("Mul", [x, x]), x])
        inner = b.emit("Add", [x, b.emit("Mul", [cube, b.scalar(0.044715, dtype)])])
        t = b.emit("Tanh", [b.emit("Mul", [inner, b.scalar(math.sqrt(2.0 / math.pi), dtype)])])
    else:
        t = b.emit("Erf", [b.emit("Mul", [x, b.scalar(1.0 / math.sqrt(2.0), dtype)])])
    b.emit("Mul", [b.emit("Mul", [x, half]), b.emit("Add", [t, one])], [b.output(node.output)])


def _silu(node: Node, b: OnnxBuilder) -> None:
    x = _x(node, b)
    b.emit("Mul", [x, b.emit("Sigmoid", [x])], [b.output(node.output)])


def _softplus(node: Node, b: OnnxBuilder) -> None:
    """As pullback's kernel: ``(max(bx, 0) + log(1 + exp(-|bx|))) / beta``, and ``x`` where
    ``bx`` passes the threshold (ONNX's Softplus has neither beta nor the threshold)."""
    dtype = node.output.dtype
    beta, threshold = float(node.attrs.get("beta", 1.0)), float(node.attrs.get("threshold", 20))
    x = _x(node, b)
    bx = x if beta == 1.0 else b.emit("Mul", [x, b.scalar(beta, dtype)])
    tail = b.emit("Exp", [b.emit("Neg", [b.emit("Abs", [bx])])])
    soft = b.emit("Add", [b.emit("Relu", [bx]),
                          b.emit("Log", [b.emit("Add", [tail, b.scalar(1.0, dtype)])])])
    if beta != 1.0:
        soft = b.emit("Div", [soft, b.scalar(beta, dtype)])
    if math.isinf(threshold) and threshold > 0:
        b.emit("Identity", [soft], [b.output(node.output)])
        return
    above = b.emit("Greater", [bx, b.scalar(threshold, dtype)])
    b.emit("Where", [above, x, soft], [b.output(node.output)])


def _leaky_relu(node: Node, b: OnnxBuilder) -> None:
    b.emit("LeakyRelu", [_x(node, b)], [b.output(node.output)],
           alpha=float(node.attrs.get("negative_slope", 0.01)))


def _clamp(node: Node, b: OnnxBuilder) -> None:
    dtype = node.output.dtype
    bounds = [node.attrs.get("min"), node.attrs.get("max")]
    names = ["" if v is None else b.operand(v, dtype) for v in bounds]
    while names and names[-1] == "":
        names.pop()
    b.emit("Clip", [_x(node, b), *names], [b.output(node.output)])


def _shifted(op_type: str, shift: float, before: bool) -> OnnxRule:
    """``op(x) + shift`` (``before``: ``op(x + shift)``): expm1 and log1p."""
    def rule(node: Node, b: OnnxBuilder) -> None:
        dtype = node.output.dtype
        x, s = _x(node, b), b.scalar(shift, dtype)
        if before:
            b.emit(op_type, [b.emit("Add", [x, s])], [b.output(node.output)])
        else:
            b.emit("Add", [b.emit(op_type, [x]), s], [b.output(node.output)])
    return rule


def _scaled_log(base: float) -> OnnxRule:
    def rule(node: Node, b: OnnxBuilder) -> None:
        dtype = node.output.dtype
        b.emit("Div", [b.emit("Log", [_x(node, b)]), b.scalar(math.log(base), dtype)],
               [b.output(node.output)])
    return rule


def _rsqrt(node: Node, b: OnnxBuilder) -> None:
    b.emit("Reciprocal", [b.emit("Sqrt", [_x(node, b)])], [b.output(node.output)])


def _square(node: Node, b: OnnxBuilder) -> None:
    x = _x(node, b)
    b.emit("Mul", [x, x], [b.output(node.output)])


def _round(node: Node, b: OnnxBuilder) -> None:
    if node.attrs.get("decimals", 0):
        raise b.fail("round with decimals has no ONNX form here")
    b.emit("Round", [_x(node, b)], [b.output(node.output)])  # half to even, as NumPy


def _test(op_type: str) -> OnnxRule:
    """IsNaN and IsInf: they read the input as it is (their output is boolean)."""
    def rule(node: Node, b: OnnxBuilder) -> None:
        b.emit(op_type, [b.name(node.inputs[0])], [b.output(node.output)])
    return rule


def _isfinite(node: Node, b: OnnxBuilder) -> None:
    x = b.name(node.inputs[0])
    bad = b.emit("Or", [b.emit("IsInf", [x]), b.emit("IsNaN", [x])])
    b.emit("Not", [bad], [b.output(node.output)])


def _cast(node: Node, b: OnnxBuilder) -> None:
    b.emit("Cast", [b.name(node.inputs[0])], [b.output(node.output)],
           to=b.onnx_type(node.output.dtype))


ELEMENTWISE_RULES: dict[str, OnnxRule] = {
    **{op: _unary(t) for op, t in UNARY.items()},
    **{op: _binary(t) for op, t in BINARY.items()},
    **{op: _compare(t) for op, t in COMPARE.items()},
    **{op: _logical(t) for op, t in LOGICAL.items()},
    "not_equal": _not_equal, "where": _where, "gelu": _gelu, "silu": _silu,
    "softplus": _softplus, "leaky_relu": _leaky_relu, "clamp": _clamp,
    "expm1": _shifted("Exp", -1.0, before=False), "log1p": _shifted("Log", 1.0, before=True),
    "log2": _scaled_log(2.0), "log10": _scaled_log(10.0), "rsqrt": _rsqrt, "square": _square,
    "round": _round, "isnan": _test("IsNaN"), "isinf": _test("IsInf"), "isfinite": _isfinite, "cast": _cast,
}
