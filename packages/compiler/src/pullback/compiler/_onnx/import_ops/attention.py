"""``Attention`` (opset 23 on) and ``RotaryEmbedding``: 3-d (heads packed in the hidden
axis) or 4-d inputs, a past key/value cache, boolean or additive masks, causal masking aligned
to the bottom right (a cache's length as the offset), sliding windows, grouped-query heads,
softcap, ``nonpad_kv_seqlen`` and the ``qk_matmul_output_mode`` second output. A row whose
every key is masked gives zeros, as ONNX says."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import pullback as pb
from pullback.tensor import Tensor

from . import NodeContext, converter, ints, optional
from .elementwise import onnx_dtype


def _heads(x: Tensor, count: int) -> Tensor:
    b, s, hidden = x.shape
    return x.reshape((b, s, count, hidden // count)).permute(0, 2, 1, 3)


def _allowed(q_len: int, kv_len: int, offset: np.ndarray, causal: bool, left: int,
             right: int) -> np.ndarray | None:
    """Where query i may see key j (causal and sliding-window rules), shape (B or 1, q, kv)."""
    if not causal and left < 0 and right < 0:
        return None
    i = np.arange(q_len).reshape(1, q_len, 1) + offset.reshape(-1, 1, 1)
    j = np.arange(kv_len).reshape(1, 1, kv_len)
    allowed = np.ones(np.broadcast_shapes(i.shape, j.shape), np.bool_)
    if causal:
        allowed &= j <= i
    if left >= 0:
        allowed &= i - j <= left
    if right >= 0:
        allowed &= j - i <= right
    return allowed


@converter("Attention", since=23)
def _attention(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    q, k, v = ins[:3]
    mask, past_k, past_v = optional(ins, 3), optional(ins, 4), optional(ins, 5)
    nonpad = optional(ins, 6)
    packed = q.ndim == 3
    if packed:
        q = _heads(q, int(attrs["q_num_heads"]))
        k = _heads(k, int(attrs["kv_num_heads"]))
        v = _heads(v, int(attrs["kv_num_heads"]))
    if past_k is not None:
        k, v = pb.cat([past_k, k], axis=2), pb.cat([past_v, v], axis=2)
    present_k, present_v = k, v
    batch, heads, q_len, _ = q.shape
    kv_len = k.shape[2]
    scale = float(attrs["scale"]) if "scale" in attrs else 1 / math.sqrt(q.shape[3])
    if k.shape[1] != heads:  # grouped-query attention: each kv head serves several
        k = pb.repeat_interleave(k, heads // k.shape[1], dim=1)
        v = pb.repeat_interleave(v, heads // v.shape[1], dim=1)
    root = math.sqrt(scale)  # both sides scaled by its root, as ONNX's function does
    scores = (q * root) @ (k * root).transpose(-1, -2)
    softcap = float(attrs.get("softcap", 0.0))
    if softcap > 0:
        scores = pb.tanh(scores / softcap) * softcap
    capped = scores  # the second output of modes 0 and 1
    dtype = q.dtype
    bias = pb.zeros((1, 1, q_len, kv_len), dtype=dtype)
    if mask is not None:
        if mask.shape[-1] < kv_len:  # a mask shorter than the cache: the rest masked
            fill = pb.full(tuple(mask.shape[:-1]) + (kv_len - mask.shape[-1],),
                           False if mask.dtype == np.bool_ else float("-inf"), dtype=mask.dtype)
            mask = pb.cat([mask, fill], axis=-1)
        if mask.dtype == np.bool_:
            mask = pb.where(mask, pb.zeros((), dtype=dtype), pb.full((), float("-inf"),
                                                                       dtype=dtype))
        bias = bias + mask.to(dtype)
    if nonpad is not None:
        lengths = np.asarray(ints(nonpad))
        offset = lengths - q_len
    else:
        offset = np.array([past_k.shape[2] if past_k is not None else 0])
    allowed = _allowed(q_len, kv_len, offset, bool(attrs.get("is_causal", 0)),
                       int(attrs.get("left_window_size", -1)),
                       int(attrs.get("right_window_size", -1)))
    if allowed is not None:
        bias = bias + pb.tensor(np.where(allowed, 0.0, -np.inf).astype(dtype)
                                [:, None, :, :])
    if nonpad is not None:
        padding = np.arange(kv_len)[None, :] < np.asarray(ints(nonpad))[:, None]
        bias = bias + pb.tensor(np.where(padding, 0.0, -np.inf).astype(dtype)
                                .reshape(batch, 1, 1, kv_len))
    with_bias = scores + bias
    precision = onnx_dtype(attrs["softmax_precision"]) if "softmax_precision" in attrs \
        else dtype
    logits = with_bias.to(precision)
    peak = logits.amax(axis=-1, keepdims=True)
    dead = pb.isneginf(bias.amax(axis=-1, keepdims=True))  # every key masked
    peak = pb.where(pb.isneginf(peak), pb.zeros_like(peak), peak).detach()
    weights = pb.exp(logits - peak)
    total = weights.sum(axis=-1, keepdims=True)
    weights = weights / pb.where(total == 0, pb.ones_like(total), total)
    weights = pb.where(dead, pb.zeros_like(weights), weights).to(dtype)
    out = weights @ v
    if packed:
        out = out.permute(0, 2, 1, 3).reshape((batch, q_len, -1))
    mode = int(attrs.get("qk_matmul_output_mode", 0))
    qk = {0: capped, 1: capped, 2: with_bias, 3: weights}[mode]
    return [out, present_k, present_v, qk.to(dtype)]


@converter("RotaryEmbedding", since=23)
def _rotary_embedding(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, cos, sin = ins[:3]
    positions = optional(ins, 3)
    four_d = x.ndim == 4
    y = x.permute(0, 2, 1, 3) if four_d else x  # (batch, seq, heads, head) from here
    if not four_d:
        heads = int(attrs["num_heads"])
        y = y.reshape((y.shape[0], y.shape[1], heads, -1))
    dim = int(attrs.get("rotary_embedding_dim", 0)) or y.shape[3]
    rotated, kept = y[..., :dim], y[..., dim:]
    if positions is not None:
        cos, sin = cos[positions.to(np.int64)], sin[positions.to(np.int64)]
    cos, sin = cos.unsqueeze(2), sin.unsqueeze(2)
    if attrs.get("interleaved", 0):
        first, second = rotated[..., 0::2], rotated[..., 1::2]
    else:
        first, second = rotated[..., :dim // 2], rotated[..., dim // 2:]
    real = cos * first - sin * second
    imag = sin * first + cos * second
    if attrs.get("interleaved", 0):
        rotated = pb.stack([real, imag], axis=-1).reshape(tuple(rotated.shape))
    else:
        rotated = pb.cat([real, imag], axis=-1)
    out = pb.cat([rotated, kept], axis=-1)
    return [out.permute(0, 2, 1, 3) if four_d else out.reshape(tuple(x.shape))]
