"""examples/snn_fashion_mnist.py --smoke: a small SNN learns Fashion-MNIST above chance, and the
run reports sparsity per layer and operation counts consistent with each other."""

from __future__ import annotations

import csv
from typing import Callable

import pytest
from example_runs import SmokeRun


def test_smoke_run_learns_and_counts_its_operations(smoke_run: Callable[[str], SmokeRun]) -> None:
    pytest.importorskip("pullback.spanda", reason="the example needs pullback-spanda")
    run = smoke_run("snn_fashion_mnist").succeeded()
    summary = run.summary()
    assert summary["snn_test_accuracy"] > 0.3 and summary["ann_test_accuracy"] > 0.3, summary
    assert 0.0 < summary["sparsity_network"] < 1.0
    assert summary["ann_macs"] == 500 * (784 * 64 + 64 * 10)  # one pass over 500 test images
    with open(run.out / "activity.csv") as f:
        layers = list(csv.DictReader(f))
    assert len(layers) == 2
    spikes_in = int(layers[0]["spikes"])  # what the first layer emitted feeds the second
    assert int(layers[1]["synaptic_ops"]) == spikes_in * 10
    assert int(layers[1]["input_events"]) == spikes_in
    for name in ("metrics.csv", "summary.json", "curves.png"):
        assert (run.out / name).is_file(), name
