"""The Transformer of "Attention Is All You Need" with PyTorch's classes, constructors,
parameter names and computation: ``Transformer``, ``TransformerEncoder``,
``TransformerDecoder``, ``TransformerEncoderLayer``, ``TransformerDecoderLayer``; and
``TransformerBlock``, a pre-norm, batch-first encoder layer (the GPT's block).

A PyTorch state dict of any of them loads as is. Differences from PyTorch: no nested-tensor
fast path (outputs at padded positions are computed, not zeroed, in evaluation), and
``is_causal=True`` without a mask applies the causal mask instead of raising.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np

import pullback
from pullback.errors import ArgumentError, ShapeError
from pullback.tensor import Tensor

from .. import functional as F
from .. import init
from ..containers import ModuleList
from ..module import Module
from .attention import MultiheadAttention
from .dropout import Dropout
from .linear import Linear
from .normalization import LayerNorm

Activation = str | Callable[[Tensor], Tensor]
_ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"relu": F.relu, "gelu": F.gelu}


def _activation(activation: Activation, where: str) -> Callable[[Tensor], Tensor]:
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise ArgumentError(f"{where}: activation should be relu/gelu or a callable, not "
                                f"{activation!r}")
        return _ACTIVATIONS[activation]
    return activation


def _relu_or_gelu(activation: Callable[[Tensor], Tensor]) -> int:
    """PyTorch's ``activation_relu_or_gelu`` attribute: 1 for ReLU, 2 for GELU, else 0."""
    from .activation import GELU, ReLU

    if activation is F.relu or isinstance(activation, ReLU):
        return 1
    if activation is F.gelu or isinstance(activation, GELU):
        return 2
    return 0


def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
    """The (sz, sz) causal mask: ``-inf`` above the diagonal (the future), 0 elsewhere."""
    return pullback.triu(pullback.full((sz, sz), float("-inf"), dtype=dtype, device=device), 1)


def _is_causal_mask(mask: Tensor | None, is_causal: bool | None, size: int | None) -> bool:
    """PyTorch's reading of ``is_causal``: a given value stands; ``None`` asks whether
    ``mask`` is the causal mask of ``size`` (compared in the mask's own dtype)."""
    if is_causal is not None or mask is None:
        return bool(is_causal)
    size = size if size is not None else mask.shape[-2]
    if tuple(mask.shape) != (size, size):
        return False
    causal = np.triu(np.full((size, size), -np.inf), 1).astype(np.asarray(mask.detach()).dtype)
    return bool((np.asarray(mask.detach()) == causal).all())


