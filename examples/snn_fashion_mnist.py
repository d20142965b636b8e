"""Train a spiking network on Fashion-MNIST with pullback.spanda and set it next to the same-size
ANN: test accuracy, spike sparsity per layer, synaptic operations against MACs, and the energy
estimate those counts give (Horowitz ISSCC 2014, 45 nm, float32).

    python examples/snn_fashion_mnist.py [--epochs 5] [--encoding direct|rate] [--out DIR]
    python examples/snn_fashion_mnist.py --smoke           # seconds: a tiny run (the tests')

The SNN is 784-1000-10 leaky integrate-and-fire neurons (beta 0.95, fast-sigmoid surrogate,
slope 25), run for 25 steps, trained with Adam on the cross-entropy of the output membrane at
every step (snnTorch's tutorial 5: network, loss and optimizer; ``--loss count``: on the spike
counts instead) and scored by its spike counts; the ANN is 784-1000-10 with ReLU. Reads the IDX
files from --data (default /usr/share/datasets/fashion-mnist, Debian's dataset-fashion-mnist).
Writes metrics.csv (per epoch), activity.csv (per layer, on the test set), summary.json and
curves.png to --out (default runs/snn_fashion_mnist/), and ends with one JSON line summing up
the run.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import numpy as np

import pullback as pb
from pullback import nn, optim, spanda
from pullback.nn.data import FashionMNIST
from pullback.spanda.activity import record, totals
from pullback.spanda.energy import HOROWITZ_45NM, estimate

from _example import data_set, example_parser, output_dir
from _nn_example import FASHION_MNIST_HELP, plot, write_csv

# The seed's claims, printed next to what we measure.
SEED = {"sparsity": 0.965, "fewer_operations": 28.57, "energy_reduction": 146.03}


def load(root: str | None, train: bool, limit: int | None) -> tuple[pb.Tensor, pb.Tensor]:
    """Images (N, 1, 28, 28) in [0, 1] and int64 labels."""
    with data_set():  # a missing data set: one line saying how to get it, exit status 2
        ds = FashionMNIST(root=root, train=train)
    images = ds.data.numpy()[:limit].astype(np.float32)[:, None] / 255.0
    return pb.from_numpy(images), pb.from_numpy(ds.targets.numpy()[:limit])


def snn_model(hidden: int) -> spanda.SpikingSequential:
    sg = spanda.surrogate.fast_sigmoid(slope=25)
    return spanda.SpikingSequential(
        nn.Flatten(),
        spanda.SpikingLinear(784, hidden, spanda.LIF(beta=0.95, surrogate=sg)),
        spanda.SpikingLinear(hidden, 10, spanda.LIF(beta=0.95, surrogate=sg)))


def ann_model(hidden: int) -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(784, hidden), nn.ReLU(), nn.Linear(hidden, 10))


class Encoder:
    """Images to time-major inputs: the same current every step, or seeded Poisson spikes."""

    def __init__(self, kind: str, steps: int, seed: int) -> None:
        self.kind, self.steps = kind, steps
        self.generator = np.random.default_rng(seed)

    def __call__(self, images: pb.Tensor) -> pb.Tensor:
        if self.kind == "direct":
            return spanda.encode.direct(images, self.steps)
        return spanda.encode.rate(images, self.steps, generator=self.generator)


def batches(n: int, size: int, rng: np.random.Generator | None):
    order = rng.permutation(n) if rng is not None else np.arange(n)
    for start in range(0, n, size):
        yield pb.from_numpy(order[start:start + size])


def train(model: nn.Module, forward: Any, loss_fn: Any, images: pb.Tensor, labels: pb.Tensor,
          args: argparse.Namespace, evaluate: Any, name: str, lr: float) -> list[dict[str, Any]]:
    optimizer = optim.Adam(model.parameters(), lr=lr)
    rng = np.random.default_rng(args.seed)
    rows, start = [], time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        total, count = 0.0, 0
        for index in batches(images.shape[0], args.batch_size, rng):
            loss = loss_fn(forward(images[index]), labels[index])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total, count = total + loss.item(), count + 1
            if args.steps_per_epoch and count == args.steps_per_epoch:
                break
        rows.append({"model": name, "epoch": epoch, "train_loss": total / count, **evaluate(),
                     "seconds": time.perf_counter() - start})
        print(f"{name} epoch {epoch}: train loss {rows[-1]['train_loss']:.4f}, test accuracy "
              f"{rows[-1]['test_accuracy']:.2%}, {rows[-1]['seconds']:.1f} s", flush=True)
    return rows


def snn_accuracy(model: spanda.SpikingSequential, encoder: Encoder, images: pb.Tensor,
                 labels: pb.Tensor, batch: int = 500) -> dict[str, float]:
    """Spike-count accuracy, ties broken by the membrane (``test_accuracy``) and by the lowest
    index as snnTorch's ``accuracy_rate`` does (``test_accuracy_lowest_index_ties``)."""
    decoder, correct, correct_lowest = spanda.RateDecoder(), 0, 0
    with pb.no_grad():
        for index in batches(images.shape[0], batch, None):
            spikes, mem = model(encoder(images[index]), num_steps=encoder.steps,
                                return_membrane=True)
            correct += int((decoder.predict(spikes, mem) == labels[index]).sum().item())
            correct_lowest += int((decoder.predict(spikes) == labels[index]).sum().item())
    n = images.shape[0]
    return {"test_accuracy": correct / n, "test_accuracy_lowest_index_ties": correct_lowest / n}


