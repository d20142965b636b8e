"""``nn.cross_entropy``: per-row ``-log_softmax(logits)[target]`` for (N, C) logits and (N,)
integer targets, 0 where the target is ``ignore_index``. One op instead of log-softmax, gather and
masking. The forward saves each row's max and log-sum of exponentials after it, (N, 2), not the
(N, C) softmax: the first-order backward (``softmax - onehot``) recomputes the exponentials in
the same pass that writes the gradient. On NumPy arrays both directions are C row kernels
(float32 and float64)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback.native import native_first
from pullback.promotion import Promotion
from pullback.registry import Op

from . import _native
from ._call import op_in
from .softmax import LOG_SOFTMAX


def _cross_entropy_kernel(xp: Any) -> Any:
    def cross_entropy(logits: Any, target: Any, *, ignore_index: int) -> Any:
        top = xp.max(logits, axis=1, keepdims=True)
        z = logits - top
        log_total = xp.log(xp.sum(xp.exp(z), axis=1, keepdims=True))
        valid = target != ignore_index
        picked = xp.take_along_axis(z, xp.where(valid, target, 0)[:, None], axis=1)[:, 0]
        loss = xp.where(valid, log_total[:, 0] - picked, 0)
        return loss, (xp.concatenate([top, log_total], axis=1),)

    return native_first(_native.cross_entropy, cross_entropy) if xp is np else cross_entropy


CROSS_ENTROPY = Op("nn.cross_entropy", _cross_entropy_kernel, aux=True,
                   promotion=Promotion("float", args=(0,)),  # the logits; targets are ints
                   doc="per-row softmax cross-entropy with integer targets")


@CROSS_ENTROPY.def_grad
def _cross_entropy_grad(F: Any, g: Any, out: Any, logits: Any, target: Any, *,
                        ignore_index: int, saved: Any = None) -> Any:
    if saved is not None and not F.differentiable:
        # On NumPy arrays the C row kernel writes the whole gradient in one pass (called
        # directly: a backward op of its own would also need a vmap rule).
        gx = _native.cross_entropy_backward(g, logits, target, saved[0],
                                            ignore_index=ignore_index)
        if gx is not NotImplemented:
            return (gx, None)
        stats = saved[0]
        probs = F.exp(logits - stats[:, :1] - stats[:, 1:])
    else:
        probs = F.exp(op_in(F, LOG_SOFTMAX)(logits, axis=1))
    valid = F.not_equal(target, ignore_index)
    onehot = F.cast(F.one_hot(F.where(valid, target, 0), num_classes=logits.shape[1]),
                    dtype=logits.dtype)
    row_g = F.reshape(F.where(valid, g, 0.0), shape=(logits.shape[0], 1))
    return ((probs - onehot) * row_g, None)
