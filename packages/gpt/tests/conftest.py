"""Fixtures of pullback-gpt's tests: a tiny model and a small corpus."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import pullback as pb
from pullback.gpt import GPT

sys.path.insert(0, str(Path(__file__).parent))  # gpt_support.py and torch_gpt.py

from gpt_support import SHAKESPEARE, TINY  # noqa: E402


@pytest.fixture
def tiny_model() -> GPT:
    pb.manual_seed(0)
    return GPT(TINY)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A small text: the first 20,000 characters of TinyShakespeare when it is on disk, else a
    generated text with the same flavour of structure."""
    path = tmp_path / "corpus.txt"
    if SHAKESPEARE is not None:
        path.write_text(SHAKESPEARE.read_text()[:20_000])
    else:
        lines = [f"LINE {i}: to be or not to be, that is question number {i % 7}.\n"
                 for i in range(400)]
        path.write_text("".join(lines))
    return path
