"""Out-of-distribution detection by predictive variance: pramana's one-pass moments against MC
dropout (30 samples) and a 5-member deep ensemble, each at its own compute cost.

A dropout MLP (784-256-256-10, p=0.2) is trained on Fashion-MNIST. In-distribution inputs are
the 10,000 Fashion-MNIST test images; out-of-distribution sets are scikit-learn's digits
(8x8 handwritten digits, upsampled to 28x28: MNIST-like far-OOD), uniform noise, Gaussian noise,
and the Fashion-MNIST test images flipped upside down (near-OOD). The score of an input is its
total predictive variance (the sum of the logits' variances): pramana propagates the dropout
masks' variance analytically in one pass; MC dropout takes the sample variance of 30 stochastic
passes; the ensemble the variance across its 5 members. A second score is the predictive entropy
of the mean softmax (sampled for MC dropout and the ensemble; pramana's mean-field approximation
of E[softmax] in one pass; one deterministic softmax as the baseline). Reported per method,
score and OOD set: AUROC, the ratio of the mean score OOD / in-distribution (the seed claims a
1122x variance spike), and the time per 1,000 inputs. Writes docs/pramana/ood.csv and docs/pramana/ood.png.

    python benchmarks/pramana_ood.py               # about 3 minutes on 2 cores
    python benchmarks/pramana_ood.py --epochs 1    # quicker, less trained
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from _common import emit, write_csv
from _pramana_models import accuracy, fashion_mnist, mlp, standardize, train

import pullback
from pullback import pramana
from pullback.nn import functional as F

SEED_CLAIM_RATIO = 1122.0
MC_SAMPLES = 30
ENSEMBLE = 5
DROPOUT = 0.2


def ood_sets(test_pixels: np.ndarray, n: int, seed: int) -> dict[str, np.ndarray]:
    """Standardized (n, 784) inputs for each out-of-distribution set."""
    from sklearn.datasets import load_digits

    rng = np.random.default_rng(seed)
    digits = load_digits().images / 16.0  # (1797, 8, 8) in [0, 1]
    # Nearest-neighbour upsampling to 24x24, centred in 28x28 as MNIST centres its digits.
    up = np.zeros((len(digits), 28, 28), dtype=np.float32)
    up[:, 2:26, 2:26] = np.kron(digits, np.ones((3, 3)))
    flipped = test_pixels.reshape(-1, 28, 28)[:, ::-1, :]
    sets = {
        "digits (far OOD)": up[rng.permutation(len(up))[:n]],
        "uniform noise": rng.uniform(0.0, 1.0, (n, 28, 28)),
        "gaussian noise": np.clip(rng.normal(0.5, 0.25, (n, 28, 28)), 0.0, 1.0),
        "flipped fashion (near OOD)": flipped[rng.permutation(len(flipped))[:n]],
    }
    return {name: standardize(img.reshape(len(img), -1)) for name, img in sets.items()}


def _entropy(probs: np.ndarray) -> np.ndarray:
    return -(probs * np.log(np.clip(probs, 1e-12, 1.0))).sum(1)


def _softmax(logits: np.ndarray) -> np.ndarray:
    z = np.exp(logits - logits.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


def pramana_scores(model, x: np.ndarray) -> dict[str, np.ndarray]:
    """One pass: the logits' variances (dropout as variance injection), and the entropy of the
    mean-field approximation of the mean softmax."""
    with pullback.no_grad():
        out = pramana.propagate(model, pullback.from_numpy(x), dropout=True)
        probs = pramana.functional.softmax_mean(out, dim=1).numpy()
    return {"logit variance": out.var.numpy().sum(1), "predictive entropy": _entropy(probs)}


def _sampled_scores(logits: np.ndarray) -> dict[str, np.ndarray]:
    """Scores from stacked logits (samples, inputs, classes)."""
    return {"logit variance": logits.var(0, ddof=1).sum(1),
            "predictive entropy": _entropy(_softmax(logits).mean(0))}


def mc_dropout_scores(model, x: np.ndarray) -> dict[str, np.ndarray]:
    model.train()  # dropout active
    with pullback.no_grad():
        logits = np.stack([model(pullback.from_numpy(x)).numpy() for _ in range(MC_SAMPLES)])
    model.eval()
    return _sampled_scores(logits)


def ensemble_scores(members, x: np.ndarray) -> dict[str, np.ndarray]:
    with pullback.no_grad():
        logits = np.stack([m(pullback.from_numpy(x)).numpy() for m in members])
    return _sampled_scores(logits)


def softmax_scores(model, x: np.ndarray) -> dict[str, np.ndarray]:
    """The deterministic baseline: the entropy of one pass's softmax (no variance at all)."""
    with pullback.no_grad():
        probs = F.softmax(model(pullback.from_numpy(x)), dim=1).numpy()
    return {"predictive entropy": _entropy(probs)}


