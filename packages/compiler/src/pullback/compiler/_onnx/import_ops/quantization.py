"""Quantization: ``QuantizeLinear`` / ``DequantizeLinear`` (per tensor, per axis and
blocked), ``DynamicQuantizeLinear``, and the integer products ``MatMulInteger``,
``ConvInteger``, ``QLinearMatMul`` and ``QLinearConv``. Integers are 8, 16 and 32 bits (the
4-bit and float8 types are refused: a Tensor does not hold them). Rounding is half to even and
results saturate, as ONNX says."""

from __future__ import annotations

from typing import Any

import numpy as np

import pullback as pb
from pullback.tensor import Tensor

from . import NodeContext, converter, optional
from .elementwise import onnx_dtype


def _along(scale: Tensor, x: Tensor, axis: int, block: int) -> Tensor:
    """A per-axis or blocked scale (or zero point) shaped to broadcast against ``x``."""
    if scale.ndim == 0 or (scale.ndim == 1 and scale.shape[0] == 1 and block == 0):
        return scale.reshape(())
    axis = axis % x.ndim
    if block > 0:
        scale = pb.repeat_interleave(scale, block, dim=axis).narrow(axis, 0, x.shape[axis])
        return scale
    return scale.reshape(tuple(-1 if d == axis else 1 for d in range(x.ndim)))


def saturate(y: Tensor, dtype: np.dtype) -> Tensor:
    info = np.iinfo(dtype)
    return pb.clamp(y, info.min, info.max).to(dtype)


def quantize(x: Tensor, scale: Tensor, zero: Tensor | None, dtype: np.dtype) -> Tensor:
    y = pb.round(x.to(np.float32) / scale.to(np.float32))
    if zero is not None:
        y = y + zero.to(np.float32)
    return saturate(y, dtype)


def _dtype(zero: Tensor | None, attrs: dict[str, Any]) -> np.dtype:
    if zero is not None:
        return zero.dtype
    if attrs.get("output_dtype"):
        return onnx_dtype(int(attrs["output_dtype"]))
    return np.dtype(np.uint8)


@converter("QuantizeLinear")
def _quantize_linear(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, scale, zero = ins[0], ins[1], optional(ins, 2)
    axis, block = int(attrs.get("axis", 1)), int(attrs.get("block_size", 0))
    dtype = _dtype(zero, attrs)
    if dtype.kind not in "iu":
        raise NotImplementedError(f"QuantizeLinear to {dtype}")
    return [quantize(x, _along(scale, x, axis, block),
                     _along(zero, x, axis, block) if zero is not None else None, dtype)]


@converter("DequantizeLinear")
def _dequantize_linear(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, scale, zero = ins[0], ins[1], optional(ins, 2)
    axis, block = int(attrs.get("axis", 1)), int(attrs.get("block_size", 0))
    centered = x.to(np.float32)
    if zero is not None:
        centered = centered - _along(zero, x, axis, block).to(np.float32)
    out = centered * _along(scale, x, axis, block).to(np.float32)
    dtype = onnx_dtype(int(attrs["output_dtype"])) if attrs.get("output_dtype") else scale.dtype
    return [out.to(dtype)]


@converter("DynamicQuantizeLinear")
def _dynamic_quantize_linear(ins: list[Any], attrs: dict[str, Any], node: NodeContext
                             ) -> list[Any]:
    """uint8 with the scale and zero point that map ``[min(x, 0), max(x, 0)]`` onto 0-255."""
    x = ins[0].to(np.float32)
    high = pb.maximum(x.amax(), pb.zeros((), dtype=np.float32))
    low = pb.minimum(x.amin(), pb.zeros((), dtype=np.float32))
    scale = (high - low) / 255
    zero = saturate(pb.round(-low / scale), np.dtype(np.uint8))
    return [quantize(x, scale, zero, np.dtype(np.uint8)), scale, zero]


def _centered(x: Tensor, zero: Tensor | None, axis: int | None = None) -> Tensor:
    wide = x.to(np.int32)
    if zero is None:
        return wide
    if axis is not None and zero.ndim == 1 and zero.shape[0] > 1:
        zero = zero.reshape(tuple(-1 if d == axis else 1 for d in range(x.ndim)))
    return wide - zero.to(np.int32)


def _int_matmul(a: Tensor, b: Tensor) -> Tensor:
    """An exact integer product: float64 holds every int32 sum of int8/uint8 products."""
    return (a.to(np.float64) @ b.to(np.float64)).to(np.int32)


@converter("MatMulInteger")
def _matmul_integer(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    a, b = ins[0], ins[1]
    # a's zero point is per row (its second-to-last axis), b's per column (its last)
    za, zb = optional(ins, 2), optional(ins, 3)
    a_c = _centered(a, za, a.ndim - 2 if za is not None and za.ndim == 1 else None)
    b_c = _centered(b, zb, b.ndim - 1 if zb is not None and zb.ndim == 1 else None)
    return [_int_matmul(a_c, b_c)]


@converter("QLinearMatMul")
def _qlinear_matmul(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero = ins
    real = (a.to(np.float64) - a_zero.to(np.float64)) * a_scale.to(np.float64)
    real_b = (b.to(np.float64) - _along(b_zero, b, -1, 0).to(np.float64)) * \
        _along(b_scale, b, -1, 0).to(np.float64)
    product = real @ real_b
    return [quantize(product / y_scale.to(np.float64), pb.ones((), dtype=np.float32), y_zero,
                     y_zero.dtype)]


def _conv_real(x: Tensor, w: Tensor, attrs: dict[str, Any], node: NodeContext) -> Tensor:
    from .nn import _conv

    return _conv([x, w], attrs, node)[0]


@converter("ConvInteger")
def _conv_integer(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, w, zx, zw = ins[0], ins[1], optional(ins, 2), optional(ins, 3)
    x_c = _centered(x, zx).to(np.float64)
    w_c = _centered(w, zw, 0).to(np.float64)
    return [_conv_real(x_c, w_c, attrs, node).to(np.int32)]


@converter("QLinearConv")
def _qlinear_conv(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, x_scale, x_zero, w, w_scale, w_zero, y_scale, y_zero = ins[:8]
    bias = optional(ins, 8)
    x_real = (x.to(np.float64) - x_zero.to(np.float64)) * x_scale.to(np.float64)
    w_real = (w.to(np.float64) - _along(w_zero, w, 0, 0).to(np.float64)) * \
        _along(w_scale, w, 0, 0).to(np.float64)
    y = _conv_real(x_real, w_real, attrs, node)
    if bias is not None:  # int32, in units of x_scale * w_scale
        scale = (x_scale.to(np.float64) * w_scale.to(np.float64)).reshape((-1,))
        y = y + (bias.to(np.float64) * scale).reshape((1, -1) + (1,) * (y.ndim - 2))
    return [quantize(y / y_scale.to(np.float64), pb.ones((), dtype=np.float32), y_zero,
                     y_zero.dtype)]
