"""``TransformerBlock``: a pre-norm transformer encoder layer.

Its parameters are named as in PyTorch's ``nn.TransformerEncoderLayer`` (``self_attn``,
``linear1``, ``linear2``, ``norm1``, ``norm2``), so a PyTorch layer built with
``norm_first=True`` loads into it; the computation is PyTorch's with ``norm_first=True``::

    x = x + dropout1(self_attn(norm1(x)))
    x = x + dropout2(linear2(dropout(activation(linear1(norm2(x))))))
"""

from __future__ import annotations

from typing import Any, Callable

from pullback.tensor import Tensor

from .. import functional as F
from ..module import Module
from .attention import MultiheadAttention
from .dropout import Dropout
from .linear import Linear
from .normalization import LayerNorm

_ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"relu": F.relu, "gelu": F.gelu}


class TransformerBlock(Module):
    """Pre-norm self-attention + MLP block (batch-first by default).

    Args:
        d_model: model width.
        nhead: attention heads.
        dim_feedforward: hidden width of the MLP.
        dropout: dropout after attention, inside and after the MLP, and on attention weights.
        activation: ``"relu"``, ``"gelu"`` or a callable.
        layer_norm_eps: epsilon of both layer norms.
        batch_first: inputs are (N, L, E) (the default here; PyTorch defaults to (L, N, E)).
        bias: biases in the linear layers and layer norms.

    ``forward(x, attn_mask=None, key_padding_mask=None, is_causal=False)``.
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = "relu",
                 layer_norm_eps: float = 1e-5, batch_first: bool = True, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            if activation not in _ACTIVATIONS:
                raise ValueError(f"TransformerBlock: activation must be one of "
                                 f"{sorted(_ACTIVATIONS)} or a callable, got {activation!r}")
            activation = _ACTIVATIONS[activation]
        self.activation = activation

    def forward(self, x: Tensor, attn_mask: Tensor | None = None,
                key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        h = self.norm1(x)
        attended, _ = self.self_attn(h, h, h, key_padding_mask=key_padding_mask,
                                     need_weights=False, attn_mask=attn_mask,
                                     is_causal=is_causal)
        x = x + self.dropout1(attended)
        h = self.linear2(self.dropout(self.activation(self.linear1(self.norm2(x)))))
        return x + self.dropout2(h)
