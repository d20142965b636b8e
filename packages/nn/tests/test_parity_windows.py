"""Convolution, pooling and resampling layers against PyTorch with identical weights: forward,
gradients of inputs and parameters, indices, float64 (1e-10) and float32; the cases are the
table in nn_cases_windows.py."""

from __future__ import annotations

import pytest

from nn_cases_windows import CASES
from nn_parity import check_layer

torch = pytest.importorskip("torch", reason="PyTorch is the numerical oracle of these tests")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_layer_matches_torch(case, dtype):
    check_layer(case, dtype, torch)
