"""Shared fixtures: a tiny model configuration and a small corpus."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import pullback as pb
from pullback.gpt import GPT, GPTConfig, TrainConfig

sys.path.insert(0, str(Path(__file__).parent))  # torch_gpt.py (the torch twin)

SHAKESPEARE = Path(__file__).resolve().parents[4] / "shared" / "data" / "tinyshakespeare" / "input.txt"

TINY = GPTConfig(vocab_size=20, block_size=16, n_layer=2, n_head=2, n_embd=16, dropout=0.0,
                 bias=True)


@pytest.fixture
def tiny_model() -> GPT:
    pb.manual_seed(0)
    return GPT(TINY)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A small text: the first 20,000 characters of TinyShakespeare when it is on disk, else a
    generated text with the same flavour of structure."""
    path = tmp_path / "corpus.txt"
    if SHAKESPEARE.is_file():
        path.write_text(SHAKESPEARE.read_text()[:20_000])
    else:
        lines = [f"LINE {i}: to be or not to be, that is question number {i % 7}.\n"
                 for i in range(400)]
        path.write_text("".join(lines))
    return path


def tiny_train_config(steps: int = 8, **kw) -> TrainConfig:
    base = TrainConfig(model=GPTConfig(block_size=16, n_layer=1, n_head=2, n_embd=16, dropout=0.1,
                                       bias=False),
                       batch_size=4, steps=steps, lr=3e-3, min_lr=3e-4, warmup=2,
                       eval_interval=4, eval_iters=2, checkpoint_interval=4, seed=7)
    return base.with_overrides(**kw)
