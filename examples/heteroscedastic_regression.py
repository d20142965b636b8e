"""Heteroscedastic regression with pullback.pramana: diabetes progression against body-mass
index (scikit-learn's diabetes data, 442 patients, bundled offline), whose spread grows with BMI.

A small dropout MLP predicts a mean and a noise variance (aleatoric); pramana propagates the
dropout's variance through the network in one pass (epistemic), and the two add to the
predictive variance. Training minimises pramana's GaussianNLLLoss. The script reports the test
negative log-likelihood and how often the test targets fall inside mean +- 2 sigma (95 % for a
calibrated Gaussian), next to MC dropout with 30 passes, and plots mean +- 2 sigma.

    python examples/heteroscedastic_regression.py            # about 20 s
    python examples/heteroscedastic_regression.py --smoke    # a few seconds
"""

from __future__ import annotations

import json
import math
import os
import time

import numpy as np

import pullback
from _example import example_parser, output_dir, require

from pullback import nn, optim, pramana


def load(seed: int) -> tuple[np.ndarray, ...]:
    """BMI and target, standardized with the training split's statistics; 80/20 split."""
    data = require("sklearn.datasets", "scikit-learn", "the diabetes data set").load_diabetes()
    x, y = data.data[:, 2:3], data.target[:, None]
    order = np.random.default_rng(seed).permutation(len(x))
    train, test = order[: int(0.8 * len(x))], order[int(0.8 * len(x)):]
    x_mean, x_sd, y_mean, y_sd = x[train].mean(), x[train].std(), y[train].mean(), y[train].std()
    scale = lambda a, m, s: ((a - m) / s).astype(np.float32)  # noqa: E731
    return (scale(x[train], x_mean, x_sd), scale(y[train], y_mean, y_sd),
            scale(x[test], x_mean, x_sd), scale(y[test], y_mean, y_sd))


def model_for(hidden: int, p: float) -> nn.Module:
    """Outputs two columns: the mean and the pre-softplus noise variance."""
    return nn.Sequential(nn.Linear(1, hidden), nn.ReLU(), nn.Dropout(p),
                         nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(p),
                         nn.Linear(hidden, 2))


def noise_variance(raw: pullback.Tensor) -> pullback.Tensor:
    return pullback.softplus(raw) + 1e-4


def predict_pramana(model: nn.Module, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Predictive mean and variance in one pass: the mean head's moments (epistemic variance
    from the dropout masks) plus the expected noise variance, E[softplus(raw) + 1e-4]."""
    with pullback.no_grad():
        out = pramana.propagate(model, pullback.from_numpy(x))
        noise = pramana.functional.smooth("softplus", out[:, 1])
    mean = out.mean[:, 0].numpy()
    return mean, out.var[:, 0].numpy() + noise.mean.numpy() + 1e-4


def predict_mc_dropout(model: nn.Module, x: np.ndarray, passes: int = 30):
    model.train()
    with pullback.no_grad():
        outs = [model(pullback.from_numpy(x)) for _ in range(passes)]
    model.eval()
    means = np.stack([o[:, 0].numpy() for o in outs])
    noise = np.stack([noise_variance(o[:, 1]).numpy() for o in outs])
    return means.mean(0), means.var(0) + noise.mean(0)


def gaussian_nll(mean, var, y) -> float:
    return float(np.mean(0.5 * (np.log(2 * math.pi * var) + (y - mean) ** 2 / var)))


def coverage(mean, var, y) -> float:
    return float(np.mean(np.abs(y - mean) <= 2.0 * np.sqrt(var)))


def main() -> None:
    parser = example_parser(__doc__, __file__)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    steps = 200 if args.smoke else args.steps

    x_train, y_train, x_test, y_test = load(args.seed)
    pullback.manual_seed(args.seed)
    model = model_for(args.hidden, args.dropout)
    opt = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    loss_fn = pramana.GaussianNLLLoss()
    xt, yt = pullback.from_numpy(x_train), pullback.from_numpy(y_train[:, 0])
    start = time.perf_counter()
    model.train()
    for _ in range(steps):
        out = model(xt)
        prediction = pramana.DistributionalTensor(out[:, 0], noise_variance(out[:, 1]))
        opt.zero_grad()
        loss_fn(prediction, yt).backward()
        opt.step()
    model.eval()
    seconds = time.perf_counter() - start

    y = y_test[:, 0]
    t0 = time.perf_counter()
    m_pr, v_pr = predict_pramana(model, x_test)
    t_pr = time.perf_counter() - t0
    t0 = time.perf_counter()
    m_mc, v_mc = predict_mc_dropout(model, x_test)
    t_mc = time.perf_counter() - t0
    summary = {
        "steps": steps, "train_seconds": round(seconds, 2),
        "pramana": {"test_nll": round(gaussian_nll(m_pr, v_pr, y), 4),
                    "coverage_2sigma": round(coverage(m_pr, v_pr, y), 4),
                    "predict_ms": round(1000 * t_pr, 2)},
        "mc_dropout_30": {"test_nll": round(gaussian_nll(m_mc, v_mc, y), 4),
                          "coverage_2sigma": round(coverage(m_mc, v_mc, y), 4),
                          "predict_ms": round(1000 * t_mc, 2)},
    }
    output_dir(args.out)
    _plot(model, x_train, y_train, x_test, y_test, os.path.join(args.out, "mean_2sigma.png"))
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps(summary))


def _plot(model, x_train, y_train, x_test, y_test, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = np.linspace(min(x_train.min(), x_test.min()) - 0.3,
                       max(x_train.max(), x_test.max()) + 0.3, 300, dtype=np.float32)[:, None]
    mean, var = predict_pramana(model, grid)
    sd = np.sqrt(var)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    ax.scatter(x_train[:, 0], y_train[:, 0], s=6, color="grey", alpha=0.6, label="train")
    ax.scatter(x_test[:, 0], y_test[:, 0], s=8, color="C3", alpha=0.8, label="test")
    ax.plot(grid[:, 0], mean, color="C0", label="predicted mean (pramana)")
    ax.fill_between(grid[:, 0], mean - 2 * sd, mean + 2 * sd, color="C0", alpha=0.2,
                    label="mean +- 2 sigma")
    ax.set_xlabel("body-mass index (standardized)")
    ax.set_ylabel("disease progression (standardized)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
