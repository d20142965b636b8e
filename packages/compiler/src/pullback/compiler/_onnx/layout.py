"""The ``"onnx"`` rules of shape and data-movement ops and reductions: ``reshape`` (-1 on the
batch axis), ``permute``/``swapaxes`` (Transpose), basic indexing (Slice, Squeeze, Unsqueeze),
``take`` (Gather), ``cat``/``stack``, ``broadcast_to`` (Expand), ``flip``, ``pad``,
``tril``/``triu`` (Trilu), ``matmul`` and the reductions.

ONNX takes shapes, axes and slice bounds as int64 input tensors (initializers here); the
reductions take their axes as an attribute up to opset 17 and as an input from 18 (ReduceSum
from 13), which :func:`_reduce` follows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._ir import Node
from .builder import OnnxBuilder
from .elementwise import OnnxRule

_INT64_MIN = -(2**63)


def _reshape(node: Node, b: OnnxBuilder) -> None:
    shape = list(node.attrs["shape"])
    varying = b.batch_sized(node, "shape")
    if sum(varying) > 1:
        raise b.fail(f"reshape to {tuple(shape)} has {sum(varying)} axes that follow the batch "
                     "size; ONNX's Reshape can infer one (export with dynamic_batch=False)")
    shape = [-1 if v else s for s, v in zip(shape, varying)]
    b.emit("Reshape", [b.name(node.inputs[0]), b.ints(shape)], [b.output(node.output)])


def _permute(node: Node, b: OnnxBuilder) -> None:
    b.emit("Transpose", [b.name(node.inputs[0])], [b.output(node.output)],
           perm=[int(a) % node.output.ndim for a in node.attrs["axes"]])


def _swapaxes(node: Node, b: OnnxBuilder) -> None:
    x = node.inputs[0]
    perm = list(range(x.ndim))
    i, j = node.attrs["a"] % x.ndim, node.attrs["b"] % x.ndim
    perm[i], perm[j] = perm[j], perm[i]
    b.emit("Transpose", [b.name(x)], [b.output(node.output)], perm=perm)


def _expand_key(key: Any, ndim: int) -> list[Any]:
    key = list(key) if isinstance(key, tuple) else [key]
    if any(k is Ellipsis for k in key):
        at = next(i for i, k in enumerate(key) if k is Ellipsis)
        taken = sum(1 for k in key if k is not None and k is not Ellipsis)
        key[at:at + 1] = [slice(None)] * (ndim - taken)
    taken = sum(1 for k in key if k is not None)
    return key + [slice(None)] * (ndim - taken)


def _getitem(node: Node, b: OnnxBuilder) -> None:
    """Basic indexing: integers, slices (any step), None and Ellipsis."""
    x = node.inputs[0]
    key = _expand_key(node.attrs["key"], x.ndim)
    starts, stops, axes, steps, squeeze, unsqueeze = [], [], [], [], [], []
    axis = 0  # of x
    position = 0  # of the result before squeezing
    for k in key:
        if k is None:
            unsqueeze.append(position)
            position += 1
            continue
        size = x.shape[axis]
        if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            i = int(k) % size
            starts.append(i), stops.append(i + 1), axes.append(axis), steps.append(1)
            squeeze.append(axis)
        elif isinstance(k, slice):
            start, stop, step = k.indices(size)
            if (start, stop, step) != (0, size, 1):
                if step < 0 and stop < 0:
                    stop = _INT64_MIN  # through element 0
                starts.append(start), stops.append(stop), axes.append(axis), steps.append(step)
            position += 1
        else:
            raise b.fail(f"index {k!r} (only integers, slices, None and Ellipsis here)")
        axis += 1
    y = b.name(x)
    if axes:
        y = b.emit("Slice", [y, b.ints(starts, "starts"), b.ints(stops, "ends"),
                             b.ints(axes, "axes"), b.ints(steps, "steps")])
    if squeeze:
        y = b.emit("Squeeze", [y, b.ints(squeeze, "axes")])
    if unsqueeze:
        y = b.emit("Unsqueeze", [y, b.ints(unsqueeze, "axes")])
    b.emit("Identity", [y], [b.output(node.output)])


def _take(node: Node, b: OnnxBuilder) -> None:
    a, indices = node.inputs[:2]
    axis = node.attrs.get("axis")
    if axis is None:
        a_name = b.emit("Reshape", [b.name(a), b.ints([-1])])
        axis = 0
    else:
        a_name = b.name(a)
    b.emit("Gather", [a_name, b.operand(indices, np.int64)], [b.output(node.output)],
           axis=int(axis))


def _cat(node: Node, b: OnnxBuilder) -> None:
    out = node.output
    axis = node.attrs.get("axis", 0)
    names = [b.operand(v, out.dtype) for v in node.inputs]
    if node.op == "stack":
        axis %= out.ndim
        names = [b.emit("Unsqueeze", [n, b.ints([axis], "axes")]) for n in names]
    b.emit("Concat", names, [b.output(out)], axis=int(axis) % out.ndim)


def _broadcast_to(node: Node, b: OnnxBuilder) -> None:
    x = node.inputs[0]
    shape = list(node.attrs["shape"])
    varying = b.batch_sized(node, "shape")
    offset = len(shape) - x.ndim
    for d, v in enumerate(varying):
        if v:  # the batch axis: Expand keeps the input's size where the shape says 1
            if d < offset or d - offset not in b.batch_axes(x):
                raise b.fail("broadcasts a value to the batch size; export with "
                             "dynamic_batch=False")
            shape[d] = 1
    b.emit("Expand", [b.name(x), b.ints(shape)], [b.output(node.output)])


def _flip(node: Node, b: OnnxBuilder) -> None:
    x = node.inputs[0]
    axis = node.attrs.get("axis")
    axes = list(range(x.ndim)) if axis is None else \
        [a % x.ndim for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    n = len(axes)
    b.emit("Slice", [b.name(x), b.ints([-1] * n, "starts"), b.ints([_INT64_MIN] * n, "ends"),
                     b.ints(axes, "axes"), b.ints([-1] * n, "steps")], [b.output(node.output)])


def _pad(node: Node, b: OnnxBuilder) -> None:
    x = node.inputs[0]
    widths = np.broadcast_to(np.asarray(node.attrs["widths"], np.int64), (x.ndim, 2))
    pads = list(widths[:, 0]) + list(widths[:, 1])
    b.emit("Pad", [b.name(x), b.ints(pads, "pads"),
                   b.scalar(node.attrs.get("value", 0.0), x.dtype)], [b.output(node.output)],
           mode="constant")


def _triangle(node: Node, b: OnnxBuilder) -> None:
    k = b.constant(np.asarray(int(node.attrs.get("k", 0)), np.int64), "k")
    b.emit("Trilu", [b.name(node.inputs[0]), k], [b.output(node.output)],
           upper=int(node.op == "triu"))


def _matmul(node: Node, b: OnnxBuilder) -> None:
    dtype = node.output.dtype
    b.emit("MatMul", [b.operand(a, dtype) for a in node.inputs[:2]], [b.output(node.output)])


_REDUCE = {"sum": "ReduceSum", "mean": "ReduceMean", "amax": "ReduceMax", "amin": "ReduceMin",
           "norm2": "ReduceL2", "prod": "ReduceProd"}


def _reduce(node: Node, b: OnnxBuilder) -> None:
    x = node.inputs[0]
    op_type = _REDUCE[node.op]
    axis = node.attrs.get("axis")
    axes = list(range(x.ndim)) if axis is None else \
        [a % max(x.ndim, 1) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    keepdims = int(bool(node.attrs.get("keepdims", False)))
    source = b.operand(x, node.output.dtype)
    if not axes:
        b.emit("Identity", [source], [b.output(node.output)])
        return
    if op_type == "ReduceSum" or b.opset >= 18:
        b.emit(op_type, [source, b.ints(axes, "axes")], [b.output(node.output)],
               keepdims=keepdims)
    else:
        b.emit(op_type, [source], [b.output(node.output)], axes=axes, keepdims=keepdims)


LAYOUT_RULES: dict[str, OnnxRule] = {
    "reshape": _reshape, "permute": _permute, "swapaxes": _swapaxes, "getitem": _getitem,
    "take": _take, "cat": _cat, "stack": _cat, "broadcast_to": _broadcast_to, "flip": _flip,
    "pad": _pad, "tril": _triangle, "triu": _triangle, "matmul": _matmul,
    **{op: _reduce for op in _REDUCE},
}
