"""Train a small CNN on Fashion-MNIST (conv, max-pool, dropout, linear; pullback.nn's fused
conv and pooling ops).

    python examples/fashion_mnist_cnn.py [--epochs 6] [--steps-per-epoch N] [--seed 0]
        [--data DIR] [--out DIR] [--smoke]

Reads the IDX files from --data (default /usr/share/datasets/fashion-mnist). Shows a tqdm
progress bar per epoch, writes metrics.csv and curves.png to --out (default
runs/fashion_mnist_cnn/) and ends with one JSON line summing up the run.
"""

from __future__ import annotations

import json
import os
import time

from tqdm import tqdm

import pullback as pb
from pullback import nn, optim
from pullback.nn.data import DataLoader, TensorDataset

from _example import example_parser, output_dir
from _nn_example import FASHION_MNIST_HELP, accuracy, fashion_mnist, plot, write_csv


def make_model() -> nn.Module:
    """28x28 -> conv 16 -> pool 14x14 -> conv 32 -> pool 7x7 -> 128 -> 10."""
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.25), nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.25),
        nn.Linear(128, 10),
    )


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = example_parser(__doc__, __file__, data_help=FASHION_MNIST_HELP)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--steps-per-epoch", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.smoke:  # one short epoch, scored on the first 1,000 images of each split
        args.epochs, args.steps_per_epoch = 1, 20
    out = output_dir(args.out)
    scored = 1000 if args.smoke else 10000

    pb.manual_seed(args.seed)
    train_x, train_y = fashion_mnist(train=True, root=args.data)
    test_x, test_y = fashion_mnist(train=False, root=args.data)
    test_x, test_y = test_x[:scored], test_y[:scored]
    train = DataLoader(TensorDataset(train_x, train_y), batch_size=args.batch_size, shuffle=True)
    model = make_model()
    optimizer = optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.05)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"Fashion-MNIST CNN ({n_params} parameters), AdamW(lr={args.lr}), cosine schedule, "
          f"batch {args.batch_size}")

    rows, start = [], time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        total, batches = 0.0, 0
        steps = min(len(train), args.steps_per_epoch or len(train))
        for images, labels in tqdm(train, total=steps, desc=f"epoch {epoch}", leave=False):
            loss = loss_fn(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total, batches = total + loss.item(), batches + 1
            if batches == steps:
                break
        scheduler.step()
        rows.append({"epoch": epoch, "train_loss": total / batches,
                     "train_accuracy": accuracy(model, train_x[:scored], train_y[:scored]),
                     "test_accuracy": accuracy(model, test_x, test_y),
                     "seconds": time.perf_counter() - start})
        print(f"epoch {epoch}: train loss {rows[-1]['train_loss']:.4f}, test accuracy "
              f"{rows[-1]['test_accuracy']:.2%}, {rows[-1]['seconds']:.1f} s", flush=True)

    write_csv(os.path.join(out, "metrics.csv"), rows)
    plot(os.path.join(out, "curves.png"), [r["epoch"] for r in rows],
         {f"train accuracy (first {scored:,})": [r["train_accuracy"] for r in rows],
          "test accuracy": [r["test_accuracy"] for r in rows]}, "epoch",
         "Fashion-MNIST CNN (pullback)")
    summary = {"epochs": args.epochs, "test_accuracy": rows[-1]["test_accuracy"],
               "train_loss": rows[-1]["train_loss"], "seconds": rows[-1]["seconds"], "out": out}
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
