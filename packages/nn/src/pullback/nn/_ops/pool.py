"""2-d pooling: ``nn.max_pool2d`` and ``nn.avg_pool2d``, each with the linear ops that form its
backward.

Max pooling routes the gradient to the first maximum of each window (PyTorch's choice for ties).
Its backward ``nn.max_pool2d_backward(g, x, out)`` finds those positions by comparing each window
offset of ``x`` with the pooled ``out`` (nothing is saved, so inference never pays for it) and
spreads ``g`` back to them. Its adjoint, ``nn.max_pool2d_select(h, x, out)``, reads ``h`` at the
same positions: the two are each other's gradients, so ``create_graph`` works through max
pooling (``x`` and ``out`` only locate the maxima, which are piecewise constant).
Average pooling is linear; it and its adjoint ``nn.avg_pool2d_grad`` are each other's gradients.

All kernels loop over the ``kh*kw`` window offsets with strided views (no im2col copy, no
scatter-add). Attributes: ``kernel_size``, ``stride`` and ``dilation`` are ``(h, w)`` pairs,
``padding`` is ``((top, bottom), (left, right))``.
"""

from __future__ import annotations

from typing import Any

from pullback.errors import ShapeError
from pullback.registry import Op

from ._call import op_in
from .conv import add_windows, crop, pad_input, windows
from .geometry import Padding, Pair, check_number_dtype, check_output_size, check_windows


def _window_view(xp: Any, x: Any, kernel: Pair, stride: Pair, padding: Padding,
                 dilation: Pair, where: str) -> Any:
    """The (N, C, kh, kw, Ho, Wo) windows of ``x`` padded with the dtype's lowest value."""
    out_hw = check_windows(where, tuple(x.shape), kernel, stride, padding, dilation)
    check_number_dtype(where, x)
    low = -xp.inf if x.dtype.kind in "fV" else xp.iinfo(x.dtype).min
    return windows(xp, pad_input(xp, x, padding, low), kernel, stride, dilation, out_hw)


def _check_pooled(where: str, x: Any, kernel: Pair, stride: Pair, padding: Padding,
                  dilation: Pair, *pooled: Any) -> None:
    """Check that each of ``pooled`` (a gradient, the pooled maxima) has the pooled shape."""
    for p in pooled:
        if p.shape[:2] != x.shape[:2]:
            raise ShapeError(f"{where}: pooled shape {tuple(p.shape)} does not fit input "
                             f"{tuple(x.shape)}")
        check_output_size(where, tuple(x.shape), kernel, stride, padding, dilation,
                          tuple(p.shape[2:]))


def _max_pool_kernel(xp: Any) -> Any:
    def max_pool2d(x: Any, *, kernel_size: Pair, stride: Pair, padding: Padding,
                   dilation: Pair) -> Any:
        win = _window_view(xp, x, kernel_size, stride, padding, dilation, "nn.max_pool2d")
        best = win[:, :, 0, 0].copy()
        for p in range(kernel_size[0]):
            for q in range(kernel_size[1]):
                if p or q:
                    xp.maximum(best, win[:, :, p, q], out=best)
        return best

    return max_pool2d


def _first_max_masks(xp: Any, win: Any, out: Any) -> Any:
    """For each window offset (p, q) in order, yield (p, q, mask of windows whose first maximum
    sits there): equal to the max and not claimed by an earlier offset (PyTorch's tie rule)."""
    taken = None
    for p in range(win.shape[2]):
        for q in range(win.shape[3]):
            hit = win[:, :, p, q] == out
            if taken is None:
                taken = hit
            else:
                hit &= ~taken
                taken |= hit
            yield p, q, hit


def _max_pool_backward_kernel(xp: Any) -> Any:
    def max_pool2d_backward(g: Any, x: Any, out: Any, *, kernel_size: Pair, stride: Pair,
                            padding: Padding, dilation: Pair) -> Any:
        where = "nn.max_pool2d_backward"
        win = _window_view(xp, x, kernel_size, stride, padding, dilation, where)
        _check_pooled(where, x, kernel_size, stride, padding, dilation, g, out)
        n, c, h, w = x.shape
        (pt, pb), (pl, pr) = padding
        dxpad = xp.zeros((n, c, h + pt + pb, w + pl + pr), dtype=g.dtype)
        ho, wo = g.shape[2:]
        # Windows that do not overlap write disjoint positions: multiply straight into place.
        disjoint = all(s >= d * (k - 1) + 1 for s, d, k in zip(stride, dilation, kernel_size))
        for p, q, hit in _first_max_masks(xp, win, out):
            r, s = p * dilation[0], q * dilation[1]
            target = dxpad[:, :, r:r + stride[0] * (ho - 1) + 1:stride[0],
                           s:s + stride[1] * (wo - 1) + 1:stride[1]]
            if disjoint:
                xp.multiply(g, hit, out=target)
            else:
                target += g * hit
        return crop(xp, dxpad, padding, (h, w))

    return max_pool2d_backward


def _max_pool_select_kernel(xp: Any) -> Any:
    def max_pool2d_select(h: Any, x: Any, out: Any, *, kernel_size: Pair, stride: Pair,
                          padding: Padding, dilation: Pair) -> Any:
        where = "nn.max_pool2d_select"
        win = _window_view(xp, x, kernel_size, stride, padding, dilation, where)
        _check_pooled(where, x, kernel_size, stride, padding, dilation, out)
        if h.shape != x.shape:
            raise ShapeError(f"{where}: h of shape {tuple(h.shape)} must have the input's shape "
                             f"{tuple(x.shape)}")
        values = windows(xp, pad_input(xp, h, padding), kernel_size, stride, dilation,
                         out.shape[2:])
        picked = xp.zeros(out.shape, dtype=h.dtype)
        for p, q, hit in _first_max_masks(xp, win, out):
            xp.copyto(picked, values[:, :, p, q], where=hit)
        return picked

    return max_pool2d_select


