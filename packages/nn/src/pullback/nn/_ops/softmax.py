"""``nn.softmax`` and ``nn.log_softmax`` along one axis, stable (the max is subtracted first)."""

from __future__ import annotations

from typing import Any

from pullback.registry import Op


def _softmax_kernel(xp: Any) -> Any:
    def softmax(x: Any, *, axis: int) -> Any:
        e = x - xp.max(x, axis=axis, keepdims=True)
        xp.exp(e, out=e)
        e /= xp.sum(e, axis=axis, keepdims=True)
        return e

    return softmax


def _log_softmax_kernel(xp: Any) -> Any:
    def log_softmax(x: Any, *, axis: int) -> Any:
        z = x - xp.max(x, axis=axis, keepdims=True)
        z -= xp.log(xp.sum(xp.exp(z), axis=axis, keepdims=True))
        return z

    return log_softmax


SOFTMAX = Op("nn.softmax", _softmax_kernel, save_inputs=False, save_output=True,
             doc="exp(x) / sum(exp(x)) along an axis")
LOG_SOFTMAX = Op("nn.log_softmax", _log_softmax_kernel, save_inputs=False, save_output=True,
                 doc="x - logsumexp(x) along an axis")


@SOFTMAX.def_grad
def _softmax_grad(F: Any, g: Any, out: Any, x: Any, *, axis: int) -> Any:
    return (out * (g - F.sum(g * out, axis=axis, keepdims=True)),)


@LOG_SOFTMAX.def_grad
def _log_softmax_grad(F: Any, g: Any, out: Any, x: Any, *, axis: int) -> Any:
    return (g - F.exp(out) * F.sum(g, axis=axis, keepdims=True),)
