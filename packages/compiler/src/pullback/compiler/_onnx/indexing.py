"""The ``"onnx"`` rules of index-driven core ops: ``gather`` (GatherElements), ``scatter_add``
(ScatterElements with ``reduction="add"``), ``argmax``/``argmin`` (ArgMax/ArgMin, the first
index among ties as NumPy), ``cumsum`` (CumSum), ``one_hot`` (OneHot) and ``einsum`` (Einsum:
ONNX takes NumPy's notation). The index arguments are int64 there, as ONNX wants them.
"""

from __future__ import annotations

import numpy as np

from .._ir import Node
from .builder import OnnxBuilder
from .elementwise import OnnxRule


def _gather(node: Node, b: OnnxBuilder) -> None:
    x, index = node.inputs[:2]
    b.emit("GatherElements", [b.name(x), b.operand(index, np.int64)], [b.output(node.output)],
           axis=int(node.attrs["axis"]) % x.ndim)


def _scatter_add(node: Node, b: OnnxBuilder) -> None:
    x, index, src = node.inputs[:3]
    dtype = node.output.dtype
    b.emit("ScatterElements", [b.operand(x, dtype), b.operand(index, np.int64),
                               b.operand(src, dtype)], [b.output(node.output)],
           axis=int(node.attrs["axis"]) % x.ndim, reduction="add")


def _arg_reduction(op_type: str) -> OnnxRule:
    def rule(node: Node, b: OnnxBuilder) -> None:
        x = node.inputs[0]
        axis = node.attrs.get("axis")
        keepdims = int(bool(node.attrs.get("keepdims", False)))
        if axis is not None:
            b.emit(op_type, [b.name(x)], [b.output(node.output)], axis=int(axis) % x.ndim,
                   keepdims=keepdims)
            return
        # over the flattened array (NumPy's); keepdims leaves a one on every axis
        flat = b.emit("Reshape", [b.name(x), b.ints([-1])])
        index = b.emit(op_type, [flat], axis=0, keepdims=0)
        b.emit("Reshape", [index, b.ints(node.output.shape)], [b.output(node.output)])
    return rule


def _cumsum(node: Node, b: OnnxBuilder) -> None:
    x = node.inputs[0]
    axis = b.constant(np.asarray(int(node.attrs["axis"]) % max(x.ndim, 1), np.int64), "axis")
    b.emit("CumSum", [b.operand(x, node.output.dtype), axis], [b.output(node.output)])


def _one_hot(node: Node, b: OnnxBuilder) -> None:
    """int64 rows; ONNX counts a negative index from the end where pullback's kernel gives a
    row of zeros, but ``pullback.one_hot`` refuses negative indices before the op runs."""
    depth = b.constant(np.asarray(int(node.attrs["num_classes"]), np.int64), "depth")
    values = b.constant(np.asarray([0, 1], node.output.dtype), "one_hot_values")
    b.emit("OneHot", [b.operand(node.inputs[0], np.int64), depth, values],
           [b.output(node.output)], axis=-1)


def _einsum(node: Node, b: OnnxBuilder) -> None:
    dtype = node.output.dtype
    b.emit("Einsum", [b.operand(v, dtype) for v in node.inputs], [b.output(node.output)],
           equation=str(node.attrs["equation"]).replace(" ", ""))


INDEXING_RULES: dict[str, OnnxRule] = {
    "gather": _gather, "scatter_add": _scatter_add, "argmax": _arg_reduction("ArgMax"),
    "argmin": _arg_reduction("ArgMin"), "cumsum": _cumsum, "einsum": _einsum,
    "one_hot": _one_hot,
}
