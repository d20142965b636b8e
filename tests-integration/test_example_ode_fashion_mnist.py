"""examples/ode_fashion_mnist.py --smoke: the ODE classifier (adjoint and backpropagation through
the solver) and the ResNet baseline have the same parameter count, and the adjoint's training
step needs less memory than backpropagation through the solver."""

from __future__ import annotations

import csv
from typing import Callable

import pytest
from example_runs import SmokeRun


def test_same_size_models_and_the_adjoint_step_needs_less_memory(
        smoke_run: Callable[[str], SmokeRun]) -> None:
    pytest.importorskip("pullback.sutra", reason="the example needs pullback-sutra")
    run = smoke_run("ode_fashion_mnist").succeeded()
    models = {m["model"]: m for m in run.summary()["models"]}
    assert set(models) == {"ode_adjoint", "ode_backprop", "resnet"}
    assert len({m["parameters"] for m in models.values()}) == 1, models
    # 16 evaluations of the field: backpropagation keeps each one's activations
    assert 2 * models["ode_adjoint"]["step_peak_mib"] < models["ode_backprop"]["step_peak_mib"]
    with open(run.out / "results.csv") as f:
        assert [r["model"] for r in csv.DictReader(f)] == list(models)
    assert (run.out / "accuracy.png").is_file()
