"""2-d convolution as three fused ops that are each other's gradients.

Write the convolution as a trilinear form ``B(x, w, g) = sum g[n,o,i,j] w[o,c,p,q] x[n,c,i',j']``
(with ``i' = i*stride + p*dilation - pad``). Then

* ``nn.conv2d(x, w)``             = dB/dg  (the forward pass),
* ``nn.conv2d_input_grad(g, w)``  = dB/dx  (also the transposed convolution),
* ``nn.conv2d_weight_grad(x, g)`` = dB/dw,

and the gradient of each is made of the other two, so derivatives of any order stay inside these
three ops. Kernels use im2col: a strided *view* of the padded input holds every window, one copy
turns it into a matrix, and one batched GEMM (``xp.matmul``) does the arithmetic. The input
gradient is a GEMM followed by ``kh*kw`` strided adds (col2im).

Attributes: ``stride`` and ``dilation`` are ``(h, w)`` pairs, ``padding`` is
``((top, bottom), (left, right))`` (PyTorch's ``"same"`` can be asymmetric), ``groups`` an int.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback.errors import ShapeError
from pullback.promotion import SAME
from pullback.registry import Op

from . import _native
from ._call import op_in
from .geometry import Padding, Pair, check_output_size, check_same_dtype, check_windows

def pad_input(xp: Any, x: Any, padding: Padding, value: float = 0.0) -> Any:
    """``x`` (N, C, H, W) padded on H and W (no copy when there is no padding)."""
    (pt, pb), (pl, pr) = padding
    if not (pt or pb or pl or pr):
        return x
    n, c, h, w = x.shape
    out = xp.full((n, c, h + pt + pb, w + pl + pr), value, dtype=x.dtype)
    out[:, :, pt:pt + h, pl:pl + w] = x
    return out


def windows(xp: Any, xpad: Any, kernel: Pair, stride: Pair, dilation: Pair, out_hw: Pair) -> Any:
    """A view (N, C, kh, kw, Ho, Wo) of every window of the padded input (windows overlap:
    never write through it). The geometry is checked first: a view that reached outside
    ``xpad`` would read (and crash on) memory that is not the array's."""
    check_output_size("windows", tuple(xpad.shape), kernel, stride, ((0, 0), (0, 0)), dilation,
                      out_hw)
    n, c = xpad.shape[:2]
    s_n, s_c, s_h, s_w = xpad.strides
    return xp.lib.stride_tricks.as_strided(
        xpad,
        shape=(n, c, kernel[0], kernel[1], out_hw[0], out_hw[1]),
        strides=(s_n, s_c, s_h * dilation[0], s_w * dilation[1], s_h * stride[0], s_w * stride[1]),
    )


def add_windows(xp: Any, dxpad: Any, cols: Any, stride: Pair, dilation: Pair) -> None:
    """col2im: add ``cols`` (N, C, kh, kw, Ho, Wo) back into the padded input's positions."""
    kh, kw, ho, wo = cols.shape[2:]
    for p in range(kh):
        r = p * dilation[0]
        rows = slice(r, r + stride[0] * (ho - 1) + 1, stride[0])
        for q in range(kw):
            c = q * dilation[1]
            dxpad[:, :, rows, c:c + stride[1] * (wo - 1) + 1:stride[1]] += cols[:, :, p, q]


def crop(xp: Any, xpad: Any, padding: Padding, hw: Pair) -> Any:
    """Undo :func:`pad_input` (a contiguous copy when there was padding)."""
    (pt, _), (pl, _) = padding
    if xpad.shape[2:] == tuple(hw):
        return xpad
    return xp.ascontiguousarray(xpad[:, :, pt:pt + hw[0], pl:pl + hw[1]])


