"""Data for the ported programs, in place of their downloads (MNIST, Cora, WikiText-2, the
names of the RNN tutorial...): scikit-learn's bundled data sets and synthetic data, as NumPy
arrays and text, so that a program gets the same data under torch and under pullback.

No torch here: each program turns these arrays into tensors with its own framework's calls.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def digits(size: int = 28) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """scikit-learn's 8x8 digits as MNIST-like images: (N, 1, size, size) float32 in [0, 1],
    scaled up by an integer factor (nearest) and zero-padded to ``size``; the first 1,500
    (of 1,797) for training, the rest for testing (digits' own order: the same split always)."""
    from sklearn.datasets import load_digits

    data = load_digits()
    factor = size // 8
    images = np.kron(data.images / 16.0, np.ones((factor, factor)))
    pad = (size - 8 * factor) // 2
    images = np.pad(images, ((0, 0), (pad, size - 8 * factor - pad), (pad, size - 8 * factor - pad)))
    x = images[:, None].astype(np.float32)
    y = data.target.astype(np.int64)
    return x[:1500], y[:1500], x[1500:], y[1500:]


def tinyshakespeare() -> str:
    """TinyShakespeare, from the copy pullback-gpt ships (its gzip file read directly: the
    torch run does not import pullback)."""
    import gzip
    import importlib.util

    spec = importlib.util.find_spec("pullback.gpt")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("TinyShakespeare comes from pullback-gpt, which is not installed")
    folder = Path(next(iter(spec.submodule_search_locations)))
    return gzip.decompress((folder / "tinyshakespeare.txt.gz").read_bytes()).decode("utf-8")


def text() -> str:
    """About 43 KB of English: the descriptions of scikit-learn's bundled data sets (present
    wherever scikit-learn is), joined in name order."""
    import sklearn

    folder = Path(sklearn.__file__).parent / "datasets" / "descr"
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.rst")))


def write_word_corpus(folder: str | Path) -> Path:
    """``train.txt``, ``valid.txt`` and ``test.txt`` in ``folder`` (WikiText-2's layout): the
    lines of :func:`text`, 80/10/10 in order."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    lines = [line for line in text().splitlines() if line.strip()]
    a, b = int(len(lines) * 0.8), int(len(lines) * 0.9)
    for name, part in (("train", lines[:a]), ("valid", lines[a:b]), ("test", lines[b:])):
        (folder / f"{name}.txt").write_text("\n".join(part) + "\n", encoding="utf-8")
    return folder


def citation_graph(nodes: int = 600, classes: int = 5, words: int = 300,
                   seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A synthetic Cora: (binary bag-of-words features (nodes, words), class labels, directed
    citation edges (E, 2)). Papers cite mostly within their class (a stochastic block model)
    and use words drawn mostly from their class's share of the vocabulary."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, nodes)
    topic = rng.integers(0, classes, words)  # the class each word belongs to
    p_word = np.where(topic[None, :] == labels[:, None], 0.06, 0.01)
    features = (rng.random((nodes, words)) < p_word).astype(np.int32)
    same = labels[:, None] == labels[None, :]
    p_edge = np.where(same, 8.0 / nodes * classes, 1.0 / nodes)
    upper = np.triu(rng.random((nodes, nodes)) < p_edge, k=1)
    edges = np.argwhere(upper).astype(np.int32)
    return features, labels, edges


_SYLLABLES = {
    "Arvish": ["ka", "ri", "mo", "sha", "dev", "an", "ta", "vi"],
    "Boltic": ["bor", "ek", "sk", "ov", "ina", "grad", "mir", "yev"],
    "Celdan": ["mac", "ach", "ly", "bryn", "wen", "og", "dd", "rhi"],
    "Dorean": ["os", "to", "pou", "los", "ni", "kos", "ou", "dis"],
    "Esperi": ["ez", "ia", "rez", "gar", "cia", "lo", "pe", "do"],
}


def names(per_language: int = 120, seed: int = 0) -> dict[str, list[str]]:
    """Synthetic surnames of five made-up languages (the RNN tutorial's data/names/*.txt):
    each a capitalized run of two to four syllables of its language."""
    rng = np.random.default_rng(seed)
    out = {}
    for language, syllables in _SYLLABLES.items():
        out[language] = [
            "".join(rng.choice(syllables, rng.integers(2, 5))).capitalize()
            for _ in range(per_language)
        ]
    return out
