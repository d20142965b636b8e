"""Elementwise operators: arithmetic, math functions, activations, comparisons, logic, bitwise
operations and casts. ONNX's binary operators take inputs of one type and broadcast as NumPy;
the result keeps that type (``Pow`` keeps its base's, integer ``Div`` truncates toward zero)."""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

import pullback as pb
import pullback.nn.functional as F
from pullback.tensor import Tensor

from . import NodeContext, converter, scalar, text

# the element types a pullback Tensor holds (ONNX's float8, int4, strings... it does not)
TENSOR_DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float16", "bfloat16", "float32", "float64"}


def onnx_dtype(code: int) -> np.dtype:
    """The NumPy dtype of an ONNX element type, refusing those a Tensor cannot hold."""
    from onnx import helper

    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(code))
    except (KeyError, TypeError, ValueError):
        raise NotImplementedError(f"element type {code}") from None
    name = "bfloat16" if dtype.name == "bfloat16" else dtype.name
    if name not in TENSOR_DTYPES:
        raise NotImplementedError(f"element type {helper.tensor_dtype_to_string(code)}")
    return dtype


def unary(*op_types: str, since: int = 1) -> Callable[[Callable[[Any], Any]], Any]:
    def register(fn: Callable[[Any], Any]) -> Any:
        converter(*op_types, since=since)(lambda ins, attrs, node: [fn(ins[0])])
        return fn
    return register


def binary(*op_types: str, since: int = 1) -> Callable[[Callable[[Any, Any], Any]], Any]:
    def register(fn: Callable[[Any, Any], Any]) -> Any:
        converter(*op_types, since=since)(lambda ins, attrs, node: [fn(ins[0], ins[1])])
        return fn
    return register


for _name, _fn in {
    "Relu": pb.relu, "Tanh": pb.tanh, "Sigmoid": pb.sigmoid, "Exp": pb.exp, "Log": pb.log,
    "Sqrt": pb.sqrt, "Erf": pb.erf, "Abs": pb.abs, "Neg": lambda x: -x,
    "Reciprocal": pb.reciprocal, "Floor": pb.floor, "Ceil": pb.ceil, "Round": pb.round,
    "Sign": pb.sign, "Sin": pb.sin, "Cos": pb.cos, "Tan": pb.tan, "Asin": pb.asin,
    "Acos": pb.acos, "Atan": pb.atan, "Sinh": pb.sinh, "Cosh": pb.cosh, "Asinh": pb.asinh,
    "Acosh": pb.acosh, "Atanh": pb.atanh, "Identity": lambda x: x, "IsNaN": pb.isnan,
    "Not": pb.logical_not, "BitwiseNot": pb.bitwise_not, "Softsign": F.softsign,
    "Mish": F.mish,
}.items():
    unary(_name)(_fn)

for _name, _fn in {
    "Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
    "And": pb.logical_and, "Or": pb.logical_or, "Xor": pb.logical_xor,
    "Equal": lambda a, b: a == b, "Greater": lambda a, b: a > b, "Less": lambda a, b: a < b,
    "GreaterOrEqual": lambda a, b: a >= b, "LessOrEqual": lambda a, b: a <= b,
    "BitwiseAnd": pb.bitwise_and, "BitwiseOr": pb.bitwise_or, "BitwiseXor": pb.bitwise_xor,
}.items():
    binary(_name)(_fn)


