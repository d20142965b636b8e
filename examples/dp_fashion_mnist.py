"""Train a CNN on Fashion-MNIST with differential privacy (DP-SGD, pullback.dp) at epsilon = 1,
3 and 8 (delta = 1e-5), next to the same CNN trained without privacy.

    python examples/dp_fashion_mnist.py [--epochs 4] [--epsilons 1 3 8] [--batch-size 256]
        [--lr 0.5] [--non-private-lr 0.1] [--physical-batch N] [--accountant rdp|prv]
        [--data DIR] [--out DIR] [--smoke]

For each target epsilon, ``PrivacyEngine.make_private_with_epsilon`` picks the noise multiplier
that spends exactly that budget in the run (Poisson-sampled batches of expected size
--batch-size, per-sample gradients clipped to norm --clip), and the run is trained from the same
initial weights as the non-private one (SGD with momentum 0.9, the same epochs and batch size;
each with its own learning rate, picked from a small grid: clipped, noised gradients take a
larger one). The CNN is the small tanh network of DP-SGD papers (Papernot et al.,
"Tempered Sigmoid Activations for Deep Learning with Differential Privacy", 2021; Opacus's MNIST
example), 26,010 parameters: noise is added to every coordinate, so DP-SGD favours small models.
--physical-batch splits each logical batch into smaller ones (BatchMemoryManager: same update,
same accounting, less memory).

Reads the IDX files from --data (default /usr/share/datasets/fashion-mnist). Writes
accuracy_vs_epsilon.csv (one row per run: the epsilon spent by the RDP and the PRV accountant,
the noise multiplier, test accuracy, time) and accuracy_vs_epsilon.png to --out (default
runs/dp_fashion_mnist/), and ends with one JSON line.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from typing import Any

import pullback as pb
from pullback import nn, optim
from pullback.dp import ACCOUNTANTS, BatchMemoryManager, PrivacyEngine, prv_epsilon
from pullback.nn.data import DataLoader, TensorDataset

from _example import example_parser, output_dir
from _nn_example import FASHION_MNIST_HELP, accuracy, fashion_mnist, write_csv

DELTA = 1e-5


def make_model() -> nn.Module:
    """28x28 -> conv 16 (8x8, stride 2) -> 14 -> pool -> 13 -> conv 32 (4x4, stride 2) -> 5 ->
    pool -> 4 -> 32 -> 10, tanh activations."""
    return nn.Sequential(
        nn.Conv2d(1, 16, 8, stride=2, padding=3), nn.Tanh(), nn.MaxPool2d(2, 1),
        nn.Conv2d(16, 32, 4, stride=2), nn.Tanh(), nn.MaxPool2d(2, 1),
        nn.Flatten(), nn.Linear(32 * 4 * 4, 32), nn.Tanh(), nn.Linear(32, 10))


def train(args: Any, train_set: TensorDataset, test: tuple[pb.Tensor, pb.Tensor],
          target_epsilon: float | None) -> dict[str, Any]:
    """One run from the seeded initial weights: private at ``target_epsilon``, or not (None)."""
    pb.manual_seed(args.seed)
    model = make_model()
    lr = args.lr if target_epsilon is not None else args.non_private_lr
    optimizer = optim.SGD(model.parameters(), lr=lr, momentum=args.momentum)
    loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    engine = PrivacyEngine(accountant=args.accountant)
    if target_epsilon is not None:
        model, optimizer, loader = engine.make_private_with_epsilon(
            module=model, optimizer=optimizer, data_loader=loader, target_epsilon=target_epsilon,
            target_delta=DELTA, epochs=args.epochs, max_grad_norm=args.clip)
    start = time.perf_counter()
    for _ in range(args.epochs):
        with contextlib.ExitStack() as stack:
            batches = loader
            if target_epsilon is not None and args.physical_batch:
                batches = stack.enter_context(BatchMemoryManager(
                    data_loader=loader, optimizer=optimizer,
                    max_physical_batch_size=args.physical_batch))
            for images, labels in batches:
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(images), labels).backward()
                optimizer.step()
    seconds = time.perf_counter() - start
    row = {"run": "non-private" if target_epsilon is None else "private",
           "target_epsilon": target_epsilon if target_epsilon is not None else math.inf,
           "epsilon_rdp": math.inf, "epsilon_prv": math.inf, "noise_multiplier": 0.0,
           "max_grad_norm": args.clip if target_epsilon is not None else math.inf,
           "epochs": args.epochs, "steps": args.epochs * len(loader), "lr": lr,
           "test_accuracy": accuracy(model, *test), "train_seconds": round(seconds, 1)}
    if target_epsilon is not None:
        history = engine.accountant.history
        rdp = ACCOUNTANTS["rdp"]()
        rdp.history = list(history)
        row.update(epsilon_rdp=rdp.get_epsilon(DELTA), epsilon_prv=prv_epsilon(history, DELTA),
                   noise_multiplier=optimizer.noise_multiplier)
    print(f"{row['run']} (target epsilon {row['target_epsilon']}): noise multiplier "
          f"{row['noise_multiplier']:.3f}, epsilon spent {row['epsilon_rdp']:.3f} (RDP) / "
          f"{row['epsilon_prv']:.3f} (PRV), test accuracy {row['test_accuracy']:.2%}, "
          f"{seconds:.0f} s", flush=True)
    return row


def plot(path: str, rows: list[dict[str, Any]], accountant: str, scored: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    private = [r for r in rows if r["run"] == "private"]
    baseline = next(r for r in rows if r["run"] == "non-private")
    spent = "epsilon_rdp" if accountant == "rdp" else "epsilon_prv"
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([r[spent] for r in private], [100 * r["test_accuracy"] for r in private], "o-",
            label="DP-SGD (pullback.dp)")
    for r in private:
        ax.annotate(f"sigma={r['noise_multiplier']:.2f}",
                    (r[spent], 100 * r["test_accuracy"]), textcoords="offset points",
                    xytext=(4, -12), fontsize=8)
    ax.axhline(100 * baseline["test_accuracy"], color="gray", linestyle="--",
               label="non-private, same CNN and schedule")
    ax.set_xscale("log")
    ax.set_xlabel(f"epsilon spent ({accountant.upper()} accountant, delta = {DELTA:g})")
    ax.set_ylabel(f"test accuracy, % (first {scored:,} test images)")
    ax.set_title(f"Fashion-MNIST CNN, {baseline['epochs']} epochs")
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = example_parser(__doc__, __file__, data_help=FASHION_MNIST_HELP)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 3.0, 8.0])
    parser.add_argument("--batch-size", type=int, default=256,
                        help="the expected (Poisson) batch size of the private runs")
    parser.add_argument("--physical-batch", type=int, default=None, metavar="N",
                        help="split each private batch into physical batches of at most N")
    parser.add_argument("--lr", type=float, default=0.5, help="the private runs' learning rate")
    parser.add_argument("--non-private-lr", type=float, default=0.1)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--clip", type=float, default=1.0, help="per-sample clipping norm")
    parser.add_argument("--accountant", choices=sorted(ACCOUNTANTS), default="rdp")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    train_limit, scored = (2048, 1000) if args.smoke else (None, 10000)
    if args.smoke:  # one epoch on 2,048 images: seconds
        args.epochs = 1
    out = output_dir(args.out)
    train_x, train_y = fashion_mnist(train=True, root=args.data)
    test_x, test_y = fashion_mnist(train=False, root=args.data)
    train_set = TensorDataset(train_x[:train_limit], train_y[:train_limit])
    test = (test_x[:scored], test_y[:scored])
    print(f"Fashion-MNIST CNN ({sum(p.numel() for p in make_model().parameters()):,} "
          f"parameters), {len(train_set):,} training images, batch {args.batch_size}, "
          f"{args.epochs} epochs, SGD(momentum={args.momentum}; lr {args.lr} private, "
          f"{args.non_private_lr} not), delta={DELTA:g}")

    rows = [train(args, train_set, test, None)]
    rows += [train(args, train_set, test, eps) for eps in args.epsilons]
    write_csv(os.path.join(out, "accuracy_vs_epsilon.csv"), rows)
    plot(os.path.join(out, "accuracy_vs_epsilon.png"), rows, args.accountant, scored)
    summary = {"non_private_accuracy": rows[0]["test_accuracy"],
               "private": [{k: r[k] for k in ("target_epsilon", "epsilon_rdp", "epsilon_prv",
                                              "noise_multiplier", "test_accuracy")}
                           for r in rows[1:]],
               "seconds": round(sum(r["train_seconds"] for r in rows), 1), "out": out}
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
