"""Train a 500-block reversible MLP on Fashion-MNIST in activation memory that does not grow
with depth (pullback-avyaya).

    python examples/reversible_deep_mlp.py [--blocks 500] [--epochs 1] [--steps-per-epoch N]
        [--data DIR] [--out DIR] [--smoke]

The images go through a Linear layer to width 64, then ``--blocks`` additive couplings (two
small MLPs each, scaled for the depth) in a ReversibleSequential, then a classifier. Before
training, one step's peak memory is measured (tracemalloc) with the reversible stack and with
the same blocks run as an ordinary network. Prints the test accuracy after each epoch, writes
metrics.csv and curves.png to --out (default runs/reversible_deep_mlp/) and ends with one JSON
line: accuracy, both peaks, and the process's peak resident set.
"""

from __future__ import annotations

import gc
import json
import math
import os
import resource
import time
import tracemalloc

from tqdm import tqdm

import pullback as pb
from pullback import Tensor, nn, optim
from pullback.avyaya import ReversibleBlock, ReversibleSequential, residual_mlp
from pullback.nn.data import DataLoader, TensorDataset

from _example import example_parser, output_dir
from _nn_example import FASHION_MNIST_HELP, accuracy, fashion_mnist, plot, write_csv

MIB = 2 ** 20


class DeepReversibleMLP(nn.Module):
    """784 -> width, ``blocks`` reversible couplings at that width, LayerNorm, 10 classes."""

    def __init__(self, blocks: int, width: int = 64) -> None:
        super().__init__()
        half = width // 2
        self.embed = nn.Linear(28 * 28, width)
        self.stack = ReversibleSequential(
            [ReversibleBlock(residual_mlp(half, depth=blocks), residual_mlp(half, depth=blocks))
             for _ in range(blocks)])
        self.head = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 10))
        self.reversible = True  # False: the same blocks, every activation stored

    def forward(self, images: Tensor) -> Tensor:
        x = self.embed(images.reshape(images.shape[0], -1))
        if self.reversible:
            x = self.stack(x)
        else:
            for block in self.stack:
                x = block(x)
        return self.head(x)


def step_peak_mib(model: DeepReversibleMLP, images: Tensor, labels: Tensor,
                  reversible: bool) -> float:
    """Peak MiB allocated by one forward + backward above what was there before, less one
    gradient per parameter (which either path allocates): the activations."""
    model.reversible = reversible
    model.zero_grad()
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    nn.functional.cross_entropy(model(images), labels).backward()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    model.zero_grad()
    model.reversible = True
    gradients = sum(p.array.nbytes for p in model.parameters())
    return (peak - gradients) / MIB


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = example_parser(__doc__, __file__, data_help=FASHION_MNIST_HELP)
    parser.add_argument("--blocks", type=int, default=500)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=None,
                        help="AdamW's learning rate (default: 0.05 / blocks, at most 1e-3)")
    parser.add_argument("--steps-per-epoch", type=int, default=None,
                        help="stop each epoch after this many batches (a quick run)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.smoke:  # 20 blocks, 30 steps, scored on the first 1,000 test images
        args.blocks, args.epochs, args.steps_per_epoch = 20, 1, 30
    if args.lr is None:
        # Adam moves every parameter by about lr a step, whatever its gradient: with 2 branches a
        # block adding to one stream, a rate that suits 10 blocks makes 500 blocks' stream blow
        # up (1e-3 at 500 blocks: its largest value went from 3 to 2e4 in 20 steps, then NaN).
        args.lr = min(1e-3, 0.05 / args.blocks)
    out = output_dir(args.out)

    pb.manual_seed(args.seed)
    train_x, train_y = fashion_mnist(train=True, root=args.data)
    test_x, test_y = fashion_mnist(train=False, root=args.data)
    if args.smoke:
        test_x, test_y = test_x[:1000], test_y[:1000]
    train = DataLoader(TensorDataset(train_x, train_y), batch_size=args.batch_size, shuffle=True)
    model = DeepReversibleMLP(args.blocks)
    optimizer = optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"Fashion-MNIST: {len(train_y)} training / {len(test_y)} test images; "
          f"{args.blocks} reversible blocks at width 64 ({n_params} parameters), "
          f"AdamW(lr={args.lr}), batch {args.batch_size}")

    images, labels = train_x[:args.batch_size], train_y[:args.batch_size]
    peaks = {path: step_peak_mib(model, images, labels, path == "reversible")
             for path in ("reversible", "ordinary")}
    print(f"one step's activation memory: reversible {peaks['reversible']:.2f} MiB, the same "
          f"blocks run ordinarily {peaks['ordinary']:.2f} MiB "
          f"({1 - peaks['reversible'] / peaks['ordinary']:.1%} saved)", flush=True)

    rows, start, total_steps = [], time.perf_counter(), 0
    for epoch in range(1, args.epochs + 1):
        total, batches = 0.0, 0
        steps = min(len(train), args.steps_per_epoch or len(train))
        for images, labels in tqdm(train, total=steps, desc=f"epoch {epoch}", leave=False):
            loss = nn.functional.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total, batches = total + loss.item(), batches + 1
            if not math.isfinite(total):
                raise SystemExit(f"training diverged at step {total_steps + batches} (loss "
                                 f"{loss.item()}); try a smaller --lr")
            if batches == steps:
                break
        total_steps += batches
        rows.append({"epoch": epoch, "train_loss": total / batches,
                     "test_accuracy": accuracy(model, test_x, test_y),
                     "seconds": time.perf_counter() - start})
        print(f"epoch {epoch}: train loss {rows[-1]['train_loss']:.4f}, test accuracy "
              f"{rows[-1]['test_accuracy']:.2%}, {rows[-1]['seconds']:.1f} s", flush=True)

    write_csv(os.path.join(out, "metrics.csv"), rows)
    plot(os.path.join(out, "curves.png"), [r["epoch"] for r in rows],
         {"test accuracy": [r["test_accuracy"] for r in rows]}, "epoch",
         f"{args.blocks}-block reversible MLP, Fashion-MNIST (pullback)")
    summary = {"blocks": args.blocks, "parameters": n_params, "steps": total_steps,
               "test_accuracy": rows[-1]["test_accuracy"],
               "activation_mib_reversible": round(peaks["reversible"], 3),
               "activation_mib_ordinary": round(peaks["ordinary"], 3),
               "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
               "seconds": round(rows[-1]["seconds"], 1), "out": out}
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