MAX_POOL2D = Op("nn.max_pool2d", _max_pool_kernel, save_output=True, doc="max over 2-d windows")
MAX_POOL2D_BACKWARD = Op("nn.max_pool2d_backward", _max_pool_backward_kernel,
                         doc="g(out) spread back to each window's first max in x")
MAX_POOL2D_SELECT = Op("nn.max_pool2d_select", _max_pool_select_kernel,
                       doc="h read at each window's first max in x (adjoint of the backward)")


@MAX_POOL2D.def_grad
def _max_pool_grad(F: Any, g: Any, out: Any, x: Any, **geometry: Any) -> Any:
    return (op_in(F, MAX_POOL2D_BACKWARD)(g, x, out, **geometry),)


@MAX_POOL2D_BACKWARD.def_grad
def _max_pool_backward_grad(F: Any, h: Any, out: Any, g: Any, x: Any, pooled: Any,
                            **geometry: Any) -> Any:
    # x and the pooled maxima only say *where* the maxima are: piecewise constant, no gradient.
    return (op_in(F, MAX_POOL2D_SELECT)(h, x, pooled, **geometry), None, None)


@MAX_POOL2D_SELECT.def_grad
def _max_pool_select_grad(F: Any, g: Any, out: Any, h: Any, x: Any, pooled: Any,
                          **geometry: Any) -> Any:
    return (op_in(F, MAX_POOL2D_BACKWARD)(g, x, pooled, **geometry), None, None)


def _divisor(xp: Any, shape: tuple[int, ...], kernel: Pair, stride: Pair, padding: Padding,
             count_include_pad: bool, dtype: Any) -> Any:
    """What each window's sum is divided by: the window's size, or its count of real inputs."""
    if count_include_pad:
        return kernel[0] * kernel[1]
    ho, wo = check_windows("nn.avg_pool2d", tuple(shape), kernel, stride, padding, (1, 1))
    ones = pad_input(xp, xp.ones((1, 1) + tuple(shape[2:]), dtype=dtype), padding)
    return _window_sums(xp, ones, kernel, stride, (ho, wo))


def _window_sums(xp: Any, xpad: Any, kernel: Pair, stride: Pair, out_hw: Pair) -> Any:
    """Sum over each window (N, C, Ho, Wo): kh*kw strided adds (faster than a reduction over a
    strided view)."""
    win = windows(xp, xpad, kernel, stride, (1, 1), out_hw)
    total = win[:, :, 0, 0].copy()
    for p in range(kernel[0]):
        for q in range(kernel[1]):
            if p or q:
                total += win[:, :, p, q]
    return total


def _avg_pool_kernel(xp: Any) -> Any:
    def avg_pool2d(x: Any, *, kernel_size: Pair, stride: Pair, padding: Padding,
                   count_include_pad: bool) -> Any:
        where = "nn.avg_pool2d"
        out_hw = check_windows(where, tuple(x.shape), kernel_size, stride, padding, (1, 1))
        check_number_dtype(where, x, floating_only=True)
        total = _window_sums(xp, pad_input(xp, x, padding), kernel_size, stride, out_hw)
        total /= _divisor(xp, x.shape, kernel_size, stride, padding, count_include_pad, x.dtype)
        return total

    return avg_pool2d


def _avg_pool_grad_kernel(xp: Any) -> Any:
    def avg_pool2d_grad(g: Any, *, input_shape: tuple[int, ...], kernel_size: Pair, stride: Pair,
                        padding: Padding, count_include_pad: bool) -> Any:
        where = "nn.avg_pool2d_grad"
        check_output_size(where, tuple(input_shape), kernel_size, stride, padding, (1, 1),
                          tuple(g.shape[2:]))
        check_number_dtype(where, g, floating_only=True)
        n, c, h, w = input_shape
        share = g / _divisor(xp, input_shape, kernel_size, stride, padding, count_include_pad,
                             g.dtype)
        (pt, pb), (pl, pr) = padding
        dxpad = xp.zeros((n, c, h + pt + pb, w + pl + pr), dtype=g.dtype)
        cols = xp.broadcast_to(share[:, :, None, None], (n, c) + tuple(kernel_size) + g.shape[2:])
        add_windows(xp, dxpad, cols, stride, (1, 1))
        return crop(xp, dxpad, padding, (h, w))

    return avg_pool2d_grad


AVG_POOL2D = Op("nn.avg_pool2d", _avg_pool_kernel, save_inputs=False,
                doc="mean over 2-d windows")
AVG_POOL2D_GRAD = Op("nn.avg_pool2d_grad", _avg_pool_grad_kernel, save_inputs=False,
                     doc="adjoint of avg_pool2d (spreads each output back over its window)")


@AVG_POOL2D.def_grad
def _avg_pool_grad(F: Any, g: Any, out: Any, x: Any, **attrs: Any) -> Any:
    return (op_in(F, AVG_POOL2D_GRAD)(g, input_shape=tuple(x.shape), **attrs),)


@AVG_POOL2D_GRAD.def_grad
def _avg_pool_grad_grad(F: Any, h: Any, out: Any, g: Any, *, input_shape: Any,
                        **attrs: Any) -> Any:
    return (op_in(F, AVG_POOL2D)(h, **attrs),)
