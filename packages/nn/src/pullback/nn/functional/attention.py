"""``scaled_dot_product_attention`` (PyTorch's signature) over the fused op, and the mask helpers
that multi-head attention shares with it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import pullback
from pullback.dispatch import apply
from pullback.errors import DTypeError, ShapeError
from pullback.tensor import Tensor

from .._ops.attention import SDPA
from .dropout import check_p, keep_mask


def mask_to_bias(mask: Tensor, like: Tensor, true_means_keep: bool, where: str) -> Tensor:
    """An additive float mask (0 where attending, -inf where not) from a bool or float mask.

    A float mask is returned as is (cast to ``like``'s dtype). For a bool mask,
    ``true_means_keep`` says whether True marks positions that take part (PyTorch's
    ``scaled_dot_product_attention``) or positions that are masked out (``MultiheadAttention``).
    """
    if mask.dtype.kind == "b":
        # Ops, not array code, so that vmap batches a batched mask with the samples.
        blocked = ~mask if true_means_keep else mask
        zeros = pullback.zeros(tuple(mask.shape), dtype=like.dtype, device=like.device)
        return zeros.masked_fill(blocked, float("-inf"))
    if mask.dtype.kind not in "fV":
        raise DTypeError(f"{where}: masks must be bool or floating point, got {mask.dtype}")
    return mask if mask.dtype == like.dtype else mask.to(like.dtype)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None) -> Tensor:
    """``softmax(q k^T * scale + mask) @ v`` over the last two axes of (..., L, E) queries,
    (..., S, E) keys and (..., S, Ev) values.

    Args:
        attn_mask: bool (True: may attend) or float (added to the scores), broadcastable to
            (..., L, S).
        dropout_p: dropout on the attention weights (always applied when positive, as in
            PyTorch; pass 0 in evaluation).
        is_causal: query i attends to keys 0..i (cannot be combined with ``attn_mask``).
        scale: defaults to ``1/sqrt(E)``.
    """
    where = "scaled_dot_product_attention"
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise ShapeError(f"{where}: query, key and value need at least 2 dims, got "
                         f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ShapeError(f"{where}: query {tuple(query.shape)}, key {tuple(key.shape)} and value "
                         f"{tuple(value.shape)} do not fit (..., L, E), (..., S, E), (..., S, Ev)")
    if is_causal and attn_mask is not None:
        raise ValueError(f"{where}: give attn_mask or is_causal=True, not both")
    bias = None if attn_mask is None else mask_to_bias(attn_mask, query, True, where)
    p = check_p(where, dropout_p)
    keep = None
    if p > 0.0:
        batch = np.broadcast_shapes(tuple(query.shape[:-2]), tuple(key.shape[:-2]))
        keep = keep_mask(tuple(batch) + (query.shape[-2], key.shape[-2]), p, query)
    # With E = 0 every score is an empty sum, 0 whatever the scale (PyTorch: uniform weights).
    scale = 1.0 / math.sqrt(max(query.shape[-1], 1)) if scale is None else float(scale)
    return apply(SDPA, query, key, value, bias, keep, scale=scale, causal=bool(is_causal))


def attention_weights(query: Tensor, key: Tensor, bias: Tensor | None, scale: float) -> Any:
    """``softmax(q k^T * scale + bias)``, for callers that return the weights."""
    from .activation import softmax

    scores = (query @ key.mT) * scale
    if bias is not None:
        scores = scores + bias
    return softmax(scores, dim=-1)