def auroc(in_scores: np.ndarray, out_scores: np.ndarray) -> float:
    """P(score_ood > score_in) (+ half the ties): the Mann-Whitney form of the ROC area."""
    scores = np.concatenate([in_scores, out_scores])
    ranks = np.empty(len(scores))
    order = scores.argsort(kind="mergesort")
    ranks[order] = np.arange(1, len(scores) + 1)
    # Average ranks over ties.
    sorted_scores = scores[order]
    _, start, counts = np.unique(sorted_scores, return_index=True, return_counts=True)
    for s, c in zip(start, counts):
        if c > 1:
            ranks[order[s:s + c]] = s + (c + 1) / 2.0
    n_in, n_out = len(in_scores), len(out_scores)
    return float((ranks[n_in:].sum() - n_out * (n_out + 1) / 2.0) / (n_in * n_out))


def timed(fn, x: np.ndarray) -> tuple[np.ndarray, float]:
    start = time.perf_counter()
    out = fn(x)
    return out, (time.perf_counter() - start) * 1000.0 / len(x) * 1000.0  # ms per 1,000 inputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ood-size", type=int, default=1797)
    parser.add_argument("--out", default="docs/pramana")
    args = parser.parse_args()

    x_train, y_train = fashion_mnist(train=True)
    x_test, y_test = fashion_mnist(train=False)
    model = train(mlp(DROPOUT, args.seed), x_train, y_train, args.epochs, args.seed)
    members = [train(mlp(0.0, args.seed + 1 + k), x_train, y_train, args.epochs, args.seed + 1 + k)
               for k in range(ENSEMBLE)]
    emit(benchmark="pramana_ood_models", dropout_mlp_accuracy=accuracy(model, x_test, y_test),
         ensemble_member_accuracy=[accuracy(m, x_test, y_test) for m in members],
         epochs=args.epochs)

    test_pixels = x_test * 0.3530 + 0.2860
    sets = {"fashion test (in)": x_test, **ood_sets(test_pixels, args.ood_size, args.seed)}
    methods = {
        "pramana (1 pass)": lambda x: pramana_scores(model, x),
        f"MC dropout ({MC_SAMPLES} passes)": lambda x: mc_dropout_scores(model, x),
        f"deep ensemble ({ENSEMBLE} members)": lambda x: ensemble_scores(members, x),
        "softmax entropy (1 pass, baseline)": lambda x: softmax_scores(model, x),
    }
    pullback.manual_seed(args.seed)
    rows = []
    for method, fn in methods.items():
        scores = {name: timed(fn, x) for name, x in sets.items()}
        in_scores, in_ms = scores["fashion test (in)"]
        for score in in_scores:
            for name in sets:
                if name == "fashion test (in)":
                    continue
                out_scores = scores[name][0][score]
                row = {"method": method, "score": score, "ood_set": name,
                       "auroc": round(auroc(in_scores[score], out_scores), 4),
                       "ratio_ood_over_in": round(float(out_scores.mean()
                                                        / in_scores[score].mean()), 3),
                       "ms_per_1000_inputs": round(in_ms, 2)}
                rows.append(row)
                emit(benchmark="pramana_ood", seed_claim_variance_ratio=SEED_CLAIM_RATIO, **row)

    write_csv(os.path.join(args.out, "ood.csv"), rows)
    _plot(rows, os.path.join(args.out, "ood.png"))


def _plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = list(dict.fromkeys(r["ood_set"] for r in rows))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, score in zip(axes, ("predictive entropy", "logit variance")):
        series = list(dict.fromkeys(r["method"] for r in rows if r["score"] == score))
        width = 0.8 / len(series)
        for i, method in enumerate(series):
            values = [next(r["auroc"] for r in rows if r["method"] == method
                           and r["score"] == score and r["ood_set"] == s) for s in sets]
            ax.bar(np.arange(len(sets)) + i * width, values, width, label=method)
        ax.set_xticks(np.arange(len(sets)) + 0.4 - width / 2, sets, fontsize=7, rotation=10)
        ax.set_ylim(0.0, 1.0)
        ax.axhline(0.5, color="grey", lw=0.5)
        ax.set_title(f"score: {score}")
        ax.legend(fontsize=6, loc="lower right")
    axes[0].set_ylabel("AUROC (Fashion-MNIST test vs OOD)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
