"""Where the gradient of a universal quantifier goes: the share of |d forall / d truth| that lands
on the violating instances (truth < 0.5), for each aggregator and temperature.

The seed claims softmin quantifiers "concentrate 100% of force onto rule-violating instances".
Here 1,000 truth values are drawn uniformly in [0, 1] (about half violate), and the share is
measured for the softmin and log-sum-exp forms at several temperatures, LTN's p-mean error
(p = 2, 6, 20), the plain mean and the min. Writes docs/tarka/forall_gradient.csv.

    python benchmarks/tarka_forall_gradient.py
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from _common import emit, write_csv

import pullback
from pullback import tarka

SEED_CLAIM = 1.0  # "100%"


def share_on_violations(values: np.ndarray, agg: str, **options: float) -> float:
    x = pullback.tensor(values, requires_grad=True)
    tarka.forall("x", tarka.LogicTensor(x, ("x",)), agg=agg, **options).values.backward()
    g = np.abs(x.grad.numpy())
    return float(g[values < 0.5].sum() / g.sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="docs/tarka")
    args = parser.parse_args()
    values = np.random.default_rng(0).uniform(0.0, 1.0, 1000)
    cases = [("mean", {}), ("min", {})]
    cases += [("pmean_error", {"p": p}) for p in (2, 6, 20)]
    cases += [(agg, {"temperature": t}) for agg in ("softmin", "logsumexp")
              for t in (1.0, 0.3, 0.1, 0.03, 0.01)]
    rows = []
    for agg, options in cases:
        share = share_on_violations(values, agg, **options)
        row = {"aggregator": agg, **{k: options.get(k, "") for k in ("p", "temperature")},
               "share_on_violations": round(share, 6)}
        rows.append(row)
        emit(benchmark="tarka_forall_gradient", violating_fraction=float((values < 0.5).mean()),
             seed_claim=SEED_CLAIM, **row)
    write_csv(os.path.join(args.out, "forall_gradient.csv"), rows)


if __name__ == "__main__":
    main()
