"""``nn.scaled_dot_product_attention``: ``softmax(q k^T * scale + bias) @ v`` in one op.

Inputs are ``q`` (..., L, E), ``k`` (..., S, E), ``v`` (..., S, Ev), an optional additive
``bias`` broadcastable to (..., L, S) (masks arrive as 0/-inf) and an optional ``keep`` tensor of
the same shape as the weights: the dropout mask, already scaled by 1/(1-p). ``causal`` masks the
upper triangle (query i sees keys 0..i). The forward saves the attention weights for a
first-order backward; under ``create_graph`` they are recomputed with ``F`` ops.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback.promotion import Promotion
from pullback.registry import Op, get_op

from . import _native
from ._call import op_in
from .softmax import SOFTMAX, SOFTMAX_BACKWARD, _softmax_kernel, softmax_input_grad


def _sdpa_kernel(xp: Any) -> Any:
    softmax = _softmax_kernel(xp)
    # on NumPy, core's CPU matmul: it splits stacks of small products over the threads
    matmul = get_op("matmul").kernel_for("cpu") if xp is np else xp.matmul

    def masked_softmax(scores: Any, bias: Any, scale: float, causal: bool) -> Any:
        if bias is None and xp is np:
            # the C kernel scales, masks and normalizes in one pass, in place
            weights = _native.softmax(scores, axis=-1, scale=scale, causal=causal, out=scores)
            if weights is not NotImplemented:
                return weights
        scores *= scale
        if bias is not None:
            scores = scores + bias
        if causal:
            seen = xp.tril(xp.ones(scores.shape[-2:], dtype=bool))
            scores = xp.where(seen, scores, -xp.inf)
        return softmax(scores, axis=-1)

    def scaled_dot_product_attention(q: Any, k: Any, v: Any, bias: Any, keep: Any, *,
                                     scale: float, causal: bool) -> Any:
        weights = masked_softmax(matmul(q, xp.swapaxes(k, -1, -2)), bias, scale, causal)
        used = weights * keep if keep is not None else weights
        out = matmul(used, v)
        # ml_dtypes' bfloat16 matmul returns float32; give back the input's dtype.
        return (out if out.dtype == q.dtype else out.astype(q.dtype)), (weights,)

    return scaled_dot_product_attention


SDPA = Op("nn.scaled_dot_product_attention", _sdpa_kernel, aux=True,
          promotion=Promotion("same", args=(0, 1, 2)),  # query, key and value: one dtype
          doc="softmax(q k^T * scale + bias) @ v, optional causal mask and dropout mask")


def _attention_weights(F: Any, q: Any, k: Any, bias: Any, scale: float, causal: bool) -> Any:
    scores = F.matmul(q, F.swapaxes(k, a=-1, b=-2)) * scale
    if bias is not None:
        scores = scores + bias
    if causal:
        shape = tuple(scores.shape[-2:])
        seen = F.greater(F.tril(F.full(shape, 1.0, like=scores)), 0.0)
        scores = F.where(seen, scores, float("-inf"))
    return op_in(F, SOFTMAX)(scores, axis=-1)


@SDPA.def_grad
def _sdpa_grad(F: Any, g: Any, out: Any, q: Any, k: Any, v: Any, bias: Any, keep: Any, *,
               scale: float, causal: bool, needs: Any, saved: Any = None) -> Any:
    if saved is not None and not F.differentiable:
        weights = saved[0]
    else:
        weights = _attention_weights(F, q, k, bias, scale, causal)
    used = weights * keep if keep is not None else weights
    gv = F.matmul(F.swapaxes(used, a=-1, b=-2), g) if needs[2] else None
    gq = gk = gbias = None
    if needs[0] or needs[1] or needs[3]:
        g_used = F.matmul(g, F.swapaxes(v, a=-1, b=-2))
        g_weights = g_used * keep if keep is not None else g_used
        if F.differentiable:
            g_scores = softmax_input_grad(F, g_weights, weights, -1)
        else:
            g_scores = op_in(F, SOFTMAX_BACKWARD)(g_weights, weights, axis=-1)
        if needs[0]:
            gq = F.matmul(g_scores, k) * scale
        if needs[1]:
            gk = F.matmul(F.swapaxes(g_scores, a=-1, b=-2), q) * scale
        if needs[3]:
            gbias = g_scores
    return gq, gk, gv, gbias, None
