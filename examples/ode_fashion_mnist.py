"""A continuous-depth classifier on Fashion-MNIST (an ODE block) next to a ResNet of the same size.

    python examples/ode_fashion_mnist.py [--epochs 1] [--batch-size 32] [--steps 200]
        [--test-images 10000] [--seed 0] [--data DIR] [--out DIR] [--smoke]

Both models downsample 28x28 to 7x7x32 with three convolutions, then transform the features
with the same vector field f(h) = conv(tanh(conv(tanh(h)))) (two 3x3 convolutions, 32
channels), then pool and classify:

- ode_adjoint: dh/dt = f(h) over [0, 1] (rk4, step 1/4: 16 evaluations of f forward), gradients
  by the adjoint (pullback.sutra.NeuralODE);
- ode_backprop: the same model, gradients by backpropagation through the solver;
- resnet: one residual block h + f(h) (Chen et al.'s ResNet baseline: the same parameters).

Each is trained from the same seed with Adam (by default a short run: 200 batches of 32, since
the ODE's step costs about 16 evaluations of f forward and as many vector-Jacobian products
backward; ``--steps 0`` trains whole epochs) and scored on the test images (``--test-images``:
the first N of the 10,000). The peak
memory of one training step (forward and backward on a batch) is measured with tracemalloc.
Reads the IDX files from --data (default /usr/share/datasets/fashion-mnist). Writes
results.csv (one row per model: test accuracy, parameters, peak memory of a step, seconds per
epoch, CPU seconds per step) and accuracy.png to --out (default runs/ode_fashion_mnist/), and
ends with one JSON line.
"""

from __future__ import annotations

import json
import os
import time
import tracemalloc
from typing import Any

import pullback as pb
from pullback import nn, optim
from pullback.nn.data import DataLoader, TensorDataset
from pullback.sutra import NeuralODE

from _example import example_parser, output_dir
from _nn_example import FASHION_MNIST_HELP, accuracy, fashion_mnist, write_csv

CHANNELS = 32


class ConvField(nn.Module):
    """f(t, h) = conv(tanh(conv(tanh(h)))): the vector field (and the residual branch)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(CHANNELS, CHANNELS, 3, padding=1)
        self.conv2 = nn.Conv2d(CHANNELS, CHANNELS, 3, padding=1)

    def forward(self, t: Any, h: pb.Tensor) -> pb.Tensor:
        return self.conv2(self.conv1(h.tanh()).tanh())


class Residual(nn.Module):
    def __init__(self, branch: ConvField) -> None:
        super().__init__()
        self.branch = branch

    def forward(self, h: pb.Tensor) -> pb.Tensor:
        return h + self.branch(None, h)


def make_model(kind: str) -> nn.Module:
    pb.manual_seed(0)  # the same downsampling, field and head in every model
    downsample = nn.Sequential(
        nn.Conv2d(1, CHANNELS, 3, padding=1), nn.ReLU(),
        nn.Conv2d(CHANNELS, CHANNELS, 4, stride=2, padding=1), nn.ReLU(),   # 14x14
        nn.Conv2d(CHANNELS, CHANNELS, 4, stride=2, padding=1))              # 7x7
    field = ConvField()
    head = nn.Sequential(nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(CHANNELS, 10))
    if kind == "resnet":
        block: nn.Module = Residual(field)
    else:
        block = NeuralODE(field, solver="rk4", options={"step_size": 0.25},
                          adjoint=kind == "ode_adjoint")
    return nn.Sequential(downsample, block, head)


def step_peak_memory(model: nn.Module, images: pb.Tensor, labels: pb.Tensor) -> int:
    """tracemalloc's peak over one forward and backward pass."""
    loss_fn = nn.CrossEntropyLoss()
    tracemalloc.start()
    tracemalloc.reset_peak()
    loss_fn(model(images), labels).backward()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    model.zero_grad()
    return peak


def train(kind: str, args: Any, train_set: TensorDataset, test: tuple[pb.Tensor, pb.Tensor],
          steps: int) -> dict[str, Any]:
    model = make_model(kind)
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    pb.manual_seed(args.seed)
    loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    images, labels = next(iter(loader))
    peak = step_peak_memory(model, images, labels)
    start, cpu_start, done = time.perf_counter(), time.process_time(), 0
    for epoch in range(args.epochs):
        for images, labels in loader:
            loss = loss_fn(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            done += 1
            if steps and done >= steps * (epoch + 1):
                break
        print(f"{kind}: epoch {epoch + 1}, last batch loss {float(loss):.3f}, "
              f"{time.perf_counter() - start:.0f} s", flush=True)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    row = {"model": kind, "test_accuracy": accuracy(model, *test),
           "test_images": test[0].shape[0],
           "parameters": sum(p.numel() for p in model.parameters()),
           "step_peak_mib": round(peak / 2 ** 20, 2), "seconds_per_epoch": round(seconds / args.epochs, 1),
           "cpu_seconds_per_step": round(cpu_seconds / done, 3),  # meaningful on a busy machine
           "training_steps": done, "batch_size": args.batch_size}
    print(json.dumps(row), flush=True)
    return row


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = example_parser(__doc__, __file__, data_help=FASHION_MNIST_HELP)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=200,
                        help="stop each epoch after this many batches (0: whole epochs)")
    parser.add_argument("--test-images", type=int, default=10000,
                        help="score on the first N test images (default: all 10,000)")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.smoke:  # a few small batches, a few hundred test images: seconds
        args.epochs, args.steps, args.batch_size, args.test_images = 1, 3, 32, 300
    out = output_dir(args.out)
    train_x, train_y = fashion_mnist(train=True, root=args.data)
    test_x, test_y = fashion_mnist(train=False, root=args.data)
    train_set = TensorDataset(train_x, train_y)
    test = (test_x[:args.test_images], test_y[:args.test_images])
    rows = [train(kind, args, train_set, test, args.steps)
            for kind in ("ode_adjoint", "ode_backprop", "resnet")]
    write_csv(os.path.join(out, "results.csv"), rows)
    plot(os.path.join(out, "accuracy.png"), rows)
    summary = {"models": rows, "out": out}
    print(json.dumps(summary))
    return summary


def plot(path: str, rows: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_acc, ax_mem) = plt.subplots(1, 2, figsize=(10, 4))
    names = [r["model"] for r in rows]
    ax_acc.bar(names, [100 * r["test_accuracy"] for r in rows], color="tab:blue")
    ax_acc.set(title="test accuracy (%)", ylim=(0, 100))
    ax_mem.bar(names, [r["step_peak_mib"] for r in rows], color="tab:orange")
    ax_mem.set(title="peak memory of a training step (MiB, tracemalloc)")
    for ax, key, fmt in ((ax_acc, "test_accuracy", "{:.1%}"), (ax_mem, "step_peak_mib", "{:.1f}")):
        for i, r in enumerate(rows):
            ax.annotate(fmt.format(r[key]), (i, ax.get_ylim()[1] * 0.02), ha="center", color="white")
    fig.suptitle(f"Fashion-MNIST, {rows[0]['parameters']:,} parameters each")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
