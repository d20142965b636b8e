"""examples/snn_fashion_mnist.py --smoke: a small SNN learns Fashion-MNIST above chance, and the
run reports sparsity per layer and operation counts consistent with each other."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "snn_fashion_mnist.py"
MISSING_DATA = 2


def test_smoke_run_learns_and_counts_its_operations(tmp_path: Path) -> None:
    pytest.importorskip("pullback.spanda", reason="the example needs pullback-spanda")
    result = subprocess.run([sys.executable, str(EXAMPLE), "--smoke", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=300)
    if result.returncode == MISSING_DATA:
        pytest.skip(f"Fashion-MNIST is not here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.splitlines()[-1])
    assert summary["snn_test_accuracy"] > 0.3 and summary["ann_test_accuracy"] > 0.3, summary
    assert 0.0 < summary["sparsity_network"] < 1.0
    assert summary["ann_macs"] == 500 * (784 * 64 + 64 * 10)  # one pass over 500 test images
    with open(tmp_path / "activity.csv") as f:
        layers = list(csv.DictReader(f))
    assert len(layers) == 2
    spikes_in = int(layers[0]["spikes"])  # what the first layer emitted feeds the second
    assert int(layers[1]["synaptic_ops"]) == spikes_in * 10
    assert int(layers[1]["input_events"]) == spikes_in
    for name in ("metrics.csv", "summary.json", "curves.png"):
        assert (tmp_path / name).is_file(), name
