"""Every differentiable record of the op database, in every floating dtype: a backward whose
cotangent has another dtype than its output (a float32 gradient on a float64 graph) gives the
gradients of that cotangent cast to the output's dtype first, exactly, each in its input's dtype
(PyTorch casts the incoming gradient to the output's dtype)."""

from __future__ import annotations

import numpy as np
import pytest

from pullback.testing.compare import cotangent_dtype_problems
from pullback.testing.opdb import OP_DB, Case

FLOATING = ("float64", "float32", "float16", "bfloat16")
# Which dtype a graph is in is what matters, not the shapes: the first samples with gradients.
CASES = [Case(r, d, s) for r in OP_DB if r.differentiable for d in r.dtypes if d in FLOATING
         for s in [s for s in r.sample_list(d, thorough=False) if s.has_grad_inputs][:3]]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_cotangent_of_another_dtype_is_cast_to_the_outputs(case: Case) -> None:
    with np.errstate(all="ignore"):
        problems = cotangent_dtype_problems(case.record, case.dtype, case.sample)
    assert not problems, f"{case.id}: " + "; ".join(problems)
