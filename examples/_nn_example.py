"""What the pullback.nn examples share: the CSV log, the PNG curve and Fashion-MNIST as
in-memory tensors (the command line and the output folder are in _example.py). Not an example
itself."""

from __future__ import annotations

import csv
from typing import Sequence

import numpy as np

import pullback
from pullback.nn.data import FashionMNIST
from pullback.nn.data.fashion_mnist import FASHION_MNIST_ROOT

from _example import data_set

FASHION_MNIST_HELP = f"the folder of Fashion-MNIST's IDX files (default: {FASHION_MNIST_ROOT})"


def write_csv(path: str, rows: Sequence[dict[str, object]]) -> None:
    """One row per dict, columns from the first row."""
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def plot(path: str, x: Sequence[float], curves: dict[str, Sequence[float]], xlabel: str,
         title: str, log_y: bool = False) -> None:
    """A PNG with one line per curve (matplotlib, no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for label, ys in curves.items():
        ax.plot(x, ys, label=label)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    if log_y:
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def fashion_mnist(train: bool, root: str | None = None) -> tuple[pullback.Tensor, pullback.Tensor]:
    """Images as float32 (N, 1, 28, 28) standardized with the training set's mean and std, and
    int64 labels; a missing data set stops the example with one line saying how to get it."""
    with data_set():
        ds = FashionMNIST(root=root, train=train)
    images = ds.data.numpy().astype(np.float32) / 255.0
    images = (images - 0.2860) / 0.3530  # Fashion-MNIST training-set mean and std
    return pullback.from_numpy(images[:, None]), ds.targets


def accuracy(model, images: pullback.Tensor, labels: pullback.Tensor, batch: int = 1000) -> float:
    """Share of images whose highest logit is the right class (evaluation mode, no graph)."""
    was_training = model.training
    model.eval()
    correct = 0
    with pullback.no_grad():
        for start in range(0, images.shape[0], batch):
            logits = model(images[start:start + batch])
            correct += int((logits.argmax(axis=1) == labels[start:start + batch]).sum().item())
    model.train(was_training)
    return correct / images.shape[0]
