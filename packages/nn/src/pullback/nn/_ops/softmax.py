"""``nn.softmax`` and ``nn.log_softmax`` along one axis, stable (the max is subtracted first),
and their first-order input gradients as ops of their own, ``nn.softmax_backward`` (a C kernel
on the CPU, a CUDA kernel in pullback-cuda) and ``nn.log_softmax_backward`` (C row kernels on
NumPy arrays, float32 and float64, as log-softmax's forward). Being ops, not kernels the grad
rules call, a traced backward (pullback.compiler) runs the kernels eager backward runs."""

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


def _log_softmax_backward_kernel(xp: Any) -> Any:
    def log_softmax_backward(g: Any, y: Any, *, axis: int) -> Any:
        return g - xp.exp(y) * xp.sum(g, axis=axis, keepdims=True)

    if xp is np:
        return native_first(_native.log_softmax_backward, log_softmax_backward)
    return log_softmax_backward


SOFTMAX = Op("nn.softmax", _softmax_kernel, save_inputs=False, save_output=True,
             promotion=FLOAT, doc="exp(x) / sum(exp(x)) along an axis")
# First-order backward only (grad rules call it on raw arrays); no gradient of its own.
SOFTMAX_BACKWARD = Op("nn.softmax_backward", _softmax_backward_kernel, differentiable=False,
                      doc="y * (gy - sum(gy * y)) along an axis: softmax's input gradient")
LOG_SOFTMAX = Op("nn.log_softmax", _log_softmax_kernel, save_inputs=False, save_output=True,
                 promotion=FLOAT, doc="x - logsumexp(x) along an axis")
LOG_SOFTMAX_BACKWARD = Op("nn.log_softmax_backward", _log_softmax_backward_kernel,
                          differentiable=False,
                          doc="g - exp(y) * sum(g) along an axis: log-softmax's input gradient")


@SOFTMAX.def_grad
def _softmax_grad(F: Any, g: Any, out: Any, x: Any, *, axis: int) -> Any:
    if not F.differentiable:
        return (op_in(F, SOFTMAX_BACKWARD)(g, out, axis=axis),)
    return (softmax_input_grad(F, g, out, axis),)


@LOG_SOFTMAX.def_grad
def _log_softmax_grad(F: Any, g: Any, out: Any, x: Any, *, axis: int) -> Any:
    if not F.differentiable:
        return (op_in(F, LOG_SOFTMAX_BACKWARD)(g, out, axis=axis),)
    return (g - F.exp(out) * F.sum(g, axis=axis, keepdims=True),)
