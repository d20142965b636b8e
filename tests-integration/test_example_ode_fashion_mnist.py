"""examples/ode_fashion_mnist.py --smoke: the ODE classifier (adjoint and backpropagation through
the solver) and the ResNet baseline have the same parameter count, and the adjoint's training
step needs less memory than backpropagation through the solver."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "ode_fashion_mnist.py"
MISSING_DATA = 2


def test_same_size_models_and_the_adjoint_step_needs_less_memory(tmp_path: Path) -> None:
    pytest.importorskip("pullback.sutra", reason="the example needs pullback-sutra")
    result = subprocess.run([sys.executable, str(EXAMPLE), "--smoke", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=600)
    if result.returncode == MISSING_DATA:
        pytest.skip(f"Fashion-MNIST is not here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    models = {m["model"]: m for m in json.loads(result.stdout.splitlines()[-1])["models"]}
    assert set(models) == {"ode_adjoint", "ode_backprop", "resnet"}
    assert len({m["parameters"] for m in models.values()}) == 1, models
    # 16 evaluations of the field: backpropagation keeps each one's activations
    assert 2 * models["ode_adjoint"]["step_peak_mib"] < models["ode_backprop"]["step_peak_mib"]
    with open(tmp_path / "results.csv") as f:
        assert [r["model"] for r in csv.DictReader(f)] == list(models)
    assert (tmp_path / "accuracy.png").is_file()
