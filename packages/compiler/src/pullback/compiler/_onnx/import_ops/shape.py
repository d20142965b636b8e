"""Shape and layout operators: reshapes, transposes, concatenation and splitting, padding,
tiling and broadcasting, the sizes of a tensor (``Shape``, ``Size``) and the operators that make
a tensor from sizes (``ConstantOfShape``, ``Range``, ``EyeLike``, ``Constant``).

Shape arithmetic (``Shape``, ``Gather`` of a size, ``Concat`` of sizes, as
``torch.onnx.export`` writes a ``reshape``) runs on small int64 Tensors; an operator that
takes sizes reads them back as Python ints.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import pullback as pb
from pullback.tensor import Tensor

from . import NodeContext, converter, ints, optional, scalar, text
from .elementwise import onnx_dtype


def _axis(axis: Any, ndim: int) -> int:
    axis = int(axis)
    if not -max(ndim, 1) <= axis < max(ndim, 1):
        raise ValueError(f"axis {axis} is out of range for a tensor of {ndim} dims")
    return axis % max(ndim, 1)


@converter("Reshape")
def _reshape(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, shape = ins[0], ints(ins[1])
    if not attrs.get("allowzero", 0):  # 0 copies the input's size on that axis
        shape = [x.shape[d] if s == 0 else s for d, s in enumerate(shape)]
    return [x.reshape(tuple(shape))]


@converter("Flatten")
def _flatten(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x = ins[0]
    axis = int(attrs.get("axis", 1))
    axis = axis + x.ndim if axis < 0 else axis
    outer = math.prod(x.shape[:axis])
    return [x.reshape((outer, math.prod(x.shape[axis:])))]


@converter("Transpose")
def _transpose(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x = ins[0]
    perm = attrs.get("perm", list(range(x.ndim))[::-1])
    return [x.permute(*perm)]


def _axes(ins: list[Any], attrs: dict[str, Any]) -> list[int] | None:
    if "axes" in attrs:
        return list(attrs["axes"])
    if optional(ins, 1) is not None:
        return ints(ins[1])
    return None


@converter("Squeeze")
def _squeeze(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, axes = ins[0], _axes(ins, attrs)
    axes = [a for a in range(x.ndim) if x.shape[a] == 1] if axes is None else \
        [_axis(a, x.ndim) for a in axes]
    return [x.reshape(tuple(s for d, s in enumerate(x.shape) if d not in axes))]


@converter("Unsqueeze")
def _unsqueeze(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, axes = ins[0], _axes(ins, attrs) or []
    ndim = x.ndim + len(axes)
    wanted = {_axis(a, ndim) for a in axes}
    source = iter(x.shape)
    return [x.reshape(tuple(1 if d in wanted else next(source) for d in range(ndim)))]


@converter("Concat")
def _concat(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    parts = [t for t in ins if t is not None]
    return [pb.cat(parts, axis=_axis(attrs["axis"], parts[0].ndim))]


@converter("Split")
def _split(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    """Sizes from ``split`` (an attribute, or an input since opset 13), else ``num_outputs``
    (or the node's output count) parts of ``ceil(size / parts)``, the last one smaller."""
    x = ins[0]
    axis = _axis(attrs.get("axis", 0), x.ndim)
    sizes = attrs.get("split")
    if sizes is None and optional(ins, 1) is not None:
        sizes = ints(ins[1])
    if sizes is None:
        count = int(attrs.get("num_outputs", node.outputs))
        step = -(-x.shape[axis] // count)
        sizes = [max(min(step, x.shape[axis] - i * step), 0) for i in range(count)]
    parts, start = [], 0
    for size in sizes:
        parts.append(x.narrow(axis, start, size))
        start += size
    return parts


@converter("Shape")
def _shape(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    shape = list(ins[0].shape)
    return [pb.tensor(np.asarray(shape[slice(attrs.get("start", 0), attrs.get("end"))],
                                 np.int64))]


@converter("Size")
def _size(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    return [pb.tensor(np.asarray(math.prod(ins[0].shape), np.int64))]


@converter("Expand")
def _expand(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, shape = ins[0], ints(ins[1])
    return [pb.broadcast_to(x, np.broadcast_shapes(tuple(x.shape), tuple(shape)))]


@converter("Tile")
def _tile(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    return [pb.tile(ins[0], tuple(ints(ins[1])))]


@converter("Trilu")
def _trilu(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    k = int(scalar(ins[1])) if optional(ins, 1) is not None else 0
    return [(pb.triu if attrs.get("upper", 1) else pb.tril)(ins[0], k)]


def _pad_index(size: int, before: int, after: int, mode: str) -> np.ndarray:
    """The source index of each position of an axis padded by ``mode`` (reflect, edge, wrap)."""
    positions = np.arange(-before, size + after)
    if mode == "edge":
        return np.clip(positions, 0, size - 1)
    if mode == "wrap":
        return positions % size
    period = 2 * (size - 1)  # reflect, the edge not repeated
    folded = np.abs(positions) % period if period else np.zeros_like(positions)
    return np.where(folded >= size, period - folded, folded)


def pad(x: Tensor, begin: list[int], end: list[int], mode: str = "constant",
        value: Any = 0) -> Tensor:
    """``x`` padded by ``begin``/``end`` per axis (negative amounts crop), in ONNX's modes."""
    for axis, (b, e) in enumerate(zip(begin, end)):
        if b < 0 or e < 0:  # crop first
            x = x.narrow(axis, max(-b, 0), x.shape[axis] - max(-b, 0) - max(-e, 0))
            b, e = max(b, 0), max(e, 0)
        if b == 0 and e == 0:
            continue
        if mode == "constant":
            parts = []
            for amount in (b, e):
                shape = list(x.shape)
                shape[axis] = amount
                parts.append(pb.full(tuple(shape), value, dtype=x.dtype))
            x = pb.cat([parts[0], x, parts[1]], axis=axis)
        else:
            if x.shape[axis] == 0:
                raise ValueError(f"Pad mode {mode!r} of an empty axis")
            index = _pad_index(x.shape[axis], b, e, mode)
            x = x.index_select(axis, pb.tensor(index.astype(np.int64)))
    return x


@converter("Pad")
def _pad(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x = ins[0]
    mode = text(attrs.get("mode", "constant"))
    pads = ints(ins[1]) if optional(ins, 1) is not None else list(attrs["pads"])
    value = scalar(optional(ins, 2)) if optional(ins, 2) is not None else \
        attrs.get("value", 0.0)
    axes = ints(ins[3]) if optional(ins, 3) is not None else list(range(x.ndim))
    axes = [_axis(a, x.ndim) for a in axes]
    begin, end = [0] * x.ndim, [0] * x.ndim
    for i, axis in enumerate(axes):
        begin[axis], end[axis] = pads[i], pads[i + len(axes)]
    return [pad(x, begin, end, mode, value)]


@converter("ConstantOfShape")
def _constant_of_shape(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    from onnx import numpy_helper

    value = numpy_helper.to_array(attrs["value"]).reshape(-1) if "value" in attrs else \
        np.zeros(1, np.float32)
    return [pb.tensor(np.full(tuple(ints(ins[0])), value[0], dtype=value.dtype))]


@converter("Range")
def _range(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    start, limit, delta = (scalar(t) for t in ins)
    count = max(int(math.ceil((limit - start) / delta)), 0)
    dtype = ins[0].dtype
    return [pb.tensor((start + np.arange(count) * delta).astype(dtype))]


@converter("EyeLike")
def _eye_like(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x = ins[0]
    dtype = onnx_dtype(attrs["dtype"]) if "dtype" in attrs else x.dtype
    rows, cols = x.shape
    return [pb.tensor(np.eye(rows, cols, int(attrs.get("k", 0)), dtype=dtype))]


def constant_value(attrs: dict[str, Any]) -> np.ndarray:
    """The tensor a ``Constant`` node holds, in any of its attribute forms."""
    from onnx import numpy_helper

    if "value" in attrs:
        return np.array(numpy_helper.to_array(attrs["value"]))
    for key, dtype in (("value_float", np.float32), ("value_floats", np.float32),
                       ("value_int", np.int64), ("value_ints", np.int64)):
        if key in attrs:
            return np.array(attrs[key], dtype=dtype)
    if "sparse_value" in attrs:
        raise NotImplementedError("Constant with sparse_value")
    raise NotImplementedError(f"Constant with {', '.join(attrs) or 'no value'}")


@converter("Constant")
def _constant(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    return [pb.tensor(constant_value(attrs))]


@converter("DepthToSpace")
def _depth_to_space(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, size = ins[0], int(attrs["blocksize"])
    n, c, h, w = x.shape
    if text(attrs.get("mode", "DCR")) == "DCR":
        y = x.reshape((n, size, size, c // size ** 2, h, w)).permute(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape((n, c // size ** 2, size, size, h, w)).permute(0, 1, 4, 2, 5, 3)
    return [y.reshape((n, c // size ** 2, h * size, w * size))]


@converter("SpaceToDepth")
def _space_to_depth(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, size = ins[0], int(attrs["blocksize"])
    n, c, h, w = x.shape
    y = x.reshape((n, c, h // size, size, w // size, size))
    if text(attrs.get("mode", "DCR")) == "CRD":  # opset 25's mode: channels first
        y = y.permute(0, 1, 3, 5, 2, 4)
    else:
        y = y.permute(0, 3, 5, 1, 2, 4)
    return [y.reshape((n, c * size ** 2, h // size, w // size))]


@converter("CenterCropPad")
def _center_crop_pad(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, shape = ins[0], ints(ins[1])
    axes = [_axis(a, x.ndim) for a in attrs.get("axes", range(x.ndim))]
    begin, end = [0] * x.ndim, [0] * x.ndim
    for axis, target in zip(axes, shape):
        size = x.shape[axis]
        if target < size:  # crop: the first extra element goes to the start's side
            begin[axis] = -((size - target) // 2)
            end[axis] = -(size - target + begin[axis])
        else:
            begin[axis] = (target - size) // 2
            end[axis] = target - size - begin[axis]
    return [pad(x, begin, end)]
