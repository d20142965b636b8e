"""Train an MLP on Fashion-MNIST with pullback.nn and pullback.optim (``nox -s demo-mnist``).

    python examples/fashion_mnist_mlp.py [--epochs 12] [--steps-per-epoch N] [--seed 0]
        [--data DIR] [--out DIR] [--smoke]

Reads the IDX files from --data (default /usr/share/datasets/fashion-mnist, Debian's
dataset-fashion-mnist). Shows a tqdm progress bar per epoch, writes metrics.csv and curves.png
to --out (default runs/fashion_mnist_mlp/) and ends with one JSON line summing up the run.
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
    return nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 512), nn.ReLU(), nn.Dropout(0.2),
                         nn.Linear(512, 256), nn.ReLU(), nn.Dropout(0.2), nn.Linear(256, 10))


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = example_parser(__doc__, __file__, data_help=FASHION_MNIST_HELP)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--steps-per-epoch", type=int, default=None,
                        help="stop each epoch after this many batches (a quick run)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.smoke:  # one short epoch, scored on the first 1,000 test images
        args.epochs, args.steps_per_epoch = 1, 30
    out = output_dir(args.out)

    pb.manual_seed(args.seed)
    train_x, train_y = fashion_mnist(train=True, root=args.data)
    test_x, test_y = fashion_mnist(train=False, root=args.data)
    if args.smoke:
        test_x, test_y = test_x[:1000], test_y[:1000]
    train = DataLoader(TensorDataset(train_x, train_y), batch_size=args.batch_size, shuffle=True)
    model = make_model()
    optimizer = optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    loss_fn = nn.CrossEntropyLoss()
    n_params = sum(p.numel() for p in model.parameters())
    print(f"Fashion-MNIST: {len(train_y)} training / {len(test_y)} test images; MLP 784-512-256-10 "
          f"({n_params} parameters), AdamW(lr={args.lr}), cosine schedule, batch {args.batch_size}")

    rows, start, total_steps = [], time.perf_counter(), 0
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
        total_steps += batches
        scheduler.step()
        rows.append({"epoch": epoch, "train_loss": total / batches,
                     "train_accuracy": accuracy(model, train_x[:10000], train_y[:10000]),
                     "test_accuracy": accuracy(model, test_x, test_y),
                     "seconds": time.perf_counter() - start})
        print(f"epoch {epoch}: train loss {rows[-1]['train_loss']:.4f}, test accuracy "
              f"{rows[-1]['test_accuracy']:.2%}, {rows[-1]['seconds']:.1f} s", flush=True)

    write_csv(os.path.join(out, "metrics.csv"), rows)
    epochs = [r["epoch"] for r in rows]
    plot(os.path.join(out, "curves.png"), epochs,
         {"train accuracy (first 10k)": [r["train_accuracy"] for r in rows],
          "test accuracy": [r["test_accuracy"] for r in rows]}, "epoch",
         "Fashion-MNIST MLP (pullback)")
    summary = {"epochs": args.epochs, "steps": total_steps,
               "train_loss": rows[-1]["train_loss"], "test_accuracy": rows[-1]["test_accuracy"],
               "seconds": rows[-1]["seconds"], "out": out}
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
