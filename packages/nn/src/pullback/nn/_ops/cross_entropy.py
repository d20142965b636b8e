"""``nn.cross_entropy``: per-row ``-log_softmax(logits)[target]`` for (N, C) logits and (N,)
integer targets, 0 where the target is ``ignore_index``. One op instead of log-softmax, gather and
masking. The forward saves each row's max and log-sum of exponentials after it, (N, 2), not the
(N, C) softmax: the first-order backward, ``nn.cross_entropy_backward`` (``softmax - onehot``),
recomputes the exponentials in the same pass that writes the gradient. On NumPy arrays both
directions are C row kernels (float32 and float64). The backward is an op of its own, not a
kernel the grad rule calls, so that a traced backward (pullback.compiler) runs the very kernel
eager backward runs, with the same roundings."""

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


def _cross_entropy_backward_kernel(xp: Any) -> Any:
    def cross_entropy_backward(g: Any, logits: Any, target: Any, stats: Any, *,
                               ignore_index: int) -> Any:
        probs = xp.exp(logits - stats[:, :1] - stats[:, 1:])
        valid = target != ignore_index
        onehot = xp.arange(logits.shape[1]) == xp.where(valid, target, 0)[:, None]
        return (probs - onehot) * xp.where(valid, g, 0)[:, None]

    if xp is np:
        return native_first(_native.cross_entropy_backward, cross_entropy_backward)
    return cross_entropy_backward


CROSS_ENTROPY = Op("nn.cross_entropy", _cross_entropy_kernel, aux=True,
                   promotion=Promotion("float", args=(0,)),  # the logits; targets are ints
                   doc="per-row softmax cross-entropy with integer targets")
# First-order backward only (the grad rule calls it with the forward's saved row statistics).
CROSS_ENTROPY_BACKWARD = Op("nn.cross_entropy_backward", _cross_entropy_backward_kernel,
                            differentiable=False,
                            doc="(softmax(logits) - onehot(target)) * g per row, from the "
                                "forward's (max, log-sum-exp) row statistics")


@CROSS_ENTROPY.def_grad
def _cross_entropy_grad(F: Any, g: Any, out: Any, logits: Any, target: Any, *,
                        ignore_index: int, saved: Any = None) -> Any:
    if saved is not None and not F.differentiable:
        return (op_in(F, CROSS_ENTROPY_BACKWARD)(g, logits, target, saved[0],
                                                ignore_index=ignore_index), None)
    probs = F.exp(op_in(F, LOG_SOFTMAX)(logits, axis=1))
    valid = F.not_equal(target, ignore_index)
    onehot = F.cast(F.one_hot(F.where(valid, target, 0), num_classes=logits.shape[1]),
                    dtype=logits.dtype)
    row_g = F.reshape(F.where(valid, g, 0.0), shape=(logits.shape[0], 1))
    return ((probs - onehot) * row_g, None)