def ann_accuracy(model: nn.Module, images: pb.Tensor, labels: pb.Tensor) -> dict[str, float]:
    with pb.no_grad():
        accuracy = float((model(images).argmax(axis=1) == labels).to(pb.float32).mean().item())
    return {"test_accuracy": accuracy, "test_accuracy_lowest_index_ties": accuracy}


def measure_activity(model: spanda.SpikingSequential, encoder: Encoder, images: pb.Tensor,
                     batch: int = 500) -> list[Any]:
    """Per-layer counts over the whole test set."""
    with pb.no_grad(), record(model) as layers:
        for index in batches(images.shape[0], batch, None):
            model(encoder(images[index]), num_steps=encoder.steps)
    return layers


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = example_parser(__doc__, __file__, data_help=FASHION_MNIST_HELP)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--num-steps", type=int, default=25, help="time steps T")
    parser.add_argument("--hidden", type=int, default=1000)
    parser.add_argument("--encoding", choices=("direct", "rate"), default="direct")
    parser.add_argument("--loss", choices=("membrane", "count"), default="membrane",
                        help="cross-entropy of the output membrane at every step, or of the "
                             "spike counts")
    parser.add_argument("--steps-per-epoch", type=int, default=None,
                        help="stop each epoch after this many batches (a quick run)")
    parser.add_argument("--test-limit", type=int, default=None, help="evaluate on fewer images")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.smoke:  # hidden 64, T 8, 20 batches of 64, 500 test images
        args.epochs, args.hidden, args.num_steps = 1, 64, 8
        args.steps_per_epoch, args.test_limit, args.batch_size = 20, 500, 64
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse(argv)
    train_x, train_y = load(args.data, True, None)
    test_x, test_y = load(args.data, False, args.test_limit)
    out = output_dir(args.out)

    pb.manual_seed(args.seed)
    encoder = Encoder(args.encoding, args.num_steps, args.seed)
    snn = snn_model(args.hidden)
    print(f"Fashion-MNIST: {train_x.shape[0]} training / {test_x.shape[0]} test images; SNN "
          f"784-{args.hidden}-10 LIF, T={args.num_steps}, {args.encoding} input; ANN "
          f"784-{args.hidden}-10 ReLU; Adam, batch {args.batch_size}", flush=True)
    if args.loss == "membrane":
        def forward(x: pb.Tensor) -> pb.Tensor:
            return snn(encoder(x), num_steps=args.num_steps, return_membrane=True)[1]
        loss_fn = spanda.loss.rate_cross_entropy
    else:
        def forward(x: pb.Tensor) -> pb.Tensor:
            return snn(encoder(x), num_steps=args.num_steps)
        loss_fn = spanda.loss.spike_count_cross_entropy
    rows = train(snn, forward, loss_fn, train_x, train_y, args,
                 lambda: snn_accuracy(snn, encoder, test_x, test_y), "snn", lr=5e-4)
    ann = ann_model(args.hidden)
    rows += train(ann, ann, nn.functional.cross_entropy, train_x, train_y, args,
                  lambda: ann_accuracy(ann, test_x, test_y), "ann", lr=1e-3)

    layers = measure_activity(snn, encoder, test_x)
    network = totals(layers)
    energy = estimate(network, HOROWITZ_45NM["fp32"])
    write_csv(os.path.join(out, "metrics.csv"), rows)
    write_csv(os.path.join(out, "activity.csv"), [layer.as_dict() for layer in layers])
    epochs = [r["epoch"] for r in rows if r["model"] == "snn"]
    plot(os.path.join(out, "curves.png"), epochs,
         {f"{m} test accuracy": [r["test_accuracy"] for r in rows if r["model"] == m]
          for m in ("snn", "ann")}, "epoch", "Fashion-MNIST: SNN vs same-size ANN (pullback)")

    synaptic_ops = network.accumulates + network.multiply_accumulates
    summary = {
        "snn_test_accuracy": rows[args.epochs - 1]["test_accuracy"],
        "snn_test_accuracy_lowest_index_ties":
            rows[args.epochs - 1]["test_accuracy_lowest_index_ties"],
        "ann_test_accuracy": rows[-1]["test_accuracy"],
        "num_steps": args.num_steps, "encoding": args.encoding, "loss": args.loss,
        "hidden": args.hidden,
        "test_images": test_x.shape[0],
        "sparsity_per_layer": {layer.name: layer.sparsity for layer in layers},
        "sparsity_network": network.sparsity,
        "snn_accumulates": network.accumulates,
        "snn_multiply_accumulates": network.multiply_accumulates,
        "snn_neuron_updates": network.neuron_steps,
        "ann_macs": network.ann_macs,
        "ann_macs_over_snn_synaptic_ops": network.ann_macs / synaptic_ops,
        "dense_snn_over_event_driven_ops": network.dense_ops / synaptic_ops,
        "energy_ann_over_snn": energy.ann_over_snn,
        "energy_dense_over_event_driven": energy.dense_over_event_driven,
        "energy_figures": "Horowitz ISSCC 2014, 45 nm: fp32 add 0.9 pJ, mult 3.7 pJ",
        "seed_claims": SEED,
        "out": out,
    }
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
