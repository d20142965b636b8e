"""The corpus: finding (or downloading) TinyShakespeare, splitting it, sampling batches."""

from __future__ import annotations

import hashlib
import os
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

import pullback as pb
from pullback import Tensor

TINYSHAKESPEARE_URL = (
    "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
)
TINYSHAKESPEARE_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"


class CorpusNotFoundError(FileNotFoundError):
    """TinyShakespeare is neither on disk nor downloadable."""


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pullback"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tinyshakespeare_path(download: bool = True, root: str | Path | None = None) -> Path:
    """The path of TinyShakespeare's ``input.txt``.

    Looked up in ``root`` alone when it is given (a folder holding ``input.txt`` or
    ``tinyshakespeare/input.txt``, or the file itself); else in ``$PULLBACK_DATA`` (the same
    forms), then in the user cache (``~/.cache/pullback/tinyshakespeare/input.txt``), then
    downloaded there from its canonical location with a SHA-256 check. Offline, the error says
    where to put the file.
    """
    if root is not None:
        for path in _candidates(Path(root)):
            if path.is_file():
                return path
        raise CorpusNotFoundError(f"TinyShakespeare's input.txt is not in {root} (download it "
                                  f"from {TINYSHAKESPEARE_URL})")
    candidates: list[Path] = []
    env = os.environ.get("PULLBACK_DATA")
    if env:
        candidates += _candidates(Path(env))
    cached = _cache_dir() / "tinyshakespeare" / "input.txt"
    candidates.append(cached)
    for path in candidates:
        if path.is_file():
            return path
    if not download:
        raise CorpusNotFoundError(_where_to_put(cached))
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(".part")
    try:
        with urllib.request.urlopen(TINYSHAKESPEARE_URL, timeout=30) as response:
            tmp.write_bytes(response.read())
    except OSError as exc:
        raise CorpusNotFoundError(f"could not download TinyShakespeare ({exc}). "
                                  + _where_to_put(cached)) from None
    digest = _sha256(tmp)
    if digest != TINYSHAKESPEARE_SHA256:
        tmp.unlink()
        raise CorpusNotFoundError(
            f"downloaded TinyShakespeare has SHA-256 {digest}, expected {TINYSHAKESPEARE_SHA256}"
        )
    os.replace(tmp, cached)
    return cached


def _candidates(root: Path) -> list[Path]:
    return [root, root / "input.txt", root / "tinyshakespeare" / "input.txt"]


def _where_to_put(cached: Path) -> str:
    return (
        "TinyShakespeare not found. Put input.txt (from "
        f"{TINYSHAKESPEARE_URL}) at {cached}, or set PULLBACK_DATA to the folder holding it, "
        "or pass --data PATH."
    )


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
