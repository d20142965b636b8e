"""Semi-supervised Fashion-MNIST with 1 % of the labels, with pullback.tarka's logic as the only
signal on the unlabelled images.

Six hundred training images keep their labels (60 per class); 1,000 more labelled images are a
validation set, used only to choose each method's weight; the rest are unlabelled. The same MLP
(784-256-10, AdamW with weight decay) is trained on the same batches four ways:

* ``supervised``: cross-entropy on the labelled images only (the baseline);
* ``semantic loss``: cross-entropy plus ``w`` times the exactly-one semantic loss (Xu et al.
  2018) of the ten sigmoid outputs on unlabelled images, -log P(exactly one class is true),
  computed exactly by tarka's compiled circuit;
* ``LTN regulariser``: cross-entropy plus ``w`` times ``1 - Sat(forall x: exactly one class)``
  on unlabelled images (the same knowledge, in Logic Tensor Networks' fuzzy semantics);
* ``LTN only``: no loss of its own, only the knowledge base of the labelled facts
  ``forall (x, l): Class(x, l)`` and ``forall x: exactly one class``, trained on 1 - SatAgg
  (LTN's recipe).

The weights ``w`` are chosen from a small grid on the validation set (seed 0); test accuracy on
the 10,000 test images is then reported per method and seed, with the mean and spread, in a CSV
and a plot.

    python examples/tarka_semi_supervised.py                 # five seeds, about 15 minutes
    python examples/tarka_semi_supervised.py --smoke         # a few seconds
"""

from __future__ import annotations

import json
import os

import numpy as np

import pullback
from _example import data_set, example_parser, output_dir
from _nn_example import FASHION_MNIST_HELP, write_csv

from pullback import nn, optim, tarka
from pullback.nn import functional as F
from pullback.nn.data import FashionMNIST

METHODS = ("supervised", "semantic loss", "LTN regulariser", "LTN only")
WEIGHTED = ("semantic loss", "LTN regulariser")  # the methods with a weight to choose
WEIGHT_GRID = (0.03, 0.1, 0.3, 1.0)
VALIDATION = 1000


def load(root: str | None, train: bool) -> tuple[np.ndarray, np.ndarray]:
    with data_set():
        ds = FashionMNIST(root=root, train=train)
    images = (ds.data.numpy().reshape(len(ds), -1).astype(np.float32) / 255.0 - 0.286) / 0.353
    return images, ds.targets.numpy()