def _im2col(xp: Any, x: Any, kernel: Pair, stride: Pair, padding: Padding, dilation: Pair,
            groups: int, where: str) -> tuple[Any, Pair]:
    """The windows of ``x`` as matrices (N, groups, C/groups*kh*kw, Ho*Wo), and (Ho, Wo)."""
    out_hw = check_windows(where, tuple(x.shape), kernel, stride, padding, dilation)
    n, c = x.shape[:2]
    if not isinstance(groups, int) or groups < 1 or c % groups:
        raise ShapeError(f"{where}: groups={groups!r} must be a positive divisor of the input's "
                         f"{c} channels")
    win = _native.im2col(x, kernel, out_hw, stride, padding, dilation) if xp is np else NotImplemented
    if win is NotImplemented:
        win = windows(xp, pad_input(xp, x, padding), kernel, stride, dilation, out_hw)
    cols = win.reshape(n, groups, (c // groups) * kernel[0] * kernel[1], out_hw[0] * out_hw[1])
    return cols, out_hw


def _convolve(xp: Any, x: Any, w: Any, stride: Pair, padding: Padding, dilation: Pair,
              groups: int) -> tuple[Any, Any]:
    """The convolution (N, O, Ho, Wo) without bias, and the im2col matrices it used."""
    where = "nn.conv2d"
    if w.ndim != 4:
        raise ShapeError(f"{where}: expected a 4-d (O, C/groups, kh, kw) weight, got shape "
                         f"{tuple(w.shape)}")
    o = w.shape[0]
    cols, (ho, wo) = _im2col(xp, x, tuple(w.shape[2:]), stride, padding, dilation, groups, where)
    wmat = w.reshape(groups, o // groups, -1)
    y = xp.matmul(wmat, cols).reshape(x.shape[0], o, ho, wo)
    # ml_dtypes' bfloat16 matmul returns float32; give back the input's dtype.
    return (y if y.dtype == x.dtype else y.astype(x.dtype)), cols


def _conv2d_kernel(xp: Any) -> Any:
    def conv2d(x: Any, w: Any, b: Any, *, stride: Pair, padding: Padding, dilation: Pair,
               groups: int) -> Any:
        check_same_dtype("nn.conv2d", ("input", x), ("weight", w), ("bias", b))
        y, cols = _convolve(xp, x, w, stride, padding, dilation, groups)
        if b is not None:
            y += b.reshape(1, -1, 1, 1)
        return y, (cols,)

    return conv2d


def _flipped_transposed(xp: Any, w: Any, groups: int) -> Any:
    """The weight of the convolution that computes conv2d's input gradient (stride 1):
    in and out channels swapped within each group, kernel rotated by 180 degrees."""
    o, cg, kh, kw = w.shape
    per_group = w.reshape(groups, o // groups, cg, kh, kw).transpose(0, 2, 1, 3, 4)
    return xp.ascontiguousarray(per_group[..., ::-1, ::-1]).reshape(groups * cg, o // groups, kh, kw)


def _input_grad_kernel(xp: Any) -> Any:
    def conv2d_input_grad(g: Any, w: Any, *, input_shape: tuple[int, ...], stride: Pair,
                          padding: Padding, dilation: Pair, groups: int) -> Any:
        where = "nn.conv2d_input_grad"
        if g.ndim != 4 or w.ndim != 4:
            raise ShapeError(f"{where}: expected a 4-d gradient and weight, got shapes "
                             f"{tuple(g.shape)} and {tuple(w.shape)}")
        check_same_dtype(where, ("grad_output", g), ("weight", w))
        n, o, ho, wo = g.shape
        kh, kw = w.shape[2:]
        check_output_size(where, tuple(input_shape), (kh, kw), stride, padding, dilation,
                          (ho, wo))
        c, h, wi = input_shape[1:]
        reach = (dilation[0] * (kh - 1), dilation[1] * (kw - 1))
        # Padding of g that makes the stride-1 convolution come out at the input's size (rows
        # of the input that no window reached, e.g. a transposed conv's output_padding, get 0).
        full = ((reach[0] - padding[0][0], h - ho + padding[0][0]),
                (reach[1] - padding[1][0], wi - wo + padding[1][0]))
        # With stride 1 the input gradient is itself a convolution (of g, fully padded, with the
        # rotated weight): one im2col and one GEMM. The other way is a GEMM and col2im, whose
        # matrix is smaller when the layer widens (O * H * W > C * Ho * Wo), as in LeNet's conv2.
        im2col_larger = o * h * wi > c * ho * wo
        if stride == (1, 1) and min(full[0] + full[1]) >= 0 and not im2col_larger:
            dx, _ = _convolve(xp, g, _flipped_transposed(xp, w, groups), (1, 1), full, dilation,
                              groups)
            return dx
        wmat = w.reshape(groups, o // groups, -1)
        gmat = g.reshape(n, groups, o // groups, ho * wo)
        cols = xp.matmul(wmat.transpose(0, 2, 1), gmat).reshape(n, c, kh, kw, ho, wo)
        if xp is np:
            dx = _native.col2im(cols, (h, wi), stride, padding, dilation)
            if dx is not NotImplemented:
                return dx
        (pt, pb), (pl, pr) = padding
        dxpad = xp.zeros((n, c, h + pt + pb, wi + pl + pr), dtype=cols.dtype)
        add_windows(xp, dxpad, cols, stride, dilation)
        return crop(xp, dxpad, padding, (h, wi)).astype(g.dtype, copy=False)

    return conv2d_input_grad


def _weight_grad_from_cols(F: Any, g: Any, cols: Any, weight_shape: tuple[int, ...],
                           groups: int) -> Any:
    """dB/dw from the input's im2col matrices: one batched GEMM, summed over the batch."""
    n, o = g.shape[:2]
    gmat = F.reshape(g, shape=(n, groups, o // groups, cols.shape[-1]))
    per_image = F.matmul(gmat, F.swapaxes(cols, a=-1, b=-2))
    return F.reshape(F.sum(per_image, axis=0), shape=tuple(weight_shape))


def _weight_grad_kernel(xp: Any) -> Any:
    def conv2d_weight_grad(x: Any, g: Any, *, weight_shape: tuple[int, ...], stride: Pair,
                           padding: Padding, dilation: Pair, groups: int) -> Any:
        where = "nn.conv2d_weight_grad"
        check_same_dtype(where, ("input", x), ("grad_output", g))
        if g.ndim != 4 or len(weight_shape) != 4:
            raise ShapeError(f"{where}: expected a 4-d gradient and weight shape, got "
                             f"{tuple(g.shape)} and {tuple(weight_shape)}")
        check_output_size(where, tuple(x.shape), tuple(weight_shape[2:]), stride, padding,
                          dilation, tuple(g.shape[2:]))
        cols, _ = _im2col(xp, x, tuple(weight_shape[2:]), stride, padding, dilation, groups,
                          where)
        n, o = g.shape[:2]
        gmat = g.reshape(n, groups, o // groups, cols.shape[-1])
        dw = xp.matmul(gmat, cols.transpose(0, 1, 3, 2)).sum(axis=0).reshape(weight_shape)
        return dw.astype(x.dtype, copy=False)

    return conv2d_weight_grad


CONV2D = Op("nn.conv2d", _conv2d_kernel, aux=True, promotion=SAME,
            doc="2-d convolution (im2col + GEMM), optional bias")
CONV2D_INPUT_GRAD = Op("nn.conv2d_input_grad", _input_grad_kernel,
                       doc="adjoint of conv2d in its input (transposed convolution)")
CONV2D_WEIGHT_GRAD = Op("nn.conv2d_weight_grad", _weight_grad_kernel,
                        doc="adjoint of conv2d in its weight")


@CONV2D.def_grad
def _conv2d_grad(F: Any, g: Any, out: Any, x: Any, w: Any, b: Any, *, stride: Pair,
                 padding: Padding, dilation: Pair, groups: int, needs: Any,
                 saved: Any = None) -> Any:
    geometry = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    gx = gw = gb = None
    if needs[0]:
        gx = op_in(F, CONV2D_INPUT_GRAD)(g, w, input_shape=tuple(x.shape), **geometry)
    if needs[1]:
        if saved is not None and not F.differentiable:
            gw = _weight_grad_from_cols(F, g, saved[0], tuple(w.shape), groups)
        else:
            gw = op_in(F, CONV2D_WEIGHT_GRAD)(x, g, weight_shape=tuple(w.shape), **geometry)
    if needs[2]:
        gb = F.sum(g, axis=(0, 2, 3))
    return gx, gw, gb


@CONV2D_INPUT_GRAD.def_grad
def _input_grad_grad(F: Any, h: Any, out: Any, g: Any, w: Any, *, input_shape: Any,
                     stride: Pair, padding: Padding, dilation: Pair, groups: int,
                     needs: Any) -> Any:
    geometry = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    gg = op_in(F, CONV2D)(h, w, None, **geometry) if needs[0] else None
    gw = (op_in(F, CONV2D_WEIGHT_GRAD)(h, g, weight_shape=tuple(w.shape), **geometry)
          if needs[1] else None)
    return gg, gw


@CONV2D_WEIGHT_GRAD.def_grad
def _weight_grad_grad(F: Any, h: Any, out: Any, x: Any, g: Any, *, weight_shape: Any,
                      stride: Pair, padding: Padding, dilation: Pair, groups: int,
                      needs: Any) -> Any:
    geometry = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    gx = (op_in(F, CONV2D_INPUT_GRAD)(g, h, input_shape=tuple(x.shape), **geometry)
          if needs[0] else None)
    gg = op_in(F, CONV2D)(x, h, None, **geometry) if needs[1] else None
    return gx, gg
