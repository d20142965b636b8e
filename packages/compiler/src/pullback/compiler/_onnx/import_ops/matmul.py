"""Products: ``MatMul``, ``Gemm``, ``Einsum`` and ``Det``."""

from __future__ import annotations

from typing import Any

import pullback as pb
import pullback.nn.functional as F

from . import NodeContext, converter, optional, text


@converter("MatMul")
def _matmul(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    return [ins[0] @ ins[1]]


@converter("Gemm")
def _gemm(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    """``alpha * A' @ B' + beta * C``. A linear layer's form (``B`` transposed, a bias row
    or none, the factors 1: what ``torch.onnx.export`` writes for ``nn.Linear``) is one
    ``nn.linear`` op, as the layer is in pullback: one graph node instead of a transpose,
    a product and an add (the same float operations)."""
    a, b, c = ins[0], ins[1], optional(ins, 2)
    if (attrs.get("transB", 0) and not attrs.get("transA", 0)
            and float(attrs.get("alpha", 1.0)) == 1.0 and float(attrs.get("beta", 1.0)) == 1.0
            and a.ndim == 2 and b.ndim == 2 and a.dtype == b.dtype
            and (c is None or (c.dtype == a.dtype and tuple(c.shape) == (b.shape[0],)))):
        return [F.linear(a, b, c)]
    a = a.transpose(0, 1) if attrs.get("transA", 0) else a
    b = b.transpose(0, 1) if attrs.get("transB", 0) else b
    y = a @ b
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    if alpha != 1.0:
        y = y * alpha
    if c is not None:
        y = y + (c * beta if beta != 1.0 else c)
    return [y.to(a.dtype)]


@converter("Einsum")
def _einsum(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    return [pb.einsum(text(attrs["equation"]).replace(" ", ""), *ins)]


@converter("Det")
def _det(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    return [pb.linalg.det(ins[0])]
