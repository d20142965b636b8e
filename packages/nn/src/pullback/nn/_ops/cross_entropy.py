"""``nn.cross_entropy``: per-row ``-log_softmax(logits)[target]`` for (N, C) logits and (N,)
integer targets, 0 where the target is ``ignore_index``. One op instead of log-softmax, gather and
masking; the forward saves the softmax for a first-order backward (``p - onehot``)."""

from __future__ import annotations

from typing import Any

from pullback.promotion import Promotion
from pullback.registry import Op

from ._call import op_in
from .softmax import LOG_SOFTMAX


def _cross_entropy_kernel(xp: Any) -> Any:
    def cross_entropy(logits: Any, target: Any, *, ignore_index: int) -> Any:
        z = logits - xp.max(logits, axis=1, keepdims=True)
        exp = xp.exp(z)
        total = xp.sum(exp, axis=1, keepdims=True)
        valid = target != ignore_index
        picked = xp.take_along_axis(z, xp.where(valid, target, 0)[:, None], axis=1)[:, 0]
        loss = (xp.log(total[:, 0]) - picked) * valid
        exp /= total
        return loss, (exp,)

    return cross_entropy


CROSS_ENTROPY = Op("nn.cross_entropy", _cross_entropy_kernel, aux=True,
                   promotion=Promotion("float", args=(0,)),  # the logits; targets are ints
                   doc="per-row softmax cross-entropy with integer targets")


@CROSS_ENTROPY.def_grad
def _cross_entropy_grad(F: Any, g: Any, out: Any, logits: Any, target: Any, *,
                        ignore_index: int, saved: Any = None) -> Any:
    if saved is not None and not F.differentiable:
        probs = saved[0]
    else:
        probs = F.exp(op_in(F, LOG_SOFTMAX)(logits, axis=1))
    valid = F.not_equal(target, ignore_index)
    onehot = F.cast(F.one_hot(F.where(valid, target, 0), num_classes=logits.shape[1]),
                    dtype=logits.dtype)
    row_g = F.reshape(F.where(valid, g, 0.0), shape=(logits.shape[0], 1))
    return ((probs - onehot) * row_g, None)