@converter("Div")
def _div(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    a, b = ins
    if a.dtype.kind in "iu":  # ONNX truncates toward zero (C's division), not floor
        return [pb.div(a, b, rounding_mode="trunc").to(a.dtype)]
    return [a / b]


@converter("Mod")
def _mod(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    a, b = ins
    if attrs.get("fmod", 0):  # C's fmod: the sign of the dividend
        return [pb.fmod(a, b)]
    return [pb.remainder(a, b)]  # Python's %: the sign of the divisor


@converter("Pow")
def _pow(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    base, exponent = ins
    if base.dtype.kind in "iu":  # the result has the base's type, whatever the exponent's
        return [(base.to(np.float64) ** exponent.to(np.float64)).to(base.dtype)]
    return [base ** exponent.to(base.dtype)]


def _variadic(fn: Callable[[Any, Any], Any]) -> Any:
    return lambda ins, attrs, node: [functools.reduce(fn, [t for t in ins if t is not None])]


converter("Max")(_variadic(pb.maximum))
converter("Min")(_variadic(pb.minimum))
converter("Sum")(_variadic(lambda a, b: a + b))
converter("Mean")(lambda ins, attrs, node: [
    _variadic(lambda a, b: a + b)(ins, attrs, node)[0] / len([t for t in ins if t is not None])])


@converter("IsInf")
def _is_inf(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x = ins[0]
    positive, negative = attrs.get("detect_positive", 1), attrs.get("detect_negative", 1)
    if positive and negative:
        return [pb.isinf(x)]
    if positive:
        return [pb.isposinf(x)]
    if negative:
        return [pb.isneginf(x)]
    return [pb.zeros(tuple(x.shape), dtype=np.bool_)]


@converter("BitShift")
def _bit_shift(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    shift = pb.bitwise_left_shift if text(attrs["direction"]) == "LEFT" else \
        pb.bitwise_right_shift
    return [shift(*ins)]


@converter("Where")
def _where(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    return [pb.where(*ins)]


@converter("Clip")
def _clip(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    """Clip's bounds are attributes before opset 11, optional inputs after; either may be
    absent (no bound on that side)."""
    x = ins[0]
    low = ins[1] if len(ins) > 1 and ins[1] is not None else attrs.get("min")
    high = ins[2] if len(ins) > 2 and ins[2] is not None else attrs.get("max")
    low, high = scalar(low), scalar(high)
    if low is None and high is None:
        return [x]
    if low is not None and high is not None and low > high:  # ONNX: every element is max
        return [pb.full_like(x, high)]
    return [pb.clamp(x, low, high)]


@converter("Cast")
def _cast(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x = ins[0]
    dtype = onnx_dtype(attrs["to"])
    if x.dtype.kind == "f" and dtype.kind in "iu":  # C's conversion truncates toward zero
        return [pb.trunc(x).to(dtype)]
    return [x.to(dtype)]


@converter("BitCast")
def _bit_cast(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    """The same bytes (little endian) read as another type of the same width."""
    x, dtype = ins[0], onnx_dtype(attrs["to"])
    if dtype.itemsize != x.dtype.itemsize:
        raise ValueError(f"BitCast from {x.dtype} to {dtype}: the widths differ")
    array = np.ascontiguousarray(x.detach().numpy())
    return [pb.tensor(array.view(dtype.newbyteorder("<") if dtype.itemsize > 1 else dtype)
                      .astype(dtype))]


@converter("CastLike")
def _cast_like(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, like = ins
    if x.dtype.kind == "f" and like.dtype.kind in "iu":
        return [pb.trunc(x).to(like.dtype)]
    return [x.to(like.dtype)]


# activations with attributes


@converter("LeakyRelu")
def _leaky_relu(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    return [F.leaky_relu(ins[0], float(attrs.get("alpha", 0.01)))]


@converter("Elu")
def _elu(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    return [F.elu(ins[0], float(attrs.get("alpha", 1.0)))]


@converter("Celu")
def _celu(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    return [F.celu(ins[0], float(attrs.get("alpha", 1.0)))]


@converter("Selu")
def _selu(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    alpha = float(attrs.get("alpha", 1.67326319217681884765625))
    gamma = float(attrs.get("gamma", 1.05070102214813232421875))
    return [F.elu(ins[0], alpha) * gamma]


def hard_sigmoid(x: Tensor, alpha: float, beta: float) -> Tensor:
    return pb.clamp(x * alpha + beta, 0.0, 1.0)


@converter("HardSigmoid")
def _hard_sigmoid(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    return [hard_sigmoid(ins[0], float(attrs.get("alpha", 0.2)), float(attrs.get("beta", 0.5)))]


@converter("HardSwish")
def _hard_swish(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    return [ins[0] * hard_sigmoid(ins[0], 1 / 6, 0.5)]


@converter("Softplus")
def _softplus(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x = ins[0]  # log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|)
    return [pb.relu(x) + pb.log1p(pb.exp(-pb.abs(x)))]


@converter("ThresholdedRelu")
def _thresholded_relu(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x = ins[0]
    return [pb.where(x > float(attrs.get("alpha", 1.0)), x, pb.zeros_like(x))]


@converter("PRelu")
def _prelu(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, slope = ins
    return [pb.where(x < 0, x * slope, x)]


@converter("Swish")
def _swish(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x = ins[0]
    return [x * pb.sigmoid(x * float(attrs.get("alpha", 1.0)))]


@converter("Gelu")
def _gelu(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    return [F.gelu(ins[0], approximate=text(attrs.get("approximate", "none")))]


@converter("Shrink")
def _shrink(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x = ins[0]
    bias, lambd = float(attrs.get("bias", 0.0)), float(attrs.get("lambd", 0.5))
    zero = pb.zeros_like(x)
    return [pb.where(x < -lambd, x + bias, pb.where(x > lambd, x - bias, zero)).to(x.dtype)]
