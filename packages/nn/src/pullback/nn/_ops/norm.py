"""``nn.layer_norm``: normalize over the trailing ``normalized_ndim`` axes, then scale and shift.

The forward saves the mean and the reciprocal standard deviation for a first-order backward;
under ``create_graph`` they are recomputed from ``x`` with ``F`` ops so that the gradient is
differentiable in ``x`` too.
"""

from __future__ import annotations

from typing import Any

from pullback.registry import Op


def _axes(ndim: int, normalized_ndim: int) -> tuple[int, ...]:
    return tuple(range(ndim - normalized_ndim, ndim))


def _layer_norm_kernel(xp: Any) -> Any:
    def layer_norm(x: Any, w: Any, b: Any, *, normalized_ndim: int, eps: float) -> Any:
        axes = _axes(x.ndim, normalized_ndim)
        mean = xp.mean(x, axis=axes, keepdims=True)
        y = x - mean
        var = xp.mean(y * y, axis=axes, keepdims=True)
        rstd = 1.0 / xp.sqrt(var + eps)
        y *= rstd
        if w is not None:
            y *= w
        if b is not None:
            y += b
        return y, (mean, rstd)

    return layer_norm


LAYER_NORM = Op("nn.layer_norm", _layer_norm_kernel, aux=True,
                doc="(x - mean) / sqrt(var + eps) * w + b over trailing axes")


@LAYER_NORM.def_grad
def _layer_norm_grad(F: Any, g: Any, out: Any, x: Any, w: Any, b: Any, *, normalized_ndim: int,
                     eps: float, needs: Any, saved: Any = None) -> Any:
    axes = _axes(x.ndim, normalized_ndim)
    if saved is not None and not F.differentiable:
        mean, rstd = saved
    else:
        mean = F.mean(x, axis=axes, keepdims=True)
        centered = x - mean
        rstd = F.rsqrt(F.mean(centered * centered, axis=axes, keepdims=True) + eps)
    xhat = (x - mean) * rstd
    lead = tuple(range(x.ndim - normalized_ndim))
    gx = gw = gb = None
    if needs[0]:
        gxhat = g * w if w is not None else g
        gx = rstd * (gxhat - F.mean(gxhat, axis=axes, keepdims=True)
                     - xhat * F.mean(gxhat * xhat, axis=axes, keepdims=True))
    if needs[1]:
        gw = F.sum(g * xhat, axis=lead)
    if needs[2]:
        gb = F.sum(g, axis=lead)
    return gx, gw, gb