def split(labels: np.ndarray, per_class: int,
          seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Indices of the labelled images (per_class of each class), of the validation images (the
    same ones for every seed, so that weights chosen on them stay comparable) and of the rest."""
    validation = np.random.default_rng(12345).permutation(len(labels))[:VALIDATION]
    pool = np.setdiff1d(np.arange(len(labels)), validation)
    rng = np.random.default_rng(seed)
    labelled = np.concatenate([rng.permutation(pool[labels[pool] == c])[:per_class]
                               for c in range(10)])
    rest = np.setdiff1d(pool, labelled)
    return labelled, validation, rest


def exactly_one_formula(logits_u: pullback.Tensor) -> tarka.LogicTensor:
    """``forall x: exactly one of Class_0(x) ... Class_9(x)`` over the unlabelled batch."""
    x = tarka.Variable("xu", logits_u)
    predicates = [tarka.Predicate(func=lambda v, c=c: pullback.sigmoid(v[:, c])) for c in range(10)]
    return tarka.axioms.exactly_one(predicates, x)


def kb_loss(logits_l: pullback.Tensor, labels: pullback.Tensor,
            logits_u: pullback.Tensor) -> pullback.Tensor:
    """1 - SatAgg of the labelled facts and of exactly-one on unlabelled images."""
    truth_l = pullback.sigmoid(logits_l)
    # Class(x, l) on the labelled pairs, iterated together (LTN's diag): one axis.
    facts = tarka.LogicTensor(truth_l.gather(1, labels.reshape(-1, 1))[:, 0], ("xl",))
    return 1.0 - tarka.sat_agg(tarka.forall("xl", facts), exactly_one_formula(logits_u))


def train(method: str, images, labels, labelled, unlabelled, steps: int, seed: int,
          weight: float) -> nn.Module:
    rng = np.random.default_rng(seed)
    pullback.manual_seed(seed)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    # Weight decay: with 600 labels the unregularised MLP overfits within a few hundred steps.
    opt = optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
    semantic_loss = tarka.SemanticLoss(tarka.ExactlyOne(10))
    for _ in range(steps):
        li = rng.choice(labelled, 64)
        ui = rng.choice(unlabelled, 256)
        x_l, y_l = pullback.from_numpy(images[li]), pullback.from_numpy(labels[li])
        logits_l = model(x_l)
        if method == "supervised":
            loss = F.cross_entropy(logits_l, y_l)
        else:
            logits_u = model(pullback.from_numpy(images[ui]))
            if method == "semantic loss":
                loss = F.cross_entropy(logits_l, y_l) + weight * semantic_loss(
                    pullback.sigmoid(logits_u))
            elif method == "LTN regulariser":
                sat = tarka.sat_agg(exactly_one_formula(logits_u))
                loss = F.cross_entropy(logits_l, y_l) + weight * (1.0 - sat)
            else:
                loss = kb_loss(logits_l, y_l, logits_u)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


def accuracy(model: nn.Module, images: np.ndarray, labels: np.ndarray) -> float:
    with pullback.no_grad():
        return float((model(pullback.from_numpy(images)).numpy().argmax(1) == labels).mean())


def main() -> None:
    parser = example_parser(__doc__, __file__, data_help=FASHION_MNIST_HELP)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--per-class", type=int, default=60, help="labelled images per class")
    args = parser.parse_args()
    steps, seeds, grid = (50, 1, WEIGHT_GRID[:1]) if args.smoke else (args.steps, args.seeds,
                                                                       WEIGHT_GRID)

    images, labels = load(args.data, train=True)
    test_images, test_labels = load(args.data, train=False)
    labelled, validation, unlabelled = split(labels, args.per_class, seed=0)
    weights = {}
    for method in WEIGHTED:
        scores = {w: accuracy(train(method, images, labels, labelled, unlabelled, steps, 0, w),
                              images[validation], labels[validation]) for w in grid}
        weights[method] = max(scores, key=scores.get)
        print(json.dumps({"method": method, "validation_accuracy": scores,
                          "chosen_weight": weights[method]}), flush=True)
    rows = []
    for seed in range(seeds):
        labelled, _, unlabelled = split(labels, args.per_class, seed)
        for method in METHODS:
            weight = weights.get(method, 0.0)
            model = train(method, images, labels, labelled, unlabelled, steps, seed, weight)
            rows.append({"method": method, "weight": weight, "seed": seed,
                         "test_accuracy": round(accuracy(model, test_images, test_labels), 4)})
            print(json.dumps({"steps": steps, **rows[-1]}), flush=True)
    summary = {}
    for method in METHODS:
        acc = np.array([r["test_accuracy"] for r in rows if r["method"] == method])
        summary[method] = {"mean": round(float(acc.mean()), 4),
                           "std": round(float(acc.std(ddof=1)) if len(acc) > 1 else 0.0, 4)}
    output_dir(args.out)
    write_csv(os.path.join(args.out, "accuracy.csv"), rows)
    _plot(rows, os.path.join(args.out, "accuracy.png"))
    print(json.dumps({"labelled": 10 * args.per_class, "summary": summary}))


def _plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for i, method in enumerate(METHODS):
        acc = [r["test_accuracy"] for r in rows if r["method"] == method]
        ax.scatter([i] * len(acc), acc, color=f"C{i}")
        ax.errorbar(i + 0.15, np.mean(acc), yerr=np.std(acc), fmt="o", color=f"C{i}", capsize=4)
    ax.set_xticks(range(len(METHODS)), METHODS)
    ax.set_ylabel("test accuracy (1 % labels)")
    ax.set_title("Fashion-MNIST, 600 labels")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
