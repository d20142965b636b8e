"""2-d and 3-d convolution, each as three fused ops that are each other's gradients.

Write the convolution as a trilinear form ``B(x, w, g) = sum g[n,o,i,j] w[o,c,p,q] x[n,c,i',j']``
(with ``i' = i*stride + p*dilation - pad``; in 3-d one more axis). Then

* ``nn.conv2d(x, w)``             = dB/dg  (the forward pass),
* ``nn.conv2d_input_grad(g, w)``  = dB/dx  (also the transposed convolution),
* ``nn.conv2d_weight_grad(x, g)`` = dB/dw,

(``nn.conv3d``... likewise) and the gradient of each is made of the other two, so derivatives
of any order stay inside these three ops. Kernels use im2col: a strided *view* of the padded
input holds every window, one copy turns it into a matrix, and one batched GEMM (the backend's
``matmul`` kernel: on the CPU, the process's GEMM provider) does the arithmetic. The input
gradient is a GEMM followed by one strided add per kernel offset (col2im). The 2-d ops use the C
im2col/col2im for float32 on the CPU; the 1-d convolutions are 2-d ones of height 1.

Attributes: ``stride`` and ``dilation`` have one int per spatial axis, ``padding`` one
``(before, after)`` pair per axis (PyTorch's ``"same"`` can be asymmetric; in 2-d
``((top, bottom), (left, right))``), ``groups`` is an int.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from pullback.errors import ShapeError
from pullback.promotion import SAME
from pullback.registry import Op

from . import _native, _native_conv
from ._call import op_in
from ._matmul import matmul_for
from .geometry import PaddingNd, Sizes, check_output_size, check_same_dtype, check_windows


def pad_input(xp: Any, x: Any, padding: PaddingNd, value: float = 0.0) -> Any:
    """``x`` (N, C, *spatial) padded on its spatial axes (no copy when there is no padding)."""
    if not any(v for p in padding for v in p):
        return x
    shape = tuple(x.shape[:2]) + tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], padding))
    out = xp.full(shape, value, dtype=x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(lo, lo + s)
                                           for s, (lo, _) in zip(x.shape[2:], padding))] = x
    return out


def windows(xp: Any, xpad: Any, kernel: Sizes, stride: Sizes, dilation: Sizes,
            out_hw: Sizes) -> Any:
    """A view (N, C, *kernel, *out) of every window of the padded input ((N, C, kh, kw, Ho, Wo)
    in 2-d; windows overlap: never write through it). The geometry is checked first: a view
    that reached outside ``xpad`` would read (and crash on) memory that is not the array's."""
    rank = len(kernel)
    check_output_size("windows", tuple(xpad.shape), kernel, stride, ((0, 0),) * rank, dilation,
                      out_hw)
    spatial = xpad.strides[2:]
    return xp.lib.stride_tricks.as_strided(
        xpad,
        shape=tuple(xpad.shape[:2]) + tuple(kernel) + tuple(out_hw),
        strides=(tuple(xpad.strides[:2]) + tuple(s * d for s, d in zip(spatial, dilation))
                 + tuple(s * st for s, st in zip(spatial, stride))),
    )


def offsets(kernel: Sizes) -> Any:
    """Every window offset of a kernel, in PyTorch's (raster) order."""
    return itertools.product(*(range(k) for k in kernel))


def offset_slices(offset: Sizes, stride: Sizes, dilation: Sizes, out_hw: Sizes) -> tuple:
    """The index of the padded input's positions that window offset ``offset`` reads, one per
    window: ``[:, :, o*d : o*d + s*(n-1) + 1 : s, ...]``."""
    return (slice(None), slice(None)) + tuple(
        slice(o * d, o * d + s * (n - 1) + 1, s)
        for o, s, d, n in zip(offset, stride, dilation, out_hw))


def add_windows(xp: Any, dxpad: Any, cols: Any, stride: Sizes, dilation: Sizes) -> None:
    """col2im: add ``cols`` (N, C, *kernel, *out) back into the padded input's positions."""
    rank = cols.ndim // 2 - 1
    kernel, out_hw = cols.shape[2:2 + rank], cols.shape[2 + rank:]
    for offset in offsets(kernel):
        dxpad[offset_slices(offset, stride, dilation, out_hw)] += cols[(slice(None),) * 2 + offset]


