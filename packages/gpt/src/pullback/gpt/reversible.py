"""The reversible stack of blocks (``GPTConfig(reversible=True)``, ``--reversible``).

RevNet-style, as Reformer's reversible Transformer: the embedding is duplicated into two
streams, each layer is one additive coupling with attention as ``f`` and the MLP as ``g``
(``y1 = x1 + attn(ln_1(x2))``, ``y2 = x2 + mlp(ln_2(y1))``), and the two streams are averaged
before the final LayerNorm. The layers hold the parameters of the ordinary blocks, so a model
has the same size either way; training keeps no activations per layer (pullback-avyaya
rebuilds them in backward).
"""

from __future__ import annotations

from typing import Any

import pullback as pb
import pullback.nn as nn
from pullback import Tensor
from pullback.avyaya import ReversibleBlock, ReversibleSequential

from .config import GPTConfig
from .model import MLP, CausalSelfAttention


class AttentionBranch(nn.Module):
    """``attn(ln_1(x))``: a layer's ``f``."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)

    def forward(self, x: Tensor, cache: tuple[Tensor, Tensor] | None = None) -> Any:
        return self.attn(self.ln_1(x), cache)


class MLPBranch(nn.Module):
    """``mlp(ln_2(x))``: a layer's ``g``."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x: Tensor) -> Tensor:
        return self.mlp(self.ln_2(x))


class ReversibleBlocks(nn.Module):
    """``n_layer`` reversible layers over the duplicated residual stream."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.stack = ReversibleSequential(
            [ReversibleBlock(AttentionBranch(config), MLPBranch(config), split_dim=-1)
             for _ in range(config.n_layer)])

    def forward(self, x: Tensor) -> Tensor:
        first, second = self.stack(pb.cat([x, x], axis=-1)).split(x.shape[-1], axis=-1)
        return (first + second) * 0.5

    def forward_cached(self, x: Tensor, cache: Any) -> tuple[Tensor, list[Any]]:
        """Sampling (no graph): each layer's coupling, its attention fed the cached keys."""
        first, second, new_cache = x, x, []
        for i, layer in enumerate(self.stack):
            attended, layer_cache = layer.f(second, cache[i] if cache is not None else (None, None))
            first = first + attended
            second = second + layer.g(first)
            new_cache.append(layer_cache)
        return (first + second) * 0.5, new_cache
