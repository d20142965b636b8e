"""pullback.nn's records of the op database (``pullback/nn/_opdb.py``, collected by
:func:`pullback.testing.opdb.extension_records`): every sample against PyTorch, gradcheck and
gradgradcheck in float64, a cotangent of another dtype (a float32 gradient on a float64 graph),
every error case (type and message), and the records' own consistency. Ids read
``op-dtype-arguments``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pullback.testing import gradcheck, gradgradcheck
from pullback.testing.compare import cotangent_dtype_problems, error_case_problem
from pullback.testing.opdb import (
    Case, PullbackFactory, dispatched_ops, error_cases, extension_records, sample_cases,
)

RECORDS = extension_records()
CASES = sample_cases(RECORDS)
ERRORS = error_cases(RECORDS)


def test_nn_contributes_its_records_through_the_plugin() -> None:
    from pullback.nn._opdb import RECORDS as declared

    assert {r.name for r in RECORDS} >= {r.name for r in declared}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_matches_pytorch(case: Case) -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is the oracle of this test")
    from pullback.testing.oracle import compare_with_torch

    with np.errstate(all="ignore"):
        outcome = compare_with_torch(torch, case.record, case.dtype, case.sample)
    outcome.check(f"{case.id} against PyTorch")


GRAD_CASES = [c for c in CASES if c.dtype == "float64" and c.sample.gradcheck
              and c.sample.has_grad_inputs and not c.sample.label.startswith(("empty", "zero"))]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.id for c in GRAD_CASES])
def test_gradcheck_and_gradgradcheck(case: Case) -> None:
    bound = case.sample.bind(PullbackFactory())

    def fn(*leaves: Any) -> Any:
        return bound.call(case.record.fn, leaves)

    assert gradcheck(fn, bound.leaves)
    assert gradgradcheck(fn, bound.leaves)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_cotangent_of_another_dtype_is_cast_to_the_outputs(case: Case) -> None:
    with np.errstate(all="ignore"):
        problems = cotangent_dtype_problems(case.record, case.dtype, case.sample)
    assert not problems, f"{case.id}: " + "; ".join(problems)


@pytest.mark.parametrize("record, case", ERRORS, ids=[f"{r.name}-{e.id}" for r, e in ERRORS])
def test_bad_input_raises_a_typed_error_naming_the_function(record: Any, case: Any) -> None:
    assert error_case_problem(record, case) is None


@pytest.mark.parametrize("record", RECORDS, ids=[r.name for r in RECORDS])
def test_a_record_runs_the_ops_it_declares_and_ids_are_unique(record: Any) -> None:
    for dtype in record.dtypes:
        ids = [s.id for s in record.sample_list(dtype)]
        assert len(set(ids)) == len(ids), f"{record.name}/{dtype}: repeated ids"
    assert set(record.ops) <= dispatched_ops(record)
