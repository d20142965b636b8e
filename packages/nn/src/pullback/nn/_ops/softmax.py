"""``nn.softmax`` and ``nn.log_softmax`` along one axis, stable (the max is subtracted first),
and ``nn.softmax_backward``, softmax's first-order input gradient as one op (a C kernel on the
CPU, a CUDA kernel in pullback-cuda). Log-softmax's forward and first-order backward run C row
kernels on NumPy arrays too (float32 and float64)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback.native import native_first
from pullback.promotion import FLOAT
from pullback.registry import Op

from . import _native
from ._call import op_in


def _degenerate(xp: Any, x: Any, log: bool) -> Any:
    """Softmax (or log-softmax) where the max-shifted formula cannot run, as PyTorch returns
    it: an empty input gives an empty result; a 0-d one is its own only element, weight 1
    (log 0; NaN where x is NaN or infinite)."""
    if x.size == 0:
        return xp.empty_like(x)
    shifted = xp.subtract(x, x)  # 0, or NaN for NaN and infinities
    return shifted if log else xp.exp(shifted)


def _softmax_kernel(xp: Any) -> Any:
    def softmax(x: Any, *, axis: int) -> Any:
        if x.ndim == 0 or x.size == 0:
            return _degenerate(xp, x, log=False)
        e = x - xp.max(x, axis=axis, keepdims=True)
        xp.exp(e, out=e)
        e /= xp.sum(e, axis=axis, keepdims=True)
        return e

    return native_first(_native.softmax, softmax) if xp is np else softmax


def softmax_input_grad(ns: Any, g: Any, y: Any, axis: int) -> Any:
    """``y * (g - sum(g * y))`` along ``axis`` with ``ns.sum``: an array namespace (the backward
    op's kernel) or ``F`` (the differentiable grad rules)."""
    return y * (g - ns.sum(g * y, axis=axis, keepdims=True))


def _softmax_backward_kernel(xp: Any) -> Any:
    def softmax_backward(gy: Any, y: Any, *, axis: int) -> Any:
        return softmax_input_grad(xp, gy, y, axis)

    return native_first(_native.softmax_backward, softmax_backward) if xp is np else softmax_backward


def _log_softmax_kernel(xp: Any) -> Any:
    def log_softmax(x: Any, *, axis: int) -> Any:
        if x.ndim == 0 or x.size == 0:
            return _degenerate(xp, x, log=True)
        z = x - xp.max(x, axis=axis, keepdims=True)
        z -= xp.log(xp.sum(xp.exp(z), axis=axis, keepdims=True))
        return z

    return native_first(_native.log_softmax, log_softmax) if xp is np else log_softmax


SOFTMAX = Op("nn.softmax", _softmax_kernel, save_inputs=False, save_output=True,
             promotion=FLOAT, doc="exp(x) / sum(exp(x)) along an axis")
# First-order backward only (grad rules call it on raw arrays); no gradient of its own.
SOFTMAX_BACKWARD = Op("nn.softmax_backward", _softmax_backward_kernel, differentiable=False,
                      doc="y * (gy - sum(gy * y)) along an axis: softmax's input gradient")
LOG_SOFTMAX = Op("nn.log_softmax", _log_softmax_kernel, save_inputs=False, save_output=True,
                 promotion=FLOAT, doc="x - logsumexp(x) along an axis")


@SOFTMAX.def_grad
def _softmax_grad(F: Any, g: Any, out: Any, x: Any, *, axis: int) -> Any:
    if not F.differentiable:
        return (op_in(F, SOFTMAX_BACKWARD)(g, out, axis=axis),)
    return (softmax_input_grad(F, g, out, axis),)


@LOG_SOFTMAX.def_grad
def _log_softmax_grad(F: Any, g: Any, out: Any, x: Any, *, axis: int) -> Any:
    if not F.differentiable:
        # On NumPy arrays, the C row kernel: one read of g and out per row instead of the four
        # whole-array passes below. (Called directly rather than as a backward op of its own:
        # such an op would also need its vmap rule; Tensors and CuPy arrays get NotImplemented.)
        gx = _native.log_softmax_backward(g, out, axis=axis)
        if gx is not NotImplemented:
            return (gx,)
    return (g - F.exp(out) * F.sum(g, axis=axis, keepdims=True),)
