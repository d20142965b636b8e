"""Pooling over 1 to 3 spatial axes: ``MaxPool`` (with its ``Indices``), ``AveragePool``,
``LpPool``, their global forms and ``MaxUnpool``, with ONNX's ``auto_pad``, asymmetric
``pads``, ``dilations`` and ``ceil_mode``.

The common 2-d cases run pullback's pooling kernels; the others gather each window with
:func:`windows` (an index per kernel tap along each axis) and reduce it, which covers every
combination of the attributes with pullback's differentiable ops.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import pullback as pb
import pullback.nn.functional as F
from pullback.tensor import Tensor

from . import NodeContext, converter, ints, optional, text
from .shape import pad


def same_pads(sizes: list[int], kernel: list[int], strides: list[int], dilations: list[int],
              mode: str) -> tuple[list[int], list[int]]:
    """``auto_pad`` SAME_UPPER / SAME_LOWER: the output is ``ceil(size / stride)``, the odd
    padding element at the end (UPPER) or the start (LOWER)."""
    begin, end = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, large = total // 2, total - total // 2
        begin.append(small if mode == "SAME_UPPER" else large)
        end.append(large if mode == "SAME_UPPER" else small)
    return begin, end


def geometry(x: Tensor, attrs: dict[str, Any], kernel: list[int] | None = None
             ) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
    """kernel, strides, dilations, pads at the start and at the end of each spatial axis."""
    spatial = x.ndim - 2
    kernel = list(attrs["kernel_shape"]) if kernel is None else kernel
    strides = list(attrs.get("strides", [1] * spatial))
    dilations = list(attrs.get("dilations", [1] * spatial))
    auto_pad = text(attrs.get("auto_pad", "NOTSET"))
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = same_pads(list(x.shape[2:]), kernel, strides, dilations, auto_pad)
    elif auto_pad == "VALID":
        begin, end = [0] * spatial, [0] * spatial
    else:
        pads = list(attrs.get("pads", [0] * 2 * spatial))
        begin, end = pads[:spatial], pads[spatial:]
    return kernel, strides, dilations, begin, end


def output_sizes(sizes: list[int], kernel: list[int], strides: list[int],
                 dilations: list[int], begin: list[int], end: list[int], ceil: bool
                 ) -> list[int]:
    """Each spatial output size; with ``ceil_mode`` a last window must start inside the
    input or its start padding (PyTorch's and onnxruntime's rule)."""
    out = []
    for size, k, s, d, b, e in zip(sizes, kernel, strides, dilations, begin, end):
        span = size + b + e - (k - 1) * d - 1
        n = (-(-span // s) if ceil else span // s) + 1
        if ceil and (n - 1) * s >= size + b:
            n -= 1
        out.append(n)
    return out


def windows(x: Tensor, kernel: list[int], strides: list[int], dilations: list[int],
            outs: list[int]) -> Tensor:
    """``x`` (already padded for every window) as ``(N, C, *outs, *kernel)``."""
    spatial = len(kernel)
    for i, (k, s, d, o) in enumerate(zip(kernel, strides, dilations, outs)):
        axis = 2 + 2 * i  # earlier axes are already (out, tap) pairs
        index = (np.arange(o) * s)[:, None] + (np.arange(k) * d)[None, :]
        picked = x.index_select(axis, pb.tensor(index.reshape(-1).astype(np.int64)))
        x = picked.reshape(tuple(picked.shape[:axis]) + (o, k) + tuple(picked.shape[axis + 1:]))
    order = [0, 1] + [2 + 2 * i for i in range(spatial)] + [3 + 2 * i for i in range(spatial)]
    return x.permute(*order)


def _overhang(sizes: list[int], kernel: list[int], strides: list[int], dilations: list[int],
              begin: list[int], end: list[int], outs: list[int]) -> list[int]:
    """How much further than ``end`` the last windows reach (``ceil_mode``)."""
    return [max((o - 1) * s + (k - 1) * d + 1 - (n + b + e), 0)
            for n, k, s, d, b, e, o in zip(sizes, kernel, strides, dilations, begin, end, outs)]


def _pooled(x: Tensor, attrs: dict[str, Any], fill: float, kernel: list[int] | None = None
            ) -> tuple[Tensor, list[int], list[int], list[int], list[int], list[int], list[int]]:
    kernel, strides, dilations, begin, end = geometry(x, attrs, kernel)
    sizes = list(x.shape[2:])
    outs = output_sizes(sizes, kernel, strides, dilations, begin, end,
                        bool(attrs.get("ceil_mode", 0)))
    extra = _overhang(sizes, kernel, strides, dilations, begin, end, outs)
    padded = pad(x, [0, 0] + begin, [0, 0] + [e + o for e, o in zip(end, extra)], "constant",
                 fill)
    return windows(padded, kernel, strides, dilations, outs), kernel, strides, dilations, \
        begin, end, extra


@converter("MaxPool")
def _max_pool(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x = ins[0]
    spatial = x.ndim - 2
    fill = float("-inf") if x.dtype.kind == "f" else int(np.iinfo(x.dtype).min)
    if node.outputs > 1:
        return list(_max_pool_with_indices(x, attrs))
    kernel, strides, dilations, begin, end = geometry(x, attrs)
    ceil = bool(attrs.get("ceil_mode", 0))
    if spatial == 2 and begin == end and x.dtype.kind == "f" and \
            all(2 * b <= k for b, k in zip(begin, kernel)):
        return [F.max_pool2d(x, kernel, strides, begin, dilations, ceil_mode=ceil)]
    win = _pooled(x, attrs, fill)[0]
    return [win.amax(axis=tuple(range(2 + spatial, 2 + 2 * spatial)))]


def _max_pool_with_indices(x: Tensor, attrs: dict[str, Any]) -> tuple[Tensor, Tensor]:
    """The max and, as ONNX counts it, its offset in the whole input tensor (row-major, or
    column-major over the spatial axes with ``storage_order=1``)."""
    spatial = x.ndim - 2
    sizes = list(x.shape[2:])
    fill = float("-inf") if x.dtype.kind == "f" else int(np.iinfo(x.dtype).min)
    win, kernel, strides, dilations, begin, end, extra = _pooled(x, attrs, fill)
    outs = list(win.shape[2:2 + spatial])
    flat = win.reshape(tuple(win.shape[:2 + spatial]) + (-1,))
    tap = pb.argmax(flat, axis=-1)  # the first maximum
    values = flat.amax(axis=-1)
    tap_np = tap.detach().numpy()
    offsets = np.zeros(tap_np.shape, np.int64)
    column_major = bool(attrs.get("storage_order", 0))
    taps = np.unravel_index(tap_np, kernel)
    stride_of = np.cumprod([1] + sizes[::-1])[:-1][::-1] if not column_major else \
        np.cumprod([1] + sizes)[:-1]
    for i in range(spatial):
        shape = [1] * (2 + spatial)
        shape[2 + i] = outs[i]
        position = (np.arange(outs[i]) * strides[i]).reshape(shape) + taps[i] * dilations[i] \
            - begin[i]
        offsets = offsets + position * int(stride_of[i])
    plane = math.prod(sizes)
    n, c = x.shape[:2]
    offsets = offsets + (np.arange(n * c).reshape(n, c) * plane).reshape(
        (n, c) + (1,) * spatial)
    return values, pb.tensor(offsets.astype(np.int64))


@converter("AveragePool")
def _average_pool(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    """The window's sum over how many of its elements count: the padding too with
    ``count_include_pad``, never the overhang of ``ceil_mode``."""
    x = ins[0]
    spatial = x.ndim - 2
    win, kernel, strides, dilations, begin, end, extra = _pooled(x, attrs, 0.0)
    taps = tuple(range(2 + spatial, 2 + 2 * spatial))
    total = win.sum(axis=taps)
    ones = pb.ones((1, 1) + tuple(x.shape[2:]), dtype=x.dtype)
    include = float(bool(attrs.get("count_include_pad", 0)))
    ones = pad(ones, [0, 0] + begin, [0, 0] + end, "constant", include)
    ones = pad(ones, [0, 0] * 1 + [0] * spatial, [0, 0] + extra, "constant", 0.0)
    count = windows(ones, kernel, strides, dilations, list(win.shape[2:2 + spatial]))
    return [total / count.sum(axis=taps)]


@converter("LpPool")
def _lp_pool(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x = ins[0]
    spatial = x.ndim - 2
    p = float(attrs.get("p", 2))
    win = _pooled(pb.abs(x) ** p, attrs, 0.0)[0]
    return [win.sum(axis=tuple(range(2 + spatial, 2 + 2 * spatial))) ** (1 / p)]


def _global(reduce: str) -> Any:
    def convert(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
        x = ins[0]
        axes = tuple(range(2, x.ndim))
        if reduce == "lp":
            p = float(attrs.get("p", 2))
            return [(pb.abs(x) ** p).sum(axis=axes, keepdims=True) ** (1 / p)]
        return [getattr(x, reduce)(axis=axes, keepdims=True)]
    return convert


converter("GlobalAveragePool")(_global("mean"))
converter("GlobalMaxPool")(_global("amax"))
converter("GlobalLpPool")(_global("lp"))


@converter("MaxUnpool")
def _max_unpool(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    """The values written at their ``Indices`` (offsets in the whole output) of zeros."""
    x, indices = ins[0], ins[1]
    spatial = x.ndim - 2
    if optional(ins, 2) is not None:
        shape = ints(ins[2])
    else:
        kernel, strides, _, begin, end = geometry(x, attrs)
        shape = list(x.shape[:2]) + [(n - 1) * s + k - b - e for n, s, k, b, e in
                                     zip(x.shape[2:], strides, kernel, begin, end)]
    del spatial
    out = pb.zeros((math.prod(shape),), dtype=x.dtype)
    out = out.index_copy(0, indices.reshape((-1,)).to(np.int64), x.reshape((-1,)))
    return [out.reshape(tuple(shape))]
