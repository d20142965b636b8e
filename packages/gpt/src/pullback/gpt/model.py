"""A decoder-only GPT (GPT-2 layout, nanoGPT's names): token and learned position embeddings,
pre-norm blocks of causal self-attention and a GELU MLP, a final LayerNorm, and an LM head tied
to the token embedding."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import pullback as pb
import pullback.nn as nn
import pullback.nn.functional as F
from pullback import Tensor

from .config import GPTConfig

KVCache = list[tuple[Tensor, Tensor]]


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention through the fused attention op."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.resid_dropout = nn.Dropout(config.dropout)

    def _heads(self, x: Tensor) -> Tensor:
        b, t, _ = x.shape
        return x.reshape(b, t, self.n_head, self.n_embd // self.n_head).transpose(1, 2)

    def forward(self, x: Tensor, cache: tuple[Tensor, Tensor] | None = None) -> Any:
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(self.n_embd, axis=2)
        q, k, v = self._heads(q), self._heads(k), self._heads(v)
        if cache is not None:
            # Sampling: the new positions attend to every cached one and causally to each other.
            past_k, past_v = cache
            if past_k is not None:
                if t != 1:
                    raise ValueError("with a filled cache, feed one new position at a time")
                k = pb.cat([past_k, k], axis=2)
                v = pb.cat([past_v, v], axis=2)
            # One new position may see every cached one; a first pass is causal as in training.
            y = F.scaled_dot_product_attention(q, k, v, is_causal=past_k is None)
            new_cache = (k, v)
        else:
            y = F.scaled_dot_product_attention(
                q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0
            )
            new_cache = None
        y = y.transpose(1, 2).reshape(b, t, c)
        y = self.resid_dropout(self.c_proj(y))
        return y if cache is None else (y, new_cache)


class MLP(nn.Module):
    """Linear 4x, GELU, Linear back."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x: Tensor, cache: Any = None) -> Any:
        if cache is None:
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))
        a, new_cache = self.attn(self.ln_1(x), cache)
        x = x + a
        return x + self.mlp(self.ln_2(x)), new_cache


class Blocks(nn.ModuleList):
    """The ordinary stack of blocks (each keeps its activations for backward)."""

    def forward(self, x: Tensor) -> Tensor:
        for block in self:
            x = block(x)
        return x

    def forward_cached(self, x: Tensor, cache: KVCache | None) -> tuple[Tensor, KVCache]:
        new_cache: KVCache = []
        for i, block in enumerate(self):
            x, layer_cache = block(x, cache[i] if cache is not None else (None, None))
            new_cache.append(layer_cache)
        return x, new_cache


class GPT(nn.Module):
    """The language model. ``forward(idx, targets=None)`` returns ``(logits, loss)``."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        if config.reversible:
            from .reversible import ReversibleBlocks  # it builds on this module's layers

            blocks: nn.Module = ReversibleBlocks(config)
        else:
            blocks = Blocks([Block(config) for _ in range(config.n_layer)])
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=blocks,
            ln_f=nn.LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        # Weight tying: the LM head and the token embedding are one Parameter object, so they
        # stay tied through load_state_dict (which copies into parameters) and to() (which
        # converts parameters in place).
        self.lm_head.weight = self.transformer.wte.weight
        self.apply(self._init_weights)
        # GPT-2: residual projections scaled by 1/sqrt(2 * n_layer).
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_parameters(self, non_embedding: bool = True) -> int:
        """Parameter count (tied weights once; without position embeddings by default)."""
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.transformer.wpe.weight.numel()
        return n

    def _embed(self, idx: Tensor, start: int) -> Tensor:
        b, t = idx.shape
        if start + t > self.config.block_size:
            raise ValueError(
                f"sequence of length {start + t} exceeds the block size {self.config.block_size}"
            )
        pos = pb.arange(start, start + t, device=idx.device)
        return self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))

    def forward(self, idx: Tensor, targets: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        x = self.transformer.h(self._embed(idx, 0))
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return logits, loss

    def forward_cached(self, idx: Tensor, cache: KVCache | None) -> tuple[Tensor, KVCache]:
        """Logits of the last position of ``idx``, given keys/values of earlier positions."""
        start = 0 if cache is None else cache[0][0].shape[2]
        x, new_cache = self.transformer.h.forward_cached(self._embed(idx, start), cache)
        logits = self.lm_head(self.transformer.ln_f(x[:, -1:, :]))
        return logits[:, -1, :], new_cache

    @pb.no_grad()
    def generate(self, idx: Tensor, max_new_tokens: int, temperature: float = 1.0,
                 top_k: int | None = None,
                 generator: np.random.Generator | None = None) -> Tensor:
        """Append ``max_new_tokens`` sampled tokens to ``idx`` (shape ``(batch, time)``).

        Keys and values are cached, so each new token costs one position's forward. When the
        context reaches ``block_size``, the cache is rebuilt from the last ``block_size // 2``
        tokens (one forward over them), so the cost stays linear in the length generated.
        Sampling draws from ``generator`` (a NumPy generator on the host; seed it to repeat).
        """
        if temperature <= 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        gen = generator if generator is not None else np.random.default_rng()
        block = self.config.block_size
        out = idx
        context = idx[:, -block:]
        logits, cache = self.forward_cached(context, None)
        for _ in range(max_new_tokens):
            nxt = _sample(logits, temperature, top_k, gen)
            out = pb.cat([out, nxt], axis=1)
            if cache[0][0].shape[2] >= block:
                logits, cache = self.forward_cached(out[:, -(block // 2):], None)
            else:
                logits, cache = self.forward_cached(nxt, cache)
        return out


def _sample(logits: Tensor, temperature: float, top_k: int | None,
            gen: np.random.Generator) -> Tensor:
    """One token id per row, sampled from softmax(logits / temperature) (top-k truncated)."""
    z = logits.float().numpy() / temperature
    if top_k is not None:
        k = min(top_k, z.shape[-1])
        kth = np.sort(z, axis=-1)[:, -k][:, None]
        z = np.where(z < kth, -np.inf, z)
    z = z - z.max(axis=-1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=-1, keepdims=True)
    u = gen.random((p.shape[0], 1))
    ids = (np.cumsum(p, axis=-1) < u).sum(axis=-1, keepdims=True)
    ids = np.minimum(ids, p.shape[-1] - 1).astype(np.int64)
    return pb.tensor(ids, device=logits.device)
