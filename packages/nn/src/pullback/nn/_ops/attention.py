"""``nn.scaled_dot_product_attention``: ``softmax(q k^T * scale + bias) @ v`` in one op.

Inputs are ``q`` (..., L, E), ``k`` (..., S, E), ``v`` (..., S, Ev), an optional additive
``bias`` broadcastable to (..., L, S) (masks arrive as 0/-inf) and an optional ``keep`` tensor of
the same shape as the weights: the dropout mask, already scaled by 1/(1-p). ``causal`` masks the
upper triangle (query i sees keys 0..i). The forward saves the attention weights for a
first-order backward; under ``create_graph`` they are recomputed with ``F`` ops.

Without mask and dropout, on float32 and float64 NumPy arrays, the forward and the first-order
backward are fused C kernels (:mod:`._native_attention`); the backward is an op of its own,
``nn.scaled_dot_product_attention_backward``, so that a traced backward (pullback.compiler)
runs the kernel eager backward runs. Everything else is the composition of matrix products and
nn's softmax ops below, which is also the backward op's fallback.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback.promotion import Promotion
from pullback.registry import Op

from pullback.native import native_first

from . import _native, _native_attention
from ._call import op_in
from ._matmul import matmul_for
from .softmax import (
    SOFTMAX, SOFTMAX_BACKWARD, _softmax_backward_kernel, _softmax_kernel, softmax_input_grad,
)


def _sdpa_kernel(xp: Any) -> Any:
    softmax = _softmax_kernel(xp)
    matmul = matmul_for(xp)

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

    if xp is np:
        return native_first(_native_attention.attention, scaled_dot_product_attention)
    return scaled_dot_product_attention


def _sdpa_backward_kernel(xp: Any) -> Any:
    softmax_backward = _softmax_backward_kernel(xp)
    matmul = matmul_for(xp)

    def scaled_dot_product_attention_backward(g: Any, q: Any, k: Any, v: Any, weights: Any, *,
                                              scale: float, causal: bool,
                                              out: Any = None) -> Any:
        gv = matmul(xp.swapaxes(weights, -1, -2), g)
        g_scores = softmax_backward(matmul(g, xp.swapaxes(v, -1, -2)), weights, axis=-1)
        gq = matmul(g_scores, k)
        gq *= scale
        gk = matmul(xp.swapaxes(g_scores, -1, -2), q)
        gk *= scale
        if out is None:
            return gq, gk, gv
        for target, grad in zip(out, (gq, gk, gv)):
            xp.add(grad, 0.0, out=target)  # as the native kernel: added into zeros
        return tuple(out)

    if xp is np:
        return native_first(_native_attention.attention_backward,
                            scaled_dot_product_attention_backward)
    return scaled_dot_product_attention_backward


SDPA = Op("nn.scaled_dot_product_attention", _sdpa_kernel, aux=True,
          promotion=Promotion("same", args=(0, 1, 2)),  # query, key and value: one dtype
          doc="softmax(q k^T * scale + bias) @ v, optional causal mask and dropout mask")
# First-order backward only, without mask and dropout (the grad rule calls it on the forward's
# saved weights): returns (gq, gk, gv), each of the operands' broadcast batch shape.
SDPA_BACKWARD = Op("nn.scaled_dot_product_attention_backward", _sdpa_backward_kernel,
                   differentiable=False,
                   doc="(gq, gk, gv) of scaled_dot_product_attention from the saved weights")


def _on_numpy(*values: Any) -> bool:
    """Whether the values (raw arrays, or Tensors when a compiler records the backward) hold
    NumPy arrays: elsewhere (CUDA) the composition keeps that backend's softmax_backward."""
    return all(getattr(x, "array", x).__class__ is np.ndarray for x in values)


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
        if bias is None and keep is None and _on_numpy(q, k, v, g, weights):
            gq, gk, gv = op_in(F, SDPA_BACKWARD)(g, q, k, v, weights, scale=scale,
                                                 causal=causal)
            return (gq if needs[0] else None, gk if needs[1] else None,
                    gv if needs[2] else None, None, None)
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