def crop(xp: Any, xpad: Any, padding: PaddingNd, hw: Sizes) -> Any:
    """Undo :func:`pad_input` (a contiguous copy when there was padding)."""
    if xpad.shape[2:] == tuple(hw):
        return xpad
    key = (slice(None), slice(None)) + tuple(slice(lo, lo + s) for (lo, _), s in zip(padding, hw))
    return xp.ascontiguousarray(xpad[key])


def _check_groups(where: str, groups: Any, channels: int) -> None:
    if not isinstance(groups, int) or groups < 1 or channels % groups:
        raise ShapeError(f"{where}: groups={groups!r} must be a positive divisor of the input's "
                         f"{channels} channels")


def _im2col(xp: Any, x: Any, kernel: Sizes, stride: Sizes, padding: PaddingNd, dilation: Sizes,
            groups: int, where: str) -> tuple[Any, Sizes]:
    """The windows of ``x`` as matrices (N, groups, C/groups*prod(kernel), prod(out)), and the
    number of windows along each axis."""
    out_hw = check_windows(where, tuple(x.shape), kernel, stride, padding, dilation)
    n, c = x.shape[:2]
    _check_groups(where, groups, c)
    win = NotImplemented
    if xp is np and len(kernel) == 2:  # the C im2col is 2-d
        win = _native.im2col(x, kernel, out_hw, stride, padding, dilation)
    if win is NotImplemented:
        win = windows(xp, pad_input(xp, x, padding), kernel, stride, dilation, out_hw)
    cols = win.reshape(n, groups, (c // groups) * math.prod(kernel), math.prod(out_hw))
    return cols, out_hw


def _check_weight(where: str, w: Any, rank: int) -> None:
    if w.ndim != 2 + rank:
        spatial = "kh, kw" if rank == 2 else ", ".join(f"k{a}" for a in range(rank))
        raise ShapeError(f"{where}: expected a {2 + rank}-d (O, C/groups, {spatial}) weight, got "
                         f"shape {tuple(w.shape)}")


def _convolve(xp: Any, x: Any, w: Any, stride: Sizes, padding: PaddingNd, dilation: Sizes,
              groups: int, where: str) -> tuple[Any, Any]:
    """The convolution (N, O, *out) without bias, and the im2col matrices it used."""
    _check_weight(where, w, len(stride))
    o = w.shape[0]
    cols, out_hw = _im2col(xp, x, tuple(w.shape[2:]), stride, padding, dilation, groups, where)
    wmat = w.reshape(groups, o // groups, -1)
    y = matmul_for(xp)(wmat, cols).reshape((x.shape[0], o) + tuple(out_hw))
    # ml_dtypes' bfloat16 matmul returns float32; give back the input's dtype.
    return (y if y.dtype == x.dtype else y.astype(x.dtype)), cols


def _conv_kernel(where: str) -> Any:
    def factory(xp: Any) -> Any:
        def conv(x: Any, w: Any, b: Any, *, stride: Sizes, padding: PaddingNd,
                 dilation: Sizes, groups: int) -> Any:
            if xp is np and len(stride) == 2:
                # one GEMM per image, bias added in C (the backward rebuilds the columns it
                # needs); its checks are cached per geometry: what a batch-1 call pays
                y = _native_conv.conv2d(x, w, b, stride, padding, dilation, groups, where)
                if y is not NotImplemented:
                    return y, None
            check_same_dtype(where, ("input", x), ("weight", w), ("bias", b))
            y, cols = _convolve(xp, x, w, stride, padding, dilation, groups, where)
            if b is not None:
                y += b.reshape((1, -1) + (1,) * len(stride))
            return y, (cols,)

        return conv

    return factory


def _flipped_transposed(xp: Any, w: Any, groups: int) -> Any:
    """The weight of the convolution that computes conv's input gradient (stride 1): in and
    out channels swapped within each group, kernel rotated by 180 degrees on every axis."""
    o, cg = w.shape[:2]
    kernel = tuple(w.shape[2:])
    per_group = w.reshape((groups, o // groups, cg) + kernel).swapaxes(1, 2)
    flipped = per_group[(Ellipsis,) + (slice(None, None, -1),) * len(kernel)]
    return xp.ascontiguousarray(flipped).reshape((groups * cg, o // groups) + kernel)


def _input_grad_kernel(where: str) -> Any:
    def factory(xp: Any) -> Any:
        def conv_input_grad(g: Any, w: Any, *, input_shape: tuple[int, ...], stride: Sizes,
                            padding: PaddingNd, dilation: Sizes, groups: int) -> Any:
            rank = len(stride)
            if g.ndim != 2 + rank or w.ndim != 2 + rank:
                raise ShapeError(f"{where}: expected a {2 + rank}-d gradient and weight, got "
                                 f"shapes {tuple(g.shape)} and {tuple(w.shape)}")
            check_same_dtype(where, ("grad_output", g), ("weight", w))
            n, o = g.shape[:2]
            out_hw, kernel = tuple(g.shape[2:]), tuple(w.shape[2:])
            check_output_size(where, tuple(input_shape), kernel, stride, padding, dilation,
                              out_hw)
            if xp is np and rank == 2:
                dx = _native_conv.conv2d_input_grad(g, w, tuple(input_shape), stride, padding,
                                                    dilation, groups)
                if dx is not NotImplemented:
                    return dx
            c, spatial = input_shape[1], tuple(input_shape[2:])
            # Padding of g that makes the stride-1 convolution come out at the input's size
            # (positions of the input that no window reached, e.g. a transposed conv's
            # output_padding, get 0).
            full = tuple((d * (k - 1) - lo, size - out + lo) for d, k, (lo, _), size, out
                         in zip(dilation, kernel, padding, spatial, out_hw))
            # With stride 1 the input gradient is itself a convolution (of g, fully padded, with
            # the rotated weight): one im2col and one GEMM. The other way is a GEMM and col2im,
            # whose matrix is smaller when the layer widens (O * H * W > C * Ho * Wo), as in
            # LeNet's conv2.
            im2col_larger = o * math.prod(spatial) > c * math.prod(out_hw)
            if (all(s == 1 for s in stride) and min(v for p in full for v in p) >= 0
                    and not im2col_larger):
                dx, _ = _convolve(xp, g, _flipped_transposed(xp, w, groups), stride, full,
                                  dilation, groups, where)
                return dx
            _check_groups(where, groups, c)
            wmat = w.reshape(groups, o // groups, -1)
            gmat = g.reshape(n, groups, o // groups, math.prod(out_hw))
            cols = matmul_for(xp)(wmat.transpose(0, 2, 1), gmat).reshape((n, c) + kernel + out_hw)
            if xp is np and rank == 2:  # the C col2im is 2-d
                dx = _native.col2im(cols, spatial, stride, padding, dilation)
                if dx is not NotImplemented:
                    return dx
            padded = tuple(size + lo + hi for size, (lo, hi) in zip(spatial, padding))
            dxpad = xp.zeros((n, c) + padded, dtype=cols.dtype)
            add_windows(xp, dxpad, cols, stride, dilation)
            return crop(xp, dxpad, padding, spatial).astype(g.dtype, copy=False)

        return conv_input_grad

    return factory


def _weight_grad_from_cols(F: Any, g: Any, cols: Any, weight_shape: tuple[int, ...],
                           groups: int) -> Any:
    """dB/dw from the input's im2col matrices: one batched GEMM, summed over the batch."""
    n, o = g.shape[:2]
    gmat = F.reshape(g, shape=(n, groups, o // groups, cols.shape[-1]))
    per_image = F.matmul(gmat, F.swapaxes(cols, a=-1, b=-2))
    return F.reshape(F.sum(per_image, axis=0), shape=tuple(weight_shape))


def _weight_grad_kernel(where: str) -> Any:
    def factory(xp: Any) -> Any:
        def conv_weight_grad(x: Any, g: Any, *, weight_shape: tuple[int, ...], stride: Sizes,
                             padding: PaddingNd, dilation: Sizes, groups: int) -> Any:
            rank = len(stride)
            check_same_dtype(where, ("input", x), ("grad_output", g))
            if g.ndim != 2 + rank or len(weight_shape) != 2 + rank:
                raise ShapeError(f"{where}: expected a {2 + rank}-d gradient and weight shape, "
                                 f"got {tuple(g.shape)} and {tuple(weight_shape)}")
            kernel = tuple(weight_shape[2:])
            check_output_size(where, tuple(x.shape), kernel, stride, padding, dilation,
                              tuple(g.shape[2:]))
            if xp is np and rank == 2:
                dw = _native_conv.conv2d_weight_grad(x, g, tuple(weight_shape), stride, padding,
                                                     dilation, groups)
                if dw is not NotImplemented:
                    return dw
            cols, _ = _im2col(xp, x, kernel, stride, padding, dilation, groups, where)
            n, o = g.shape[:2]
            gmat = g.reshape(n, groups, o // groups, cols.shape[-1])
            dw = matmul_for(xp)(gmat, cols.transpose(0, 1, 3, 2)).sum(axis=0).reshape(weight_shape)
            return dw.astype(x.dtype, copy=False)

        return conv_weight_grad

    return factory


def _declare(name: str, rank: int) -> tuple[Op, Op, Op]:
    """The three ops of a ``rank``-d convolution (forward, input and weight adjoints), each
    with a grad rule made of the other two."""
    conv = Op(name, _conv_kernel(name), aux=True, promotion=SAME,
              doc=f"{rank}-d convolution (im2col + GEMM), optional bias")
    input_grad = Op(f"{name}_input_grad", _input_grad_kernel(f"{name}_input_grad"),
                    doc=f"adjoint of {name[3:]} in its input (transposed convolution)")
    weight_grad = Op(f"{name}_weight_grad", _weight_grad_kernel(f"{name}_weight_grad"),
                     doc=f"adjoint of {name[3:]} in its weight")
    spatial_axes = tuple(range(2, 2 + rank))

    @conv.def_grad
    def _conv_grad(F: Any, g: Any, out: Any, x: Any, w: Any, b: Any, *, stride: Sizes,
                   padding: PaddingNd, dilation: Sizes, groups: int, needs: Any,
                   saved: Any = None) -> Any:
        geometry = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
        gx = gw = gb = None
        if needs[0]:
            gx = op_in(F, input_grad)(g, w, input_shape=tuple(x.shape), **geometry)
        if needs[1]:
            if saved is not None and not F.differentiable:
                gw = _weight_grad_from_cols(F, g, saved[0], tuple(w.shape), groups)
            else:
                gw = op_in(F, weight_grad)(x, g, weight_shape=tuple(w.shape), **geometry)
        if needs[2]:
            gb = F.sum(g, axis=(0,) + spatial_axes)
        return gx, gw, gb

    @input_grad.def_grad
    def _input_grad_grad(F: Any, h: Any, out: Any, g: Any, w: Any, *, input_shape: Any,
                         stride: Sizes, padding: PaddingNd, dilation: Sizes, groups: int,
                         needs: Any) -> Any:
        geometry = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
        gg = op_in(F, conv)(h, w, None, **geometry) if needs[0] else None
        gw = (op_in(F, weight_grad)(h, g, weight_shape=tuple(w.shape), **geometry)
              if needs[1] else None)
        return gg, gw

    @weight_grad.def_grad
    def _weight_grad_grad(F: Any, h: Any, out: Any, x: Any, g: Any, *, weight_shape: Any,
                          stride: Sizes, padding: PaddingNd, dilation: Sizes, groups: int,
                          needs: Any) -> Any:
        geometry = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
        gx = (op_in(F, input_grad)(g, h, input_shape=tuple(x.shape), **geometry)
              if needs[0] else None)
        gg = op_in(F, conv)(x, h, None, **geometry) if needs[1] else None
        return gx, gg

    return conv, input_grad, weight_grad


CONV2D, CONV2D_INPUT_GRAD, CONV2D_WEIGHT_GRAD = _declare("nn.conv2d", 2)
CONV3D, CONV3D_INPUT_GRAD, CONV3D_WEIGHT_GRAD = _declare("nn.conv3d", 3)
