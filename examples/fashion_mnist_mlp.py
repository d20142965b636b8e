"""Train a small MLP on Fashion-MNIST with pullback.nn and pullback.optim (``nox -s demo``).

    python examples/fashion_mnist_mlp.py [--epochs 5] [--steps-per-epoch N] [--seed 0]

Reads the IDX files from /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist).
Prints one line per epoch (mean training loss, accuracy on the 10,000 test images, seconds) and
ends with one JSON line summing up the run. About a minute on two cores.
"""

from __future__ import annotations

import argparse
import json
import time

import pullback as pb
from pullback import nn, optim
from pullback.nn.data import DataLoader, FashionMNIST


def make_model() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 256), nn.ReLU(), nn.Linear(256, 10))


def accuracy(model: nn.Module, loader: DataLoader) -> float:
    """Share of images whose highest logit is the right class."""
    model.eval()
    correct = seen = 0
    with pb.no_grad():
        for images, labels in loader:
            correct += int((model(images).argmax(axis=1) == labels).sum().item())
            seen += labels.shape[0]
    model.train()
    return correct / seen


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--steps-per-epoch", type=int, default=None,
                        help="stop each epoch after this many batches (a quick run)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    pb.manual_seed(args.seed)
    train_set, test_set = FashionMNIST(train=True), FashionMNIST(train=False)
    train = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    test = DataLoader(test_set, batch_size=1000)
    model = make_model()
    optimizer = optim.AdamW(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    print(f"Fashion-MNIST: {len(train_set)} training images, {len(test_set)} test images; "
          f"MLP 784-256-10, AdamW(lr={args.lr}), batch {args.batch_size}")

    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        total, batches = 0.0, 0
        for images, labels in train:
            loss = loss_fn(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total, batches = total + loss.item(), batches + 1
            if batches == args.steps_per_epoch:
                break
        test_accuracy = accuracy(model, test)
        print(f"epoch {epoch}: train loss {total / batches:.4f}, test accuracy "
              f"{test_accuracy:.2%}, {time.perf_counter() - start:.1f} s", flush=True)
    summary = {"epochs": args.epochs, "steps": args.epochs * batches,
               "train_loss": total / batches, "test_accuracy": test_accuracy,
               "seconds": time.perf_counter() - start}
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
