"""Ops lowered for a compiled program, whose shapes are known when it is built: ``nn.conv2d``,
``nn.max_pool2d``/``nn.max_pool3d`` and ``nn.linear`` (the ``"compiler.lower"`` rules of these
ops).

Eager kernels find each window at every call (a strided view built with ``as_strided``, a
padded copy, the geometry checked again): at batch 1 on a small image that costs more than
the arithmetic (LeNet's convolutions took 20-30 us each, most of it Python). Here the geometry
is fixed once:

* a float32 convolution that eager runs as one GEMM per image (MKL the provider) calls that C
  kernel straight, without the op's dispatch and checks; any other one copies its windows into
  columns (im2col) through a view whose strides are computed when the program is built
  (``np.ndarray`` over the zero-padded input: a quarter of ``as_strided``'s cost), then runs
  the very product and bias add of the eager kernel, on the same columns: the same numbers, bit
  for bit;
* a 2-d float32 max pooling calls eager's C kernel straight; any other reads each window offset
  as a basic slice of the (padded) input and takes the maximum offset by offset in the eager
  kernel's order (raster), in one buffer;
* a linear layer of a 2-d input is the eager kernel's ``x @ w.T`` and ``+= b`` without the
  reshapes and checks around them (a third of its time for one row).

Anything else (another dtype, another backend than NumPy's, an array of another shape) runs
the op's own kernel.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from pullback.registry import get_op

from ._ir import Node

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _eager(node: Node, device: str) -> Callable[..., Any]:
    kernel = get_op(node.op).kernel_for(device)
    attrs = node.attrs
    return lambda *args: kernel(*args, **attrs)


def _product() -> Callable[[Any, Any], Any]:
    """The CPU kernel of ``matmul``: the GEMM provider's product, which eager's kernels call."""
    return get_op("matmul").kernel_for("cpu")


def lower_conv2d(node: Node, device: str) -> Callable[..., Any]:
    """``nn.conv2d``: the eager kernel's columns (im2col) and product, with the windows' view
    built from sizes fixed when the program is built."""
    eager = _eager(node, device)
    x, w = node.inputs[:2]
    if device != "cpu" or x.dtype not in _FLOATS or x.ndim != 4:
        return eager
    attrs = node.attrs
    from pullback.nn._ops import _native_conv

    if _native_conv.runs_per_image(x.dtype, int(attrs.get("groups", 1))):
        return _per_image_conv2d(node, eager)
    n, c, height, width = x.shape
    o, groups = w.shape[0], int(attrs.get("groups", 1))
    kernel, out_hw = tuple(w.shape[2:]), tuple(node.output.shape[2:])
    (top, bottom), (left, right) = attrs["padding"]
    padded_shape = (n, c, height + top + bottom, width + left + right)
    inner = (slice(None), slice(None), slice(top, top + height), slice(left, left + width))
    # the (N, C, kh, kw, Ho, Wo) windows of the padded input, as eager's strided view
    element = np.dtype(x.dtype).itemsize
    hp, wp = padded_shape[2:]
    (sh, sw), (dh, dw) = attrs["stride"], attrs["dilation"]
    window_strides = tuple(element * s for s in (c * hp * wp, hp * wp, wp * dh, dw, wp * sh, sw))
    window_shape = (n, c) + kernel + out_hw
    cols_shape = (n, groups, (c // groups) * math.prod(kernel), math.prod(out_hw))
    w_shape, y_shape = (groups, o // groups, -1), (n, o) + out_hw
    static = (tuple(x.shape), x.dtype)
    padding = top or bottom or left or right
    matmul = _product()

    def conv(x: Any, w: Any, b: Any) -> Any:
        if x.__class__ is not np.ndarray or (x.shape, x.dtype) != static or w.dtype != x.dtype:
            return eager(x, w, b)
        if padding:
            source = np.zeros(padded_shape, x.dtype)
            source[inner] = x
        else:
            source = np.ascontiguousarray(x)
        windows = np.ndarray(window_shape, x.dtype, buffer=source, strides=window_strides)
        cols = np.ascontiguousarray(windows).reshape(cols_shape)
        y = matmul(w.reshape(w_shape), cols).reshape(y_shape)
        if b is not None:
            y += b.reshape(1, -1, 1, 1)
        return y, (cols,)

    return conv


def _per_image_conv2d(node: Node, eager: Callable[..., Any]) -> Callable[..., Any]:
    """A float32 convolution that eager runs as one GEMM per image (``_native_conv``): that
    kernel, called without the op's dispatch and checks (it looks its checked geometry up)."""
    from pullback.nn._ops._native_conv import conv2d

    attrs = node.attrs
    geometry = (tuple(attrs["stride"]), tuple(map(tuple, attrs["padding"])),
                tuple(attrs["dilation"]), int(attrs.get("groups", 1)))
    x = node.inputs[0]
    static = (tuple(x.shape), x.dtype)

    def conv(x: Any, w: Any, b: Any) -> Any:
        if x.__class__ is np.ndarray and (x.shape, x.dtype) == static:
            y = conv2d(x, w, b, *geometry)
            if y is not NotImplemented:
                return y, None
        return eager(x, w, b)

    return conv


