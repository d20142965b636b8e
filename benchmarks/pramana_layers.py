"""Each pramana moment rule against a 400,000-sample Monte Carlo reference, per layer.

Inputs are diagonal Gaussians with means N(0, 1) and variances U(0.1, 1) (U(0.5, 3) for the
softmax, whose logits are wide). For every rule the script prints the largest and the median
relative error of the output mean (against |mean| + sd) and of the variance, next to the Monte
Carlo reference's own error (three standard errors, relative in the same way), and the largest
error left after subtracting each element's own Monte Carlo error: near zero for an exact rule,
the approximation's own error otherwise. The tests' slacks
(packages/pramana/tests/test_moments_vs_monte_carlo.py) are these maxima rounded up. Writes
docs/pramana/layers.csv.

    python benchmarks/pramana_layers.py        # about a minute
"""

from __future__ import annotations

import argparse
import os
from typing import Any, Callable

import numpy as np
from _common import emit, write_csv

import pullback
from pullback import nn, pramana
from pullback.nn import functional as F

SAMPLES = 400_000


def gaussian(shape: tuple[int, ...], var_range: tuple[float, float], seed: int = 0) -> Any:
    rng = np.random.default_rng(seed)
    return pramana.DistributionalTensor(pullback.tensor(rng.normal(0.0, 1.0, shape)),
                                        pullback.tensor(rng.uniform(*var_range, shape)))


def cases() -> list[tuple[str, str, Callable, Callable, Any]]:
    """(layer, rule, pramana's function, the deterministic function, input)."""
    pullback.manual_seed(0)
    linear = nn.Linear(6, 4).double()
    conv = nn.Conv2d(2, 3, 3, padding=1).double()
    rows: list[tuple[str, str, Callable, Callable, Any]] = [
        ("Linear", "exact", lambda x: pramana.propagate(linear, x), linear,
         gaussian((4, 6), (0.1, 1))),
        ("Conv2d", "exact", lambda x: pramana.propagate(conv, x), conv,
         gaussian((2, 2, 5, 5), (0.1, 1))),
        ("ReLU", "exact (rectified Gaussian)", pramana.functional.relu, pullback.relu,
         gaussian((4, 6), (0.1, 1))),
        ("LeakyReLU(0.1)", "exact", lambda x: pramana.functional.leaky_relu(x, 0.1),
         lambda t: F.leaky_relu(t, 0.1), gaussian((4, 6), (0.1, 1))),
        ("MaxPool2d((1, 2))", "Clark (exact for two)",
         lambda x: pramana.functional.max_pool2d(x, (1, 2)), lambda t: F.max_pool2d(t, (1, 2)),
         gaussian((2, 1, 3, 4), (0.1, 1))),
        ("MaxPool2d(2)", "Clark (pairwise)", lambda x: pramana.functional.max_pool2d(x, 2),
         lambda t: F.max_pool2d(t, 2), gaussian((2, 1, 4, 4), (0.1, 1))),
        ("softmax", "mean field", lambda x: _point(pramana.functional.softmax_mean(x, dim=1)),
         lambda t: F.softmax(t, dim=1), gaussian((6, 5), (0.5, 3))),
    ]
    for name in ("tanh", "sigmoid", "gelu", "silu", "softplus"):
        layer = {"tanh": nn.Tanh, "sigmoid": nn.Sigmoid, "gelu": nn.GELU, "silu": nn.SiLU,
                 "softplus": nn.Softplus}[name]()
        for method in ("quadrature", "delta"):
            rule = lambda x, n=name, m=method: pramana.functional.smooth(n, x, m)  # noqa: E731
            rows.append((name, method, rule, layer, gaussian((4, 6), (0.1, 1))))
    return rows


def _point(mean: Any) -> Any:
    """The softmax rule gives a mean only: compared on the mean stream (variance left at 0)."""
    return pramana.DistributionalTensor(mean, pullback.zeros_like(mean))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="docs/pramana")
    args = parser.parse_args()
    rows = []
    for layer, rule, ours, reference, x in cases():
        ref = pramana.monte_carlo(reference, x, samples=SAMPLES, seed=7)
        got = ours(x)
        rel_m, rel_v = ref.relative_error(got)
        noise_m = 3 * ref.mean_err / (np.abs(ref.mean) + np.sqrt(ref.var))
        noise_v = 3 * ref.var_err / ref.var
        row = {"layer": layer, "rule": rule,
               "mean_err_max": float(rel_m.max()), "mean_err_median": float(np.median(rel_m)),
               "mc_mean_noise": float(np.median(noise_m)),
               "mean_err_beyond_noise": float(np.maximum(rel_m - noise_m, 0).max())}
        if layer != "softmax":
            row.update(var_err_max=float(rel_v.max()), var_err_median=float(np.median(rel_v)),
                       mc_var_noise=float(np.median(noise_v)),
                       var_err_beyond_noise=float(np.maximum(rel_v - noise_v, 0).max()))
        rows.append({k: (round(v, 5) if isinstance(v, float) else v) for k, v in row.items()})
        emit(benchmark="pramana_layers", samples=SAMPLES, **rows[-1])
    write_csv(os.path.join(args.out, "layers.csv"), rows)  # softmax rows: no variance


if __name__ == "__main__":
    main()
