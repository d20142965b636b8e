"""examples/dp_fashion_mnist.py --smoke: each private run spends the epsilon it was asked for
(RDP, delta 1e-5; the PRV accountant finds less), with a noise multiplier that falls as epsilon
grows, and learns above chance; the CSV and the plot are written."""

from __future__ import annotations

import csv
from typing import Callable

import pytest
from example_runs import SmokeRun


def test_smoke_run_spends_each_budget_and_learns(smoke_run: Callable[[str], SmokeRun]) -> None:
    pytest.importorskip("pullback.dp", reason="the example needs pullback-vmap-dp")
    run = smoke_run("dp_fashion_mnist").succeeded()
    summary = run.summary()
    private = summary["private"]
    assert [r["target_epsilon"] for r in private] == [1.0, 3.0, 8.0]
    for r in private:
        assert r["target_epsilon"] - 0.01 <= r["epsilon_rdp"] <= r["target_epsilon"], r
        assert r["epsilon_prv"] < r["epsilon_rdp"], r
        assert r["test_accuracy"] > 0.2, r  # 10 classes: chance is 0.1
    sigmas = [r["noise_multiplier"] for r in private]
    assert sigmas == sorted(sigmas, reverse=True) and sigmas[-1] > 0
    with open(run.out / "accuracy_vs_epsilon.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["run"] for r in rows] == ["non-private", "private", "private", "private"]
    assert (run.out / "accuracy_vs_epsilon.png").is_file()
