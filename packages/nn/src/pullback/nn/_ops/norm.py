"""``nn.layer_norm``: normalize over the trailing ``normalized_ndim`` axes, then scale and shift.

The forward saves the mean and the reciprocal standard deviation for a first-order backward,
which is one op, ``nn.layer_norm_backward`` (a C kernel on the CPU, a CUDA kernel in
pullback-cuda); under ``create_graph`` they are recomputed from ``x`` with ``F`` ops so that the
gradient is differentiable in ``x`` too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback.native import native_first
from pullback.promotion import SAME
from pullback.registry import Op

from . import _native
from ._call import op_in


def _axes(ndim: int, normalized_ndim: int) -> tuple[int, ...]:
    return tuple(range(ndim - normalized_ndim, ndim))


def _layer_norm_kernel(xp: Any) -> Any:
    def layer_norm(x: Any, w: Any, b: Any, *, normalized_ndim: int, eps: float) -> Any:
        axes = _axes(x.ndim, normalized_ndim)
        mean = xp.mean(x, axis=axes, keepdims=True)
        y = x - mean
        # The corrected two-pass algorithm: a float mean is off by its rounding (an ulp of the
        # values), which 1/sqrt(eps) would blow up in a constant row (0.0048 from 1e3s); the
        # mean of the differences is that error, so a constant row normalizes to exactly 0,
        # as in PyTorch (whose Welford mean of a constant row is exact).
        correction = xp.mean(y, axis=axes, keepdims=True)
        mean += correction
        y -= correction
        var = xp.mean(y * y, axis=axes, keepdims=True)
        if x.dtype != xp.float64 and not bool(xp.isfinite(var).all()):
            # The squares overflowed (float32 from |x - mean| ~ 1.8e19, float16 from 256):
            # a zero rstd would return zeros. In float64 finite rows stay finite (NaN and inf
            # inputs still give NaN, as in PyTorch).
            wide = [None if a is None else a.astype(xp.float64) for a in (x, w, b)]
            y64, stats = layer_norm(*wide, normalized_ndim=normalized_ndim, eps=eps)
            return y64.astype(x.dtype), tuple(v.astype(x.dtype) for v in stats)
        rstd = 1.0 / xp.sqrt(var + eps)
        y *= rstd
        if w is not None:
            y *= w
        if b is not None:
            y += b
        return y, (mean, rstd)

    return native_first(_native.layer_norm, layer_norm) if xp is np else layer_norm


def _grads(ns: Any, g: Any, x: Any, w: Any, mean: Any, rstd: Any, normalized_ndim: int,
           needs: Any) -> tuple[Any, Any, Any]:
    """(gx, gw, gb) from the mean and 1/std, with ``ns``'s ``mean`` and ``sum``: an array
    namespace (the backward op's kernel) or ``F`` (the differentiable grad rule)."""
    axes = _axes(x.ndim, normalized_ndim)
    lead = tuple(range(x.ndim - normalized_ndim))
    xhat = (x - mean) * rstd
    gx = gw = gb = None
    if needs[0]:
        gxhat = g * w if w is not None else g
        gx = rstd * (gxhat - ns.mean(gxhat, axis=axes, keepdims=True)
                     - xhat * ns.mean(gxhat * xhat, axis=axes, keepdims=True))
    if needs[1]:
        gw = ns.sum(g * xhat, axis=lead)
    if needs[2]:
        gb = ns.sum(g, axis=lead)
    return gx, gw, gb


def _layer_norm_backward_kernel(xp: Any) -> Any:
    def layer_norm_backward(g: Any, x: Any, w: Any, mean: Any, rstd: Any, *,
                            normalized_ndim: int, param_grads: bool = True,
                            add: Any = None) -> Any:
        # add (no attribute of the op: pullback-compiler's fused residual sum passes it)
        # returns add + gx instead of gx
        gx, gw, gb = _grads(xp, g, x, w, mean, rstd, normalized_ndim,
                            (True, param_grads, param_grads))
        return (gx if add is None else add + gx), gw, gb

    if xp is np:
        return native_first(_native.layer_norm_backward, layer_norm_backward)
    return layer_norm_backward


LAYER_NORM = Op("nn.layer_norm", _layer_norm_kernel, aux=True, promotion=SAME,
                doc="(x - mean) / sqrt(var + eps) * w + b over trailing axes")

# First-order backward only (the grad rule calls it on raw arrays): returns (gx, gw, gb).
LAYER_NORM_BACKWARD = Op("nn.layer_norm_backward", _layer_norm_backward_kernel,
                         differentiable=False,
                         doc="(gx, gw, gb) of layer_norm from the saved mean and rstd")


@LAYER_NORM.def_grad
def _layer_norm_grad(F: Any, g: Any, out: Any, x: Any, w: Any, b: Any, *, normalized_ndim: int,
                     eps: float, needs: Any, saved: Any = None) -> Any:
    if saved is not None and not F.differentiable:
        mean, rstd = saved
        gx, gw, gb = op_in(F, LAYER_NORM_BACKWARD)(g, x, w, mean, rstd,
                                                    normalized_ndim=normalized_ndim,
                                                    param_grads=needs[1] or needs[2])
        return gx if needs[0] else None, gw if needs[1] else None, gb if needs[2] else None
    axes = _axes(x.ndim, normalized_ndim)
    mean = F.mean(x, axis=axes, keepdims=True)
    centered = x - mean
    rstd = F.rsqrt(F.mean(centered * centered, axis=axes, keepdims=True) + eps)
    return _grads(F, g, x, w, mean, rstd, normalized_ndim, needs)
