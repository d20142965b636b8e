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
    """A small text: the first 20,000 characters of TinyShakespeare."""
    path = tmp_path / "corpus.txt"
    path.write_text(SHAKESPEARE[:20_000])
    return path
