"""Activation, normalization, distance and dropout layers against PyTorch with identical
weights: forward, gradients of inputs and parameters (at the kinks too), running statistics,
float64 (1e-10) and float32, train and eval modes; the cases are nn_cases_layers.py's table."""

from __future__ import annotations

import pytest

from nn_cases_layers import CASES
from nn_parity import check_layer

torch = pytest.importorskip("torch", reason="PyTorch is the numerical oracle of these tests")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_layer_matches_torch(case, dtype):
    check_layer(case, dtype, torch)