def lower_max_pool(node: Node, device: str) -> Callable[..., Any]:
    """``nn.max_pool2d`` and ``nn.max_pool3d``: the maximum over the window offsets, each a
    basic slice of the input padded with the dtype's lowest value."""
    eager = _eager(node, device)
    x = node.inputs[0]
    if device != "cpu" or x.dtype not in _FLOATS:
        return eager
    from pullback.nn._ops.conv import offset_slices, offsets, pad_input

    attrs = node.attrs
    kernel, padding = tuple(attrs["kernel_size"]), attrs["padding"]
    dilation = tuple(attrs.get("dilation", (1,) * len(kernel)))
    out_hw = tuple(node.output.shape[2:])
    first, *rest = [offset_slices(at, attrs["stride"], dilation, out_hw)
                    for at in offsets(kernel)]
    static = (tuple(x.shape), x.dtype)

    from pullback.nn._ops.pool import native_max_pool2d

    in_c = len(kernel) == 2 and x.dtype == np.float32  # eager's C kernel: the same values
    geometry = {"kernel_size": kernel, "stride": tuple(attrs["stride"]),
                "padding": tuple(map(tuple, padding)), "dilation": dilation}

    def max_pool(x: Any) -> Any:
        if x.__class__ is not np.ndarray or (x.shape, x.dtype) != static:
            return eager(x)
        if in_c:
            y = native_max_pool2d(x, **geometry)
            if y is not NotImplemented:
                return y
        source = pad_input(np, x, padding, -np.inf)
        best = source[first].copy()
        for window in rest:
            np.maximum(best, source[window], out=best)
        return best

    return max_pool


def lower_linear(node: Node, device: str) -> Callable[..., Any]:
    """``nn.linear`` of a 2-d input: ``x @ w.T`` (then ``+= b``), the eager kernel's product."""
    eager = _eager(node, device)
    x, w = node.inputs[:2]
    if device != "cpu" or x.dtype not in _FLOATS or x.ndim != 2 or w.dtype != x.dtype:
        return eager
    static = (tuple(x.shape), x.dtype)
    matmul = _product()

    def linear(x: Any, w: Any, b: Any) -> Any:
        if x.__class__ is not np.ndarray or (x.shape, x.dtype) != static or w.dtype != x.dtype:
            return eager(x, w, b)
        y = matmul(x, w.T)
        if b is not None:
            y += b
        return y

    return linear


STATIC_LOWERINGS: dict[str, Callable[[Node, str], Callable[..., Any]]] = {
    "nn.conv2d": lower_conv2d, "nn.max_pool2d": lower_max_pool, "nn.max_pool3d": lower_max_pool,
    "nn.linear": lower_linear,
}
