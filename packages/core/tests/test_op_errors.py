"""Every error case of the op database: bad input (shape mismatch, bad dtype, out-of-range
index, bad attribute) raises the typed error it names, with a message naming the op."""

from __future__ import annotations

import pytest

from pullback.errors import PullbackError
from pullback.testing.compare import error_case_problem
from pullback.testing.opdb import ErrorCase, OpRecord, error_cases

ERRORS = error_cases()
IDS = [f"{r.name}-{e.id}" for r, e in ERRORS]


@pytest.mark.parametrize("record, case", ERRORS, ids=IDS)
def test_bad_input_raises_a_typed_error_naming_the_op(record: OpRecord, case: ErrorCase) -> None:
    assert error_case_problem(record, case) is None


@pytest.mark.parametrize("record, case", ERRORS, ids=IDS)
def test_expected_errors_are_pullback_errors_or_argument_errors(record: OpRecord,
                                                                case: ErrorCase) -> None:
    # Shapes, dtypes, devices, indices: pullback's typed errors. A bad keyword value or a
    # missing argument stays Python's ValueError/TypeError, as in NumPy and PyTorch.
    assert issubclass(case.error, PullbackError) or case.error in (ValueError, TypeError)


def test_a_wrong_expectation_is_reported() -> None:
    # The helper itself must fail: wrong type, wrong message, nothing raised.
    import numpy as np

    from pullback.errors import DTypeError, ShapeError
    from pullback.testing.opdb import Arg, get_record

    add = get_record("add")
    x, y = Arg(np.ones((2, 3))), Arg(np.ones(4))
    assert "got ShapeError" in error_case_problem(add, ErrorCase((x, y), DTypeError, "add"))
    assert "does not match" in error_case_problem(add, ErrorCase((x, y), ShapeError, "nothing"))
    assert "nothing was raised" in error_case_problem(add, ErrorCase((x, x), ShapeError, "add"))
