"""Every sample of the op database against PyTorch: output values, shapes and dtypes, the
gradients of every input, and (float64) the double backward. Ids read ``op-dtype-arguments``.

Tolerances (relative, see :mod:`pullback.testing.compare`): float64 1e-10, float32 1e-5,
float16 2e-3, bfloat16 1.6e-2 (twice that for float16/bfloat16 gradients); integers and bools
exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

from pullback.testing.opdb import Case, sample_cases
from pullback.testing.oracle import compare_with_torch

torch = pytest.importorskip("torch", reason="PyTorch, the oracle, is installed for Python 3.11 only")

# Quick mode: float32, float16, bfloat16 and int32 run a third of the samples (all their special
# values, a third of the shapes); every sample of every dtype runs in
# `python -m pullback.testing.report` and in the backend conformance suite.
CASES = [c for c in sample_cases(thorough=False) if c.record.torch is not None]


# PyTorch warns about the samples of var/std without degrees of freedom, which are deliberate.
@pytest.mark.filterwarnings("ignore:.*degrees of freedom is <= 0:UserWarning")
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_matches_pytorch(case: Case) -> None:
    # Samples with NaN/inf on purpose (log-sum-exp of -inf, var without degrees of freedom)
    # would make NumPy warn; the values are what is checked.
    with np.errstate(all="ignore"):
        outcome = compare_with_torch(torch, case.record, case.dtype, case.sample)
    note = f" (note: {case.record.note})" if case.record.note else ""
    outcome.check(f"{case.id} against PyTorch{note}")
