"""``MultiheadAttention`` with PyTorch's constructor, parameters (``in_proj_weight``,
``out_proj``, ``bias_k``...) and forward semantics (``batch_first``, ``key_padding_mask``,
``attn_mask``, ``need_weights``, ``add_bias_kv``, ``add_zero_attn``)."""

from __future__ import annotations

import math
from typing import Any

import pullback
from pullback.errors import ShapeError
from pullback.tensor import Tensor

from .. import functional as F
from .. import init
from ..functional.attention import attention_weights, mask_to_bias
from ..module import Module
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear


class MultiheadAttention(Module):
    """Multi-head attention (Vaswani et al.), PyTorch's ``nn.MultiheadAttention``.

    Args:
        embed_dim: model width E (split over ``num_heads`` heads).
        num_heads: number of heads; must divide ``embed_dim``.
        dropout: dropout on the attention weights (training only).
        bias: biases on the input and output projections.
        add_bias_kv: learned vectors ``bias_k``/``bias_v`` appended to the keys and values
            (one more source position, which every query may attend).
        add_zero_attn: a zero key and value appended after the projections (likewise).
        kdim, vdim: widths of keys and values (default E); when they differ from E the
            projections are separate parameters (``q_proj_weight``...), as in PyTorch.
        batch_first: inputs are (N, L, E) instead of (L, N, E).

    ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)`` returns ``(output, weights or None)``. Bool
    masks mark positions that may NOT be attended (PyTorch's convention for this module); float
    masks are added to the scores. ``is_causal=True`` without ``attn_mask`` applies the causal
    mask (PyTorch requires the mask as well; here it is built for you).
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False,
                 kdim: int | None = None, vdim: int | None = None, batch_first: bool = False,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: num_heads ({num_heads}) must divide "
                             f"embed_dim ({embed_dim})")
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.dropout, self.batch_first = float(dropout), batch_first
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        kw = {"device": device, "dtype": dtype}
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(pullback.empty(3 * embed_dim, embed_dim, **kw))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.register_parameter("in_proj_weight", None)
            self.q_proj_weight = Parameter(pullback.empty(embed_dim, embed_dim, **kw))
            self.k_proj_weight = Parameter(pullback.empty(embed_dim, self.kdim, **kw))
            self.v_proj_weight = Parameter(pullback.empty(embed_dim, self.vdim, **kw))
        if bias:
            self.in_proj_bias = Parameter(pullback.empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(pullback.empty(1, 1, embed_dim, **kw))
            self.bias_v = Parameter(pullback.empty(1, 1, embed_dim, **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """PyTorch's: xavier_uniform projections, zero biases, xavier_normal ``bias_k`` and
        ``bias_v`` (out_proj keeps Linear's init for its weight)."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def _project(self, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, ...]:
        e = self.embed_dim
        b = self.in_proj_bias
        bq, bk, bv = (None, None, None) if b is None else (b[:e], b[e:2 * e], b[2 * e:])
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            if query is key and key is value:  # self-attention: one GEMM for q, k and v
                return tuple(F.linear(query, w, b).chunk(3, axis=-1))
            wq, wk, wv = w[:e], w[e:2 * e], w[2 * e:]
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        return F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        unbatched = query.ndim == 2
        if unbatched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:  # work in (L, N, E), PyTorch's native layout
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        if query.ndim != 3 or query.shape[-1] != self.embed_dim:
            raise ShapeError(f"MultiheadAttention: query of shape {tuple(query.shape)} does not "
                             f"fit embed_dim {self.embed_dim}")
        if key.shape[:2] != value.shape[:2] or key.shape[1] != query.shape[1]:
            raise ShapeError(f"MultiheadAttention: query {tuple(query.shape)}, key "
                             f"{tuple(key.shape)} and value {tuple(value.shape)} disagree on "
                             "batch or source length")
        tgt_len, n, _ = query.shape
        src_len = key.shape[0]
        q, k, v = self._project(query, key, value)
        extra_keys = 0  # appended by add_bias_kv and add_zero_attn: every query sees them
        if self.bias_k is not None:
            k = pullback.cat([k, self.bias_k.expand(1, n, self.embed_dim)], axis=0)
            v = pullback.cat([v, self.bias_v.expand(1, n, self.embed_dim)], axis=0)
            extra_keys += 1
        h, d = self.num_heads, self.head_dim
        # (L, N, E) -> (N, H, L, d)
        q, k, v = (t.reshape(t.shape[0], n, h, d).permute(1, 2, 0, 3) for t in (q, k, v))
        if self.add_zero_attn:
            zeros = pullback.zeros(n, h, 1, d, dtype=k.dtype, device=k.device)
            k, v = pullback.cat([k, zeros], axis=2), pullback.cat([v, zeros], axis=2)
            extra_keys += 1
        bias = self._bias(attn_mask, key_padding_mask, is_causal, q, n, tgt_len, src_len)
        if bias is not None and extra_keys:
            bias = pullback.pad(bias, [0, extra_keys])
        p = self.dropout if self.training else 0.0
        scale = 1.0 / math.sqrt(d)
        weights = None
        if need_weights:
            weights = attention_weights(q, k, bias, scale)
            used = F.dropout(weights, p, True) if p > 0 else weights
            out = used @ v
        else:
            out = F.scaled_dot_product_attention(q, k, v, bias, dropout_p=p, scale=scale)
        out = out.permute(2, 0, 1, 3).reshape(tgt_len, n, self.embed_dim)
        out = self.out_proj(out)
        if unbatched:
            out = out[:, 0]
        elif self.batch_first:
            out = out.transpose(0, 1)
        if weights is not None:
            if average_attn_weights:
                weights = weights.mean(axis=1)
            if unbatched:
                weights = weights[0]
        return out, weights

    def _bias(self, attn_mask: Tensor | None, key_padding_mask: Tensor | None, is_causal: bool,
              like: Tensor, n: int, tgt_len: int, src_len: int) -> Tensor | None:
        """One additive mask (N or 1, H or 1, L, S) from the attention and padding masks."""
        where = "MultiheadAttention"
        bias = None
        if attn_mask is None and is_causal:
            attn_mask = pullback.triu(pullback.ones(tgt_len, src_len, dtype="bool",
                                                    device=like.device), 1)
        if attn_mask is not None:
            bias = mask_to_bias(attn_mask, like, False, where)
            expected: tuple[int, ...]
            if bias.ndim == 2:
                expected = (tgt_len, src_len)
                bias_shape = (1, 1, tgt_len, src_len)
            else:
                expected = (n * self.num_heads, tgt_len, src_len)
                bias_shape = (n, self.num_heads, tgt_len, src_len)
            if tuple(bias.shape) != expected:
                raise ShapeError(f"{where}: attn_mask of shape {tuple(attn_mask.shape)} should "
                                 f"be {expected[-2:]} or {(n * self.num_heads, tgt_len, src_len)}")
            bias = bias.reshape(bias_shape)
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (n, src_len):
                raise ShapeError(f"{where}: key_padding_mask of shape "
                                 f"{tuple(key_padding_mask.shape)} should be {(n, src_len)}")
            padding = mask_to_bias(key_padding_mask, like, False, where).reshape(n, 1, 1, src_len)
            bias = padding if bias is None else bias + padding
        return bias

    def extra_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, dropout={self.dropout}, "
                f"batch_first={self.batch_first}")


MultiHeadAttention = MultiheadAttention
