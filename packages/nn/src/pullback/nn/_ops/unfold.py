"""``nn.im2col`` and ``nn.col2im``: the sliding windows of an (N, C, H, W) input as columns
(PyTorch's ``F.unfold``) and their adjoint, the columns added back into place (``F.fold``).

Each is the other's gradient, so derivatives of any order stay inside the pair. Both reuse the
convolution's window helpers (a strided view and one copy; one strided add per kernel offset)
and, for float32 on the CPU, the same C kernels, after the same geometry checks.

Attributes: ``kernel_size``, ``stride`` and ``dilation`` are ``(h, w)`` pairs, ``padding`` is
``((top, bottom), (left, right))``; ``nn.col2im`` also takes the ``input_shape`` it rebuilds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback.errors import ShapeError
from pullback.registry import Op

from . import _native
from ._call import op_in
from .conv import add_windows, crop, pad_input, windows
from .geometry import Padding, Pair, check_number_dtype, check_output_size, check_windows


def _im2col_kernel(xp: Any) -> Any:
    def im2col(x: Any, *, kernel_size: Pair, stride: Pair, padding: Padding,
               dilation: Pair) -> Any:
        where = "nn.im2col"
        out_hw = check_windows(where, tuple(x.shape), kernel_size, stride, padding, dilation)
        check_number_dtype(where, x)
        cols = NotImplemented
        if xp is np:
            cols = _native.im2col(x, kernel_size, out_hw, stride, padding, dilation)
        if cols is NotImplemented:
            win = windows(xp, pad_input(xp, x, padding), kernel_size, stride, dilation, out_hw)
            cols = xp.ascontiguousarray(win)
        return cols

    return im2col


def _col2im_kernel(xp: Any) -> Any:
    def col2im(cols: Any, *, input_shape: tuple[int, ...], kernel_size: Pair, stride: Pair,
               padding: Padding, dilation: Pair) -> Any:
        where = "nn.col2im"
        if cols.ndim != 6 or len(input_shape) != 4 or tuple(cols.shape[:2]) != tuple(
                input_shape[:2]) or tuple(cols.shape[2:4]) != tuple(kernel_size):
            raise ShapeError(f"{where}: columns of shape {tuple(cols.shape)} do not fit an input "
                             f"of shape {tuple(input_shape)} with kernel {kernel_size}")
        check_output_size(where, tuple(input_shape), kernel_size, stride, padding, dilation,
                          tuple(cols.shape[4:]))
        check_number_dtype(where, cols)
        if xp is np:
            dx = _native.col2im(cols, tuple(input_shape[2:]), stride, padding, dilation)
            if dx is not NotImplemented:
                return dx
        (pt, pb), (pl, pr) = padding
        n, c, h, w = input_shape
        dxpad = xp.zeros((n, c, h + pt + pb, w + pl + pr), dtype=cols.dtype)
        add_windows(xp, dxpad, cols, stride, dilation)
        return crop(xp, dxpad, padding, (h, w))

    return col2im


IM2COL = Op("nn.im2col", _im2col_kernel, save_inputs=False,
            doc="the windows of (N, C, H, W) as (N, C, kh, kw, Ho, Wo) columns (unfold)")
COL2IM = Op("nn.col2im", _col2im_kernel, save_inputs=False,
            doc="columns added back into their windows' positions (fold; im2col's adjoint)")


@IM2COL.def_grad
def _im2col_grad(F: Any, g: Any, out: Any, x: Any, **geometry: Any) -> Any:
    return (op_in(F, COL2IM)(g, input_shape=tuple(x.shape), **geometry),)


@COL2IM.def_grad
def _col2im_grad(F: Any, h: Any, out: Any, cols: Any, *, input_shape: Any,
                 **geometry: Any) -> Any:
    return (op_in(F, IM2COL)(h, **geometry),)
