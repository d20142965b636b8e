"""What the pramana benchmarks share: Fashion-MNIST as flat float32 arrays, and a small dropout
MLP trained on it (deterministic, seeded). Not a benchmark itself."""

from __future__ import annotations

import sys

import numpy as np

import pullback
from pullback import nn, optim
from pullback.nn import functional as F
from pullback.nn.data import FashionMNIST
from pullback.nn.data.fashion_mnist import FASHION_MNIST_ROOT

MEAN, STD = 0.2860, 0.3530  # Fashion-MNIST training-set pixel mean and std


def fashion_mnist(train: bool, root: str = FASHION_MNIST_ROOT) -> tuple[np.ndarray, np.ndarray]:
    """Standardized images (N, 784) float32 and int64 labels; one line and exit 2 if missing."""
    try:
        ds = FashionMNIST(root=root, train=train)
    except FileNotFoundError as exc:
        print(f"error: {exc} (Debian: apt-get install dataset-fashion-mnist)", file=sys.stderr)
        sys.exit(2)
    images = (ds.data.numpy().astype(np.float32) / 255.0 - MEAN) / STD
    return images.reshape(len(images), -1), ds.targets.numpy()


def standardize(pixels: np.ndarray) -> np.ndarray:
    """Pixels in [0, 1] -> the standardized input of the models."""
    return ((pixels - MEAN) / STD).astype(np.float32)


def mlp(p: float, seed: int, hidden: int = 256) -> nn.Module:
    """784-hidden-hidden-10 with ReLU and dropout ``p`` after each hidden layer."""
    pullback.manual_seed(seed)
    return nn.Sequential(nn.Linear(784, hidden), nn.ReLU(), nn.Dropout(p),
                         nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(p),
                         nn.Linear(hidden, 10))


def train(model: nn.Module, x: np.ndarray, y: np.ndarray, epochs: int, seed: int,
          batch: int = 128, lr: float = 1e-3) -> nn.Module:
    """AdamW on shuffled mini-batches; returns the model in evaluation mode."""
    rng = np.random.default_rng(seed)
    opt = optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    model.train()
    for _ in range(epochs):
        order = rng.permutation(len(x))
        for start in range(0, len(x) - batch + 1, batch):
            idx = order[start:start + batch]
            opt.zero_grad()
            F.cross_entropy(model(pullback.from_numpy(x[idx])), pullback.from_numpy(y[idx])).backward()
            opt.step()
    return model.eval()


def accuracy(model: nn.Module, x: np.ndarray, y: np.ndarray) -> float:
    with pullback.no_grad():
        logits = model(pullback.from_numpy(x)).numpy()
    return float((logits.argmax(1) == y).mean())
