"""Shared test values for pullback-gpt's tests: a tiny model configuration and the corpus.

A uniquely named module (not conftest): test files import from it, and in a combined run of all
packages every package's conftest is a different module named "conftest".
"""

from __future__ import annotations

from pullback.gpt import GPTConfig, TrainConfig
from pullback.gpt.data import embedded_tinyshakespeare

SHAKESPEARE = embedded_tinyshakespeare()  # the copy inside pullback-gpt: tests never read elsewhere

TINY = GPTConfig(vocab_size=20, block_size=16, n_layer=2, n_head=2, n_embd=16, dropout=0.0,
                 bias=True)


def tiny_train_config(steps: int = 8, **kw) -> TrainConfig:
    base = TrainConfig(model=GPTConfig(block_size=16, n_layer=1, n_head=2, n_embd=16, dropout=0.1,
                                       bias=False),
                       batch_size=4, steps=steps, lr=3e-3, min_lr=3e-4, warmup=2,
                       eval_interval=4, eval_iters=2, checkpoint_interval=4, seed=7)
    return base.with_overrides(**kw)
