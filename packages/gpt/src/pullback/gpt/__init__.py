"""pullback.gpt: a character-level GPT trained entirely on pullback, with a CLI.

    from pullback.gpt import GPT, GPTConfig, CharTokenizer
    model = GPT(GPTConfig(vocab_size=65))
    logits, loss = model(idx, targets)

Command line: ``pullback-gpt train|sample|eval`` (or ``python -m pullback.gpt``).
"""

from .__about__ import __version__
from .checkpoint import load_checkpoint, save_checkpoint
from .config import PRESETS, GPTConfig, TrainConfig
from .data import CharDataset, Corpus, tinyshakespeare
from .model import GPT
from .tokenizer import CharTokenizer

__all__ = [
    "GPT", "GPTConfig", "PRESETS", "CharDataset", "CharTokenizer", "Corpus", "TrainConfig",
    "__version__", "load_checkpoint", "save_checkpoint", "tinyshakespeare",
]
