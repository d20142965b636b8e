"""The corpus: TinyShakespeare (embedded in the package, or a copy the user names), splitting
it, sampling batches."""

from __future__ import annotations

import gzip
import hashlib
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

import pullback as pb
from pullback import Tensor

TINYSHAKESPEARE_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
# Karpathy's char-rnn copy (public domain text), shipped gzip-compressed as package data so that
# the main job runs offline; the SHA-256 is of the decompressed text.
EMBEDDED_CORPUS = "tinyshakespeare.txt.gz"
EMBEDDED_SOURCE = "TinyShakespeare (embedded in pullback-gpt)"


class CorpusNotFoundError(FileNotFoundError):
    """The corpus the user named is not there, or the embedded one is damaged."""


@dataclass(frozen=True)
class Corpus:
    """A training text and where it came from (a path, or :data:`EMBEDDED_SOURCE`)."""

    text: str
    source: str


def tinyshakespeare(root: str | Path | None = None) -> Corpus:
    """TinyShakespeare's text.

    Read from ``root`` alone when it is given (a folder holding ``input.txt`` or
    ``tinyshakespeare/input.txt``, or the file itself); else from ``$PULLBACK_DATA`` (the same
    forms), then the user cache (``~/.cache/pullback/tinyshakespeare/input.txt``), where a copy
    is used as it is; else the copy embedded in pullback-gpt, checked against its SHA-256.
    Nothing is downloaded.
    """
    if root is not None:
        path = _first_file(_candidates(Path(root)))
        if path is None:
            raise CorpusNotFoundError(f"TinyShakespeare's input.txt is not in {root}")
        return corpus_from_file(path)
    candidates: list[Path] = []
    env = os.environ.get("PULLBACK_DATA")
    if env:
        candidates += _candidates(Path(env))
    candidates.append(_cache_dir() / "tinyshakespeare" / "input.txt")
    path = _first_file(candidates)
    if path is not None:
        return corpus_from_file(path)
    return Corpus(embedded_tinyshakespeare(), EMBEDDED_SOURCE)


def embedded_tinyshakespeare() -> str:
    """The copy of TinyShakespeare shipped inside pullback-gpt, verified by its SHA-256."""
    try:
        compressed = resources.files(__package__).joinpath(EMBEDDED_CORPUS).read_bytes()
        raw = gzip.decompress(compressed)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise CorpusNotFoundError(f"pullback-gpt's embedded corpus {EMBEDDED_CORPUS} cannot be "
                                  f"read ({exc}); reinstall pullback-gpt") from None
    digest = hashlib.sha256(raw).hexdigest()
    if digest != TINYSHAKESPEARE_SHA256:
        raise CorpusNotFoundError(f"pullback-gpt's embedded corpus has SHA-256 {digest}, expected "
                                  f"{TINYSHAKESPEARE_SHA256}; reinstall pullback-gpt")
    return raw.decode("utf-8")


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pullback"


def _candidates(root: Path) -> list[Path]:
    return [root, root / "input.txt", root / "tinyshakespeare" / "input.txt"]


def _first_file(paths: list[Path]) -> Path | None:
    return next((path for path in paths if path.is_file()), None)


def corpus_from_file(path: str | Path) -> Corpus:
    """A UTF-8 text file as a corpus; a missing, unreadable or non-UTF-8 file is a one-line
    :class:`CorpusNotFoundError`."""
    path = Path(path)
    try:
        return Corpus(path.read_text(encoding="utf-8"), str(path))
    except UnicodeDecodeError as exc:
        raise CorpusNotFoundError(
            f"{path} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
            f"{exc.start}); convert it, e.g. iconv -t utf-8") from None
    except OSError as exc:
        raise CorpusNotFoundError(f"cannot read {path}: {exc.strerror or exc}") from None


class CharDataset:
    """A text as token ids, split as nanoGPT does (first 90% train, last 10% val)."""

    def __init__(self, ids: np.ndarray, val_fraction: float = 0.1) -> None:
        n = len(ids)
        split = int(n * (1.0 - val_fraction))
        self.train = ids[:split]
        self.val = ids[split:]

    def windows(self, split: str, block_size: int) -> tuple[np.ndarray, np.ndarray]:
        """The whole split as consecutive, non-overlapping windows: inputs ``x`` and next-token
        targets ``y``, both ``(n, block_size)`` int64, every target predicted exactly once (the
        tail shorter than a window is left out)."""
        data = self._tokens(split, block_size)
        n = (len(data) - 1) // block_size
        x = data[:n * block_size].reshape(n, block_size).astype(np.int64)
        y = data[1:n * block_size + 1].reshape(n, block_size).astype(np.int64)
        return x, y

    def check_block_size(self, block_size: int) -> None:
        """Raise ValueError when either split is shorter than one window plus its target."""
        for split in ("train", "val"):
            self._tokens(split, block_size)

    def _tokens(self, split: str, block_size: int) -> np.ndarray:
        """The token ids of ``split``, refused when shorter than one window plus its target."""
        data = self.train if split == "train" else self.val
        if len(data) <= block_size:
            raise ValueError(
                f"the {split} split has {len(data)} tokens, fewer than block_size + 1 "
                f"({block_size + 1})"
            )
        return data

    def batch(self, split: str, batch_size: int, block_size: int, rng: np.random.Generator,
              device: Any = None) -> tuple[Tensor, Tensor]:
        """Random windows ``x`` and the next-token targets ``y``, both ``(batch, block)``."""
        data = self._tokens(split, block_size)
        starts = rng.integers(0, len(data) - block_size, size=batch_size)
        offsets = starts[:, None] + np.arange(block_size)[None, :]
        x = data[offsets].astype(np.int64)
        y = data[offsets + 1].astype(np.int64)
        return pb.tensor(x, device=device), pb.tensor(y, device=device)