def _sequence_length(x: Tensor, batch_first: bool) -> int:
    return x.shape[0] if x.ndim == 2 else x.shape[1 if batch_first else 0]


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward network, each with a residual connection and a layer
    norm (after the residual, or before the block with ``norm_first``).

    Args (PyTorch's): ``d_model``, ``nhead``, ``dim_feedforward=2048``, ``dropout=0.1``,
    ``activation=F.relu`` (``"relu"``, ``"gelu"`` or a callable), ``layer_norm_eps=1e-5``,
    ``batch_first=False``, ``norm_first=False``, ``bias=True``, ``device``, ``dtype``.

    ``forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False)``.
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Activation = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation, type(self).__name__)
        self.activation_relu_or_gelu = _relu_or_gelu(self.activation)

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x: Tensor, attn_mask: Tensor | None,
                  key_padding_mask: Tensor | None, is_causal: bool) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's output (``memory``), then a feed-forward
    network; each with a residual connection and a layer norm (``norm_first`` as the
    encoder layer's).

    Args: those of :class:`TransformerEncoderLayer`.

    ``forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False)``.
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Activation = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation, type(self).__name__)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                           memory_is_causal))
        return self.norm3(x + self._ff_block(x))

    def _sa_block(self, x: Tensor, attn_mask: Tensor | None,
                  key_padding_mask: Tensor | None, is_causal: bool) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x: Tensor, memory: Tensor, attn_mask: Tensor | None,
                   key_padding_mask: Tensor | None, is_causal: bool) -> Tensor:
        x = self.multihead_attn(x, memory, memory, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


def _clones(layer: Module, n: int) -> ModuleList:
    """``n`` independent deep copies of ``layer`` (PyTorch's ``_get_clones``)."""
    return ModuleList([copy.deepcopy(layer) for _ in range(n)])


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` (deep copies: independent parameters, equal
    at the start), then ``norm`` when given.

    ``enable_nested_tensor`` and ``mask_check`` are accepted for PyTorch's signature; there
    is no nested-tensor fast path here.

    ``forward(src, mask=None, src_key_padding_mask=None, is_causal=None)``: ``is_causal=None``
    detects whether ``mask`` is the causal mask.
    """

    def __init__(self, encoder_layer: Module, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False
        self.mask_check = mask_check

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        batch_first = getattr(getattr(self.layers[0], "self_attn", None), "batch_first", False)
        is_causal = _is_causal_mask(mask, is_causal, _sequence_length(src, batch_first))
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=is_causal,
                           src_key_padding_mask=src_key_padding_mask)
        return self.norm(output) if self.norm is not None else output


class TransformerDecoder(Module):
    """``num_layers`` deep copies of ``decoder_layer``, then ``norm`` when given.

    ``forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False)``.
    """

    def __init__(self, decoder_layer: Module, num_layers: int,
                 norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        batch_first = getattr(getattr(self.layers[0], "self_attn", None), "batch_first", False)
        tgt_is_causal = _is_causal_mask(tgt_mask, tgt_is_causal,
                                        _sequence_length(tgt, batch_first))
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask,
                           tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        return self.norm(output) if self.norm is not None else output


class Transformer(Module):
    """Encoder-decoder Transformer (PyTorch's ``nn.Transformer``): an encoder of
    ``num_encoder_layers`` layers and a decoder of ``num_decoder_layers``, each followed by
    a layer norm; every matrix parameter starts xavier-uniform.

    Args (PyTorch's): ``d_model=512``, ``nhead=8``, ``num_encoder_layers=6``,
    ``num_decoder_layers=6``, ``dim_feedforward=2048``, ``dropout=0.1``,
    ``activation=F.relu``, ``custom_encoder=None``, ``custom_decoder=None``,
    ``layer_norm_eps=1e-5``, ``batch_first=False``, ``norm_first=False``, ``bias=True``,
    ``device``, ``dtype``.

    Example:
        >>> import pullback
        >>> from pullback import nn
        >>> model = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1,
        ...                        num_decoder_layers=1, dim_feedforward=32, batch_first=True)
        >>> src, tgt = pullback.randn(2, 7, 16), pullback.randn(2, 5, 16)
        >>> mask = nn.Transformer.generate_square_subsequent_mask(5)
        >>> model(src, tgt, tgt_mask=mask).shape
        (2, 5, 16)
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Activation = F.relu,
                 custom_encoder: Module | None = None, custom_decoder: Module | None = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                      batch_first, norm_first, bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(*layer_args, **kw), num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(*layer_args, **kw), num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        self._reset_parameters()
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        batch_axis = 0 if self.batch_first else 1
        if src.ndim == 3 and src.shape[batch_axis] != tgt.shape[batch_axis]:
            raise ShapeError(f"Transformer: the batch number of src and tgt must be equal, got "
                             f"{tuple(src.shape)} and {tuple(tgt.shape)}")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ShapeError(f"Transformer: the feature number of src and tgt must be equal to "
                             f"d_model ({self.d_model}), got {src.shape[-1]} and "
                             f"{tgt.shape[-1]}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    generate_square_subsequent_mask = staticmethod(generate_square_subsequent_mask)

    def _reset_parameters(self) -> None:
        """Xavier-uniform for every parameter with more than one axis (PyTorch's)."""
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)


class TransformerBlock(TransformerEncoderLayer):
    """A pre-norm, batch-first :class:`TransformerEncoderLayer` (the GPT's block)::

        x = x + dropout1(self_attn(norm1(x)))
        x = x + dropout2(linear2(dropout(activation(linear1(norm2(x))))))

    Its parameters are named as PyTorch's encoder layer's, so a PyTorch layer built with
    ``norm_first=True`` loads into it.

    Args: those of :class:`TransformerEncoderLayer` without ``norm_first``; ``activation``
    defaults to ``"relu"`` and ``batch_first`` to True.

    ``forward(x, attn_mask=None, key_padding_mask=None, is_causal=False)``.
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Activation = "relu",
                 layer_norm_eps: float = 1e-5, batch_first: bool = True, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                         batch_first, True, bias, device, dtype)

    def forward(self, x: Tensor, attn_mask: Tensor | None = None,
                key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        return super().forward(x, attn_mask, key_padding_mask, is_causal)


__all__ = [
    "Transformer", "TransformerBlock", "TransformerDecoder", "TransformerDecoderLayer",
    "TransformerEncoder", "TransformerEncoderLayer", "generate_square_subsequent_mask",
]
